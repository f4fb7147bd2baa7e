"""Reference evaluator: the CQELS-CEP semantics (§4) written out literally, in pure Python.

The oracle for the Spark runtime (``cep.engines.spark.intervals``, ``cep.engines.spark.evaluate.evaluate``) in differential tests;
small inputs only (every operator is a nested loop over sets).

* A *mapping* is a ``frozenset`` of ``(variable name, term)`` pairs (terms: N-Triples strings, or
  any hashable value in operator tests); an unbound variable is simply absent.
* A *mapping with interval* ``<μ, [t1, t2]>`` is the tuple ``(μ, t1, t2)``; the operators take
  and return sets of them (set semantics, as the paper).
* A stream is a list of items ``(item, g, t1, t2)``: ``g`` a frozenset of triples ``(s, p, o)``.

Operators (§4.2; DESIGN.md "Operators"), equation numbers of the paper in brackets:

* ``join``   JOIN(Ω1, Ω2) = {<μ1 ∪ μ2, [max(t1,t3), min(t2,t4)]> | μ1 ~ μ2, max(t1,t3) ≤ min(t2,t4)}
* ``union``  OR(Ω1, Ω2) = Ω1 ∪ Ω2
* ``seq``    SEQ(Ω1, Ω2) = {<μ1 ∪ μ2, [t1, t4]> | μ1 ~ μ2, t2 < t3}
* ``seq_wo`` SEQ_WO(Ω1, Ω2, Ω3) = {<μ1 ∪ μ3, [t1, t6]> | <μ1,[t1,t2]> ∈ Ω1, <μ3,[t5,t6]> ∈ Ω3,
  μ1 ~ μ3, t2 < t5, ∄<μ2,[t3,t4]> ∈ Ω2: μ2 ~ μ1 ∪ μ3, [t3,t4] ⊆ [t2,t5]} (the paper's μ1 ∪ μ2 /
  μ1 ~ μ2 in the head are typos for μ3, DESIGN.md)
* ``no_head`` NO_HEAD(Ω1, Ω2) = {<μ2,[t3,t4]> ∈ Ω2 | ∄<μ1,[t1,t2]> ∈ Ω1: μ1 ~ μ2, t2 < t3}
* ``no_tail`` NO_TAIL(Ω1, Ω2, t) = {<μ1,[t1,t2]> ∈ Ω1 | ∄<μ2,[t3,t4]> ∈ Ω2: μ1 ~ μ2, t2 < t3, t4 ≤ t}
* ``w_range`` the window function of §4.1 (see its comment); ``w_now``, ``w_all``, ``w_triples``,
  ``w_step`` the other windows (report policies documented in ``cep.engines.spark.intervals``).

EP-SPARQL (§4.2 of ../shared/papers/000_...; ``A.Occurrences`` and the nodes under it): a solution
⟨μ, tα, tω⟩ combines with a compatible one into μ ∪ μ' over [min(tα,t'α), max(tω,t'ω)] ("cover"):

* ``cover_join``  Join(Ψ, Ψ'): every compatible pair, covered
* ``eq_join``     EqJoin(Ψ, Ψ'): compatible pairs with equal intervals
* ``seq``         SeqJoin(Ψ, Ψ') = SEQ above (tω < t'α; the cover is [tα, t'ω])
* ``optional_join`` LeftJoin (t'ω < tω), SeqRightJoin (t'ω < tα, optional first), EqLeftJoin
  (equal intervals): the joined pairs whose condition F holds, plus each mandatory solution that
  has no such pair. F is evaluated on the pair's merged mapping and covering interval (the
  solution it would produce), so the two parts are exact complements.
* the stream: every occurrence of every stream ended by the evaluation time (t' ≤ at); a BGP
  matches each triple pattern in any occurrence and covers them (§4.2 "BGP(list of triples)").

RSEP-QL (§4.2-4.4 of ../shared/papers/001_...; ``A.Match`` and the event patterns under it): an
event pattern is evaluated under an *active window* [lo, hi] (bounds on the item times it may use)
and the bindings of the enclosing SEQ's right side (the substitution μ2(E1) of eq. 7):

* ``EVENT w P``: per item (G_k, t_k) of window w at t (RSEP-QL's W^τ: t' − α < t_k ≤ t',
  t' = ⌊t/β⌋·β; ALL: t_k ≤ t) with lo ≤ t_k ≤ hi, each μ ∈ ⟦P⟧_{G_k} → (μ, t_k, t_k);
* ``FIRST E`` / ``LAST E``: the events no other event of E precedes / follows, by ≺ =
  (t2, t1) lexicographic (an event happens when it completes);
* ``E1 SEQ E2`` (eq. 7): for each (μ2, t3, t4) ∈ E2, each (μ1, t1, t2) of μ2(E1) under
  [lo, min(hi, t3 − 1)] gives (μ1 ∪ μ2, t1, t4);
* naive (eq. 9, C-SPARQL's timestamp()): LAST E1 and LAST E2, compatible, t2 < t3;
* chronological (eq. 10): per E2 event, the FIRST compatible E1 event before it, kept only if no
  earlier E2 event is compatible with that E1 event and after it; recent (eq. 11): the LAST
  compatible E1 event, kept only if no later E2 event is. (The equations' bodies are lost from
  our copy of the paper; this reading gives Fig. 1's table exactly, tests/test_rsepql.py.)
* consumption (§4.4, chronological and recent): the stream triples an answer used are removed
  from the query's input for the later evaluations (``evaluate_sequence``);
* ``WINDOW w P`` (eq. 3): P as SPARQL over the merge of the graphs window w holds at t, each
  mapping with [MIN_TIME, t] (no time, as a background pattern's).

C-SPARQL (§3 of ../shared/papers/003_...; ``A.Snapshot``, ``A.Aggregate``): WHERE is matched as
SPARQL against ONE graph, the background merged with every window's triples at the evaluation
instant c (``A.Snapshot.instant``), each mapping with [c, c]:

* ``csparql_window``: a logical window ω_l(R, c' − ρ, c') = {τ | c' − ρ < τ ≤ c'}, c' its last close
  ≤ c (§3.2; τ = an item's start time); ``TRIPLES n`` the last n triples with τ ≤ c (``w_triples``);
* a triple's timestamp is the greatest τ of its occurrences in the windows (per stream too); a
  background triple that no window holds has none;
* ``timestamp(?v [, s])`` (§3.3): ts(v, P) = max τ of the triples matched by the FILTER's BGP's
  patterns that mention v (from stream s); ``timestamp(s p o)``: max τ of the window triples
  matching the pattern under the solution;
* ``aggregate`` (§3.1): each mapping extended with f(p) over the mappings that agree with it on
  the group variables (``aggregate_value``: the functions, their result types and lexical forms).

SPARQL GROUP BY over event clauses (``A.GroupCover``, ``group_cover``; every language): one
element per group of the distinct elements, its aggregates, over [min t1, max t2] of its members;
the implicit group of nothing over [t, t].

``evaluate`` walks the cep algebra (``cep.algebra.patterns``) with these operators: equations (1)-(17).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping as TMapping
from dataclasses import dataclass
from contextvars import ContextVar
from typing import Any

from cep import algebra as A
from cep.algebra.expressions import SOLUTION_BUILTINS, TERM_BUILTINS
from cep.engines.errors import MissingInputError
from cep.terms.literals import (AGGREGATE_LIMIT, AGGREGATE_SCALE, LITERAL_RE, NUMBER_LEXICAL, NUMERIC_DATATYPES,
                          XSD_BOOLEAN, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, XSD_STRING, canonical_decimal,
                          canonical_double, datetime_term, number_kind, numeric_value, parse_literal, temporal_value,
                          DATETIME_PATTERN, XSD_DATETIME, XSD_DAYTIMEDURATION)
from cep.terms.numbers import Number, comparable, number, numeric
from cep.algebra.windows import TIME_UNITS
from cep.algebra.timeline import MIN_TIME, close_instant
from rdfcore.hashing import fast_xxh64, hash_longs, term_id

__all__ = [
    "Mapping", "Element", "Item", "MIN_TIME",
    "mapping", "compatible", "merge",
    "join", "union", "seq", "seq_wo", "no_head", "no_tail", "minus", "substitute",
    "cover_join", "eq_join", "optional_join", "occurrences", "rsep_window", "evaluate_sequence", "evaluate_instants",
    "csparql_window", "aggregate", "aggregate_value", "group_cover", "order_key", "ordered",
    "w_range", "w_now", "w_all", "w_triples", "w_step", "close_instant",
    "match_bgp_in_items", "evaluate", "solution_hash", "solution_value", "EVALUATION_INSTANT", "SOLUTION_SEED",
]

Mapping = frozenset  # of (variable, term) pairs
Element = tuple  # (Mapping, t1, t2)
Item = tuple  # (item, frozenset of triples, t1, t2)



def mapping(**bindings: Any) -> frozenset:
    """``mapping(v="a1", s="m")``; a ``None`` value leaves the variable unbound."""
    return frozenset((k, v) for k, v in bindings.items() if v is not None)


def compatible(m1: frozenset, m2: frozenset) -> bool:
    """μ1 ~ μ2: they agree on every variable bound in both (an unbound variable is compatible)."""
    d1 = dict(m1)
    return all(d1.get(k, v) == v for k, v in m2)


def merge(m1: frozenset, m2: frozenset) -> frozenset:
    """μ1 ∪ μ2 (of compatible mappings)."""
    return frozenset(m1 | m2)


# ---------------------------------------------------------------------------------------------
# operators on sets of mappings with intervals (§4.2)

def join(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """JOIN: interval intersection (not EP-SPARQL's cover)."""
    o2 = list(o2)
    return {(merge(m1, m2), max(t1, t3), min(t2, t4))
            for (m1, t1, t2) in o1 for (m2, t3, t4) in o2
            if compatible(m1, m2) and max(t1, t3) <= min(t2, t4)}


def union(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """OR."""
    return set(o1) | set(o2)


def seq(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """SEQ (eq. 4, 11)."""
    o2 = list(o2)
    return {(merge(m1, m2), t1, t4)
            for (m1, t1, t2) in o1 for (m2, t3, t4) in o2
            if compatible(m1, m2) and t2 < t3}


def seq_wo(o1: Iterable[Element], o2: Iterable[Element], o3: Iterable[Element]) -> set[Element]:
    """SEQ_WO (eq. 8, 15), the head's typos fixed (μ1 ∪ μ3; negation compatible with μ1 ∪ μ3)."""
    o2, o3 = list(o2), list(o3)
    out = set()
    for (m1, t1, t2) in o1:
        for (m3, t5, t6) in o3:
            if not (compatible(m1, m3) and t2 < t5):
                continue
            m13 = merge(m1, m3)
            if any(compatible(m2, m13) and t2 <= t3 and t4 <= t5 for (m2, t3, t4) in o2):
                continue
            out.add((m13, t1, t6))
    return out


def minus(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """MINUS (SPARQL 1.1 §18.5 Minus): the Ω1 mappings with no compatible Ω2 mapping that shares a
    variable with them and whose interval intersects theirs (``cep.algebra.patterns.Minus``)."""
    o2 = [(m2, {k for k, _ in m2}, t3, t4) for (m2, t3, t4) in o2]
    out = set()
    for (m1, t1, t2) in o1:
        d1 = {k for k, _ in m1}
        if not any(d1 & d2 and compatible(m1, m2) and max(t1, t3) <= min(t2, t4) for (m2, d2, t3, t4) in o2):
            out.add((m1, t1, t2))
    return out


def substitute(node, mu: dict):
    """``node`` with each variable μ binds replaced by its value in its triple and path patterns
    (SPARQL 1.1 §18.6 substitute; FILTERs read μ from the evaluator). VALUES and sub-queries are
    left as written (their variables are not the pattern's)."""
    from dataclasses import fields, replace

    def term(x):
        return mu.get(x.name, x) if isinstance(x, A.Var) else x

    match node:
        case A.BGP(patterns=patterns):
            return A.BGP(tuple(replace(tp, s=term(tp.s), o=term(tp.o)) if isinstance(tp, A.PathPattern)
                               else A.TriplePattern(term(tp.s), term(tp.p), term(tp.o)) for tp in patterns))
        case A.Values() | A.SubSelect():
            return node
        case A.NamedGraph(name=A.Var() as var) if var.name in mu:
            if not mu[var.name].startswith("<"):      # a literal or blank node names no graph: no solution
                return replace(node, pattern=substitute(node.pattern, mu), graphs=())
            return replace(node, name=mu[var.name], pattern=substitute(node.pattern, mu))
        case A.GraphPattern(graph=A.Var() as var) if var.name in mu:
            if mu[var.name] not in node.streams:     # ?g ranges over the named streams only: no solution
                return A.GraphPattern(var, substitute(node.pattern, mu), ())
            return A.GraphPattern(mu[var.name], substitute(node.pattern, mu))
    changes = {f.name: substitute(getattr(node, f.name), mu) for f in fields(node)
               if isinstance(getattr(node, f.name), A.PATTERN_TYPES)}
    return replace(node, **changes)


def no_head(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """NO_HEAD(Ω1, Ω2): the elements of Ω2 with no compatible Ω1 element ending before them (eq. 6, 13)."""
    o1 = list(o1)
    return {(m2, t3, t4) for (m2, t3, t4) in o2
            if not any(compatible(m1, m2) and t2 < t3 for (m1, t1, t2) in o1)}


def no_tail(o1: Iterable[Element], o2: Iterable[Element], t: int) -> set[Element]:
    """NO_TAIL(Ω1, Ω2, t): elements of Ω1 with no compatible Ω2 element after them, ended by t (eq. 7, 14)."""
    o2 = list(o2)
    return {(m1, t1, t2) for (m1, t1, t2) in o1
            if not any(compatible(m1, m2) and t2 < t3 and t4 <= t for (m2, t3, t4) in o2)}


# ---------------------------------------------------------------------------------------------
# EP-SPARQL operators (EP-SPARQL §4.2)

def _cover(m1, t1, t2, m2, t3, t4) -> Element:
    return (merge(m1, m2), min(t1, t3), max(t2, t4))


def cover_join(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """Join(Ψ, Ψ'): every compatible pair, with the interval covering both."""
    o2 = list(o2)
    return {_cover(m1, t1, t2, m2, t3, t4) for (m1, t1, t2) in o1 for (m2, t3, t4) in o2
            if compatible(m1, m2)}


def eq_join(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """EqJoin(Ψ, Ψ'): compatible pairs with tα = t'α and tω = t'ω."""
    o2 = list(o2)
    return {(merge(m1, m2), t1, t2) for (m1, t1, t2) in o1 for (m2, t3, t4) in o2
            if compatible(m1, m2) and (t1, t2) == (t3, t4)}


#: when an optional solution (t3, t4) may join a mandatory one (t1, t2)
OPTIONAL_ORDER = {
    "left": lambda t1, t2, t3, t4: t4 < t2,              # LeftJoin: t'ω < tω
    "seq": lambda t1, t2, t3, t4: t4 < t1,               # SeqRightJoin: optional ends before
    "equal": lambda t1, t2, t3, t4: (t1, t2) == (t3, t4),  # EqLeftJoin
}


def optional_join(mandatory: Iterable[Element], optional: Iterable[Element], order: str,
                  keep=None) -> set[Element]:
    """LeftJoin / SeqRightJoin / EqLeftJoin (``order`` "left" / "seq" / "equal"): the covered
    compatible pairs in that temporal order for which ``keep(element)`` holds (None: all), plus
    every mandatory solution that has none."""
    fits = OPTIONAL_ORDER[order]
    optional = list(optional)
    out = set()
    for (m1, t1, t2) in mandatory:
        matched = False
        for (m2, t3, t4) in optional:
            if compatible(m1, m2) and fits(t1, t2, t3, t4):
                element = _cover(m1, t1, t2, m2, t3, t4)
                if keep is None or keep(element):
                    out.add(element)
                    matched = True
        if not matched:
            out.add((m1, t1, t2))
    return out


def occurrences(streams: Iterable[list[Item]], t: int) -> list[Item]:
    """EP-SPARQL's stream at t: the items of all ``streams`` ended by t (t2 ≤ t)."""
    return [it for stream in streams for it in stream if it[3] <= t]


# ---------------------------------------------------------------------------------------------
# windows (§4.1)

def w_range(stream: Iterable[Item], t: int, T: int) -> list[Item]:
    """w_RANGE(S, t, T) = {<g, [max(t1, t−T), min(t2, t)]> | <g, [t1, t2]> ∈ S, t1 ≤ t, t2 ≥ t−T}.

    (the clipping of t1 is our reading of a garbled formula — DESIGN.md "Window")
    """
    return [(item, g, max(t1, t - T), min(t2, t)) for (item, g, t1, t2) in stream
            if t1 <= t and t2 >= t - T]


def w_now(stream: Iterable[Item], t: int) -> list[Item]:
    """NOW = w_RANGE(S, t, 0): the items valid at t, with interval [t, t]."""
    return w_range(stream, t, 0)


def w_all(stream: Iterable[Item], t: int) -> list[Item]:
    """ALL (landmark) = w_RANGE(S, t, ∞): every item started by t, t2 clipped to t."""
    return [(item, g, t1, min(t2, t)) for (item, g, t1, t2) in stream if t1 <= t]


def w_triples(stream: Iterable[Item], t: int, n: int) -> list[Item]:
    """TRIPLES n: the last n triples started by t, clipped like ALL.

    "Last" orders triples by their own (t1, t2), then (item, s, p, o), descending, before clipping;
    s, p, o compare by their term ids (``rdfcore.hashing.term_id``; ints are ids), as in Spark, so
    a window that splits an item keeps the same triples here. Items compare by their ids: a test
    that compares with a runtime gives the items the ids the runtime gives them.
    """
    rows = [(t1, t2, item, tr) for (item, g, t1, t2) in stream if t1 <= t for tr in g]
    rows.sort(key=lambda r: (r[0], r[1], r[2], *map(_order_id, r[3])), reverse=True)
    kept: dict[Any, set] = {}
    times: dict[Any, tuple[int, int]] = {}
    for (t1, t2, item, tr) in rows[:max(n, 0)]:
        kept.setdefault(item, set()).add(tr)
        times[item] = (t1, min(t2, t))
    return [(item, frozenset(g), *times[item]) for item, g in kept.items()]


def _order_id(term) -> int:
    """A term's place in TRIPLES' tie order: its id (terms given as ids are already ids)."""
    return term if isinstance(term, int) else term_id(term)


def w_step(stream: Iterable[Item], t: int, T: int, step: int) -> list[Item]:
    """RANGE T STEP s (TUMBLING: s = T), C-SPARQL report policy: at t the content is the last
    closed window, w_RANGE(S, c, T) with c = close_instant(t, s)."""
    return w_range(stream, close_instant(t, step), T)


# ---------------------------------------------------------------------------------------------
# the algebra (§4.3), walked with the operators above

def match_bgp_in_items(patterns, items: Iterable[Item], is_var) -> set[Element]:
    """eq. 16: {<μ, [t1, t2]> | dom(μ) = var(P), μ(P) ⊆ g, <g, [t1, t2]> in the window}."""
    out = set()
    for (_item, g, t1, t2) in items:
        for mu in _match_triples(patterns, g, is_var):
            out.add((mu, t1, t2))
    return out


def _match_triples(patterns, graph, is_var) -> list[frozenset]:
    """Solutions of a list of triple patterns (s, p, o) over a set of triples."""
    sols: list[dict] = [{}]
    for pattern in patterns:
        nxt = []
        for sol in sols:
            for triple in graph:
                ext = dict(sol)
                ok = True
                for part, value in zip(pattern, triple):
                    if is_var(part):
                        name = part.name
                        if ext.get(name, value) != value:
                            ok = False
                            break
                        ext[name] = value
                    elif part != value:
                        ok = False
                        break
                if ok:
                    nxt.append(ext)
        sols = nxt
    return [frozenset(s.items()) for s in sols]


def evaluate(query, background: TMapping, streams: TMapping, at: int, time_unit: str = "ms", rules=()) -> set:
    """The answer of a cep algebra ``Query`` at time ``at`` (eq. 1).

    ``background``: {graph IRI or None: iterable of (s, p, o) N-Triples strings};
    ``streams``: {stream IRI: list of items ``(item, frozenset of triples, t1, t2)``}.
    ``rules``: EP-SPARQL CONSTRUCT rules: the query reads the streams' Q-closure (``cep.engines.rules``).
    Returns a set of ``(mapping, t1, t2)`` for SELECT (mapping restricted to the projected
    variables) — a list in order for a query with ORDER BY / LIMIT / OFFSET — or of
    ``((s, p, o), t1, t2)`` for CONSTRUCT.
    """
    if rules:
        from cep.engines.rules import check_rules, close

        streams = close(check_rules(query, rules), background, streams, at, time_unit)
    evaluator = _Evaluator({g: set(ts) for g, ts in background.items()}, streams, at, time_unit)
    return evaluator.query(query)


def evaluate_sequence(query, background: TMapping, streams: TMapping, times, time_unit: str = "ms") -> list[set]:
    """The answers of ``query`` at each of the evaluation instants ``times`` (increasing), in
    order. They are ``evaluate``'s, except that an RSEP-QL MATCH with a consuming policy
    (chronological, recent; §4.4) no longer sees the stream triples its earlier answers used."""
    return evaluate_instants(query, {g: set(ts) for g, ts in background.items()}, streams, times, time_unit)[0]


def evaluate_instants(query, background: TMapping, streams: TMapping, times, time_unit: str = "ms",
                      consumed: frozenset | set = frozenset()) -> tuple[list, set]:
    """``evaluate_sequence`` continued from ``consumed`` (the (window name, item, triple) entries
    earlier evaluations consumed); returns the answers per instant and what is consumed after the
    last. ``background``: {graph: set of triples}, used as given (not copied)."""
    consumed = set(consumed)
    out = []
    last = None
    for at in times:
        if last is not None and at <= last:
            raise ValueError(f"evaluation instants must increase, got {at} after {last}")
        last = at
        evaluator = _Evaluator(background, streams, at, time_unit)
        evaluator.consumed = consumed
        out.append(evaluator.query(query))
        consumed = consumed | evaluator.used
    return out, consumed


def fresh_blank(label: str, mu: TMapping, t1: int, t2: int) -> str:
    """The blank node a CONSTRUCT template's ``_:label`` stands for in the solution ⟨μ, [t1, t2]⟩
    (SPARQL 1.1 §16.2: fresh per solution): ``_:label_`` + 16 hex digits of XXH64 chained, as
    Spark's ``xxhash64(cols...)`` chains (seed 42; a null skipped), over the ids of μ's terms by
    variable name and then t1 and t2. The same solution always gives the same node, so a replayed
    or re-evaluated answer is the same triple, and ``cep.engines.spark.evaluate`` names it alike."""
    return fresh_blank_of_ids(label, {name: None if term is None else term_id(term) for name, term in mu.items()},
                              t1, t2)


def fresh_blank_of_ids(label: str, ids: TMapping, t1: int, t2: int) -> str:
    """:func:`fresh_blank` from the ids of the solution's terms ({variable name: id or None})."""
    h = hash_longs(*(ids[name] for name in sorted(ids)), t1, t2)
    return f"_:{label}_{h & 0xFFFFFFFFFFFFFFFF:016x}"


def rsep_window(stream: Iterable[Item], spec, t: int, time_unit: str = "ms") -> list[Item]:
    """RSEP-QL's window functions (§3.2) over items stamped with their start time: W^τ(α, β)
    (``Range``; β = the step, the range when tumbling, else 1) holds t' − α < t_k ≤ t' with
    t' = ⌊t/β⌋·β; ``All`` is the landmark window (t_k ≤ t); ``Now`` holds t_k = t."""
    match spec:
        case A.All():
            return [it for it in stream if it[2] <= t]
        case A.Now():
            return [it for it in stream if it[2] == t]
        case A.Range():
            alpha, beta = spec.range.ticks(time_unit), spec.step_ticks(time_unit)
            top = close_instant(t, beta)
            return [it for it in stream if top - alpha < it[2] <= top]
    raise ValueError(f"RSEP-QL has no {spec} window")


def csparql_window(stream: Iterable[Item], spec, c: int, time_unit: str = "ms") -> list[Item]:
    """C-SPARQL's windows at evaluation instant c (§3.2): logical ones as ``rsep_window`` (the
    same (c' − ρ, c'] with c' = ⌊c/σ⌋σ), ``TRIPLES n`` the last n triples started by c."""
    if isinstance(spec, A.Triples):
        return w_triples(stream, c, spec.n)
    return rsep_window(stream, spec, c, time_unit)


# ---------------------------------------------------------------------------------------------
# C-SPARQL's aggregates (§3.1)

def _number(term):
    """(kind, value) of a numeric literal an aggregate can read, else None: "integer" / "decimal"
    values are exact decimal(38, 18) (None beyond 10^20), "double" values floats."""
    from decimal import ROUND_HALF_UP, Decimal, localcontext

    lit = parse_literal(term)
    kind = number_kind(lit[2]) if lit is not None else None
    if kind is None or not re.match(NUMBER_LEXICAL[kind], lit[0]):
        return None
    if kind == "double":
        return kind, float(lit[0])
    with localcontext() as ctx:   # 20 integer and 18 fraction digits: past the default 28
        ctx.prec = 80
        value = Decimal(lit[0]).quantize(Decimal(1).scaleb(-AGGREGATE_SCALE), rounding=ROUND_HALF_UP)
    if value == 0:
        value = abs(value)   # "-0.0" is 0
    return (kind, value) if abs(value) < AGGREGATE_LIMIT else None


def _order_key(term):
    """MIN / MAX order of a group whose values are not all numbers: blank nodes, then IRIs, then
    literals; the numbers among the literals first, by value (as ``<`` orders them: 2 before
    12345678901234), the other literals after them; each tie by the term's N-Triples text (code
    points)."""
    rank = 0 if term.startswith("_:") else 1 if term.startswith("<") else 2
    number = _number(term) if rank == 2 else None
    return (rank, 1, 0.0, term) if number is None else (rank, 0, float(number[1]), term)


def aggregate_value(function: str, distinct: bool, values: list, rows: int):
    """The term f(values) (None: an error, the variable stays unbound). ``values``: the bound
    argument terms of the group's mappings (one per mapping); ``rows``: the group's size.

    COUNT → xsd:integer (the mappings, or the bound values); SUM, AVG of numbers: exact decimals
    for integer and decimal values (SUM of integers an xsd:integer, else an xsd:decimal; AVG an
    xsd:decimal, 18 fraction digits, rounded half up), doubles when one value is a double or
    float; none → "0"^^xsd:integer; a value that is not a number → error. MIN, MAX: the least /
    greatest value — by number (ties by term text) when all are numbers, else by
    ``_order_key`` (numbers still by value) — the term itself."""
    from decimal import ROUND_HALF_UP, Decimal

    if distinct:
        values = list(dict.fromkeys(values))
    if function == "COUNT":
        return f'"{rows if values is None else len(values)}"^^<{XSD_INTEGER}>'
    if function in ("MIN", "MAX"):
        if not values:
            return None
        numbers = [_number(v) for v in values]
        if all(n is not None for n in numbers):
            keyed = [(float(n[1]), v) for n, v in zip(numbers, values)]
        else:
            keyed = [(_order_key(v), v) for v in values]
        return (min if function == "MIN" else max)(keyed)[1]
    if not values:
        return f'"0"^^<{XSD_INTEGER}>'
    numbers = [_number(v) for v in values]
    if any(n is None for n in numbers):
        return None
    kinds = {k for k, _ in numbers}
    if "double" in kinds:
        total = sum(float(v) for _, v in numbers)
        result = total if function == "SUM" else total / len(numbers)
        text = canonical_double(result)
        return None if text is None else f'"{text}"^^<{XSD_DOUBLE}>'
    total = sum((v for _, v in numbers), Decimal(0))
    if abs(total) >= AGGREGATE_LIMIT:
        return None
    if function == "SUM":
        if kinds == {"integer"}:
            return f'"{int(total)}"^^<{XSD_INTEGER}>'
        return f'"{canonical_decimal(total)}"^^<{XSD_DECIMAL}>'
    from decimal import localcontext
    with localcontext() as ctx:
        ctx.prec = 80
        mean = (total / len(numbers)).quantize(Decimal(1).scaleb(-AGGREGATE_SCALE), rounding=ROUND_HALF_UP)
    return f'"{canonical_decimal(mean)}"^^<{XSD_DECIMAL}>'


def aggregate(omega: Iterable[Element], specs, empty: bool = False) -> set[Element]:
    """[[P AGG A_1..A_n]] (§3.1): each (μ, t1, t2) of ``omega`` with v_i = f_i over the elements
    whose mappings agree with μ on G_i (an unbound group variable is a value of its own).
    ``empty``: ``omega`` is the one empty mapping standing for no solution (SPARQL's implicit
    group of nothing): the aggregates are those of no mapping."""
    rows = list(omega)
    extended = [dict(mu) for (mu, _t1, _t2) in rows]
    for spec in specs:
        names = [v.name for v in spec.group]
        groups: dict = {}
        for d in extended:
            groups.setdefault(tuple(d.get(n) for n in names), []).append(d)
        results = {}
        for key, members in groups.items():
            size = 0 if empty else len(members)
            if spec.argument is None:
                results[key] = aggregate_value(spec.function, False, None, size)
            else:
                values = [d[spec.argument.name] for d in members if spec.argument.name in d]
                if spec.strict and not empty and len(values) < len(members):   # the argument expression failed
                    results[key] = None
                    continue
                results[key] = aggregate_value(spec.function, spec.distinct, values, size)
        for d, (mu, _t1, _t2) in zip(extended, rows):
            value = results[tuple(dict(mu).get(n) for n in names)]
            if value is not None:
                d[spec.var.name] = value
    return {(frozenset(d.items()), t1, t2) for d, (_mu, t1, t2) in zip(extended, rows)}


def group_cover(omega: Iterable[Element], group, specs, at: int) -> set[Element]:
    """SPARQL GROUP BY over mappings with intervals (``A.GroupCover``): per group of the distinct
    elements of ``omega`` agreeing on ``group`` (an unbound variable a value of its own), ONE
    element: the group's values of ``group``, the aggregates ``specs`` over its members (as
    ``aggregate``: a member is an element, so one mapping at two intervals counts twice), and
    [min t1, max t2] of its members. An empty ``group`` over no element (the implicit group of
    nothing): the aggregates of nothing over [at, at], the evaluation instant."""
    rows = set(omega)
    if not rows and not group:
        rows, empty = {(frozenset(), at, at)}, True
    else:
        empty = False
    extended = aggregate(rows, specs, empty) if specs else rows
    keep = {v.name for v in group} | {spec.var.name for spec in specs}
    covers: dict = {}
    for (mu, t1, t2) in extended:   # the aggregates are a function of the group: the key is enough
        key = frozenset((k, x) for k, x in mu if k in keep)
        lo, hi = covers.get(key, (t1, t2))
        covers[key] = (min(lo, t1), max(hi, t2))
    return {(key, lo, hi) for key, (lo, hi) in covers.items()}


# ---------------------------------------------------------------------------------------------
# ORDER BY / LIMIT / OFFSET (SPARQL 1.1 §15)

def order_key(value) -> tuple:
    """The ascending sort key of an expression's value (``A.Modifiers``): (rank, kind, number,
    seconds, text); rank 0 error / unbound, 1 blank node, 2 IRI, 3 literal; for literals kind 0
    number (by value), 1 boolean, 2 dateTime, 3 duration, 4 simple or xsd:string (by lexical
    form), 5 other (by text)."""
    from decimal import Decimal

    zero = Decimal(0)
    if value is _ERROR or value is None:
        return (0, 0, 0.0, zero, "")
    if isinstance(value, bool):
        return (3, 1, float(value), zero, "")
    if isinstance(value, Number):
        return (3, 0, float(value.value), zero, "")
    if isinstance(value, _Temporal):
        return (3, 2 if value.kind == "dateTime" else 3, 0.0, value.seconds, "")
    if value.startswith("_:"):
        return (1, 0, 0.0, zero, value)
    if value.startswith("<"):
        return (2, 0, 0.0, zero, value)
    number = _num(value)
    if number is not None:
        return (3, 0, number, zero, value)
    lit = parse_literal(value)
    if lit is not None and lit[2] == XSD_BOOLEAN:
        return (3, 1, 1.0 if lit[0] in ("true", "1") else 0.0, zero, value)
    temporal = _temporal(value)
    if temporal is not None:
        return (3, 2 if temporal.kind == "dateTime" else 3, 0.0, temporal.seconds, value)
    simple = _simple_string(value)
    if simple is not None:
        return (3, 4, 0.0, zero, simple)
    return (3, 5, 0.0, zero, value)


def ordered(answers, modifiers, names, unit: str = "ms") -> list:
    """``answers`` (a set of (μ, t1, t2)) as a list sorted by ``modifiers.order`` — ties by the
    projected terms' ids (unbound first), then t1, t2 — then sliced by OFFSET / LIMIT."""
    rows = sorted(answers, key=lambda e: (*[(0, 0) if dict(e[0]).get(n) is None else (1, _order_id(dict(e[0])[n]))
                                            for n in names], e[1], e[2]))
    for key in reversed(modifiers.order):   # stable sorts, the last key first
        rows.sort(key=lambda e: order_key(eval_expr(key.expr, dict(e[0]), (e[1], e[2]), unit)),
                  reverse=key.descending)
    end = None if modifiers.limit is None else modifiers.offset + modifiers.limit
    return rows[modifiers.offset:end]


def reads_only(modifiers, names) -> bool:
    """Whether every ORDER BY key reads only the variables ``names``."""
    return all(v.name in names for k in modifiers.order for v in A.expr_variables(k.expr))


def ordered_solutions(omega, modifiers, names, unit: str = "ms") -> list:
    """ORDER BY keys reading variables the projection drops (SPARQL 1.1 §18.2.5: OrderBy, then
    Project, then Distinct, then Slice): the solutions sorted — ties by the projected terms' ids,
    then the other variables' (by name), unbound first, then t1, t2 — projected, each answer at its
    first position, then sliced."""
    others = sorted({k for (mu, _t1, _t2) in omega for k, _v in mu} - set(names))

    def tie(e):
        d = dict(e[0])
        return (*[(0, 0) if d.get(n) is None else (1, _order_id(d[n])) for n in names + others], e[1], e[2])

    rows = sorted(omega, key=tie)
    for key in reversed(modifiers.order):
        rows.sort(key=lambda e: order_key(eval_expr(key.expr, dict(e[0]), (e[1], e[2]), unit)),
                  reverse=key.descending)
    out, seen = [], set()
    for (mu, t1, t2) in rows:
        answer = (frozenset((k, v) for k, v in mu if k in names), t1, t2)
        if answer not in seen:
            seen.add(answer)
            out.append(answer)
    end = None if modifiers.limit is None else modifiers.offset + modifiers.limit
    return out[modifiers.offset:end]


def _is_var(x) -> bool:
    return isinstance(x, A.Var)


@dataclass(frozen=True)
class _Window:
    """Inside a stream pattern: a BGP matches inside one item of the window content (eq. 16)."""

    items: list


@dataclass(frozen=True)
class _Graph:
    """Inside a background pattern: a BGP matches the static graph ``triples``; its mappings carry
    ``interval`` = [t1, t] (eq. 17), so the interval operators act as SPARQL's on them."""

    triples: frozenset | set
    interval: tuple[int, int]
    #: C-SPARQL's snapshot: triple → {None: latest τ in any window, stream: latest τ in its window}
    times: dict | None = None


@dataclass(frozen=True)
class _Occurrences:
    """Inside EP-SPARQL's ``Occurrences``: each triple pattern matches in any item (§4.2)."""

    items: list


#: RSEP-QL's event order ≺: by end, then start
def _event_key(e) -> tuple:
    return (e[2], e[1])


def _firsts(events) -> set:
    events = set(events)
    return {e for e in events if not any(_event_key(o) < _event_key(e) for o in events)}


def _lasts(events) -> set:
    events = set(events)
    return {e for e in events if not any(_event_key(e) < _event_key(o) for o in events)}


_UNBOUNDED = (-(1 << 63), (1 << 63) - 1)


class _Evaluator:
    def __init__(self, background, streams, at, time_unit):
        self.background, self.streams, self.at, self.unit = background, streams, at, time_unit
        self.consumed: set = set()   # (window name, item, triple) used by earlier evaluations
        self.used: set = set()       # ... used by this one (consuming policies only)
        self.outer: dict = {}        # inside EXISTS: the mapping substituted into its pattern

    def query(self, query, scope=None):
        token = EVALUATION_INSTANT.set(self.at)      # NOW()
        try:
            return self._query(query, scope)
        finally:
            EVALUATION_INSTANT.reset(token)

    def _query(self, query, scope=None):
        form = query.form if isinstance(query, (A.Query, A.SubSelect)) else query
        match form:
            case A.Project(variables=variables, inner=inner):
                names = [v.name for v in variables]
                omega = self.eval(inner, scope)
                modifiers = query.modifiers if isinstance(query, (A.Query, A.SubSelect)) else None
                if modifiers is not None and not reads_only(modifiers, names):
                    return ordered_solutions(omega, modifiers, names, self.unit)
                answers = {(frozenset((k, v) for k, v in mu if k in names), t1, t2) for (mu, t1, t2) in omega}
                return answers if modifiers is None else ordered(answers, modifiers, names, self.unit)
            case A.Construct(template=template, inner=inner):
                omega = self.eval(inner, scope)
                out = set()
                for (mu, t1, t2) in omega:
                    d = dict(mu)
                    for tp in template:
                        triple = tuple(d.get(x.name) if _is_var(x) else fresh_blank(x[2:], d, t1, t2)
                                       if x.startswith("_:") else x for x in (tp.s, tp.p, tp.o))
                        if None not in triple:
                            out.add((triple, t1, t2))
                return out
        raise TypeError(f"not a query form: {type(form).__name__}")

    def eval(self, node, scope: _Window | _Graph | None):
        """⟦node, t⟧; ``scope`` says what a BGP matches: a window's items, a background graph, or
        nothing (None: outside both)."""
        match node:
            case A.BGP(patterns=patterns):
                return self.bgp(patterns, scope)
            case A.Join(left=left, right=right):
                return join(self.eval(left, scope), self.eval(right, scope))
            case A.Union(left=left, right=right):
                return union(self.eval(left, scope), self.eval(right, scope))
            case A.LeftJoin(left=left, right=right, condition=condition):
                return self.left_join(self.eval(left, scope), self.eval(right, scope), condition, scope)
            case A.Filter(condition=condition, inner=inner) if (isinstance(scope, _Graph) and scope.times is not None
                                                                and A.uses_timestamp(condition)):
                return self.timed_filter(condition, inner, scope)
            case A.Filter(condition=condition, inner=inner):
                return {e for e in self.eval(inner, scope) if self.holds(condition, e, scope=scope)}
            case A.GraphPattern(graph=A.Var(name=g), pattern=pattern, streams=streams) if (
                    isinstance(scope, _Graph) and scope.times is not None):             # GRAPH ?g, §18.6
                out = set()
                for stream in streams:
                    for (mu, t1, t2) in self.eval(A.GraphPattern(stream, pattern), scope):
                        bound = dict(mu).get(g)
                        if bound is None:
                            out.add((mu | {(g, stream)}, t1, t2))
                        elif bound == stream:
                            out.add((mu, t1, t2))
                return out
            case A.GraphPattern(graph=name, pattern=pattern) if isinstance(scope, _Graph) and scope.times is not None:
                times = {tr: {None: slot[name], name: slot[name]} for tr, slot in scope.times.items() if name in slot}
                return self.eval(pattern, _Graph(set(times), scope.interval, times))
            case A.Minus(left=left, right=right):
                return minus(self.eval(left, scope), self.eval(right, scope))
            case A.Extend(inner=inner, var=var, expr=expr):                     # §18.5 Extend
                from cep.terms.numbers import term_value
                out = set()
                for (mu, t1, t2) in self.eval(inner, scope):
                    value = term_value(expr, {**self.outer, **dict(mu)}, (t1, t2), self.unit,
                                       lambda pattern, m: self.exists(pattern, m, scope))
                    out.add((mu | {(var.name, value)} if value is not None else mu, t1, t2))
                return out
            case A.NamedGraph(name=name, pattern=pattern, graphs=graphs) if isinstance(scope, _Graph):
                if not isinstance(name, A.Var):
                    if (graphs is not None and name not in graphs) or (graphs is None and name not in self.background):
                        return set()   # not a named graph of the dataset: no solution (§18.5 Graph)
                    return self.eval(pattern, _Graph(self.named(name), scope.interval))
                out = set()
                for g in (graphs if graphs is not None else [g for g in self.background if g is not None]):
                    bound = frozenset({(name.name, g)})
                    out |= {(merge(mu, bound), t1, t2) for (mu, t1, t2) in self.eval(pattern, _Graph(self.named(g), scope.interval))
                            if compatible(mu, bound)}
                return out
            case A.Values(variables=variables, rows=rows) if scope is None or isinstance(scope, _Graph):
                t1, t2 = scope.interval if isinstance(scope, _Graph) else (MIN_TIME, self.at)
                return {(frozenset((v.name, x) for v, x in zip(variables, row) if x is not None), t1, t2)
                        for row in rows}
            case A.SubSelect():
                return set(self.query(node, scope))
            case _ if isinstance(scope, _Graph) and not isinstance(node, A.Aggregate):
                raise TypeError(f"cannot evaluate {type(node).__name__} on a background graph")
            case A.StreamPattern(pattern=pattern):
                return self.eval(pattern, _Window(self.window(node)))
            case A.Background(graph=name, pattern=pattern):
                return self.eval(pattern, _Graph(self.graph(name), (MIN_TIME, self.at)))
            case A.Sequence(left=left, right=right):
                return seq(self.eval(left, scope), self.eval(right, scope))
            case A.SeqWithout(left=left, negated=negated, right=right):
                return seq_wo(self.eval(left, scope), self.eval(negated, scope), self.eval(right, scope))
            case A.NoHead(negated=negated, right=right):
                return no_head(self.eval(negated, scope), self.eval(right, scope))
            case A.NoTail(left=left, negated=negated):
                return no_tail(self.eval(left, scope), self.eval(negated, scope), self.at)
            case A.Occurrences(pattern=pattern):
                return self.eval(pattern, _Occurrences(occurrences(self.streams.values(), self.at)))
            case A.CoverJoin(left=left, right=right):
                return cover_join(self.eval(left, scope), self.eval(right, scope))
            case A.EqJoin(left=left, right=right):
                return eq_join(self.eval(left, scope), self.eval(right, scope))
            case A.CoverLeftJoin(left=left, optional=optional, condition=condition):
                return self.optional(left, optional, "left", condition, scope)
            case A.EqLeftJoin(left=left, optional=optional, condition=condition):
                return self.optional(left, optional, "equal", condition, scope)
            case A.SeqRightJoin(optional=optional, right=right, condition=condition):
                return self.optional(right, optional, "seq", condition, scope)
            case A.Snapshot():
                return self.eval(node.pattern, self.snapshot(node))
            case A.Aggregate(inner=inner, specs=specs):
                omega = self.eval(inner, scope)
                if not omega and all(not spec.group for spec in specs):   # SPARQL's implicit group
                    interval = scope.interval if isinstance(scope, _Graph) else self.empty_interval(inner)
                    return aggregate({(frozenset(), *interval)}, specs, empty=True)
                return aggregate(omega, specs)
            case A.GroupCover(inner=inner, group=group, specs=specs):             # GROUP BY over events
                return group_cover(self.eval(inner, scope), group, specs, self.at)
            case A.WindowGraph(stream=stream, window=spec, pattern=pattern):       # RSEP-QL eq. 3
                if stream not in self.streams:
                    raise MissingInputError(f"no stream {stream}; streams are {sorted(self.streams)}")
                merged = {tr for (_item, g, _t1, _t2) in rsep_window(self.streams[stream], spec, self.at, self.unit)
                          for tr in g}
                return self.eval(pattern, _Graph(merged, (MIN_TIME, self.at)))
            case A.Match(inner=inner, policy=policy):
                events = self.events(inner, _UNBOUNDED, frozenset())
                if policy in A.CONSUMING_POLICIES:
                    for e in events:
                        self.used |= e[3]
                return {(mu, t1, t2) for (mu, t1, t2, _used) in events}
        raise TypeError(f"cannot evaluate {type(node).__name__} here")

    # -- RSEP-QL event patterns: sets of (μ, t1, t2, used (window, item, triple) triples)
    def events(self, node, bounds, bindings) -> set:
        lo, hi = bounds
        match node:
            case A.EventPattern(name=name, stream=stream, window=spec, pattern=pattern):
                if stream not in self.streams:
                    raise MissingInputError(f"no stream {stream}; streams are {sorted(self.streams)}")
                out = set()
                patterns = [(tp.s, tp.p, tp.o) for tp in pattern.patterns]
                for (item, g, t1, _t2) in rsep_window(self.streams[stream], spec, self.at, self.unit):
                    if not lo <= t1 <= hi:
                        continue
                    graph = {tr for tr in g if (name, item, tr) not in self.consumed}
                    for mu in _match_triples(patterns, graph, _is_var):
                        if compatible(mu, bindings):
                            d = dict(mu)
                            used = frozenset((name, item, tuple(d.get(x.name) if _is_var(x) else x for x in tp))
                                             for tp in patterns)
                            out.add((mu, t1, t1, used))
                return out
            case A.FirstEvent(inner=inner):
                return _firsts(self.events(inner, bounds, bindings))
            case A.LastEvent(inner=inner):
                return _lasts(self.events(inner, bounds, bindings))
            case A.EventSeq(left=left, right=right, policy=policy):
                return self.event_seq(left, right, policy, bounds, bindings)
        raise TypeError(f"not an event pattern: {node!r}")

    def event_seq(self, left, right, policy, bounds, bindings) -> set:
        lo, hi = bounds
        seconds = self.events(right, bounds, bindings)
        out = set()
        if policy == "naive":                                              # eq. 9
            for (m1, t1, t2, u1) in _lasts(self.events(left, bounds, bindings)):
                for (m2, t3, t4, u2) in _lasts(seconds):
                    if compatible(m1, m2) and t2 < t3:
                        out.add((merge(m1, m2), t1, t4, u1 | u2))
            return out
        for e2 in seconds:
            m2, t3, t4, u2 = e2
            firsts = self.events(left, (lo, min(hi, t3 - 1)), merge(bindings, m2))   # eq. 7: μ2(E1)
            if policy == "chronological":                                  # eq. 10
                firsts = _firsts(firsts)
            elif policy == "recent":                                       # eq. 11
                firsts = _lasts(firsts)
            for (m1, t1, t2, u1) in firsts:
                if policy == "chronological" and any(
                        _event_key(o) < _event_key(e2) and compatible(m1, o[0]) and t2 < o[1] for o in seconds):
                    continue
                if policy == "recent" and any(
                        _event_key(e2) < _event_key(o) and compatible(m1, o[0]) and t2 < o[1] for o in seconds):
                    continue
                out.add((merge(m1, m2), t1, t4, u1 | u2))
        return out

    def holds(self, condition, element, stamp=None, scope=None) -> bool:
        mu, t1, t2 = element
        values = {**self.outer, **dict(mu)}
        return ebv(eval_expr(condition, values, (t1, t2), self.unit, stamp,
                             lambda pattern, m: self.exists(pattern, m, scope))) is True

    def exists(self, pattern, mu: dict, scope) -> bool:
        """EXISTS { pattern } for ``mu`` (SPARQL 1.1 §18.6): substitute(pattern, μ) has a solution in
        ``scope``; FILTERs inside read μ's values too (they are substituted as well)."""
        saved, self.outer = self.outer, dict(mu)
        try:
            return bool(self.eval(substitute(pattern, mu), scope))
        finally:
            self.outer = saved

    # -- C-SPARQL
    def empty_interval(self, inner) -> tuple[int, int]:
        """The interval an answer of ``inner`` has at this evaluation: [c, c] over a Snapshot, else
        a background's [MIN_TIME, t]."""
        found = A.snapshots(inner)
        if found:
            c = found[0].instant(self.at, self.unit)
            return (c, c)
        return (MIN_TIME, self.at)

    def snapshot(self, node: A.Snapshot) -> _Graph:
        """The merged graph of ``node`` at this evaluation (module docstring)."""
        c = node.instant(self.at, self.unit)
        static = self.graph(node.graph) if (node.graph is not None or None in self.background) else set()
        times: dict = {}
        for stream, spec in node.windows:
            if stream not in self.streams:
                raise MissingInputError(f"no stream {stream}; streams are {sorted(self.streams)}")
            keys = (stream,) if stream in node.named else (None, stream)   # a named one: GRAPH only
            for (_item, g, t1, _t2) in csparql_window(self.streams[stream], spec, c, self.unit):
                for tr in g:
                    slot = times.setdefault(tr, {})
                    for key in keys:
                        slot[key] = max(slot.get(key, t1), t1)
        return _Graph(set(static) | {tr for tr, slot in times.items() if None in slot}, (c, c), times)

    def timed_filter(self, condition, inner, scope: _Graph) -> set:
        """A FILTER calling timestamp() (§3.3): per solution of its BGP, the timestamps of the
        triples each pattern matched."""
        times = scope.times
        if isinstance(inner, A.BGP):
            solutions = self.bgp_matches(inner.patterns, scope.triples)
        else:
            solutions = [(mu, None) for (mu, _t1, _t2) in self.eval(inner, scope)]
        patterns = inner.patterns if isinstance(inner, A.BGP) else ()

        def stamp(e, mu: dict):
            if isinstance(e, A.Timestamp):
                found = [times.get(tr, {}).get(e.stream) for tp, tr in zip(patterns, matched)
                         if tr is not None and e.var in tp.variables()]
            else:
                want = [mu.get(x.name) if _is_var(x) else x for x in (e.s, e.p, e.o)]
                found = [slot.get(None) for tr, slot in times.items()
                         if all(w is None or w == v for w, v in zip(want, tr))]
            found = [t for t in found if t is not None]
            return max(found) if found else None

        out = set()
        lo, hi = scope.interval
        for mu, matched in solutions:
            if self.holds(condition, (mu, lo, hi), stamp):
                out.add((mu, lo, hi))
        return out

    def bgp_matches(self, patterns, graph) -> list[tuple[frozenset, list]]:
        """The BGP's solutions, each with the triple each pattern matched (None for a path)."""
        sols: list[tuple[dict, list]] = [({}, [])]
        for tp in patterns:
            nxt = []
            for d, matched in sols:
                if isinstance(tp, A.PathPattern):
                    for mu in self.path_solutions(tp, graph):
                        if compatible(frozenset(d.items()), mu):
                            nxt.append(({**d, **dict(mu)}, matched + [None]))
                    continue
                for mu in _match_triples([(tp.s, tp.p, tp.o)], graph, _is_var):
                    if compatible(frozenset(d.items()), mu):
                        triple = tuple(dict(mu).get(x.name) if _is_var(x) else x for x in (tp.s, tp.p, tp.o))
                        nxt.append(({**d, **dict(mu)}, matched + [triple]))
            sols = nxt
        return [(frozenset(d.items()), matched) for d, matched in sols]

    def optional(self, mandatory, optional, order, condition, scope):
        keep = None if condition is None else (lambda e: self.holds(condition, e, scope=scope))
        return optional_join(self.eval(mandatory, scope), self.eval(optional, scope), order, keep)

    def bgp(self, patterns, scope) -> set[Element]:
        match scope:
            case _Window(items=items):
                return match_bgp_in_items([(tp.s, tp.p, tp.o) for tp in patterns], items, _is_var)
            case _Occurrences(items=items):
                out = None
                for tp in patterns:
                    if isinstance(tp, A.PathPattern):
                        raise ValueError(f"property path {tp} over a stream")
                    part = match_bgp_in_items([(tp.s, tp.p, tp.o)], items, _is_var)
                    out = part if out is None else cover_join(out, part)
                if out is None:
                    raise ValueError("an empty group over the stream has no interval")
                return out
            case _Graph(triples=graph, interval=(t1, t2)):
                sols = [frozenset()]
                for tp in patterns:
                    if isinstance(tp, A.PathPattern):
                        part = self.path_solutions(tp, graph)
                    else:
                        part = _match_triples([(tp.s, tp.p, tp.o)], graph, _is_var)
                    sols = [merge(a, b) for a in sols for b in part if compatible(a, b)]
                return {(mu, t1, t2) for mu in sols}
        raise ValueError("a basic graph pattern outside WINDOW and background")

    def left_join(self, o1, o2, condition, scope=None):
        o2 = list(o2)
        out = set()
        for (m1, t1, t2) in o1:
            matched = False
            for (m2, t3, t4) in o2:
                if compatible(m1, m2) and max(t1, t3) <= min(t2, t4):
                    m = merge(m1, m2)
                    if condition is None or self.holds(condition, (m, max(t1, t3), min(t2, t4)), scope=scope):
                        out.add((m, max(t1, t3), min(t2, t4)))
                        matched = True
            if not matched:
                out.add((m1, t1, t2))
        return out

    def window(self, node):
        if node.stream not in self.streams:
            raise MissingInputError(f"no stream {node.stream}; streams are {sorted(self.streams)}")
        stream, t = self.streams[node.stream], self.at
        match node.window:
            case A.Now():
                return w_now(stream, t)
            case A.All():
                return w_all(stream, t)
            case A.Triples(n=n):
                return w_triples(stream, t, n)
            case A.Range(range=duration, step=slide, tumbling=tumbling):
                T = duration.ticks(self.unit)
                step = T if tumbling else (slide.ticks(self.unit) if slide is not None else None)
                return w_range(stream, t, T) if step is None else w_step(stream, t, T, step)
        raise TypeError(f"unknown window {node.window!r}")

    def named(self, name):
        """A named graph of the dataset (no fallback to the default graph)."""
        if name not in self.background:
            raise MissingInputError(f"no named graph {name} was given; graphs are {list(self.background)}")
        return self.background[name]

    def graph(self, name):
        if isinstance(name, tuple):   # several FROMs: their merge (none: the empty graph)
            return set().union(set(), *(self.graph(g) for g in name))
        if name not in self.background and name is not None and None in self.background:
            name = None  # as cep.engines.spark.evaluate.evaluate: FROM <g> read from the default graph the caller gave
        if name not in self.background:
            raise MissingInputError(f"no background graph {name}; graphs are {list(self.background)}")
        return self.background[name]

    def path_solutions(self, tp, graph) -> list[frozenset]:
        from paths.reference import evaluate as path_eval

        s_var, o_var = _is_var(tp.s), _is_var(tp.o)
        pairs = path_eval(graph, tp.path, start=None if s_var else tp.s, end=None if o_var else tp.o)
        out = []
        for (x, y) in pairs:
            if s_var and o_var and tp.s.name == tp.o.name and x != y:
                continue
            d = {}
            if s_var:
                d[tp.s.name] = x
            if o_var:
                d[tp.o.name] = y
            out.append(frozenset(d.items()))
        return out


# ---------------------------------------------------------------------------------------------
# FILTER expressions (SPARQL 1.1 §17), values as N-Triples terms; errors are ``_ERROR``

class _Error:
    def __repr__(self):
        return "error"


_ERROR = _Error()


@dataclass(frozen=True)
class _Temporal:
    """A duration or a dateTime, in exact seconds (``cep.terms.literals.temporal_value``)."""

    kind: str
    seconds: Any


def _simple_string(term):
    lit = parse_literal(term)
    if lit is not None and lit[1] is None and lit[2] == XSD_STRING:
        return lit[0]
    return None


def ebv(value):
    """Effective boolean value (§17.2.2): True, False or _ERROR."""
    if value is _ERROR or value is None:
        return _ERROR
    if isinstance(value, bool):
        return value
    if isinstance(value, Number):
        return not (value.value == 0 or (value.kind in ("float", "double") and math.isnan(value.value)))
    lit = parse_literal(value)
    if lit is None:
        return _ERROR
    if lit[2] == XSD_BOOLEAN:
        return lit[0] in ("true", "1") if lit[0] in ("true", "false", "1", "0") else False
    if lit[2] in NUMERIC_DATATYPES:
        n = numeric_value(value)
        return False if n is None else not (n == 0 or math.isnan(n))
    if lit[2] == XSD_STRING:
        return lit[0] != ""
    return _ERROR


def _num(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, Number):
        return float(value.value)
    return numeric_value(value) if isinstance(value, str) else None


def _term_of(value):
    """A value as an N-Triples term (booleans and numbers from expressions become literals)."""
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^<{XSD_BOOLEAN}>'
    if isinstance(value, Number):
        return value.term()
    return value


def eval_expr(e, mu: dict, interval: tuple | None = None, unit: str = "ms", stamp=None, exists=None):
    """Value of expression ``e`` (a ``cep.algebra.patterns`` expression) under mapping ``mu``: a term
    string, a bool, a ``cep.terms.numbers.Number``, a duration/dateTime, or _ERROR (SPARQL 1.1 §17). ``interval``: the
    solution's (t1, t2) in ``unit`` ticks, which getDURATION() / getSTARTTIME() / getENDTIME() read
    (EP-SPARQL §4.2, σ_{tα tω}). ``stamp(e, mu)``: the time (ticks) a timestamp() call ``e``
    yields for ``mu``, or None (C-SPARQL §3.3; no ``stamp``: an error). ``exists(pattern, mu)``:
    whether EXISTS { pattern } holds for ``mu`` (no ``exists``: an error)."""
    def sub(x):
        return eval_expr(x, mu, interval, unit, stamp, exists)

    if numeric(e):
        n = number(e, sub, lambda: solution_value("RAND", [], mu, interval, unit))
        return _ERROR if n is None else n
    match e:
        case A.Exists(pattern=pattern):
            return _ERROR if exists is None else exists(pattern, mu)
        case A.Builtin(name=name, args=args) if name in SOLUTION_BUILTINS:
            return solution_value(name, [sub(a) for a in args], mu, interval, unit)
        case A.Builtin(name=name, args=args):
            return _builtin(name, args, sub)
        case A.IntervalFn(kind=kind):
            if interval is None:
                return _ERROR
            from decimal import Decimal
            per_tick = Decimal(TIME_UNITS[unit]) / 1000
            t1, t2 = interval
            if kind == "DURATION":
                return _Temporal("duration", (Decimal(t2) - Decimal(t1)) * per_tick)
            return _Temporal("dateTime", Decimal(t1 if kind == "STARTTIME" else t2) * per_tick)
        case A.Timestamp() | A.PatternTimestamp():
            t = None if stamp is None else stamp(e, mu)
            if t is None:
                return _ERROR
            from decimal import Decimal
            return _Temporal("dateTime", Decimal(t) * Decimal(TIME_UNITS[unit]) / 1000)
        case A.Var(name=name):
            return mu.get(name, _ERROR)
        case A.Const(term=term):
            return term
        case A.Bound(var=var):
            return var.name in mu
        case A.Not(expr=inner):
            v = ebv(sub(inner))
            return _ERROR if v is _ERROR else not v
        case A.And(left=left, right=right):
            a, b = ebv(sub(left)), ebv(sub(right))
            if a is False or b is False:
                return False
            return _ERROR if (a is _ERROR or b is _ERROR) else True
        case A.Or(left=left, right=right):
            a, b = ebv(sub(left)), ebv(sub(right))
            if a is True or b is True:
                return True
            return _ERROR if (a is _ERROR or b is _ERROR) else False
        case A.Neg(expr=inner):
            n = _num(sub(inner))
            return _ERROR if n is None else -n
        case A.Arith(op=op, left=left, right=right):
            a, b = _num(sub(left)), _num(sub(right))
            if a is None or b is None:
                return _ERROR
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            return _ERROR if b == 0 else a / b
        case A.Compare(op=op, left=left, right=right):
            return _compare(op, sub(left), sub(right))
        case A.Str(expr=inner):
            t = _term_of(sub(inner))
            if not isinstance(t, str):
                return _ERROR
            if t.startswith("<"):
                return '"' + t[1:-1].replace("\\", "\\\\").replace('"', '\\"') + '"'
            m = LITERAL_RE.match(t)
            return '"' + m.group(1) + '"' if m else _ERROR
        case A.Lang(expr=inner):
            lit = _literal_of(sub(inner))
            return _ERROR if lit is None else f'"{lit[1] or ""}"'
        case A.Datatype(expr=inner):
            lit = _literal_of(sub(inner))
            return _ERROR if lit is None else f"<{lit[2]}>"
        case A.Regex(text=text, pattern=pattern, flags=flags):
            lit = _literal_of(sub(text))
            pat = parse_literal(_term_of(sub(pattern)) or "")
            letters = parse_literal(_term_of(sub(flags)) or "") if flags is not None else ("", None, None)
            if lit is None or pat is None or letters is None:
                return _ERROR
            prefix = "".join(f"(?{f})" for f in letters[0] if f in "imsx")
            return re.search(prefix + pat[0], lit[0]) is not None
    raise TypeError(f"unknown expression {type(e).__name__}")


_STRINGS = (XSD_STRING, "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")


def _string_literal(value):
    """(lexical, lang or None) of a string literal (simple, xsd:string, language-tagged), else None."""
    lit = _literal_of(value)
    if lit is None or lit[2] not in _STRINGS:
        return None
    return lit[0], lit[1]


def _escape(lex: str) -> str:
    return lex.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


#: the evaluation instant NOW() reads (set by each evaluation; a Spark task evaluating BIND sets it)
EVALUATION_INSTANT: ContextVar = ContextVar("evaluation_instant", default=None)
#: the solution's hash, where the mapping at hand holds only some of the solution's variables (Spark's
#: BIND sees the terms its expression reads); None: ``solution_hash`` of the mapping and interval
SOLUTION_SEED: ContextVar = ContextVar("solution_seed", default=None)
#: the salts that make each solution-dependent built-in draw its own bits from the solution's hash
SALTS = {"RAND": 1, "UUID": (2, 3), "STRUUID": (2, 3), "BNODE": 4, "BNODE_ARG": 5}


def solution_hash(mu: TMapping, interval: tuple | None) -> int:
    """The hash RAND(), UUID(), STRUUID() and BNODE() draw from: Spark's ``xxhash64`` chained (seed
    42, nulls skipped) over the term ids of the solution's variables by name, then its interval's
    ends — as ``fresh_blank`` names a template's blank nodes, and as ``cep.engines.spark.filters`` computes it
    from a solution's columns. Same solution, same values: a replayed answer is the same answer."""
    seed = SOLUTION_SEED.get()
    if seed is not None:
        return seed
    t1, t2 = interval if interval is not None else (None, None)
    return hash_longs(*(None if mu[name] is None else term_id(mu[name]) for name in sorted(mu)), t1, t2)


def uuid_text(h1: int, h2: int) -> str:
    """A version-4 UUID's text (RFC 4122) from two hashes' 128 bits: the version digit set to 4 and
    the variant's two bits to 10 (``cep.engines.spark.filters`` builds the same from columns)."""
    digits = f"{h1 & 0xFFFFFFFFFFFFFFFF:016x}{h2 & 0xFFFFFFFFFFFFFFFF:016x}"
    variant = "89ab"[int(digits[16], 16) & 3]
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{variant}{digits[17:20]}-{digits[20:]}"


def solution_value(name: str, values: list, mu: TMapping, interval: tuple | None, unit: str):
    """NOW, RAND, UUID, STRUUID and BNODE (``cep.algebra.expressions.SOLUTION_BUILTINS``), given their
    arguments' values, under solution ``mu`` with ``interval``."""
    if name == "NOW":                                            # §17.4.5.1
        at = EVALUATION_INSTANT.get()
        if at is None:
            return _ERROR
        from decimal import Decimal
        term = datetime_term(Decimal(at) * Decimal(TIME_UNITS[unit]) / 1000)
        return _ERROR if term is None else term
    seed = solution_hash(mu, interval)
    if name == "RAND":                                           # §17.4.4.5: a double in [0, 1)
        h = hash_longs(seed, SALTS["RAND"])
        return ((h & 0xFFFFFFFFFFFFFFFF) >> 11) * 2.0 ** -53
    if name in ("UUID", "STRUUID"):                              # §17.4.3.x, §17.4.2.12
        text = uuid_text(*(hash_longs(seed, salt) for salt in SALTS["UUID"]))
        return f"<urn:uuid:{text}>" if name == "UUID" else f'"{text}"'
    if not values:                                               # BNODE(), §17.4.2.9
        h = hash_longs(seed, SALTS["BNODE"])
    else:                                                        # BNODE(simple literal or xsd:string)
        if any(v is _ERROR for v in values):
            return _ERROR
        text = _string_literal(values[0])
        if text is None or text[1] is not None:
            return _ERROR
        h = fast_xxh64(text[0].encode("utf-8"), hash_longs(seed, SALTS["BNODE_ARG"]) & 0xFFFFFFFFFFFFFFFF)
    return f"_:b{h & 0xFFFFFFFFFFFFFFFF:016x}"


def _builtin(name, args, sub):
    """SPARQL 1.1 §17.4 built-ins (``cep.algebra.expressions.BUILTINS``)."""
    if name == "IF":                                             # §17.4.1.2
        cond = ebv(sub(args[0]))
        return _ERROR if cond is _ERROR else sub(args[1] if cond else args[2])
    if name == "COALESCE":                                       # §17.4.1.4
        for arg in args:
            value = sub(arg)
            if value is not _ERROR and value is not None:
                return value
        return _ERROR
    values = [sub(a) for a in args]
    if any(v is _ERROR for v in values):
        return _ERROR
    if name in ("STRSTARTS", "STRENDS", "CONTAINS"):             # §17.4.3.8-10, compatibility §17.4.3.1.3
        a, b = _string_literal(values[0]), _string_literal(values[1])
        if a is None or b is None or (b[1] is not None and a[1] != b[1]):
            return _ERROR
        return {"STRSTARTS": a[0].startswith, "STRENDS": a[0].endswith,
                "CONTAINS": a[0].__contains__}[name](b[0])
    if name == "CONCAT":                                         # §17.4.3.12
        parts = [_string_literal(v) for v in values]
        if any(p is None for p in parts):
            return _ERROR
        langs = {p[1] for p in parts}
        lang = langs.pop() if len(langs) == 1 else None
        return f'"{_escape("".join(p[0] for p in parts))}"' + (f"@{lang}" if lang else "")
    if name == "SUBSTR":                                         # §17.4.3.3, fn:substring
        a = _string_literal(values[0])
        start = _integer(values[1])
        length = _integer(values[2]) if len(values) == 3 else None
        if a is None or start is None or (len(values) == 3 and length is None):
            return _ERROR
        first = start
        end = math.inf if length is None else first + length
        text = "".join(ch for p, ch in enumerate(a[0], 1) if first <= p < end)
        return f'"{_escape(text)}"' + (f"@{a[1]}" if a[1] else "")
    if name in ("STRBEFORE", "STRAFTER"):                        # §17.4.3.9-10
        a, b = _string_literal(values[0]), _string_literal(values[1])
        if a is None or b is None or (b[1] is not None and a[1] != b[1]):
            return _ERROR
        at = a[0].find(b[0])
        if at < 0:
            return '""'
        text = a[0][:at] if name == "STRBEFORE" else a[0][at + len(b[0]):]
        return f'"{_escape(text)}"' + (f"@{a[1]}" if a[1] else "")
    if name == "REPLACE":                                        # §17.4.3.15, fn:replace
        a = _string_literal(values[0])
        pattern, replacement = parse_literal(_term_of(values[1]) or ""), parse_literal(_term_of(values[2]) or "")
        flags = parse_literal(_term_of(values[3]) or "") if len(values) == 4 else ("", None, None)
        if a is None or pattern is None or replacement is None or flags is None:
            return _ERROR
        prefix = "".join(f"(?{f})" for f in flags[0] if f in "imsx")
        python = re.sub(r"\\([$\\])|\$([0-9])", lambda m: m.group(1).replace("\\", "\\\\") if m.group(1)
                        else f"\\g<{m.group(2)}>", replacement[0])
        try:
            text = re.sub(prefix + pattern[0], python, a[0])
        except (re.error, IndexError):
            return _ERROR
        return f'"{_escape(text)}"' + (f"@{a[1]}" if a[1] else "")
    if name in TERM_BUILTINS:
        return _term_builtin(name, values)
    if name in ("UCASE", "LCASE"):
        a = _string_literal(values[0])
        if a is None:
            return _ERROR
        lex = a[0].upper() if name == "UCASE" else a[0].lower()
        return f'"{_escape(lex)}"' + (f"@{a[1]}" if a[1] else "")
    term = _term_of(values[0])
    if name in ("ISIRI", "ISURI"):
        return isinstance(term, str) and term.startswith("<")
    if name == "ISBLANK":
        return isinstance(term, str) and term.startswith("_:")
    if name == "ISLITERAL":
        return isinstance(term, str) and term.startswith('"') or isinstance(values[0], bool)
    if name == "ISNUMERIC":
        return _num(values[0]) is not None
    if name == "SAMETERM":
        a, b = _term_of(values[0]), _term_of(values[1])
        return _ERROR if not (isinstance(a, str) and isinstance(b, str)) else a == b
    raise TypeError(f"unknown built-in {name}")


_HASHES = {"MD5": "md5", "SHA1": "sha1", "SHA256": "sha256", "SHA384": "sha384", "SHA512": "sha512"}
#: RFC 3986 unreserved characters: what ENCODE_FOR_URI leaves as they are
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
def resolve_iri(base: str, reference: str) -> str:
    """``reference`` resolved against ``base`` (RFC 3986 §5.2, as the parser resolves relative
    ``<iri>`` references: ``urllib.parse.urljoin``)."""
    from urllib.parse import urldefrag, urljoin

    return urldefrag(base)[0] if reference == "" else urljoin(base, reference)   # urljoin keeps the fragment


#: an absolute IRI IRI() accepts: a scheme, no character N-Triples forbids in an IRI
ABSOLUTE_IRI = r"^[A-Za-z][A-Za-z0-9+.\-]*:[^<>\"{}|^`\\\x00-\x20]*$"


def _term_builtin(name, values):
    """§17.4.2-17.4.6: terms from strings (LANGMATCHES, STRDT, STRLANG, IRI, ENCODE_FOR_URI, the
    hash functions) and a dateTime's time zone (TIMEZONE, TZ)."""
    import hashlib

    if name in ("TIMEZONE", "TZ"):                               # §17.4.5.8-9
        lit = _literal_of(values[0])
        m = re.match(DATETIME_PATTERN, lit[0]) if lit is not None and lit[2] == XSD_DATETIME else None
        if m is None:
            return _ERROR
        zone = m.group(3)
        if name == "TZ":
            return f'"{zone or ""}"'
        if zone is None:
            return _ERROR
        if zone == "Z":
            return f'"PT0S"^^<{XSD_DAYTIMEDURATION}>'
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        text = ("-" if zone[0] == "-" and (hours or minutes) else "") + "PT" + (f"{hours}H" if hours else "") + (
            f"{minutes}M" if minutes else "") + ("" if hours or minutes else "0S")
        return f'"{text}"^^<{XSD_DAYTIMEDURATION}>'
    if name in ("IRI", "URI"):                                   # §17.4.2.8
        term = _term_of(values[0])
        if isinstance(term, str) and term.startswith("<"):
            return term
        lex = _simple_string(term) if isinstance(term, str) else None
        if lex is not None and len(values) > 1 and not re.match(ABSOLUTE_IRI, lex):
            lex = resolve_iri(values[1][1:-1], lex)             # the query's BASE (cep.lowering.translate adds it)
        return f"<{lex}>" if lex is not None and re.match(ABSOLUTE_IRI, lex) else _ERROR
    a = _string_literal(values[0])
    if a is None:
        return _ERROR
    if name == "ENCODE_FOR_URI":                                 # §17.4.3.11
        return '"' + "".join(ch if ch in _UNRESERVED else "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
                             for ch in a[0]) + '"'
    if name in _HASHES:                                          # §17.4.6: simple literals and xsd:strings
        if a[1] is not None:
            return _ERROR
        return f'"{hashlib.new(_HASHES[name], a[0].encode("utf-8")).hexdigest()}"'
    b = _term_of(values[1])
    if name == "LANGMATCHES":                                    # §17.4.3.16, RFC 4647 basic filtering
        tag, lrange = (a[0] if a[1] is None else None), (_simple_string(b) if isinstance(b, str) else None)
        if tag is None or lrange is None:
            return _ERROR
        if lrange == "*":
            return tag != ""
        return tag.lower() == lrange.lower() or tag.lower().startswith(lrange.lower() + "-")
    if a[1] is not None:                                         # STRDT, STRLANG: a simple literal
        return _ERROR
    if name == "STRDT":                                          # §17.4.3.17
        if not (isinstance(b, str) and b.startswith("<")):
            return _ERROR
        return f'"{_escape(a[0])}"' + ("" if b == f"<{XSD_STRING}>" else f"^^{b}")
    lang = _simple_string(b) if isinstance(b, str) else None    # STRLANG, §17.4.3.18
    if not lang or not re.fullmatch(r"[a-zA-Z]+(-[a-zA-Z0-9]+)*", lang):
        return _ERROR
    return f'"{_escape(a[0])}"@{lang.lower()}'


def _integer(value):
    """An xsd:integer argument (SUBSTR's, §17.4.3.3) as an int, else None (a computed number: when
    an xsd:integer, as a stored one)."""
    if isinstance(value, Number):
        return int(value.value) if value.kind == "integer" else None
    lit = _literal_of(value)
    if lit is None or number_kind(lit[2]) != "integer":
        return None
    n = _num(value)
    return None if n is None or not float(n).is_integer() else int(n)


def _literal_of(value):
    """``parse_literal`` of a value as a term (None when it is no literal, or an error)."""
    t = _term_of(value)
    return parse_literal(t) if isinstance(t, str) else None


def _understood(term: str) -> bool:
    """Whether a literal's value is known (a string, a valid boolean / number / time), so that a
    different literal is known to be a different value; an IRI or blank node always is. Two
    different literals compare as an error (RDFterm-equal, §17.4.1.7) unless both are understood
    or one has a language tag (a language-tagged string equals no other kind of literal)."""
    lit = parse_literal(term)
    if lit is None:
        return True
    if lit[2] in _STRINGS:
        return True
    if lit[2] == XSD_BOOLEAN:
        return lit[0] in ("true", "false", "1", "0")
    if lit[2] in NUMERIC_DATATYPES:
        return numeric_value(term) is not None
    return temporal_value(term) is not None


def _temporal(value):
    if isinstance(value, _Temporal):
        return value
    if isinstance(value, str):
        found = temporal_value(value)
        return None if found is None else _Temporal(*found)
    return None


def _compare(op, a, b):
    if a is _ERROR or b is _ERROR:
        return _ERROR
    ta, tb = _temporal(a), _temporal(b)
    if isinstance(a, _Temporal) or isinstance(b, _Temporal) or (ta is not None and tb is not None):
        if ta is None or tb is None or ta.kind != tb.kind:
            return _ERROR
        x, y = ta.seconds, tb.seconds
        return {"=": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
    na, nb = comparable(a), comparable(b)
    if na is not None and nb is not None:   # exact unless a double is involved (XPath's promotion)
        exact = na[0] in ("integer", "decimal") and nb[0] in ("integer", "decimal")
        x, y = (na[1], nb[1]) if exact else (float(na[1]), float(nb[1]))
    else:
        sa, sb = _simple_string(_term_of(a)), _simple_string(_term_of(b))
        if sa is not None and sb is not None:
            x, y = sa, sb
        elif op in ("=", "!="):
            ta, tb = _term_of(a), _term_of(b)
            if ta is None or tb is None:
                return _ERROR
            la, lb = parse_literal(ta), parse_literal(tb)
            if ta != tb and la is not None and lb is not None and not (la[1] or lb[1]) \
                    and not (_understood(ta) and _understood(tb)):
                return _ERROR   # RDFterm-equal (§17.4.1.7): two literals it cannot tell apart
            return (ta == tb) if op == "=" else (ta != tb)
        else:
            return _ERROR
    return {"=": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


# ---------------------------------------------------------------------------------------------
# conversions to and from rows (for comparing with the Spark runtime; pure Python)

def to_records(omega: Iterable[Element], variables: Iterable[str]) -> list[tuple]:
    """Rows ``(value of each variable or None, ..., t1, t2)`` in the order of ``variables``."""
    variables = list(variables)
    return [tuple(dict(mu).get(v) for v in variables) + (t1, t2) for (mu, t1, t2) in omega]


def from_records(rows: Iterable[TMapping], start: str, end: str, column_var) -> set[Element]:
    """A set of mappings with intervals from rows (dict-like) of variable columns (decoded to
    variable names by ``column_var``; other columns ignored) and the interval columns."""
    out = set()
    for row in rows:
        d = row.asDict() if hasattr(row, "asDict") else dict(row)
        mu = []
        for k, v in d.items():
            if k in (start, end) or v is None:
                continue
            try:
                name = column_var(k)
            except ValueError:
                continue
            mu.append((name, v))
        out.add((frozenset(mu), d[start], d[end]))
    return out
