"""Continuous CQELS-CEP on Spark Structured Streaming: the same queries, answered as events arrive.

    from cep.continuous.job import run
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from cep.continuous.static import StaticFiles
    summary = run(spark, query_text,
                  sources=[FileSource("<http://example.org/publicTransport>", "in/")],
                  static=StaticFiles({None: ["vienna_example.ttl"]}),
                  sink=DirectorySink("answers/"), checkpoint="ckpt/", trigger="available-now")

The semantics (which instants are evaluated, watermark and lateness, Istream keys, what state is
kept) are fixed by the plan phase, ``cep.continuous.plan``; read its module doc first. This module runs
that plan.

Design: ``foreachBatch`` over a bounded state of still-relevant items
---------------------------------------------------------------------
Spark 4.0 refuses what a direct streaming translation would need (stream-stream left-anti joins for
the negations, sorting for TRIPLES windows), and its watermark drops late rows silently. So each
micro-batch runs ``cep.engines.spark.lifetimes`` — the operators of ``cep.engines.spark.intervals`` over rows that carry the
instants they hold at, tested against the reference evaluator — over a small *static* DataFrame:
the items some window can still hold (the state) plus the batch's new items. The instant is data,
not a constant of the plan, so a batch costs a fixed handful of Spark jobs however many event
times it holds. Per batch:

1. the batch's lines are written to Parquet under the batch's state directory and parsed from
   there (later plans read a plain scan, not the streaming lineage), then the parsed, encoded items;
2. bad lines and late items go to the rejects, with their reasons;
3. the query's lifetimes over state + new items, cut to the batch's instants; the new answers
   (Istream: keys not emitted before; R/Dstream: the changes) are decoded and written to the sink;
4. the new state — items still relevant, emitted keys, the last answer set — and a small JSON meta
   (largest event time, last evaluated instant, closure version) go to ``CHECKPOINT/state/<batch>/``
   next to Spark's own checkpoint (``CHECKPOINT/spark/``).

The static side (background graphs, their closure and path results) is prepared once per closure
version and cached (``cep.engines.spark.evaluate.Prepared``): each batch only joins with it.

Two engines, one state. Spark's fixed cost — building and planning a handful of plans, seconds per
batch on 2 cores whatever its size — dominates a small batch. With ``engine="auto"`` (the default)
a batch runs on the driver instead while it is small (``cep.planner.limits``: state ≤ ``LOCAL_MAX_ROWS`` triples, batch ≤
``LOCAL_MAX_BATCH`` lines, the static side's background patterns ≤ ``LOCAL_MAX_BACKGROUND`` rows,
collected once per closure version) and the query allows it (``cep.engines.driver.walk.supports``:
no EXISTS, NOW() or timestamp() in a condition; Istream): one cheap job collects the raw lines,
plain JSON Lines and timestamped N-Triples are read by one compiled pass over the batch
(``cep.io.linescan``; the JSON lines it leaves by ``cep.io.lineparse`` in Python, any other line by
Spark's parser), the lifetimes come from ``cep.engines.driver.columnar``
(``cep.engines.driver.rows``'s operators over numpy columns, a JOIN with the static side filtering
the stream matches first), and the state is read and written with pyarrow as the same Parquet
tables — so consecutive batches may switch engines as the state grows or shrinks. Both engines are
tested against the reference evaluator, also switching mid-run (``tests/test_cep_continuous.py``).

Exactly once: Spark replays an unfinished batch with the same id and the same files after a
restart. A batch reads the state of the latest earlier batch (kept until the next one is written),
and writes its answers to ``part-<batch>.jsonl`` and its state to ``state/<batch>`` by atomic
renames — a replay rewrites the same files with the same content. The end-of-input close (trigger
``available-now``) writes ``part-<batch>-closed.jsonl`` and ``state/<batch>-closed`` the same way.

Sources: a directory of stream files per stream IRI (``FileSource``; the formats ``query --at``
reads, by extension; item ids ``xxhash64(file, line)`` are stable on replay) or a Kafka topic
(``KafkaSource``; one item per message, id ``xxhash64("kafka:TOPIC/PARTITION", offset)``). Bad
lines and late items go to the rejects output with their reason and are counted in the metrics.
Sinks: ``DirectorySink`` (exactly once), ``ConsoleSink`` and ``KafkaSink`` (at least once: a
replayed batch sends again, with the same message keys), ``CallbackSink``. The Kafka connector
jar comes from the jar cache (``rdfcore.jars.resolve_kafka_connector``); without it, the error
says so and how to get it.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cep.continuous.sinks import write_jsonl
from cep.continuous.sources import SOURCE
from cep.continuous.state import (EMITTED, ITEMS, ITEM_COLUMNS, LAST, LINES, METRICS_FILE, NEW, OUT_AT, OUT_END,
                                  OUT_START, OUT_VERSION, SPARK_DIR, STREAM, TERM_COLUMNS, Meta, StateStore,
                                  item_schema, rows_table, state_items, table_rows)
from cep.continuous.static import StaticSide, collect_background
from cep import algebra as A
from cep.algebra.patterns import TIME_UNITS
from cep.engines.columns import ITEM, LIFE_FROM, LIFE_TO, T_END, T_START, scratch, var_column
from cep.continuous.plan import DSTREAM, ISTREAM, ContinuousError, ContinuousPlan, end_instant
from cep.continuous.record import PER_BATCH, check
from cep.algebra.timeline import OPEN_END
from cep.engines.driver import columnar as COL
from cep.engines.driver.walk import supports
from cep.engines.spark import lifetimes as L
from cep.engines.spark.evaluate import Prepared, evaluate_lifetimes
from cep.io import linescan
from cep.io.formats import JSONL, TSNT, detect_stream_format
from cep.io.lineparse import parse_jsonl
from cep.io.streams import parse_lines
from rdfcore.dictionary import decode, merge_dictionaries
from rdfcore.hashing import term_id
from rdfcore import fs
from rdfcore.errors import SidecarError
from rdfcore.fs import spark_path
from rdfcore.locations import location
from rdfcore.schema import FILE, ID, LINE, O, P, RAW, REASON, S, TERM
from rdfcore.sparkutil import union_all
from cep.planner.limits import LOCAL_MAX_BACKGROUND, LOCAL_MAX_BATCH, LOCAL_MAX_ROWS  # noqa: F401 (re-exported)


__all__ = ["Runner", "RunSummary", "run_micro_batches", "keep_items", "ENGINES", "LOCAL_MAX_ROWS", "LOCAL_MAX_BATCH",
           "LOCAL_MAX_BACKGROUND"]

ENGINES = ("auto", "spark", "local")


#: the instant an answer is reported at (the ``_at`` output key)
_AT = scratch("at")


@dataclass
class RunSummary:
    """What a run did: batches, answers, rejected rows by reason, the last state."""

    batches: int = 0
    answers: int = 0
    input_rows: int = 0
    rejected: dict = field(default_factory=dict)
    watermark: int | None = None
    max_time: int | None = None
    state_rows: int = 0
    version: str | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def run_micro_batches(lines: DataFrame, on_batch: Callable, checkpoint: str | Path, trigger: str,
                      timeout: float | None, failure: Callable[[], BaseException | None]) -> None:
    """Run ``on_batch(frame, batch_id)`` on every micro-batch of the streaming frame ``lines``,
    Spark's progress under ``CHECKPOINT/spark``, until the input is exhausted (``available-now``)
    or ``timeout`` seconds (``interval:SECONDS``); then stop. On a failure the service's own
    exception (``failure()``) is raised rather than Spark's wrapper of it."""
    spark_checkpoint = location(checkpoint, "the checkpoint") / SPARK_DIR
    writer = lines.writeStream.foreachBatch(on_batch).option("checkpointLocation", str(spark_checkpoint))
    if trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    elif trigger.startswith("interval:"):
        writer = writer.trigger(processingTime=f"{float(trigger.split(':', 1)[1])} seconds")
    else:
        raise ContinuousError(f"unknown trigger {trigger!r}; expected available-now or interval:SECONDS")
    streaming = writer.start()
    try:
        if timeout is None:
            streaming.awaitTermination()
        else:
            streaming.awaitTermination(timeout)
    finally:
        if streaming.isActive:
            streaming.stop()
    if streaming.exception() is not None:
        raise failure() or RuntimeError(f"the streaming query failed: {streaming.exception()}")


class Runner:
    #: why the static side cannot go to the driver-side engine (``_background_local`` gave None)
    too_large = f"the static side has more than {LOCAL_MAX_BACKGROUND} rows"
    #: the largest state the driver-side engine takes (``engine="auto"``)
    local_max_rows = LOCAL_MAX_ROWS

    def __init__(self, spark, cplan: ContinuousPlan, static, sink, checkpoint: Path, rejects, on_answers, metrics,
                 prefixes, engine: str = "auto"):
        self.spark, self.plan, self.static, self.sink = spark, cplan, static, sink
        self.used = "spark"
        self.checkpoint = checkpoint
        self.rejects_dir = location(rejects, "the rejects directory") if rejects else None
        self.on_answers, self.metrics_out, self.prefixes = on_answers, metrics, prefixes
        self.state = StateStore(spark, checkpoint, asdict(cplan.convention))
        # its evaluated instants, kept items and emitted answers follow the windows it was run with:
        # the checkpoint's record (cep.continuous.record; job.run checks all of it) refuses others
        check(checkpoint, {"engine": PER_BATCH, "windows": asdict(cplan.convention)})
        self.summary = RunSummary()
        self.prepared = None  # (version, cep.engines.spark.evaluate.Prepared)
        self.error: BaseException | None = None
        self.state_rows = 0
        self.sources: list = []
        query = cplan.query
        self.construct = isinstance(query.form, A.Construct)
        self.names = [S, P, O] if self.construct else [v.name for v in query.form.variables]
        self.columns = [S, P, O] if self.construct else [var_column(n) for n in self.names]
        self.constants = sorted(A.constants(query.form))

        self.engine = engine
        self.local_ok = engine != "spark" and supports(query) is None and cplan.emit == ISTREAM
        #: (version, {Background node: cep.engines.driver.columnar.Table (or Rel)} or None when too large, {id: term})
        self.background_local = None
        self.used = "spark"            # the engine of the last batch (metrics)

    # -- one micro-batch -------------------------------------------------------------------------
    def batch(self, lines: DataFrame, batch_id: int) -> None:
        try:
            with _no_cyclic_gc():
                self._batch(lines, batch_id)
        except BaseException as exc:  # noqa: BLE001 - kept to re-raise from run(); Spark wraps it
            self.error = exc
            raise

    def _batch(self, lines: DataFrame, batch_id: int) -> None:
        started = time.time()
        label = self.state.label(batch_id)
        name, meta = self.state.latest_before(batch_id)
        self.used = "spark"
        if self._local_first(meta):
            fast = self._collect_batch(lines)
            if fast is not None:
                self._batch_local(fast, lines, batch_id, label, name, meta, started)
                return
        staging = self.state.staging(label)
        # The batch's lines go to Parquet first (one job over the source): everything after reads a
        # plain scan, so no later plan drags the streaming lineage along (re-analysing it made
        # every step of a batch cost seconds), and a rejected line's text is at hand.
        self._numbered(lines).write.parquet(str(staging / LINES))
        numbered = self.spark.read.parquet(spark_path(staging / LINES))
        terms, rejects = self._parsed(numbered)
        _encode(union_all(terms)).write.parquet(str(staging / NEW))
        items = self.spark.read.parquet(spark_path(staging / NEW))
        bad = union_all(rejects)
        stats = items.agg(F.max(T_START).alias("m"), F.min(T_START).alias("f"),
                          F.countDistinct(ITEM).alias("n"), F.min(T_START).alias("lo")).first()
        # late items: at or below an instant already evaluated (cep.continuous.plan "Watermark")
        late_rows = None
        last_late = None if meta.done is None else self.plan.last_late(meta.done)
        if last_late is not None and stats["lo"] is not None and stats["lo"] <= last_late:
            late_rows = self._late_rejects(numbered, items.filter(F.col(T_START) <= F.lit(last_late)), meta)
            items = items.filter(F.col(T_START) > F.lit(last_late))
            stats = items.agg(F.max(T_START).alias("m"), F.min(T_START).alias("f"),
                              F.countDistinct(ITEM).alias("n")).first()
        meta.first = _min(meta.first, stats["f"])
        all_rejects = bad if late_rows is None else bad.unionByName(late_rows)
        reject_counts = self._write_rejects(label, all_rejects)
        max_time = _max(meta.max_time, stats["m"])
        watermark = None if max_time is None else max_time - self.plan.lateness
        upto = meta.done
        if watermark is not None and (upto is None or watermark - 1 > upto):
            upto = watermark - 1
        items = items.select(*ITEM_COLUMNS)
        previous = self.state.frame(name, ITEMS)
        state_items = items if previous is None else previous.unionByName(items)
        answers = self._evaluate(state_items, name, meta, upto, label)
        kept = self._keep(state_items, upto)
        self._write_state(label, name, kept, answers, meta, max_time, upto, closed=False)
        self._release(answers)
        self.state.prune(batch_id - 1)
        self._report(batch_id, started, int(stats["n"] or 0), reject_counts, answers, max_time, watermark)

    def close(self) -> None:
        """End of input: evaluate every instant up to the largest event time, or past it under
        left-closed windows (``cep.continuous.plan.end_instant``)."""
        name, meta = self.state.latest_before(None)
        if name is None or meta.max_time is None:
            return
        started = time.time()
        batch_id = int(name[:10])
        label = self.state.label(batch_id, closed=True)
        last = end_instant(self.plan, meta.max_time)
        upto = max(last, meta.done if meta.done is not None else last)
        self.used = "spark"
        local = self._local_state(name, meta)
        if local is not None:
            answers = self._advance_local(local, name, meta, upto, label, meta.max_time, closed=True)
        else:
            state_items = self.state.frame(name, ITEMS)
            answers = self._evaluate(state_items, name, meta, upto, label)
            kept = self._keep(state_items, upto) if state_items is not None else None
            self._write_state(label, name, kept, answers, meta, meta.max_time, upto, closed=True)
            self._release(answers)
        self._report(label, started, 0, {}, answers, meta.max_time, upto + 1)

    # -- input ---------------------------------------------------------------------------------
    def _numbered(self, lines: DataFrame) -> DataFrame:
        """The batch's lines as (FILE, LINE, RAW, STREAM, SOURCE): every source numbers its lines
        (a file's per file, a Kafka message's line is its offset)."""
        return lines.select(FILE, LINE, RAW, STREAM, SOURCE)

    def _parsed(self, numbered: DataFrame) -> tuple[list[DataFrame], list[DataFrame]]:
        """Each source's lines parsed with its format: ([terms per source], [rejects per source])."""
        terms, rejects = [], []
        for i, source in enumerate(self.sources):
            mine = numbered.filter(F.col(SOURCE) == i).select(FILE, LINE, RAW)
            t, r = parse_lines(mine, self.prefixes, self.plan.time_unit, source.fmt)
            terms.append(t.withColumn(STREAM, F.lit(source.stream)))
            rejects.append(r)
        return terms, rejects

    # -- the driver-side path (cep.engines.driver.rows) -------------------------------------------------------
    def _local_first(self, meta: Meta) -> bool:
        """Whether to try this batch on the driver: allowed, the state small enough."""
        if not self.local_ok:
            return False
        if self.engine == "auto" and meta.state_rows is not None and meta.state_rows > self.local_max_rows:
            return False
        if self._background_local() is None:
            if self.engine == "local":
                raise ContinuousError(f"{self.too_large}: too large for the driver-side engine; use engine auto or "
                                      f"spark")
            return False
        return True

    def _collect_batch(self, lines: DataFrame):
        """The batch's items and rejected lines on the driver: ``(items, rejects)``, items as a
        pyarrow table of ``ITEM_COLUMNS`` + (FILE, LINE), rejects as (file, line, reason, raw)
        tuples; None when ``engine="auto"`` and the batch has more than LOCAL_MAX_BATCH lines (it
        then takes the Spark path, which reads the micro-batch again).

        One cheap Spark job collects the raw lines (through Arrow). JSON Lines and timestamped
        N-Triples are read by the compiled scanners (``cep.io.linescan``); the JSON lines they leave
        by ``cep.io.lineparse``; every other line by Spark's parser (``cep.io.streams``; a second job,
        only when there are such lines), which also gives the reasons of the rejects. A line of
        invalid UTF-8 (bytes Spark hands over as they are: Kafka's; or U+FFFD, what a decoder put for
        them) is rejected here with that parser's reason (``linescan.with_valid_utf8``)."""
        import numpy as np
        import pyarrow as pa


        raw = lines.select(RAW, FILE, LINE, SOURCE)     # every source numbers its lines
        # through Arrow: a Row object per line cost more than parsing the line
        collected = (raw.limit(LOCAL_MAX_BATCH + 1) if self.engine == "auto" else raw).toArrow()
        if self.engine == "auto" and collected.num_rows > LOCAL_MAX_BATCH:
            return None
        files = collected.column(FILE).combine_chunks()
        sources = collected.column(SOURCE).to_numpy().astype(np.int64)
        numbers = collected.column(LINE).to_numpy().astype(np.int64)
        # each (source, file)'s format, and where JSON Lines are
        encoded = files.dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        names = encoded.dictionary.to_pylist()
        formats = {}
        for key in set(zip(sources.tolist(), codes.tolist())):
            src = self.sources[key[0]]
            try:
                formats[key] = src.fmt or detect_stream_format(Path(names[key[1]]))
            except SidecarError:
                formats[key] = None       # Spark's parser rejects it with the reason
        row_formats = [formats[k] for k in zip(sources.tolist(), codes.tolist())]
        jsonl = np.array([f == JSONL for f in row_formats], np.bool_)
        tsnt = np.array([f == TSNT for f in row_formats], np.bool_)
        # a line of invalid UTF-8 (Kafka's bytes, a file's) as U+FFFD, which every parser rejects
        texts = linescan.with_valid_utf8(collected.column(RAW))
        streams = pa.array([src.stream for src in self.sources], pa.string())
        cache: dict = {}                # term text → N-Triples term, for this batch's lines
        parts = []
        slow_rows = [np.nonzero(~jsonl & ~tsnt)[0]]
        for mine, scan in ((jsonl, lambda t, f: linescan.scan(t, f, self.prefixes, cache)),
                           (tsnt, lambda t, f: linescan.scan_tsnt(t, f, cache))):
            if not mine.any():
                continue
            rows = np.nonzero(mine)[0]
            taken = pa.array(rows, pa.int64())
            kind, plain = scan(texts.take(taken), files.take(taken))
            at = rows[plain.at]
            parts.append(pa.table({
                STREAM: streams.take(pa.array(sources[at], pa.int64())),
                ITEM: linescan.item_ids(files.take(pa.array(at, pa.int64())), numbers[at]),
                S: plain.ids["s"], P: plain.ids["p"], O: plain.ids["o"],
                T_START: plain.t1, T_END: plain.t2,
                TERM_COLUMNS[S]: plain.terms["s"], TERM_COLUMNS[P]: plain.terms["p"], TERM_COLUMNS[O]: plain.terms["o"],
                FILE: files.take(pa.array(at, pa.int64())), LINE: numbers[at]}))
            slow_rows.append(rows[kind == linescan.SLOW])
        slow_rows = np.sort(np.concatenate(slow_rows))
        items, rejects, slow = [], [], []
        ids: dict = {}                  # N-Triples term → id
        slow_texts = texts.take(pa.array(slow_rows, pa.int64())).to_pylist()
        for i, text in zip(slow_rows.tolist(), slow_texts):
            file, line, source = names[codes[i]], int(numbers[i]), int(sources[i])
            if "\ufffd" in text and (jsonl[i] or (tsnt[i] and not text.lstrip(" \t").startswith("#"))):
                # what Spark's parser says first (cep.io.streams: after a blank line or a comment)
                rejects.append((file, line, linescan.INVALID_UTF8, text))
                continue
            parsed = parse_jsonl(text, file, line, self.prefixes, cache) if jsonl[i] else None
            if parsed is None:
                slow.append((file, line, text, source))
                continue
            stream = self.sources[source].stream
            for (item, s_, p_, o_, t1, t2) in parsed:
                for t in (s_, p_, o_):
                    if t not in ids:
                        ids[t] = term_id(t)
                items.append((stream, item, ids[s_], ids[p_], ids[o_], t1, t2, s_, p_, o_, file, line))
        if slow:
            frame = self.spark.createDataFrame(slow, f"{FILE} string, {LINE} long, {RAW} string, {SOURCE} int")
            terms, bad = self._parsed(frame)
            parsed_items = _encode(union_all(terms)).select(*ITEM_COLUMNS, FILE, LINE,
                                                         F.lit(None).cast("string").alias(REASON))
            bad_rows = union_all(bad).select(*[F.lit(None).cast("string" if c in (STREAM, *TERM_COLUMNS.values()) else "long")
                                            .alias(c) for c in ITEM_COLUMNS], FILE, LINE, REASON, RAW)
            for r in parsed_items.withColumn(RAW, F.lit(None).cast("string")).unionByName(bad_rows).collect():
                if r[REASON] is not None:
                    rejects.append((r[FILE], r[LINE], r[REASON], r[RAW]))
                else:
                    items.append(tuple(r[c] for c in ITEM_COLUMNS) + (r[FILE], r[LINE]))
        schema = _located_schema()
        parts.append(rows_table(items, schema))
        table = pa.concat_tables([t.cast(schema) for t in parts])
        return table, rejects

    def _batch_local(self, rows, lines: DataFrame, batch_id: int, label: str, name: str | None, meta: Meta,
                     started: float) -> None:
        """A micro-batch on the driver: ``rows`` from ``_collect_batch``; ``lines`` is read again
        only for the text of late lines (rare)."""
        import pyarrow.compute as pc


        parsed, bad = rows
        times = parsed.column(T_START).to_numpy()
        last_late = None if meta.done is None else self.plan.last_late(meta.done)
        if last_late is not None and len(times) and times.min() <= last_late:
            late = times <= last_late
            late_items = set(zip(parsed.column(FILE).filter(late).to_pylist(),
                                 parsed.column(LINE).filter(late).to_pylist(), times[late].tolist()))
            # rare: their text comes from the source lines (cep.continuous.plan "Watermark")
            frame = self.spark.createDataFrame(sorted(late_items), f"{FILE} string, {LINE} long, {T_START} long")
            raw = self._late_rejects(self._numbered(lines), frame, meta)
            bad.extend((r[FILE], r[LINE], r[REASON], r[RAW]) for r in raw.collect())
            parsed = parsed.filter(pc.invert(pc.less_equal(parsed.column(T_START), last_late)))
            times = parsed.column(T_START).to_numpy()
        reject_counts = self._record_rejects(label, sorted(bad, key=lambda r: (r[0], r[1])))
        if len(times):
            meta.first = _min(meta.first, int(times.min()))
        max_time = _max(meta.max_time, int(times.max()) if len(times) else None)
        watermark = None if max_time is None else max_time - self.plan.lateness
        upto = meta.done
        if watermark is not None and (upto is None or watermark - 1 > upto):
            upto = watermark - 1
        items = state_items(self.state.table(name, ITEMS), parsed.select(list(ITEM_COLUMNS)))
        answers = self._advance_local(items, name, meta, upto, label, max_time, closed=False)
        self.state.prune(batch_id - 1)
        self._report(batch_id, started, len(COL.sorted_unique(parsed.column(ITEM).to_numpy())), reject_counts, answers,
                     max_time, watermark)

    def _local_state(self, previous: str | None, meta: Meta):
        """The state items (a pyarrow table) when the end-of-input close runs on the driver, else None."""
        if not self._local_first(meta):
            return None
        return state_items(self.state.table(previous, ITEMS))

    def _background_local(self):
        """The static side's background patterns as ``cep.engines.driver.columnar`` tables with their terms,
        collected once per closure version; None when they are larger than LOCAL_MAX_BACKGROUND."""

        version, prepared, side = self._static()
        if self.background_local is not None and self.background_local[0] == version:
            return self.background_local[1]
        collected = collect_background(self.spark, prepared, side, LOCAL_MAX_BACKGROUND)
        self.background_local = (version, None, {}) if collected is None \
            else (version, COL.background_tables(collected[0]), collected[1])
        return self.background_local[1]

    def _advance_local(self, items, previous: str | None, meta: Meta, upto: int | None, label: str,
                       max_time, closed: bool):
        """``_evaluate`` + ``_keep`` + ``_write_state`` on the driver (``cep.engines.driver.columnar``), over the
        state items as a pyarrow table (``item_schema``): no Python object per item."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc


        self.used = "local"
        ids = {c: items.column(c).to_numpy() for c in (ITEM, S, P, O, T_START, T_END)}
        by_stream: dict = {}
        names = pc.unique(items.column(STREAM)).to_pylist()
        matrix = np.empty((items.num_rows, 6), np.int64)
        for i, c in enumerate((ITEM, S, P, O, T_START, T_END)):
            matrix[:, i] = ids[c]
        for name in names:
            by_stream[name] = (matrix if len(names) == 1
                               else matrix[pc.equal(items.column(STREAM), name).to_numpy(zero_copy_only=False)])
        emitted_table = self.state.table(previous, EMITTED)
        key_columns = [*self.columns, T_START, T_END]
        emitted = set()
        if emitted_table is not None:
            emitted = set(table_rows(emitted_table, key_columns))
        new_keys: dict = {}
        windows: dict = {}      # (stream, window) → its lifetimes, for the evaluation and the state
        n = 0
        if items.num_rows and upto is not None and meta.first is not None and (meta.done is None or upto > meta.done):
            version = self._static()[0]
            fresh: dict = {}      # a CONSTRUCT template's blank nodes, named per solution
            result = COL.evaluate(self.plan.query, by_stream, self.background_local[1], self.plan.time_unit, fresh,
                                  windows, lambda wanted: self._terms_of(set(wanted), items, ids, fresh))
            lo = meta.first if meta.done is None else max(meta.done + 1, meta.first)
            if isinstance(result, COL.Table):
                firsts = COL.first_instants(result, lo, upto)
            else:
                firsts = {}
                for row in result.rows:
                    a, b = row[-2], row[-1]
                    if b >= lo and a <= upto:
                        firsts[row[:-2]] = min(max(a, lo), firsts.get(row[:-2], max(a, lo)))
            new_keys = {key: first for key, first in firsts.items() if key not in emitted}
            terms = self._terms_of({v for key in new_keys for v in key[:-2] if v is not None}, items, ids, fresh)
            ordered = []
            for key, first in new_keys.items():
                values = [terms[value] if value is not None else None for value in key[:-2]]
                answer = dict(zip(self.names, values))
                answer[OUT_START] = key[-2]
                answer[OUT_END] = first if key[-1] == OPEN_END else key[-1]
                answer[OUT_AT], answer[OUT_VERSION] = first, version
                # the Spark path's order: instant, terms (unbound first), then the raw interval
                ordered.append(((first, *[(0, "") if t is None else (1, t) for t in values], key[-2], key[-1]), answer))
            out = [answer for _sort, answer in sorted(ordered, key=lambda pair: pair[0])]
            n = self.sink.write(label, out)
            if self.on_answers is not None:
                self.on_answers(label, out)
            self.summary.answers += n
        # the state: items some window can still hold after upto; the emitted keys they can give
        if upto is None:
            kept = items
        else:
            keep = [np.empty(0, np.int64)]
            for pattern in A.stream_patterns(self.plan.query.pattern):
                if pattern.stream in by_stream:
                    key = (pattern.stream, pattern.window)
                    if key not in windows:
                        windows[key] = COL.window(by_stream[pattern.stream], pattern.window,
                                                  time_unit=self.plan.time_unit)
                    lives = windows[key]
                    keep.append(lives[lives[:, -1] > upto, 0])
            kept = items.filter(pc.is_in(items.column(ITEM), value_set=pa.array(np.concatenate(keep))))
        starts = kept.column(T_START).to_numpy()
        oldest = int(starts.min()) if len(starts) else None
        keys = emitted | set(new_keys)
        keys = {k for k in keys if k[-1] == OPEN_END or (oldest is not None and k[-2] >= oldest)}
        self.state_rows = kept.num_rows
        key_schema = pa.schema([(c, pa.int64()) for c in key_columns])
        emitted_out = rows_table(sorted(keys, key=repr), key_schema)
        version = self.prepared[0] if self.prepared is not None else meta.version
        self.state.write(label, {ITEMS: kept, EMITTED: emitted_out},
                         Meta(max_time=max_time, first=meta.first, done=upto, version=version, closed=closed,
                               state_rows=kept.num_rows))
        return None, n, None, None

    def _terms_of(self, wanted: set, items, ids: dict, fresh: dict) -> dict:
        """{id: term} of the ids ``wanted`` (an answer's values): from the background, the query's
        constants, the fresh blank nodes, else from the state items' term columns."""
        import numpy as np


        known = {**self.background_local[2], **{term_id(t): t for t in self.constants}, **fresh}
        terms = {i: known[i] for i in wanted if i in known}
        missing = np.array(sorted(wanted - set(terms)), dtype=np.int64)
        for c in (S, P, O):
            if not len(missing):
                break
            at = np.nonzero(COL.member(ids[c], missing))[0]
            found, first = np.unique(ids[c][at], return_index=True)     # one row per id
            terms.update(zip(found.tolist(), items.column(TERM_COLUMNS[c]).take(at[first]).to_pylist()))
            missing = missing[~COL.member(missing, found)]
        return terms

    # -- pieces ----------------------------------------------------------------------------------
    def _late_rejects(self, numbered: DataFrame, late: DataFrame | None, meta: Meta) -> DataFrame | None:
        if late is None:
            return None
        last = self.plan.last_late(meta.done)
        counts = "" if last == meta.done else " (an item stamped τ counts from τ + 1 on in left-closed windows)"
        reason = F.concat(F.lit("late: event time "), F.col(T_START).cast("string"),
                          F.lit(f" is not after {last}: instant {meta.done} is already evaluated{counts} (the "
                                f"watermark is {meta.done + 1}; allow more lateness with --lateness)"))
        return late.select(FILE, LINE, T_START).distinct().join(
            numbered.select(FILE, LINE, RAW), [FILE, LINE]).select(FILE, LINE, reason.alias(REASON), RAW)

    def _write_rejects(self, label: str, rejects: DataFrame) -> dict:
        if self.rejects_dir is not None:
            return self._record_rejects(label, [(r[FILE], r[LINE], r[REASON], r[RAW])
                                                for r in rejects.orderBy(FILE, LINE).collect()])
        counts = {r[REASON]: r["n"] for r in rejects.groupBy(
            F.regexp_extract(F.col(REASON), r"^(late)", 1).alias(REASON)).agg(F.count(F.lit(1)).alias("n")).collect()}
        return self._count_rejects(counts)

    def _record_rejects(self, label: str, rows: list[tuple]) -> dict:
        """Rejected lines ``(file, line, reason, raw)``, in order: to the rejects directory (if
        any) and counted by reason."""
        if self.rejects_dir is not None:
            self.rejects_dir.mkdir(parents=True, exist_ok=True)
            write_jsonl(self.rejects_dir / f"part-{label}.jsonl",
                         ({"file": f, "line": n, "reason": why, "raw": raw} for f, n, why, raw in rows))
        counts: dict = {}
        for _f, _n, why, _raw in rows:
            key = "late" if why.startswith("late") else ""
            counts[key] = counts.get(key, 0) + 1
        return self._count_rejects(counts)

    def _count_rejects(self, counts: dict) -> dict:
        named = {("late" if k == "late" else "bad input"): v for k, v in counts.items()}
        for k, v in named.items():
            self.summary.rejected[k] = self.summary.rejected.get(k, 0) + v
        return named

    def _static(self):
        """The prepared static side of the current closure version (a new version: prepared anew)."""
        version = self.static.version()
        if self.prepared is None or self.prepared[0] != version:
            if self.prepared is not None:
                self.prepared[1].unpersist()
            side = self.static.current(self.spark)
            self.prepared = (side.version, Prepared(self.plan.query, side.background, self.plan.time_unit,
                                                    dictionary=side.dictionary), side)
        return self.prepared

    def _evaluate(self, items: DataFrame | None, previous: str | None, meta: Meta, upto: int | None, label: str):
        """The answers to report for the instants in (meta.done, upto] (``cep.continuous.plan``, "Output"),
        written to the sink; returns (the new Istream keys, persisted, or None; how many rows)."""
        if items is None or upto is None or meta.first is None or (meta.done is not None and upto <= meta.done):
            return None
        version, prepared, side = self._static()
        streams = {s: items.filter(F.col(STREAM) == s).select(ITEM, S, P, O, T_START, T_END)
                   for s in self.plan.streams}
        computed: list = []      # terms the evaluation made: a CONSTRUCT template's blank nodes
        result = evaluate_lifetimes(prepared, streams, dictionary=self._dictionary(items, side), computed=computed)
        # the instants of this batch: (done, upto]. The state no longer holds the items whose
        # lifetimes ended by done, so what the rows say about instants ≤ done is not to be trusted
        # (a pruned blocker would make an old answer look new): only [lo, upto] is looked at, and
        # "emitted before" comes from the emitted keys (Istream) or the last answer set (R/Dstream)
        lo = meta.first if meta.done is None else max(meta.done + 1, meta.first)
        rows = (result.filter((F.col(LIFE_TO) >= F.lit(lo)) & (F.col(LIFE_FROM) <= F.lit(upto)))
                .withColumn(LIFE_FROM, F.greatest(F.col(LIFE_FROM), F.lit(lo)))
                .withColumn(LIFE_TO, F.least(F.col(LIFE_TO), F.lit(upto))))
        key = self.columns + [T_START, T_END]
        last = None
        if self.plan.emit == ISTREAM:
            new = rows.groupBy(*key).agg(F.min(LIFE_FROM).alias(_AT))
            emitted = self.state.frame(previous, EMITTED)
            if emitted is not None:
                new = _minus(new, emitted, key)
        else:
            before = self.state.frame(previous, LAST)
            if before is None:
                before = rows.limit(0).select(*key)
            new = _changes(rows, before, key, lo, upto, self.plan.emit)
            last = rows.filter(F.col(LIFE_TO) == F.lit(upto)).select(*key).distinct()
        new = new.withColumn("_version", F.lit(version)).persist()
        decoded = self._decode(new, items, side, computed)
        out = list(_rows(decoded, self.names, self.columns))
        n = self.sink.write(label, out)
        if self.on_answers is not None:
            self.on_answers(label, out)
        self.summary.answers += n
        return (new if self.plan.emit == ISTREAM else None), n, new, last

    def _dictionary(self, items: DataFrame, side: StaticSide, computed: Sequence[DataFrame] = ()) -> DataFrame:
        """The terms of the batch's items and the query's constants, the static side's dictionary and
        computed terms, and ``computed`` (the terms an evaluation made): what decodes its answers."""
        parts = [items.select(F.col(c).alias(ID), F.col(TERM_COLUMNS[c]).alias(TERM)) for c in (S, P, O)]
        if self.constants:  # a literal relation: no Python rows to ship to the executors
            parts.append(self.spark.range(1).select(F.inline(F.array(*[
                F.struct(F.lit(term_id(t)).cast("long").alias(ID), F.lit(t).alias(TERM)) for t in self.constants]))))
        if side.dictionary is not None:
            parts.append(side.dictionary)
        parts += self._static()[1].terms   # the background's computed terms
        return merge_dictionaries([*parts, *computed])

    def _decode(self, new: DataFrame, items: DataFrame, side: StaticSide, computed: list = ()) -> DataFrame:
        return decode(new, self._dictionary(items, side, computed), tuple(self.columns)).orderBy(
            _AT, *[F.col(c).asc_nulls_first() for c in self.columns], T_START, T_END)

    def _keep(self, items: DataFrame, upto: int | None) -> DataFrame:
        return keep_items(items, self.plan, upto)

    @staticmethod
    def _release(answers) -> None:
        if answers is not None:
            answers[2].unpersist()

    def _write_state(self, label, previous_name, kept, answers, meta: Meta, max_time, upto, closed: bool) -> None:
        last = self.state.frame(previous_name, LAST) if answers is None else answers[3]
        emitted = self.state.frame(previous_name, EMITTED)
        if answers is not None and answers[0] is not None:
            keys = answers[0].select(*self.columns, T_START, T_END)
            emitted = keys if emitted is None else emitted.unionByName(keys)
        oldest, self.state_rows = None, 0
        if kept is not None:
            kept = self.state.put(label, ITEMS, kept)
            stats = kept.agg(F.min(T_START).alias("oldest"), F.count(F.lit(1)).alias("n")).first()
            oldest, self.state_rows = stats["oldest"], stats["n"]
        if emitted is not None and kept is not None:
            # a key can only be found again from items still kept: its interval starts at or
            # after the oldest of them; a background-only answer (open end) is kept for good
            open_end = F.col(T_END) == F.lit(OPEN_END)
            emitted = emitted.filter(open_end if oldest is None else open_end | (F.col(T_START) >= F.lit(oldest)))
        version = self.prepared[0] if self.prepared is not None else meta.version
        self.state.write(label, {EMITTED: emitted, LAST: last},
                         Meta(max_time=max_time, first=meta.first, done=upto, version=version, closed=closed,
                               state_rows=self.state_rows))

    def _report(self, batch, started, input_items, rejects, answers, max_time, watermark) -> None:
        now = time.time()
        lag = None if max_time is None else round(now - max_time * TIME_UNITS[self.plan.time_unit] / 1000, 3)
        line = {"batch": batch, "input_items": input_items, "rejected": rejects,
                "answers": 0 if answers is None else answers[1], "state_items": self.state_rows,
                "max_event_time": max_time, "watermark": watermark, "seconds": round(now - started, 3),
                "event_time_lag_seconds": lag, "engine": self.used}
        self.summary.batches += 1
        self.summary.state_rows = self.state_rows
        self.summary.input_rows += input_items
        self.summary.max_time, self.summary.watermark = max_time, watermark
        if self.prepared is not None:
            self.summary.version = self.prepared[0]
        text = json.dumps(line)
        print(text, file=self.metrics_out or sys.stderr, flush=True)
        fs.append_text(self.checkpoint / METRICS_FILE, text + "\n")


def keep_items(items: DataFrame, cplan: ContinuousPlan, upto: int | None) -> DataFrame:
    """The items some window can still hold at an instant after ``upto`` (``cep.continuous.plan``,
    "State"): an item whose lifetime in every window of its stream ends by ``upto`` can no longer
    change an answer (the instants up to ``upto`` are evaluated)."""
    if upto is None:
        return items
    parts = []
    for pattern in A.stream_patterns(cplan.query.pattern):
        mine = items.filter(F.col(STREAM) == pattern.stream).select(ITEM, S, P, O, T_START, T_END)
        alive = L.window(mine, pattern.window, None, cplan.time_unit)
        parts.append(alive.filter(F.col(LIFE_TO) > F.lit(upto)).select(ITEM))
    return items.join(union_all(parts).distinct(), ITEM, "left_semi")


def _changes(rows: DataFrame, last: DataFrame, key: list[str], lo: int, upto: int, emit: str) -> DataFrame:
    """Rstream / Dstream (``cep.continuous.plan``, "Output") at the instants c in [lo, upto]: the
    answers alive at c but not at c − 1 (new), alive at c − 1 but not at c (gone); Dstream reports
    the gone ones, Rstream the whole set alive at c wherever something changed. Only the
    instants where a lifetime starts or ends can change the set. ``rows``: lifetimes cut to
    [lo, upto]; ``last``: the answer keys alive at lo − 1 (the previous batch's last instant)."""
    c = _AT
    edges = (rows.select(F.col(LIFE_FROM).alias(c)).unionByName(rows.select((F.col(LIFE_TO) + 1).alias(c)))
             .unionByName(rows.sparkSession.range(1).select(F.lit(lo).cast("long").alias(c)))
             .filter((F.col(c) >= F.lit(lo)) & (F.col(c) <= F.lit(upto))).distinct())
    live = rows.select(*key, LIFE_FROM, LIFE_TO)

    def alive_at(shift: int) -> DataFrame:
        t = F.col(c) - F.lit(shift)
        return (F.broadcast(edges).join(live, (F.col(LIFE_FROM) <= t) & (F.col(LIFE_TO) >= t))
                .select(c, *key).distinct())

    now = alive_at(0)
    before = alive_at(1).unionByName(last.select(F.lit(lo).cast("long").alias(c), *key))
    on = [c] + key
    gone = _minus(before, now, on)
    if emit == DSTREAM:
        return gone
    new = _minus(now, before, on)
    changed = new.select(c).unionByName(gone.select(c)).distinct()
    return now.join(changed, c, "left_semi")


def _encode(terms: DataFrame) -> DataFrame:
    """Parsed items → state items (``ITEM_COLUMNS``) plus where each came from (FILE, LINE)."""
    return terms.select(F.col(STREAM), ITEM, *[F.xxhash64(F.col(c)).alias(c) for c in (S, P, O)], T_START, T_END,
                        *[F.col(c).alias(TERM_COLUMNS[c]) for c in (S, P, O)], FILE, LINE)


@contextlib.contextmanager
def _no_cyclic_gc():
    """Python's cycle collector paused for a micro-batch: the driver-side path allocates millions
    of tuples and strings (lines, terms, answers) that reference counting frees, and the collector
    kept re-scanning them (a third of a 100,000-line batch's time went to it)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@functools.cache
def _located_schema():
    """``item_schema`` plus where each item came from (FILE, LINE): the driver path's parsed lines."""
    import pyarrow as pa

    return pa.schema([*item_schema(), (FILE, pa.string()), (LINE, pa.int64())])


def _min(a, b):
    """The smaller of two optional values (None = not known yet)."""
    return _either(min, a, b)


def _max(a, b):
    return _either(max, a, b)


def _either(pick, a, b):
    known = [x for x in (a, b) if x is not None]
    return pick(known) if known else None


def _minus(left: DataFrame, right: DataFrame, columns) -> DataFrame:
    """The rows of ``left`` with no row of ``right`` equal (nulls equal) on ``columns``."""
    other = right.select(*[F.col(c).alias(scratch("x", c)) for c in columns])
    cond = F.lit(True)
    for c in columns:
        cond = cond & F.col(c).eqNullSafe(F.col(scratch("x", c)))
    return left.join(other, cond, "left_anti")


def _rows(decoded: DataFrame, names, columns):
    for row in decoded.collect():
        out = {name: row[column] for name, column in zip(names, columns)}
        out[OUT_START] = row[T_START]
        out[OUT_END] = row[T_END]
        out[OUT_AT] = row[_AT]
        if out[OUT_END] == OPEN_END:     # a background-only answer: [t1, t] at the instant t
            out[OUT_END] = row[_AT]
        out[OUT_VERSION] = row["_version"]
        yield out
