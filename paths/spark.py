"""Paths on Spark: ``evaluate(graph, path, start, end)`` → DataFrame(start, end) of ids.

``paths.compiler`` decides how to compute a path for the binding of its ends; this module runs it.
Two executors:

* :class:`SparkExecutor` — Spark joins on the id-encoded graph ``(s, p, o)``: semi-joins for
  restrictions, broadcast hints for small sides (ends, frontiers, test sets of at most
  :data:`BROADCAST_ROWS` rows), every fixpoint iteration cut from its lineage and counted in one
  job (``rdfcore.sparkutil.cut_counted``), closure tables probed where the rule of
  :class:`PathGraph` allows. No Python UDFs; the only values brought to the driver are row counts
  and, for a closure probe, whether one (p, rdf:type, owl:TransitiveProperty) triple exists.
* ``paths.local.LocalExecutor`` — the same compiler on an in-memory index of the graph in the
  driver (``PathGraph.local()``, collected once through Arrow). A Spark job costs ~0.1 s however
  small, and a closure takes one per step; on a small graph that is nearly all the time.

``engine="auto"`` (the default) runs in memory when the graph's index fits the driver's memory
budget (:func:`local_max_triples`: a quarter of the memory available when the graph is first
evaluated, ~100 bytes per triple; ``RSP_PATHS_MEMORY_BUDGET`` bytes overrides), and falls back to Spark when an intermediate relation outgrows the in-memory budget
(``paths.local.LocalTooLarge``); ``"spark"`` and ``"local"`` force one executor. The answer is the
same either way (both executors are tested against ``paths.reference``); an in-memory answer comes
back as a DataFrame built from Arrow.
"""
from __future__ import annotations

import os

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from paths import local
from paths.algebra import Axis, AxisKind, Domain, NODE_TYPES, Path
from paths.compiler import (DEFAULT_MAX_ITERATIONS, END, START, Compiler, End, PathIterationLimit,
                            constant_id)
from paths.local import LocalExecutor, LocalGraph, LocalTooLarge
from rdfcore.hashing import term_id
from rdfcore.schema import ID, INFERRED, O, P, S, SUB, SUBCLASS, SUBPROPERTY, SUP, TRANSITIVE, \
    PROPERTY, require_columns
from rdfcore.sparkutil import cut_counted
from rdfcore.vocab import OWL_TRANSITIVEPROPERTY, RDF_TYPE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF

__all__ = ["START", "END", "PathGraph", "SparkExecutor", "evaluate", "PathIterationLimit",
           "DEFAULT_MAX_ITERATIONS", "BROADCAST_ROWS", "LOCAL_MAX_TRIPLES", "LOCAL_MAX_PAIRS", "ENGINES",
           "local_max_triples"]

_MID = "_mid"

#: A set of ids (frontier, bound end, test set) with at most this many rows is broadcast.
BROADCAST_ROWS = 1_000_000
#: The in-memory index (``paths.local``) takes about this many bytes per triple in the driver.
LOCAL_BYTES_PER_TRIPLE = 100
#: ``engine="auto"`` evaluates in memory graphs whose index fits in this fraction of the memory
#: the machine has available (``RSP_PATHS_MEMORY_BUDGET``, in bytes, replaces the whole budget).
LOCAL_MEMORY_FRACTION = 0.25
#: A fixed triple count instead of the budget (None: the budget decides).
LOCAL_MAX_TRIPLES: int | None = None
#: Pairs one intermediate relation of an in-memory evaluation may hold (16 bytes each): past it,
#: ``auto`` falls back to Spark and ``local`` raises ``paths.local.LocalTooLarge``.
LOCAL_MAX_PAIRS = 50_000_000
#: Whether the Spark executor finishes a closure in the driver when its step relation fits there
#: (see :meth:`SparkExecutor.hand_off`).
HAND_OFF = True
#: Driver bytes a pair of a handed-off closure takes (its arrays, index and sorted keys).
HAND_OFF_BYTES_PER_PAIR = 64


def available_memory() -> int:
    """Bytes of memory available to new allocations (``MemAvailable``; total memory elsewhere)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def local_memory_budget() -> int:
    """The bytes ``engine="auto"`` lets an in-memory index take."""
    explicit = os.environ.get("RSP_PATHS_MEMORY_BUDGET")
    return int(explicit) if explicit else int(available_memory() * LOCAL_MEMORY_FRACTION)


def local_max_triples() -> int:
    """The largest graph ``engine="auto"`` indexes in memory."""
    if LOCAL_MAX_TRIPLES is not None:
        return LOCAL_MAX_TRIPLES
    return local_memory_budget() // LOCAL_BYTES_PER_TRIPLE
ENGINES = ("auto", "spark", "local")

_POSITION_COLUMNS = (S, P, O)


# --- the graph ---------------------------------------------------------------------------------

class PathGraph:
    """An id-encoded graph ``(s, p, o)`` to evaluate paths over, optionally with closure tables.

    Probing rule: closure tables describe the graph they were computed from — the ``inferred``
    table of their version. They are probed only when the queried triples *are* that table
    (``PathGraph.from_store(store)``, or ``PathGraph(t, closures=store)`` with ``t`` semantically
    equal to ``store.table("inferred")`` — Spark's ``sameSemantics``); otherwise they are ignored
    (``probes_closures`` is False) and every closure is iterated. Over the inferred graph I of a
    version the reasoner guarantees (``reasoner.materialize``): the rdfs:subClassOf and
    rdfs:subPropertyOf triples of I are transitively closed, the ``subclass``/``subproperty`` tables
    are those triples plus reflexive pairs (c, c) for classes / properties, and the ``transitive``
    table holds the (closed) triples of every property typed owl:TransitiveProperty in I. Hence

    * ``(next::sc)+`` = the pairs of ``subclass`` with sub ≠ sup, plus the (c, sc, c) triples of I
      (a reflexive pair belongs to ⟦sc+⟧ only on a cycle, which I records as such a triple; the
      table's reflexive pairs are not evidence of one);
    * ``(next::sc)*`` with identity d = ``Identity(d)`` (bound ends as usual) ∪ the above;
    * likewise ``sp`` with ``subproperty``;
    * ``(next::p)+`` for p typed owl:TransitiveProperty in I = the rows of ``transitive`` with
      property p (and ``*`` adds the identity).

    ``keys``: a family of graphs, one per key. ``keys`` is a DataFrame of the key values (its
    columns, distinct rows), and each triple carries the key of its graph in the same columns. A
    path is then evaluated over each key's graph, every key at once: each relation carries the key
    and every join is on it (``cep.engines.spark.keyed``: a C-SPARQL snapshot at each evaluation
    instant). A key with no triple is a graph of its own too, the empty one (a bound end still
    relates to itself there). A keyed graph is evaluated on Spark and probes no closure table.
    """

    def __init__(self, triples: DataFrame | "PathGraph", closures=None, *, keys: DataFrame | None = None):
        cached = None
        if isinstance(triples, PathGraph):
            closures = closures if closures is not None else triples.closures
            keys = keys if keys is not None else triples.keys
            cached = triples
            triples = triples.triples
        self.keys = keys
        #: the key columns (none: one graph)
        self.key_columns: tuple[str, ...] = tuple(keys.columns) if keys is not None else ()
        if any(c in (S, P, O, START, END, ID, _MID) for c in self.key_columns):
            raise ValueError(f"a key column cannot be named {', '.join(self.key_columns)}: "
                             f"{S}, {P}, {O}, {START}, {END}, {ID} and {_MID} are the graph's and the answer's")
        require_columns(triples, (*self.key_columns, S, P, O), "PathGraph")
        self.triples: DataFrame = triples.select(*self.key_columns, S, P, O)
        self.closures = closures if keys is None else None
        self.probes_closures = False
        self._size: int | None = None
        self._local = None
        if self.closures is not None:
            inferred = closures.table(INFERRED).select(S, P, O)
            self.probes_closures = bool(self.triples.sameSemantics(inferred))
        if cached is not None:                              # same triples: keep what is known
            self._size, self._local = cached._size, cached._local

    @classmethod
    def from_store(cls, store) -> "PathGraph":
        """The ``inferred`` table of a ``reasoner.store.Materialized``, probing its closures."""
        graph = cls(store.table(INFERRED), closures=store)
        graph.probes_closures = True
        return graph

    @property
    def spark(self):
        return self.triples.sparkSession

    def size(self) -> int:
        """The number of triples (counted once)."""
        if self._size is None:
            self._size = self.triples.count() if self._local is None else self._local.triples
        return self._size

    @property
    def indexed(self) -> bool:
        """Whether the in-memory index (:meth:`local`) has been built."""
        return self._local is not None

    def local(self):
        """The in-memory index of the triples (``paths.local.LocalGraph``), built once."""
        if self.keys is not None:
            raise ValueError("a keyed PathGraph (one graph per key) is evaluated on Spark; paths.local has no key")
        if self._local is None:
            self._local = LocalGraph.from_dataframe(self.triples)
            self._size = self._local.triples
        return self._local


# --- the Spark executor ------------------------------------------------------------------------

def _hint(df: DataFrame, small: bool) -> DataFrame:
    return F.broadcast(df) if small else df


class SparkExecutor:
    """``paths.compiler.Executor`` as Spark joins: ids are DataFrames with one column ``id``,
    relations DataFrames with columns ``start``, ``end``. Over a keyed graph (``PathGraph(keys=)``)
    both carry the key columns first, every join and set operation is on them too, and a constant
    is one row per key."""

    gives_up = LocalTooLarge

    def __init__(self, graph: PathGraph):
        self.graph = graph
        self.spark = graph.spark
        self.k = graph.key_columns
        self._transitive: dict[int, bool] = {}
        self._memo: dict = {}

    # a closure's last steps in the driver -----------------------------------------------------
    def hand_off(self, steps, reached: DataFrame, delta: DataFrame, total: int):
        """Take a closure's remaining steps elsewhere: one job computes every step at once
        (``steps()``, the step relation from any node, cut). When it fits the driver's memory
        budget (with the ``total`` pairs reached so far) it is collected through Arrow with the
        pairs reached, and the loop goes on in ``paths.local`` — no Spark job per level, where a
        BFS over a large graph otherwise runs one job (a scan of the graph) per level; the driver
        loop gives up (``LocalTooLarge``) when a relation outgrows :data:`LOCAL_MAX_PAIRS`, and
        the loop then goes on in Spark from this point. When it does not fit, the loop stays on
        Spark over the materialized step relation (a join per level with it, instead of deriving
        the step from the whole graph again). A keyed graph stays on Spark (``paths.local`` has
        no key)."""
        if not HAND_OFF or self.k:
            return None
        relation, rows = self.cut(self.distinct(steps()))
        budget = min(local_memory_budget() // HAND_OFF_BYTES_PER_PAIR, LOCAL_MAX_PAIRS)
        if total + rows > budget:
            return self, relation, delta, reached
        other = LocalExecutor.over_pairs(*_arrays(relation), max_pairs=LOCAL_MAX_PAIRS)
        return other, other.pairs(*_arrays(relation)), other.pairs(*_arrays(delta)), \
            other.pairs(*_arrays(reached))

    def take_back(self, other, pairs) -> DataFrame:
        """Pairs of a handed-off closure as a DataFrame again."""
        if other is self:
            return pairs
        return answer_frame(self.spark, *other.ids(pairs))

    def small(self, rows: int) -> bool:
        return rows <= BROADCAST_ROWS

    def remember(self, key: tuple, build):
        """Per evaluation: a materialized DataFrame is not kept beyond it."""
        if key not in self._memo:
            self._memo[key] = build()
        return self._memo[key]

    # sets of ids ------------------------------------------------------------------------------
    def constants(self, ids: list[int]) -> DataFrame:
        out = self.spark.createDataFrame([(i,) for i in ids], f"{ID} long")
        if self.k:                                          # the constants in every key's graph
            out = self.graph.keys.crossJoin(out).select(*self.k, ID)
        return out

    def occurrences(self, domain: Domain) -> DataFrame:
        """Every occurrence of a term of G (voc) or of a subject or object (nodes), not distinct."""
        columns = (S, P, O) if domain is Domain.VOC else (S, O)
        return self.graph.triples.select(*self.k, F.explode(F.array(*columns)).alias(ID))

    def members(self, ids: DataFrame, small: bool, domain: Domain) -> DataFrame:
        occurrences = self.occurrences(domain)
        on = [*self.k, ID]
        if small:
            return occurrences.join(F.broadcast(ids), on, "left_semi").distinct()
        return ids.join(occurrences, on, "left_semi")

    def semi_ids(self, ids: DataFrame, keep: DataFrame, keep_small: bool) -> DataFrame:
        return ids.join(_hint(keep, keep_small), [*self.k, ID], "left_semi")

    def filter_ids(self, ids: DataFrame, value: int) -> DataFrame:
        return ids.filter(F.col(ID) == value)

    def union_ids(self, a: DataFrame, b: DataFrame) -> DataFrame:
        return a.unionAll(b)

    def distinct_ids(self, ids: DataFrame) -> DataFrame:
        return ids.select(*self.k, ID).distinct()

    def cut_ids(self, ids: DataFrame) -> tuple[DataFrame, int]:
        return cut_counted(ids)

    # relations --------------------------------------------------------------------------------
    def _pairs(self, df: DataFrame, start: str, end: str) -> DataFrame:
        """``df``'s columns ``start``, ``end`` as a relation (the key columns first)."""
        return df.select(*self.k, F.col(start).alias(START), F.col(end).alias(END))

    def axis(self, kind: AxisKind, inverse: bool, test) -> DataFrame:
        i, j, k = kind.positions                            # x = t[i], y = t[j], z = t[k]
        x, y, z = (_POSITION_COLUMNS[n] for n in (i, j, k))
        triples = self.graph.triples
        if isinstance(test, int):                           # axis::a
            triples = triples.filter(F.col(z) == test)
        elif test is not None:                              # axis::[e]
            starts, small = test
            triples = triples.join(_hint(starts.select(*self.k, F.col(ID).alias(z)), small), [*self.k, z],
                                   "left_semi")
        pairs = self._pairs(triples, x, y)
        return self.swap(pairs) if inverse else pairs

    def negated(self, excluded: list[int], inverse: bool) -> DataFrame:
        pairs = self._pairs(self.graph.triples.filter(~F.col(P).isin(excluded)), S, O)
        return self.swap(pairs) if inverse else pairs

    def diag(self, ids: DataFrame) -> DataFrame:
        return self._pairs(ids, ID, ID)

    def swap(self, pairs: DataFrame) -> DataFrame:
        return self._pairs(pairs, END, START)

    def union(self, a: DataFrame, b: DataFrame) -> DataFrame:
        return a.unionAll(b)

    def distinct(self, pairs: DataFrame) -> DataFrame:
        return pairs.distinct()

    def semi(self, pairs: DataFrame, column: str, ids: DataFrame, small: bool) -> DataFrame:
        """The pairs whose ``column`` is in ``ids``, columns kept in order (a join on a column name
        puts that column first, and unions are by position)."""
        keys = _hint(ids.select(*self.k, F.col(ID).alias(column)), small)
        return pairs.join(keys, [*self.k, column], "left_semi").select(*pairs.columns)

    def filter_eq(self, pairs: DataFrame, column: str, value: int) -> DataFrame:
        return pairs.filter(F.col(column) == value)

    def compose(self, left: DataFrame, right: DataFrame, right_small: bool = False,
                left_small: bool = False) -> DataFrame:
        """{(x, y) | ∃z: (x, z) ∈ left, (z, y) ∈ right} (distinct)."""
        l = _hint(left.select(*self.k, START, F.col(END).alias(_MID)), left_small and not right_small)
        r = _hint(right.select(*self.k, F.col(START).alias(_MID), END), right_small)
        return l.join(r, [*self.k, _MID]).select(*self.k, START, END).distinct()

    def column(self, pairs: DataFrame, column: str) -> DataFrame:
        return pairs.select(*self.k, F.col(column).alias(ID))

    def minus(self, pairs: DataFrame, known: DataFrame, known_small: bool) -> DataFrame:
        return pairs.join(_hint(known, known_small), [*self.k, START, END], "left_anti").select(*self.k, START, END)

    def cut(self, pairs: DataFrame) -> tuple[DataFrame, int]:
        return cut_counted(pairs)

    # closure tables ---------------------------------------------------------------------------
    def probe(self, path: Path) -> DataFrame | None:
        """⟦path⟧+ read from a closure table, or None when none applies (see PathGraph)."""
        if not self.graph.probes_closures or not isinstance(path, Axis):
            return None
        if path.kind is not AxisKind.NEXT or not isinstance(path.test, str):
            return None
        store = self.graph.closures
        if path.test in (RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF):
            table = store.table(SUBCLASS if path.test == RDFS_SUBCLASSOF else SUBPROPERTY)
            strict = self._pairs(table.filter(F.col(SUB) != F.col(SUP)), SUB, SUP)
            prop = term_id(path.test)
            cycles = self._pairs(self.graph.triples.filter((F.col(P) == prop) & (F.col(S) == F.col(O))), S, O)
            pairs = strict.unionAll(cycles)
        else:
            prop = term_id(path.test)
            if not self.is_transitive(prop):
                return None
            pairs = self._pairs(store.table(TRANSITIVE).filter(F.col(PROPERTY) == prop), S, O)
        return self.swap(pairs) if path.inverse else pairs

    def is_transitive(self, prop: int) -> bool:
        if prop not in self._transitive:
            typed = self.graph.triples.filter((F.col(S) == prop) & (F.col(P) == term_id(RDF_TYPE))
                                              & (F.col(O) == term_id(OWL_TRANSITIVEPROPERTY)))
            self._transitive[prop] = bool(typed.limit(1).count())
        return self._transitive[prop]


def _arrays(pairs: DataFrame):
    """The (start, end) columns of a relation, collected through Arrow."""
    table = pairs.select(START, END).toArrow()
    return table.column(START).to_numpy(), table.column(END).to_numpy()


# --- entry point -------------------------------------------------------------------------------

def _end_value(value, keys: tuple[str, ...] = ()):
    """A checked path end: None, an int id, or a DataFrame of ids (column ``id``): one column, or
    over a keyed graph the key columns and one more (the ids of each key's end)."""
    if value is None:
        return None
    constant = constant_id(value, "a DataFrame")
    if constant is not None:
        return constant
    if isinstance(value, DataFrame):
        others = [c for c in value.columns if c not in keys]
        if len(others) != 1 or len(value.columns) != len(keys) + 1:
            wanted = f"the key columns {', '.join(keys)} and " if keys else ""
            raise ValueError(f"a DataFrame path end must have {wanted}exactly one column of ids; it has "
                             f"{', '.join(value.columns) or 'no columns'}")
        return value.select(*keys, F.col(others[0]).cast("long").alias(ID))
    raise TypeError(f"a path end is None, an N-Triples term, an int id or a DataFrame, got {value!r}")


def _spark(graph: PathGraph, path: Path, ends, max_iterations: int) -> DataFrame:
    ops = SparkExecutor(graph)
    compiler = Compiler(ops, path, max_iterations)
    left, right = (None if value is None
                   else End(ops.constants([value]), True, True) if isinstance(value, int)
                   else compiler.end(value, True)[0]
                   for value in ends)
    return compiler.rel(path, left, right).select(*ops.k, START, END).distinct()


#: An in-memory answer of at most this many bytes (16 per pair) becomes a LocalRelation, embedded in
#: the plan; a larger one an RDD of Arrow batches, one per core (a plan that embeds tens of MB of
#: rows is re-serialized into every task and exhausted a 1 GB driver on Vienna's 2.95M pairs).
LOCAL_RELATION_BYTES = 1 << 20
_ARROW_THRESHOLD = "spark.sql.execution.arrow.localRelationThreshold"
_ARROW_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"


def answer_frame(spark, starts, ends) -> DataFrame:
    """DataFrame(start, end) of two equally long arrays of ids, through Arrow (see
    :data:`LOCAL_RELATION_BYTES`)."""
    import pyarrow as pa

    table = pa.table({START: pa.array(starts, pa.int64()), END: pa.array(ends, pa.int64())})
    conf = spark.conf
    previous = {key: conf.get(key) for key in (_ARROW_THRESHOLD, _ARROW_BATCH)}
    per_core = -(-table.num_rows // max(1, spark.sparkContext.defaultParallelism))
    conf.set(_ARROW_THRESHOLD, str(LOCAL_RELATION_BYTES))
    conf.set(_ARROW_BATCH, str(max(10_000, per_core)))
    try:
        return spark.createDataFrame(table)
    finally:
        for key, value in previous.items():
            conf.set(key, value)


def _local(graph: PathGraph, path: Path, ends, max_iterations: int) -> DataFrame:
    values = [value if not isinstance(value, DataFrame)
              else value.toArrow().column(ID).to_numpy()  # the ids of a DataFrame end
              for value in ends]
    starts, stops = local.evaluate(graph.local(), path, *values, max_iterations=max_iterations,
                                   max_pairs=LOCAL_MAX_PAIRS)
    return answer_frame(graph.spark, starts, stops)


def evaluate(graph: PathGraph | DataFrame, path: Path, start=None, end=None, *,
             max_iterations: int = DEFAULT_MAX_ITERATIONS, engine: str = "auto") -> DataFrame:
    """⟦path⟧ over ``graph`` as distinct pairs ``(start, end)`` of ids, for the pattern
    ``start path end`` (SPARQL 1.1): ``start``/``end`` are None (a variable), an N-Triples term,
    an int id, or a DataFrame with one column of ids (the union over its ids). ``engine``: see the
    module doc. Over a keyed graph (``PathGraph(keys=)``) the answer is ``(key columns, start,
    end)``: each key's pairs over its graph, on Spark (``engine="local"`` is refused)."""
    if not isinstance(path, NODE_TYPES):
        raise TypeError(f"evaluate() needs a paths.algebra Path, got {path!r}")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    graph = graph if isinstance(graph, PathGraph) else PathGraph(graph)
    ends = (_end_value(start, graph.key_columns), _end_value(end, graph.key_columns))
    if graph.keys is not None:
        if engine == "local":
            raise ValueError("a keyed PathGraph (one graph per key) is evaluated on Spark; engine='local' has no key")
        return _spark(graph, path, ends, max_iterations)
    if engine == "spark" or (engine == "auto" and graph.size() > local_max_triples()):
        return _spark(graph, path, ends, max_iterations)
    if engine == "local":
        return _local(graph, path, ends, max_iterations)

    try:
        return _local(graph, path, ends, max_iterations)
    except LocalTooLarge:
        return _spark(graph, path, ends, max_iterations)
