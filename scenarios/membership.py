"""Class membership over an RDF stream: which streamed subjects are instances of a class?

EP-SPARQL's Test 2 ("is this streamed plant a Tracheobionta?") as a service, for any class:

    from scenarios.membership import run
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    summary = run(spark, [FileSource("<urn:plants>", "in/")], store="closure/",
                  target="<http://example.org/plants#subkingdom:Tracheobionta>",
                  sink=DirectorySink("out/"), checkpoint="ckpt/")

Semantics. A streamed triple ``x P C`` makes ``x`` an instance of the target class T when P is
``rdf:type`` or one of its subproperties (rdfs7) and C is T or one of its subclasses (rdfs9), both
read from the *published closure* (the reasoner's store: its ``subclass`` and ``subproperty``
tables, the current version at each micro-batch — a refresh is picked up by the next batch). Every
such triple is one answer: ``{"subject", "class" (the streamed C), "t" (its event time),
"processed_at" (wall clock, ms), "version" (of the closure), "file", "line"}``. Answers do not
depend on other items (no window, no state): the output of a batch is final when written, and the
answer for a triple is the same whichever batch it arrives in. Literal subjects cannot occur
(N-Triples), and a blank-node subject is scoped to its file as ``cep.io.streams`` scopes it.
``rdfs:domain``/``rdfs:range`` of the streamed predicates are not used: the taxonomy has none
(README, known limits).

Execution (Spark Structured Streaming, ``foreachBatch``, exactly once into a ``DirectorySink``):

* ``engine="auto"`` (default) — the driver path. For file sources the batch's files are named by
  Spark's own checkpoint (the offsets of the batch and the file source's log; Spark wrote both
  before the batch ran) and read on the driver by ``cep.io.tsnt`` (pyarrow, chunks classified
  in parallel threads): no Spark job at all for a plain batch. Lines only the full parser can
  read go to ``cep.io.streams.parse_lines`` (one small Spark job, only when there are such lines),
  which also gives the reasons of the rejects. Kafka messages, and file batches whose files the
  checkpoint does not name readably, are collected with one Spark job (Arrow) and classified the
  same way.
* ``engine="spark"`` — every line parsed by Spark and joined with the class set (broadcast); the
  answers collected through Arrow. For inputs the driver cannot read (a cluster's filesystem).

Bad lines go to ``rejects`` (one JSON Lines file per batch: file, line, reason, raw) and are
counted; nothing is dropped silently.
"""
from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cep.io.lineparse import bnode_scope, parse_jsonl
from cep.io.linescan import with_valid_utf8
from cep.continuous.sinks import write_json_lines, write_jsonl
from cep.continuous.record import MEMBERSHIP, claim, streams_record
from cep.continuous.sources import FileSource, KafkaSource
from cep.continuous.state import SPARK_DIR
from cep.io.formats import JSONL, TSNT, detect_stream_format
from cep.io.streams import parse_lines
from reasoner import store as closure_store
from rdfcore.errors import SidecarError
from rdfcore import fs
from rdfcore.locations import location
from rdfcore.schema import DICTIONARY, FILE, ID, LINE, O, P, RAW, REASON, S, SUB, SUBCLASS, SUBPROPERTY, SUP, TERM
from rdfcore.vocab import RDF_TYPE
from cep.io import tsnt, tsntscan
from scenarios.batches import batch_files, numbered_lines, parse_slow, run_batches

__all__ = ["MembershipError", "ClassSet", "load_class_set", "resolve_class", "batch_files", "run", "RunSummary",
           "ENGINES"]

ENGINES = ("auto", "spark")
METRICS_FILE = "metrics.jsonl"
_THREADS = max(1, min(4, os.cpu_count() or 1))


class MembershipError(SidecarError, ValueError):
    """The target class is unknown to the closure, or the closure store is missing."""


def resolve_class(text: str, local: Callable[[str], str] | None = None) -> str:
    """``<iri>`` as it is, ``http://...`` in angle brackets, anything else a local name turned into
    a term by ``local`` (the plant job: a taxon id, ``subkingdom:Tracheobionta``)."""
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        return text
    if "://" in text or text.startswith("urn:"):
        return f"<{text}>"
    if local is None:
        raise MembershipError(f"class {text!r}: expected an IRI (<http://...> or http://...)")
    return local(text)


@dataclass(frozen=True)
class ClassSet:
    """The target class, its subclasses and the typing predicates, of one closure version."""

    version: str
    target: str
    classes: pa.Array      # N-Triples terms of every C with C rdfs:subClassOf* target
    predicates: pa.Array   # rdf:type and every property rdfs:subPropertyOf* rdf:type

    @functools.cached_property
    def scan_sets(self) -> tuple[tsnt.TermSet, tsnt.TermSet]:
        """The predicates and the classes as the bulk scanner's hash tables (built once)."""
        return tsnt.TermSet(self.predicates), tsnt.TermSet(self.classes)

    def __len__(self) -> int:
        return len(self.classes)


def load_class_set(store: str | Path, target: str, version: str | None = None) -> ClassSet:
    """Read the class set of ``target`` from a published closure (pyarrow; no Spark job)."""
    root = location(store, "the closure store")
    version = version or closure_store.current_version(root)
    if version is None:
        raise MembershipError(f"{root}: no published closure here (no CURRENT); publish one with "
                              f"rsp-sidecar materialize or let the job publish the taxonomy")
    base = root / closure_store.VERSIONS / version
    dictionary = fs.read_parquet(base / DICTIONARY, columns=[ID, TERM])
    ids = dictionary.column(ID)
    terms = dictionary.column(TERM)

    def id_of(term: str) -> int | None:
        found = pc.indices_nonzero(pc.equal(terms, term))
        return ids[found[0].as_py()].as_py() if len(found) else None

    target_id = id_of(target)
    if target_id is None:
        raise MembershipError(f"class {target} is not a term of closure version {version} in {root}: "
                              f"check the IRI (--class) or the ontology the closure was built from")
    classes = _below(fs.read_parquet(base / SUBCLASS), target_id)
    type_id = id_of(RDF_TYPE)
    predicates = _below(fs.read_parquet(base / SUBPROPERTY), type_id) if type_id is not None else pa.array([], pa.int64())
    def decode(wanted: pa.Array, always: str) -> pa.Array:
        chosen = pc.filter(terms, pc.is_in(ids, value_set=wanted))
        return pc.unique(pa.concat_arrays([chosen.combine_chunks() if isinstance(chosen, pa.ChunkedArray) else chosen,
                                           pa.array([always], pa.string())]))

    return ClassSet(version, target, decode(classes, target), decode(predicates, RDF_TYPE))


def _below(pairs: pa.Table, top: int) -> pa.Array:
    """``sub`` of the closure pairs ``(sub, top)`` (the tables hold the transitive closure)."""
    subs = pc.filter(pairs.column(SUB), pc.equal(pairs.column(SUP), top))
    return pc.unique(subs.combine_chunks() if isinstance(subs, pa.ChunkedArray) else subs)


# --- the service ------------------------------------------------------------------------------

@dataclass
class RunSummary:
    batches: int = 0
    lines: int = 0
    answers: int = 0
    rejected: int = 0
    version: str | None = None
    seconds: float = 0.0          # inside the batches (the steady-state work)
    driver_batches: int = 0
    spark_batches: int = 0
    per_batch: list = field(default_factory=list)

    def to_dict(self) -> dict:
        out = dict(self.__dict__)
        out.pop("per_batch")
        out["lines_per_second"] = round(self.lines / self.seconds) if self.seconds else None
        return out


class _Answers:
    """Answer lines of one batch as JSON text, one Arrow string array per chunk, every element
    ending with a newline — so a chunk's data buffer *is* its part of the output file."""

    def __init__(self, version: str):
        self.version = version
        self.parts: list[pa.Array] = []
        self.count = 0
        self.pending: list = []           # futures of chunks being classified: (part, slow lines)
        self.slow: list = []
        self.finish: Callable[[], None] | None = None

    @staticmethod
    def build(subject: pa.Array, klass: pa.Array, ticks: pa.Array, file: str, lines: pa.Array, processed_at: int,
              version: str) -> pa.Array:
        """The JSON lines of a chunk's answers, column-wise (the compiled scanner writes the same
        format for the bulk lines: ``_json_pieces``)."""
        head, middle, tail = _json_pieces(file, version, processed_at)
        ticks = ticks if pa.types.is_string(ticks.type) else pc.cast(ticks, pa.string())
        return pc.binary_join_element_wise(head, _json_text(subject), '","class":"', _json_text(klass), '","t":', ticks,
                                           middle, pc.cast(lines, pa.string()), tail, "")

    def add(self, part: pa.Array) -> None:
        if len(part):
            self.parts.append(part)
            self.count += len(part)

    def add_columns(self, subject: pa.Array, klass: pa.Array, ticks: pa.Array, file: str, lines: pa.Array,
                    processed_at: int) -> None:
        if len(subject):
            self.add(self.build(subject, klass, ticks, file, lines, processed_at, self.version))

    def add_row(self, subject: str, klass: str, t: int, file: str, line: int, processed_at: int) -> None:
        row = {"subject": subject, "class": klass, "t": t, "file": file, "line": line, "version": self.version,
               "processed_at": processed_at}
        self.add(pa.array([json.dumps(row, ensure_ascii=False) + "\n"], pa.string()))

    def lines(self):
        for part in self.parts:
            for line in part.to_pylist():
                yield line[:-1]

    def stream(self):
        """The output as bytes, part by part: the chunks still being classified are waited for in
        order (their slow lines collected in ``slow``), then ``finish`` runs (it may add parts)."""
        done = 0
        for future in self.pending:
            part, slow = future.result()
            self.slow.extend(slow)
            self.add(part)
            while done < len(self.parts):
                yield _blob(self.parts[done])
                done += 1
        self.pending = []
        if self.finish is not None:
            finish, self.finish = self.finish, None
            finish()
        while done < len(self.parts):
            yield _blob(self.parts[done])
            done += 1

    def resolve(self) -> None:
        for _ in self.stream():
            pass


def _blob(part: pa.Array) -> memoryview:
    """A string array's characters (no per-line Python): its data buffer between its offsets."""
    offsets, data = part.buffers()[1], part.buffers()[2]
    ends = memoryview(offsets).cast("i")
    return memoryview(data)[ends[part.offset]:ends[part.offset + len(part)]]


class _Service:
    def __init__(self, spark, sources, store: Path, target: str, sink, checkpoint: Path, rejects: Path | None,
                 time_unit: str, prefixes: dict, metrics: TextIO | None, engine: str,
                 on_answers: Callable | None):
        self.spark, self.sources, self.store, self.target, self.sink = spark, list(sources), store, target, sink
        self.checkpoint, self.rejects_dir, self.time_unit, self.prefixes = checkpoint, rejects, time_unit, prefixes
        self.metrics_out, self.engine, self.on_answers = metrics, engine, on_answers
        self.classes: ClassSet | None = None
        self.class_frame = None         # (version, DataFrame) for the Spark engine
        self.summary = RunSummary()
        self.error: BaseException | None = None
        self.pool = ThreadPoolExecutor(_THREADS)

    # the current closure version's class set (a refresh is picked up here, between batches)
    def _class_set(self) -> ClassSet:
        version = closure_store.current_version(self.store)
        if self.classes is None or self.classes.version != version:
            self.classes = load_class_set(self.store, self.target, version)
        return self.classes

    def batch(self, lines, batch_id: int) -> None:
        try:
            self._batch(lines, batch_id)
        except BaseException as exc:  # noqa: BLE001 - re-raised by run(); Spark wraps it
            self.error = exc
            raise

    def _batch(self, lines, batch_id: int) -> None:
        started = time.perf_counter()
        classes = self._class_set()
        answers = _Answers(classes.version)
        rejects: list[tuple] = []
        slow: list[tuple] = []          # (file, line, raw, fmt)
        processed_at = int(time.time() * 1000)
        counted = 0
        path = "driver"
        if self.engine == "spark":
            path = "spark"
            counted = self._spark_batch(lines, classes, answers, rejects, processed_at)
        else:
            files = self._files(batch_id)
            if files is not None:
                for file, fmt in files:
                    counted += self._driver_file(file, fmt, classes, answers, slow, processed_at)
            else:
                counted = self._collected(lines, classes, answers, slow, processed_at)

            def finish() -> None:    # after the chunks: the lines only Spark's parser reads
                slow.extend(answers.slow)
                if slow:
                    self._slow(slow, classes, answers, rejects, processed_at)

            answers.finish = finish
        label = f"{batch_id:010d}"
        if hasattr(self.sink, "write_blobs"):    # written while the last chunks are classified
            self.sink.write_blobs(label, answers.stream())
            written = answers.count
        else:
            answers.resolve()
            written = write_json_lines(self.sink, label, answers.lines())
        if self.on_answers is not None:
            self.on_answers(label, [json.loads(x) for x in answers.lines()])
        if rejects and self.rejects_dir is not None:
            self.rejects_dir.mkdir(parents=True, exist_ok=True)
            write_jsonl(self.rejects_dir / f"part-{label}.jsonl",
                         ({"file": f, "line": n, "reason": why, "raw": raw} for f, n, why, raw in sorted(rejects)))
        seconds = time.perf_counter() - started
        s = self.summary
        s.batches += 1
        s.lines += counted
        s.answers += written
        s.rejected += len(rejects)
        s.version = classes.version
        s.seconds += seconds
        if path == "driver":
            s.driver_batches += 1
        else:
            s.spark_batches += 1
        record = {"batch": batch_id, "lines": counted, "answers": written, "rejected": len(rejects),
                  "seconds": round(seconds, 4), "lines_per_second": round(counted / seconds) if seconds else None,
                  "path": path, "version": classes.version, "classes": len(classes)}
        s.per_batch.append(record)
        text = json.dumps(record)
        print(text, file=self.metrics_out or sys.stderr, flush=True)
        fs.append_text(self.checkpoint / METRICS_FILE, text + "\n")

    # -- the driver path ------------------------------------------------------------------------
    def _files(self, batch_id: int) -> list[tuple[str, str | None]] | None:
        """The batch's files with their format, when every source is a file source and Spark's
        checkpoint names them (``batch_files``); else None."""
        out = []
        for i, source in enumerate(self.sources):
            if not isinstance(source, FileSource):
                return None
            paths = batch_files(self.checkpoint / SPARK_DIR, batch_id, i)
            if paths is None:
                return None
            out.extend((str(p), source.fmt) for p in paths)
        return out

    def _format(self, file: str, fmt: str | None) -> str | None:
        if fmt is not None:
            return fmt
        try:
            return detect_stream_format(Path(file))
        except SidecarError:
            return None            # Spark's parser rejects its lines with the reason

    def _driver_file(self, file: str, fmt: str | None, classes: ClassSet, answers: _Answers, slow: list,
                     processed_at: int) -> int:
        kind = self._format(file, fmt)
        futures = []
        count = 0
        scope = bnode_scope(file)
        read = tsnt.read_terminated if kind == TSNT else tsnt.read_lines
        for first, chunk in read(file):
            count += len(chunk)
            if kind == TSNT:      # split, checked, matched and written as JSON in the pool's threads
                futures.append(self.pool.submit(_classify, chunk, first, file, scope, classes, processed_at))
            else:
                self._other_lines(file, first, chunk.to_pylist(), kind, classes, answers, slow, processed_at)
        answers.pending.extend(futures)
        return count

    def _other_lines(self, file: str, first: int, texts: list, kind: str | None, classes: ClassSet,
                     answers: _Answers, slow: list, processed_at: int, numbers: list | None = None) -> None:
        """JSON Lines (``cep.io.lineparse`` for the plain ones) and files of an unknown format."""
        wanted_p = set(classes.predicates.to_pylist())
        wanted_c = _class_lookup(classes)
        for k, text in enumerate(texts):
            number = numbers[k] if numbers is not None else first + k
            parsed = parse_jsonl(text, file, number, self.prefixes) if kind == JSONL else None
            if parsed is None:
                if kind != JSONL or text.strip():
                    slow.append((file, number, text, kind))
                continue
            for (_item, s_, p_, o_, t1, _t2) in parsed:
                if p_ in wanted_p and o_ in wanted_c:
                    answers.add_row(s_, o_, t1, file, number, processed_at)

    def _collected(self, lines, classes: ClassSet, answers: _Answers, slow: list, processed_at: int) -> int:
        """The batch's lines collected through Spark (Kafka, or files the checkpoint does not name)."""
        table = self._numbered(lines).select(FILE, LINE, RAW, "_source").toArrow()
        count = table.num_rows
        if not count:
            return 0
        for (file, source), group in _groups(table):
            kind = self._format(file, self.sources[source].fmt)
            # Kafka's bytes as they are: a message of invalid UTF-8 as U+FFFD, rejected by the parser
            texts, numbers = with_valid_utf8(group.column(RAW)), group.column(LINE).combine_chunks()
            if kind == TSNT:
                part, slow_lines = _classify(texts, numbers, file, bnode_scope(file), classes, processed_at)
                answers.add(part)
                slow.extend(slow_lines)
            else:
                self._other_lines(file, 0, texts.to_pylist(), kind, classes, answers, slow, processed_at,
                                  numbers=numbers.to_pylist())
        return count

    def _numbered(self, lines):
        return numbered_lines(lines)

    def _slow(self, slow: list, classes: ClassSet, answers: _Answers, rejects: list, processed_at: int) -> None:
        """Lines only Spark's parser reads: parsed (and rejected, with reasons) there."""
        wanted_p = set(classes.predicates.to_pylist())
        wanted_c = _class_lookup(classes)
        terms, bad = parse_slow(self.spark, slow, self.prefixes, self.time_unit)
        for s_, p_, o_, t1, _t2, file, line in terms:
            if p_ in wanted_p and o_ in wanted_c:
                answers.add_row(s_, o_, t1, file, line, processed_at)
        rejects.extend(bad)

    # -- the Spark engine -----------------------------------------------------------------------
    def _spark_batch(self, lines, classes: ClassSet, answers: _Answers, rejects: list, processed_at: int) -> int:
        from pyspark.sql import functions as F

        numbered = self._numbered(lines).cache()
        try:
            count = numbered.count()
            if self.class_frame is None or self.class_frame[0] != classes.version:
                self.class_frame = (classes.version, self.spark.createDataFrame(
                    [(c,) for c in classes.classes.to_pylist()], f"{O} string"))
            frame = self.class_frame[1]
            for i, source in enumerate(self.sources):
                mine = numbered.filter(F.col("_source") == i).select(FILE, LINE, RAW)
                terms, bad = parse_lines(mine, self.prefixes, self.time_unit, source.fmt)
                hits = (terms.filter(F.col(P).isin(classes.predicates.to_pylist()))
                        .join(F.broadcast(frame), O).select(S, O, "t_start", FILE, LINE).toArrow())
                for file, group in _by_file(hits):
                    answers.add_columns(group.column(S).combine_chunks(), group.column(O).combine_chunks(),
                                        group.column("t_start").combine_chunks(), file,
                                        group.column(LINE).combine_chunks(), processed_at)
                rejects.extend((r[FILE], r[LINE], r[REASON], r[RAW]) for r in bad.collect())
        finally:
            numbered.unpersist()
        return count


def _classify(chunk: pa.Array, first, file: str, scope: str, classes: ClassSet, processed_at: int):
    """One chunk of timestamped N-Triples lines: ``(answers as JSON lines, slow lines)``.
    ``first``: the number of the chunk's first line, or every line's number (Kafka offsets).
    The answers are written by the compiled scanner, in :meth:`_Answers.build`'s format."""
    numbers = first if isinstance(first, int) else first.to_numpy(zero_copy_only=False)
    kind, part = tsntscan.json_answers(chunk, numbers, *classes.scan_sets, *_json_pieces(file, classes.version,
                                                                                          processed_at), f"_:f{scope}.")
    slow = np.flatnonzero(kind == tsntscan.SLOW)
    slow_numbers = (slow + first).tolist() if isinstance(first, int) else numbers[slow].tolist()
    slow = [(file, int(number), raw[:-1] if raw.endswith("\n") else raw, TSNT)     # read_terminated's LF off
            for number, raw in zip(slow_numbers, chunk.take(pa.array(slow)).to_pylist())]
    return part, slow


def _json_pieces(file: str, version: str, processed_at: int) -> tuple[str, str, str]:
    """The fixed parts of an answer line around its subject, class, time and line number."""
    return ('{"subject":"', f',"file":{json.dumps(file, ensure_ascii=False)},"line":',
            f',"version":{json.dumps(version)},"processed_at":{processed_at}}}\n')


def _json_text(terms: pa.Array) -> pa.Array:
    """Terms as the inside of a JSON string: a backslash (``\\u`` escapes of an IRI) or a quote
    escaped; IRIs and blank-node labels hold no control characters."""
    if len(terms) and pc.any(pc.match_substring_regex(terms, r'[\\"]')).as_py():
        terms = pc.replace_substring(pc.replace_substring(terms, "\\", "\\\\"), '"', '\\"')
    return terms


def _class_lookup(classes: ClassSet) -> set:
    return set(classes.classes.to_pylist())


def _groups(table: pa.Table):
    keys = pc.binary_join_element_wise(table.column(FILE), pc.cast(table.column("_source"), pa.string()), "\x00")
    for key in pc.unique(keys).to_pylist():
        file, source = key.rsplit("\x00", 1)
        yield (file, int(source)), table.filter(pc.equal(keys, key))


def _by_file(table: pa.Table):
    for file in pc.unique(table.column(FILE)).to_pylist():
        yield file, table.filter(pc.equal(table.column(FILE), file))


def run(spark, sources: Sequence[FileSource | KafkaSource], *, store: str | Path, target: str, sink,
        checkpoint: str | Path, trigger: str = "available-now", rejects: str | Path | None = None,
        time_unit: str = "ms", prefixes: dict | None = None, metrics: TextIO | None = None,
        engine: str = "auto", timeout: float | None = None, on_answers: Callable | None = None) -> RunSummary:
    """Classify the subjects of ``sources`` against ``target`` continuously (module doc).
    ``trigger``: ``available-now`` (what is there, then stop) or ``interval:SECONDS``."""
    if engine not in ENGINES:
        raise MembershipError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if not sources:
        raise MembershipError("no stream source given")
    store = location(store, "the closure store")
    checkpoint = location(checkpoint, "the checkpoint")
    load_class_set(store, target)          # fail before streaming when the class or store is wrong
    claim(checkpoint, {"engine": MEMBERSHIP, "streams": streams_record(sources)})    # Spark's offsets are theirs
    service = _Service(spark, sources, store, target, sink, checkpoint,
                       location(rejects, "the rejects directory") if rejects else None, time_unit,
                       dict(prefixes or {}), metrics, engine, on_answers)
    if hasattr(sink, "bind"):
        sink.bind(spark)
    try:
        run_batches(spark, sources, service.batch, checkpoint, trigger, timeout, lambda: service.error)
    finally:
        service.pool.shutdown(wait=False)
    return service.summary
