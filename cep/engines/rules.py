"""EP-SPARQL's CONSTRUCT rules and the Q-closure of a stream (Anicic et al., WWW 2011, §3 and the
end of §4.2; ../shared/papers/000_...).

"We allow for recursion by employing CONSTRUCT queries, conceiving them as a kind of production
rule. Thereby, the result graph of such a query is assumed to be added to the RDF stream." Given a
set Q of CONSTRUCT rules, the Q-closure clos_Q(S) of a stream S is the smallest set of triple
occurrences that holds S and, for every rule q, every ⟨⟨s, p, o⟩, t, t'⟩ the rule gives over
clos_Q(S); a query is evaluated over clos_Q(S), not over S.

At an evaluation instant t the closure is built from the occurrences ended by t (so it only grows
with t, and answers stay timewise monotone): round after round, each rule is evaluated over the
stream plus what the rules derived so far, until a round derives nothing new. A derived
occurrence is an item of its own, in the stream ``DERIVED`` (EP-SPARQL merges every stream), its
id ``xxhash64(s, p, o, t, t')`` of the triple's term ids and interval — the same on Spark and in
the reference. A template blank node is named from its solution (``cep.engines.reference.fresh_blank``),
so a rule that keeps deriving new blank nodes from its own output never reaches a fixpoint: after
``MAX_ROUNDS`` rounds that is an error naming the rules, not a silent cut.

``close`` is the reference (pure Python), ``close_spark`` the same on DataFrames; ``cep.engines.reference
.evaluate`` and ``cep.engines.spark.evaluate.evaluate`` take ``rules=`` and call them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from cep import algebra as A
from rdfcore.errors import SidecarError
from rdfcore.hashing import hash_longs, term_id

__all__ = ["DERIVED", "MAX_ROUNDS", "RulesError", "check_rules", "close", "close_spark", "derived_item"]

#: the stream the derived occurrences are added to
DERIVED = "<urn:rsp-sidecar:q-closure>"
#: rounds before a closure that keeps growing is an error
MAX_ROUNDS = 64


class RulesError(SidecarError, ValueError):
    """Rules that are no EP-SPARQL CONSTRUCT queries, or that never reach a fixpoint."""


def check_rules(query: A.Query, rules: Sequence[A.Query]) -> tuple[A.Query, ...]:
    """The rules, checked: CONSTRUCT queries over the EP-SPARQL stream, for an EP-SPARQL query."""
    rules = tuple(rules)
    if not rules:
        return rules
    if not A.is_epsparql(query):
        raise RulesError("CONSTRUCT rules feed EP-SPARQL's stream (its Q-closure, §4.2); this query is not "
                         "EP-SPARQL")
    for k, rule in enumerate(rules, 1):
        if not isinstance(rule, A.Query) or not isinstance(rule.form, A.Construct) or not A.is_epsparql(rule):
            raise RulesError(f"rule {k} is not an EP-SPARQL CONSTRUCT query (a rule derives triple occurrences "
                             f"from the stream: CONSTRUCT {{ ... }} WHERE {{ ... }}, read as EP-SPARQL)")
    return rules


def derived_item(triple, t1: int, t2: int) -> int:
    """The item id of a derived occurrence: Spark's ``xxhash64(s, p, o, t1, t2)`` over term ids."""
    return hash_longs(*(term_id(x) for x in triple), t1, t2)


def close(rules: Sequence[A.Query], background: Mapping, streams: Mapping, at: int, time_unit: str = "ms",
          max_rounds: int = MAX_ROUNDS) -> dict:
    """The streams plus ``DERIVED``, the occurrences the rules derive at ``at`` (the reference)."""
    from cep.engines.reference import evaluate

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
    raise _no_fixpoint(rules, at, max_rounds)


def close_spark(rules: Sequence[A.Query], background, streams: Mapping, at: int, time_unit: str = "ms", *,
                dictionary=None, terms: list | None = None, max_rounds: int = MAX_ROUNDS) -> dict:
    """``close`` on Spark: {stream: DataFrame (item, s, p, o, t_start, t_end)} plus ``DERIVED``. One
    plan per rule and round, one count per round. The (id, term) rows of the terms the rules
    compute (blank nodes, aggregates) are appended to ``terms``: decode with them."""
    from pyspark.sql import functions as F

    from cep.engines.columns import ITEM
    from cep.engines.spark.evaluate import evaluate
    from rdfcore.schema import ID, O, P, S, T_END, T_START, TERM

    terms = [] if terms is None else terms
    first = next(iter(streams.values()), None)
    spark = first.sparkSession if first is not None else dictionary.sparkSession
    derived = spark.createDataFrame([], f"{ITEM} long, {S} long, {P} long, {O} long, {T_START} long, {T_END} long")
    count = 0
    known = dictionary
    for _round in range(max_rounds):
        current = {**streams, DERIVED: derived}
        found_terms: list = []
        parts = [evaluate(rule, background, current, at, time_unit, dictionary=known, terms=found_terms)
                 .select(S, P, O, T_START, T_END) for rule in rules]
        found = parts[0]
        for part in parts[1:]:
            found = found.unionByName(part)
        grown = (found.select(F.xxhash64(S, P, O, T_START, T_END).alias(ITEM), S, P, O, T_START, T_END)
                 .unionByName(derived).distinct().localCheckpoint())
        n = grown.count()
        if found_terms:
            # the terms this round computed (BIND, a sub-query's expr AS ?v, blank nodes), cut
            # from their plan: a term computed by BIND reads the dictionary, which holds the
            # earlier rounds' terms, so their plans would nest round into round
            extra = found_terms[0].select(ID, TERM)
            for more in found_terms[1:]:
                extra = extra.unionByName(more.select(ID, TERM))
            extra = extra.distinct().localCheckpoint()
            for more in found_terms:
                more.unpersist()
            terms.append(extra)
            known = extra if known is None else known.unionByName(extra)
        if n == count:
            return current
        derived, count = grown, n
    raise _no_fixpoint(rules, at, max_rounds)


def _no_fixpoint(rules, at, max_rounds) -> RulesError:
    return RulesError(f"the CONSTRUCT rules derive new occurrences at instant {at} after {max_rounds} rounds: they "
                      f"never reach a fixpoint (a rule whose template blank node is fed back to it makes a new one "
                      f"each round); rules: " + "; ".join(str(r.form)[:120] for r in rules))
