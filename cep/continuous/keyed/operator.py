"""A continuous CQELS-CEP query as ONE Spark stateful operator: streaming items in, answers out.

    from cep.continuous.keyed.operator import answers
    out = answers(spark, query_text, {"<http://example.org/publicTransport>": items_df}, lateness=0)
    out.filter("_reject IS NULL").writeStream.format("delta")...      # any sink

``items_df`` is any streaming DataFrame of stream triples (``ITEM_SCHEMA``: ``s``, ``p``, ``o`` as
N-Triples terms, ``t`` the event time in ticks of the time unit; ``t_end`` for an interval item,
``item`` to make several rows one graph item). The plan:

1. **Watermark.** ``withWatermark`` on the event time (``t`` as a timestamp) with the allowed
   lateness as its delay. Spark's watermark is the largest event time of the earlier batches minus
   the delay: the instants up to ``upto`` = watermark − 1 are final (``cep.continuous.plan``).
2. **Routing** (``route_items``): each triple goes to the keys of the stream triple patterns it
   matches (``cep.continuous.keyed.keys``), a row per (triple, key), with the key's bucket
   ``pmod(xxhash64(key ids), buckets)``. A row without a triple (``s`` null) is a *heartbeat*: it
   moves the watermark and reaches no bucket. The column that carries the watermark is dropped
   before the operator, so Spark does not drop late rows silently: the bucket rejects them, with
   reason ``late`` (``cep.continuous.keyed.bucket``).
3. **The operator**: ``groupBy(bucket).transformWithStateInPandas`` (event-time mode, RocksDB
   state store). Per bucket with rows or a due timer, :class:`KeyedProcessor` loads the bucket's
   state, runs ``bucket.step`` and writes the answers, the rejects, the new state and the timer.
4. **A new closure version** (``Keyed.refreshed``): its static side is shipped as a file, and a
   row of the ``control`` stream names it (``Shipped``), copied to every bucket (``STATIC``
   column). A bucket reads the latest static side it has heard of (the one the query was planned
   with, the one its state names, the control rows'), and ``bucket.step`` re-evaluates its keys
   against a version it has not evaluated with.

Why ``transformWithStateInPandas`` and not ``applyInPandasWithState``: ``bench/state_floor.py``
(docs/benchmarks.md) — with a state of the operator's size the older API is no cheaper, and in
PySpark 4.0.1 it fails with pyarrow 26.

The output has the SELECT's variables (strings, null when unbound), ``_start``, ``_end``, ``_at``,
``_version``, and ``_reject`` (null for an answer; for a rejected row its reason, with the row in
``_stream``, ``_s``, ``_p``, ``_o``, ``_t``; for a line the parser rejected (``parsed_items``),
its ``_file``, ``_line`` and ``_raw`` text).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark import SparkFiles
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from cep import algebra as A
from cep.algebra.windows import TIME_UNITS
from cep.continuous.keyed import bucket as B
from cep.continuous.keyed.keys import DEFAULT_BUCKETS, Partition, partition
from cep.continuous.plan import ISTREAM, ContinuousError, plan
from cep.continuous.state import OUT_AT, OUT_END, OUT_START, OUT_VERSION
from cep.continuous.static import NoStatic, collect_background
from cep.engines.driver import columnar as COL
from cep.engines.spark.evaluate import Prepared
from cep.io.streams import resolve_term
from cep.lowering.languages import compile_query
from rdfcore.hashing import term_id
from rdfcore.schema import REASON

__all__ = ["answers", "prepare", "Keyed", "parsed_items", "check_streams", "ROCKSDB", "route_items", "KeyedProcessor", "output_schema", "REJECT", "BROADCAST_ROWS",
           "Shipped", "STATIC", "dump_state", "load_state"]

#: the state store provider ``transformWithStateInPandas`` needs
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
#: the output column that tells a reject (its reason) from an answer (null)
REJECT = "_reject"
_REJECT_ROW = (("_stream", StringType()), ("_s", StringType()), ("_p", StringType()), ("_o", StringType()),
               ("_t", LongType()), ("_file", StringType()), ("_line", LongType()), ("_raw", StringType()))
#: where a rejected line came from (``parsed_items``): null in every other row
_WHERE = (("file", StringType()), ("line", LongType()), ("raw", StringType()))
_POSITIONS = ("s", "p", "o")
#: the most rows a background pattern may have: each bucket gets the static side with the operator
BROADCAST_ROWS = 2_000_000


def route_items(items: DataFrame, part: Partition, buckets: int, streams: tuple) -> DataFrame:
    """``items`` (``stream`` code, ``item``, ``s``, ``p``, ``o`` terms, ``t1``, ``t2`` ticks) → a row
    per (triple, key) with ``bucket``, ``k0``.. (the key's term ids), the triple's ids ``s``, ``p``,
    ``o`` and terms ``s_term``.. (module doc, step 2). ``primary`` marks one row per triple (its
    first key), the row that reports the triple when it is rejected."""
    n = len(part.key)
    ids = {c: F.xxhash64(F.col(c)) for c in _POSITIONS}
    if part.filtering:
        keys = []
        for shape in part.shapes:
            match = F.col("stream") == F.lit(streams.index(shape.stream))
            for i, term in shape.constants:
                match = match & (ids[_POSITIONS[i]] == F.lit(term_id(term)))
            for i, j in shape.same:
                match = match & (F.col(_POSITIONS[i]) == F.col(_POSITIONS[j]))
            key = F.struct(*[ids[_POSITIONS[i]].alias(f"k{k}") for k, i in enumerate(shape.key)]) if n \
                else F.struct(F.lit(0).alias("_none"))
            keys.append(F.when(match, key))
        keyed = F.array_distinct(F.filter(F.array(*keys), lambda k: k.isNotNull()))
    else:
        keyed = F.when(F.col("s").isNotNull(), F.array(F.struct(F.lit(0).alias("_none"))))
    # a heartbeat (no triple) gets no key (an empty or null array), so no row; not a filter, which
    # Spark pushes below the watermark, where the heartbeat could no longer move it
    if n:
        nothing = F.array(F.struct(*[F.lit(0).cast("long").alias(f"k{k}") for k in range(n)]))
    else:
        nothing = F.array(F.struct(F.lit(0).alias("_none")))
    # a bad row: reported by one bucket; a heartbeat (no triple, not bad): no key
    keyed = F.when(F.col("bad").isNotNull(), nothing).when(F.col("s").isNotNull(), keyed)
    rows = items.select("*", F.posexplode(keyed).alias("_pos", "_key"))
    key_columns = [F.col("_key")[f"k{k}"].alias(f"k{k}") for k in range(n)]
    bucket = F.pmod(F.xxhash64(*[F.col("_key")[f"k{k}"] for k in range(n)]), F.lit(buckets)) if n else F.lit(0)
    return rows.select(bucket.cast("int").alias("bucket"), *key_columns, F.col("stream").cast("long").alias("stream"),
                       "item", *[ids[c].alias(c) for c in _POSITIONS], "t1", "t2",
                       *[F.col(c).alias(f"{c}_term") for c in _POSITIONS], (F.col("_pos") == 0).alias("primary"),
                       "bad", *[c for c, _t in _WHERE])


def output_schema(names: tuple[str, ...]) -> StructType:
    """The operator's rows (module doc)."""
    fields = [StructField(f"v_{i}", StringType()) for i in range(len(names))]
    fields += [StructField(c, LongType()) for c in (OUT_START, OUT_END, OUT_AT)] + [StructField(OUT_VERSION, StringType())]
    fields += [StructField(REJECT, StringType())] + [StructField(c, t) for c, t in _REJECT_ROW]
    return StructType(fields)


#: the largest piece of a bucket's state in one state row: PySpark's state client fails on values
#: of a few MB (one message per value), while a list is sent as Arrow batches
CHUNK = 256 * 1024


class KeyedProcessor(StatefulProcessor):
    """One bucket's micro-batch (module doc, step 3). The bucket's state is its three tables, two
    numbers and the static side it reads, as bytes (``dump_state``), kept as a list of
    ``CHUNK``-sized rows. ``static``: the static side the query was planned with."""

    def __init__(self, program: B.Program, buckets: int, static: "Shipped | None" = None):
        self.program = program
        self.buckets = buckets
        self.static = static
        self.unit = TIME_UNITS[program.time_unit]
        self.names = program.names

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.chunks = handle.getListState("bucket", StructType([StructField("chunk", BinaryType())]))

    def handleInputRows(self, key, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        frames = [frame for frame in rows if len(frame)]
        new = pd.concat(frames, ignore_index=True) if frames else None
        yield from self._step(new, timerValues)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
        yield from self._step(None, timerValues)

    def close(self) -> None:
        pass

    def _upto(self, timerValues) -> int | None:
        watermark = timerValues.getCurrentWatermarkInMs()
        if watermark is None or watermark < 0:
            return None
        return watermark // self.unit - 1

    def _step(self, new: pd.DataFrame | None, timerValues) -> Iterator[pd.DataFrame]:
        stored = b"".join(bytes(row[0]) for row in self.chunks.get()) if self.chunks.exists() else b""
        state, held = load_state(stored, self.buckets) if stored else (B.BucketState.empty(self.program), None)
        bad, sides = None, [self.static, held]
        if new is not None:
            control = new[STATIC].notna().to_numpy()
            if control.any():     # a newly published static side (``Keyed.refreshed``)
                sides += [Shipped.parse(text) for text in new.loc[control, STATIC].tolist()]
                new = new[~control]
            broken = new["bad"].notna().to_numpy()
            if broken.any():
                bad, new = new[broken].assign(reason=new.loc[broken, "bad"]), new[~broken]
            # a long column with nulls arrives as float64: the good rows' ids and times are whole
            ids = [*B.key_columns(len(self.program.key)), "stream", "item", "s", "p", "o", "t1", "t2"]
            cast = {c: np.int64 for c in ids if new[c].dtype != np.int64}
            new = B.new_rows(new.astype(cast) if cast else new, len(self.program.key)) if len(new) else None
        side = max((s for s in sides if s is not None), key=lambda s: s.seq, default=None)
        program = self.program
        if side is not None:
            background, terms = load_static(side.file)
            program = replace(program, background=background, terms=terms, version=side.version)
        out = B.step(program, state, new, self._upto(timerValues))
        if bad is not None:
            out = B.Step(out.answers, pd.concat([bad, out.rejects], ignore_index=True) if len(out.rejects) else bad,
                         out.state, out.timer)
        if out.state.rows or out.state.first is not None:
            data = dump_state(out.state, self.buckets, side)
            self.chunks.put([(data[at:at + CHUNK],) for at in range(0, len(data), CHUNK)])
        else:
            self.chunks.clear()
        for old in list(self.handle.listTimers()):
            self.handle.deleteTimer(old)
        if out.timer is not None:
            # Spark fires a timer once the watermark reaches it (expiry ≤ watermark), and instant c
            # is final once the watermark reaches c + 1 ticks (``_upto``); a timer that fired finds
            # its answers due, so the next one is later (Spark deletes the fired one afterwards)
            self.handle.registerTimer((out.timer + 1) * self.unit)
        frame = self._rows(out)
        if len(frame):
            yield frame

    def _rows(self, out: B.Step) -> pd.DataFrame:
        columns = [f"v_{i}" for i in range(len(self.names))]
        answers = pd.DataFrame([[a.get(n) for n in self.names] + [a[OUT_START], a[OUT_END], a[OUT_AT], a[OUT_VERSION]]
                                for a in out.answers],
                               columns=[*columns, OUT_START, OUT_END, OUT_AT, OUT_VERSION])
        parts = [answers] if len(answers) else []
        rejects = out.rejects
        if len(rejects):
            rejects = rejects[rejects["primary"].to_numpy(bool)] if "primary" in rejects else rejects
            streams = [str(self.program.streams[int(c)]) for c in rejects["stream"].tolist()]
            times = [None if t != t else int(t) for t in rejects["t1"].tolist()]
            where = {f"_{c}": rejects[c].tolist() if c in rejects else None for c, _t in _WHERE}
            if where["_line"] is not None:
                where["_line"] = [None if n != n or n is None else int(n) for n in where["_line"]]
            parts.append(pd.DataFrame({REJECT: rejects["reason"].tolist(), "_stream": streams,
                                       "_s": rejects["s_term"].tolist(), "_p": rejects["p_term"].tolist(),
                                       "_o": rejects["o_term"].tolist(), "_t": times, **where}))
        if not parts:
            return pd.DataFrame()
        frame = pd.concat(parts, ignore_index=True)
        for c in (*columns, OUT_VERSION, REJECT, "_stream", "_s", "_p", "_o", "_file", "_raw"):
            # Python strings and None: pandas 3 keeps strings in Arrow arrays, a concatenated column
            # in a chunked one, and PySpark 4.0.1 cannot put a chunked array into the output struct
            frame[c] = frame[c].astype(object).where(frame[c].notna(), None) if c in frame else None
        for c in (OUT_START, OUT_END, OUT_AT, "_t", "_line"):
            frame[c] = frame[c].astype("Int64") if c in frame else pd.array([None] * len(frame), dtype="Int64")
        return frame[[f.name for f in output_schema(self.names).fields]]


_TABLES = ("items", "emitted", "pending")
#: the static sides a Python worker has read, by file name (a worker serves many batches)
_STATIC: dict = {}
#: the routed rows' column that carries a newly published static side to every bucket
STATIC = "static"


@dataclass(frozen=True)
class Shipped:
    """A static side shipped to the executors: its ``file`` (``ship_static``), the closure
    ``version`` it was prepared from and ``seq``, when it was shipped (nanoseconds since the epoch):
    a bucket reads the latest one it has heard of."""

    file: str
    version: str | None
    seq: int

    def text(self) -> str:
        return json.dumps({"file": self.file, "version": self.version, "seq": self.seq})

    @staticmethod
    def parse(text: str) -> "Shipped":
        record = json.loads(text)
        return Shipped(record["file"], record["version"], int(record["seq"]))


def ship_static(spark: SparkSession, background: dict, terms: dict, version: str | None) -> Shipped:
    """The static side to every executor as a file (``SparkContext.addFile``), not inside the
    operator's pickled function: a large function goes through a broadcast variable, which the
    process that plans ``transformWithStateInPandas`` cannot read. Its name is its content's hash."""
    data = pickle.dumps((background, terms), protocol=pickle.HIGHEST_PROTOCOL)
    name = f"rsp-keyed-static-{hashlib.sha256(data).hexdigest()[:16]}.pkl"
    directory = Path(tempfile.gettempdir()) / "rsp-keyed"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    if not path.exists():
        partial = directory / f".{name}.{os.getpid()}"
        partial.write_bytes(data)
        os.replace(partial, path)
    if name not in _SHIPPED:
        spark.sparkContext.addFile(str(path))
        _SHIPPED.add(name)
    return Shipped(name, version, time.time_ns())


_SHIPPED: set = set()
#: the static sides a worker keeps read (a bucket reads the latest; one before it may be in flight)
_KEEP_STATIC = 2


def load_static(name: str) -> tuple[dict, dict]:
    if name not in _STATIC:
        with open(SparkFiles.get(name), "rb") as f:
            _STATIC[name] = pickle.load(f)
        while len(_STATIC) > _KEEP_STATIC:
            del _STATIC[next(iter(_STATIC))]
    return _STATIC[name]


#: the state's Arrow IPC streams compressed (``dump_state``): most of a bucket's bytes are its items'
#: terms and ids, and the state store writes every byte of it each micro-batch
_IPC = pa.ipc.IpcWriteOptions(compression="zstd" if pa.Codec.is_available("zstd") else None)


def dump_state(state: B.BucketState, buckets: int, static: Shipped | None = None) -> bytes:
    """A bucket's state as bytes: its tables as one Arrow IPC stream each, with their lengths, then
    its closure version and the static side it reads (JSON). Term columns are dictionary-encoded
    (a stream repeats its subjects, predicates and objects) and the streams compressed: a quarter
    of the plain bytes on the Vienna stream, and the state store's write of a bucket's state each
    micro-batch costs by the byte (``docs/benchmarks.md``, the keyed operator)."""
    out = io.BytesIO()
    meta = np.array([-1 if state.first is None else 0, state.first or 0,
                     -1 if state.done is None else 0, state.done or 0, buckets], np.int64)
    out.write(meta.tobytes())
    for name in _TABLES:
        frame = getattr(state, name)
        # strings as Python objects, or in pandas 3's Arrow-backed string dtype (rows from Spark)
        terms = [c for c in frame.columns if frame[c].dtype == object or isinstance(frame[c].dtype, pd.StringDtype)]
        frame = frame.astype({c: "category" for c in terms}) if terms else frame
        table = pa.Table.from_pandas(frame, preserve_index=False)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema, options=_IPC) as writer:
            writer.write_table(table)
        data = sink.getvalue().to_pybytes()
        out.write(np.int64(len(data)).tobytes())
        out.write(data)
    out.write(json.dumps({"version": state.version, "static": None if static is None else static.text()}).encode())
    return out.getvalue()


def load_state(data: bytes, buckets: int) -> tuple[B.BucketState, Shipped | None]:
    """``dump_state``'s bytes: the state and the static side it read; a ContinuousError when they
    were written with another bucket count (the keys would now hash to other buckets than the ones
    holding their state). A state written before versions were kept has neither."""
    meta = np.frombuffer(data[:40], np.int64)
    if int(meta[4]) != buckets:
        raise ContinuousError(f"this checkpoint's state was written with {int(meta[4])} buckets and the query now "
                              f"asks for {buckets}: the bucket count is fixed when a checkpoint is created (give "
                              f"buckets={int(meta[4])}, or start from a new checkpoint)")
    at, tables = 40, {}
    for name in _TABLES:
        size = int(np.frombuffer(data[at:at + 8], np.int64)[0])
        at += 8
        frame = pa.ipc.open_stream(data[at:at + size]).read_all().to_pandas()
        for c in frame.columns:
            if isinstance(frame[c].dtype, pd.CategoricalDtype):   # terms (dump_state): strings and None again
                frame[c] = frame[c].astype(object).where(frame[c].notna(), None)
        tables[name] = frame
        at += size
    tail = json.loads(data[at:]) if len(data) > at else {}
    static = tail.get("static")
    return (B.BucketState(tables["items"], tables["emitted"], tables["pending"],
                          None if meta[0] < 0 else int(meta[1]), None if meta[2] < 0 else int(meta[3]),
                          tail.get("version")),
            None if static is None else Shipped.parse(static))


def source_items(frame: DataFrame, stream: int, time_unit: str) -> DataFrame:
    """A user's streaming DataFrame of stream triples (module doc) as ``route_items`` takes it, with
    the event time ``_time`` (a timestamp) for the watermark. Terms are checked and normalised as
    the stream files' are (``cep.io.streams.resolve_term``: literals canonical, blank nodes scoped
    to the stream); a row with a bad term, a partial triple, no time or ``t_end`` before ``t`` keeps
    its raw values and gets the reason in ``bad``; a row with a time and no triple is a heartbeat."""
    columns = set(frame.columns)
    t1 = F.col("t").cast("long")
    t2 = F.col("t_end").cast("long") if "t_end" in columns else t1
    row_id = F.xxhash64(*[F.col(c) for c in ("s", "p", "o", "t")], *([t2] if "t_end" in columns else []))
    item = F.coalesce(F.col("item").cast("long"), row_id) if "item" in columns else row_id
    scope = F.lit(f"k{stream}")
    # three projections, not one: Spark plans every micro-batch again, and one projection that
    # names each checked term in the reason and in the value would copy the checks into every
    # column that reads them (twice the planning time, measured)
    checked = frame.select(F.lit(stream).alias("stream"), item.alias("item"),
                           *[F.col(c).cast("string").alias(c) for c in _POSITIONS], t1.alias("t1"), t2.alias("t2"),
                           F.col("t").isNull().alias("_no_t"),
                           *[resolve_term(F.col(c).cast("string"), c, F.lit(c), None, scope).alias(f"_{c}")
                             for c in _POSITIONS])
    beat = F.col("s").isNull() & F.col("p").isNull() & F.col("o").isNull()
    bad = (F.when(F.col("_no_t") | F.col("t1").isNull(), F.lit("missing or non-integer event time t"))
           .when(beat, None)
           .when(F.col("t2").isNull(), F.lit("non-integer t_end"))
           .when(F.col("t2") < F.col("t1"), F.lit("t_end is before t"))
           .otherwise(F.concat_ws("; ", *[F.col(f"_{c}")["e"] for c in _POSITIONS])))
    judged = checked.select("*", F.when(bad == F.lit(""), None).otherwise(bad).alias("bad"))
    unit = TIME_UNITS[time_unit]
    return judged.select("stream", "item",
                         *[F.when(F.col("bad").isNull(), F.col(f"_{c}")["v"]).otherwise(F.col(c)).alias(c)
                           for c in _POSITIONS],
                         "t1", "t2", "bad", *[F.lit(None).cast(t).alias(c) for c, t in _WHERE],
                         F.timestamp_millis(F.coalesce(F.col("t1"), F.lit(0)) * F.lit(unit)).alias("_time"))


def parsed_items(terms: DataFrame, stream: int, time_unit: str) -> DataFrame:
    """Stream items the project's own parser read as ``route_items`` takes them, with ``_time``:
    ``cep.io.streams.parse_lines``' terms (``item``, ``s``, ``p``, ``o``, ``t_start``, ``t_end``,
    already checked and normalised), or ``parse_lines_once``' rows, whose rejected lines (``reason``)
    reach the operator's rejects with their ``file``, ``line`` and ``raw`` text; heartbeat rows
    (``s`` null, no reason) pass as they are."""
    unit = TIME_UNITS[time_unit]
    once = REASON in terms.columns
    bad = F.col(REASON) if once else F.lit(None).cast("string")
    # where a line came from, for its reject alone: an item's rows do not carry it through the shuffle
    where = [F.when(F.col(REASON).isNotNull(), F.col(c)).alias(c) if once else F.lit(None).cast(t).alias(c)
             for c, t in _WHERE]
    # a rejected line has no time: 0 leaves the watermark (the largest event time) where it is
    return terms.select(F.lit(stream).alias("stream"), F.col("item").cast("long").alias("item"),
                        *[F.col(c) for c in _POSITIONS], F.col("t_start").alias("t1"), F.col("t_end").alias("t2"),
                        bad.alias("bad"), *where,
                        F.timestamp_millis(F.coalesce(F.col("t_start"), F.lit(0)) * F.lit(unit)).alias("_time"))


def keyed_answers(items: Mapping, program: B.Program, part: Partition, *, lateness: int, buckets: int,
                  static: Shipped | None = None, control: DataFrame | None = None) -> DataFrame:
    """The operator over ``items`` ({stream IRI: ``source_items``' DataFrame}; module doc), its
    variables in columns ``v_0``.. (``answers`` names them); ``static``: the static side it starts
    with; ``control``: a streaming DataFrame of newly published static sides (``Shipped.text`` in
    ``value``), each sent to every bucket."""
    frames = [items[iri] for iri in program.streams if iri in items]
    union = frames[0]
    for other in frames[1:]:
        union = union.unionByName(other)
    delay = lateness * TIME_UNITS[program.time_unit]
    watermarked = union.withWatermark("_time", f"{delay} milliseconds")
    routed = route_items(watermarked.drop("_time"), part, buckets, program.streams)
    routed = routed.withColumn(STATIC, F.lit(None).cast("string"))
    if control is not None:
        # every long column 0, not null: a null makes pandas read the whole column as float64
        every = F.explode(F.sequence(F.lit(0), F.lit(buckets - 1))).alias("bucket")
        filled = [F.lit(None).cast(f.dataType).alias(f.name) if not isinstance(f.dataType, LongType)
                  else F.lit(0).cast("long").alias(f.name) for f in routed.schema.fields if f.name not in ("bucket", STATIC)]
        routed = routed.unionByName(control.select(every, *filled, F.col("value").alias(STATIC)))
    return (routed.groupBy("bucket")
            .transformWithStateInPandas(KeyedProcessor(program, buckets, static), output_schema(program.names), "Append", "EventTime"))


@dataclass(frozen=True)
class Keyed:
    """A query planned for the operator: what ``keyed_answers`` runs (``prepare``)."""

    program: B.Program
    part: Partition
    buckets: int
    lateness: int
    static: Shipped          # the static side shipped when the query was planned
    source: object = None    # where it came from (``StaticFiles``, ``ClosureStore``; None: no background)

    @property
    def names(self) -> tuple[str, ...]:
        return self.program.names

    def run(self, items: Mapping[str, DataFrame], control: DataFrame | None = None) -> DataFrame:
        """The operator over ``items`` ({stream IRI: ``source_items``' or ``parsed_items``' frame}),
        its columns named after the query's variables (module doc); ``control``: ``keyed_answers``."""
        out = keyed_answers(items, self.program, self.part, lateness=self.lateness, buckets=self.buckets,
                            static=self.static, control=control)
        return out.select(*[F.col(f"v_{i}").alias(n) for i, n in enumerate(self.names)],
                          *[c for c in out.columns if not c.startswith("v_")])

    def refreshed(self, spark: SparkSession, known: str | None) -> Shipped | None:
        """The static side of a closure version other than ``known``, prepared and shipped to the
        executors, when the source has published one; else None. Its ``text`` sent through the
        ``control`` stream makes every bucket read it from its next step on."""
        if self.source is None or self.source.version() == known:
            return None
        side = self.source.current(spark)
        if side.version == known:      # a source read once (StaticFiles): its first reading stays
            return None
        cplan = plan(self.program.query, self.program.time_unit, self.lateness)
        rels, terms, version = _static_side(spark, cplan, side)
        return ship_static(spark, rels, terms, version)


def prepare(spark: SparkSession, query, *, static=None, lateness: int = 0, time_unit: str = "ms",
            buckets: int = DEFAULT_BUCKETS, lang: str | None = None, emit: str = ISTREAM) -> Keyed:
    """Plan ``query`` (text or ``cep.algebra.Query``) for the operator: its keys and buckets, its
    static side shipped to the executors, the session's state store set to RocksDB (module doc);
    a ContinuousError for what the operator does not run (``cep.continuous.keyed.keys.refusal``)."""
    if isinstance(query, str):
        query = compile_query(query, lang=lang)
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
        raise ContinuousError(f"buckets must be a positive number, got {buckets!r}")
    cplan = plan(query, time_unit, lateness, emit=emit)
    part = partition(cplan)
    if part.single is not None:
        buckets = 1
    rels, terms, version = _static_side(spark, cplan, (static or NoStatic()).current(spark))
    program = B.Program(cplan.query, time_unit, part.key, part.streams, version=version, emit=cplan.emit)
    _check_names(program.names)
    shipped = ship_static(spark, rels, terms, version)
    provider = spark.conf.get(_PROVIDER, None)
    if provider not in (None, ROCKSDB, _HDFS):
        raise ContinuousError(f"{_PROVIDER} is {provider}: the keyed operator's state needs {ROCKSDB}")
    spark.conf.set(_PROVIDER, ROCKSDB)
    if spark.conf.get(_CHANGELOG, None) is None:   # a batch commits what changed, not a snapshot
        spark.conf.set(_CHANGELOG, "true")
    return Keyed(program, part, buckets, lateness, shipped, static)


def check_streams(keyed: Keyed, given) -> None:
    """A ContinuousError unless ``given`` (stream IRIs) are the streams the query reads."""
    missing = [iri for iri in keyed.part.streams if iri not in given]
    unknown = [iri for iri in given if iri not in keyed.part.streams]
    if missing or unknown:
        raise ContinuousError("the streams given do not match the query's: "
                              + "; ".join(filter(None, [missing and f"the query reads {', '.join(missing)}, not given",
                                                        unknown and f"{', '.join(unknown)} given, which the query "
                                                                    f"does not read (it reads "
                                                                    f"{', '.join(keyed.part.streams)})"])))


def answers(spark: SparkSession, query, streams: Mapping[str, DataFrame], *, static=None, lateness: int = 0,
            time_unit: str = "ms", buckets: int = DEFAULT_BUCKETS, lang: str | None = None,
            emit: str = ISTREAM) -> DataFrame:
    """The answers of a continuous CQELS-CEP ``query`` (text or ``cep.algebra.Query``) over the
    streaming DataFrames ``streams`` ({stream IRI: DataFrame with ``s``, ``p``, ``o``, ``t`` and
    optionally ``t_end``, ``item``}), as a streaming DataFrame (module doc): write it with any sink.
    ``static``: the background (``cep.continuous.static.StaticFiles`` or ``ClosureStore``; None:
    no background), prepared once when the query is planned; ``lateness``: the allowed lateness in
    ``time_unit`` ticks; ``buckets``: the number of groups the keys are hashed into; ``emit``:
    ``istream`` (each answer once, when it appears), ``dstream`` (each answer when it stops
    holding, ``_at`` that instant) or ``rstream`` (the whole answer set wherever it changes: one
    bucket). The session's state store provider is set to RocksDB, which the operator needs (a session that
    names another provider is refused), with changelog checkpointing unless the session says."""
    keyed = prepare(spark, query, static=static, lateness=lateness, time_unit=time_unit, buckets=buckets, lang=lang,
                    emit=emit)
    check_streams(keyed, list(streams))
    for iri, frame in streams.items():
        if not frame.isStreaming:
            raise ContinuousError(f"the DataFrame given for {iri} is not a streaming DataFrame (spark.readStream...)")
        absent = [c for c in ("s", "p", "o", "t") if c not in frame.columns]
        if absent:
            raise ContinuousError(f"the DataFrame given for {iri} has no column {', '.join(absent)}: a stream "
                                  f"DataFrame has s, p, o (N-Triples terms), t (event time in {time_unit}) and "
                                  f"optionally t_end and item; it has {', '.join(frame.columns)}")
    streams_ = keyed.part.streams
    return keyed.run({iri: source_items(frame, streams_.index(iri), time_unit) for iri, frame in streams.items()})


_PROVIDER = "spark.sql.streaming.stateStore.providerClass"
_CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
_HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def _check_names(names) -> None:
    """The output's columns are the variables' names: Spark resolves them ignoring case."""
    seen: dict = {}
    for name in (*names, OUT_START, OUT_END, OUT_AT, OUT_VERSION, REJECT, *(c for c, _t in _REJECT_ROW)):
        if name.lower() in seen:
            raise ContinuousError(f"?{name} and {seen[name.lower()]} name the same output column in Spark, "
                                  f"which ignores case: rename one of them")
        seen[name.lower()] = f"?{name}" if name in names else name


def _static_side(spark: SparkSession, cplan, side) -> tuple[dict, dict, str]:
    """The background of ``cplan``'s query from ``side`` (``cep.continuous.static.StaticSide``),
    prepared on the driver for the buckets: its tables, the terms of their ids and of the query's
    constants, its version."""
    prepared = Prepared(cplan.query, side.background, cplan.time_unit, dictionary=side.dictionary)
    collected = collect_background(spark, prepared, side, BROADCAST_ROWS)
    if collected is None:
        raise ContinuousError(f"the query's background patterns have more than {BROADCAST_ROWS} rows, more than the "
                              f"keyed operator ships to every bucket")
    rels, terms = collected
    terms = dict(terms)
    terms.update((term_id(t), t) for t in A.constants(cplan.query.form))
    return COL.background_tables(rels), terms, side.version
