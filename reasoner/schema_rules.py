"""The reasoner's rules over the collected schema, on Python sets of id pairs, and the ids of the
vocabulary the rules read. No pyspark: the driver's reasoner (``reasoner.local``) and the Spark
one (``reasoner.rules``, ``reasoner.materialize``) share them.

Property-level schema (subPropertyOf, equivalentProperty, inverseOf) is bounded by the number of
properties, so both reasoners close it on the driver.
"""
from __future__ import annotations

from rdfcore.hashing import term_id
from rdfcore.vocab import (OWL_EQUIVALENTCLASS, OWL_EQUIVALENTPROPERTY, OWL_INVERSEOF, OWL_SYMMETRICPROPERTY,
                            OWL_TRANSITIVEPROPERTY, RDF_TYPE, RDFS_DOMAIN, RDFS_RANGE, RDFS_SUBCLASSOF,
                            RDFS_SUBPROPERTYOF)

__all__ = ["TYPE", "SC", "SP", "DOM", "RANGE", "EQC", "EQP", "INV", "SYMMETRIC", "TRANSITIVE", "both_ways_set",
           "scm_eqp1", "rdfs5"]

TYPE = term_id(RDF_TYPE)
SC = term_id(RDFS_SUBCLASSOF)
SP = term_id(RDFS_SUBPROPERTYOF)
DOM = term_id(RDFS_DOMAIN)
RANGE = term_id(RDFS_RANGE)
EQC = term_id(OWL_EQUIVALENTCLASS)
EQP = term_id(OWL_EQUIVALENTPROPERTY)
INV = term_id(OWL_INVERSEOF)
SYMMETRIC = term_id(OWL_SYMMETRICPROPERTY)
TRANSITIVE = term_id(OWL_TRANSITIVEPROPERTY)


def both_ways_set(pairs_: set[tuple[int, int]]) -> set[tuple[int, int]]:
    return pairs_ | {(b, a) for a, b in pairs_}


def scm_eqp1(eqp_pairs: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """scm-eqp1: (p owl:equivalentProperty q) ⟹ (p rdfs:subPropertyOf q), (q rdfs:subPropertyOf p).

    On the driver, like rdfs5: property-level schema is collected (``reasoner.materialize``).
    """
    return both_ways_set(eqp_pairs)


def rdfs5(sp_edges: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """rdfs5: (p sp q), (q sp r) ⟹ (p sp r) — the transitive closure of subPropertyOf.

    Property hierarchies are schema-sized (bounded by the number of properties), so this runs on
    the driver over the collected edges; class hierarchies (rdfs11) run on Spark.
    """
    successors: dict[int, set[int]] = {}
    for a, b in sp_edges:
        successors.setdefault(a, set()).add(b)
    closure = set()
    for start in successors:
        stack, seen = list(successors[start]), set()
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(successors.get(node, ()))
        closure.update((start, node) for node in seen)
    return closure
