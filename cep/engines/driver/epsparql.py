"""EP-SPARQL queries at given instants, on the driver: no JVM (``query --at``, issue 37).

The semantics are ``cep.engines.reference``'s ("EP-SPARQL" in its module doc; Anicic et al., WWW
2011, §4.2), evaluated at each asked instant as the Spark engine does (``Occurrences`` in
``cep.engines.spark.evaluate``, the operators of ``cep.engines.spark.intervals``), over term ids:

* **The stream** at t: every occurrence ⟨triple, [t1, t2]⟩ of every stream given that has ended
  by t (t2 ≤ t), merged into one; with a lookback D (a continuous run's ``--horizon``, the
  ``lookback`` of ``cep.continuous.plan``) only those started at or after t − D. The streams are
  sorted once (``cep.engines.driver.csparql.StreamIndex``) and each triple pattern is matched
  once against all of them (``cep.engines.driver.static.TripleMatch``): its matches at t are a
  slice of those, found by bisection.
* **The operators**: a BGP matches each triple pattern in any occurrence and covers their
  intervals; Join, EQUALS, SEQ, UNION, OPTIONAL, OPTIONALSEQ and EQUALSOPTIONAL are
  ``cep.engines.driver.rows``' ``cover_join``, ``eq_join``, ``seq``, ``union`` and
  ``optional_join``; FILTER and BIND read a solution's mapping and interval (getDURATION() ...),
  NOW() the instant; a sub-query projects, each solution keeping its interval (its ORDER BY
  changes no solution); GROUP BY / aggregates give one answer per group over the interval
  covering its members (``cep.engines.driver.rows.group_cover``). Every row is alive at the
  instant only: its lifetime is [t, t].
* **Rules** (``--rules``, ``cep.engines.rules``): at each instant the stream is first closed
  under the CONSTRUCT rules, round after round until one derives nothing new, as
  ``cep.engines.reference.close_rules`` does; a derived occurrence is matched as a stream's (the
  lookback does not apply to it: it is made of occurrences the lookback kept).
* **The answers**: SELECT's projection; CONSTRUCT's triples, a template blank node named from its
  solution (``cep.terms.values.fresh_blank_of_ids``, as on Spark).

Each instant is evaluated on its own (EP-SPARQL's answers at t read only the occurrences ended by
t); what the instants share is computed once: the sorted stream, each triple pattern's
matches, and each FILTER's (OPTIONAL's condition's) value on a solution, which the later instants
mostly meet again (EP-SPARQL's answers grow with t). What is not here (:func:`refusal` says what and why) runs on Spark.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cep import algebra as A
from cep.algebra.timeline import MIN_TIME
from cep.engines.columns import var_column
from cep.engines.driver import rows as L
from cep.engines.driver.csparql import StreamIndex
from cep.engines.driver.static import TripleMatch
from cep.engines.errors import MissingInputError
from cep.engines.rules import MAX_ROUNDS, no_fixpoint
from cep.terms.values import EVALUATION_INSTANT
from rdfcore.hashing import term_id

__all__ = ["refusal", "rules_refusal", "answers", "derived_rows"]

#: the nodes an EP-SPARQL query may hold here: over the stream, and above it (SELECT expressions)
_EVALUATED = (A.Occurrences, A.BGP, A.CoverJoin, A.EqJoin, A.Sequence, A.Union, A.CoverLeftJoin, A.EqLeftJoin,
              A.SeqRightJoin, A.Filter, A.Extend, A.SubSelect, A.GroupCover, A.Join, A.Values)
#: how a user wrote the nodes refused
_KEYWORDS = {"Join": "a JOIN other than VALUES after WHERE", "Values": "VALUES inside WHERE"}


def refusal(query: A.Query, rules: Sequence[A.Query] = ()) -> str | None:
    """Why this module does not evaluate the EP-SPARQL ``query`` under ``rules`` (then Spark does),
    or None."""
    for q in (query, *rules):
        for node in A.walk(q.form):
            if isinstance(node, (A.Project, A.Construct)) and node is q.form:
                continue
            if not isinstance(node, _EVALUATED) or (
                    isinstance(node, A.Join) and not isinstance(node.right, A.Values)) or (
                    isinstance(node, A.Values) and not any(isinstance(j, A.Join) and j.right is node
                                                           for j in A.walk(q.form))):
                name = type(node).__name__
                return f"{_KEYWORDS.get(name, name)} in an EP-SPARQL query (on Spark)"
            if isinstance(node, A.SubSelect) and node.modifiers is not None and (
                    node.modifiers.limit is not None or node.modifiers.offset):
                return "LIMIT / OFFSET in an EP-SPARQL sub-query (on Spark)"
            if isinstance(node, A.BGP) and any(not isinstance(tp, A.TriplePattern) for tp in node.patterns):
                return "a property path over EP-SPARQL's stream (on Spark)"
        if A.contains(q.form, lambda x: isinstance(x, (A.Exists, A.Timestamp, A.PatternTimestamp))):
            return "EXISTS or timestamp() in an EP-SPARQL query (on Spark)"
    return None


def rules_refusal(rules: Sequence[A.Query]) -> str | None:
    """Why this module does not close a stream under ``rules`` (:func:`derived_rows`), or None."""
    for rule in rules:
        why = refusal(rule)
        if why is not None:
            return why
    return None


@dataclass(frozen=True)
class _Stream:
    """The occurrences of every stream, sorted once (``index``), and each triple pattern's matches
    over them: {pattern: (TripleMatch, positions increasing, the values at each)}."""

    index: StreamIndex
    matched: dict = field(default_factory=dict)

    def matches(self, tp: A.TriplePattern) -> tuple:
        if tp not in self.matched:
            match = TripleMatch.of(tp)
            positions, found = [], []
            for k, triple in enumerate(self.index.triples):
                values = match.values(triple)
                if values is not None:
                    positions.append(k)
                    found.append(values)
            self.matched[tp] = (match, positions, found)
        return self.matched[tp]


@dataclass
class _Evaluation:
    """The query (and its rules) at any instant: ``known`` {id: term} grows with the terms BIND
    and the templates' blank nodes make."""

    stream: _Stream
    known: dict
    time_unit: str
    lookback: int | None
    #: {condition: its values, ``cep.engines.driver.rows.filter_rel``'s memo}
    conditions: dict = field(default_factory=dict)

    def lookup(self, ids) -> dict:
        known = self.known
        return {i: known[i] for i in ids if i in known}

    def at(self, form, t: int, derived: frozenset) -> L.Rel:
        """The rows of ``form``'s pattern at t, the stream closed with the ``derived`` occurrences
        ``(s, p, o, t1, t2)``."""
        token = EVALUATION_INSTANT.set(t)      # NOW()
        try:
            return self.rows(form.inner, t, derived)
        finally:
            EVALUATION_INSTANT.reset(token)

    def rows(self, node, t: int, derived: frozenset) -> L.Rel:
        def sub(inner) -> L.Rel:
            return self.rows(inner, t, derived)

        match node:
            case A.Occurrences(pattern=pattern):
                return sub(pattern)
            case A.BGP(patterns=patterns):
                out = None
                for tp in patterns:
                    part = self.triple(tp, t, derived)
                    out = part if out is None else L.cover_join(out, part)
                if out is None:
                    raise ValueError("an empty group over the stream has no interval")
                return out
            case A.CoverJoin(left=left, right=right):
                return L.cover_join(sub(left), sub(right))
            case A.EqJoin(left=left, right=right):
                return L.eq_join(sub(left), sub(right))
            case A.Sequence(left=left, right=right):
                return L.seq(sub(left), sub(right))
            case A.Union(left=left, right=right):
                return L.union(sub(left), sub(right))
            case A.CoverLeftJoin(left=left, optional=optional, condition=condition):
                return self.optional(sub(left), sub(optional), "left", condition)
            case A.EqLeftJoin(left=left, optional=optional, condition=condition):
                return self.optional(sub(left), sub(optional), "equal", condition)
            case A.SeqRightJoin(optional=optional, right=right, condition=condition):
                return self.optional(sub(right), sub(optional), "seq", condition)
            case A.Filter(condition=condition, inner=inner):
                return L.filter_rel(sub(inner), condition, self.lookup, self.time_unit, self.kept(condition))
            case A.Extend(inner=inner, var=var, expr=expr):
                return L.extend(sub(inner), var, expr, self.known, self.time_unit)
            case A.SubSelect(form=form):
                return project(sub(form.inner), form.variables)
            case A.GroupCover(inner=inner, group=group, specs=specs):
                return L.group_cover(sub(inner), group, specs, self.known, t)
            case A.Join(left=left, right=right):          # VALUES after WHERE (refusal)
                return L.join(sub(left), sub(right))
            case A.Values(variables=variables, rows=rows):  # outside every graph: [MIN_TIME, t]
                return L.Rel.of([var_column(v.name) for v in variables],
                                {tuple(None if x is None else term_id(x) for x in row) + (MIN_TIME, t, t, t)
                                 for row in rows})
        raise TypeError(f"{type(node).__name__} in an EP-SPARQL query is not evaluated on the driver (refusal)")

    def optional(self, mandatory: L.Rel, optional: L.Rel, order: str, condition) -> L.Rel:
        keep = None if condition is None else L.keeper(condition, self.lookup, self.time_unit, self.kept(condition))
        return L.optional_join(mandatory, optional, order, keep)

    def kept(self, condition) -> dict | None:
        """Where ``condition``'s values are kept from one instant to the next (None: it reads the
        instant, NOW()): an instant's solutions are mostly the earlier ones' again."""
        if A.contains(condition, lambda e: isinstance(e, A.Builtin) and e.name == "NOW"):
            return None
        return self.conditions.setdefault(condition, {})

    def triple(self, tp: A.TriplePattern, t: int, derived: frozenset) -> L.Rel:
        """One triple pattern's matches in the occurrences at t: ``(values..., t1, t2, t, t)``."""
        match, positions, found = self.stream.matches(tp)
        index = self.stream.index
        span = index.ended(t, None if self.lookback is None else t - self.lookback)
        times, ends = index.times, index.ends
        rows = set()
        for j in range(bisect_left(positions, span.start), bisect_left(positions, span.stop)):
            k = positions[j]
            if ends[k] <= t:
                rows.add(found[j] + (times[k], ends[k], t, t))
        for (s, p, o, t1, t2) in derived:
            values = match.values((s, p, o))
            if values is not None:
                rows.add(values + (t1, t2, t, t))
        return L.Rel.of(match.columns, rows)

    def closure(self, rules: Sequence[A.Query], t: int) -> frozenset:
        """The occurrences ``rules`` derive at t (``cep.engines.reference.close_rules``)."""
        derived: frozenset = frozenset()
        for _round in range(MAX_ROUNDS):
            new = set()
            for rule in rules:
                for (s, p, o, t1, t2) in self.triples(rule.form, t, derived):
                    if (s, p, o, t1, t2) not in derived:
                        new.add((s, p, o, t1, t2))
            if not new:
                return derived
            derived = derived | new
        raise no_fixpoint(rules, t, MAX_ROUNDS)

    def triples(self, form: A.Construct, t: int, derived: frozenset) -> set:
        """CONSTRUCT's triples at t: ``(s, p, o, t1, t2)`` ids, their blank nodes' terms known."""
        fresh: dict = {}
        out = L.form_at(form, self.at(form, t, derived), t, fresh)
        self.known.update(fresh)
        return out


def project(rel: L.Rel, variables) -> L.Rel:
    """SELECT's (a sub-query's) projection of ``rel`` onto ``variables``, each row keeping its
    interval and lifetime."""
    where = {v: i for i, v in enumerate(rel.vars)}
    picks = [where.get(var_column(v.name)) for v in variables]
    rows = {tuple(None if i is None else r[i] for i in picks) + r[-4:] for r in rel.rows}
    return L.Rel.of([var_column(v.name) for v in variables], rows)


def derived_rows(rules: Sequence[A.Query], streams: Mapping[str, np.ndarray], instants: Sequence[int],
                 time_unit: str, known: dict) -> list[tuple]:
    """The occurrences ``rules`` derive at each of ``instants`` from the streams' occurrences ended
    by it (``cep.engines.reference.close_rules``) and nothing else: rows ``(t, s, p, o, t1, t2)`` of
    ids; ``known`` receives the terms the templates' blank nodes make. A query over the closed
    stream can then be evaluated apart, keyed by the instant
    (``cep.engines.spark.ordered.derive_in_one_task``). The caller checked :func:`refusal` of the
    rules."""
    if not streams:
        raise MissingInputError("an EP-SPARQL query reads the streams given (--stream); none was given")
    merged = np.vstack([np.asarray(rows, dtype=np.int64).reshape(-1, 6) for rows in streams.values()])
    evaluation = _Evaluation(_Stream(StreamIndex.of(merged)), known, time_unit, None)
    return [(t, *occurrence) for t in instants for occurrence in evaluation.closure(rules, t)]


def answers(query: A.Query, streams: Mapping[str, np.ndarray], instants: Sequence[int], time_unit: str,
            known: dict, rules: Sequence[A.Query] = (), lookback: int | None = None) -> list[tuple]:
    """⟦query, t⟧ for each t of ``instants``, over the streams' occurrences closed under ``rules``:
    rows ``(t, term or None per projected variable..., t1, t2)`` — a CONSTRUCT's ``(t, s, p, o, t1,
    t2)`` — distinct, unsorted. ``streams``: {stream IRI: ``(item, s, p, o, t1, t2)`` id rows};
    ``known``: {id: term}, to which the terms computed are added; ``lookback``: each instant t sees
    the occurrences started at or after t − lookback (None: all). The caller checked
    :func:`refusal`."""
    if not streams:
        raise MissingInputError("an EP-SPARQL query reads the streams given (--stream); none was given")
    merged = np.vstack([np.asarray(rows, dtype=np.int64).reshape(-1, 6) for rows in streams.values()])
    evaluation = _Evaluation(_Stream(StreamIndex.of(merged)), known, time_unit, lookback)
    out = []
    for t in instants:
        derived = evaluation.closure(rules, t) if rules else frozenset()
        fresh: dict = {}
        rows = L.form_at(query.form, evaluation.at(query.form, t, derived), t, fresh)
        known.update(fresh)
        for r in rows:
            out.append((t, *(None if v is None else known[v] for v in r[:-2]), r[-2], r[-1]))
    return out
