"""The one place that builds Spark sessions (jobs, CLI and test fixtures).

Defaults are for a single machine (``local[*]``, few shuffle partitions, the project's cached jars
on the classpath). Anything set by ``spark-submit`` (``--master``, ``--conf``, ``--jars``,
``spark-defaults.conf``) or passed in ``conf`` wins over these defaults.

Quiet by default: when this process starts the JVM, Spark logs errors only (``log4j2-quiet.properties``
next to this module, through the driver's Java options), a local session binds to 127.0.0.1 (no
loopback-hostname warning), and the JDK's one boot line about incubator modules (Spark loads
``jdk.incubator.vector``; the JDK has no switch for it) is dropped from the JVM's stderr. ``--verbose``
on the CLI, or ``RSP_VERBOSE=1``, keeps all of it.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import BinaryIO

from pyspark import SparkConf, SparkContext, __version__ as PYSPARK_VERSION
from pyspark.sql import SparkSession

from rdfcore import jars, resources

LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # Dictionary ids are 64-bit hashes: joins on longs, never on strings.
    "spark.sql.autoBroadcastJoinThreshold": str(32 * 1024 * 1024),
    # PySpark records each function call's Python call site for error messages: four more JVM round
    # trips and a stack walk per call. Our plans are built from thousands of calls (a FILTER's
    # columns, the lifetimes operators), and without the call sites they are built about 2x faster.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


#: The JVM's quiet logging configuration, a resource of this package (a file on disk when run
#: from a zip: ``rdfcore.resources.path``).
QUIET_LOG4J = ("jobs", "log4j2-quiet.properties")
#: Lines the JVM prints on its stderr outside log4j that a quiet run drops: the module warning, and
#: what the Python worker of ``transformWithStateInPandas``'s driver side prints (``print`` calls in
#: PySpark's ``transform_with_state_driver_worker``, each followed by an empty line, which the JVM
#: copies to its stderr)
_JVM_NOISE = (b"WARNING: Using incubator modules:", b"Starting Streaming TransformWithStateInPandas Python worker",
              b"Streaming TransformWithStateInPandas Python worker ")


def verbose() -> bool:
    return os.environ.get("RSP_VERBOSE", "") not in ("", "0")


def copy_without_noise(source: BinaryIO, target: BinaryIO) -> None:
    """``source``'s lines to ``target`` without ``_JVM_NOISE`` (nor the empty line after one)."""
    dropped = False
    for line in source:
        if line.startswith(_JVM_NOISE):
            dropped = True
        elif not (dropped and line.strip() == b""):
            dropped = False
            target.write(line)


@contextlib.contextmanager
def _filtered_jvm_stderr() -> Iterator[None]:
    """While the JVM starts, fd 2 is a pipe; a daemon thread forwards its lines to the real stderr,
    minus ``_JVM_NOISE``. The JVM keeps the pipe (and the thread keeps forwarding its errors)."""
    try:
        sys.stderr.flush()
        saved, real = os.dup(2), os.dup(2)
    except (OSError, ValueError):  # no usable fd 2: nothing to filter
        yield
        return
    read, write = os.pipe()

    def forward() -> None:
        with os.fdopen(read, "rb") as source, os.fdopen(real, "wb", buffering=0) as target:
            copy_without_noise(source, target)

    os.dup2(write, 2)
    os.close(write)
    threading.Thread(target=forward, name="rsp-sidecar-jvm-stderr", daemon=True).start()
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def build_session(app_name: str = "rsp-sidecar", conf: Mapping[str, str] | None = None) -> SparkSession:
    """Get or create the session: local mode unless a master is already configured."""
    present = SparkConf()  # carries spark-submit's settings when run under it
    builder = SparkSession.builder.appName(app_name)
    local = not present.contains("spark.master") and not os.environ.get("MASTER")
    if local:
        builder = builder.master("local[*]")
    quiet = not verbose() and SparkContext._active_spark_context is None and not _jvm_running()
    if quiet:
        options = present.get("spark.driver.extraJavaOptions", "")
        if "log4j2.configurationFile" not in options:
            builder = builder.config("spark.driver.extraJavaOptions",
                                     f"{options} -Dlog4j2.configurationFile=file:{resources.path(*QUIET_LOG4J)}".strip())
        if local:
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    for key, value in LOCAL_DEFAULTS.items():
        if not present.contains(key):
            builder = builder.config(key, value)
    master = (conf or {}).get("spark.master") or present.get("spark.master", "local[*]" if local else "")
    if master.startswith("local") and not present.contains("spark.locality.wait"):
        # one executor: locality means nothing, and delay scheduling can stall a job for good: the
        # local backend makes new offers only on task events, so tasks that prefer an HDFS
        # datanode's host name (127.0.0.1, the executor being "localhost") waited forever once
        # the stage's other tasks had finished
        builder = builder.config("spark.locality.wait", "0s")
    if master.startswith("local") and SparkContext._active_spark_context is None:
        # local workers run this driver's interpreter: PySpark's default is whatever `python3` is
        # first on PATH, another installation (without this PySpark, or with another version of
        # it) when the driver runs from a virtual environment that is not activated
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local") and not present.contains("spark.python.daemon.module") \
            and SparkContext._active_spark_context is None and _worker_can_import("jobs.pyworker"):
        # PySpark's daemon without the archives each Python task re-reads (jobs/pyworker.py)
        builder = builder.config("spark.python.daemon.module", "jobs.pyworker")
    extra = jars.cached_jars(PYSPARK_VERSION)
    if SparkContext._active_spark_context is None:
        try:   # the project's file source (cep.continuous.sources); without it, FileSource says why
            extra.append(str(jars.ordered_files_jar(PYSPARK_VERSION)))
        except jars.JarBuildFailed:
            pass
    if extra:
        listed = [j for j in present.get("spark.jars", "").split(",") if j]
        builder = builder.config("spark.jars", ",".join(listed + [j for j in extra if j not in listed]))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    with _filtered_jvm_stderr() if quiet else contextlib.nullcontext():
        session = builder.getOrCreate()
    default = "WARN" if verbose() else "ERROR"
    session.sparkContext.setLogLevel(os.environ.get("RSP_SPARK_LOG_LEVEL", default))
    return session


def _worker_can_import(module: str) -> bool:
    """Whether a local Python worker (the interpreter PySpark starts, in this directory and
    environment) can import ``module``: not so when this driver runs from a zip it was given, or
    with ``RSP_PLAIN_PYSPARK_DAEMON`` set (PySpark's own daemon then)."""
    import subprocess

    if os.environ.get("RSP_PLAIN_PYSPARK_DAEMON"):
        return False
    python = os.environ.get("PYSPARK_PYTHON") or sys.executable
    try:
        return subprocess.run([python, "-c", f"import {module}"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _jvm_running() -> bool:
    """Whether this process already has a JVM (PySpark's gateway): JVM options cannot change then."""
    return SparkContext._gateway is not None
