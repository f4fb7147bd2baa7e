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
* **One ordered pass per SEQ.** A node's events are a ≺-sorted list, an event pattern's grouped by
  the values of the variables bound around it. E1 SEQ E2 walks E2's events in ≺ order: two events
  are compatible when they agree on the variables the two sides share, so E1's events for an E2
  event are one group of E1 under those values, cut at the E2 event's start — a prefix of one
  sorted list when E1's events at a cut are its events ending by the cut (an event pattern, FIRST
  of one, an unrestricted or chronological SEQ with such a right side; ``_cut_closed``), whose
  FIRST is its head and LAST the last run of equal keys before the cut (LAST E1 too); E1 of
  another kind is evaluated at each cut. Chronological's "no earlier E2 event compatible with the
  E1 event and starting after it ends" (recent's: later) is the latest start among the E2 events
  of the same shared values before it (after it), carried along the pass. The reference evaluator
  asks, per E2 event, every E1 event and every other E2 event: time quadratic in the events.
* **Around MATCH**: JOIN and FILTER with background patterns (``cep.engines.driver.static``) and
  ``WINDOW w P`` (SPARQL over the merge of the window's graphs, ``static.pattern_rows``), every
  non-event mapping with [MIN_TIME, t]; GROUP BY / aggregates, one answer per group over the
  interval covering its members (``cep.engines.driver.rows.group_cover``); the projection, or CONSTRUCT's template (a blank node
  named from its solution, ``cep.terms.values.fresh_blank_of_ids``, as on Spark).

What is not here (:func:`refusal` says what and why) runs on Spark.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from bisect import bisect_right
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

__all__ = ["refusal", "answers", "match_rows"]

#: the nodes around MATCH, and inside WINDOW w P
_AROUND = (A.Join, A.Filter, A.Match, A.WindowGraph, A.Background, A.GroupCover)
_GRAPH = (A.BGP, A.Join, A.Union, A.LeftJoin, A.Filter)


def refusal(query: A.Query) -> str | None:
    """Why this module does not evaluate the RSEP-QL ``query`` (then Spark does), or None."""
    pending = [query.form.inner]
    while pending:
        node = pending.pop()
        if isinstance(node, A.Extend):
            return "a BIND over the MATCH or the windows of an RSEP-QL query (on Spark)"
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


def _key(e) -> tuple:
    """RSEP-QL's event order ≺: by end, then start."""
    return (e[2], e[1])


def _domain(node) -> tuple:
    """The variables every event of ``node`` binds (a BGP match binds all of its own), sorted."""
    return tuple(sorted(v.name for v in A.variables(node)))


def _cut_closed(node) -> bool:
    """Whether ``node``'s events under the active window cut at h are exactly its events under the
    whole window that end by h (so one sorted list answers every cut): an event pattern; FIRST of
    such a node; an unrestricted or chronological SEQ whose right side is such a node (their
    events end with the right side's, and the events a chronological SEQ checks against come
    before). Not LAST, a recent SEQ (a later event of the right side discards) or a naive one."""
    match node:
        case A.EventPattern():
            return True
        case A.FirstEvent(inner=inner):
            return _cut_closed(inner)
        case A.EventSeq(right=right, policy=policy):
            return policy in ("unrestricted", "chronological") and _cut_closed(right)
    return False


@dataclass(frozen=True)
class _Shape:
    """What an event node's evaluation reads of its syntax, per node (by identity: the nodes are
    the query's, which outlives the evaluation): its ``domain`` (``_domain``), whether it is
    ``_cut_closed``, and a SEQ's ``shared`` variables (the domains' intersection: on them an E1
    event and an E2 event are compatible or not)."""

    domain: dict
    closed: dict
    shared: dict

    @staticmethod
    def of(root) -> "_Shape":
        shape = _Shape({}, {}, {})
        for node in A.walk(root):
            shape.domain[id(node)] = _domain(node)
            shape.closed[id(node)] = _cut_closed(node)
            if isinstance(node, A.EventSeq):
                shape.shared[id(node)] = tuple(sorted(set(_domain(node.left)) & set(_domain(node.right))))
        return shape


def _project(mu: frozenset, names: tuple) -> tuple:
    d = dict(mu)
    return tuple(d[n] for n in names)


def _restrict(bindings: frozenset, names: tuple) -> frozenset:
    return frozenset((k, v) for k, v in bindings if k in names)


def _first_group(events: list) -> list:
    """The events of a ≺-sorted list that no other precedes."""
    if not events:
        return []
    least, end = _key(events[0]), 1
    while end < len(events) and _key(events[end]) == least:
        end += 1
    return events[:end]


def _last_group(events: list, stop: int | None = None) -> list:
    """The events of a ≺-sorted list (its first ``stop``) that no other follows."""
    stop = len(events) if stop is None else stop
    if stop == 0:
        return []
    most, start = _key(events[stop - 1]), stop - 1
    while start > 0 and _key(events[start - 1]) == most:
        start -= 1
    return events[start:stop]


@dataclass(frozen=True)
class _Instant:
    """One evaluation at t: ``consumed`` the (window, item, triple) entries earlier ones consumed;
    ``used`` receives this one's (consuming policies only).

    An event node's events are computed under an active window [−∞, h] (eq. 7 only lowers its
    upper bound) and bindings, as a ≺-sorted list without duplicates; the bindings are cut to the
    node's variables (the others never decide a compatibility) so that equal evaluations are one."""

    streams: dict          # {stream IRI: StreamIndex}
    t: int
    time_unit: str
    consumed: frozenset
    used: set
    shape: _Shape
    #: what an instant computes once: each window's items, each event node's events per cut and bindings
    #: (the nodes by identity, as in ``_Shape``)
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

    def matched(self, node: A.EventPattern, names: tuple) -> dict:
        """The events of ``EVENT w P`` over its whole window, unbound, grouped by their values of
        ``names``: {values: [(μ, τ, τ, used)] by τ}. Under bindings of ``names`` the events are one
        group: matching P against μ2(G_k) keeps exactly the matches compatible with μ2."""
        key = ("events", id(node), names)
        if key not in self.memo:
            if names:
                groups: dict = {}
                for e in self.matched(node, ()).get((), ()):
                    groups.setdefault(_project(e[0], names), []).append(e)
                self.memo[key] = groups
            else:
                patterns = [tuple(x if isinstance(x, A.Var) else term_id(x) for x in (tp.s, tp.p, tp.o))
                            for tp in node.pattern.patterns]
                out = set()
                for item, tau, triples in self.items(node.stream, node.window):
                    graph = {tr for tr in triples if (node.name, item, tr) not in self.consumed}
                    for mu in _matches(patterns, graph):
                        d = dict(mu)
                        used = frozenset((node.name, item, tuple(d[x.name] if isinstance(x, A.Var) else x for x in tp))
                                         for tp in patterns)
                        out.add((mu, tau, tau, used))
                self.memo[key] = {(): sorted(out, key=_key)}
        return self.memo[key]

    def events(self, node, hi: int, bindings: frozenset) -> list:
        """The events (μ, t1, t2, used) of an event node under the active window [−∞, hi] and
        ``bindings``, ≺-sorted, distinct."""
        bindings = _restrict(bindings, self.shape.domain[id(node)])
        key = ("at", id(node), hi, bindings)
        if key not in self.memo:
            match node:
                case A.EventPattern():
                    names = tuple(sorted(k for k, _v in bindings))
                    d = dict(bindings)
                    group = self.matched(node, names).get(tuple(d[n] for n in names), [])
                    out = group[:bisect_right(group, hi, key=lambda e: e[2])]
                case A.FirstEvent(inner=inner):
                    out = _first_group(self.events(inner, hi, bindings))
                case A.LastEvent(inner=inner):
                    out = _last_group(self.events(inner, hi, bindings))
                case A.EventSeq():
                    out = self.seq(node, hi, bindings)
                case _:
                    raise TypeError(f"not an event pattern: {node!r}")
            self.memo[key] = out
        return self.memo[key]

    def firsts_before(self, left, policy: str, hi: int, bindings: frozenset, t3: int) -> list:
        """μ2(E1) under the window cut at t3 − 1 (eq. 7), ``bindings`` holding μ2, as ``policy``
        picks among them: all (unrestricted), FIRST (chronological), LAST (recent). A node whose
        cuts are one sorted list (``_cut_closed``), or LAST of one, is read from that list at the
        cut; any other is evaluated at the cut."""
        cut = t3 - 1
        inner = left.inner if isinstance(left, A.LastEvent) else None
        closed = self.shape.closed
        if closed[id(left)] or (inner is not None and closed[id(inner)]):
            ordered = self.events(left if inner is None else inner, hi, bindings)
            stop = bisect_right(ordered, cut, key=lambda e: e[2])
            if inner is not None or policy == "recent":
                return _last_group(ordered, stop)
            if policy == "chronological":
                return [e for e in _first_group(ordered) if e[2] <= cut]
            return ordered[:stop]
        found = self.events(left, cut, bindings)
        if policy == "chronological":
            return _first_group(found)
        if policy == "recent":
            return _last_group(found)
        return found

    def seq(self, node: A.EventSeq, hi: int, bindings: frozenset) -> list:
        """E1 SEQ E2 (eq. 7) under ``policy`` (eq. 9-11; ``cep.engines.reference``'s reading), in one
        pass over E2's events in ≺ order. An E1 event is compatible with an E2 event when they agree
        on their shared variables, so chronological's "no earlier E2 event compatible with the E1
        event and after it" asks only the E2 events of the same shared values: their latest start
        among the ones before (after, for recent) is kept per shared values as the pass goes."""
        left, right, policy = node.left, node.right, node.policy
        seconds = self.events(right, hi, bindings)
        shared = self.shape.shared[id(node)]
        out = set()
        if policy == "naive":                                              # eq. 9
            firsts: dict = {}
            for e1 in _last_group(self.events(left, hi, bindings)):
                firsts.setdefault(_project(e1[0], shared), []).append(e1)
            for (m2, t3, t4, u2) in _last_group(seconds):
                for (m1, t1, t2, u1) in firsts.get(_project(m2, shared), ()):
                    if t2 < t3:
                        out.add((m1 | m2, t1, t4, u1 | u2))
            return sorted(out, key=_key)
        key = ("discarding", id(seconds), shared, policy)      # the list is the memo's: alive, one identity
        if key not in self.memo:
            self.memo[key] = self.discarding_starts(seconds, shared, policy)
        bound = self.memo[key]
        for e2, latest in zip(seconds, bound):
            m2, t3, t4, u2 = e2
            for (m1, t1, t2, u1) in self.firsts_before(left, policy, hi, bindings | m2, t3):   # eq. 7: μ2(E1)
                if latest is not None and t2 < latest:                    # eq. 10, 11
                    continue
                out.add((m1 | m2, t1, t4, u1 | u2))
        return sorted(out, key=_key)

    @staticmethod
    def discarding_starts(seconds: list, shared: tuple, policy: str) -> list:
        """Per E2 event (``seconds`` ≺-sorted), the latest start of the E2 events with its shared
        values that precede it (chronological) or follow it (recent) by ≺, None if none or under
        another policy: an E1 event ending before that start is not its partner."""
        if policy not in A.CONSUMING_POLICIES:
            return [None] * len(seconds)
        order = range(len(seconds)) if policy == "chronological" else range(len(seconds) - 1, -1, -1)
        out: list = [None] * len(seconds)
        latest: dict = {}     # shared values → latest start among the events already passed
        pending: list = []    # the passed events of the current ≺ key (ties discard none of each other)
        for i in order:
            e = seconds[i]
            if pending and _key(seconds[pending[0]]) != _key(e):
                for j in pending:
                    values = _project(seconds[j][0], shared)
                    latest[values] = max(latest.get(values, seconds[j][1]), seconds[j][1])
                pending = []
            out[i] = latest.get(_project(e[0], shared))
            pending.append(i)
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


def _match_events(node: A.Match, at: _Instant) -> list:
    """``MATCH E``'s events at ``at``'s instant, (μ, t1, t2, used) ≺-sorted; a consuming policy's
    used entries go to ``at.used`` (all of them: §4.4 consumes what every answer of the MATCH used)."""
    events = at.events(node.inner, _UNBOUNDED[1], frozenset())
    if node.policy in A.CONSUMING_POLICIES:
        for e in events:
            at.used.update(e[3])
    return events


def match_rows(query: A.Query, streams: Mapping[str, np.ndarray], instants: Sequence[int],
               time_unit: str) -> tuple[list[A.Match], tuple[str, ...], list[tuple]]:
    """The events of every MATCH of ``query`` at each of ``instants`` (increasing), what earlier
    instants consumed taken out, and nothing else of the query: (the MATCH nodes, in
    ``A.walk`` order; the variable columns of all of them, sorted; rows ``(k, t, id or None per
    column..., t1, t2)``, k the MATCH's position). What a consuming MATCH consumes depends on its
    events alone, so the rest of the query can be evaluated apart, keyed by the instant, over
    these rows (``cep.engines.spark.ordered.match_in_one_task``). Ids only: no term is read."""
    matches = [n for n in A.walk(query.form) if isinstance(n, A.Match)]
    read = {e.stream for m in matches for e in A.event_patterns(m)}
    missing = sorted(read - set(streams))
    if missing:
        raise MissingInputError(f"no stream {missing[0]}; streams are {sorted(streams)}")
    indexes = {iri: StreamIndex.of(rows) for iri, rows in streams.items() if iri in read}
    shape = _Shape.of(query.form.inner)
    names = tuple(sorted({var_column(v.name) for m in matches for v in A.variables(m)}))
    consumed, out = frozenset(), []
    for t in instants:
        at = _Instant(indexes, t, time_unit, consumed, set(), shape)
        for k, node in enumerate(matches):
            for (mu, t1, t2, _u) in _match_events(node, at):
                d = {var_column(x): v for x, v in mu}
                out.append((k, t, *(d.get(n) for n in names), t1, t2))
        consumed = consumed | at.used
    return matches, names, out


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
            case A.Match():
                events = _match_events(node, at)
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
            time_unit: str, known: dict, consumed: frozenset = frozenset()) -> tuple[list[tuple], frozenset]:
    """⟦query, t⟧ for each t of ``instants`` (increasing), a consuming MATCH not seeing at t what
    it or earlier evaluations consumed: (rows ``(t, term or None per projected variable..., t1, t2)``
    — a CONSTRUCT's ``(t, s, p, o, t1, t2)`` — distinct, unsorted; what is consumed after the last
    instant). ``consumed``: the (window name, item, id triple) entries earlier evaluations consumed
    (a continuous run's previous batches). The other arguments as
    ``cep.engines.driver.csparql.answers``'; the caller checked :func:`refusal`."""
    read = {e.stream for e in A.rsep_windows(query)}
    shape = _Shape.of(query.form.inner)
    indexes = {iri: StreamIndex.of(rows) for iri, rows in streams.items() if iri in read}
    evaluation = _Evaluation(query, {}, known, time_unit)
    evaluation.background.update(static.background_relations(query, graphs, evaluation.lookup, time_unit))
    consumed = frozenset(consumed)
    out = []
    for t in instants:
        at = _Instant(indexes, t, time_unit, consumed, set(), shape)
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
    return out, consumed
