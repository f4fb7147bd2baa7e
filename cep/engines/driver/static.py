"""The static side on the driver: a query's background patterns (eq. 17) over id-encoded graphs,
as ``cep.engines.driver.rows`` relations, with no Spark.

``cep.engines.spark.evaluate`` evaluates a ``Background`` node over its graph's closure and gives
each mapping the interval [MIN_TIME, t] at t: lifetime [MIN_TIME, OPEN_END], interval
[MIN_TIME, OPEN_END] (``cep.engines.spark.lifetimes.constant``). This module computes the same
rows on the driver, for the patterns a background of a CQELS-CEP query usually holds: BGPs of
triple patterns and property paths (``paths.local``, the path compiler's in-memory executor),
VALUES, and JOIN, UNION, OPTIONAL, MINUS and FILTER over them (EXISTS in their conditions, where
its test is exact: :func:`exists_refusal`), and sub-queries with ORDER BY / LIMIT / OFFSET, with
``cep.engines.driver.rows``' operators. Anything else (GRAPH, BIND) is refused by
:func:`refusal`, and the caller evaluates the query on Spark.

A graph (:class:`StaticGraph`) is the id triples of one ``--static`` graph after the reasoner
(``reasoner.local.materialize``), indexed by predicate; a triple pattern's constants are compared
by id (``rdfcore.hashing.term_id``), a repeated variable within the triple, as
``cep.engines.spark.triples.triple_match`` does.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from cep import algebra as A
from cep.algebra.timeline import MIN_TIME, OPEN_END
from cep.engines.columns import column_var, var_column
from cep.engines.driver import modifiers as M
from cep.engines.driver import rows as L
from cep.engines.errors import MissingInputError
from paths.local import LocalGraph, evaluate
from rdfcore.hashing import term_id

__all__ = ["StaticGraph", "TripleMatch", "ALWAYS", "refusal", "exists_refusal", "exists_test", "sub_select_supported",
           "background_relations", "graph", "pattern_rows"]

#: the interval and lifetime of every background mapping (module doc)
ALWAYS = (MIN_TIME, OPEN_END, MIN_TIME, OPEN_END)
#: the patterns :func:`background_relations` evaluates
_EVALUATED = (A.BGP, A.Join, A.Union, A.LeftJoin, A.Filter, A.Values, A.Minus, A.SubSelect, A.Project)
#: how a user wrote the patterns it does not evaluate
_KEYWORDS = {"Extend": "BIND", "SubSelect": "a sub-query", "NamedGraph": "GRAPH", "GraphPattern": "GRAPH",
             "Values": "VALUES", "Minus": "MINUS", "LeftJoin": "OPTIONAL"}


@dataclass(eq=False)
class StaticGraph:
    """One background graph: id triples ``(s, p, o)``, distinct, indexed by predicate."""

    triples: frozenset
    _by_p: dict = field(default_factory=dict, init=False, repr=False)
    _paths: object = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        for s, p, o in self.triples:
            self._by_p.setdefault(p, []).append((s, p, o))

    @staticmethod
    def merge(graphs) -> "StaticGraph":
        """Several FROM graphs read as one (SPARQL's merge)."""
        return StaticGraph(frozenset().union(*(g.triples for g in graphs)))

    def candidates(self, p) -> list:
        """The triples a pattern with predicate id ``p`` (None: a variable) can match."""
        return self._by_p.get(p, []) if p is not None else list(self.triples)

    def path_graph(self):
        """``paths.local.LocalGraph`` of the triples, built once."""
        if self._paths is None:
            rows = np.array(sorted(self.triples), dtype=np.int64).reshape(-1, 3)
            self._paths = LocalGraph(rows[:, 0], rows[:, 1], rows[:, 2])
        return self._paths


def refusal(query: A.Query) -> str | None:
    """Why the query's background patterns cannot be evaluated here (then Spark does), or None."""
    for node in A.walk(query.form):
        if not isinstance(node, A.Background):
            continue
        for inner in A.walk(node.pattern):
            if not isinstance(inner, _EVALUATED):
                name = _KEYWORDS.get(type(inner).__name__, type(inner).__name__)
                return f"{name} in a background pattern (on Spark)"
            if isinstance(inner, A.SubSelect) and not sub_select_supported(inner):
                return "a sub-query's ORDER BY over a variable it does not project (on Spark)"
            condition = getattr(inner, "condition", None)
            if condition is not None and any(isinstance(e, (A.Timestamp, A.PatternTimestamp))
                                             or (isinstance(e, A.Builtin) and e.name == "NOW")
                                             for e in A.subexpressions(condition)):
                return "timestamp() or NOW() in a background condition (on Spark)"
            why = None if condition is None else exists_refusal(condition)
            if why is not None:
                return why
    return None


#: the patterns an EXISTS may hold here, where its test is exact (``exists_test``)
_IN_EXISTS = (A.BGP, A.Join, A.Union, A.Filter, A.GraphPattern, A.NamedGraph)


def exists_refusal(condition) -> str | None:
    """Why an EXISTS in ``condition`` is not tested here (then Spark evaluates the query), or None.
    ``exists_test`` reads EXISTS { P } as "a solution of P is compatible with μ", which is SPARQL's
    substitute(P, μ) having a solution when P is monotone and every FILTER in it reads only
    variables its own pattern binds in every solution: BGPs, property paths, JOIN, UNION, FILTER
    and GRAPH with an IRI. OPTIONAL, MINUS, VALUES (not substituted: SPARQL keeps its rows), a
    GRAPH variable, a FILTER reading the outer solution, and EXISTS, NOW(), timestamp() or a drawn
    value inside are not."""
    for e in A.subexpressions(condition):
        if not isinstance(e, A.Exists):
            continue
        for node in A.walk(e.pattern):
            if not isinstance(node, _IN_EXISTS) or isinstance(getattr(node, "graph", getattr(node, "name", None)),
                                                              A.Var):
                name = _KEYWORDS.get(type(node).__name__, type(node).__name__)
                return f"{name} inside EXISTS (on Spark)"
            if isinstance(node, A.Filter):
                if any(isinstance(x, (A.Exists, A.Timestamp, A.PatternTimestamp, A.IntervalFn))
                       or (isinstance(x, A.Builtin) and x.name in A.SOLUTION_BUILTINS)
                       for x in A.subexpressions(node.condition)):
                    return "EXISTS, NOW(), timestamp() or a drawn value in a FILTER inside EXISTS (on Spark)"
                if not {v.name for v in A.expr_variables(node.condition)} <= _always_bound(node.inner):
                    return "a FILTER inside EXISTS that reads a variable of the solution outside it (on Spark)"
    return None


def _always_bound(node) -> set:
    """The variables every solution of ``node`` (``_IN_EXISTS`` patterns) binds."""
    match node:
        case A.BGP(patterns=patterns):
            return {x.name for tp in patterns for x in (tp.s, getattr(tp, "p", None), tp.o) if isinstance(x, A.Var)}
        case A.Join(left=left, right=right):
            return _always_bound(left) | _always_bound(right)
        case A.Union(left=left, right=right):
            return _always_bound(left) & _always_bound(right)
    inner = getattr(node, "inner", None) or getattr(node, "pattern", None)
    return set() if inner is None else _always_bound(inner)


def exists_test(graph, terms: Callable, time_unit: str, other: Callable | None = None) -> Callable:
    """EXISTS { P } over ``graph`` (as ``pattern_rows`` takes it), for ``cep.terms.values.eval_expr``:
    true for a solution μ ({variable: term}) when a row of P is compatible with it (exact under
    ``exists_refusal``). P's rows are computed once per pattern, with ``pattern_rows``."""
    cache: dict = {}

    def exists(pattern, mu: Mapping) -> bool:
        if pattern not in cache:
            cache[pattern] = pattern_rows(pattern, graph, terms, time_unit, other)
        rel = cache[pattern]
        ids = [None if column_var(c) not in mu else term_id(mu[column_var(c)]) for c in rel.vars]
        return any(all(a is None or b is None or a == b for a, b in zip(ids, row)) for row in rel.rows)

    return exists



def background_relations(query: A.Query, graphs: Mapping, terms: Callable, time_unit: str) -> dict:
    """{``A.Background`` node of ``query``: its rows (``cep.engines.driver.rows.Rel``)}.
    ``graphs``: {graph IRI, or None for the default graph: :class:`StaticGraph`}; a FROM graph
    that was loaded as the default graph's source reads the default graph, as on Spark.
    ``terms``: ids → {id: term}, for FILTER and OPTIONAL conditions."""
    out = {}
    for node in A.walk(query.form):
        if isinstance(node, A.Background) and node not in out:
            out[node] = pattern_rows(node.pattern, graph(node.graph, graphs), terms, time_unit)
    return out


def graph(name, graphs: Mapping) -> StaticGraph:
    """The background graph ``name`` (a FROM IRI, None the default graph, a tuple of FROMs their
    merge) of ``graphs``; a FROM graph that was not given reads the default graph, as on Spark."""
    if isinstance(name, tuple):
        return StaticGraph.merge(graph(g, graphs) for g in name)
    if name not in graphs and name is not None and None in graphs:
        name = None
    if name not in graphs:
        shown = ", ".join("default" if g is None else g for g in graphs) or "none"
        raise MissingInputError(f"no background graph {'default' if name is None else name} was given; "
                                f"graphs: {shown}")
    return graphs[name]


def pattern_rows(node, graph, terms: Callable, time_unit: str, other: Callable | None = None) -> L.Rel:
    """The rows of ``node`` (BGP, VALUES, JOIN, UNION, OPTIONAL, MINUS, FILTER) over ``graph`` (a
    :class:`StaticGraph`, or anything with its ``candidates`` and ``path_graph``), each with
    :data:`ALWAYS`. ``other(node)``: the rows of a node the caller evaluates itself (C-SPARQL's
    GRAPH and timed FILTER, ``cep.engines.driver.csparql``), or None to leave it to this function;
    it is asked first, at every node."""
    if other is not None:
        found = other(node)
        if found is not None:
            return found

    def sub(inner) -> L.Rel:
        return pattern_rows(inner, graph, terms, time_unit, other)

    match node:
        case A.BGP(patterns=patterns):
            out = L.Rel((), frozenset({ALWAYS}))
            for tp in patterns:
                part = _path(tp, graph) if isinstance(tp, A.PathPattern) else _triples(tp, graph)
                out = L.join(out, part)
            return out
        case A.Join(left=left, right=right):
            return L.join(sub(left), sub(right))
        case A.Union(left=left, right=right):
            return L.union(sub(left), sub(right))
        case A.LeftJoin(left=left, right=right, condition=condition):
            keep = None if condition is None else L.keeper(condition, terms, time_unit,
                                                            exists=exists_test(graph, terms, time_unit, other))
            return L.left_join(sub(left), sub(right), keep)
        case A.Filter(condition=condition, inner=inner):
            return L.filter_rel(sub(inner), condition, terms, time_unit,
                                exists=exists_test(graph, terms, time_unit, other))
        case A.Minus(left=left, right=right):
            return L.minus(sub(left), sub(right))
        case A.SubSelect(form=form, modifiers=modifiers):
            return _sub_select(form, modifiers, sub(form.inner), terms, time_unit)
        case A.Values(variables=variables, rows=rows):   # its terms decode: the query's constants
            return L.Rel.of([var_column(v.name) for v in variables],
                            {tuple(None if t is None else term_id(t) for t in row) + ALWAYS for row in rows})
    raise TypeError(f"{type(node).__name__} is not evaluated on the driver (refusal)")


def sub_select_supported(node: A.SubSelect) -> bool:
    """Whether ``pattern_rows`` evaluates the sub-query ``node`` here: its pattern projected, no
    BIND or aggregate (their computed terms would not decode), no ORDER BY over a variable it drops."""
    if isinstance(node.form.inner, (A.Extend, A.Aggregate, A.GroupCover)):
        return False
    return node.modifiers is None or node.modifiers.reads_only({v.name for v in node.form.variables})


def _sub_select(form: A.Project, modifiers, rows: L.Rel, terms: Callable, time_unit: str) -> L.Rel:
    """A sub-query's rows: ``rows`` projected on its variables, distinct, then ordered and sliced by
    its ORDER BY / LIMIT / OFFSET (``cep.engines.driver.modifiers``, over the projected terms)."""
    columns = [var_column(v.name) for v in form.variables]
    at = {c: i for i, c in enumerate(rows.vars)}
    projected = {tuple(r[at[c]] if c in at else None for c in columns) + r[-4:] for r in rows.rows}
    if modifiers is not None:
        decoded = terms({v for r in projected for v in r[:-4] if v is not None})
        by_terms = {(0, *[None if v is None else decoded[v] for v in r[:-4]], r[-4], r[-3]): r for r in projected}
        kept = M.apply(modifiers, [v.name for v in form.variables], sorted(by_terms, key=_term_order), time_unit)
        projected = {by_terms[r] for r in kept}
    return L.Rel.of(columns, projected)


def _term_order(row) -> tuple:
    return tuple((0, "") if v is None else (1, v) for v in row[1:-2]) + row[-2:]


@dataclass(frozen=True)
class TripleMatch:
    """A triple pattern compiled for id triples: its constants by id (``fixed``, by position), a
    repeated variable within the triple (``same``), the position of each variable's first
    occurrence (``first``), ``columns`` the variables' columns in that order."""

    fixed: dict
    same: tuple
    first: tuple
    columns: tuple

    @staticmethod
    def of(tp: A.TriplePattern) -> "TripleMatch":
        fixed, same, first = {}, [], {}
        for position, part in enumerate((tp.s, tp.p, tp.o)):
            if not isinstance(part, A.Var):
                fixed[position] = term_id(part)
            elif part.name in first:
                same.append((position, first[part.name]))
            else:
                first[part.name] = position
        return TripleMatch(fixed, tuple(same), tuple(first.values()), tuple(var_column(n) for n in first))

    @property
    def predicate(self) -> int | None:
        """The constant predicate's id (None: a variable)."""
        return self.fixed.get(1)

    def values(self, triple) -> tuple | None:
        """The variables' values where ``triple`` matches, else None."""
        if all(triple[i] == v for i, v in self.fixed.items()) and all(triple[i] == triple[j] for i, j in self.same):
            return tuple(triple[i] for i in self.first)
        return None


def _triples(tp: A.TriplePattern, graph: StaticGraph) -> L.Rel:
    """One triple pattern's matches: constants by id, a repeated variable within the triple."""
    match = TripleMatch.of(tp)
    found = (match.values(triple) for triple in graph.candidates(match.predicate))
    return L.Rel.of(match.columns, {values + ALWAYS for values in found if values is not None})


def _path(tp: A.PathPattern, graph: StaticGraph) -> L.Rel:
    """A property path's pairs (``paths.local.evaluate``), as ``path_part`` on Spark: a constant end
    given to the evaluation, ``?x path ?x`` the pairs with equal ends."""
    s_var, o_var = isinstance(tp.s, A.Var), isinstance(tp.o, A.Var)
    starts, ends = evaluate(graph.path_graph(), tp.path, start=None if s_var else tp.s, end=None if o_var else tp.o)
    pairs = zip(starts.tolist(), ends.tolist())
    if s_var and o_var and tp.s == tp.o:
        return L.Rel.of([var_column(tp.s.name)], {(a,) + ALWAYS for a, b in pairs if a == b})
    names = ([var_column(tp.s.name)] if s_var else []) + ([var_column(tp.o.name)] if o_var else [])
    return L.Rel.of(names, {(a,) * s_var + (b,) * o_var + ALWAYS for a, b in pairs})
