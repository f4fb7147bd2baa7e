"""C-SPARQL queries at given instants, on the driver: no JVM (``query --at``, issue 37).

The semantics are ``cep.engines.reference``'s ("C-SPARQL" in its module doc; Barbieri et al.,
WWW 2009, §3), evaluated instant by instant as the Spark engine does
(``cep.engines.spark.csparql``, ``cep.engines.spark.evaluate._Runtime.snapshot``), over term ids:

* **Windows.** Each stream's triples are sorted once by (τ, t2, item, s, p, o) — τ the item's
  start time, the order ``TRIPLES n`` takes its last n by — so the content of a FROM [NAMED] STREAM
  window at an evaluation instant c is one slice of it, found by bisection on τ
  (:class:`StreamIndex`). Which τ a window holds is ``WindowConvention.content``'s (every engine's
  one definition: RANGE / STEP / TUMBLING, TRIPLES, ALL, NOW, the bounds and the window start t0).
* **The snapshot** at c (``A.Snapshot.instant``: COMPUTED EVERY's last multiple, else the windows'
  last close) is the background graph merged with the windows' triples, each window triple with
  its latest τ in any window and in its own stream's (``timestamp()``, ``GRAPH <s>``); a FROM
  NAMED STREAM window is a named graph only. WHERE is matched against it by the driver's pattern
  evaluation (``cep.engines.driver.static.pattern_rows``: BGPs, property paths, VALUES, JOIN,
  UNION, OPTIONAL, MINUS, FILTER), this module adding GRAPH over stream windows, the FILTERs that call
  timestamp() (§3.3: per solution of their BGP, the times of the triples each pattern matched),
  those that call RAND(), UUID(), STRUUID() or BNODE() — FILTERs, OPTIONAL conditions, HAVING —
  (drawn from the solution and [c, c], in GRAPH over a named background graph too), and BIND.
* **Above WHERE**: the AGGREGATE clauses / GROUP BY (§3.1: every mapping extended with f over its
  group, ``cep.terms.aggregates.aggregate_value`` computing the terms; the implicit group of
  nothing when there is no solution), their FILTERs / HAVING, SELECT expressions, the projection
  or CONSTRUCT's template (``CONSTRUCT`` and ``REGISTER STREAM ... CONSTRUCT``; a blank node named
  from its solution and [c, c], ``cep.terms.values.fresh_blank_of_ids``, as on Spark). Every
  answer carries [c, c].
* **Empty windows** (``WindowConvention.empty`` "skip"): an instant at which no window holds a
  triple has no answer.

An instant costs one evaluation; instants with the same evaluation instant c share it (a STEP
window's answers between two closes, COMPUTED EVERY's between two multiples). What is not here
(:func:`refusal` says what and why) runs on Spark.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cep import algebra as A
from cep.algebra.windows import SKIP, WindowConvention
from cep.engines.columns import column_var, var_column
from cep.engines.driver import rows as L
from cep.engines.driver import static
from cep.engines.errors import MissingInputError
from cep.terms.values import EVALUATION_INSTANT, ebv, eval_expr
from rdfcore.hashing import term_id

__all__ = ["refusal", "StreamIndex", "SnapshotGraph", "answers"]

#: the patterns a C-SPARQL WHERE may hold here, and the nodes above it (AGGREGATE, HAVING, SELECT expressions)
_WHERE = (A.BGP, A.Join, A.Union, A.LeftJoin, A.Filter, A.GraphPattern, A.NamedGraph, A.Extend, A.Values, A.Minus,
          A.SubSelect, A.Project)
_ABOVE = (A.Filter, A.Aggregate, A.Extend)
#: how a user wrote the nodes refused
_KEYWORDS = {"SubSelect": "a sub-query", "Join": "VALUES after WHERE",
             "GroupCover": "GROUP BY over events"}


def refusal(query: A.Query) -> str | None:
    """Why this module does not evaluate the C-SPARQL ``query`` (then Spark does), or None."""
    node, above = query.form.inner, []
    while isinstance(node, _ABOVE):
        above.append(node)
        node = node.inner
    if not isinstance(node, A.Snapshot) or len(A.snapshots(query)) != 1:
        name = type(node).__name__
        return f"{_KEYWORDS.get(name, name)} around a C-SPARQL WHERE (on Spark)"
    for inner in A.walk(node.pattern):
        if isinstance(inner, A.SubSelect) and not static.sub_select_supported(inner):
            return "a sub-query with BIND, aggregates or an ORDER BY over a variable it drops in a C-SPARQL WHERE (on Spark)"
        if not isinstance(inner, _WHERE):
            name = type(inner).__name__
            return f"{_KEYWORDS.get(name, name)} in a C-SPARQL WHERE (on Spark)"
    if A.contains(query.form, lambda x: isinstance(x, A.IntervalFn)):
        return "an interval function in a C-SPARQL query (on Spark)"
    for n in above:
        if A.contains(n.condition if isinstance(n, A.Filter) else getattr(n, "expr", None),
                      lambda x: isinstance(x, A.Exists)):
            return "EXISTS in HAVING or a SELECT expression of a C-SPARQL query (on Spark)"
    for n in A.walk(node.pattern):
        if isinstance(n, A.Extend) and A.contains(n.expr, lambda x: isinstance(x, A.Exists)):
            return "EXISTS in a BIND of a C-SPARQL query (on Spark)"
        condition = n.condition if isinstance(n, (A.Filter, A.LeftJoin)) else None
        if condition is None or not A.contains(condition, lambda x: isinstance(x, A.Exists)):
            continue
        if _draws(condition) or A.uses_timestamp(condition):
            return "EXISTS in a condition that also draws or reads timestamp() (on Spark)"
        why = static.exists_refusal(condition)
        if why is not None:
            return why
    return None


def _draws(x) -> bool:
    """Whether ``x`` calls RAND(), UUID(), STRUUID() or BNODE() (they draw from the solution)."""
    return A.contains(x, lambda e: isinstance(e, A.Builtin) and e.name in A.SOLUTION_BUILTINS and e.name != "NOW")


@dataclass(frozen=True)
class StreamIndex:
    """One stream's triples sorted once by (τ, t2, item, s, p, o): ``times`` their τ (increasing),
    ``triples`` their id triples, ``items`` their items' ids, ``ends`` their items' end times t2.
    A window's content is the slice :meth:`window` gives; EP-SPARQL's occurrences at t,
    :meth:`ended`."""

    times: list
    triples: list
    items: list
    ends: list

    @staticmethod
    def of(rows: np.ndarray) -> "StreamIndex":
        """From ``(item, s, p, o, t1, t2)`` id rows (``cep.engines.driver.answers.read_streams``)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, 6)
        rows = rows[np.lexsort((rows[:, 3], rows[:, 2], rows[:, 1], rows[:, 0], rows[:, 5], rows[:, 4]))]
        return StreamIndex(rows[:, 4].tolist(), list(zip(*(rows[:, k].tolist() for k in (1, 2, 3)))),
                           rows[:, 0].tolist(), rows[:, 5].tolist())

    def ended(self, t: int, since: int | None = None) -> range:
        """The positions that may hold a triple ended by t (t2 ≤ t) and started at or after
        ``since`` (None: any): those started in [since, t]; :attr:`ends` tells which have ended."""
        return range(0 if since is None else bisect_left(self.times, since), bisect_right(self.times, t))

    def window(self, spec: A.Window, c: int, time_unit: str, convention: WindowConvention) -> range:
        """The positions of the triples ``spec`` holds at evaluation instant c
        (``WindowConvention.content``: TRIPLES n the last n in the order above)."""
        lo, hi, n = convention.content(spec, c, time_unit)
        end = bisect_right(self.times, hi)
        if n is not None:
            return range(max(0, end - n), end)
        return range(0 if lo is None else bisect_left(self.times, lo), end)


@dataclass(frozen=True)
class SnapshotGraph:
    """The graph a C-SPARQL WHERE matches at one instant: ``background`` (None: none) merged with
    ``window``, the windows' triples; ``static.pattern_rows`` reads it as a ``StaticGraph``
    (``candidates``, ``path_graph``), with no copy of the background."""

    background: static.StaticGraph | None
    window: static.StaticGraph
    cache: dict = field(default_factory=dict, compare=False, repr=False)

    def candidates(self, p) -> list:
        if self.background is None or not self.background.triples:
            return self.window.candidates(p)
        return self.background.candidates(p) + self.window.candidates(p)   # a triple in both: rows are sets

    def path_graph(self):
        if "paths" not in self.cache:
            merged = self.window if self.background is None else static.StaticGraph(
                self.background.triples | self.window.triples)
            self.cache["paths"] = merged.path_graph()
        return self.cache["paths"]


@dataclass(frozen=True)
class _Scope:
    """Where a WHERE pattern stands: the graph it matches, the window times of its triples
    ({id triple: {None: latest τ in a default-graph window, stream: latest τ in that stream's}};
    None in a named background graph, whose triples have no time), and the evaluation instant c."""

    graph: "SnapshotGraph | static.StaticGraph"
    times: dict | None
    c: int


@dataclass(frozen=True)
class _Evaluation:
    """One query's evaluation over its inputs, at any instant: ``known`` {id: term} grows with the
    terms it computes (aggregates, BIND)."""

    query: A.Query
    snapshot: A.Snapshot
    background: static.StaticGraph | None
    graphs: Mapping        # {graph IRI or None: static.StaticGraph}: GRAPH's named background graphs
    streams: dict          # {stream IRI: StreamIndex}
    known: dict
    time_unit: str
    convention: WindowConvention

    def lookup(self, ids) -> dict:
        known = self.known
        return {i: known[i] for i in ids if i in known}

    def index(self, stream) -> StreamIndex:
        if stream not in self.streams:
            raise MissingInputError(f"no stream {stream}; streams are {sorted(self.streams)}")
        return self.streams[stream]

    # -- the instant ------------------------------------------------------------------------------
    def at(self, t: int, c: int) -> list:
        """The answers at t, whose evaluation instant is c: tuples of a term or None per projected
        variable (a CONSTRUCT's s, p, o), then c, c."""
        node = self.snapshot
        spans = [(stream, self.index(stream).window(spec, c, self.time_unit, self.convention))
                 for stream, spec in node.windows]
        if self.convention.empty == SKIP and not any(len(span) for _s, span in spans):
            return []
        token = EVALUATION_INSTANT.set(t)      # NOW()
        try:
            rel = self.above(self.query.form.inner, self.scope(spans, c))
        finally:
            EVALUATION_INSTANT.reset(token)
        n = len(rel.vars)
        every = L.Rel(rel.vars, frozenset(r[:n] + (c, c, t, t) for r in rel.rows))   # each answer over [c, c]
        fresh: dict = {}
        rows = L.form_at(self.query.form, every, t, fresh)
        known = self.known
        known.update(fresh)
        return [tuple(None if v is None else known[v] for v in r[:-2]) + r[-2:] for r in rows]

    def scope(self, spans, c: int) -> _Scope:
        """The snapshot at c (module doc), from each window's positions ``spans``."""
        node = self.snapshot
        times: dict = {}
        for stream, span in spans:
            index = self.streams[stream]
            keys = (stream,) if stream in node.named else (None, stream)   # a named one: GRAPH only
            for k in span:
                t, slot = index.times[k], times.setdefault(index.triples[k], {})
                for key in keys:
                    if slot.get(key, t) <= t:
                        slot[key] = t
        window = static.StaticGraph(frozenset(tr for tr, slot in times.items() if None in slot))
        return _Scope(SnapshotGraph(self.background, window), times, c)

    # -- above WHERE ------------------------------------------------------------------------------
    def above(self, node, scope: _Scope) -> L.Rel:
        match node:
            case A.Snapshot(pattern=pattern):
                return self.where(pattern, scope)
            case A.Aggregate(inner=inner, specs=specs):
                return self.aggregate(self.above(inner, scope), specs)
            case A.Filter(condition=condition, inner=inner):
                return self.filter(condition, self.above(inner, scope), scope.c)
            case A.Extend(inner=inner, var=var, expr=expr):
                return self.extend(self.above(inner, scope), var, expr, scope.c)
        raise TypeError(f"{type(node).__name__} above a C-SPARQL WHERE is not evaluated on the driver (refusal)")

    def aggregate(self, rel: L.Rel, specs) -> L.Rel:
        """§3.1 (``A.Aggregate``, ``cep.engines.driver.rows.aggregate``); no row and only implicit
        groups: one row of the aggregates of nothing."""
        if not rel.rows and all(not spec.group for spec in specs):
            return L.aggregate(L.Rel((), frozenset({static.ALWAYS})), specs, self.known, empty=True)
        return L.aggregate(rel, specs, self.known)

    def intern(self, term: str | None) -> int | None:
        """``term``'s id, known from now on (None: None)."""
        if term is None:
            return None
        ident = term_id(term)
        self.known.setdefault(ident, term)
        return ident

    def extend(self, rel: L.Rel, var: A.Var, expr, c: int) -> L.Rel:
        """BIND / SELECT (expr AS ?v) at evaluation instant c."""
        return L.extend(rel, var, expr, self.known, self.time_unit, (c, c))

    # -- WHERE over the snapshot ------------------------------------------------------------------
    def where(self, node, scope: _Scope) -> L.Rel:
        return static.pattern_rows(node, scope.graph, self.lookup, self.time_unit,
                                   lambda inner: self.special(inner, scope))

    def special(self, node, scope: _Scope) -> L.Rel | None:
        """The nodes of a WHERE that ``static.pattern_rows`` leaves to this module (None: the others)."""
        match node:
            case A.NamedGraph(name=name, pattern=pattern, graphs=graphs):   # GRAPH over background graphs
                return self.named_graph(name, pattern, graphs, scope)
            case A.Filter(condition=condition, inner=inner) if _draws(condition) and not A.uses_timestamp(condition):
                return self.filter(condition, self.where(inner, scope), scope.c)
            case A.LeftJoin(left=left, right=right, condition=condition) if condition is not None and _draws(condition):
                return L.left_join(self.where(left, scope), self.where(right, scope),
                                   lambda pairs: self.filter(condition, pairs, scope.c))
            case _ if scope.times is None:                                  # in one: no window, no time
                return None
            case A.Filter(condition=condition, inner=inner) if A.uses_timestamp(condition):
                return self.timed_filter(condition, inner, scope)
            case A.GraphPattern(graph=A.Var(name=g), pattern=pattern, streams=streams):   # GRAPH ?g
                column, out = var_column(g), L.Rel((), frozenset())
                for stream in streams:
                    gid = self.intern(stream)
                    part = self.where(A.GraphPattern(stream, pattern), scope)
                    out = L.union(out, self.bound(part, column, gid))
                return out
            case A.GraphPattern(graph=name, pattern=pattern):                             # GRAPH <s>
                times = {tr: {None: slot[name], name: slot[name]} for tr, slot in scope.times.items() if name in slot}
                graph = SnapshotGraph(None, static.StaticGraph(frozenset(times)))
                return self.where(pattern, _Scope(graph, times, scope.c))
            case A.Extend(inner=inner, var=var, expr=expr):
                return self.extend(self.where(inner, scope), var, expr, scope.c)
        return None

    def filter(self, condition, rel: L.Rel, c: int) -> L.Rel:
        """FILTER, HAVING or an OPTIONAL's condition over the rows of ``rel``. One calling RAND(),
        UUID(), STRUUID() or BNODE() draws from the whole solution and its interval, which in a
        snapshot is [c, c] (the reference's, and Spark's), not the interval the rows of WHERE carry
        here."""
        if not _draws(condition):
            return L.filter_rel(rel, condition, self.lookup, self.time_unit)
        stamped = {r[:-4] + (c, c) + r[-2:]: r for r in rel.rows}
        kept = L.filter_rel(L.Rel(rel.vars, frozenset(stamped)), condition, self.lookup, self.time_unit)
        return L.Rel(rel.vars, frozenset(stamped[r] for r in kept.rows))

    def named_graph(self, name, pattern, graphs, scope: _Scope) -> L.Rel:
        """GRAPH <g> / ?g { P } over the named background graphs (``A.NamedGraph``; SPARQL 1.1 §13.3):
        a graph not in the dataset gives no solution, one in it but not given is an error."""
        given = self.graphs
        if not isinstance(name, A.Var):
            if name not in (given if graphs is None else graphs):
                return L.Rel((), frozenset())
            return self.where(pattern, _Scope(self.named(name), None, scope.c))
        column, out = var_column(name.name), L.Rel((), frozenset())
        for g in (graphs if graphs is not None else [g for g in given if g is not None]):
            gid = self.intern(g)
            part = self.where(pattern, _Scope(self.named(g), None, scope.c))
            out = L.union(out, self.bound(part, column, gid))
        return out

    def named(self, name) -> static.StaticGraph:
        if name not in self.graphs:
            raise MissingInputError(f"no named graph {name} was given; graphs are {list(self.graphs)}")
        return self.graphs[name]

    @staticmethod
    def bound(part: L.Rel, column: str, value: int) -> L.Rel:
        """The rows of ``part`` compatible with ``column`` = ``value``, with it bound."""
        if column in part.vars:
            at = part.vars.index(column)
            return L.Rel(part.vars, frozenset(r[:at] + (value,) + r[at + 1:] for r in part.rows
                                              if r[at] is None or r[at] == value))
        n = len(part.vars)
        return L.Rel.of(part.vars + (column,), {r[:n] + (value,) + r[n:] for r in part.rows})

    def timed_filter(self, condition, inner, scope: _Scope) -> L.Rel:
        """A FILTER calling timestamp() (§3.3): per solution of its BGP, the times of the triples its
        patterns matched (``timestamp(?v [, s])``), or of the window triples matching a pattern
        (``timestamp(s p o)``)."""
        times = scope.times
        if isinstance(inner, A.BGP):
            patterns = inner.patterns
            vars_, solutions = self.matches(patterns, scope)
        else:
            patterns = ()
            rel = self.where(inner, scope)
            vars_, solutions = rel.vars, [(r[:len(rel.vars)], None) for r in rel.rows]
        names = [column_var(v) for v in vars_]
        known, out = self.known, set()
        for values, matched in solutions:
            ids = {name: v for name, v in zip(names, values) if v is not None}

            def stamp(e, _mu, ids=ids, matched=matched):
                if isinstance(e, A.Timestamp):
                    found = [times.get(tr, {}).get(e.stream) for tp, tr in zip(patterns, matched)
                             if tr is not None and e.var in tp.variables()]
                else:
                    want = [ids.get(x.name) if isinstance(x, A.Var) else term_id(x) for x in (e.s, e.p, e.o)]
                    found = [slot.get(None) for tr, slot in times.items()
                             if all(w is None or w == v for w, v in zip(want, tr))]
                found = [t for t in found if t is not None]
                return max(found) if found else None

            mu = {name: known[v] for name, v in ids.items()}
            if ebv(eval_expr(condition, mu, (scope.c, scope.c), self.time_unit, stamp)) is True:
                out.add(tuple(values) + static.ALWAYS)
        return L.Rel(tuple(vars_), frozenset(out))

    def matches(self, patterns, scope: _Scope) -> tuple[tuple, list]:
        """A BGP's solutions, each with the id triple each pattern matched (None for a path):
        (variable columns, [(values, triples)])."""
        solutions: list = [({}, [])]
        for tp in patterns:
            part = static.pattern_rows(A.BGP((tp,)), scope.graph, self.lookup, self.time_unit)
            names = [column_var(v) for v in part.vars]
            shared = [n for n in names if solutions and n in solutions[0][0]]
            index: dict = defaultdict(list)
            for r in part.rows:
                row = dict(zip(names, r))
                index[tuple(row[n] for n in shared)].append(row)
            parts = (tp.s, tp.p, tp.o) if isinstance(tp, A.TriplePattern) else None
            found = []
            for d, matched in solutions:
                for row in index.get(tuple(d[n] for n in shared), ()):
                    triple = None if parts is None else tuple(row[x.name] if isinstance(x, A.Var) else term_id(x)
                                                              for x in parts)
                    found.append(({**d, **row}, matched + [triple]))
            solutions = found
        columns = tuple(sorted({var_column(n) for tp in patterns for n in (v.name for v in tp.variables())}))
        names = [column_var(c) for c in columns]
        return columns, [(tuple(d.get(n) for n in names), matched) for d, matched in solutions]


def answers(query: A.Query, graphs: Mapping, streams: Mapping[str, np.ndarray], instants: Sequence[int],
            time_unit: str, known: dict, convention: WindowConvention) -> list[tuple]:
    """⟦query, t⟧ for each t of ``instants``: rows ``(t, term or None per projected variable..., c, c)``
    — a CONSTRUCT's ``(t, s, p, o, c, c)`` — (c the evaluation instant t's answers are those of),
    distinct, unsorted. ``graphs``:
    {graph: ``static.StaticGraph``}; ``streams``: {stream IRI: ``(item, s, p, o, t1, t2)`` id
    rows}; ``known``: {id: term}, to which the terms computed are added. The caller checked
    :func:`refusal`."""
    snapshot = A.snapshots(query)[0]
    background = (static.graph(snapshot.graph, graphs) if snapshot.graph is not None or None in graphs else None)
    for stream, _w in snapshot.windows:
        known.setdefault(term_id(stream), stream)
    indexes = {iri: StreamIndex.of(rows) for iri, rows in streams.items()
               if iri in {s for s, _w in snapshot.windows}}
    evaluation = _Evaluation(query, snapshot, background, graphs, indexes, known, time_unit, convention)
    per_instant = A.contains(query.form, lambda x: isinstance(x, A.Builtin) and x.name == "NOW")
    done: dict = {}
    out = []
    for t in instants:
        c = snapshot.instant(t, time_unit, convention)
        key = (c, t) if per_instant else c
        if key not in done:
            done[key] = evaluation.at(t, c)
        out.extend((t, *row) for row in done[key])
    return out
