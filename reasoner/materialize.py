"""RDFS (ρdf) + OWL extras closure of an id-encoded graph, as the reasoner's tables.

One *round*:

1. schema: subClassOf / subPropertyOf edges (with owl:equivalentClass / equivalentProperty as
   mutual edges, scm-eqc1 / scm-eqp1) closed transitively (rdfs11, rdfs5); domains, ranges,
   inverse pairs, symmetric and transitive properties;
2. property rules to a fixpoint, semi-naive, on the triples whose predicate takes part in them
   (rdfs7, prp-inv1/2, prp-symp, prp-trp) — the other triples (usually the bulk, e.g. millions of
   ``rdf:type`` assertions) are never touched;
3. typing: rdfs2, rdfs3 on all triples, then rdfs9 against the subclass closure.

A round is repeated only when it changed its own inputs: new schema triples, new symmetric or
transitive properties, or derived triples whose predicate is itself one the rules read
(``rdf:type``, ``rdfs:subClassOf``, ``rdfs:subPropertyOf`` used as sub-properties, with domains…).
Small schema tables are broadcast; large intermediate results are cut from their lineage with
``localCheckpoint`` every round.
"""
from __future__ import annotations

import dataclasses
import time

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from reasoner import rules
from reasoner.closure import FixpointError
from reasoner.sparkutil import cut
from reasoner.schema import CLASS, INSTANCE, O, P, PROPERTY, S, SUB, SUP

BROADCAST_ROWS = 2_000_000


@dataclasses.dataclass
class Closure:
    """The materialized tables (id-encoded) and how they were obtained."""

    subclass: DataFrame  # (sub, sup) reflexive-transitive
    subproperty: DataFrame  # (sub, sup) reflexive-transitive
    types: DataFrame  # (instance, class)
    transitive: DataFrame  # (property, s, o)
    inferred: DataFrame  # (s, p, o) asserted + entailed
    rounds: int
    property_iterations: int
    timings: dict[str, float]


def _small(df: DataFrame, rows: int) -> DataFrame:
    return F.broadcast(df) if rows <= BROADCAST_ROWS else df


@dataclasses.dataclass
class _Schema:
    sc: DataFrame  # transitive closure of subClassOf (+ equivalences)
    sp: DataFrame
    dom: DataFrame
    rng: DataFrame
    inv: DataFrame
    sym: DataFrame
    trans: DataFrame
    counts: dict[str, int]

    @property
    def signature(self) -> tuple[int, ...]:
        return tuple(self.counts[k] for k in sorted(self.counts))


def _schema(triples: DataFrame, strategy: str) -> _Schema:
    sc_edges = rules.pairs(triples, rules.SC).unionAll(rules.scm_eqc1(triples))
    sp_edges = rules.pairs(triples, rules.SP).unionAll(rules.scm_eqp1(triples))
    parts = {
        "sc": rules.rdfs11(sc_edges, strategy),
        "sp": rules.rdfs5(sp_edges, strategy),
        "dom": rules.pairs(triples, rules.DOM).distinct(),
        "rng": rules.pairs(triples, rules.RANGE).distinct(),
        "inv": rules.both_ways(rules.pairs(triples, rules.INV)).distinct(),
        "sym": rules.typed(triples, rules.SYMMETRIC).distinct(),
        "trans": rules.typed(triples, rules.TRANSITIVE).distinct(),
    }
    parts = {k: v.transform(cut) for k, v in parts.items()}
    counts = {k: v.count() for k, v in parts.items()}
    return _Schema(**{k: _small(v, counts[k]) for k, v in parts.items()}, counts=counts)


def _ids(df: DataFrame, column: str) -> set[int]:
    return {row[0] for row in df.select(column).distinct().collect()}


def _property_fixpoint(triples: DataFrame, schema: _Schema, literals: DataFrame,
                       max_iterations: int) -> tuple[DataFrame, int]:
    """Semi-naive fixpoint of rdfs7, prp-inv, prp-symp, prp-trp; returns (new triples, iterations)."""
    # Properties are few (schema-sized): collected to build the filters.
    active = (_ids(schema.sp, SUB) | _ids(schema.inv, SUB) | _ids(schema.sym, SUB) | _ids(schema.trans, SUB))
    if not active:
        return triples.limit(0), 0
    targets = active | _ids(schema.sp, SUP) | _ids(schema.inv, SUP)
    known = triples.filter(F.col(P).isin(list(targets))).transform(cut)
    delta = known.filter(F.col(P).isin(list(active)))
    added = None
    for iteration in range(1, max_iterations + 1):
        derived = (rules.rdfs7(delta, schema.sp)
                   .unionAll(rules.prp_inv(delta, schema.inv))
                   .unionAll(rules.prp_symp(delta, schema.sym))
                   .unionAll(rules.prp_trp(delta, known, schema.trans)))
        new = (derived.join(literals.select(F.col("id").alias(S)), S, "left_anti")  # no literal subjects
               .distinct().join(known, [S, P, O], "left_anti").transform(cut))
        if new.isEmpty():
            return (added if added is not None else triples.limit(0)), iteration
        known = known.unionAll(new).transform(cut)
        added = new if added is None else added.unionAll(new).transform(cut)
        delta = new
    raise FixpointError(f"property rules (rdfs7, prp-inv, prp-symp, prp-trp) did not reach a fixpoint within "
                        f"{max_iterations} iterations; raise max_iterations if the data has very long chains")


def materialize(triples: DataFrame, literals: DataFrame, *, strategy: str = "dataframe",
                max_rounds: int = 20, max_iterations: int = 200) -> Closure:
    """Close ``triples(s, p, o)`` (distinct ids) under the rules of :mod:`reasoner.rules`.

    ``literals(id)`` lists the ids of literal terms (they never become subjects).
    """
    timings: dict[str, float] = {}
    start = time.perf_counter()
    current = triples.select(S, P, O)
    iterations = 0
    for round_ in range(1, max_rounds + 1):
        t0 = time.perf_counter()
        schema = _schema(current, strategy)
        timings[f"round{round_}_schema"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        added, its = _property_fixpoint(current, schema, literals, max_iterations)
        iterations += its
        with_props = current.unionAll(added)
        timings[f"round{round_}_properties"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        base_types = (with_props.filter(F.col(P) == rules.TYPE).select(F.col(S).alias(INSTANCE), F.col(O).alias(CLASS))
                      .unionAll(rules.rdfs2(with_props, schema.dom))
                      .unionAll(rules.rdfs3(with_props, schema.rng, literals))
                      .distinct().persist(StorageLevel.MEMORY_AND_DISK))
        types = base_types.unionAll(rules.rdfs9(base_types, schema.sc)).distinct()
        closure_triples = (schema.sc.select(F.col(SUB).alias(S), F.lit(rules.SC).alias(P), F.col(SUP).alias(O))
                           .unionAll(schema.sp.select(F.col(SUB).alias(S), F.lit(rules.SP).alias(P), F.col(SUP).alias(O))))
        # Predicates are disjoint between the three parts, so no global distinct is needed.
        inferred = (with_props.filter(~F.col(P).isin(rules.TYPE, rules.SC, rules.SP))
                    .unionAll(types.select(F.col(INSTANCE).alias(S), F.lit(rules.TYPE).alias(P), F.col(CLASS).alias(O)))
                    .unionAll(closure_triples))
        timings[f"round{round_}_types_planned"] = time.perf_counter() - t0
        if not _needs_another_round(schema, added, base_types):
            break
        current = inferred.transform(cut)
        base_types.unpersist()
    else:
        raise FixpointError(f"materialization did not converge within {max_rounds} rounds")
    # The bulk tables are read twice (own table, inferred): keep them on local disk once.
    types = types.persist(StorageLevel.DISK_ONLY)
    transitive_ids = list(_ids(schema.trans, SUB))
    transitive = inferred.filter(F.col(P).isin(transitive_ids)).select(F.col(P).alias(PROPERTY), S, O)
    classes = (schema.sc.select(F.col(SUB).alias("c")).union(schema.sc.select(F.col(SUP).alias("c")))
               .union(base_types.select(F.col(CLASS).alias("c")))
               .union(schema.dom.select(F.col(SUP).alias("c"))).union(schema.rng.select(F.col(SUP).alias("c")))
               .distinct())
    subclass = schema.sc.unionAll(classes.select(F.col("c").alias(SUB), F.col("c").alias(SUP))).distinct()
    properties = (schema.sp.select(F.col(SUB).alias("q")).union(schema.sp.select(F.col(SUP).alias("q")))
                  .union(with_props.select(F.col(P).alias("q")))
                  .union(closure_triples.select(F.col(P).alias("q")))
                  .union(base_types.limit(1).select(F.lit(rules.TYPE).alias("q")))
                  .union(schema.dom.select(F.col(SUB).alias("q"))).union(schema.rng.select(F.col(SUB).alias("q")))
                  .union(schema.inv.select(F.col(SUB).alias("q"))).union(schema.sym.select(F.col(SUB).alias("q")))
                  .union(schema.trans.select(F.col(SUB).alias("q")))
                  .distinct())
    subproperty = schema.sp.unionAll(properties.select(F.col("q").alias(SUB), F.col("q").alias(SUP))).distinct()
    timings["plan_total"] = time.perf_counter() - start
    return Closure(subclass, subproperty, types, transitive, inferred, round_, iterations, timings)


def _needs_another_round(schema: _Schema, added: DataFrame, base_types: DataFrame) -> bool:
    """Did this round derive triples that the rules read as input (see module doc)?"""
    rule_predicates = [rules.SC, rules.SP, rules.DOM, rules.RANGE, rules.EQC, rules.EQP, rules.INV]
    if not added.filter(F.col(P).isin(rule_predicates)).isEmpty():
        return True  # e.g. a sub-property of rdfs:subClassOf produced new schema
    owl = [rules.SYMMETRIC, rules.TRANSITIVE]
    owl_classes = schema.sc.filter(F.col(SUP).isin(owl)).select(F.col(SUB).alias(CLASS), F.col(SUP).alias("owl"))
    owl_types = (base_types.filter(F.col(CLASS).isin(owl)).select(INSTANCE, F.col(CLASS).alias("owl"))
                 .unionAll(base_types.join(owl_classes, CLASS).select(INSTANCE, "owl")).distinct())
    if owl_types.count() > schema.counts["sym"] + schema.counts["trans"]:
        return True  # a property became symmetric/transitive by rdfs2/3/9
    readers = _ids(schema.sp, SUB) | _ids(schema.inv, SUB) | _ids(schema.sym, SUB) | _ids(schema.trans, SUB) \
        | _ids(schema.dom, SUB) | _ids(schema.rng, SUB)
    # rdf:type / subClassOf / subPropertyOf triples are added after the property rules ran:
    # if the rules read those predicates, the new triples need another round.
    return bool(readers & {rules.TYPE, rules.SC, rules.SP})
