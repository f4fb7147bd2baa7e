"""The one place that builds Spark sessions (jobs, CLI and test fixtures).

Defaults are for a single machine (``local[*]``, few shuffle partitions, the project's cached jars
on the classpath). Anything set by ``spark-submit`` (``--master``, ``--conf``, ``--jars``,
``spark-defaults.conf``) or passed in ``conf`` wins over these defaults.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from pyspark import SparkConf
from pyspark.sql import SparkSession

from reasoner import jars

LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # Dictionary ids are 64-bit hashes: joins on longs, never on strings.
    "spark.sql.autoBroadcastJoinThreshold": str(32 * 1024 * 1024),
}


def build_session(app_name: str = "rsp-sidecar", conf: Mapping[str, str] | None = None) -> SparkSession:
    """Get or create the session: local mode unless a master is already configured."""
    present = SparkConf()  # carries spark-submit's settings when run under it
    builder = SparkSession.builder.appName(app_name)
    if not present.contains("spark.master") and not os.environ.get("MASTER"):
        builder = builder.master("local[*]")
    for key, value in LOCAL_DEFAULTS.items():
        if not present.contains(key):
            builder = builder.config(key, value)
    extra = jars.cached_jars()
    if extra:
        listed = [j for j in present.get("spark.jars", "").split(",") if j]
        builder = builder.config("spark.jars", ",".join(listed + [j for j in extra if j not in listed]))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("RSP_SPARK_LOG_LEVEL", "WARN"))
    return session
