"""Small DataFrame helpers shared by the iterative algorithms."""
from __future__ import annotations

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

_CONSTRAINTS = "spark.sql.constraintPropagation.enabled"


def cut(df: DataFrame) -> DataFrame:
    """Materialise ``df`` and cut its lineage (``localCheckpoint``).

    Constraint propagation is switched off while checkpointing: Spark 4.0's checkpoint rewrites
    the plan's constraints by attribute and fails ("key not found") on unions whose constraints
    name the attributes of a later branch. A checkpointed frame then simply carries no
    constraints, which costs nothing here (its consumers are joins on ids).
    """
    conf = df.sparkSession.conf
    previous = conf.get(_CONSTRAINTS, "true")
    conf.set(_CONSTRAINTS, "false")
    try:
        return df.localCheckpoint()
    finally:
        conf.set(_CONSTRAINTS, previous)


def cut_counted(df: DataFrame) -> tuple[DataFrame, int]:
    """:func:`cut` and the row count of ``df`` from the same Spark job (an ``Observation`` on the
    checkpointed plan), so an iteration of a fixpoint costs one job, not two."""
    observation = Observation()
    cutted = cut(df.observe(observation, F.count(F.lit(1)).alias("rows")))
    return cutted, int(observation.get["rows"])
