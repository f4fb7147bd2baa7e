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

from reasoner import local, rules, schema_rules
from rdfcore.errors import FixpointError
from rdfcore.errors import SidecarError
from rdfcore.sparkutil import cut, cut_counted
from rdfcore.schema import CLASS, ID, INSTANCE, O, P, PROPERTY, S, SUB, SUP

BROADCAST_ROWS = 2_000_000


@dataclasses.dataclass
class Closure:
    """The materialized tables (id-encoded) and how they were obtained."""

    subclass: DataFrame  # (sub, sup) reflexive-transitive
    subproperty: DataFrame  # (sub, sup) reflexive-transitive
    types: DataFrame  # (instance, class)
    transitive: DataFrame  # (property, s, o)
    others: DataFrame  # (s, p, o): inferred minus the rdf:type triples
    rounds: int
    property_iterations: int
    timings: dict[str, float]
    schema: dict | None = None  # the property-level schema, for the manifest (``reasoner.local.schema_record``)
    cached: tuple = ()  # frames persisted on the way; ``release`` once the tables are written

    def release(self) -> None:
        """Unpersist what the computation persisted (a long-lived session runs many refreshes)."""
        for frame in self.cached:
            frame.unpersist()

    @property
    def inferred(self) -> DataFrame:
        """(s, p, o) asserted + entailed."""
        return self.inferred_with(self.types)

    def inferred_with(self, types: DataFrame) -> DataFrame:
        """The inferred table from ``types`` (the types table, e.g. as just written: the bulk of
        the inferred triples is then read from Parquet, not computed twice)."""
        return _with_types(self.others, types)


def _with_types(others: DataFrame, types: DataFrame) -> DataFrame:
    # predicates are disjoint between the parts: no distinct
    return others.unionAll(types.select(F.col(INSTANCE).alias(S), F.lit(schema_rules.TYPE).alias(P), F.col(CLASS).alias(O)))


class SchemaTooLarge(SidecarError, ValueError):
    """The property-level schema is too large to be joined in memory (not a schema this reasoner supports)."""


def _small(df: DataFrame, rows: int) -> DataFrame:
    return F.broadcast(df) if rows <= BROADCAST_ROWS else df


#: Property-level schema rows are collected to the driver (their number is bounded by the
#: number of properties, not by the data); more than this is refused rather than collected.
MAX_PROPERTY_SCHEMA_ROWS = 1_000_000


@dataclasses.dataclass
class _Schema:
    """One round's schema: the class hierarchy as a DataFrame, property-level parts as sets."""

    sc: DataFrame  # transitive closure of subClassOf (+ equivalences), (sub, sup)
    sc_rows: int
    sp: frozenset[tuple[int, int]]  # transitive closure of subPropertyOf (+ equivalences)
    dom: frozenset[tuple[int, int]]
    rng: frozenset[tuple[int, int]]
    inv: frozenset[tuple[int, int]]  # both directions
    sym: frozenset[int]
    trans: frozenset[int]
    owl_classes: frozenset[int]  # owl:Symmetric/TransitiveProperty and their subclasses
    persisted: DataFrame | None = None  # ``sc`` as persisted (``sc`` itself may carry a broadcast hint)

    @property
    def signature(self) -> tuple:
        return (self.sc_rows, self.sp, self.dom, self.rng, self.inv, self.sym, self.trans)

    def frame(self, spark, name: str) -> DataFrame:
        """A property-level part as a small broadcast DataFrame ``(sub, sup)`` or ``(sub)``."""
        value = getattr(self, name)
        if name in ("sym", "trans"):
            return F.broadcast(spark.createDataFrame([(v,) for v in sorted(value)], f"{SUB} long"))
        return F.broadcast(spark.createDataFrame(sorted(value), f"{SUB} long, {SUP} long"))


#: A schema (subClassOf, equivalentClass and the property-level triples) of at most this many
#: triples is collected and closed on the driver (``reasoner.local``): one job instead of one per
#: squaring round, and a closure linear in its size. Larger ones are closed on Spark.
DRIVER_SCHEMA_ROWS = 2_000_000


def _schema(triples: DataFrame, strategy: str) -> _Schema:
    owl = [schema_rules.SYMMETRIC, schema_rules.TRANSITIVE]
    schema_triples = triples.filter(
        F.col(P).isin(schema_rules.SC, schema_rules.EQC, schema_rules.SP, schema_rules.EQP, schema_rules.DOM, schema_rules.RANGE, schema_rules.INV)
        | ((F.col(P) == schema_rules.TYPE) & F.col(O).isin(owl)))
    if strategy == "dataframe":
        collected = schema_triples.select(S, P, O).limit(DRIVER_SCHEMA_ROWS + 1).toArrow()
        if collected.num_rows <= DRIVER_SCHEMA_ROWS:
            return _schema_on_driver(triples.sparkSession, collected)
    schema_triples = schema_triples.transform(cut)
    properties = schema_triples.filter(~F.col(P).isin(schema_rules.SC, schema_rules.EQC)).limit(MAX_PROPERTY_SCHEMA_ROWS + 1).collect()
    if len(properties) > MAX_PROPERTY_SCHEMA_ROWS:
        raise SchemaTooLarge(f"more than {MAX_PROPERTY_SCHEMA_ROWS} property-level schema triples (subPropertyOf, domain, "
                         f"range, inverseOf, equivalentProperty, property types): not a schema this reasoner supports")
    by_p: dict[int, set[tuple[int, int]]] = {}
    for row in properties:
        by_p.setdefault(row[P], set()).add((row[S], row[O]))
    sp_edges = by_p.get(schema_rules.SP, set()) | schema_rules.scm_eqp1(by_p.get(schema_rules.EQP, set()))
    types = by_p.get(schema_rules.TYPE, set())
    sc = rules.rdfs11(rules.pairs(schema_triples, schema_rules.SC).unionAll(rules.scm_eqc1(schema_triples)), strategy)
    sc_rows = sc.count()
    owl_classes = set(owl) | {row[0] for row in sc.filter(F.col(SUP).isin(owl)).select(SUB).collect()}
    return _Schema(
        sc=_small(sc, sc_rows), sc_rows=sc_rows,
        sp=frozenset(schema_rules.rdfs5(sp_edges)),
        dom=frozenset(by_p.get(schema_rules.DOM, set())), rng=frozenset(by_p.get(schema_rules.RANGE, set())),
        inv=frozenset(schema_rules.both_ways_set(by_p.get(schema_rules.INV, set()))),
        sym=frozenset(s for s, o in types if o == schema_rules.SYMMETRIC),
        trans=frozenset(s for s, o in types if o == schema_rules.TRANSITIVE),
        owl_classes=frozenset(owl_classes),
    )


def _schema_on_driver(spark, collected) -> _Schema:
    """:func:`_schema` from the collected schema triples (a pyarrow table), closed by
    ``reasoner.local``; the class hierarchy goes back to Spark through Arrow."""
    import pyarrow as pa

    columns = collected.to_pydict()
    found = local.Schema(set(zip(columns[S], columns[P], columns[O])))
    subs, sups = local.map_columns(found.sc)
    sc = spark.createDataFrame(pa.table({SUB: pa.array(subs, pa.int64()), SUP: pa.array(sups, pa.int64())}))
    sc = sc.persist(StorageLevel.MEMORY_AND_DISK)     # read by several joins and writes (3.4 MB per 420k pairs)
    return _Schema(sc=_small(sc, len(subs)), sc_rows=len(subs), sp=found.sp, dom=found.dom, rng=found.rng,
                   inv=found.inv, sym=found.sym, trans=found.trans, owl_classes=found.owl_classes, persisted=sc)


def _property_fixpoint(triples: DataFrame, schema: _Schema, literals: DataFrame,
                       max_iterations: int) -> tuple[DataFrame | None, int]:
    """Semi-naive fixpoint of rdfs7, prp-inv, prp-symp, prp-trp; returns (new triples, iterations)."""
    active = {s for s, _ in schema.sp} | {s for s, _ in schema.inv} | schema.sym | schema.trans
    if not active:
        return None, 0
    spark = triples.sparkSession
    sp, inv, sym, trans = (schema.frame(spark, n) for n in ("sp", "inv", "sym", "trans"))
    targets = active | {o for _, o in schema.sp}
    known = triples.filter(F.col(P).isin(sorted(targets))).transform(cut)
    delta = known.filter(F.col(P).isin(sorted(active)))
    added = None
    for iteration in range(1, max_iterations + 1):
        derived = (rules.rdfs7(delta, sp)
                   .unionAll(rules.prp_inv(delta, inv))
                   .unionAll(rules.prp_symp(delta, sym))
                   .unionAll(rules.prp_trp(delta, known, trans)))
        new = (derived.join(literals.select(F.col(ID).alias(S)), S, "left_anti")  # no literal subjects
               .distinct().join(known, [S, P, O], "left_anti"))
        new, size = cut_counted(new)
        if size == 0:
            return added, iteration
        # unions of checkpointed pieces: the lineage stays flat without another checkpoint
        known = known.unionAll(new)
        added = new if added is None else added.unionAll(new)
        delta = new
    raise FixpointError(f"property rules (rdfs7, prp-inv, prp-symp, prp-trp) did not reach a fixpoint within "
                        f"{max_iterations} iterations; raise max_iterations if the data has very long chains")


def materialize(triples: DataFrame, literals: DataFrame, *, strategy: str = "dataframe",
                max_rounds: int = 20, max_iterations: int = 200, partitions: int | None = None) -> Closure:
    """Close ``triples(s, p, o)`` (distinct ids) under the rules of :mod:`reasoner.rules`.

    ``literals(id)`` lists the ids of literal terms (they never become subjects). ``partitions``:
    how many partitions a shuffle of per-instance rows takes (bulk data; default
    ``spark.sql.shuffle.partitions``).
    """
    timings: dict[str, float] = {}
    start = time.perf_counter()
    current = triples.select(S, P, O)
    spark = triples.sparkSession
    iterations = 0
    for round_ in range(1, max_rounds + 1):
        t0 = time.perf_counter()
        schema = _schema(current, strategy)
        timings[f"round{round_}_schema"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        added, its = _property_fixpoint(current, schema, literals, max_iterations)
        iterations += its
        with_props = current if added is None else current.unionAll(added)
        timings[f"round{round_}_properties"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        # the rdf:type triples are distinct (so are the input triples and what the rules add):
        # only domains and ranges can repeat a base type
        base_types = with_props.filter(F.col(P) == schema_rules.TYPE).select(F.col(S).alias(INSTANCE), F.col(O).alias(CLASS))
        if schema.dom or schema.rng:
            base_types = (base_types.unionAll(rules.rdfs2(with_props, schema.frame(spark, "dom")))
                          .unionAll(rules.rdfs3(with_props, schema.frame(spark, "rng"), literals)).distinct())
        base_types = base_types.persist(StorageLevel.DISK_ONLY)
        types = _close_types(base_types, schema, partitions)
        sp = schema.frame(spark, "sp")
        closure_triples = (schema.sc.select(F.col(SUB).alias(S), F.lit(schema_rules.SC).alias(P), F.col(SUP).alias(O))
                           .unionAll(sp.select(F.col(SUB).alias(S), F.lit(schema_rules.SP).alias(P), F.col(SUP).alias(O))))
        # Predicates are disjoint between the three parts, so no global distinct is needed. The
        # subClassOf/subPropertyOf part keeps what the property rules derived this round too
        # (a sub-property of rdfs:subClassOf); the next round's schema closes it.
        hierarchy = closure_triples.unionAll(with_props.filter(F.col(P).isin(schema_rules.SC, schema_rules.SP))).distinct()
        others = with_props.filter(~F.col(P).isin(schema_rules.TYPE, schema_rules.SC, schema_rules.SP)).unionAll(hierarchy)
        inferred = _with_types(others, types)
        timings[f"round{round_}_types_planned"] = time.perf_counter() - t0
        if not _needs_another_round(schema, added, base_types):
            break
        current = inferred.transform(cut)
        base_types.unpersist()
        if schema.persisted is not None:
            schema.persisted.unpersist()
    else:
        raise FixpointError(f"materialization did not converge within {max_rounds} rounds")
    transitive = inferred.filter(F.col(P).isin(sorted(schema.trans))).select(F.col(P).alias(PROPERTY), S, O)
    schema_classes = {c for _, c in schema.dom | schema.rng}
    classes = (schema.sc.select(F.col(SUB).alias("c")).union(schema.sc.select(F.col(SUP).alias("c")))
               .union(base_types.select(F.col(CLASS).alias("c")))
               .union(spark.createDataFrame([(c,) for c in sorted(schema_classes)], "c long"))
               .distinct())
    subclass = schema.sc.unionAll(classes.select(F.col("c").alias(SUB), F.col("c").alias(SUP))).distinct()
    schema_properties = ({q for pair in schema.sp | schema.inv for q in pair} | {p for p, _ in schema.dom | schema.rng}
                         | schema.sym | schema.trans)
    properties = (with_props.select(F.col(P).alias("q"))
                  .union(closure_triples.select(F.col(P).alias("q")))
                  .union(base_types.limit(1).select(F.lit(schema_rules.TYPE).alias("q")))
                  .union(spark.createDataFrame([(q,) for q in sorted(schema_properties)], "q long"))
                  .distinct())
    subproperty = sp.unionAll(properties.select(F.col("q").alias(SUB), F.col("q").alias(SUP))).distinct()
    timings["plan_total"] = time.perf_counter() - start
    return Closure(subclass, subproperty, types, transitive, others, round_, iterations, timings,
                   local.schema_record(schema.sp, schema.dom, schema.rng, schema.inv, schema.sym, schema.trans,
                                 schema.owl_classes), tuple(f for f in (base_types, schema.persisted) if f is not None))


#: At most this many instances with several base types are split off by a broadcast semi-join;
#: more, and rdfs9 deduplicates all its output.
SEVERAL_TYPES_BROADCAST = 500_000


def _close_types(base_types: DataFrame, schema: _Schema, partitions: int | None = None) -> DataFrame:
    """rdfs9: the base types and their super-classes, distinct — without deduplicating the whole
    (large: base types × hierarchy depth) result where it cannot repeat. An instance with one
    base type c gets c and the super-classes of c other than c: distinct by construction. Only
    the instances with several base types (found by counting base types per instance: a shuffle
    of ids) go through a ``distinct``."""
    up = schema.sc.filter(F.col(SUB) != F.col(SUP)).select(F.col(SUB).alias(CLASS), SUP)
    up = _small(up, schema.sc_rows)

    def with_supers(df: DataFrame) -> DataFrame:
        return df.unionAll(df.join(up, CLASS).select(INSTANCE, F.col(SUP).alias(CLASS)))

    # counted after a shuffle by instance and no pre-shuffle aggregation: instances are mostly
    # distinct, so its maps only grew (at 20M base types they spilled 1.6 GB)
    partitions = max(int(base_types.sparkSession.conf.get("spark.sql.shuffle.partitions")), partitions or 0)
    several = (base_types.select(INSTANCE).repartition(partitions, INSTANCE).groupBy(INSTANCE).count()
               .filter(F.col("count") > 1).select(INSTANCE).limit(SEVERAL_TYPES_BROADCAST + 1).collect())
    if not several:
        return with_supers(base_types)
    if len(several) > SEVERAL_TYPES_BROADCAST:
        return with_supers(base_types).distinct()
    ids = F.broadcast(base_types.sparkSession.createDataFrame([(r[INSTANCE],) for r in several], f"{INSTANCE} long"))
    return (with_supers(base_types.join(ids, INSTANCE, "left_anti"))
            .unionAll(with_supers(base_types.join(ids, INSTANCE, "left_semi")).distinct()))


def _needs_another_round(schema: _Schema, added: DataFrame | None, base_types: DataFrame) -> bool:
    """Did this round derive triples that the rules read as input (see module doc)?"""
    rule_predicates = [schema_rules.SC, schema_rules.SP, schema_rules.DOM, schema_rules.RANGE, schema_rules.EQC, schema_rules.EQP, schema_rules.INV]
    if added is not None and not added.filter(F.col(P).isin(rule_predicates)).isEmpty():
        return True  # e.g. a sub-property of rdfs:subClassOf produced new schema
    readers = ({s for s, _ in schema.sp | schema.inv | schema.dom | schema.rng} | schema.sym | schema.trans)
    # rdf:type / subClassOf / subPropertyOf triples are added after the property rules ran:
    # if the rules read those predicates, the new triples need another round.
    if readers & {schema_rules.TYPE, schema_rules.SC, schema_rules.SP}:
        return True
    # a property became symmetric/transitive through rdfs2/3/9 (types of owl classes and subclasses)
    owl_types = base_types.filter(F.col(CLASS).isin(sorted(schema.owl_classes)))
    derived = owl_types.join(schema.sc.filter(F.col(SUP).isin(schema_rules.SYMMETRIC, schema_rules.TRANSITIVE))
                             .select(F.col(SUB).alias(CLASS), F.col(SUP).alias("owl")), CLASS)
    found = {(r[INSTANCE], r["owl"]) for r in derived.select(INSTANCE, "owl").distinct().collect()}
    found |= {(r[INSTANCE], r[CLASS]) for r in owl_types.filter(F.col(CLASS).isin(schema_rules.SYMMETRIC, schema_rules.TRANSITIVE))
              .select(INSTANCE, CLASS).distinct().collect()}
    known = {(p, schema_rules.SYMMETRIC) for p in schema.sym} | {(p, schema_rules.TRANSITIVE) for p in schema.trans}
    return bool(found - known)
