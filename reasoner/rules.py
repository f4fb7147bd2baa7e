"""One function per entailment rule, named by its rule id, on id-encoded DataFrames.

ρdf rules (RDF 1.1 Semantics, §9.2.1 "RDFS entailment patterns"):

* rdfs2  ``(p dom c), (x p y) ⟹ (x type c)``
* rdfs3  ``(p range c), (x p y) ⟹ (y type c)``            (not for literal y: no literal subjects)
* rdfs5  ``(p sp q), (q sp r) ⟹ (p sp r)``
* rdfs7  ``(p sp q), (x p y) ⟹ (x q y)``
* rdfs9  ``(c sc d), (x type c) ⟹ (x type d)``
* rdfs11 ``(c sc d), (d sc e) ⟹ (c sc e)``

OWL 2 RL rules the reasoner adds (OWL 2 Profiles, §4.3, tables 5, 6 and 9):

* scm-eqc1 ``(c equivalentClass d) ⟹ (c sc d), (d sc c)``
* scm-eqp1 ``(p equivalentProperty q) ⟹ (p sp q), (q sp p)``
* prp-inv1/2 ``(p inverseOf q), (x p y) ⟹ (y q x)`` and ``(x q y) ⟹ (y p x)``
* prp-symp ``(p type SymmetricProperty), (x p y) ⟹ (y p x)``
* prp-trp  ``(p type TransitiveProperty), (x p y), (y p z) ⟹ (x p z)``

Schema inputs are two-column frames ``(sub, sup)`` (for sc/sp/dom/range/inverse) or one column
``sub`` (symmetric/transitive properties); instance inputs are triples ``(s, p, o)``; typing rules
return ``(instance, class)``. Broadcasting the small schema side is the caller's decision
(``reasoner.materialize`` knows the sizes).
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from reasoner.closure import transitive_closure
from rdfcore.schema import CLASS, ID, INSTANCE, MID, O, P, S, SUB, SUP
from reasoner.schema_rules import EQC, TYPE

RULES = ("rdfs2", "rdfs3", "rdfs5", "rdfs7", "rdfs9", "rdfs11",
         "scm-eqc1", "scm-eqp1", "prp-inv1", "prp-inv2", "prp-symp", "prp-trp")


def pairs(triples: DataFrame, predicate: int) -> DataFrame:
    """``(sub, sup)`` for the triples ``(sub, predicate, sup)``."""
    return triples.filter(F.col(P) == predicate).select(F.col(S).alias(SUB), F.col(O).alias(SUP))


def typed(triples: DataFrame, cls: int) -> DataFrame:
    """``sub`` of the triples ``(sub, rdf:type, cls)``."""
    return triples.filter((F.col(P) == TYPE) & (F.col(O) == cls)).select(F.col(S).alias(SUB))


def both_ways(edges: DataFrame) -> DataFrame:
    return edges.unionAll(edges.select(F.col(SUP).alias(SUB), F.col(SUB).alias(SUP)))


def scm_eqc1(triples: DataFrame) -> DataFrame:
    """scm-eqc1: (c owl:equivalentClass d) ⟹ (c rdfs:subClassOf d), (d rdfs:subClassOf c)."""
    return both_ways(pairs(triples, EQC))


def rdfs11(sc_edges: DataFrame, strategy: str = "dataframe") -> DataFrame:
    """rdfs11: (c sc d), (d sc e) ⟹ (c sc e) — the transitive closure of subClassOf."""
    return transitive_closure(sc_edges, strategy)


def rdfs7(triples: DataFrame, subproperty: DataFrame) -> DataFrame:
    """rdfs7: (p sp q), (x p y) ⟹ (x q y)."""
    sp = subproperty.select(F.col(SUB).alias(P), SUP)
    return triples.join(sp, P).select(S, F.col(SUP).alias(P), O)


def prp_inv(triples: DataFrame, inverse: DataFrame) -> DataFrame:
    """prp-inv1/prp-inv2: (p inverseOf q), (x p y) ⟹ (y q x); (x q y) ⟹ (y p x).

    ``inverse`` must hold both directions of every owl:inverseOf pair (see ``both_ways``).
    """
    inv = inverse.select(F.col(SUB).alias(P), SUP)
    return triples.join(inv, P).select(F.col(O).alias(S), F.col(SUP).alias(P), F.col(S).alias(O))


def prp_symp(triples: DataFrame, symmetric: DataFrame) -> DataFrame:
    """prp-symp: (p type owl:SymmetricProperty), (x p y) ⟹ (y p x)."""
    sym = symmetric.select(F.col(SUB).alias(P))
    return triples.join(sym, P).select(F.col(O).alias(S), P, F.col(S).alias(O))


def prp_trp(delta: DataFrame, known: DataFrame, transitive: DataFrame) -> DataFrame:
    """prp-trp: (p type owl:TransitiveProperty), (x p y), (y p z) ⟹ (x p z).

    Semi-naive: one premise from ``delta`` (new triples), the other from ``known`` (all triples,
    delta included), in both orders.
    """
    trans = transitive.select(F.col(SUB).alias(P))
    d, k = delta.join(trans, P), known.join(trans, P)
    right = (d.select(S, P, F.col(O).alias(MID))
             .join(k.select(F.col(S).alias(MID), P, O), [P, MID]).select(S, P, O))
    left = (k.select(S, P, F.col(O).alias(MID))
            .join(d.select(F.col(S).alias(MID), P, O), [P, MID]).select(S, P, O))
    return right.unionAll(left)


def rdfs2(triples: DataFrame, domain: DataFrame) -> DataFrame:
    """rdfs2: (p rdfs:domain c), (x p y) ⟹ (x rdf:type c)."""
    dom = domain.select(F.col(SUB).alias(P), F.col(SUP).alias(CLASS))
    return triples.join(dom, P).select(F.col(S).alias(INSTANCE), CLASS)


def rdfs3(triples: DataFrame, range_: DataFrame, literals: DataFrame) -> DataFrame:
    """rdfs3: (p rdfs:range c), (x p y) ⟹ (y rdf:type c), except for literal y.

    A literal cannot be the subject of an RDF triple; owlrl derives such triples anyway and the
    differential tests drop them on its side.
    """
    rng = range_.select(F.col(SUB).alias(P), F.col(SUP).alias(CLASS))
    out = triples.join(rng, P).select(F.col(O).alias(INSTANCE), CLASS)
    return out.join(literals.select(F.col(ID).alias(INSTANCE)), INSTANCE, "left_anti")


def rdfs9(types: DataFrame, subclass: DataFrame) -> DataFrame:
    """rdfs9: (c rdfs:subClassOf d), (x rdf:type c) ⟹ (x rdf:type d)."""
    sc = subclass.select(F.col(SUB).alias(CLASS), SUP)
    return types.join(sc, CLASS).select(INSTANCE, F.col(SUP).alias(CLASS))
