"""Sources → closure tables → a new published version (the work of ``jobs/materialize.py``)."""
from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rdfcore import fs, loading, sources
from reasoner import incremental, local, store
from reasoner.closure import STRATEGIES
from rdfcore.dictionary import bulk_dictionary, check_collisions, encode_triples
from rdfcore.locations import location
from reasoner.materialize import materialize
from rdfcore.progress import SILENT, Progress
from reasoner.rules import RULES
from rdfcore.schema import (DICTIONARY, FILE, ID, INFERRED, LINE, O, P, RAW, REASON, REJECTS, S, SUBCLASS, SUBPROPERTY,
                             TABLE_COLUMNS, TERM, TRANSITIVE, TYPES)


def _fingerprint(sources: Sequence[sources.Source], strategy: str) -> dict:
    return {"sources": sorted(s.sha256 for s in sources), "rules": list(RULES)}


ENGINES = ("auto", "spark", "local")
#: ``engine="auto"`` reasons on the driver (``reasoner.local``) when the named sources total at
#: most this many bytes (about 500,000 N-Triples; the driver's Python then holds a few hundred MB).
#: Overridden by the environment variable ``RSP_LOCAL_MAX_BYTES``.
LOCAL_MAX_BYTES = 64 << 20


def local_max_bytes() -> int:
    return int(os.environ.get("RSP_LOCAL_MAX_BYTES", LOCAL_MAX_BYTES))


def choose_engine(paths: Sequence[str | Path], engine: str, strategy: str) -> str:
    """``spark`` or ``local`` for ``engine`` (``auto``: local for small inputs, see LOCAL_MAX_BYTES)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if engine == "local" and strategy != "dataframe":
        raise ValueError(f"strategy {strategy!r} runs on Spark: use engine spark (or auto) with it")
    if engine == "auto":
        small = strategy == "dataframe" and sources.total_bytes(paths) <= local_max_bytes()
        return "local" if small else "spark"
    return engine


def _unchanged(out, fingerprint: dict, started: float, export_ntriples, exporter) -> dict | None:
    """The previous run's summary when ``out``'s current version has ``fingerprint`` (--if-changed)."""
    if not store.current_version(out):
        return None
    previous = store.read_manifest(out)
    if previous.get("fingerprint") != fingerprint:
        return None
    summary = {**previous["summary"], "skipped": True, "seconds": round(time.perf_counter() - started, 3)}
    if export_ntriples:
        exporter(out, export_ntriples)
    return summary


def materialize_sources(spark: SparkSession, paths: Sequence[str | Path], out: str | Path, *,
                        if_changed: bool = False, strategy: str = "dataframe", follow_imports: bool = False,
                        export_ntriples: str | Path | None = None, progress: Progress = SILENT,
                        engine: str = "auto") -> dict:
    """Load, close and publish; returns the run summary (also stored in the manifest).
    ``progress`` reports each phase (``rdfcore.progress``; silent by default). ``engine``:
    ``spark``, ``local`` (the driver, ``reasoner.local``: same tables, no Spark job) or ``auto``."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    started = time.perf_counter()
    # file: URLs become local paths, other URLs Hadoop paths (rdfcore.locations), before anything is opened
    paths = [location(p, "source") for p in paths]
    out = location(out, "the store")
    export_ntriples = None if export_ntriples is None else location(export_ntriples, "the N-Triples export")
    if choose_engine(paths, engine, strategy) == "local":
        return _materialize_local(paths, out, if_changed=if_changed, follow_imports=follow_imports,
                                  export_ntriples=export_ntriples, progress=progress, started=started)
    timings: dict[str, float] = {}
    marks = None
    if if_changed and store.current_version(out):           # hash the old lengths in the same pass
        marks = {s["path"]: s["bytes"] for s in store.read_manifest(out).get("sources", [])}
    loaded = loading.load(spark, paths, follow_imports=follow_imports, marks=marks)
    fingerprint = _fingerprint(loaded.sources, strategy)
    if if_changed and (summary := _unchanged(out, fingerprint, started, export_ntriples,
                                             lambda o, e: _export_spark(spark, o, e))) is not None:
        return summary
    timings["load_planned"] = time.perf_counter() - started
    progress.phase(f"loading {len(loaded.sources)} source(s)")
    refresh, why_full = None, None
    if if_changed and store.current_version(out):
        try:
            refresh = incremental.plan(store.read_manifest(out), loaded.sources, loaded.prefixes)
        except incremental.Refused as why:
            why_full = str(why)
    with store.new_version(out) as version:
        t0 = time.perf_counter()
        closure = None
        if refresh is not None:
            try:
                # few added bytes: the delta on the driver, no Spark job (the store's size does not matter)
                delta_engine = "local" if incremental.added_bytes(refresh) <= local_max_bytes() else "spark"
                if delta_engine == "local":
                    counts = incremental.apply_local(refresh, version, out, timings)
                else:
                    counts = incremental.apply(spark, refresh, version, out, timings)
                rejected = counts.pop(REJECTS)
            except incremental.Refused as why:
                why_full, refresh = str(why), None
                for child in version.staging.iterdir():     # start the version again, fully
                    fs.rmtree(child) if child.is_dir() else child.unlink()
        if refresh is None:
            counts, rejected, closure = _full_spark(spark, loaded, version, strategy, progress, timings)
        timings["materialize"] = time.perf_counter() - t0
        extra = {"spark_version": spark.version}
        if refresh is None and why_full:
            extra["full_because"] = why_full
        if refresh is not None:
            extra["previous"] = refresh.previous["version"]
            extra["delta_engine"] = delta_engine
        summary = _commit(
            version, engine="spark", strategy=strategy, mode="full" if refresh is None else "incremental",
            counts=counts, rejected=rejected,
            rounds=closure.rounds if closure else refresh.previous["summary"]["rounds"],
            schema=closure.schema if closure else refresh.previous["schema"],
            timings={**timings, **(closure.timings if closure else {})}, fingerprint=fingerprint,
            sources=loaded.sources, follow_imports=follow_imports, started=started, extra=extra)
    if export_ntriples:
        _export_spark(spark, out, export_ntriples)
    return summary


def _commit(version: store.VersionWriter, *, engine: str, strategy: str, mode: str, counts: dict,
            rejected: int, rounds, schema, timings: dict, fingerprint: dict, sources, follow_imports: bool,
            started: float, extra: dict | None = None) -> dict:
    """Publish ``version`` with its manifest (the one layout of both engines); returns the run
    summary (also in the manifest)."""
    summary = {
        "version": version.version,
        "skipped": False,
        "counts": counts,
        "rejected": rejected,
        "rounds": rounds,
        "strategy": strategy,
        "engine": engine,
        "mode": mode,
        "seconds": round(time.perf_counter() - started, 3),
    }
    version.commit({
        "summary": summary,
        "fingerprint": fingerprint,
        "sources": [dataclasses.asdict(s) for s in sources],
        "rules": list(RULES),
        "strategy": strategy,
        "engine": engine,
        "follow_imports": follow_imports,
        "tables": counts,
        "mode": mode,
        "schema": schema,
        "timings": {k: round(v, 3) for k, v in timings.items()},
        **(extra or {}),
    })
    return summary


def _full_spark(spark: SparkSession, loaded: loading.Loaded, version: store.VersionWriter, strategy: str,
                progress: Progress, timings: dict) -> tuple[dict, int, object]:
    """The tables of ``loaded`` written into ``version``: (counts, rejected lines, the closure)."""
    t0 = time.perf_counter()
    # the N-Triples are parsed once, into a scratch table of the staging directory
    scratch = version.staging / "_parsed"
    loaded = loaded.staged(scratch)
    # the dictionary's shuffle in partitions of about a million lines' terms (128 MB of N-Triples)
    partitions = max(int(spark.conf.get("spark.sql.shuffle.partitions")),
                     sum(s.bytes for s in loaded.sources) // (128 << 20) + 1)
    counts = {DICTIONARY: version.write_table(DICTIONARY, bulk_dictionary(loaded.triples, partitions))}
    dictionary = spark.read.parquet(fs.spark_path(version.staging / DICTIONARY))
    check_collisions(dictionary, partitions)
    rejected = version.write_table(REJECTS, loaded.rejects)
    timings["load_and_dictionary"] = time.perf_counter() - t0
    progress.phase("dictionary written", rows=counts[DICTIONARY])
    # The encoded triples (3 longs a row) on disk: the bulk is read a few times, and memory
    # stays for the joins and aggregations.
    triples = encode_triples(loaded.triples, partitions).persist(StorageLevel.DISK_ONLY)
    literals = dictionary.filter(F.col(TERM).startswith('"')).select(ID)
    closure = materialize(triples, literals, strategy=strategy, partitions=partitions)
    for name, df in ((SUBCLASS, closure.subclass), (SUBPROPERTY, closure.subproperty), (TYPES, closure.types),
                     (TRANSITIVE, closure.transitive), (INFERRED, None)):
        t1 = time.perf_counter()
        if name == INFERRED:   # its bulk, the rdf:type triples, read back from the types just written
            df = closure.inferred_with(spark.read.parquet(fs.spark_path(version.staging / TYPES)))
        counts[name] = version.write_table(name, df)
        timings[f"write_{name}"] = time.perf_counter() - t1
        progress.phase(f"{name} written", rows=counts[name])
    triples.unpersist()
    closure.release()
    fs.rmtree(scratch, ignore_errors=True)
    return counts, rejected, closure


def _export_spark(spark: SparkSession, out, path) -> int:
    return export(store.open_version(spark, out).table(INFERRED, decoded=True), path)


def _materialize_local(paths, out, *, if_changed: bool, follow_imports: bool, export_ntriples,
                       progress: Progress, started: float) -> dict:
    """``materialize_sources`` on the driver: ``sources.load_local``, ids by xxhash64 in Python,
    ``reasoner.local.materialize``, the tables written with pyarrow, the export written from
    them: no Spark at all."""
    timings: dict[str, float] = {}
    loaded = sources.load_local(paths, follow_imports=follow_imports)
    fingerprint = _fingerprint(loaded.sources, "dataframe")
    if if_changed and (summary := _unchanged(out, fingerprint, started, export_ntriples, export_local)) is not None:
        return summary
    timings["load"] = time.perf_counter() - started
    progress.phase(f"loaded {len(loaded.sources)} source(s) on the driver", rows=len(loaded.triples))
    with store.new_version(out) as version:
        t0 = time.perf_counter()
        ids = local.dictionary(loaded.triples)
        counts = {DICTIONARY: version.write_rows(DICTIONARY, _COLUMN_TYPES[DICTIONARY],
                                                 ((i, t) for t, i in ids.items()))}
        rejected = version.write_rows(REJECTS, _COLUMN_TYPES[REJECTS], loaded.rejects)
        triples, literals = local.encode(loaded.triples, ids)
        timings["dictionary"] = time.perf_counter() - t0
        progress.phase("dictionary written", rows=counts[DICTIONARY])
        t0 = time.perf_counter()
        tables = local.materialize(triples, literals)
        timings["materialize"] = time.perf_counter() - t0
        for name in (SUBCLASS, SUBPROPERTY, TYPES, TRANSITIVE, INFERRED):
            t1 = time.perf_counter()
            counts[name] = version.write_columns(name, _COLUMN_TYPES[name], tables[name])
            timings[f"write_{name}"] = time.perf_counter() - t1
            progress.phase(f"{name} written", rows=counts[name])
        summary = _commit(version, engine="local", strategy="dataframe", mode="full", counts=counts,
                          rejected=rejected, rounds=tables["rounds"], schema=tables["schema"], timings=timings,
                          fingerprint=fingerprint, sources=loaded.sources, follow_imports=follow_imports,
                          started=started)
    if export_ntriples:
        export_local(out, export_ntriples)
    return summary


_COLUMN_TYPES = {name: {c: "string" if c == TERM else "long" for c in columns} for name, columns in TABLE_COLUMNS.items()}
_COLUMN_TYPES[REJECTS] = {FILE: "string", LINE: "long", REASON: "string", RAW: "string"}


def read_local_table(directory) -> dict[str, list]:
    """A Parquet table of the store read on the driver (pyarrow), as columns; on a Hadoop
    filesystem its part files are read through ``rdfcore.fs``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not fs.is_hadoop(directory):
        return pq.read_table(str(directory)).to_pydict()
    parts = [pq.read_table(pa.BufferReader(part.read_bytes())) for part in directory.glob("*.parquet")]
    return pa.concat_tables(parts).to_pydict()


def export_local(out, path: str | Path) -> int:
    """:func:`export` of the current version on the driver (pyarrow): the same sorted lines."""
    out = location(out, "the store")
    root = out / store.VERSIONS / store.read_manifest(out)["version"]
    dictionary = read_local_table(root / DICTIONARY)
    terms = dict(zip(dictionary[ID], dictionary[TERM]))
    inferred = read_local_table(root / INFERRED)
    lines = sorted(f"{terms[s]} {terms[p]} {terms[o]}" for s, p, o in zip(inferred[S], inferred[P], inferred[O]))
    return _write_lines(path, lines)


def _write_lines(path, lines) -> int:
    """Write N-Triples lines to ``path``, replaced whole at the end (``rdfcore.fs.write_lines``)."""
    return fs.write_lines(location(path, "the N-Triples export"), lines, end=" .\n")


def export(decoded_triples: DataFrame, path: str | Path) -> int:
    """Write decoded triples as sorted N-Triples, streamed to the driver partition by partition."""
    lines = (decoded_triples.select(F.concat_ws(" ", S, P, O).alias("line")).orderBy("line"))
    return _write_lines(path, (row[0] for row in lines.toLocalIterator(prefetchPartitions=True)))
