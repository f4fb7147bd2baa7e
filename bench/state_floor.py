"""Benchmark: what a Python stateful operator costs per micro-batch on this machine, for PySpark's
two APIs, with a state of the keyed operator's size (issue 38: "measure both before you commit"),
beside Spark's own floors (issue 60).

    python bench/state_floor.py [--batches 6] [--rows 20000] [--buckets 4] [--state 2000000] [--repeat 2]

The same files (``--batches`` files of ``--rows`` JSON rows, one file a micro-batch, event time
rising) are read by seven streaming queries in one local[2] session, each written with
``foreachBatch`` and a count:

* **stateless**: the rows read, given a bucket (``pmod(xxhash64(s), buckets)``) and counted;
* **transformWithStateInPandas** (RocksDB state store, changelog checkpointing, event-time mode):
  per bucket, the stored state read and replaced by ``--state`` bytes in 256 KiB list rows, as
  ``cep.continuous.keyed.operator.KeyedProcessor`` keeps a bucket's state;
* **applyInPandasWithState** with the HDFS-backed and with the RocksDB store (event-time timeout):
  per bucket, the state read and replaced by one row holding ``--state`` bytes, a timeout set;
* Spark's floors without the project's state (issue 60's table, to compare Spark versions): a
  **no-op transformWithStateInPandas** (per bucket, the rows counted, no state), a **JVM
  aggregation** in update mode (a count per subject: 3,000 keys), and a **JVM stream-stream
  interval join** (the stream with itself on the subject, the right side within 30 s after the
  left, both sides' watermarks at 0).

Each query's per-batch seconds (Spark's ``triggerExecution``, the first data batch left out: it
plans and starts the workers) are printed as p50, with the state operator's summed update time.
The operator's own work (``bucket.step``) comes on top of these floors; ``bench/keyed.py``
measures the whole.

``applyInPandasWithState`` fails in PySpark 4.0.1 with pyarrow 26 (its serializer slices an Arrow
batch with a float offset: "'float' object cannot be interpreted as an integer"; pyarrow ≤ 25
works); the benchmark then prints the error in place of that row.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
import pyarrow  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.streaming.state import GroupStateTimeout  # noqa: E402
from pyspark.sql.streaming.stateful_processor import StatefulProcessor  # noqa: E402

from cep.continuous.keyed.operator import CHUNK, ROCKSDB  # noqa: E402  (the repository on the path first)
from jobs.spark import build_session  # noqa: E402

HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"
_CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def write_files(directory: Path, batches: int, rows: int, seed: int, same_time: int | None = None) -> None:
    """``batches`` files ``bNNNN.jsonl`` of ``rows`` JSON rows (3,000 subjects, event time rising),
    with rising modification times, or every one ``same_time`` (``bench/file_source.py``)."""
    rnd = random.Random(seed)
    t = 0
    for b in range(batches):
        path = directory / f"b{b:04d}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for i in range(rows):
                t += 3
                f.write(json.dumps({"s": f"<http://example.org/s{rnd.randrange(3000)}>", "p": "<http://example.org/p>",
                                    "o": f"<http://example.org/o{i}>", "t": t}) + "\n")
        stamp = 1_000 + b if same_time is None else same_time
        os.utime(path, (stamp, stamp))


class ChunkedState(StatefulProcessor):
    """Per bucket: read the list state, replace it with ``size`` bytes in ``CHUNK``-sized rows
    (made in the worker: a large pickled processor goes through a broadcast variable, which the
    process that plans ``transformWithStateInPandas`` cannot read)."""

    def __init__(self, size: int):
        self.size = size

    def init(self, handle) -> None:
        self.chunks = handle.getListState("chunks", "chunk binary")
        self.blob = os.urandom(self.size)

    def handleInputRows(self, key, rows, timerValues):
        n = sum(len(frame) for frame in rows)
        if self.chunks.exists():
            b"".join(bytes(row[0]) for row in self.chunks.get())
        self.chunks.put([(self.blob[at:at + CHUNK],) for at in range(0, len(self.blob), CHUNK)] or [(b"",)])
        yield pd.DataFrame({"bucket": [int(key[0])], "n": [n]})

    def close(self) -> None:
        pass


class NoState(StatefulProcessor):
    """Per bucket: the rows counted, nothing stored (the Python stateful operator's own floor)."""

    def init(self, handle) -> None:
        pass

    def handleInputRows(self, key, rows, timerValues):
        yield pd.DataFrame({"bucket": [int(key[0])], "n": [sum(len(frame) for frame in rows)]})

    def close(self) -> None:
        pass


def one_row_state(size: int):
    blobs: list = []

    def update(key, frames, state):
        if not blobs:
            blobs.append(os.urandom(size))
        blob = blobs[0]
        n = sum(len(frame) for frame in frames)
        if state.exists:
            state.get
        state.update((n, blob))
        state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + 1_000)
        yield pd.DataFrame({"bucket": [int(key[0])], "n": [n]})
    return update


def _reason(error: Exception) -> str:
    """The Python error a failed query reports (its last line naming an Error), else its first line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    named = [line for line in lines if re.match(r"^\w+(Error|Exception): ", line)]
    return (named[-1] if named else lines[0] if lines else type(error).__name__)[:200]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--state", type=int, default=2_000_000, help="bytes of state per bucket (default ~ the keyed "
                                                                   "operator's on bench/keyed.py: 0.8-2.8 MB)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each query (the last one's figures count)")
    args = ap.parse_args(argv)
    spark = build_session("bench state floor", {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
                                                "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("OFF")
    work = Path(tempfile.mkdtemp(prefix="bench-state-floor-"))
    data = work / "in"
    data.mkdir()
    write_files(data, args.batches, args.rows, 1)
    print(f"pyspark {spark.version}, pyarrow {pyarrow.__version__}, pandas {pd.__version__}; {args.batches} batches of "
          f"{args.rows} rows, {args.buckets} buckets, {args.state:,} bytes of state per bucket")

    def source():
        return (spark.readStream.schema("s string, p string, o string, t long").option("maxFilesPerTrigger", 1)
                .json(str(data)).withColumn("_time", F.timestamp_millis(F.col("t")))
                .withWatermark("_time", "0 milliseconds")
                .withColumn("bucket", F.pmod(F.xxhash64("s"), F.lit(args.buckets)).cast("int")))

    def interval_join():
        left = source().select(F.col("s").alias("ls"), F.col("_time").alias("lt"))
        right = source().select(F.col("s").alias("rs"), F.col("_time").alias("rt"))
        return left.join(right, F.expr("ls = rs AND rt >= lt AND rt <= lt + interval 30 seconds"))

    # (name, state store, the query, output mode)
    cases = [
        ("stateless", HDFS, lambda: source().select("bucket"), "append"),
        ("transformWithStateInPandas, RocksDB", ROCKSDB,
         lambda: source().groupBy("bucket").transformWithStateInPandas(ChunkedState(args.state), "bucket int, n long",
                                                                       "Append", "EventTime"), "append"),
        ("transformWithStateInPandas, no-op", ROCKSDB,
         lambda: source().groupBy("bucket").transformWithStateInPandas(NoState(), "bucket int, n long",
                                                                       "Append", "EventTime"), "append"),
        ("applyInPandasWithState, HDFS-backed", HDFS,
         lambda: source().groupBy("bucket").applyInPandasWithState(one_row_state(args.state), "bucket int, n long",
                                                                   "n long, blob binary", "Append",
                                                                   GroupStateTimeout.EventTimeTimeout), "append"),
        ("applyInPandasWithState, RocksDB", ROCKSDB,
         lambda: source().groupBy("bucket").applyInPandasWithState(one_row_state(args.state), "bucket int, n long",
                                                                   "n long, blob binary", "Append",
                                                                   GroupStateTimeout.EventTimeTimeout), "append"),
        ("JVM aggregation, update mode (3,000 keys)", HDFS, lambda: source().groupBy("s").count(), "update"),
        ("JVM stream-stream interval join", HDFS, interval_join, "append"),
    ]
    floors = {}
    for run in range(args.repeat):
        for number, (name, provider, frame, mode) in enumerate(cases):
            spark.conf.set(_PROVIDER, provider)
            spark.conf.set(_CHANGELOG, "true")
            checkpoint = work / f"ckpt-{run}-{number}"
            try:
                query = (frame().writeStream.outputMode(mode).foreachBatch(lambda batch, _id: batch.count())
                         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
                query.awaitTermination()
            except Exception as e:  # noqa: BLE001 - reported in the table (module doc)
                floors[name] = f"failed: {_reason(e)}"
                continue
            progress = [p for p in query.recentProgress if p["numInputRows"] > 1][1:]
            if not progress:
                floors[name] = f"no data batch past the first ({len(query.recentProgress)} batches in all)"
                continue
            seconds = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in progress]
            updates = [sum(o.get("allUpdatesTimeMs", 0) for o in p.get("stateOperators", [])) / 1000 for p in progress]
            floors[name] = (statistics.median(seconds), statistics.median(updates))
    base = floors["stateless"][0]
    print("| query | p50 per batch | state updates (summed over tasks) | over stateless |")
    print("| --- | --- | --- | --- |")
    for name, _provider, _frame, _mode in cases:
        figure = floors[name]
        if isinstance(figure, str):
            print(f"| {name} | {figure} | | |")
        else:
            print(f"| {name} | {figure[0]:.2f} s | {figure[1]:.2f} s | +{figure[0] - base:.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
