"""RSEP-QL queries at given instants, on the driver: no JVM (``query --at``, issue 37).

The semantics are ``cep.engines.reference``'s ("RSEP-QL" in its module doc; Dell'Aglio et al.,
§4.2-4.4), evaluated at the asked instants in order, as the Spark engine does
(``cep.engines.spark.rsepql``), over term ids:

* **Windows.** Each stream's triples are sorted once (``cep.engines.driver.csparql.StreamIndex``);
  the items an ``EVENT w P`` or ``WINDOW w P`` holds at t — RSEP-QL's W^τ(α, β), t' − α < t_k ≤ t',
  t' = ⌊t/β⌋·β; ``ALL``, t_k ≤ t; ``NOW``, t_k = t — are one slice of it (``WindowConvention.content``
  under the default convention: the same τ).
* **Event patterns** (``A.Match``): ``EVENT w P`` matches P inside one item of the window, within
  the active window and under the bindings of the enclosing SEQ's right side (eq. 7); FIRST / LAST
  by RSEP-QL's order ≺ (end, then start); ``E1 SEQ E2`` under the four policies (naive eq. 9,
  unrestricted, chronological eq. 10, recent eq. 11). Each event carries the (window, item, triple)
  entries it used; a chronological or recent MATCH consumes them (§4.4): the later instants no
  longer see them, so the instants are evaluated in order, each after the one before.
* **Around MATCH**: JOIN and FILTER with background patterns (``cep.engines.driver.static``) and
  ``WINDOW w P`` (SPARQL over the merge of the window's graphs, ``static.pattern_rows``), every
  non-event mapping with [MIN_TIME, t]; GROUP BY / aggregates, one answer per group over the
  interval covering its members (``cep.engines.driver.rows.group_cover``); the projection, or CONSTRUCT's template (a blank node
  named from its solution, ``cep.terms.values.fresh_blank_of_ids``, as on Spark).

What is not here (:func:`refusal` says what and why) runs on Spark.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cep import algebra as A
from cep.algebra.windows import RSEPQL_WINDOWS
from cep.engines.columns import var_column
from cep.engines.driver import rows as L
from cep.engines.driver import static
from cep.engines.driver.csparql import StreamIndex
from cep.engines.errors import MissingInputError
from cep.terms.values import EVALUATION_INSTANT
from rdfcore.hashing import term_id

__all__ = ["refusal", "answers"]

#: the nodes around MATCH, and inside WINDOW w P
_AROUND = (A.Join, A.Filter, A.Match, A.WindowGraph, A.Background, A.GroupCover)
_GRAPH = (A.BGP, A.Join, A.Union, A.LeftJoin, A.Filter)


def refusal(query: A.Query) -> str | None:
    """Why this module does not evaluate the RSEP-QL ``query`` (then Spark does), or None."""
    if query.modifiers is not None:
        return "ORDER BY / LIMIT / OFFSET (on Spark)"
    pending = [query.form.inner]
    while pending:
        node = pending.pop()
        if not isinstance(node, _AROUND):
            return f"{type(node).__name__} in an RSEP-QL query (on Spark)"
        if isinstance(node, A.WindowGraph):
            if any(not isinstance(inner, _GRAPH) for inner in A.walk(node.pattern)):
                return "VALUES, MINUS, BIND, GRAPH or a sub-query in an RSEP-QL WINDOW pattern (on Spark)"
        elif not isinstance(node, (A.Match, A.Background)):
            pending.extend(A.children(node))
    if A.contains(query.form, lambda x: isinstance(x, (A.Exists, A.IntervalFn, A.Timestamp, A.PatternTimestamp))
                  or (isinstance(x, A.Builtin) and x.name in A.SOLUTION_BUILTINS and x.name != "NOW")):
        return ("EXISTS, timestamp(), an interval function or RAND() / UUID() / STRUUID() / BNODE() in an RSEP-QL "
                "query (on Spark)")
    return static.refusal(query)


def _compatible(m1: frozenset, m2: frozenset) -> bool:
    d = dict(m1)
    return all(d.get(k, v) == v for k, v in m2)


def _key(e) -> tuple:
    """RSEP-QL's event order ≺: by end, then start."""
    return (e[2], e[1])


def _firsts(events) -> set:
    events = set(events)
    least = min((_key(e) for e in events), default=None)
    return {e for e in events if _key(e) == least}


def _lasts(events) -> set:
    events = set(events)
    most = max((_key(e) for e in events), default=None)
    return {e for e in events if _key(e) == most}


@dataclass(frozen=True)
class _Instant:
    """One evaluation at t: ``consumed`` the (window, item, triple) entries earlier ones consumed;
    ``used`` receives this one's (consuming policies only)."""

    streams: dict          # {stream IRI: StreamIndex}
    t: int
    time_unit: str
    consumed: frozenset
    used: set
    #: what an instant computes once: each window's items, each EVENT's events over its whole window
    memo: dict = field(default_factory=dict)

    def items(self, stream, spec) -> list:
        """The items window ``spec`` over ``stream`` holds at t: [(item, τ, [id triples])], by τ."""
        key = ("items", stream, spec)
        if key not in self.memo:
            if stream not in self.streams:
                raise MissingInputError(f"no stream {stream}; streams are {sorted(self.streams)}")
            index = self.streams[stream]
            out: dict = {}
            for k in index.window(spec, self.t, self.time_unit, RSEPQL_WINDOWS):
                out.setdefault(index.items[k], (index.times[k], []))[1].append(index.triples[k])
            self.memo[key] = [(item, tau, triples) for item, (tau, triples) in out.items()]
        return self.memo[key]

    def matched(self, node: A.EventPattern) -> list:
        """The events of ``EVENT w P`` over its whole window, unbound: [(μ, τ, τ, used)], by τ. Under
        an active window and bindings (``events``) they are filtered: matching P against μ2(G_k)
        keeps exactly the matches compatible with μ2."""
        key = ("events", node)
        if key not in self.memo:
            patterns = [tuple(x if isinstance(x, A.Var) else term_id(x) for x in (tp.s, tp.p, tp.o))
                        for tp in node.pattern.patterns]
            out = []
            for item, tau, triples in self.items(node.stream, node.window):
                graph = [tr for tr in triples if (node.name, item, tr) not in self.consumed]
                for mu in _matches(patterns, graph):
                    d = dict(mu)
                    used = frozenset((node.name, item, tuple(d[x.name] if isinstance(x, A.Var) else x for x in tp))
                                     for tp in patterns)
                    out.append((mu, tau, tau, used))
            self.memo[key] = out
        return self.memo[key]

    def events(self, node, lo: int, hi: int, bindings: frozenset) -> set:
        """(μ, t1, t2, used) of an event pattern under the active window [lo, hi] and ``bindings``."""
        match node:
            case A.EventPattern():
                return {e for e in self.matched(node) if lo <= e[1] <= hi and _compatible(e[0], bindings)}
            case A.FirstEvent(inner=inner):
                return _firsts(self.events(inner, lo, hi, bindings))
            case A.LastEvent(inner=inner):
                return _lasts(self.events(inner, lo, hi, bindings))
            case A.EventSeq(left=left, right=right, policy=policy):
                return self.seq(left, right, policy, lo, hi, bindings)
        raise TypeError(f"not an event pattern: {node!r}")

    def seq(self, left, right, policy: str, lo: int, hi: int, bindings: frozenset) -> set:
        """E1 SEQ E2 (eq. 7) under ``policy`` (eq. 9-11; ``cep.engines.reference``'s reading)."""
        seconds = self.events(right, lo, hi, bindings)
        out = set()
        if policy == "naive":                                              # eq. 9
            for (m1, t1, t2, u1) in _lasts(self.events(left, lo, hi, bindings)):
                for (m2, t3, t4, u2) in _lasts(seconds):
                    if _compatible(m1, m2) and t2 < t3:
                        out.add((m1 | m2, t1, t4, u1 | u2))
            return out
        for e2 in seconds:
            m2, t3, t4, u2 = e2
            firsts = self.events(left, lo, min(hi, t3 - 1), bindings | m2)      # eq. 7: μ2(E1)
            if policy == "chronological":                                  # eq. 10
                firsts = _firsts(firsts)
            elif policy == "recent":                                       # eq. 11
                firsts = _lasts(firsts)
            for (m1, t1, t2, u1) in firsts:
                if policy == "chronological" and any(_key(o) < _key(e2) and _compatible(m1, o[0]) and t2 < o[1]
                                                     for o in seconds):
                    continue
                if policy == "recent" and any(_key(e2) < _key(o) and _compatible(m1, o[0]) and t2 < o[1]
                                              for o in seconds):
                    continue
                out.add((m1 | m2, t1, t4, u1 | u2))
        return out


def _matches(patterns, graph) -> list[frozenset]:
    """The solutions of triple patterns (variables or ids) inside one item's id triples."""
    solutions: list[dict] = [{}]
    for pattern in patterns:
        found = []
        for d in solutions:
            for triple in graph:
                ext = dict(d)
                for part, value in zip(pattern, triple):
                    if isinstance(part, A.Var):
                        if ext.setdefault(part.name, value) != value:
                            break
                    elif part != value:
                        break
                else:
                    found.append(ext)
        solutions = found
    return [frozenset(d.items()) for d in solutions]


_UNBOUNDED = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True)
class _Evaluation:
    query: A.Query
    background: dict       # {A.Background: L.Rel}
    known: dict
    time_unit: str

    def lookup(self, ids) -> dict:
        known = self.known
        return {i: known[i] for i in ids if i in known}

    def rows(self, node, at: _Instant) -> L.Rel:
        match node:
            case A.Match(inner=inner, policy=policy):
                events = at.events(inner, *_UNBOUNDED, frozenset())
                if policy in A.CONSUMING_POLICIES:
                    for e in events:
                        at.used.update(e[3])
                names = sorted({var_column(k) for (mu, _a, _b, _u) in events for k, _v in mu})
                rows = set()
                for (mu, t1, t2, _u) in events:
                    d = {var_column(k): v for k, v in mu}
                    rows.add(tuple(d.get(n) for n in names) + (t1, t2, at.t, at.t))
                return L.Rel(tuple(names), frozenset(rows))
            case A.WindowGraph(stream=stream, window=spec, pattern=pattern):
                merged = frozenset(tr for (_i, _tau, triples) in at.items(stream, spec) for tr in triples)
                return static.pattern_rows(pattern, static.StaticGraph(merged), self.lookup, self.time_unit)
            case A.Background():
                return self.background[node]
            case A.Join(left=left, right=right):
                return L.join(self.rows(left, at), self.rows(right, at))
            case A.Filter(condition=condition, inner=inner):
                return L.filter_rel(self.rows(inner, at), condition, self.lookup, self.time_unit)
            case A.GroupCover(inner=inner, group=group, specs=specs):
                return L.group_cover(self.rows(inner, at), group, specs, self.known, at.t)
        raise TypeError(f"{type(node).__name__} in an RSEP-QL query is not evaluated on the driver (refusal)")


def answers(query: A.Query, graphs: Mapping, streams: Mapping[str, np.ndarray], instants: Sequence[int],
            time_unit: str, known: dict) -> list[tuple]:
    """⟦query, t⟧ for each t of ``instants`` (increasing), a consuming MATCH not seeing at t what
    it consumed before: rows ``(t, term or None per projected variable..., t1, t2)`` — a
    CONSTRUCT's ``(t, s, p, o, t1, t2)`` — distinct, unsorted. Arguments as
    ``cep.engines.driver.csparql.answers``'; the caller checked :func:`refusal`."""
    read = {e.stream for e in A.rsep_windows(query)}
    indexes = {iri: StreamIndex.of(rows) for iri, rows in streams.items() if iri in read}
    evaluation = _Evaluation(query, {}, known, time_unit)
    evaluation.background.update(static.background_relations(query, graphs, evaluation.lookup, time_unit))
    consumed: frozenset = frozenset()
    out = []
    for t in instants:
        at = _Instant(indexes, t, time_unit, consumed, set())
        token = EVALUATION_INSTANT.set(t)      # NOW()
        try:
            rel = evaluation.rows(query.form.inner, at)
        finally:
            EVALUATION_INSTANT.reset(token)
        consumed = consumed | at.used
        fresh: dict = {}
        rows = L.form_at(query.form, rel, t, fresh)
        known.update(fresh)
        for r in rows:
            out.append((t, *(None if v is None else known[v] for v in r[:-2]), r[-2], r[-1]))
    return out
