"""Benchmark: the project's ordered file source against Spark's own text file source, per
micro-batch, on the same files (issue 59: "measure what it costs per micro-batch").

    python bench/file_source.py [--files 20] [--rows 20000] [--repeat 2]

``--files`` files of ``--rows`` JSON Lines each (``bench/state_floor.py``'s rows: ~100 bytes a
line, 3,000 subjects, event time rising), every file with the same modification time (what ``cp -p``, ``tar x`` or
an object store's one-second times give), read one file a micro-batch (``maxFilesPerTrigger`` 1,
``Trigger.AvailableNow``) by two queries in one local[2] session, each counting its batch's lines
with ``foreachBatch``:

* **spark text**: ``readStream.format("text")`` with the file's path and block (what
  ``cep.continuous.sources.FileSource`` read before: lines then numbered per batch);
* **ordered**: ``readStream.format("rspsidecar.OrderedFiles")``: lines with their file and number.

Printed per source: the p50 and p90 of Spark's ``triggerExecution`` per batch (the first batch
left out: it plans and starts the tasks), the whole run's seconds, and how many batches read a
file out of name order (the order a producer numbers its files in; Spark's source leaves ties in
listing order). Each source runs ``--repeat`` times on a new checkpoint; the orders of the runs
are compared (a source whose order differs between runs is not repeatable).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402

from bench.state_floor import write_files  # noqa: E402  (the repository on the path first)
from jobs.spark import build_session  # noqa: E402

SAME = 1_767_225_600


def local_session(app: str, log_level: str = "OFF"):
    """The benchmarks' warm local[2] session (also ``bench/file_order.py``'s)."""
    spark = build_session(app, {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
                                "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel(log_level)
    return spark


def run(spark, kind: str, directory: Path, checkpoint: Path) -> tuple[list[float], float, list[str], int]:
    """(per-batch seconds, whole seconds, the files in the order read, lines read)."""
    order: list[tuple[int, str]] = []
    count = [0]

    def sink(frame, batch_id):
        names = frame.select("f").distinct().collect()
        order.extend((batch_id, r["f"].rsplit("/", 1)[-1]) for r in names)
        count[0] += frame.count()

    if kind == "spark text":
        frame = (spark.readStream.format("text").option("maxFilesPerTrigger", "1").load(str(directory))
                 .select("value", F.col("_metadata.file_path").alias("f"), F.col("_metadata.file_block_start").alias("b")))
    else:
        frame = (spark.readStream.format("rspsidecar.OrderedFiles").option("maxFilesPerTrigger", "1")
                 .load(str(directory)).select("value", F.col("file").alias("f"), "line"))
    started = time.perf_counter()
    query = (frame.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    whole = time.perf_counter() - started
    seconds = [p["durationMs"]["triggerExecution"] / 1000 for p in query.recentProgress
               if p["numInputRows"]][1:]
    return seconds, whole, [name for _b, name in sorted(order)], count[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    spark = local_session("bench file source")
    work = Path(tempfile.mkdtemp(prefix="bench-file-source-"))
    data = work / "in"
    data.mkdir()
    write_files(data, args.files, args.rows, 1, same_time=SAME)
    expected = sorted(p.name for p in data.iterdir())
    print(f"pyspark {spark.version}; {args.files} files of {args.rows:,} lines, one modification time; "
          f"one file a micro-batch, local[2]")
    results = {}
    for kind in ("spark text", "ordered"):
        orders = []
        for r in range(args.repeat):
            seconds, whole, order, lines = run(spark, kind, data, work / f"ckpt-{kind.replace(' ', '-')}-{r}")
            assert lines == args.files * args.rows, (kind, lines)
            orders.append(order)
            results[kind] = (seconds, whole)
            out_of_order = sum(1 for a, b in zip(order, expected) if a != b)
            print(f"  {kind:<10} run {r + 1}: p50 {statistics.median(seconds):.3f} s, "
                  f"p90 {sorted(seconds)[int(0.9 * (len(seconds) - 1))]:.3f} s a batch; {whole:.1f} s in all; "
                  f"{out_of_order} of {len(order)} files out of name order")
        print(f"  {kind:<10} same order in every run: {all(o == orders[0] for o in orders)}")
    ours, theirs = statistics.median(results["ordered"][0]), statistics.median(results["spark text"][0])
    print(f"per-batch p50: ordered {ours:.3f} s, spark text {theirs:.3f} s, ratio {ours / theirs:.2f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
