"""Spark compiler of the path algebra: ``evaluate(graph, path, start, end)`` → DataFrame(start, end).

The semantics is exactly ``paths.reference.evaluate`` (the oracle of ``tests/test_paths_spark.py``);
this module only chooses how to compute it with joins on the id-encoded graph ``(s, p, o)``.

Binding modes (one evaluator per mode, as Oxigraph's ``spareval`` does for paths).
``_Compiler.rel(path, left, right)`` evaluates ``path`` with each end either free (``None``) or an
:class:`_End`, a set of ids in one column that the pairs must start (end) in. An end is

* *bound* — the ids are constants of the pattern ``X path Y`` (SPARQL 1.1 §18.2.2.4, §18.5): the
  zero-length path ``Identity(NODES)`` relates them to themselves even when they are not in G,
  exactly as ``paths.reference`` binds ``left``/``right``. A DataFrame of ids at an end means the
  union, over its ids c, of the pattern with c at that end (each constant only adds pairs that start
  (end) at itself, so one set-at-a-time evaluation gives that union exactly);
* a *filter* — the ids of a join variable (e.g. the nodes reached by the previous step of a
  sequence): the pairs must start there, but the variable binds nothing.

How each node is computed:

* ``Seq`` runs forwards from a set start (a frontier: the ends reached so far filter the next part,
  whose pairs are then composed), or backwards from a set end, or forwards from the first part when
  both ends are free; the first part gets the sequence's left end, the last its right end, the parts
  in between filters only (§18.2.2.4: they are joined on fresh variables).
* ``Plus`` (and the ``Plus`` half of ``Star``): with a bound start, the ALP of §18.5 forwards — each
  step is evaluated with its start nodes bound —, else with a bound end the same backwards; with
  only filters, a frontier expansion from the filter set (each step filtered, nothing bound); with
  both ends free, a semi-naive fixpoint over deltas (Δ ∘ ⟦e⟧, new pairs only). The pairs carry their
  origin; every iteration is cut from its lineage (``reasoner.sparkutil.cut``), which also gives
  the sizes that decide which side of the next join is broadcast. An iteration cap raises
  :class:`PathIterationLimit`, naming the path and the cap.
* Identities are never enumerated when an end is set: ``Identity(VOC)`` is the end's ids that occur
  in G (a semi-join with the graph), ``Identity(NODES)`` the end's ids that are subjects or objects
  of G, or all of them when the end is bound. Only a free-free identity (``self``, ``()``, a ``*``
  with both ends free) enumerates voc(G) (nSPARQL ``self``) or nodes(G) (SPARQL ``*``/``?``).
* Nested tests (``Test``, ``axis::[e]``) are semi-joins against the set of nodes that start a pair
  of ``e`` (free ends: tests see no constant), computed backwards through ``e`` as a set of nodes,
  never as pairs.

Closure tables. ``PathGraph.from_store(store)`` queries a published version's ``inferred`` table and
may *probe* its closure tables instead of iterating; see :class:`PathGraph` for the exact rule.

No Python UDFs; the only values brought to the driver are row counts and, for a closure probe,
whether one (p, rdf:type, owl:TransitiveProperty) triple exists.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from paths.algebra import (Alt, Axis, AxisKind, Domain, Identity, NegatedSet, Path, Plus, Seq,
                           SelfTerm, Star, Test)
from reasoner.hashing import term_id
from reasoner.schema import ID, INFERRED, O, P, S, SUB, SUBCLASS, SUBPROPERTY, SUP, TRANSITIVE, \
    PROPERTY, require_columns
from reasoner.sparkutil import cut_counted
from reasoner.vocab import OWL_TRANSITIVEPROPERTY, RDF_TYPE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF

__all__ = ["START", "END", "PathGraph", "evaluate", "PathIterationLimit", "DEFAULT_MAX_ITERATIONS",
           "BROADCAST_ROWS"]

START, END = "start", "end"
_MID = "_mid"

#: A set of ids (frontier, bound end, test set) with at most this many rows is broadcast.
BROADCAST_ROWS = 1_000_000
#: Iterations of one closure (one ``+`` / ``*``) before :class:`PathIterationLimit`: the joins
#: after the first step, the last one (which finds nothing new) included, so a closure over paths
#: of length n from the seeds needs n.
DEFAULT_MAX_ITERATIONS = 1000

_POSITION_COLUMNS = (S, P, O)


class PathIterationLimit(RuntimeError):
    """A closure (``e+`` / ``e*``) did not reach its fixpoint within the iteration cap."""

    def __init__(self, path: Path, cap: int, root: Path | None = None):
        self.path, self.cap, self.root = path, cap, root
        within = "" if root is None or root == path else f" (in path {root})"
        super().__init__(f"path closure {path}{within} did not reach a fixpoint within {cap} "
                         f"iterations; raise max_iterations if the graph has longer paths")


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
    """

    def __init__(self, triples: DataFrame | "PathGraph", closures=None):
        if isinstance(triples, PathGraph):
            closures = closures if closures is not None else triples.closures
            triples = triples.triples
        require_columns(triples, (S, P, O), "PathGraph")
        self.triples: DataFrame = triples.select(S, P, O)
        self.closures = closures
        self.probes_closures = False
        if closures is not None:
            inferred = closures.table(INFERRED).select(S, P, O)
            self.probes_closures = bool(self.triples.sameSemantics(inferred))

    @classmethod
    def from_store(cls, store) -> "PathGraph":
        """The ``inferred`` table of a ``reasoner.store.Materialized``, probing its closures."""
        graph = cls(store.table(INFERRED), closures=store)
        graph.probes_closures = True
        return graph

    @property
    def spark(self):
        return self.triples.sparkSession

    def voc_column(self) -> DataFrame:
        """Every occurrence of a term of G, in one column ``id`` (not distinct)."""
        return self.triples.select(F.explode(F.array(S, P, O)).alias(ID))

    def nodes_column(self) -> DataFrame:
        """Every occurrence of a subject or object of G, in one column ``id`` (not distinct)."""
        return self.triples.select(F.explode(F.array(S, O)).alias(ID))


# --- ends --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _End:
    """A set of ids (column ``id``, distinct) at one end of a path; see the module doc."""

    ids: DataFrame
    bound: bool
    small: bool


def _hint(df: DataFrame, small: bool) -> DataFrame:
    return F.broadcast(df) if small else df


def _materialized_end(ids: DataFrame, bound: bool) -> tuple[_End, int]:
    """Cut ``ids`` (one column ``id``, made distinct) and size it; returns the end and its rows."""
    ids, rows = cut_counted(ids.select(ID).distinct())
    return _End(ids, bound, rows <= BROADCAST_ROWS), rows


def _semi(pairs: DataFrame, column: str, ids: DataFrame, small: bool) -> DataFrame:
    """The pairs whose ``column`` is in ``ids`` (column ``id``), columns kept in order (a join
    on a column name puts that column first, and unions are by position)."""
    keys = _hint(ids.select(F.col(ID).alias(column)), small)
    return pairs.join(keys, column, "left_semi").select(*pairs.columns)


def _restrict(pairs: DataFrame, left: _End | None, right: _End | None) -> DataFrame:
    if left is not None:
        pairs = _semi(pairs, START, left.ids, left.small)
    if right is not None:
        pairs = _semi(pairs, END, right.ids, right.small)
    return pairs


def _diag(ids: DataFrame) -> DataFrame:
    return ids.select(F.col(ID).alias(START), F.col(ID).alias(END))


def _compose(left: DataFrame, right: DataFrame, right_small: bool = False,
             left_small: bool = False) -> DataFrame:
    """{(x, y) | ∃z: (x, z) ∈ left, (z, y) ∈ right} (distinct)."""
    l = _hint(left.select(START, F.col(END).alias(_MID)), left_small and not right_small)
    r = _hint(right.select(F.col(START).alias(_MID), END), right_small)
    return l.join(r, _MID).select(START, END).distinct()


def _swap(pairs: DataFrame) -> DataFrame:
    return pairs.select(F.col(END).alias(START), F.col(START).alias(END))


# --- the compiler ------------------------------------------------------------------------------

class _Compiler:
    def __init__(self, graph: PathGraph, root: Path, max_iterations: int):
        self.graph = graph
        self.spark = graph.spark
        self.root = root
        self.max_iterations = max_iterations
        self._transitive: dict[int, bool] = {}
        self._memo: dict = {}

    # ids --------------------------------------------------------------------------------------
    def constants(self, ids: list[int]) -> DataFrame:
        return self.spark.createDataFrame([(i,) for i in ids], f"{ID} long")

    def members(self, candidates: _End, domain: str) -> DataFrame:
        """The ids of ``candidates`` that occur in G (``voc``) or as subject/object (``nodes``)."""
        occurrences = self.graph.voc_column() if domain == "voc" else self.graph.nodes_column()
        if candidates.small:
            return occurrences.join(F.broadcast(candidates.ids), ID, "left_semi").distinct()
        return candidates.ids.join(occurrences, ID, "left_semi")

    def intersect(self, left: _End | None, right: _End | None) -> _End | None:
        if left is None or right is None:
            return left or right
        if right.small or not left.small:
            ids = left.ids.join(_hint(right.ids, right.small), ID, "left_semi")
        else:
            ids = right.ids.join(F.broadcast(left.ids), ID, "left_semi")
        return _End(ids, left.bound or right.bound, left.small or right.small)

    # relations --------------------------------------------------------------------------------
    def rel(self, path: Path, left: _End | None, right: _End | None) -> DataFrame:
        """⟦path⟧ with the given ends: exact on, and restricted to, the pairs that start in
        ``left`` and end in ``right`` (when set); not necessarily distinct."""
        if isinstance(path, Axis):
            return _restrict(self.axis(path), left, right)
        if isinstance(path, NegatedSet):
            pairs = (self.graph.triples.filter(~F.col(P).isin([term_id(t) for t in sorted(path.excluded)]))
                     .select(F.col(S).alias(START), F.col(O).alias(END)))
            return _restrict(_swap(pairs) if path.inverse else pairs, left, right)
        if isinstance(path, SelfTerm):                      # self::a = {(a, a)}
            return _restrict(_diag(self.constants([term_id(path.term)])), left, right)
        if isinstance(path, Identity):
            return self.identity(path.domain, left, right)
        if isinstance(path, Test):                          # self::[e]
            return self.test(path, left, right)
        if isinstance(path, Alt):
            out = None
            for part in path.parts:
                pairs = self.rel(part, left, right)
                out = pairs if out is None else out.unionAll(pairs)
            return out
        if isinstance(path, Seq):
            return self.seq(path, left, right)
        if isinstance(path, Plus):
            return self.plus(path.path, left, right)
        if isinstance(path, Star):                          # Identity(d) ∪ Plus(e)
            return self.identity(path.identity, left, right).unionAll(self.plus(path.path, left, right))
        raise TypeError(f"not a Path: {path!r}")

    def axis(self, path: Axis) -> DataFrame:
        i, j, k = path.kind.positions                       # x = t[i], y = t[j], z = t[k]
        x, y, z = (_POSITION_COLUMNS[n] for n in (i, j, k))
        triples = self.graph.triples
        if isinstance(path.test, str):                      # axis::a
            triples = triples.filter(F.col(z) == term_id(path.test))
        elif path.test is not None:                         # axis::[e]
            starts, small = self.test_set(path.test)
            triples = triples.join(_hint(starts.select(F.col(ID).alias(z)), small), z, "left_semi")
        pairs = triples.select(F.col(x).alias(START), F.col(y).alias(END))
        return _swap(pairs) if path.inverse else pairs

    def identity(self, domain: Domain, left: _End | None, right: _End | None) -> DataFrame:
        ends = self.intersect(left, right)
        if ends is None:                                    # free-free: enumerate
            return _diag((self.graph.voc_column() if domain is Domain.VOC else self.graph.nodes_column()).distinct())
        if domain is Domain.NODES and ends.bound:           # a bound constant relates to itself
            return _diag(ends.ids)
        return _diag(self.members(ends, "voc" if domain is Domain.VOC else "nodes"))

    def test(self, path: Test, left: _End | None, right: _End | None) -> DataFrame:
        ids, _ = self.test_set(path.path)
        return _restrict(_diag(ids), left, right)

    def test_set(self, path: Path) -> tuple[DataFrame, bool]:
        """{x ∈ voc(G) | ∃y: (x, y) ∈ ⟦path⟧} (free ends: a test sees no constant), cut once per
        evaluation, and whether it is small. The nodes that satisfy ``self::[path]``; also the z
        that satisfy ``axis::[path]`` (z is in voc(G) anyway)."""
        key = ("test", path)
        if key not in self._memo:
            starts = _End(self._starts(path), False, False)
            end, _ = _materialized_end(self.members(starts, "voc"), False)
            self._memo[key] = (end.ids, end.small)
        return self._memo[key]

    def _starts(self, path: Path) -> DataFrame:
        if isinstance(path, Seq):                           # backwards through the parts
            reach = self._starts(path.parts[-1])
            for part in reversed(path.parts[:-1]):
                if isinstance(part, SelfTerm):
                    reach = reach.filter(F.col(ID) == term_id(part.term))
                    continue
                reach = self.rel(part, None, _End(reach, False, False)).select(F.col(START).alias(ID))
            return reach.distinct()
        if isinstance(path, Alt):
            out = None
            for part in path.parts:
                ids = self._starts(part)
                out = ids if out is None else out.unionAll(ids)
            return out.distinct()
        if isinstance(path, Plus):
            return self._starts(path.path)
        if isinstance(path, Star):
            return self._starts(Identity(path.identity)).unionAll(self._starts(path.path)).distinct()
        if isinstance(path, Test):
            return self.test_set(path.path)[0]
        return self.rel(path, None, None).select(F.col(START).alias(ID)).distinct()

    # sequences --------------------------------------------------------------------------------
    def seq(self, path: Seq, left: _End | None, right: _End | None) -> DataFrame:
        if left is None and right is not None:              # backwards from the set end
            return _swap(self._chain(list(reversed(path.parts)), right, left, forward=False))
        return self._chain(list(path.parts), left, right, forward=True)

    def _oriented(self, part: Path, near: _End | None, far: _End | None, forward: bool) -> DataFrame:
        """``part`` as pairs (near end, far end) in the walking direction."""
        if forward:
            return self.rel(part, near, far)
        return _swap(self.rel(part, far, near))

    def _chain(self, parts: list[Path], first: _End | None, last: _End | None,
               forward: bool) -> DataFrame:
        """Compose the parts in walking order (reversed parts when not ``forward``). Node filters
        (``Identity``, ``Test``, ``self::a``) restrict the ends reached so far; plain relations
        (axes, negated sets) are joined; anything else (closures, alternatives, nested sequences)
        is evaluated from the frontier of ends reached so far, as a filter (SPARQL 1.1 §18.2.2.4:
        the parts after the first are joined on fresh variables, which bind nothing)."""
        n_last = len(parts) - 1
        acc = self._oriented(parts[0], first, None, forward)
        for n, part in enumerate(parts[1:], start=1):
            far = last if n == n_last else None
            if isinstance(part, (Identity, Test, SelfTerm)):
                acc = self._filter_end(acc, part, far)
            elif isinstance(part, (Axis, NegatedSet)):
                acc = _compose(acc, self._oriented(part, None, far, forward))
            else:
                acc, rows = cut_counted(acc.distinct())
                small = rows <= BROADCAST_ROWS
                frontier = _End(acc.select(F.col(END).alias(ID)).distinct(), False, small)
                acc = _compose(acc, self._oriented(part, frontier, far, forward), left_small=small)
        return acc

    def _filter_end(self, acc: DataFrame, part: Path, far: _End | None) -> DataFrame:
        """``acc ∘ part`` for a node filter ``part`` (a sub-relation of the identity)."""
        if isinstance(part, SelfTerm):
            acc = acc.filter(F.col(END) == term_id(part.term))
        elif isinstance(part, Test):
            ids, small = self.test_set(part.path)
            acc = _semi(acc, END, ids, small)
        elif part.domain is Domain.NODES and far is not None and far.bound:
            pass                                            # (nodes(G) ∪ far) ∩ far = far
        else:
            occurrences = self.graph.voc_column() if part.domain is Domain.VOC else self.graph.nodes_column()
            acc = _semi(acc, END, occurrences, False)
        return _restrict(acc, None, far)

    # closures ---------------------------------------------------------------------------------
    def plus(self, path: Path, left: _End | None, right: _End | None) -> DataFrame:
        probed = self.probe(path)
        if probed is not None:
            return _restrict(probed, left, right)
        if left is not None and left.bound:                 # ALP forwards (§18.5)
            return _restrict(self._expand(path, left, forward=True), None, right)
        if right is not None and right.bound:               # ALP backwards
            return _restrict(self._expand(path, right, forward=False), left, None)
        if left is not None:                                # frontier from a filter set
            return _restrict(self._expand(path, left, forward=True), None, right)
        if right is not None:
            return _restrict(self._expand(path, right, forward=False), None, None)
        return self._fixpoint(path)

    def _step(self, path: Path, frontier: _End, forward: bool) -> DataFrame:
        """One step of ``path`` from (to) the frontier, as pairs (frontier node, next node)."""
        if forward:
            return self.rel(path, frontier, None)
        return _swap(self.rel(path, None, frontier))

    def _expand(self, path: Path, seeds: _End, forward: bool) -> DataFrame:
        """Pairs (seed, node) of ⟦path⟧+ from the seeds (to the seeds when not ``forward``: the
        pairs are then swapped back at the end). Each step binds its frontier iff ``seeds.bound``."""
        reached, size = cut_counted(self._step(path, seeds, forward).distinct())
        delta, total, iteration = reached, size, 0
        while size:
            iteration += 1
            if iteration > self.max_iterations:
                raise PathIterationLimit(Plus(path), self.max_iterations, self.root)
            small = size <= BROADCAST_ROWS
            frontier = _End(delta.select(F.col(END).alias(ID)).distinct(), seeds.bound, small)
            step = self._step(path, frontier, forward)
            candidates = _compose(delta, step, left_small=small)
            new, size = cut_counted(candidates.join(_hint(reached, total <= BROADCAST_ROWS),
                                                     [START, END], "left_anti").select(START, END))
            reached = reached.unionAll(new)  # a union of cut pieces: the lineage stays flat
            delta, total = new, total + size
        return reached if forward else _swap(reached)

    def _fixpoint(self, path: Path) -> DataFrame:
        """⟦path⟧+ with both ends free: semi-naive, Δ_{k+1} = Δ_k ∘ ⟦path⟧ minus what is known."""
        base, rows = cut_counted(self.rel(path, None, None).distinct())
        base_small = rows <= BROADCAST_ROWS
        closure, delta, size, total, iteration = base, base, rows, rows, 0
        while size:
            iteration += 1
            if iteration > self.max_iterations:
                raise PathIterationLimit(Plus(path), self.max_iterations, self.root)
            candidates = _compose(delta, base, base_small, left_small=size <= BROADCAST_ROWS)
            new, size = cut_counted(candidates.join(_hint(closure, total <= BROADCAST_ROWS),
                                                     [START, END], "left_anti").select(START, END))
            closure = closure.unionAll(new)
            delta, total = new, total + size
        return closure

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
            strict = table.filter(F.col(SUB) != F.col(SUP)).select(F.col(SUB).alias(START), F.col(SUP).alias(END))
            prop = term_id(path.test)
            cycles = (self.graph.triples.filter((F.col(P) == prop) & (F.col(S) == F.col(O)))
                      .select(F.col(S).alias(START), F.col(O).alias(END)))
            pairs = strict.unionAll(cycles)
        else:
            prop = term_id(path.test)
            if not self.is_transitive(prop):
                return None
            pairs = (store.table(TRANSITIVE).filter(F.col(PROPERTY) == prop)
                     .select(F.col(S).alias(START), F.col(O).alias(END)))
        return _swap(pairs) if path.inverse else pairs

    def is_transitive(self, prop: int) -> bool:
        if prop not in self._transitive:
            typed = self.graph.triples.filter((F.col(S) == prop) & (F.col(P) == term_id(RDF_TYPE))
                                              & (F.col(O) == term_id(OWL_TRANSITIVEPROPERTY)))
            self._transitive[prop] = bool(typed.limit(1).count())
        return self._transitive[prop]


# --- entry point -------------------------------------------------------------------------------

def _end(graph: PathGraph, value) -> _End | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"a path end is None, an N-Triples term, an int id or a DataFrame, got {value!r}")
    if isinstance(value, str):
        from paths.algebra import is_term

        if not is_term(value):
            raise TypeError(f"a path end given as a string must be an N-Triples term (<iri>, \"lit\", _:b), "
                            f"got {value!r}")
        value = term_id(value)
    if isinstance(value, int):
        ids = graph.spark.createDataFrame([(value,)], f"{ID} long")
        return _End(ids, True, True)
    if isinstance(value, DataFrame):
        if len(value.columns) != 1:
            raise ValueError(f"a DataFrame path end must have exactly one column of ids; it has "
                             f"{', '.join(value.columns) or 'no columns'}")
        end, _ = _materialized_end(value.select(F.col(value.columns[0]).cast("long").alias(ID)), True)
        return end
    raise TypeError(f"a path end is None, an N-Triples term, an int id or a DataFrame, got {value!r}")


def evaluate(graph: PathGraph | DataFrame, path: Path, start=None, end=None, *,
             max_iterations: int = DEFAULT_MAX_ITERATIONS) -> DataFrame:
    """⟦path⟧ over ``graph`` as distinct pairs ``(start, end)`` of ids, for the pattern
    ``start path end`` (SPARQL 1.1): ``start``/``end`` are None (a variable), an N-Triples term,
    an int id, or a DataFrame with one column of ids (the union over its ids)."""
    from paths.algebra import NODE_TYPES

    if not isinstance(path, NODE_TYPES):
        raise TypeError(f"evaluate() needs a paths.algebra Path, got {path!r}")
    graph = graph if isinstance(graph, PathGraph) else PathGraph(graph)
    compiler = _Compiler(graph, path, max_iterations)
    left, right = _end(graph, start), _end(graph, end)
    return compiler.rel(path, left, right).select(START, END).distinct()
