"""Sources → closure tables → a new published version (the work of ``jobs/materialize.py``)."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from reasoner import loading, store
from reasoner.closure import STRATEGIES
from reasoner.dictionary import checked_dictionary, dictionary_terms, encode_triples
from reasoner.materialize import materialize
from reasoner.progress import SILENT, Progress
from reasoner.rules import RULES
from reasoner.schema import DICTIONARY, ID, INFERRED, O, P, REJECTS, S, SUBCLASS, SUBPROPERTY, TERM, TRANSITIVE, TYPES


def _fingerprint(sources: Sequence[loading.Source], strategy: str) -> dict:
    return {"sources": sorted(s.sha256 for s in sources), "rules": list(RULES)}


def materialize_sources(spark: SparkSession, paths: Sequence[str | Path], out: str | Path, *,
                        if_changed: bool = False, strategy: str = "dataframe", follow_imports: bool = False,
                        export_ntriples: str | Path | None = None, progress: Progress = SILENT) -> dict:
    """Load, close and publish; returns the run summary (also stored in the manifest).
    ``progress`` reports each phase (``reasoner.progress``; silent by default)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    started = time.perf_counter()
    timings: dict[str, float] = {}
    loaded = loading.load(spark, paths, follow_imports=follow_imports)
    fingerprint = _fingerprint(loaded.sources, strategy)
    if if_changed and store.current_version(out):
        previous = store.read_manifest(out)
        if previous.get("fingerprint") == fingerprint:
            summary = {**previous["summary"], "skipped": True, "seconds": round(time.perf_counter() - started, 3)}
            if export_ntriples:
                export(store.open_version(spark, out).table(INFERRED, decoded=True), export_ntriples)
            return summary
    timings["load_planned"] = time.perf_counter() - started
    progress.phase(f"loading {len(loaded.sources)} source(s)")
    with store.new_version(out) as version:
        t0 = time.perf_counter()
        dictionary, cached = checked_dictionary([dictionary_terms(loaded.triples)])
        counts = {DICTIONARY: version.write_table(DICTIONARY, dictionary)}
        cached.unpersist()  # read back from Parquet below
        rejected = version.write_table(REJECTS, loaded.rejects)
        timings["load_and_dictionary"] = time.perf_counter() - t0
        progress.phase("dictionary written", rows=counts[DICTIONARY])
        t0 = time.perf_counter()
        dictionary = spark.read.parquet(str(version.staging / DICTIONARY))
        # Read and parse the sources once more, then keep the encoded triples (3 longs a row).
        # On disk (the bulk is read a few times): memory stays for the joins and aggregations.
        triples = encode_triples(loaded.triples).persist(StorageLevel.DISK_ONLY)
        literals = dictionary.filter(F.col(TERM).startswith('"')).select(ID)
        closure = materialize(triples, literals, strategy=strategy)
        for name, df in ((SUBCLASS, closure.subclass), (SUBPROPERTY, closure.subproperty), (TYPES, closure.types),
                         (TRANSITIVE, closure.transitive), (INFERRED, closure.inferred)):
            t1 = time.perf_counter()
            counts[name] = version.write_table(name, df)
            timings[f"write_{name}"] = time.perf_counter() - t1
            progress.phase(f"{name} written", rows=counts[name])
        closure.types.unpersist()
        triples.unpersist()
        timings["materialize"] = time.perf_counter() - t0
        summary = {
            "version": version.version,
            "skipped": False,
            "counts": counts,
            "rejected": rejected,
            "rounds": closure.rounds,
            "strategy": strategy,
            "seconds": round(time.perf_counter() - started, 3),
        }
        version.commit({
            "summary": summary,
            "fingerprint": fingerprint,
            "sources": [dataclasses.asdict(s) for s in loaded.sources],
            "rules": list(RULES),
            "strategy": strategy,
            "follow_imports": follow_imports,
            "tables": counts,
            "timings": {k: round(v, 3) for k, v in {**timings, **closure.timings}.items()},
            "spark_version": spark.version,
        })
    if export_ntriples:
        export(store.open_version(spark, out).table(INFERRED, decoded=True), export_ntriples)
    return summary


def export(decoded_triples: DataFrame, path: str | Path) -> int:
    """Write decoded triples as sorted N-Triples, streamed to the driver partition by partition."""
    lines = (decoded_triples.select(F.concat_ws(" ", S, P, O).alias("line")).orderBy("line"))
    target = Path(path)
    partial = target.with_name(target.name + ".part")
    written = 0
    with partial.open("w", encoding="utf-8") as handle:
        for row in lines.toLocalIterator(prefetchPartitions=True):
            handle.write(row[0] + " .\n")
            written += 1
    partial.replace(target)
    return written
