"""A continuous CQELS-CEP query as a job on the keyed operator (``engine="keyed"`` of
``cep.continuous.job.run``, ``query --continuous --engine keyed``).

The same sources, sinks, rejects, checkpoint and metrics as the per-batch runner, as one
Structured Streaming query under the checkpoint (``CHECKPOINT/keyed``): each source's lines,
numbered by the source (a file's lines by the project's ordered file source, in the order of
``cep.continuous.sources.FileSource``; a Kafka message's line is its offset),
parsed by the project's parser (``cep.io.streams.parse_lines_once``: the same items, ids, terms
and rejects as every other path), into the operator (``cep.continuous.keyed.operator``). Each
micro-batch's answers go to the sink under the batch's label (a replayed batch replaces its file:
exactly once); its rejects go to the rejects directory with their reason: the lines the parser
rejected, with their file and line (``part-BATCH-lines.jsonl``), and the late rows
(``part-BATCH-late.jsonl``). Each line is read and parsed once.

**End of input.** The operator's instants become final as Spark's watermark passes them, and the
watermark moves only when rows arrive. With ``available-now``, once the input is read, the job
writes a *heartbeat* (a row with an event time and no triple) at the largest event time + the
lateness + 1 into ``CHECKPOINT/heartbeats``, a source of the operator's, and runs once more: every
instant up to the largest event time is then final, as the runner's close makes it. A live job
(``interval:``) is closed the same way by a heartbeat file written by whoever knows that time
has passed (``write_heartbeat``): an idle source otherwise holds back a pending answer, such
as a tail negation's, until its next row.

**A new closure version.** With a reasoner store as the background, the job checks it once a
second while it runs (``_Refresh``); a new version is shipped to the executors and written into
``CHECKPOINT/published``, a source of the operator's: the next micro-batch planned delivers it to
every bucket (``cep.continuous.keyed.operator``, step 4). With ``available-now`` a run's sources
are fixed when it starts, so a version published during a run reaches the next one. A restart
plans the query with the current version.

**Buckets.** The keys are hashed into a fixed number of buckets (``buckets``), fixed when the
checkpoint is created and recorded in the checkpoint's record (``CHECKPOINT/checkpoint.json``,
``cep.continuous.record``; ``CHECKPOINT/keyed.json`` in a checkpoint created before it): a restart
reads it from there, and refuses another count (the keys would hash to other buckets than the ones
holding their state). A new checkpoint's default is twice the session's parallelism: each bucket
with rows or a timer is one Python call per micro-batch, so a few per core keep every core busy
without paying that call many times over.

**The checkpoint's record.** The record also holds the engine (``keyed``) and the options that
shape the state (the query, time unit, lateness, emit, streams and their sources): a restart that
asks for another engine or other such options is refused before any Spark work
(``cep.continuous.record``).

Each micro-batch appends a metrics line to ``CHECKPOINT/metrics.jsonl`` (and ``metrics``) from
Spark's own ``StreamingQueryProgress``: the rows the sources gave (a line of a file is one row;
a Kafka message one), the operator's state rows and memory, the watermark and the largest event
time (in ticks), the batch's duration.
"""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import StreamingQueryProgress

from cep.algebra.windows import TIME_UNITS
from cep.continuous.keyed.operator import REJECT, Keyed, check_streams, parsed_items, prepare
from cep.continuous.plan import ISTREAM, ContinuousError, plan
from cep.continuous.record import KEYED, check, claim, query_record
from cep.continuous.runner import RunSummary
from cep.continuous.sinks import write_jsonl
from cep.continuous.sources import FileSource, KafkaSource, check_sources
from cep.continuous.state import METRICS_FILE, OUT_AT, OUT_END, OUT_START, OUT_VERSION
from cep.io.streams import parse_lines_once
from cep.lowering.languages import compile_query
from rdfcore import fs
from rdfcore.fs import spark_path
from rdfcore.locations import location
from rdfcore.schema import FILE, LINE, RAW

__all__ = ["run_keyed", "write_heartbeat", "checkpoint_buckets", "HEARTBEATS"]

#: the operator's heartbeat source, under the checkpoint
HEARTBEATS = "heartbeats"
#: the static sides published while the job runs, under the checkpoint (another source)
PUBLISHED = "published"
_ANSWERS = "keyed"
_PARTITIONS = "spark.sql.shuffle.partitions"


def checkpoint_buckets(checkpoint: Path, asked: int | None, parallelism: int) -> tuple[int, bool]:
    """The bucket count to run ``checkpoint`` with (module doc, Buckets) and whether it is new (to
    be recorded once the query is planned): the recorded one; for a new checkpoint ``asked``, else
    twice ``parallelism``. A ``cep.continuous.record.CheckpointError`` when ``asked`` is not the
    recorded one, or the checkpoint is another engine's."""
    found = check(checkpoint, {"engine": KEYED, "buckets": asked})
    if found is not None and found.get("buckets") is not None:
        return found["buckets"], False
    return (asked if asked is not None else max(1, 2 * parallelism)), True


def write_heartbeat(checkpoint: str | Path, t: int) -> Path:
    """A heartbeat at event time ``t`` (ticks) for the job whose checkpoint is ``checkpoint``: the
    watermark moves to it once it is read (module doc)."""
    directory = location(checkpoint, "the checkpoint") / HEARTBEATS
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"heartbeat-{t:020d}.json"
    fs.write_lines(path, [json.dumps({"t": t})])
    return path


def _published(spark: SparkSession, checkpoint: Path) -> DataFrame:
    """The static sides published while the job runs (module doc, A new closure version)."""
    directory = checkpoint / PUBLISHED
    directory.mkdir(parents=True, exist_ok=True)
    return spark.readStream.format("text").load(spark_path(str(directory)))


class _Refresh:
    """Checks the static side's source for a new closure version, at most once a second; ships one
    it finds and writes it into ``CHECKPOINT/published`` for the operator's next micro-batch."""

    def __init__(self, spark: SparkSession, keyed: Keyed, checkpoint: Path):
        self.spark, self.keyed, self.checkpoint = spark, keyed, checkpoint
        self.known = keyed.program.version
        self.checked = time.monotonic()

    def __call__(self) -> None:
        if time.monotonic() - self.checked < 1.0:
            return
        self.checked = time.monotonic()
        shipped = self.keyed.refreshed(self.spark, self.known)
        if shipped is not None:
            fs.write_atomically(self.checkpoint / PUBLISHED / f"static-{shipped.seq:020d}.json", shipped.text() + "\n")
            self.known = shipped.version


def _heartbeats(spark: SparkSession, checkpoint: Path) -> DataFrame:
    directory = checkpoint / HEARTBEATS
    directory.mkdir(parents=True, exist_ok=True)
    beats = spark.readStream.schema("t long").json(spark_path(str(directory)))
    none = F.lit(None).cast("string")
    return beats.select(F.lit(-1).cast("long").alias("item"), none.alias("s"), none.alias("p"), none.alias("o"),
                        F.col("t").alias("t_start"), F.col("t").alias("t_end"))


@dataclass
class _Writer:
    """What each micro-batch writes (module doc)."""

    keyed: Keyed
    sink: object
    rejects_dir: Path | None
    on_answers: Callable | None
    metrics: TextIO | None
    checkpoint: Path
    summary: RunSummary

    def answers(self, frame: DataFrame, batch_id: int) -> None:
        label = f"{batch_id:010d}"
        rows = frame.collect()
        names = self.keyed.names
        out, late, lines = [], [], []
        # the runner's order: instant, terms (unbound first), interval
        for r in sorted((r for r in rows if r[REJECT] is None),
                        key=lambda r: (r[OUT_AT], *[(r[n] is not None, r[n] or "") for n in names],
                                       r[OUT_START], r[OUT_END])):
            out.append({**{n: r[n] for n in names}, **{c: r[c] for c in (OUT_START, OUT_END, OUT_AT, OUT_VERSION)}})
        for r in sorted((r for r in rows if r[REJECT] is not None and r["_file"] is not None),
                        key=lambda r: (r["_file"], r["_line"])):
            lines.append({"file": r["_file"], "line": r["_line"], "reason": r[REJECT], "raw": r["_raw"]})
        for r in rows:
            if r[REJECT] is not None and r["_file"] is None:
                late.append({"stream": r["_stream"], "s": r["_s"], "p": r["_p"], "o": r["_o"], "t": r["_t"],
                             "reason": r[REJECT]})
        n = self.sink.write(label, out)
        if self.on_answers is not None:
            self.on_answers(label, out)
        self.summary.answers += n
        self._rejected(label + "-lines", lines)
        self._rejected(label + "-late", late)

    def _rejected(self, label: str, rows: list[dict]) -> None:
        if not rows:
            return
        if self.rejects_dir is not None:
            self.rejects_dir.mkdir(parents=True, exist_ok=True)
            write_jsonl(self.rejects_dir / f"part-{label}.jsonl", rows)
        for row in rows:
            key = "late" if row["reason"].startswith("late") else "bad input"
            self.summary.rejected[key] = self.summary.rejected.get(key, 0) + 1

    def progress(self, progress, unit: int) -> None:
        """A metrics line from Spark's progress of a micro-batch of the answers query."""
        state = progress.stateOperators[0] if progress.stateOperators else None
        watermark = _millis(progress.eventTime.get("watermark"))
        line = {"batch": progress.batchId, "source_rows": progress.numInputRows,
                "state_rows": None if state is None else state.numRowsTotal,
                "state_memory_bytes": None if state is None else state.memoryUsedBytes,
                "watermark": None if watermark is None else watermark // unit,
                "max_event_time": _ticks(progress.eventTime.get("max"), unit),
                "seconds": round(progress.batchDuration / 1000, 3), "engine": "keyed"}
        self.summary.batches += 1
        self.summary.input_rows += progress.numInputRows
        self.summary.state_rows = line["state_rows"] or 0
        if line["watermark"] is not None:
            self.summary.watermark = line["watermark"]
        text = json.dumps(line)
        print(text, file=self.metrics or sys.stderr, flush=True)
        fs.append_text(self.checkpoint / METRICS_FILE, text + "\n")


def _millis(stamp: str | None) -> int | None:
    """Spark's progress time (ISO 8601, UTC) in epoch milliseconds."""
    if not stamp:
        return None
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def _ticks(stamp: str | None, unit: int) -> int | None:
    millis = _millis(stamp)
    return None if millis is None else millis // unit


def _start(frame: DataFrame, on_batch: Callable, checkpoint: Path, trigger: str):
    writer = frame.writeStream.foreachBatch(on_batch).option("checkpointLocation", str(checkpoint))
    if trigger == "available-now":
        return writer.trigger(availableNow=True).start()
    if trigger.startswith("interval:"):
        return writer.trigger(processingTime=f"{float(trigger.split(':', 1)[1])} seconds").start()
    raise ContinuousError(f"unknown trigger {trigger!r}; expected available-now or interval:SECONDS")


def _new_progress(query, seen: int) -> list:
    """``query``'s progress (``StreamingQueryProgress``) of the micro-batches after batch ``seen``,
    oldest first, of those Spark still holds (``spark.sql.streaming.numRecentProgressUpdates``).

    Read from the JVM's progress one batch id at a time, and a new one as its JSON: PySpark's
    ``recentProgress`` converts every progress Spark holds (up to 100, each through dozens of py4j
    calls) on every call, and polled every 0.1 s that took most of a core from a two-core
    machine's executors."""
    last = query._jsq.lastProgress()
    if last is None or last.batchId() <= seen:
        return []
    recent = query._jsq.recentProgress()
    newer = []
    for k in range(len(recent) - 1, -1, -1):
        if recent[k].batchId() <= seen:
            break
        newer.append(StreamingQueryProgress.fromJson(json.loads(recent[k].json())))
    return newer[::-1]


def _await(queries: Sequence, timeout: float | None, on_progress: Callable, on_tick: Callable) -> None:
    """Wait for ``queries`` (``timeout`` seconds at most, else until they stop), reporting the
    first one's progress as it comes and calling ``on_tick`` between polls; stop them all; raise
    the first failure."""
    deadline = None if timeout is None else time.monotonic() + timeout
    seen = -1

    def report() -> None:
        nonlocal seen
        for progress in _new_progress(queries[0], seen):
            seen = progress.batchId
            on_progress(progress)

    try:
        while any(q.isActive for q in queries) and (deadline is None or time.monotonic() < deadline):
            for q in queries:
                if q.isActive:
                    q.awaitTermination(0.1)
            report()
            on_tick()
        report()
    finally:
        for q in queries:
            if q.isActive:
                q.stop()
    for q in queries:
        failure = q.exception()
        if failure is not None:
            raise failure


def _largest_event_time(checkpoint: Path, delay: int, unit: int) -> int | None:
    """The largest event time of the items this checkpoint's runs read, leaving out the times of
    the heartbeats (Spark's progress counts them as rows): from the runs' metrics lines, and from
    Spark's commit log, which holds the watermark a committed batch left (its largest event time
    minus the ``delay``, in ms). A metrics line is written after its batch is committed, so a run
    killed between the two leaves only the commit log knowing that batch's times."""
    beats = {int(p.stem.split("-", 1)[1]) for p in (checkpoint / HEARTBEATS).glob("heartbeat-*.json")}
    path = checkpoint / METRICS_FILE
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    times = [json.loads(line).get("max_event_time") for line in lines if line]
    committed = _committed_watermark(checkpoint / _ANSWERS)
    # a watermark of 0 is also Spark's "no event time yet": only a positive one names an event time
    if committed:
        times.append((committed + delay) // unit)
    times = [t for t in times if t is not None and t not in beats]
    return max(times) if times else None


def _committed_watermark(query_checkpoint: Path) -> int | None:
    """The watermark (ms) Spark's newest commit of the query at ``query_checkpoint`` recorded."""
    commits = [p for p in (query_checkpoint / "commits").glob("*") if p.name.isdigit()]
    if not commits:
        return None
    newest = max(commits, key=lambda p: int(p.name))
    lines = newest.read_text(encoding="utf-8").splitlines()
    try:
        return int(json.loads(lines[1])["nextBatchWatermarkMs"])
    except (IndexError, ValueError, KeyError, TypeError) as exc:
        raise ContinuousError(f"{newest}: not a Spark commit record ({exc}); expected a version line and "
                              f'{{"nextBatchWatermarkMs": N}}') from None


def _lines(spark: SparkSession, source: FileSource | KafkaSource) -> DataFrame:
    return source.lines(spark).select(FILE, LINE, RAW)


def run_keyed(spark: SparkSession, query, sources: Sequence[FileSource | KafkaSource], *, sink,
              checkpoint: str | Path, static=None, trigger: str = "available-now", lateness: int = 0,
              time_unit: str = "ms", rejects: str | Path | None = None, on_answers: Callable | None = None,
              metrics: TextIO | None = None, prefixes: Mapping[str, str] | None = None,
              timeout: float | None = None, buckets: int | None = None, emit: str = ISTREAM) -> RunSummary:
    """``query`` continuously over ``sources`` on the keyed operator (module doc); the arguments
    are ``cep.continuous.job.run``'s; ``buckets``: module doc, Buckets (None: the checkpoint's)."""
    checkpoint = location(checkpoint, "the checkpoint")
    if isinstance(query, str):
        query = compile_query(query)
    # the checkpoint's engine and options, before any Spark work (module doc, The checkpoint's record)
    record = query_record(KEYED, plan(query, time_unit, lateness, emit=emit), sources, buckets)
    check(checkpoint, record)
    buckets, _new = checkpoint_buckets(checkpoint, buckets, spark.sparkContext.defaultParallelism)
    record["buckets"] = buckets
    keyed = prepare(spark, query, static=static, lateness=lateness, time_unit=time_unit, buckets=buckets, emit=emit)
    check_streams(keyed, [s.stream for s in sources])
    check_sources(sources)
    claim(checkpoint, record)
    prefixes = dict(keyed.program.query.prefixes) if prefixes is None else dict(prefixes)
    if hasattr(sink, "bind"):
        sink.bind(spark)
    summary = RunSummary(version=keyed.program.version)
    writer = _Writer(keyed, sink, location(rejects, "the rejects directory") if rejects else None, on_answers,
                     metrics, checkpoint, summary)
    streams = keyed.part.streams
    items = {}
    for source in sources:
        # the plain lines in Python first: the operator's Python workers are there anyway
        rows = parse_lines_once(_lines(spark, source), prefixes, time_unit, source.fmt, plain=True)
        items[source.stream] = parsed_items(rows, streams.index(source.stream), time_unit)
    first = streams[0]
    items[first] = items[first].unionByName(parsed_items(_heartbeats(spark, checkpoint), 0, time_unit))
    unit = TIME_UNITS[time_unit]

    refresh = _Refresh(spark, keyed, checkpoint)
    published = _published(spark, checkpoint)

    def once() -> None:
        queries = [_start(keyed.run(items, published), writer.answers, checkpoint / _ANSWERS, trigger)]
        _await(queries, timeout, lambda progress: writer.progress(progress, unit), refresh)

    # a new checkpoint's state partitions (the buckets' groups) as many as the cores, not the
    # session's shuffle partitions: each is a task, a RocksDB instance and a Python worker per batch
    previous = spark.conf.get(_PARTITIONS)
    spark.conf.set(_PARTITIONS, str(max(1, min(keyed.buckets, spark.sparkContext.defaultParallelism))))
    try:
        once()
        largest = _largest_event_time(checkpoint, lateness * unit, unit)
        if trigger == "available-now" and largest is not None:
            closing = largest + lateness + 1
            path = checkpoint / HEARTBEATS / f"heartbeat-{closing:020d}.json"
            if not path.exists():
                write_heartbeat(checkpoint, closing)
                once()      # the heartbeat only: no line was added
    finally:
        spark.conf.set(_PARTITIONS, previous)
    summary.max_time = largest
    return summary
