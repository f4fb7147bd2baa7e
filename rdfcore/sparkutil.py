"""Small DataFrame helpers shared by the iterative algorithms."""
from __future__ import annotations

import os
from collections.abc import Sequence

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from rdfcore.errors import SidecarError

_CONSTRAINTS = "spark.sql.constraintPropagation.enabled"


#: Where reliable checkpoints go off local mode when the session names no ``spark.checkpoint.dir``
#: (``RSP_CHECKPOINT_DIR`` overrides; a relative path is on the cluster's default filesystem, in
#: the user's home directory there).
DEFAULT_CHECKPOINT_DIR = "rsp-sidecar-checkpoints"


def is_local(spark) -> bool:
    """Whether the session runs in local mode (driver and executors in one JVM)."""
    return spark.sparkContext.master.startswith("local")


class CheckpointDirError(SidecarError, RuntimeError):
    """Off local mode, no directory every node sees for reliable checkpoints."""


def checkpoint_directory(spark) -> str:
    """Where reliable checkpoints go: ``RSP_CHECKPOINT_DIR``, else ``spark.checkpoint.dir``, else
    :data:`DEFAULT_CHECKPOINT_DIR` on the cluster's default filesystem — unless that filesystem is
    the local disk (``fs.defaultFS`` = ``file:``, a standalone cluster without HDFS): there each
    node would write its part of a checkpoint to its own disk, and the driver could not read them
    back, so that is refused with what to set."""
    chosen = os.environ.get("RSP_CHECKPOINT_DIR") or spark.conf.get("spark.checkpoint.dir", None)
    if chosen:
        return chosen
    default_fs = spark.sparkContext._jsc.hadoopConfiguration().get("fs.defaultFS") or "file:///"
    if default_fs.startswith("file:"):
        raise CheckpointDirError(
            "off local mode, iterative joins cut their lineage with reliable checkpoints, which need a "
            "directory every node sees, and the cluster's default filesystem is the local disk "
            f"(fs.defaultFS = {default_fs}): pass --conf spark.checkpoint.dir=hdfs://NAMENODE:PORT/PATH "
            "(or a path every node mounts), or set RSP_CHECKPOINT_DIR")
    return DEFAULT_CHECKPOINT_DIR


def _reliable(spark) -> None:
    """Give the context a checkpoint directory if it has none."""
    context = spark.sparkContext
    if context.getCheckpointDir() is None:
        context.setCheckpointDir(checkpoint_directory(spark))


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


def union_all(frames: Sequence[DataFrame], allow_missing: bool = False) -> DataFrame:
    """The union of ``frames`` by column name (at least one); ``allow_missing``: a column some frame
    lacks is null there."""
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f, allowMissingColumns=allow_missing)
    return out
