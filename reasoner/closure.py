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

from reasoner.errors import SidecarError
from reasoner.schema import SUB, SUP
from reasoner.sparkutil import cut, cut_counted

STRATEGIES = ("dataframe", "graphframes")


class FixpointError(SidecarError, RuntimeError):
    """An iterative computation did not converge within its round cap."""


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
    l, r = left.alias("l"), right.alias("r")
    return l.join(r, F.col(f"l.{SUP}") == F.col(f"r.{SUB}")).select(F.col(f"l.{SUB}").alias(SUB), F.col(f"r.{SUP}").alias(SUP))


#: A delta with at most this many pairs is broadcast to the joins of the next round.
BROADCAST_PAIRS = 2_000_000


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
        candidates = _compose(d, closure).unionAll(_compose(closure, d)).withColumn("_known", F.lit(False))
        new = (candidates.unionAll(closure.withColumn("_known", F.lit(True)))
               .groupBy(SUB, SUP).agg(F.max("_known").alias("_known"))
               .filter(~F.col("_known")).select(SUB, SUP))
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
        from reasoner.jars import GRAPHFRAMES, JarUnavailable, cache_dir  # message and remedy live there

        raise GraphFramesUnavailable(str(JarUnavailable(GRAPHFRAMES, "its classes are not on this Spark session's "
                                                                     "classpath", cache_dir())))
    from graphframes import GraphFrame
    from graphframes.lib import AggregateMessages as AM

    e = edges.select(F.col(SUB).alias("src"), F.col(SUP).alias("dst")).distinct()
    v = e.select(F.col("src").alias("id")).union(e.select(F.col("dst").alias("id"))).distinct()
    spark.sparkContext.setCheckpointDir(spark.conf.get("spark.local.dir", "/tmp") + "/rsp-sidecar-checkpoints")
    members = GraphFrame(v, e).stronglyConnectedComponents(maxIter=max_rounds).select("id", "component")
    comp = members.alias("m")
    dag = (e.join(comp.withColumnRenamed("id", "src").withColumnRenamed("component", "cs"), "src")
           .join(comp.withColumnRenamed("id", "dst").withColumnRenamed("component", "cd"), "dst")
           .select(F.col("cs").alias("src"), F.col("cd").alias("dst")).distinct())
    cyclic = (dag.filter(F.col("src") == F.col("dst")).select(F.col("src").alias("c"))
              .union(members.groupBy("component").count().filter("count > 1").select(F.col("component").alias("c")))
              .distinct())
    dag = dag.filter(F.col("src") != F.col("dst")).transform(cut)
    nodes = members.select(F.col("component").alias("id")).distinct()
    ancestors = nodes.withColumn("anc", F.array().cast("array<long>")).transform(cut)
    for _ in range(max_rounds):
        graph = GraphFrame(ancestors, dag)
        msgs = graph.aggregateMessages(
            F.flatten(F.collect_list(AM.msg)).alias("got"),
            sendToSrc=F.concat(F.array(AM.dst["id"]), AM.dst["anc"]))
        updated = (ancestors.join(msgs, "id", "left")
                   .select("id", F.array_sort(F.array_distinct(F.concat(F.col("anc"), F.coalesce(
                       F.col("got"), F.array().cast("array<long>"))))).alias("anc"))
                   .transform(cut))
        changed = updated.join(ancestors.withColumnRenamed("anc", "old"), "id").filter(F.col("anc") != F.col("old"))
        ancestors = updated
        if changed.isEmpty():
            break
    else:
        raise FixpointError(f"ancestor propagation did not converge within {max_rounds} rounds")
    comp_pairs = (ancestors.select(F.col("id").alias("cs"), F.explode("anc").alias("cd"))
                  .union(cyclic.select(F.col("c").alias("cs"), F.col("c").alias("cd"))))
    return (comp_pairs.join(members.select(F.col("component").alias("cs"), F.col("id").alias(SUB)), "cs")
            .join(members.select(F.col("component").alias("cd"), F.col("id").alias(SUP)), "cd")
            .select(SUB, SUP).distinct())
