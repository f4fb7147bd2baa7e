"""The CQELS-CEP algebra: a closed set of frozen dataclasses, built by smart constructors.

This is what the runtimes see (``cep.engines.reference``, ``cep.engines.spark.evaluate.evaluate``); they never see syntax trees.
``cep.lowering`` builds it from a syntax tree (``cep.syntax.tree``). Terms are N-Triples strings, exactly as
``paths.algebra.Term``; variables are :class:`Var` (name without ``?``).

Sources: Dao-Tran & Le-Phuoc, "Towards Enriching CQELS with Complex Event Processing and Path
Navigation" (HiDeSt 2015), ``../shared/papers/002_...``: §3.2 (the model Q = (V, P, D, EC)), §4.1
(windows), §4.2 (operators on mappings with intervals), §4.3 equations (1)-(17); C-SPARQL (Barbieri
et al.) for ``RANGE .. STEP`` / ``TUMBLING`` / ``TRIPLES n`` windows; DESIGN.md fixes the readings.

A *mapping with interval* is ⟨μ, [t1, t2]⟩, t1 ≤ t2. Meaning of each pattern node at time t
(μ1 ~ μ2: compatible; DESIGN.md "Operators on sets of mappings with intervals"):

==================================  ==============================================================
node                                ⟦node, t⟧
==================================  ==============================================================
``BGP(ps)``                         inside a window: {⟨μ, [t1,t2]⟩ | dom(μ) = var(ps), μ(ps) ⊆ g,
                                    ⟨g, [t1,t2]⟩ ∈ w(S, t)} — ONE stream item matches the whole
                                    BGP (eq. 16); over the background: SPARQL BGP matching (eq. 17)
``Join(l, r)``                      JOIN: ⟨μ1 ∪ μ2, [max(t1,t3), min(t2,t4)]⟩, μ1 ~ μ2, non-empty
                                    intersection (§4.2; eq. 1, 2)
``Union(l, r)``                     OR: ⟦l⟧ ∪ ⟦r⟧ (§4.2)
``LeftJoin(l, r, c)``               OPTIONAL (SPARQL 1.1 §18.5 LeftJoin), background only; the
                                    intervals of a kept pair intersect as in JOIN
``Filter(c, p)``                    the mappings of ⟦p⟧ for which ``c`` is true (SPARQL §17)
``Sequence(l, r)``                  SEQ: ⟨μ1 ∪ μ2, [t1, t4]⟩, μ1 ~ μ2, t2 < t3 (eq. 3, 4, 10, 11)
``SeqWithout(l, n, r)``             SEQ_WO: ⟨μ1 ∪ μ3, [t1, t6]⟩, μ1 ~ μ3, t2 < t5, and no ⟨μ2,[t3,t4]⟩
                                    ∈ ⟦n⟧ with μ2 ~ μ1 ∪ μ3, [t3,t4] ⊆ [t2,t5] (eq. 5, 8, 12, 15)
``NoHead(n, r)``                    NO_HEAD: ⟨μ2,[t3,t4]⟩ ∈ ⟦r⟧ with no ⟨μ1,[t1,t2]⟩ ∈ ⟦n⟧,
                                    μ1 ~ μ2, t2 < t3 (eq. 6, 13)
``NoTail(l, n)``                    NO_TAIL(⟦l⟧, ⟦n⟧, t): ⟨μ1,[t1,t2]⟩ ∈ ⟦l⟧ with no ⟨μ2,[t3,t4]⟩ ∈
                                    ⟦n⟧, μ1 ~ μ2, t2 < t3, t4 ≤ t (eq. 7, 14)
``StreamPattern(w, s, win, p)``     ⟦p⟧ over w_win(S_s, t) (eq. 9, 16)
``Background(g, p)``                ⟦p⟧ over the static graph g with interval [t1, t], D unchanged
                                    since t1 (eq. 17)
``Project(vs, distinct, p)``        {⟨μ|V, [t1,t2]⟩ | ⟨μ,[t1,t2]⟩ ∈ ⟦p⟧} (eq. 1)
``Construct(template, p)``          the template instantiated with each mapping of ⟦p⟧
``Occurrences(p)``                  EP-SPARQL (000_... §4.2): ⟦p⟧ over the occurrences of every
                                    stream given, ended by t; a BGP there matches each triple in
                                    any occurrence, ⟨μ, [min t_i, max t'_i]⟩
``CoverJoin(l, r)``                 EP Join: ⟨μ1 ∪ μ2, [min(t1,t3), max(t2,t4)]⟩, μ1 ~ μ2
``EqJoin(l, r)``                    EQUALS: ⟨μ1 ∪ μ2, [t1, t2]⟩, μ1 ~ μ2, [t1,t2] = [t3,t4]
``CoverLeftJoin(l, o, c)``          EP OPTIONAL: covered pairs with t4 < t2 and c, else ⟨μ1,[t1,t2]⟩
``SeqRightJoin(o, r, c)``           OPTIONALSEQ: covered pairs with t4 < t1 (o first) and c, else r's
``EqLeftJoin(l, o, c)``             EQUALSOPTIONAL: covered pairs with equal intervals and c, else l's
``Snapshot(g, windows, p, every)``  C-SPARQL (003_... §3.2): ⟦p⟧ over ONE graph, the background g
                                    merged with every window's triples at the evaluation instant
                                    c (``evaluation_instant``); every mapping has interval [c, c]
``GraphPattern(s, p)``              C-SPARQL's GRAPH <s> { p }: p over stream s's window alone
``Aggregate(p, specs)``             C-SPARQL's AGGREGATE (§3.1): each mapping of ⟦p⟧ extended with
                                    v_i = f_i over the mappings that agree with it on G_i
``GroupCover(p, G, specs)``         SPARQL GROUP BY over event clauses: one answer per group of
                                    ⟦p⟧ on G, its aggregates, over [min t1, max t2] of its members
``Minus(l, r)``                     SPARQL 1.1 MINUS: ⟦l⟧'s mappings with no compatible ⟦r⟧ mapping
                                    sharing a variable (and an intersecting interval)
``Values(vs, rows)``                SPARQL 1.1 VALUES: one mapping per row, the scope's interval
``NamedGraph(g, p, graphs)``        SPARQL's GRAPH <g> / ?g { p } over the background's named graphs
``Extend(p, v, e)``                 BIND(e AS ?v) / SELECT (e AS ?v): ?v bound to e's term (errors: unbound)
``SubSelect(form, modifiers)``      a sub-query { SELECT ... }: the projection, ordered and sliced
``Exists(p)`` (an expression)       FILTER [NOT] EXISTS { p }: whether substitute(p, μ) has a
                                    solution in the FILTER's scope (SPARQL 1.1 §18.6)
==================================  ==============================================================

SeqJoin (EP-SPARQL's SEQ) is ``Sequence``: its definition, compatible pairs with t2 < t3 over
[t1, t4], is SEQ's. FILTER expressions may call getDURATION(), getSTARTTIME(), getENDTIME()
(``IntervalFn``), which read the interval of the mapping they are evaluated on.

A query's pattern is ``JOIN(EC_1, ..., EC_m, Background(D, P))`` (eq. 1, 2), right-associated.
``sequence`` builds a sequence with at most one negated element exactly per eq. (3)-(8) and
(10)-(15); it is the one place where those equations are written down.

``str(node)`` is a readable algebra form (``SEQ(...)``, ``NO_TAIL(...)``, ``{?v <p> ?s}``); it is
for people and error messages, not parsed back.

The FILTER expressions (``Var``, ``Const``, ``Compare``, ...) are in ``cep.algebra.expressions`` and the
windows (``Duration``, ``Range``, ...) in ``cep.algebra.windows``; this module re-exports them, so
``cep.algebra.patterns`` is the whole algebra to its users.
"""
from __future__ import annotations

import typing as _t
from dataclasses import dataclass, field
from typing import Iterator

from cep.algebra.expressions import (ARITH_OPS, BUILTINS, COMPARE_OPS, EXPR_TYPES, And, Arith, Bound, Builtin,
                             Compare, Const,
                             Datatype, Exists, Expr, INTERVAL_FUNCTIONS, IntervalFn, Lang, Neg, Not, Or,
                             PatternTimestamp, Regex, SOLUTION_BUILTINS, Str, TERM_BUILTINS, Timestamp, Var, check_expr, check_term,
                             expr_variables, subexpressions, uses_interval, uses_timestamp)
from cep.algebra.windows import (BOUNDS, CSPARQL_ENGINE_WINDOWS, EMPTY_WINDOWS, LEFT_CLOSED, REPORT, RIGHT_CLOSED,
                                 RSEPQL_WINDOWS, SKIP, TIME_UNITS, WINDOW_TYPES, All, Duration, Now, Range, Triples,
                                 Window, WindowConvention, WindowConventionError)
from paths import algebra as PA
from paths.algebra import Term, is_term

__all__ = [
    "Term", "Var", "is_term",
    "TriplePattern", "PathPattern", "BGP", "Join", "Union", "LeftJoin", "Filter", "Sequence",
    "SeqWithout", "NoHead", "NoTail", "StreamPattern", "Background", "Project", "Construct",
    "Occurrences", "CoverJoin", "EqJoin", "CoverLeftJoin", "SeqRightJoin", "EqLeftJoin",
    "EventPattern", "FirstEvent", "LastEvent", "EventSeq", "Match", "EVENT_TYPES", "POLICIES",
    "CONSUMING_POLICIES", "is_rsepql", "event_patterns", "rsep_windows", "WindowGraph",
    "Minus", "Values", "SubSelect", "Exists", "NamedGraph", "Extend",
    "Snapshot", "GraphPattern", "Aggregate", "GroupCover", "AggregateSpec", "AGGREGATES", "Timestamp",
    "PatternTimestamp",
    "uses_timestamp", "subexpressions", "is_csparql", "snapshots", "window_close",
    "Builtin", "BUILTINS", "TERM_BUILTINS", "SOLUTION_BUILTINS", "IntervalFn", "INTERVAL_FUNCTIONS", "uses_interval", "is_epsparql", "check_expr", "check_term", "check_condition",
    "Duration", "Range", "Triples", "Now", "All", "Window",
    "WindowConvention", "WindowConventionError", "RSEPQL_WINDOWS", "CSPARQL_ENGINE_WINDOWS", "BOUNDS",
    "EMPTY_WINDOWS", "LEFT_CLOSED", "RIGHT_CLOSED", "REPORT", "SKIP", "check_window_convention",
    "Const", "Compare", "Arith", "And", "Or", "Not", "Neg", "Bound", "Regex", "Str", "Lang",
    "Datatype", "Expr", "EXPR_TYPES", "COMPARE_OPS", "ARITH_OPS",
    "Query", "Pattern", "PATTERN_TYPES", "Form", "OrderKey", "Modifiers", "TIME_UNITS",
    "triple", "path_pattern", "bgp", "join", "union", "left_join", "sequence", "seq", "project",
    "construct",
    "children", "walk", "variables", "constants", "leaves", "expr_variables", "event_clauses", "background_patterns",
    "stream_patterns", "graph_name", "stream_path_refusal", "contains", "per_instant_only",
]

# --- checks (Var, the expressions and the windows live in cep.algebra.expressions and cep.algebra.windows) -----

def check_condition(value: object, what: str) -> None:
    """TypeError unless ``value`` is an expression node whose EXISTS patterns are pattern nodes."""
    check_expr(value, what)
    for e in subexpressions(value):
        if isinstance(e, Exists) and not isinstance(e.pattern, PATTERN_TYPES):
            raise TypeError(f"{what}: EXISTS must hold a pattern node, got {e.pattern!r}")


def _check_var_or_term(value: object, what: str) -> None:
    if not isinstance(value, Var):
        check_term(value, what)


def _check_iri(value: object, what: str) -> None:
    if not (isinstance(value, str) and value.startswith("<") and value.endswith(">")
            and len(value) > 2):
        raise TypeError(f"{what} must be an IRI in N-Triples form <...>, got {value!r}")


def _check_graph(graph: object, what: str) -> None:
    """A background's default graph (``Background.graph``, ``Snapshot.graph``): None (the default
    graph given), an IRI (one FROM), a tuple of two or more IRIs (several FROMs: their merge) or
    () (the empty graph: FROM NAMED without FROM, SPARQL 1.1 §13.2)."""
    if isinstance(graph, tuple):
        if len(graph) == 1:
            raise ValueError(f"{what}: one graph is an IRI, not a tuple, got {graph!r}")
        for g in graph:
            _check_iri(g, f"{what}[]")
    elif graph is not None:
        _check_iri(graph, what)


def graph_name(graph) -> str:
    """How ``_check_graph``'s forms print."""
    return ("default" if graph is None else "empty" if graph == () else
            " + ".join(graph) if isinstance(graph, tuple) else graph)


# --- patterns ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class TriplePattern:
    """``s p o``, each a Var or an N-Triples term (SPARQL 1.1 §18.1.4)."""

    s: "Var | Term"
    p: "Var | Term"
    o: "Var | Term"

    def __post_init__(self) -> None:
        _check_var_or_term(self.s, "TriplePattern.s")
        _check_var_or_term(self.p, "TriplePattern.p")
        _check_var_or_term(self.o, "TriplePattern.o")

    def variables(self) -> frozenset[Var]:
        return frozenset(x for x in (self.s, self.p, self.o) if isinstance(x, Var))

    def __str__(self) -> str:
        return f"{self.s} {self.p} {self.o}"


@dataclass(frozen=True)
class PathPattern:
    """``s path o`` with a non-trivial ``paths.algebra`` path (an extended triple pattern, §2.3);
    ``s :p o`` is a TriplePattern (use :func:`path_pattern`, which makes that choice)."""

    s: "Var | Term"
    path: PA.Path
    o: "Var | Term"

    def __post_init__(self) -> None:
        _check_var_or_term(self.s, "PathPattern.s")
        _check_var_or_term(self.o, "PathPattern.o")
        if not isinstance(self.path, PA.NODE_TYPES):
            raise TypeError(f"PathPattern.path must be a paths.algebra Path, got {self.path!r}")

    def variables(self) -> frozenset[Var]:
        return frozenset(x for x in (self.s, self.o) if isinstance(x, Var))

    def __str__(self) -> str:
        return f"{self.s} {self.path} {self.o}"


@dataclass(frozen=True)
class BGP:
    """A basic (extended) graph pattern: a set of triple / path patterns, kept in written order,
    without duplicates (use :func:`bgp`). ``BGP(())`` is the empty pattern (one empty mapping)."""

    patterns: tuple["TriplePattern | PathPattern", ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.patterns, tuple):
            raise TypeError(f"BGP.patterns must be a tuple, got {self.patterns!r}")
        for item in self.patterns:
            if not isinstance(item, (TriplePattern, PathPattern)):
                raise TypeError(f"BGP.patterns[] must be TriplePattern or PathPattern, "
                                f"got {item!r}")

    def __str__(self) -> str:
        return "{" + " . ".join(str(item) for item in self.patterns) + "}"


def _check_window_use(node) -> None:
    """The window IRI ``name``, the ``stream`` IRI and the ``window`` of a node that reads a window
    (``StreamPattern``, ``EventPattern``, ``WindowGraph``)."""
    kind = type(node).__name__
    _check_iri(node.name, f"{kind}.name")
    _check_iri(node.stream, f"{kind}.stream")
    if not isinstance(node.window, WINDOW_TYPES):
        raise TypeError(f"{kind}.window must be Range/Triples/Now/All, got {node.window!r}")


def _check_pattern(value: object, what: str) -> None:
    if not isinstance(value, PATTERN_TYPES):
        raise TypeError(f"{what} must be a pattern node, got {value!r}")


@dataclass(frozen=True)
class Join:
    """JOIN(Ω1, Ω2): compatible mappings, intervals intersected (§4.2; eq. 1, 2)."""

    left: "Pattern"
    right: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.left, "Join.left")
        _check_pattern(self.right, "Join.right")

    def __str__(self) -> str:
        return f"JOIN({self.left}, {self.right})"


@dataclass(frozen=True)
class Union:
    """OR(Ω1, Ω2) = Ω1 ∪ Ω2 (§4.2; SPARQL UNION)."""

    left: "Pattern"
    right: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.left, "Union.left")
        _check_pattern(self.right, "Union.right")

    def __str__(self) -> str:
        return f"OR({self.left}, {self.right})"


@dataclass(frozen=True)
class LeftJoin:
    """OPTIONAL (SPARQL 1.1 §18.5 LeftJoin(Ω1, Ω2, expr)); background patterns only."""

    left: "Pattern"
    right: "Pattern"
    condition: "Expr | None" = None

    def __post_init__(self) -> None:
        _check_pattern(self.left, "LeftJoin.left")
        _check_pattern(self.right, "LeftJoin.right")
        if self.condition is not None:
            check_condition(self.condition, "LeftJoin.condition")

    def __str__(self) -> str:
        extra = "" if self.condition is None else f", {self.condition}"
        return f"LEFTJOIN({self.left}, {self.right}{extra})"


@dataclass(frozen=True)
class Filter:
    """FILTER: the mappings of ``inner`` whose ``condition`` is true (SPARQL 1.1 §18.5)."""

    condition: Expr
    inner: "Pattern"

    def __post_init__(self) -> None:
        check_condition(self.condition, "Filter.condition")
        _check_pattern(self.inner, "Filter.inner")

    def __str__(self) -> str:
        return f"FILTER({self.condition}, {self.inner})"


@dataclass(frozen=True)
class Sequence:
    """SEQ(Ω1, Ω2): ⟨μ1 ∪ μ2, [t1, t4]⟩ with μ1 ~ μ2 and t2 < t3 (§4.2; eq. 3, 4, 10, 11)."""

    left: "Pattern"
    right: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.left, "Sequence.left")
        _check_pattern(self.right, "Sequence.right")

    def __str__(self) -> str:
        return f"SEQ({self.left}, {self.right})"


@dataclass(frozen=True)
class SeqWithout:
    """SEQ_WO(Ω1, Ω2, Ω3): sequences of Ω1 then Ω3 with no compatible Ω2 mapping inside
    [t2, t5] (§4.2 with DESIGN.md's μ3 reading; eq. 5, 8, 12, 15)."""

    left: "Pattern"
    negated: "Pattern"
    right: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.left, "SeqWithout.left")
        _check_pattern(self.negated, "SeqWithout.negated")
        _check_pattern(self.right, "SeqWithout.right")

    def __str__(self) -> str:
        return f"SEQ_WO({self.left}, {self.negated}, {self.right})"


@dataclass(frozen=True)
class NoHead:
    """NO_HEAD(Ω1, Ω2): mappings of Ω2 with no compatible earlier Ω1 mapping (§4.2; eq. 6, 13)."""

    negated: "Pattern"
    right: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.negated, "NoHead.negated")
        _check_pattern(self.right, "NoHead.right")

    def __str__(self) -> str:
        return f"NO_HEAD({self.negated}, {self.right})"


@dataclass(frozen=True)
class NoTail:
    """NO_TAIL(Ω1, Ω2, t): mappings of Ω1 with no compatible later Ω2 mapping ending by the
    evaluation time t (§4.2; eq. 7, 14)."""

    left: "Pattern"
    negated: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.left, "NoTail.left")
        _check_pattern(self.negated, "NoTail.negated")

    def __str__(self) -> str:
        return f"NO_TAIL({self.left}, {self.negated}, t)"


@dataclass(frozen=True)
class StreamPattern:
    """A window specification W = (s, ω, TSP) (§3.2) evaluated as ⟦TSP, t⟧ over w_ω(S_s, t)
    (eq. 9, 16). ``name`` is the window IRI term (``:W``), ``stream`` the stream IRI term;
    ``pattern`` is a BGP, a Sequence/SeqWithout/NoHead/NoTail tree of BGPs, or a Filter of those.
    A BGP in a window matches inside ONE stream item (eq. 16)."""

    name: Term
    stream: Term
    window: Window
    pattern: "Pattern"

    def __post_init__(self) -> None:
        _check_window_use(self)
        _check_pattern(self.pattern, "StreamPattern.pattern")

    def __str__(self) -> str:
        return f"WINDOW {self.name} ON {self.stream} {self.window} {self.pattern}"


@dataclass(frozen=True)
class Background:
    """⟦P, t⟧_D: ``pattern`` over the static graph ``graph`` (an IRI term, or None for the default
    graph; a tuple of IRIs: their merge, SPARQL's several FROMs; (): the empty graph, a query with
    FROM NAMED and no FROM), every mapping with interval [t1, t], D unchanged since t1 (eq. 17)."""

    graph: "Term | tuple[Term, ...] | None"
    pattern: "Pattern"

    def __post_init__(self) -> None:
        _check_graph(self.graph, "Background.graph")
        _check_pattern(self.pattern, "Background.pattern")

    def __str__(self) -> str:
        return f"BACKGROUND({graph_name(self.graph)}, {self.pattern})"


@dataclass(frozen=True)
class NamedGraph:
    """SPARQL's ``GRAPH g { P }`` over the background's named graphs (§13.3, §18.5 Graph): ``pattern``
    over the named graph ``name`` (an IRI; not given: no solution), or, ``name`` a variable, the
    union over the named graphs of ⟦P⟧ over each, with the variable bound to the graph's IRI. The
    named graphs are ``graphs`` (the query's FROM NAMED list) or, None, every graph the caller
    gave besides the default one. Mappings keep the scope's interval."""

    name: "Term | Var"
    pattern: "Pattern"
    graphs: "tuple[Term, ...] | None" = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, Var):
            _check_iri(self.name, "NamedGraph.name")
        _check_pattern(self.pattern, "NamedGraph.pattern")
        if self.graphs is not None:
            if not isinstance(self.graphs, tuple):
                raise TypeError(f"NamedGraph.graphs must be a tuple of IRIs or None, got {self.graphs!r}")
            for g in self.graphs:
                _check_iri(g, "NamedGraph.graphs[]")

    def __str__(self) -> str:
        return f"GRAPH {self.name} {{{self.pattern}}}"


# --- EP-SPARQL (Anicic et al., WWW 2011, ../shared/papers/000_...: §4.2) ---------------------------
# A solution is ⟨μ, tα, tω⟩; combining two compatible solutions gives μ ∪ μ' with the interval
# that covers both, [min(tα, t'α), max(tω, t'ω)]. These operators occur only under Occurrences.

@dataclass(frozen=True)
class Occurrences:
    """⟦P⟧ over the RDF stream as EP-SPARQL defines it (§4.2): the triple occurrences
    ⟨⟨s,p,o⟩, t, t'⟩ of every stream given (merged), those ended by the evaluation time (t' ≤ t).
    Inside, a BGP matches each triple pattern in ANY occurrence: ⟨μ, min(t_i), max(t'_i)⟩; and
    the pattern is built of CoverJoin, Union, Sequence (SeqJoin), EqJoin, CoverLeftJoin,
    SeqRightJoin, EqLeftJoin and Filter (whose expressions may call getDURATION() ...)."""

    pattern: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.pattern, "Occurrences.pattern")

    def __str__(self) -> str:
        return f"OCCURRENCES({self.pattern})"


@dataclass(frozen=True)
class CoverJoin:
    """Join(Ψ, Ψ') of EP-SPARQL (§4.2): every compatible pair, with the interval covering both
    (juxtaposed patterns; not CQELS's intersecting JOIN)."""

    left: "Pattern"
    right: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.left, "CoverJoin.left")
        _check_pattern(self.right, "CoverJoin.right")

    def __str__(self) -> str:
        return f"COVERJOIN({self.left}, {self.right})"


@dataclass(frozen=True)
class EqJoin:
    """``P1 EQUALS P2``: EqJoin(Ψ, Ψ') (§4.2): compatible pairs with tα = t'α and tω = t'ω."""

    left: "Pattern"
    right: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.left, "EqJoin.left")
        _check_pattern(self.right, "EqJoin.right")

    def __str__(self) -> str:
        return f"EQJOIN({self.left}, {self.right})"


def _check_condition(condition, what: str) -> None:
    if condition is not None:
        check_condition(condition, what)


@dataclass(frozen=True)
class CoverLeftJoin:
    """``P1 OPTIONAL { P2 FILTER F }`` in EP-SPARQL: LeftJoin(Ψ, Ψ', F) (§4.2): a pair joins when
    compatible, F holds and the optional part ends before the mandatory one (t'ω < tω); a
    mandatory solution with no such pair is kept alone."""

    left: "Pattern"
    optional: "Pattern"
    condition: "Expr | None" = None

    def __post_init__(self) -> None:
        _check_pattern(self.left, "CoverLeftJoin.left")
        _check_pattern(self.optional, "CoverLeftJoin.optional")
        _check_condition(self.condition, "CoverLeftJoin.condition")

    def __str__(self) -> str:
        extra = "" if self.condition is None else f", {self.condition}"
        return f"LEFTJOIN_EP({self.left}, {self.optional}{extra})"


@dataclass(frozen=True)
class SeqRightJoin:
    """``P1 OPTIONALSEQ P2``: SeqRightJoin(Ψ', Ψ, F) (§4.2): P1 optional and before, P2
    mandatory: Filter(F, SeqJoin(Ψ', Ψ)) plus each Ψ solution with no compatible earlier Ψ'
    solution (t'ω < tα) for which F holds."""

    optional: "Pattern"
    right: "Pattern"
    condition: "Expr | None" = None

    def __post_init__(self) -> None:
        _check_pattern(self.optional, "SeqRightJoin.optional")
        _check_pattern(self.right, "SeqRightJoin.right")
        _check_condition(self.condition, "SeqRightJoin.condition")

    def __str__(self) -> str:
        extra = "" if self.condition is None else f", {self.condition}"
        return f"SEQRIGHTJOIN({self.optional}, {self.right}{extra})"


@dataclass(frozen=True)
class EqLeftJoin:
    """``P1 EQUALSOPTIONAL P2``: EqLeftJoin(Ψ, Ψ', F) (§4.2): Filter(F, EqJoin(Ψ, Ψ')) plus each
    Ψ solution with no compatible Ψ' solution of the same interval for which F holds."""

    left: "Pattern"
    optional: "Pattern"
    condition: "Expr | None" = None

    def __post_init__(self) -> None:
        _check_pattern(self.left, "EqLeftJoin.left")
        _check_pattern(self.optional, "EqLeftJoin.optional")
        _check_condition(self.condition, "EqLeftJoin.condition")

    def __str__(self) -> str:
        extra = "" if self.condition is None else f", {self.condition}"
        return f"EQLEFTJOIN({self.left}, {self.optional}{extra})"


# --- RSEP-QL (Dell'Aglio et al., EKAW 2016, ../shared/papers/001_...: §3.3, §4.2-4.4) ----------------
# Event patterns are evaluated into event mappings (μ, t1, t2) under an active window (a bound on
# the times of the stream items used); MATCH turns them into a graph pattern.

#: SEQ selection policies (§4.3): unrestricted (eq. 7), naive (eq. 9, C-SPARQL's timestamp()),
#: chronological (eq. 10) and recent (eq. 11); the last two consume what they use (§4.4)
POLICIES = ("unrestricted", "naive", "chronological", "recent")
CONSUMING_POLICIES = ("chronological", "recent")


@dataclass(frozen=True)
class EventPattern:
    """``EVENT w P`` (a basic event pattern, §3.3, §4.2): for each stream item (G_k, t_k) of window
    ``name`` (over ``stream``, ``window``) inside the active window, each μ ∈ ⟦P⟧_{G_k} gives the
    event mapping (μ, t_k, t_k). RSEP-QL's time-based window W^τ(α, β) holds the items with
    t' − α < t_k ≤ t', t' = ⌊t/β⌋·β (``Range``); ``All`` is the landmark window."""

    name: Term
    stream: Term
    window: Window
    pattern: BGP

    def __post_init__(self) -> None:
        _check_window_use(self)
        if not isinstance(self.pattern, BGP):
            raise TypeError(f"EventPattern.pattern must be a BGP, got {self.pattern!r}")

    def __str__(self) -> str:
        return f"EVENT {self.name} {self.pattern}"


def _check_event(value: object, what: str) -> None:
    if not isinstance(value, EVENT_TYPES):
        raise TypeError(f"{what} must be an event pattern, got {value!r}")


@dataclass(frozen=True)
class FirstEvent:
    """``FIRST E``: the event mappings of E that no other precedes (≺: by end, then start)."""

    inner: "EventNode"

    def __post_init__(self) -> None:
        _check_event(self.inner, "FirstEvent.inner")

    def __str__(self) -> str:
        return f"FIRST({self.inner})"


@dataclass(frozen=True)
class LastEvent:
    """``LAST E``: the event mappings of E that no other follows."""

    inner: "EventNode"

    def __post_init__(self) -> None:
        _check_event(self.inner, "LastEvent.inner")

    def __str__(self) -> str:
        return f"LAST({self.inner})"


@dataclass(frozen=True)
class EventSeq:
    """``E1 SEQ E2`` under a selection ``policy`` (§4.2 eq. 7; §4.3 eq. 9-11): for each event
    (μ2, t3, t4) of E2, the events (μ1, t1, t2) of μ2(E1) within the active window cut at t3 − 1,
    giving (μ1 ∪ μ2, t1, t4); naive pairs only LAST E1 with LAST E2; chronological keeps, per
    E2 event, the first such E1 event, and only the first E2 event after it; recent the last."""

    left: "EventNode"
    right: "EventNode"
    policy: str = "unrestricted"

    def __post_init__(self) -> None:
        _check_event(self.left, "EventSeq.left")
        _check_event(self.right, "EventSeq.right")
        if self.policy not in POLICIES:
            raise ValueError(f"EventSeq.policy must be one of {POLICIES}, got {self.policy!r}")

    def __str__(self) -> str:
        tag = "" if self.policy == "unrestricted" else f"[{self.policy}]"
        return f"({self.left} SEQ{tag} {self.right})"


EventNode = _t.Union[EventPattern, FirstEvent, LastEvent, EventSeq]
EVENT_TYPES = (EventPattern, FirstEvent, LastEvent, EventSeq)


@dataclass(frozen=True)
class Match:
    """``MATCH E`` (§4.2): the event mappings of E, with their (t1, t2), as a graph pattern. With a
    consuming ``policy`` (chronological, recent; §4.4) the stream triples used by an answer are
    not used again by later evaluations of the query."""

    inner: EventNode
    policy: str = "unrestricted"

    def __post_init__(self) -> None:
        _check_event(self.inner, "Match.inner")
        if self.policy not in POLICIES:
            raise ValueError(f"Match.policy must be one of {POLICIES}, got {self.policy!r}")

    def __str__(self) -> str:
        return f"MATCH[{self.policy}]({self.inner})"


@dataclass(frozen=True)
class WindowGraph:
    """RSEP-QL's window graph pattern ``WINDOW w P`` (§3.3, §4.1): P evaluated as SPARQL over the
    merged graph of the items window ``name`` (over ``stream``, ``window``: W^τ(α, β) as for
    ``EventPattern``) holds at t — "similarly to the SPARQL GRAPH operator". Its solution mappings
    carry no time: [MIN_TIME, t], as a background pattern's (eq. 17), so they join with MATCH's
    events as the background does."""

    name: Term
    stream: Term
    window: Window
    pattern: "Pattern"

    def __post_init__(self) -> None:
        _check_window_use(self)
        _check_pattern(self.pattern, "WindowGraph.pattern")

    def __str__(self) -> str:
        return f"WINDOW {self.name} {self.window} {{{self.pattern}}}"


Pattern = _t.Union[BGP, Join, Union, LeftJoin, Filter, Sequence, SeqWithout, NoHead, NoTail,
                StreamPattern, Background, Occurrences, CoverJoin, EqJoin, CoverLeftJoin,
                SeqRightJoin, EqLeftJoin, Match, WindowGraph]
# --- C-SPARQL (Barbieri et al., WWW 2009, ../shared/papers/003_...: §2-3) ---------------------------

@dataclass(frozen=True)
class Snapshot:
    """C-SPARQL's WHERE (§3.2): ``pattern`` evaluated as SPARQL over ONE RDF graph — the background
    graph ``graph`` (None: the default graph) merged with the triples of every window of
    ``windows`` ((stream IRI, window) pairs) at the evaluation instant c. A logical window holds
    the triples with c' − ρ < τ ≤ c' (c' = its last close ≤ c: ⌊c/σ⌋σ with STEP σ, TUMBLING σ = ρ,
    else c); ``TRIPLES n`` the last n triples with τ ≤ c; ``ALL`` every triple with τ ≤ c. Every
    mapping carries [c, c]. ``every``: COMPUTED EVERY (§2.4), which fixes the instants; see
    ``evaluation_instant``. Inside, the pattern is built of BGP, Join, Union, LeftJoin and Filter;
    FILTERs may call timestamp(). ``named``: the streams of ``windows`` declared ``FROM NAMED
    STREAM`` (§2.3): their windows are named graphs, read with GRAPH, not merged into the one
    graph. ``graph`` takes ``Background.graph``'s forms: several FROMs are merged, () is the empty
    graph (FROM NAMED without FROM)."""

    graph: "Term | tuple[Term, ...] | None"
    windows: tuple
    pattern: "Pattern"
    every: Duration | None = None
    named: tuple = ()

    def __post_init__(self) -> None:
        _check_graph(self.graph, "Snapshot.graph")
        if not isinstance(self.windows, tuple):
            raise TypeError(f"Snapshot.windows must be a tuple of (stream IRI, window), got {self.windows!r}")
        for pair in self.windows:
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise TypeError(f"Snapshot.windows holds (stream IRI, window) pairs, got {pair!r}")
            _check_iri(pair[0], "Snapshot stream")
            if not isinstance(pair[1], WINDOW_TYPES):
                raise TypeError(f"Snapshot window must be Range/Triples/Now/All, got {pair[1]!r}")
        if self.every is not None and not isinstance(self.every, Duration):
            raise TypeError(f"Snapshot.every must be a Duration, got {self.every!r}")
        if not isinstance(self.named, tuple) or not set(self.named) <= {s for s, _w in self.windows}:
            raise ValueError(f"Snapshot.named must be a tuple of the windows' streams, got {self.named!r}")
        _check_pattern(self.pattern, "Snapshot.pattern")

    def instant(self, t: int, time_unit: str = "ms", convention: WindowConvention = RSEPQL_WINDOWS) -> int:
        """The evaluation instant c the answer at t is that of (C-SPARQL reports on window close,
        §2.3 "the query result does not change during the slide interval"): the last multiple of
        ``every`` ≤ t; without it, the latest last close ≤ t of the windows (a window without STEP
        or TUMBLING, a TRIPLES, NOW or ALL window closes at every instant); t without windows.
        ``convention``'s start t0 shifts the multiples to t0 + k·σ (``WindowConvention``)."""
        if self.every is not None:
            return convention.close(t, self.every.ticks(time_unit))
        if not self.windows:
            return int(t)
        return max(window_close(w, t, time_unit, convention) for _s, w in self.windows)

    def __str__(self) -> str:
        wins = ", ".join(f"{'NAMED ' if s in self.named else ''}{s} {w}" for s, w in self.windows)
        every = f" EVERY {self.every}" if self.every is not None else ""
        return f"SNAPSHOT({graph_name(self.graph)} + [{wins}]{every}, {self.pattern})"


def window_close(window: Window, t: int, time_unit: str = "ms", convention: WindowConvention = RSEPQL_WINDOWS) -> int:
    """The last close ≤ t of a C-SPARQL window: t0 + ⌊(t − t0)/σ⌋σ for STEP σ (TUMBLING: σ = the
    range; t0 = ``convention.start``, 0 by default), else t."""
    if isinstance(window, Range):
        return convention.close(t, window.step_ticks(time_unit))
    return int(t)


def check_window_convention(query: "Query", convention: "WindowConvention | None") -> WindowConvention:
    """``convention`` (None: RSEP-QL's) checked against ``query``: the conventions other than the
    default are the C-SPARQL engine's, for C-SPARQL windows (``FROM STREAM``) only, and a left-closed
    ``[NOW]`` is always empty. Raises ``WindowConventionError`` saying why; returns the convention."""
    if convention is None:
        return RSEPQL_WINDOWS
    if not isinstance(convention, WindowConvention):
        raise WindowConventionError(f"a window convention must be a cep.algebra.WindowConvention, got {convention!r}")
    if convention.is_default:
        return convention
    if not is_csparql(query):
        language = "an RSEP-QL" if is_rsepql(query) else "an EP-SPARQL" if is_epsparql(query) else "a CQELS-CEP"
        raise WindowConventionError(
            f"the window options ({convention}) follow the C-SPARQL engine and apply to C-SPARQL windows (FROM "
            f"STREAM); this is {language} query, whose windows are its language's own. Leave the options at their "
            f"defaults (right-closed, start 0, report)")
    if convention.empty == SKIP and not any(snap.windows for snap in snapshots(query)):
        raise WindowConventionError("empty windows 'skip' gives no rows at an instant whose stream windows hold "
                                    "nothing, and this query reads no stream window (no FROM STREAM): leave empty "
                                    "windows at 'report'")
    if convention.bounds == LEFT_CLOSED:
        for snap in snapshots(query):
            for stream, w in snap.windows:
                if isinstance(w, Now):
                    raise WindowConventionError(
                        f"FROM STREAM {stream} [NOW] holds the items stamped at the evaluation instant c; a "
                        "left-closed window [c, c) holds none. Use [RANGE 1] (the items of c - 1) or right-closed "
                        "windows")
    return convention


@dataclass(frozen=True)
class GraphPattern:
    """``GRAPH <s> { P }`` in a C-SPARQL WHERE (§2.3): ⟦P⟧ over the triples of stream ``graph``'s
    window alone (their timestamps those in that window). ``GRAPH ?g { P }``: the union over the
    named streams ``streams`` (the query's FROM NAMED STREAMs) of ⟦P⟧ over each one's window with
    ?g bound to its IRI (SPARQL 1.1 §18.6 Graph, over the stream windows as named graphs)."""

    graph: "Term | Var"
    pattern: "Pattern"
    streams: tuple = ()

    def __post_init__(self) -> None:
        if not isinstance(self.graph, Var):
            _check_iri(self.graph, "GraphPattern.graph")
        if not isinstance(self.streams, tuple):
            raise TypeError(f"GraphPattern.streams must be a tuple of stream IRIs, got {self.streams!r}")
        for stream in self.streams:
            _check_iri(stream, "GraphPattern stream")
        _check_pattern(self.pattern, "GraphPattern.pattern")

    def __str__(self) -> str:
        return f"GRAPH {self.graph} {{{self.pattern}}}"


#: C-SPARQL's aggregate functions (§2.2)
AGGREGATES = ("COUNT", "SUM", "AVG", "MIN", "MAX")


@dataclass(frozen=True)
class AggregateSpec:
    """One aggregation pattern A(v, f, p, G) (§3.1): ``var`` gets ``function`` of ``argument``
    (None: COUNT of the mappings) over the group of mappings agreeing on ``group``; ``distinct``
    counts / sums each distinct value once. An empty ``group`` is SPARQL 1.1's implicit group
    (aggregates without GROUP BY, §18.2.4.1): one group of every mapping."""

    var: Var
    function: str
    argument: Var | None
    distinct: bool
    group: tuple[Var, ...]
    #: a member whose ``argument`` is unbound makes the value an error (the argument is an
    #: expression bound by ``Extend``, unbound where it is an error: SPARQL 1.1 §18.5 Aggregation
    #: evaluates the expression on every solution, and an error is the aggregate's error)
    strict: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise TypeError(f"AggregateSpec.var must be a Var, got {self.var!r}")
        if self.function not in AGGREGATES:
            raise ValueError(f"AggregateSpec.function must be one of {AGGREGATES}, got {self.function!r}")
        if self.argument is None and self.function != "COUNT":
            raise ValueError(f"{self.function} needs an argument")
        if self.argument is not None and not isinstance(self.argument, Var):
            raise TypeError(f"AggregateSpec.argument must be a Var or None, got {self.argument!r}")
        if not (isinstance(self.group, tuple) and all(isinstance(v, Var) for v in self.group)):
            raise TypeError(f"AggregateSpec.group must be a tuple of Var, got {self.group!r}")

    def __str__(self) -> str:
        arg = "*" if self.argument is None else str(self.argument)
        return (f"({self.var}, {self.function}({'DISTINCT ' if self.distinct else ''}{arg}), "
                "{" + ", ".join(map(str, self.group)) + "})")


@dataclass(frozen=True)
class Aggregate:
    """[[P AGG A_1 ... A_n]] (§3.1, rule 5): every mapping μ of ⟦inner⟧ (interval kept) extended with
    v_i = f_i(p_i) over {μ' ∈ ⟦inner⟧ | μ'[G_i] = μ[G_i]} (an unbound group variable is a value of
    its own); the clauses are independent of each other. v_i is left unbound where f_i is an error
    (SUM / AVG of a non-number; MIN / MAX of no value). When every spec's group is empty (SPARQL
    1.1's implicit group) and ⟦inner⟧ is empty, the result is one mapping of the aggregates of
    nothing (COUNT 0, ...; §18.5 "Group" of the empty multiset), with the interval an answer of
    ``inner`` would have at t: [c, c] over a Snapshot, [since, t] over a background."""

    inner: "Pattern"
    specs: tuple[AggregateSpec, ...]

    def __post_init__(self) -> None:
        _check_pattern(self.inner, "Aggregate.inner")
        if not (isinstance(self.specs, tuple) and self.specs
                and all(isinstance(a, AggregateSpec) for a in self.specs)):
            raise TypeError(f"Aggregate.specs must be a non-empty tuple of AggregateSpec, got {self.specs!r}")

    def __str__(self) -> str:
        return f"AGGREGATE({self.inner}, " + ", ".join(map(str, self.specs)) + ")"


@dataclass(frozen=True)
class GroupCover:
    """SPARQL 1.1 GROUP BY / aggregates over mappings with intervals (a CQELS-CEP query with event
    clauses, an RSEP-QL or an EP-SPARQL query; ``cep.lowering.common``): ONE answer per group, covering its
    members. With Ω = ⟦inner, t⟧ and
    Ω_k = {⟨μ, [t1, t2]⟩ ∈ Ω | μ[group] = k} (an unbound group variable is a value of its own):

        ⟦GroupCover, t⟧ = {⟨k ∪ {v_i ↦ f_i(Ω_k)}, [min t1, max t2 over Ω_k]⟩ | Ω_k ≠ ∅}

    The members are the distinct (mapping, interval) solutions (set semantics, as everywhere in
    ``cep``): two events with one mapping and different intervals are two members, so COUNT(*)
    counts events (COUNT(DISTINCT *) too: the solutions are distinct already). The interval
    covers the group's parts as EP-SPARQL's joins cover theirs. Only the group variables and the
    ``specs``' variables are bound in an answer (SPARQL 1.1 §18.2.4.1). An empty ``group`` is the
    implicit group: over no solution it gives one answer, the aggregates of nothing (COUNT 0,
    SUM 0, MIN / MAX unbound), over [t, t]: the evaluation instant, the instant the count is
    about (every solution at t ends by t). Not [since, t] as ``Aggregate`` over a background,
    whose every answer has that interval: the windows' content has not been unchanged since
    ``since``, so "none" holds at t, not over that span.

    Why not ``Aggregate``: C-SPARQL's rule (§3.1) keeps each mapping with its own interval, and
    its snapshots give every mapping the same one; over event clauses the intervals differ, and
    a group must be one answer, not one per member."""

    inner: "Pattern"
    group: tuple[Var, ...]
    specs: tuple[AggregateSpec, ...] = ()

    def __post_init__(self) -> None:
        _check_pattern(self.inner, "GroupCover.inner")
        if not (isinstance(self.group, tuple) and all(isinstance(v, Var) for v in self.group)):
            raise TypeError(f"GroupCover.group must be a tuple of Var, got {self.group!r}")
        if len(set(self.group)) != len(self.group):
            raise ValueError(f"GroupCover.group has duplicates: {self.group!r}")
        if not (isinstance(self.specs, tuple) and all(isinstance(a, AggregateSpec) for a in self.specs)):
            raise TypeError(f"GroupCover.specs must be a tuple of AggregateSpec, got {self.specs!r}")
        if not self.group and not self.specs:
            raise ValueError("GroupCover needs group variables or aggregates")
        for spec in self.specs:
            if spec.group != self.group:
                raise ValueError(f"GroupCover: aggregate {spec} groups by {spec.group}, not by the node's "
                                 f"{self.group}")
        bound = [a.var for a in self.specs]
        if len(set(bound)) != len(bound) or set(bound) & set(self.group):
            raise ValueError(f"GroupCover: each aggregate binds a variable of its own, got {bound!r} "
                             f"with group {self.group!r}")

    def __str__(self) -> str:
        return (f"GROUP_COVER({self.inner}, BY {{" + ", ".join(map(str, self.group)) + "}"
                + "".join(f", {s.var} := {s.function}({'DISTINCT ' if s.distinct else ''}"
                          f"{'*' if s.argument is None else s.argument})" for s in self.specs) + ")")


@dataclass(frozen=True)
class Minus:
    """SPARQL 1.1 MINUS (§18.5 Minus(Ω1, Ω2)): the mappings ⟨μ1, [t1,t2]⟩ of ``left`` for which no
    ⟨μ2, [t3,t4]⟩ of ``right`` is compatible with μ1, shares a variable with it (dom(μ1) ∩ dom(μ2)
    ≠ ∅) and has an interval intersecting [t1, t2]. Background patterns (and C-SPARQL's WHERE),
    where every mapping has the same interval: there it is SPARQL's Minus."""

    left: "Pattern"
    right: "Pattern"

    def __post_init__(self) -> None:
        _check_pattern(self.left, "Minus.left")
        _check_pattern(self.right, "Minus.right")

    def __str__(self) -> str:
        return f"MINUS({self.left}, {self.right})"


@dataclass(frozen=True)
class Values:
    """VALUES (SPARQL 1.1 §10.2, §18.2.2.? ToMultiSet): inline data, one mapping per row (None:
    UNDEF, the variable unbound in that row), with the interval of the scope it stands in (a
    background's [t1, t]; outside every graph [MIN_TIME, t], as a background that never changed)."""

    variables: tuple[Var, ...]
    rows: tuple[tuple, ...]

    def __post_init__(self) -> None:
        if not (isinstance(self.variables, tuple) and all(isinstance(v, Var) for v in self.variables)):
            raise TypeError(f"Values.variables must be a tuple of Var, got {self.variables!r}")
        if len(set(self.variables)) != len(self.variables):
            raise ValueError(f"Values.variables has duplicates: {self.variables!r}")
        if not isinstance(self.rows, tuple):
            raise TypeError(f"Values.rows must be a tuple of tuples, got {self.rows!r}")
        for row in self.rows:
            if not (isinstance(row, tuple) and len(row) == len(self.variables)):
                raise ValueError(f"Values row {row!r} must be a tuple of {len(self.variables)} terms or None")
            for term in row:
                if term is not None:
                    check_term(term, "Values row term")

    def __str__(self) -> str:
        rows = " ".join("(" + " ".join("UNDEF" if t is None else t for t in row) + ")" for row in self.rows)
        return "VALUES (" + " ".join(map(str, self.variables)) + ") {" + rows + "}"


@dataclass(frozen=True)
class Extend:
    """BIND(expr AS ?v) / SELECT (expr AS ?v) (SPARQL 1.1 §18.5 Extend): each mapping of ``inner``
    with ``var`` bound to the term ``expr`` evaluates to (``cep.terms.numbers.term_value``); where that is
    an error, the mapping as it is. ``var`` is not bound by ``inner``."""

    inner: "Pattern"
    var: Var
    expr: Expr

    def __post_init__(self) -> None:
        _check_pattern(self.inner, "Extend.inner")
        if not isinstance(self.var, Var):
            raise TypeError(f"Extend.var must be a Var, got {self.var!r}")
        check_condition(self.expr, "Extend.expr")

    def __str__(self) -> str:
        return f"EXTEND({self.inner}, {self.var} := {self.expr})"


@dataclass(frozen=True)
class SubSelect:
    """A sub-query ``{ SELECT ... }`` (SPARQL 1.1 §12, §18.2.1): ``form``'s projected mappings,
    ordered and sliced by ``modifiers`` (per evaluation instant) when given. Only the projected
    variables are in scope outside it."""

    form: "Project"
    modifiers: "Modifiers | None" = None

    def __post_init__(self) -> None:
        if not isinstance(self.form, Project):
            raise TypeError(f"SubSelect.form must be a Project, got {self.form!r}")
        if self.modifiers is not None and not isinstance(self.modifiers, Modifiers):
            raise TypeError(f"SubSelect.modifiers must be Modifiers or None, got {self.modifiers!r}")

    def __str__(self) -> str:
        return "{" + str(self.form) + (f" {self.modifiers}" if self.modifiers is not None else "") + "}"


PATTERN_TYPES = (BGP, Join, Union, LeftJoin, Filter, Sequence, SeqWithout, NoHead, NoTail,
                 StreamPattern, Background, Occurrences, CoverJoin, EqJoin, CoverLeftJoin,
                 SeqRightJoin, EqLeftJoin, Match, Snapshot, Aggregate, GraphPattern, Minus, Values, SubSelect,
                 NamedGraph, Extend, WindowGraph, GroupCover)
"""Every pattern node type; a runtime that handles these handles every query."""


@dataclass(frozen=True)
class Project:
    """SELECT: ⟨μ|V, [t1, t2]⟩ for each result of ``inner`` (eq. 1). Eq. (1) defines a *set*, so
    the runtimes return distinct (mapping, interval) rows with or without ``distinct``; the flag
    records what was written (it is printed back)."""

    variables: tuple[Var, ...]
    distinct: bool
    inner: Pattern

    def __post_init__(self) -> None:
        if not isinstance(self.variables, tuple) or not all(isinstance(v, Var)
                                                            for v in self.variables):
            raise TypeError(f"Project.variables must be a tuple of Var, got {self.variables!r}")
        if len(set(self.variables)) != len(self.variables):
            raise ValueError(f"Project.variables has duplicates: {self.variables!r}")
        _check_pattern(self.inner, "Project.inner")

    def __str__(self) -> str:
        head = "SELECT " + ("DISTINCT " if self.distinct else "")
        return head + " ".join(str(v) for v in self.variables) + f" WHERE {self.inner}"


@dataclass(frozen=True)
class Construct:
    """CONSTRUCT { template } (SPARQL 1.1 §16.2): each result mapping instantiates the template;
    a triple with an unbound variable is left out; each output triple keeps the interval."""

    template: tuple[TriplePattern, ...]
    inner: Pattern

    def __post_init__(self) -> None:
        if not isinstance(self.template, tuple) or not all(isinstance(t, TriplePattern)
                                                           for t in self.template):
            raise TypeError(f"Construct.template must be a tuple of TriplePattern, "
                            f"got {self.template!r}")
        _check_pattern(self.inner, "Construct.inner")

    def __str__(self) -> str:
        return ("CONSTRUCT {" + " . ".join(str(t) for t in self.template) + "} WHERE "
                + str(self.inner))


Form = _t.Union[Project, Construct]


@dataclass(frozen=True)
class OrderKey:
    """One ORDER BY key (SPARQL 1.1 §15.1): an expression over the projected variables."""

    expr: Expr
    descending: bool = False

    def __post_init__(self) -> None:
        check_condition(self.expr, "OrderKey.expr")

    def __str__(self) -> str:
        return f"{'DESC' if self.descending else 'ASC'}({self.expr})"


@dataclass(frozen=True)
class Modifiers:
    """ORDER BY / OFFSET / LIMIT of a SELECT (SPARQL 1.1 §15): the answers (the projected, distinct
    rows) sorted by ``order`` — SPARQL's order of terms (§15.1: unbound < blank nodes < IRIs <
    literals; numbers by value, then booleans, times, durations, strings by lexical form, other
    literals by their text) — ties broken by the projected terms' ids, then the intervals (a
    total order, so that LIMIT is deterministic); then ``offset`` answers skipped and at most
    ``limit`` kept. Applied per evaluation instant."""

    order: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.order, tuple) or not all(isinstance(k, OrderKey) for k in self.order):
            raise TypeError(f"Modifiers.order must be a tuple of OrderKey, got {self.order!r}")
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 0):
            raise ValueError(f"Modifiers.limit must be a non-negative int or None, got {self.limit!r}")
        if isinstance(self.offset, bool) or not isinstance(self.offset, int) or self.offset < 0:
            raise ValueError(f"Modifiers.offset must be a non-negative int, got {self.offset!r}")

    def reads_only(self, names) -> bool:
        """Whether every ORDER BY key reads only the variables ``names``."""
        return all(v.name in names for k in self.order for v in expr_variables(k.expr))

    def __str__(self) -> str:
        parts = ["ORDER BY " + " ".join(map(str, self.order))] if self.order else []
        if self.limit is not None:
            parts.append(f"LIMIT {self.limit}")
        if self.offset:
            parts.append(f"OFFSET {self.offset}")
        return " ".join(parts)


@dataclass(frozen=True)
class Query:
    """A lowered query. ``form.inner`` is the whole pattern, JOIN(EC_1, ..., EC_m, Background(D, P))
    per eq. (1)-(2) (possibly under top-level FILTERs). ``prefixes`` (name → namespace IRI) and
    ``base`` are kept for printing results; they take no part in equality.

    The paper's model Q = (V, P, D, EC) (§3.2) is :meth:`model`.
    """

    form: Form
    prefixes: dict = field(default_factory=dict, compare=False)
    base: str | None = field(default=None, compare=False)
    #: C-SPARQL's REGISTER QUERY|STREAM name (§2.4-2.5): ("QUERY" or "STREAM", name), or None
    registration: tuple | None = field(default=None, compare=False)
    #: ORDER BY / LIMIT / OFFSET of a SELECT, or None
    modifiers: "Modifiers | None" = None

    def __post_init__(self) -> None:
        if not isinstance(self.form, (Project, Construct)):
            raise TypeError(f"Query.form must be Project or Construct, got {self.form!r}")
        if self.modifiers is not None and not (isinstance(self.modifiers, Modifiers) and isinstance(self.form, Project)):
            raise TypeError(f"Query.modifiers must be Modifiers on a SELECT, got {self.modifiers!r}")

    @property
    def pattern(self) -> Pattern:
        return self.form.inner

    def model(self) -> tuple:
        """(V, P, D, EC) of §3.2: V the projected variables (or the CONSTRUCT template), P the
        background patterns, D their graphs (None = default), EC the event clauses — the
        operands of the top-level JOIN that are not Background."""
        V = self.form.variables if isinstance(self.form, Project) else self.form.template
        return (V, background_patterns(self.pattern),
                tuple(dict.fromkeys(b.graph for b in background_patterns(self.pattern))),
                event_clauses(self.pattern))

    def __str__(self) -> str:
        return str(self.form) + (f" {self.modifiers}" if self.modifiers is not None else "")


# --- traversal ---------------------------------------------------------------------------------

def children(node: "Pattern | Form") -> tuple[Pattern, ...]:
    """The sub-patterns of ``node``, left to right."""
    match node:
        case Join() | Union() | LeftJoin() | Sequence() | CoverJoin() | EqJoin() | Minus():
            return (node.left, node.right)
        case CoverLeftJoin() | EqLeftJoin():
            return (node.left, node.optional)
        case SeqRightJoin():
            return (node.optional, node.right)
        case NoTail():
            return (node.left, node.negated)
        case SeqWithout():
            return (node.left, node.negated, node.right)
        case NoHead():
            return (node.negated, node.right)
        case Filter() | Project() | Construct():
            return (node.inner,)
        case StreamPattern() | Background() | Occurrences() | Snapshot() | GraphPattern() | NamedGraph() | WindowGraph():
            return (node.pattern,)
        case Aggregate() | Extend() | GroupCover():
            return (node.inner,)
        case Match() | FirstEvent() | LastEvent():
            return (node.inner,)
        case EventSeq():
            return (node.left, node.right)
        case EventPattern():
            return (node.pattern,)
        case SubSelect():
            return (node.form.inner,)
        case BGP() | Values():
            return ()
    raise TypeError(f"not a pattern: {node!r}")


def walk(node: "Pattern | Form") -> Iterator[Pattern]:
    """``node`` and all its sub-patterns, pre-order."""
    yield node
    for child in children(node):
        yield from walk(child)


def variables(node: "Pattern | Form") -> frozenset[Var]:
    """The variables a pattern can bind (in-scope variables, SPARQL 1.1 §18.2.1): the negated
    element of SEQ_WO / NO_HEAD / NO_TAIL binds nothing; OPTIONAL's right side may bind."""
    match node:
        case BGP():
            out: frozenset[Var] = frozenset()
            for item in node.patterns:
                out |= item.variables()
            return out
        case Join() | Union() | LeftJoin() | Sequence() | SeqWithout() | CoverJoin() | EqJoin():
            return variables(node.left) | variables(node.right)
        case CoverLeftJoin() | EqLeftJoin():
            return variables(node.left) | variables(node.optional)
        case SeqRightJoin():
            return variables(node.optional) | variables(node.right)
        case NoHead():
            return variables(node.right)
        case NoTail() | Minus():
            return variables(node.left)
        case Values():
            return frozenset(node.variables)
        case SubSelect():
            return frozenset(node.form.variables)
        case Filter() | Construct():
            return variables(node.inner)
        case (StreamPattern() | Background() | Occurrences() | EventPattern() | Snapshot() | WindowGraph()):
            return variables(node.pattern)
        case NamedGraph():
            return variables(node.pattern) | ({node.name} if isinstance(node.name, Var) else frozenset())
        case GraphPattern():
            return variables(node.pattern) | ({node.graph} if isinstance(node.graph, Var) else frozenset())
        case Aggregate():
            return variables(node.inner) | frozenset(a.var for a in node.specs)
        case GroupCover():
            return frozenset(node.group) | frozenset(a.var for a in node.specs)
        case Extend():
            return variables(node.inner) | {node.var}
        case Match() | FirstEvent() | LastEvent():
            return variables(node.inner)
        case EventSeq():
            return variables(node.left) | variables(node.right)
        case Project():
            return frozenset(node.variables)
    raise TypeError(f"not a pattern: {node!r}")


def constants(node: "Pattern | Form") -> frozenset[str]:
    """Every RDF term written in ``node`` (patterns, paths, windows' stream IRIs, expressions,
    CONSTRUCT templates): what must decode when a variable is bound to it."""
    return frozenset(v for v in leaves(node) if isinstance(v, str) and is_term(v))


def leaves(value) -> Iterator:
    """Every value in ``value`` that is neither a tuple nor a node: its terms, variables, paths'
    leaves, window parameters, ... (``constants``; ``cep.engines.spark.graphpatterns.mentioned``). A ``Var`` counts
    as a leaf."""
    if isinstance(value, Var) or not (isinstance(value, (tuple, list)) or hasattr(value, "__dataclass_fields__")):
        yield value
    elif isinstance(value, (tuple, list)):
        for x in value:
            yield from leaves(x)
    else:
        for name in value.__dataclass_fields__:
            yield from leaves(getattr(value, name))


def _top_joined(node: Pattern) -> list[Pattern]:
    """The operands of the top-level JOIN, below what SELECT puts over it: top-level FILTERs and
    HAVING (``Filter``), grouping (``Aggregate``, ``GroupCover``) and ``Extend`` (aggregates'
    arguments, SELECT (expr AS ?v))."""
    while isinstance(node, (Filter, Aggregate, GroupCover, Extend)):
        node = node.inner
    if isinstance(node, Join):
        return _top_joined(node.left) + _top_joined(node.right)
    return [node]


def event_clauses(node: Pattern) -> tuple[Pattern, ...]:
    """The event clauses of a query pattern: the operands of the top-level JOIN (eq. 2) that are
    not Background (a StreamPattern, or a SEQ tree of them)."""
    return tuple(p for p in _top_joined(node) if not isinstance(p, Background))


def background_patterns(node: Pattern) -> tuple[Background, ...]:
    """The Background operands of the top-level JOIN (eq. 1)."""
    return tuple(p for p in _top_joined(node) if isinstance(p, Background))


def is_epsparql(node: "Query | Pattern | Form") -> bool:
    """Whether ``node`` is (or holds) an EP-SPARQL pattern (an ``Occurrences`` node)."""
    if isinstance(node, Query):
        node = node.form
    return any(isinstance(p, Occurrences) for p in walk(node))


def is_rsepql(node: "Query | Pattern | Form") -> bool:
    """Whether ``node`` is (or holds) an RSEP-QL event graph pattern (``Match``) or window graph
    pattern (``WindowGraph``)."""
    if isinstance(node, Query):
        node = node.form
    return any(isinstance(p, (Match, WindowGraph)) for p in walk(node))


def is_csparql(node: "Query | Pattern | Form") -> bool:
    """Whether ``node`` is (or holds) a C-SPARQL WHERE (a ``Snapshot``)."""
    if isinstance(node, Query):
        node = node.form
    return any(isinstance(p, Snapshot) for p in walk(node))


def contains(node, found) -> bool:
    """Whether ``found(x)`` holds for ``node`` or any part of it: patterns, expressions (EXISTS
    patterns included), templates and modifiers, every field of every node."""
    if found(node):
        return True
    if isinstance(node, (tuple, list, frozenset)):
        return any(contains(x, found) for x in node)
    if hasattr(node, "__dataclass_fields__"):
        return any(contains(getattr(node, f), found) for f in node.__dataclass_fields__)
    return False


def per_instant_only(query: Query) -> str | None:
    """Why a CQELS-CEP query's answers are defined per instant and not as rows with lifetimes, or
    None: ORDER BY / LIMIT / OFFSET (a top n at an instant is no row's lifetime), NOW() (a value per
    instant), GROUP BY / aggregates over events (a group's value and cover change with its members).
    Such a query is evaluated instant by instant (continuously: at its content changes,
    ``cep.continuous.plan``; at given instants: ``cep.engines.spark.evaluate.evaluate_at_instants``)."""
    if query.modifiers is not None or any(isinstance(n, SubSelect) and n.modifiers is not None
                                          for n in walk(query.form)):
        return "ORDER BY / LIMIT / OFFSET"
    if contains(query, lambda x: isinstance(x, Builtin) and x.name == "NOW"):
        return "NOW()"
    if any(isinstance(n, GroupCover) for n in walk(query.form)):
        return "GROUP BY over events"
    return None


def snapshots(node) -> tuple[Snapshot, ...]:
    """Every ``Snapshot`` in ``node``, each once."""
    if isinstance(node, Query):
        node = node.form
    return tuple(dict.fromkeys(p for p in walk(node) if isinstance(p, Snapshot)))


def event_patterns(node) -> tuple[EventPattern, ...]:
    """Every ``EVENT w P`` in ``node``, left to right, each once."""
    if isinstance(node, Query):
        node = node.form
    return tuple(dict.fromkeys(p for p in walk(node) if isinstance(p, EventPattern)))


def rsep_windows(node) -> tuple:
    """Every RSEP-QL window use in ``node`` (``EVENT w P`` and ``WINDOW w P``: each has ``name``,
    ``stream``, ``window``), left to right, each once."""
    if isinstance(node, Query):
        node = node.form
    return tuple(dict.fromkeys(p for p in walk(node) if isinstance(p, (EventPattern, WindowGraph))))


def stream_patterns(node: "Pattern | Form") -> tuple[StreamPattern, ...]:
    """Every StreamPattern in ``node``, left to right, each once."""
    return tuple(dict.fromkeys(p for p in walk(node) if isinstance(p, StreamPattern)))


def stream_path_refusal(node: BGP, where: str = "inside a WINDOW") -> str | None:
    """Why an engine that evaluates property paths on background graphs only cannot match ``node``
    against stream items (``where`` it stands: "inside a WINDOW", "over a stream"): the message
    naming its first property path; None when it has none."""
    for tp in node.patterns:
        if isinstance(tp, PathPattern):
            return f"property path {tp} {where}: paths are evaluated on background graphs only"
    return None


# --- smart constructors ------------------------------------------------------------------------

def triple(s: "Var | Term", p: "Var | Term", o: "Var | Term") -> TriplePattern:
    """``s p o``."""
    return TriplePattern(s, p, o)


def path_pattern(s: "Var | Term", path: "PA.Path | Var | Term", o: "Var | Term"):
    """``s path o``: a TriplePattern when the path is a variable, a term, the single link
    ``next::p`` (= ``:p``) or its inverse ``next^-1::p`` (= ``^:p``: ``o p s``, SPARQL 1.1
    §18.2.2.4); a PathPattern otherwise."""
    if isinstance(path, (Var, str)):
        return TriplePattern(s, path, o)
    if (isinstance(path, PA.Axis) and path.kind is PA.AxisKind.NEXT
            and isinstance(path.test, str)):
        return TriplePattern(o, path.test, s) if path.inverse else TriplePattern(s, path.test, o)
    return PathPattern(s, path, o)


def bgp(*patterns: "TriplePattern | PathPattern | BGP") -> BGP:
    """A BGP of the given patterns (BGPs are flattened), without duplicates, in written order."""
    flat: list = []
    for item in patterns:
        flat.extend(item.patterns if isinstance(item, BGP) else (item,))
    return BGP(tuple(dict.fromkeys(flat)))


def _fold_right(make, parts: tuple) -> Pattern:
    if not parts:
        raise ValueError("needs at least one pattern")
    out = parts[-1]
    for part in reversed(parts[:-1]):
        out = make(part, out)
    return out


def join(*parts: Pattern) -> Pattern:
    """JOIN(p1, JOIN(p2, ...)) right-associated as eq. (2); one part is that part."""
    for part in parts:
        _check_pattern(part, "join() part")
    return _fold_right(Join, tuple(parts))


def union(*parts: Pattern) -> Pattern:
    """OR(p1, OR(p2, ...)); one part is that part."""
    for part in parts:
        _check_pattern(part, "union() part")
    return _fold_right(Union, tuple(parts))


def left_join(left: Pattern, right: Pattern, condition: Expr | None = None) -> Pattern:
    """OPTIONAL; OPTIONAL {} (an empty BGP) changes nothing."""
    if isinstance(right, BGP) and not right.patterns and condition is None:
        return left
    return LeftJoin(left, right, condition)


def seq(*parts: Pattern) -> Pattern:
    """A positive sequence, right-associated: SEQ(P1, SEQ(P2, ..., Pn)) (eq. 3-4, 10-11); one part
    is that part."""
    for part in parts:
        _check_pattern(part, "seq() part")
    return _fold_right(Sequence, tuple(parts))


def sequence(*parts: Pattern, negated: int | None = None) -> Pattern:
    """SEQ(P1, ..., Pn) with at most one negated element ``parts[negated]`` (0-based), exactly as
    the paper's equations (3)-(8) for windows and (10)-(15) for graph patterns:

    * no negation: ``seq(P1, ..., Pn)``, right-associated (eq. 3-4 / 10-11);
    * negated element inside, 0 < i < n-1: SEQ_WO(SEQ(P1..Pi-1), Pi, SEQ(Pi+1..Pn)) (eq. 5, 8 /
      12, 15);
    * negated head: NO_HEAD(P1, SEQ(P2..Pn)) (eq. 6 / 13);
    * negated tail: NO_TAIL(SEQ(P1..Pn-1), Pn) (eq. 7 / 14).

    A negated element needs at least one positive one (§3.2: "a sequence ... having at most one
    element negated"; a lone ``!P`` has no meaning in §4.2): ValueError otherwise.
    """
    parts = tuple(parts)
    if not parts:
        raise ValueError("sequence() needs at least one pattern")
    for part in parts:
        _check_pattern(part, "sequence() part")
    if negated is None:
        return seq(*parts)
    if isinstance(negated, bool) or not isinstance(negated, int) or not 0 <= negated < len(parts):
        raise ValueError(f"negated must be an index into the {len(parts)} parts, got {negated!r}")
    if len(parts) < 2:
        raise ValueError("a negated element needs at least one positive element in its sequence")
    last = len(parts) - 1
    if negated == 0:
        return NoHead(parts[0], seq(*parts[1:]))                            # eq. 6, 13
    if negated == last:
        return NoTail(seq(*parts[:-1]), parts[-1])                          # eq. 7, 14
    return SeqWithout(seq(*parts[:negated]), parts[negated],               # eq. 5, 12
                      seq(*parts[negated + 1:]))


def project(variables_: "tuple[Var, ...] | list[Var]", inner: Pattern,
            distinct: bool = False) -> Project:
    """SELECT [DISTINCT] vars (eq. 1); duplicates in ``variables_`` are dropped."""
    return Project(tuple(dict.fromkeys(variables_)), bool(distinct), inner)


def construct(template, inner: Pattern) -> Construct:
    """CONSTRUCT { template }; duplicate template triples are dropped."""
    return Construct(tuple(dict.fromkeys(template)), inner)
