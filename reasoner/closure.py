"""Transitive closure of an edge relation ``(sub, sup)``: two strategies with identical output.

* ``dataframe``: semi-naive fixpoint by squaring, R := R ∪ Δ∘R ∪ R∘Δ, with Δ the pairs new in the
  previous round; O(log longest path) rounds, each a join of the delta with the closure so far.
* ``graphframes``: GraphFrames' strongly connected components collapse cycles, then
  ``aggregateMessages`` propagates ancestor sets up the condensed DAG (one round per DAG level)
  and the sets are expanded back to member pairs.

Both return the (non-reflexive) transitive closure; cycles give pairs ``(x, x)`` as rdfs5/rdfs11
derive them. Every round is materialised with ``localCheckpoint`` to cut the lineage, and a round
cap raises :class:`FixpointError` instead of running forever.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rdfcore.errors import FixpointError, SidecarError
from rdfcore.jars import JarUnavailable, graphframes, spark_cache_dir
from rdfcore.schema import (ANCESTORS, COMP_SUB, COMP_SUP, CYCLIC, GF_COMPONENT, GF_DST, GF_ID, GF_SRC, GOT,
                             KNOWN, MID, OLD_ANCESTORS, SUB, SUP)
from rdfcore.sparkutil import cut, cut_counted

STRATEGIES = ("dataframe", "graphframes")


class GraphFramesUnavailable(SidecarError, RuntimeError):
    """The GraphFrames strategy was asked for but its JVM library is not on the classpath."""


def transitive_closure(edges: DataFrame, strategy: str = "dataframe", max_rounds: int = 100) -> DataFrame:
    """The transitive closure of ``edges(sub, sup)`` (distinct pairs)."""
    if strategy == "dataframe":
        return closure_dataframe(edges, max_rounds)
    if strategy == "graphframes":
        return closure_graphframes(edges, max_rounds)
    raise ValueError(f"unknown closure strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")


def _compose(left: DataFrame, right: DataFrame) -> DataFrame:
    """{(a, c) | (a, b) ∈ left, (b, c) ∈ right}."""
    return (left.select(SUB, F.col(SUP).alias(MID))
            .join(right.select(F.col(SUB).alias(MID), SUP), MID).select(SUB, SUP))


#: A delta with at most this many pairs is broadcast to the joins of the next round.
BROADCAST_PAIRS = 500_000


def closure_dataframe(edges: DataFrame, max_rounds: int = 100) -> DataFrame:
    """Semi-naive closure by squaring (see module doc).

    Each round is one shuffle: the candidate pairs Δ∘R ∪ R∘Δ (map-side joins against the
    broadcast delta while it is small) are grouped together with R, and a pair is new when no
    copy of it came from R — deduplication and the anti-join in one aggregation.
    """
    closure, size = cut_counted(edges.select(SUB, SUP).distinct())
    delta = closure
    for _ in range(max_rounds):
        d = F.broadcast(delta) if size <= BROADCAST_PAIRS else delta
        candidates = _compose(d, closure).unionAll(_compose(closure, d)).withColumn(KNOWN, F.lit(False))
        new = (candidates.unionAll(closure.withColumn(KNOWN, F.lit(True)))
               .groupBy(SUB, SUP).agg(F.max(KNOWN).alias(KNOWN))
               .filter(~F.col(KNOWN)).select(SUB, SUP))
        new, size = cut_counted(new)
        if size == 0:
            return closure
        closure = closure.unionAll(new)  # a union of checkpointed pieces: the lineage stays flat
        delta = new
    raise FixpointError(f"transitive closure did not converge within {max_rounds} rounds "
                        f"(the closure grows by squaring, so this means a path longer than 2^{max_rounds})")


def graphframes_available(spark) -> bool:
    """Whether GraphFrames' JVM classes are on this session's classpath."""
    try:
        spark.sparkContext._jvm.java.lang.Class.forName(
            "org.graphframes.GraphFrame", False, spark.sparkContext._jvm.Thread.currentThread().getContextClassLoader())
        return True
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException
        return False


def closure_graphframes(edges: DataFrame, max_rounds: int = 100) -> DataFrame:
    """SCC condensation + ancestor-set propagation with GraphFrames (see module doc)."""
    spark = edges.sparkSession
    if not graphframes_available(spark):
        raise GraphFramesUnavailable(str(JarUnavailable(graphframes(spark.version), "its classes are not on this Spark "
                                                        "session's classpath", spark_cache_dir(spark.version))))
    from graphframes import GraphFrame
    from graphframes.lib import AggregateMessages as AM

    e = edges.select(F.col(SUB).alias(GF_SRC), F.col(SUP).alias(GF_DST)).distinct()
    v = e.select(F.col(GF_SRC).alias(GF_ID)).union(e.select(F.col(GF_DST).alias(GF_ID))).distinct()
    spark.sparkContext.setCheckpointDir(spark.conf.get("spark.local.dir", "/tmp") + "/rsp-sidecar-checkpoints")
    members = GraphFrame(v, e).stronglyConnectedComponents(maxIter=max_rounds).select(GF_ID, GF_COMPONENT)
    comp = members
    dag = (e.join(comp.withColumnRenamed(GF_ID, GF_SRC).withColumnRenamed(GF_COMPONENT, COMP_SUB), GF_SRC)
           .join(comp.withColumnRenamed(GF_ID, GF_DST).withColumnRenamed(GF_COMPONENT, COMP_SUP), GF_DST)
           .select(F.col(COMP_SUB).alias(GF_SRC), F.col(COMP_SUP).alias(GF_DST)).distinct())
    cyclic = (dag.filter(F.col(GF_SRC) == F.col(GF_DST)).select(F.col(GF_SRC).alias(CYCLIC))
              .union(members.groupBy(GF_COMPONENT).count().filter(F.col("count") > 1)  # groupBy().count()'s column
                     .select(F.col(GF_COMPONENT).alias(CYCLIC)))
              .distinct())
    dag = dag.filter(F.col(GF_SRC) != F.col(GF_DST)).transform(cut)
    nodes = members.select(F.col(GF_COMPONENT).alias(GF_ID)).distinct()
    ancestors = nodes.withColumn(ANCESTORS, F.array().cast("array<long>")).transform(cut)
    for _ in range(max_rounds):
        graph = GraphFrame(ancestors, dag)
        msgs = graph.aggregateMessages(
            F.flatten(F.collect_list(AM.msg)).alias(GOT),
            sendToSrc=F.concat(F.array(AM.dst[GF_ID]), AM.dst[ANCESTORS]))
        updated = (ancestors.join(msgs, GF_ID, "left")
                   .select(GF_ID, F.array_sort(F.array_distinct(F.concat(F.col(ANCESTORS), F.coalesce(
                       F.col(GOT), F.array().cast("array<long>"))))).alias(ANCESTORS))
                   .transform(cut))
        changed = (updated.join(ancestors.withColumnRenamed(ANCESTORS, OLD_ANCESTORS), GF_ID)
                   .filter(F.col(ANCESTORS) != F.col(OLD_ANCESTORS)))
        ancestors = updated
        if changed.isEmpty():
            break
    else:
        raise FixpointError(f"ancestor propagation did not converge within {max_rounds} rounds")
    comp_pairs = (ancestors.select(F.col(GF_ID).alias(COMP_SUB), F.explode(ANCESTORS).alias(COMP_SUP))
                  .union(cyclic.select(F.col(CYCLIC).alias(COMP_SUB), F.col(CYCLIC).alias(COMP_SUP))))
    return (comp_pairs.join(members.select(F.col(GF_COMPONENT).alias(COMP_SUB), F.col(GF_ID).alias(SUB)), COMP_SUB)
            .join(members.select(F.col(GF_COMPONENT).alias(COMP_SUP), F.col(GF_ID).alias(SUP)), COMP_SUP)
            .select(SUB, SUP).distinct())
