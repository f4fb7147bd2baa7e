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
the reference. A template blank node is named from its solution (``cep.terms.values.fresh_blank``),
so a rule that keeps deriving new blank nodes from its own output never reaches a fixpoint: after
``MAX_ROUNDS`` rounds that is an error naming the rules, not a silent cut.

This module holds what every engine shares (the checks, the derived stream, the item ids); the
closure itself is ``cep.engines.reference.close_rules`` (pure Python) and
``cep.engines.spark.evaluate.close_rules`` (DataFrames); both ``evaluate`` functions take ``rules=``.
"""
from __future__ import annotations

from collections.abc import Sequence

from cep import algebra as A
from rdfcore.errors import SidecarError
from rdfcore.hashing import hash_longs, term_id

__all__ = ["DERIVED", "MAX_ROUNDS", "RulesError", "check_rules", "derived_item", "no_fixpoint"]

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


def no_fixpoint(rules, at, max_rounds) -> RulesError:
    return RulesError(f"the CONSTRUCT rules derive new occurrences at instant {at} after {max_rounds} rounds: they "
                      f"never reach a fixpoint (a rule whose template blank node is fed back to it makes a new one "
                      f"each round); rules: " + "; ".join(str(r.form)[:120] for r in rules))
