"""Shared fixtures: one local Spark session for the whole test run; the ``spark`` marker; the
hypothesis profiles (``tests/hypothesis_profiles.py``)."""
from __future__ import annotations

import sys

import pytest

from ontologies.data import data_dir
from tests.hypothesis_profiles import thorough  # (registers the profiles before --hypothesis-profile loads one)


def pytest_collection_modifyitems(config, items):
    """Every test that starts Spark carries the ``spark`` marker, so ``pytest -m "not spark"`` is
    a fast run that starts no JVM. ``fixturenames`` is the closure of the fixtures a test uses, so
    a test is marked when it asks for ``spark`` directly or through another fixture (``data``,
    ``store``, ...). Tests that start Spark in a subprocess (CLI runs, spark-submit) are marked in
    their files.

    Tests marked ``thorough`` are left out (deselected) unless the hypothesis profile is
    ``thorough``: each is a second check of a property that one default test per engine already
    checks (the answers equal the reference at every instant, docs/development.md)."""
    if not thorough():
        extra = [item for item in items if item.get_closest_marker("thorough") is not None]
        if extra:
            config.hook.pytest_deselected(items=extra)
            items[:] = [item for item in items if item.get_closest_marker("thorough") is None]
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
    # the Spark-free tests run first, so that a broken grammar or algebra shows in seconds; then
    # the Spark tests; the cluster tests (mini HDFS/YARN, a standalone cluster) last
    items.sort(key=lambda item: (item.get_closest_marker("cluster") is not None,
                                 item.get_closest_marker("spark") is not None))


def _jvm_started() -> bool:
    context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
    return context is not None and context._gateway is not None


@pytest.fixture(autouse=True)
def _starts_spark_only_if_marked(request):
    """A test that starts the JVM in this process must be marked ``spark`` (through the fixture,
    or in its file): else ``-m "not spark"`` starts one, and the session gets the JVM's defaults
    (a 1 GB heap) instead of the ``spark`` fixture's settings."""
    before = _jvm_started()
    yield
    if not before and _jvm_started() and request.node.get_closest_marker("spark") is None:
        pytest.fail(f"{request.node.nodeid} started Spark but is not marked spark; use the spark fixture")


@pytest.fixture(scope="session")
def spark():
    from jobs.spark import build_session
    from rdfcore import jars

    try:  # the Kafka tests need the connector on the classpath at start-up (cached: no download)
        jars.resolve_kafka_connector()
    except jars.JarUnavailable:
        pass  # those tests then fail with the connector's own error; the others do not need it
    session = build_session("rsp-sidecar tests", {
        "spark.master": "local[2]",
        # one session serves ~1,400 tests: the 1 GB default heap ran out broadcasting a closure
        # table near the end of a run (tests/test_tracheobionta.py), and at 3 GB the old
        # generation stood at 90% with a full GC every second by the last Spark tests
        # (tests/test_vienna_transit.py): what the session keeps grows with the run
        "spark.driver.memory": "6g",
        # the status store keeps the last 1,000 jobs, stages and SQL executions (with their plan
        # graphs) and 100,000 tasks even with the UI off; a run makes ~15,000 stages
        "spark.ui.retainedJobs": "100",
        "spark.ui.retainedStages": "100",
        "spark.ui.retainedTasks": "10000",
        "spark.sql.ui.retainedExecutions": "50",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.sql.adaptive.enabled": "false",
        # tiny inputs: compiling whole-stage Java for every new plan costs more than it saves
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    })
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def hadoop(tmp_path_factory, spark):
    """Hadoop's mini cluster on loopback, HDFS and YARN (``devcluster.hadoop_cluster``), once per run:
    ``tests/test_hdfs.py`` and ``tests/test_yarn.py`` (the ``cluster`` marker). The shared
    session writes files with one replica, as a client of a one-datanode HDFS must (else an
    append looks for a second datanode)."""
    from devcluster.hadoop_cluster import MiniCluster

    with MiniCluster(tmp_path_factory.mktemp("hadoop"), yarn=True) as cluster:
        spark.sparkContext._jsc.hadoopConfiguration().set("dfs.replication", "1")
        yield cluster


@pytest.fixture(scope="session")
def shared_data():
    """The shared data directory (../shared/data or $RSP_DATA_DIR); skips when absent."""
    try:
        return data_dir()
    except FileNotFoundError as exc:
        pytest.skip(f"real data not available: {exc}")
