"""Benchmark: the keyed operator (``cep.continuous.keyed.operator``) against the continuous runner
(``cep.continuous.runner``, which re-evaluates the window each micro-batch), with a real fleet.

    python bench/keyed.py [--job] [--vehicles 3000] [--events 200000] [--batches 10] [--per-minute 2000]
                          [--scales 1 10 30] [--fill 10] [--buckets 4] [--network real|example] [--esper] [--no-floor]
    python bench/keyed.py --scale-out [--vehicles ...] [--events ...] [--scales 1] ...

DESIGN.md's Vienna query (``SELECT ?s``: SEQ of two delays of a subway and no arrival after them in
a RANGE 10m window, at stops that reach the centre by subway) over the seeded stream of
``scenarios.vienna_transit`` with ``--vehicles`` vehicles (a third of them subways), on the real
Wiener Linien network when the data directory is there. The same ``--events`` events in the same
``--batches`` micro-batches, for each ``--scales`` factor s: ``--per-minute`` × s events per
event-time minute, so the 10-minute window holds s times more events (window scaling). Per run:

* **keyed**: ``answers()`` over ``spark.readStream.json`` of the files (one file per micro-batch,
  then a heartbeat file that closes the stream up to its last event time), written with
  ``foreachBatch``; total time, seconds per micro-batch (p50, from Spark's progress), and the
  cost of the heartbeat's batch (a batch of one row: the fixed cost). With ``--job``, the keyed
  job instead (``cep.continuous.job.run(..., engine="keyed")``, what ``query --continuous
  --engine keyed`` runs): the runner's own files and sinks, parsed by the project's parser, its
  end-of-input heartbeat its last batch;
* **runner**: ``cep.continuous.job.run`` over the same files (the driver engine while the state is
  small, as it chooses): total time and seconds per batch;
* the answer counts, which must be equal;
* with ``--esper``, Esper 8.9 on the same files (``bench/streaming.py``'s baseline);
* **Spark's floor**, on the same files in the same session: a stateless stream (the files read and
  counted) and ``transformWithStateInPandas`` with a processor that does nothing but keep one state
  row per bucket, keyed by the same bucket count. What the keyed operator costs per batch above
  the second is ours; the second is what any Python stateful operator costs on this machine.

**The window full.** Each stream first fills the query's window (``--fill`` minutes, default 10:
its RANGE), in micro-batches of the same size, and only the micro-batches after the fill are
measured: a window that is still filling holds less than its scale says. The ratio of a scale's
seconds per measured micro-batch (p50) to scale 1's is the window-scaling figure: the keyed
operator's work follows the new events and the live partial matches of their keys, so it should
stay near 1. Both run in one warm local[2] session; each is warmed up on a small stream first.

**Scale-out** (``--scale-out``): the keyed operator alone, on the same files, once in a ``local[1]``
session and once in a ``local[2]`` one (each its own process, one after the other, the same
bucket count), and the ratio of their throughputs. The runner is left out: it evaluates on the
driver, whatever the executor cores.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.streaming.stateful_processor import StatefulProcessor  # noqa: E402

from bench.streaming import esper_baseline  # noqa: E402  (the repository on the path first)
from cep.continuous.job import run  # noqa: E402
from cep.continuous.keyed.operator import answers  # noqa: E402
from cep.continuous.sinks import CallbackSink  # noqa: E402
from cep.continuous.sources import FileSource  # noqa: E402
from cep.continuous.static import StaticFiles  # noqa: E402
from cep.lowering.languages import compile_query  # noqa: E402
from jobs.spark import build_session  # noqa: E402
from scenarios import vienna_transit as vt  # noqa: E402

STREAM = "<http://example.org/publicTransport>"


def expand(source: Path, target: Path, prefixes: dict) -> int:
    """The stream's JSON Lines with prefixed names written as full IRIs (what a user's DataFrame
    of N-Triples terms holds), one file per source file, same modification times; the last
    event time."""
    target.mkdir(parents=True, exist_ok=True)
    last = 0
    for f in sorted(source.iterdir()):
        with open(f, encoding="utf-8") as inp, open(target / f.name, "w", encoding="utf-8") as out:
            for line in inp:
                row = json.loads(line)
                for k in ("s", "p", "o"):
                    prefix, local = row[k].split(":", 1)
                    row[k] = f"<{prefixes[prefix]}{local}>"
                last = max(last, row["t"])
                out.write(json.dumps(row) + "\n")
        st = f.stat()
        os.utime(target / f.name, (st.st_mtime, st.st_mtime))
    return last


def heartbeat(directory: Path, t: int) -> None:
    """A file with one row that has a time and no triple: it moves the watermark past ``t - 1``."""
    path = directory / "zz-heartbeat.jsonl"
    path.write_text(json.dumps({"s": None, "p": None, "o": None, "t": t}) + "\n", encoding="utf-8")
    newest = max(f.stat().st_mtime for f in directory.iterdir())
    os.utime(path, (newest + 1, newest + 1))


def run_keyed(spark, query, static, directory: Path, checkpoint: Path, buckets: int):
    frame = (spark.readStream.schema("s string, p string, o string, t long").option("maxFilesPerTrigger", 1)
             .json(str(directory)))
    out = answers(spark, query, {STREAM: frame}, static=static, time_unit="m", buckets=buckets)
    counts = {"answers": 0, "rejects": 0}

    def sink(batch, _id):
        for row in batch.groupBy(batch["_reject"].isNull().alias("ok")).count().collect():
            counts["answers" if row["ok"] else "rejects"] += row["count"]

    started = time.perf_counter()
    running = (out.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
               .trigger(availableNow=True).start())
    running.awaitTermination()      # every file, then the batch without data that fires the last timers
    total = time.perf_counter() - started
    progress = running.recentProgress
    seconds = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress]
    rows = [p["numInputRows"] for p in progress]
    return total, seconds, rows, counts


class _Idle(StatefulProcessor):
    """The floor's processor: one list-state row per bucket, one output row per bucket."""

    def init(self, handle) -> None:
        self.rows = handle.getListState("rows", "n long")

    def handleInputRows(self, key, rows, timerValues):
        n = sum(len(frame) for frame in rows)
        self.rows.put([(n,)])
        yield pd.DataFrame({"bucket": [int(key[0])], "n": [n]})

    def close(self) -> None:
        pass


def run_floor(spark, directory: Path, checkpoint: Path, buckets: int, stateful: bool):
    """Seconds per micro-batch of the floor (module doc) over ``directory``'s files."""
    frame = (spark.readStream.schema("s string, p string, o string, t long").option("maxFilesPerTrigger", 1)
             .json(str(directory)))
    if stateful:
        frame = (frame.withColumn("_time", F.timestamp_millis(F.col("t")))
                 .withWatermark("_time", "0 milliseconds")
                 .withColumn("bucket", F.pmod(F.xxhash64("s"), F.lit(buckets)).cast("int"))
                 .groupBy("bucket").transformWithStateInPandas(_Idle(), "bucket int, n long", "Append", "EventTime"))
    running = (frame.writeStream.foreachBatch(lambda batch, _id: batch.count())
               .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    running.awaitTermination()
    return [(p["durationMs"].get("triggerExecution", 0) / 1000, p["numInputRows"]) for p in running.recentProgress]


def run_keyed_job(spark, query, static, directory: Path, checkpoint: Path, buckets: int):
    """The keyed job over ``directory``'s files (module doc, ``--job``): total time, seconds per
    micro-batch and rows per batch as ``run_keyed`` gives them (the closing heartbeat's batch as a
    batch of one row), the answer and reject counts."""
    started = time.perf_counter()
    summary = run(spark, query, [FileSource(STREAM, str(directory), max_files_per_trigger=1)],
                  sink=CallbackSink(lambda *_: None), checkpoint=checkpoint, static=static, time_unit="m",
                  rejects=checkpoint / "rejects", metrics=open(checkpoint.parent / f"{checkpoint.name}.metrics", "w"),
                  engine="keyed", buckets=buckets)
    total = time.perf_counter() - started
    lines = [json.loads(line) for line in (checkpoint / "metrics.jsonl").read_text().splitlines()]
    seconds = [m["seconds"] for m in lines]
    rows = [m["source_rows"] for m in lines]     # a line is a row: the last batch is the heartbeat's one
    return total, seconds, rows, {"answers": summary.answers, "rejects": sum(summary.rejected.values())}


def run_runner(spark, query, static, directory: Path, checkpoint: Path):
    started = time.perf_counter()
    summary = run(spark, query, [FileSource(STREAM, str(directory), max_files_per_trigger=1)],
                  sink=CallbackSink(lambda *_: None), checkpoint=checkpoint, static=static, time_unit="m",
                  rejects=checkpoint / "rejects", metrics=open(checkpoint.parent / f"{checkpoint.name}.metrics", "w"))
    total = time.perf_counter() - started
    lines = (checkpoint / "metrics.jsonl").read_text().splitlines() if (checkpoint / "metrics.jsonl").exists() else []
    seconds = [json.loads(line)["seconds"] for line in lines]
    return total, seconds, summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--job", action="store_true", help="the keyed job, not answers() (module doc)")
    ap.add_argument("--vehicles", type=int, default=3000)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--per-minute", type=int, default=2000)
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 10, 30])
    ap.add_argument("--buckets", type=int, default=4,
                    help="the keys' buckets (default 4: twice the session's 2 cores, the keyed job's default for a "
                         "new checkpoint)")
    ap.add_argument("--fill", type=int, default=10,
                    help="event-time minutes that fill the window before the measured micro-batches (default 10, "
                         "the query's RANGE; 0: measure from the first)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--network", choices=("real", "example"), default=None)
    ap.add_argument("--esper", action="store_true", help="also Esper 8.9 on the same files (bench/streaming.py)")
    ap.add_argument("--no-floor", dest="floor", action="store_false", help="leave out Spark's floor (module doc)")
    ap.add_argument("--scale-out", action="store_true", help="the keyed operator on 1 core, then on 2 (module doc)")
    ap.add_argument("--cores", type=int, default=2, help="the local session's cores (local[N])")
    ap.add_argument("--keyed-only", help=argparse.SUPPRESS)      # --scale-out's runs: the totals to this JSON file
    args = ap.parse_args(argv)
    if args.scale_out:
        return scale_out(args, argv if argv is not None else sys.argv[1:])

    spark = build_session("bench keyed", {"spark.master": f"local[{args.cores}]",
                                          "spark.sql.shuffle.partitions": str(args.cores),
                                          "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="bench-keyed-"))
    if args.network == "example":
        network, world = "example", vt.example_map()
    else:
        network, world = "real", vt.real_network(work, vehicles=args.vehicles, subways=args.vehicles // 3)
    query = compile_query(world.query)
    prefixes = dict(query.prefixes)
    static = StaticFiles(world.static)
    print(f"network: {network}; {len(world.vehicles)} vehicles; {args.events} events in {args.batches} micro-batches "
          f"per run; buckets {args.buckets}")

    # warm-up of both (JIT, the first job, the static side)
    vt.write_stream(work / "warm", 20, 50, 10, args.seed, world)
    last = expand(work / "warm", work / "warm-x", prefixes)
    heartbeat(work / "warm-x", last + 1)
    if args.job:
        run_keyed_job(spark, query, static, work / "warm", work / "warm-keyed-job", args.buckets)
    else:
        run_keyed(spark, query, static, work / "warm-x", work / "warm-keyed", args.buckets)
    if args.keyed_only:
        totals = {}
        for scale in args.scales:
            per_minute = args.per_minute * scale
            minutes = max(1, args.events // per_minute)
            events = vt.write_stream(work / f"x{scale}", minutes, per_minute, max(1, -(-minutes // args.batches)),
                                     args.seed, world)
            last = expand(work / f"x{scale}", work / f"x{scale}-x", prefixes)
            heartbeat(work / f"x{scale}-x", last + 1)
            total, seconds, rows, counts = run_keyed(spark, query, static, work / f"x{scale}-x", work / f"x{scale}-keyed",
                                                     args.buckets)
            data = [s for s, n in zip(seconds, rows) if n > 1]
            totals[scale] = {"total": total, "events": events, "p50": statistics.median(data), **counts}
        Path(args.keyed_only).write_text(json.dumps(totals), encoding="utf-8")
        return 0
    run_runner(spark, query, static, work / "warm", work / "warm-runner")

    table = []
    for scale in args.scales:
        per_minute = args.per_minute * scale
        minutes = max(1, args.events // per_minute)
        batch_minutes = max(1, -(-minutes // args.batches))
        fill = -(-args.fill // batch_minutes)           # the micro-batches that fill the window first
        name = f"x{scale}"
        events = vt.write_stream(work / name, fill * batch_minutes + minutes, per_minute, batch_minutes, args.seed, world)
        measured = events - fill * batch_minutes * per_minute
        last = expand(work / name, work / f"{name}-x", prefixes)
        heartbeat(work / f"{name}-x", last + 1)
        if args.job:
            k_total, k_seconds, k_rows, counts = run_keyed_job(spark, query, static, work / name,
                                                               work / f"{name}-keyed", args.buckets)
        else:
            k_total, k_seconds, k_rows, counts = run_keyed(spark, query, static, work / f"{name}-x",
                                                           work / f"{name}-keyed", args.buckets)
        r_total, r_seconds, summary = run_runner(spark, query, static, work / name, work / f"{name}-runner")
        data = [s for s, n in zip(k_seconds, k_rows) if n > 1][fill:]
        beat = [s for s, n in zip(k_seconds, k_rows) if n == 1]
        r_data = r_seconds[fill:fill + len(data)]
        k_p50, r_p50 = statistics.median(data), statistics.median(r_data) if r_data else float("nan")
        print(f"scale {scale}: {per_minute} events/min, the window holds ~{10 * per_minute} events; {events} events, "
              f"the last {measured} ({len(data)} micro-batches) measured after {fill} that fill the window")
        print(f"  keyed : {k_total:.1f} s in all; measured batches {sum(data):.1f} s ({measured / sum(data):,.0f} events/s), "
              f"p50 {k_p50:.2f} s a batch; heartbeat batch {beat[0] if beat else float('nan'):.2f} s; "
              f"{counts['answers']} answers, {counts['rejects']} rejects")
        print(f"  runner: {r_total:.1f} s in all; measured batches {sum(r_data):.1f} s, p50 {r_p50:.2f} s a batch; "
              f"{summary.answers} answers")
        print(f"  ratio : keyed / runner per measured batch (p50) = {k_p50 / r_p50:.2f}; answers "
              f"{'equal' if counts['answers'] == summary.answers else 'DIFFER'}")
        if args.floor:
            idle = [s for s, n in run_floor(spark, work / f"{name}-x", work / f"{name}-idle", args.buckets, True) if n > 1]
            plain = [s for s, n in run_floor(spark, work / f"{name}-x", work / f"{name}-plain", args.buckets, False) if n > 1]
            print(f"  floor : stateless stream p50 {statistics.median(plain):.2f} s per data batch; transformWithStateInPandas "
                  f"doing nothing p50 {statistics.median(idle):.2f} s; the keyed operator above that floor "
                  f"{k_p50 - statistics.median(idle):.2f} s ({k_p50 / statistics.median(idle):.1f}x the floor)")
        table.append((scale, k_p50, r_p50))
        if args.esper:
            esper_baseline(spark, query, static.current(spark), work / name, k_total, counts["answers"], events)
    if len(table) > 1:
        base_k, base_r = table[0][1], table[0][2]
        print("window scaling (seconds per measured batch at scale s / at scale 1, p50): "
              + "; ".join(f"x{s}: keyed {k / base_k:.2f}, runner {r / base_r:.2f}" for s, k, r in table[1:]))
    return 0


def scale_out(args, argv: list[str]) -> int:
    """--scale-out (module doc): this script's keyed runs in a local[1], then a local[2] process."""
    rest = [a for a in argv if a != "--scale-out"]
    got = {}
    for cores in (1, 2):
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
            path = out.name
        subprocess.run([sys.executable, __file__, *rest, "--cores", str(cores), "--keyed-only", path], check=True)
        got[cores] = {int(k): v for k, v in json.loads(Path(path).read_text(encoding="utf-8")).items()}
        os.unlink(path)
    for scale in args.scales:
        one, two = got[1][scale], got[2][scale]
        print(f"scale {scale}: {one['events']} events, buckets {args.buckets}")
        for cores, r in ((1, one), (2, two)):
            print(f"  keyed, local[{cores}]: {r['total']:.1f} s total, {r['events'] / r['total']:,.0f} events/s, "
                  f"p50 {r['p50']:.2f} s per data batch, {r['answers']} answers")
        print(f"  scale-out: local[2] / local[1] throughput = {one['total'] / two['total']:.2f}; answers "
              f"{'equal' if one['answers'] == two['answers'] else 'DIFFER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
