"""The static side of a continuous query: background graphs from files (``StaticFiles``) or the
reasoner's published closure (``ClosureStore``), each with the version a batch reads."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from rdfcore.dictionary import checked_dictionary
from rdfcore.loading import load
from rdfcore.locations import location
from cep.engines.driver import rows as LOC
from cep.engines.columns import LIFE_FROM, LIFE_TO, T_END, T_START, is_var_column
from rdfcore.schema import DICTIONARY, ID, O, P, S, TERM
from rdfcore.sparkutil import cut
from reasoner.api import encoded_closure
from reasoner.store import StoreError, current_version, open_version


@dataclass
class StaticSide:
    """One version of the background: graphs for ``cep.engines.spark.evaluate``, its dictionary, its version name."""

    version: str
    background: object               # {graph: DataFrame(s, p, o)} or a reasoner Materialized
    dictionary: DataFrame | None     # (id, term)


class StaticFiles:
    """Background graphs from files ({graph IRI or None: [files]}), closed with the reasoner once
    (as ``query --at`` does). Its version is ``files:`` + a hash of the files' names and sizes."""

    def __init__(self, graphs: Mapping[str | None, Sequence[str | Path]]):
        self.graphs = {g: [location(f, "static graph file") for f in files] for g, files in graphs.items()}
        self._side: StaticSide | None = None

    def version(self) -> str:
        import hashlib

        h = hashlib.sha256()
        for g in sorted(self.graphs, key=lambda x: x or ""):
            for f in self.graphs[g]:
                st = f.stat()
                h.update(f"{g}|{f.resolve()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
        return "files:" + h.hexdigest()[:12]

    def current(self, spark: SparkSession) -> StaticSide:
        if self._side is None:
            background, dictionaries = {}, []
            for graph, files in self.graphs.items():
                closure, dictionary = encoded_closure(load(spark, files).triples)
                background[graph] = cut(closure.inferred)
                dictionaries.append(dictionary)
            if None not in background:
                background[None] = spark.createDataFrame([], f"{S} long, {P} long, {O} long")
            dictionary = checked_dictionary(dictionaries)[0] if dictionaries else None
            self._side = StaticSide(self.version(), background, dictionary)
        return self._side


class ClosureStore:
    """The current version of a reasoner store (``materialize --out DIR``): checked at every
    micro-batch, so a refresh that publishes a new version is picked up without a restart."""

    def __init__(self, directory: str | Path):
        self.directory = location(directory, "the closure store")

    def version(self) -> str:
        version = current_version(self.directory)
        if version is None:
            raise StoreError(f"{self.directory}: no current version (run materialize --out {self.directory} first)")
        return version

    def current(self, spark: SparkSession) -> StaticSide:
        store = open_version(spark, self.directory, self.version())
        return StaticSide(store.version, store, store.table(DICTIONARY))


def collect_background(spark: SparkSession, prepared, side: StaticSide, limit: int) -> tuple[dict, dict] | None:
    """The background patterns of ``prepared`` (a ``cep.engines.spark.evaluate.Prepared`` of ``side``)
    on the driver: ({``A.Background`` node: ``cep.engines.driver.rows.Rel``}, {id: term} of their ids
    and of the sub-queries' computed terms); None when a pattern has more than ``limit`` rows.
    ``cep.engines.driver.columnar.background_tables`` makes them the columnar engine's tables."""
    rels, ids = {}, set()
    for node, frame in prepared.background_lifetimes().items():
        rows = frame.limit(limit + 1).collect()
        if len(rows) > limit:
            return None
        columns = [c for c in frame.columns if is_var_column(c)]
        rels[node] = LOC.Rel.of(columns, {tuple(r[c] for c in columns) + (r[T_START], r[T_END], r[LIFE_FROM],
                                                                          r[LIFE_TO]) for r in rows})
        ids.update(r[c] for r in rows for c in columns if r[c] is not None)
    terms = dictionary_terms(spark, side.dictionary, ids)
    for computed in prepared.terms:   # a sub-query's aggregates: a handful of rows
        terms.update((r[ID], r[TERM]) for r in computed.collect())
    return rels, terms


def dictionary_terms(spark: SparkSession, dictionary: DataFrame | None, ids) -> dict:
    """{id: term} of ``ids`` that ``dictionary`` (``(id, term)``; None: none) has, in one Spark job."""
    if not ids or dictionary is None:
        return {}
    wanted = spark.createDataFrame([(i,) for i in ids], f"{ID} long")
    return {r[ID]: r[TERM] for r in dictionary.join(wanted, ID, "left_semi").collect()}


class NoStatic:
    def version(self) -> str:
        return "none"

    def current(self, spark: SparkSession) -> StaticSide:
        return StaticSide("none", {None: spark.createDataFrame([], f"{S} long, {P} long, {O} long")}, None)
