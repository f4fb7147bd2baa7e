"""Small DataFrame helpers shared by the iterative algorithms."""
from __future__ import annotations

import os

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

_CONSTRAINTS = "spark.sql.constraintPropagation.enabled"


#: Where reliable checkpoints go off local mode when the session names no ``spark.checkpoint.dir``
#: (``RSP_CHECKPOINT_DIR`` overrides; a relative path is on the cluster's default filesystem, in
#: the user's home directory there).
DEFAULT_CHECKPOINT_DIR = "rsp-sidecar-checkpoints"


def is_local(spark) -> bool:
    """Whether the session runs in local mode (driver and executors in one JVM)."""
    return spark.sparkContext.master.startswith("local")


def _reliable(spark) -> None:
    """Give the context a checkpoint directory if it has none."""
    context = spark.sparkContext
    if context.getCheckpointDir() is None:
        context.setCheckpointDir(os.environ.get("RSP_CHECKPOINT_DIR")
                                 or spark.conf.get("spark.checkpoint.dir", None) or DEFAULT_CHECKPOINT_DIR)


def cut(df: DataFrame) -> DataFrame:
    """Materialise ``df`` and cut its lineage: ``localCheckpoint`` in local mode; elsewhere a
    reliable ``checkpoint`` (to the checkpoint directory: :data:`DEFAULT_CHECKPOINT_DIR`), whose
    blocks survive the loss of an executor (a local checkpoint's do not, e.g. under dynamic
    allocation) at the cost of a write to the cluster's filesystem.

    Constraint propagation is switched off while checkpointing: Spark 4.0's checkpoint rewrites
    the plan's constraints by attribute and fails ("key not found") on unions whose constraints
    name the attributes of a later branch. A checkpointed frame then simply carries no
    constraints, which costs nothing here (its consumers are joins on ids).
    """
    conf = df.sparkSession.conf
    previous = conf.get(_CONSTRAINTS, "true")
    conf.set(_CONSTRAINTS, "false")
    try:
        if is_local(df.sparkSession):
            return df.localCheckpoint()
        _reliable(df.sparkSession)
        return df.checkpoint()
    finally:
        conf.set(_CONSTRAINTS, previous)


def cut_counted(df: DataFrame) -> tuple[DataFrame, int]:
    """:func:`cut` and the row count of ``df`` from the same Spark job (an ``Observation`` on the
    checkpointed plan), so an iteration of a fixpoint costs one job, not two."""
    observation = Observation()
    cutted = cut(df.observe(observation, F.count(F.lit(1)).alias("rows")))
    return cutted, int(observation.get["rows"])
