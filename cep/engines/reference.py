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
  a ``WindowConvention`` (``evaluate``'s ``window_convention``) makes them the C-SPARQL engine's
  [c' − ρ, c'), closing at t0 + kσ (``WindowConvention.content`` decides which τ, for every engine),
  and with ``empty="skip"`` an instant whose windows all hold nothing has no answer;
* a triple's timestamp is the greatest τ of its occurrences in the windows (per stream too); a
  background triple that no window holds has none;
* ``timestamp(?v [, s])`` (§3.3): ts(v, P) = max τ of the triples matched by the FILTER's BGP's
  patterns that mention v (from stream s); ``timestamp(s p o)``: max τ of the window triples
  matching the pattern under the solution;
* ``aggregate`` (§3.1): each mapping extended with f(p) over the mappings that agree with it on
  the group variables (``cep.terms.aggregates.aggregate_value``: the functions, their result types and
  lexical forms, shared with the driver engine).

SPARQL GROUP BY over event clauses (``A.GroupCover``, ``group_cover``; every language): one
element per group of the distinct elements, its aggregates, over [min t1, max t2] of its members;
the implicit group of nothing over [t, t].

``evaluate`` walks the cep algebra (``cep.algebra.patterns``) with these operators: equations (1)-(17).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping as TMapping, Sequence
from dataclasses import dataclass
from typing import Any

from cep import algebra as A
from cep.engines.errors import MissingInputError
from cep.engines.rules import DERIVED, MAX_ROUNDS, check_rules, derived_item, no_fixpoint
from cep.terms.aggregates import aggregate_value
from cep.terms.values import EVALUATION_INSTANT, ebv, eval_expr, fresh_blank, order_key, term_value
from cep.algebra.timeline import MIN_TIME, close_instant
from cep.algebra.windows import RSEPQL_WINDOWS, SKIP, WindowConvention, WindowFunctions, apply_window
from paths.reference import evaluate as path_eval
from rdfcore.hashing import term_id

__all__ = [
    "Mapping", "Element", "Item", "MIN_TIME",
    "mapping", "compatible", "merge",
    "join", "union", "seq", "seq_wo", "no_head", "no_tail", "minus", "substitute",
    "cover_join", "eq_join", "optional_join", "occurrences", "rsep_window", "evaluate_sequence", "evaluate_instants",
    "csparql_window", "aggregate", "aggregate_value", "group_cover", "ordered",
    "w_range", "w_now", "w_all", "w_triples", "w_step", "close_instant",
    "match_bgp_in_items", "evaluate",
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


#: the window functions above, by kind (``cep.algebra.windows.apply_window``)
_WINDOWS = WindowFunctions(sliding=w_range, stepped=w_step, count=w_triples, landmark=w_all)


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


def evaluate(query, background: TMapping, streams: TMapping, at: int, time_unit: str = "ms", rules=(), *,
             window_convention: WindowConvention | None = None) -> set:
    """The answer of a cep algebra ``Query`` at time ``at`` (eq. 1).

    ``background``: {graph IRI or None: iterable of (s, p, o) N-Triples strings};
    ``streams``: {stream IRI: list of items ``(item, frozenset of triples, t1, t2)``}.
    ``rules``: EP-SPARQL CONSTRUCT rules: the query reads the streams' Q-closure (``cep.engines.rules``).
    ``window_convention``: how C-SPARQL windows are bounded and reported (``cep.algebra.WindowConvention``;
    None: RSEP-QL's (c − ρ, c]); a convention the query cannot take raises ``WindowConventionError``.
    Returns a set of ``(mapping, t1, t2)`` for SELECT (mapping restricted to the projected
    variables) — a list in order for a query with ORDER BY / LIMIT / OFFSET — or of
    ``((s, p, o), t1, t2)`` for CONSTRUCT.
    """
    convention = A.check_window_convention(query, window_convention)
    if rules:
        streams = close_rules(check_rules(query, rules), background, streams, at, time_unit)
    evaluator = _Evaluator({g: set(ts) for g, ts in background.items()}, streams, at, time_unit, convention)
    return evaluator.query(query)


def close_rules(rules: Sequence[A.Query], background: Mapping, streams: Mapping, at: int, time_unit: str = "ms",
          max_rounds: int = MAX_ROUNDS) -> dict:
    """The streams plus ``DERIVED``, the occurrences the rules derive at ``at`` (the reference)."""
    derived: dict = {}
    for _round in range(max_rounds):
        current = {**streams, DERIVED: [(item, frozenset({triple}), t1, t2)
                                        for (triple, t1, t2), item in derived.items()]}
        new = {}
        for rule in rules:
            for (triple, t1, t2) in evaluate(rule, background, current, at, time_unit):
                if (triple, t1, t2) not in derived:
                    new[(triple, t1, t2)] = derived_item(triple, t1, t2)
        if not new:
            return current
        derived.update(new)
    raise no_fixpoint(rules, at, max_rounds)


def evaluate_sequence(query, background: TMapping, streams: TMapping, times, time_unit: str = "ms", *,
                      window_convention: WindowConvention | None = None) -> list[set]:
    """The answers of ``query`` at each of the evaluation instants ``times`` (increasing), in
    order. They are ``evaluate``'s, except that an RSEP-QL MATCH with a consuming policy
    (chronological, recent; §4.4) no longer sees the stream triples its earlier answers used."""
    return evaluate_instants(query, {g: set(ts) for g, ts in background.items()}, streams, times, time_unit,
                             window_convention=window_convention)[0]


def evaluate_instants(query, background: TMapping, streams: TMapping, times, time_unit: str = "ms",
                      consumed: frozenset | set = frozenset(), *,
                      window_convention: WindowConvention | None = None) -> tuple[list, set]:
    """``evaluate_sequence`` continued from ``consumed`` (the (window name, item, triple) entries
    earlier evaluations consumed); returns the answers per instant and what is consumed after the
    last. ``background``: {graph: set of triples}, used as given (not copied)."""
    convention = A.check_window_convention(query, window_convention)
    consumed = set(consumed)
    out = []
    last = None
    for at in times:
        if last is not None and at <= last:
            raise ValueError(f"evaluation instants must increase, got {at} after {last}")
        last = at
        evaluator = _Evaluator(background, streams, at, time_unit, convention)
        evaluator.consumed = consumed
        out.append(evaluator.query(query))
        consumed = consumed | evaluator.used
    return out, consumed


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


def csparql_window(stream: Iterable[Item], spec, c: int, time_unit: str = "ms",
                   convention: WindowConvention = RSEPQL_WINDOWS) -> list[Item]:
    """C-SPARQL's windows at evaluation instant c (§3.2), under ``convention``
    (``WindowConvention.content``): by default logical ones as ``rsep_window`` (the same
    (c' − ρ, c'] with c' = ⌊c/σ⌋σ), ``TRIPLES n`` the last n triples started by c."""
    lo, hi, n = convention.content(spec, c, time_unit)
    if n is not None:
        return w_triples(stream, hi, n)
    return [it for it in stream if (lo is None or lo <= it[2]) and it[2] <= hi]


# ---------------------------------------------------------------------------------------------
# C-SPARQL's aggregates (§3.1)

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
    def __init__(self, background, streams, at, time_unit, convention: WindowConvention = RSEPQL_WINDOWS):
        self.background, self.streams, self.at, self.unit = background, streams, at, time_unit
        self.convention = convention   # C-SPARQL's windows (cep.algebra.windows.WindowConvention)
        self.consumed: set = set()   # (window name, item, triple) used by earlier evaluations
        self.used: set = set()       # ... used by this one (consuming policies only)
        self.outer: dict = {}        # inside EXISTS: the mapping substituted into its pattern

    def query(self, query, scope=None):
        if isinstance(query, A.Query) and self.convention.empty == SKIP and self.windows_empty(query):
            return [] if query.modifiers is not None else set()
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
                if modifiers is not None and not modifiers.reads_only(names):
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
    def windows_empty(self, query) -> bool:
        """Whether no window of ``query``'s snapshots holds a stream triple at this evaluation
        (``WindowConvention.empty`` "skip": then the instant has no answer)."""
        for node in A.snapshots(query):
            c = node.instant(self.at, self.unit, self.convention)
            for stream, spec in node.windows:
                if stream not in self.streams:
                    raise MissingInputError(f"no stream {stream}; streams are {sorted(self.streams)}")
                if any(g for (_i, g, _t1, _t2) in csparql_window(self.streams[stream], spec, c, self.unit,
                                                                  self.convention)):
                    return False
        return True

    def empty_interval(self, inner) -> tuple[int, int]:
        """The interval an answer of ``inner`` has at this evaluation: [c, c] over a Snapshot, else
        a background's [MIN_TIME, t]."""
        found = A.snapshots(inner)
        if found:
            c = found[0].instant(self.at, self.unit, self.convention)
            return (c, c)
        return (MIN_TIME, self.at)

    def snapshot(self, node: A.Snapshot) -> _Graph:
        """The merged graph of ``node`` at this evaluation (module docstring)."""
        c = node.instant(self.at, self.unit, self.convention)
        static = self.graph(node.graph) if (node.graph is not None or None in self.background) else set()
        times: dict = {}
        for stream, spec in node.windows:
            if stream not in self.streams:
                raise MissingInputError(f"no stream {stream}; streams are {sorted(self.streams)}")
            keys = (stream,) if stream in node.named else (None, stream)   # a named one: GRAPH only
            for (_item, g, t1, _t2) in csparql_window(self.streams[stream], spec, c, self.unit, self.convention):
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
        return apply_window(node.window, self.unit, _WINDOWS, self.streams[node.stream], self.at)

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
