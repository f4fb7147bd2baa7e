"""A job on YARN in cluster deploy mode (issue 15): ``spark-submit --master yarn --deploy-mode
cluster`` of the packaged zip and its launcher on Hadoop's mini cluster (the ``hadoop`` fixture:
HDFS and YARN on loopback). The driver runs in a YARN container from the zip; the driver's and
the executors' Python do not have the project installed (``python -S``: no site module, so no
editable-install ``.pth``; site-packages for PySpark and the dependencies only). The ontology is
read from HDFS and the store written there; its tables equal a local run's. Then a continuous
query over that store on the keyed operator (issue 38), in cluster mode from the zip too: its
processor in the executor's Python, its state in RocksDB checkpointed to HDFS; its answers equal a
local run's.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

import pytest

from jobs import package
from rdfcore import jars, resources
from reasoner import store
from rdfcore.fs import HadoopPath
from reasoner.publish import materialize_sources
from rdfcore.schema import TABLE_COLUMNS
from tests.cluster_cases import QUERY, STREAM, answers, local_answers, metrics, write_example_stream

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

EXAMPLE = ("vienna_schema.ttl", "vienna_example.ttl")
#: the driver-side reasoner: the container's driver reads HDFS and writes the store through the
#: FileSystem API, runs from the zip, and the run costs a minute, not two (the Spark engine's
#: executors reading HDFS are tested in tests/test_hdfs.py)
ENGINE = "local"


def python_without_the_project(directory) -> str:
    """A ``python`` for YARN's containers that sees site-packages but not this project."""
    site = os.pathsep.join(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib")))
    wrapper = directory / "python-without-project"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="$PYTHONPATH:{site}" exec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def test_materialize_then_a_keyed_continuous_query_in_yarn_cluster_mode_from_the_zip(spark, hadoop, tmp_path):
    artifact, launcher = package.build(tmp_path / "dist")
    base = HadoopPath(f"{hadoop.hdfs}/yarn")
    for name in EXAMPLE:
        (base / name).write_bytes(resources.data("ontologies", name))
        (tmp_path / name).write_bytes(resources.data("ontologies", name))
    python = python_without_the_project(tmp_path)
    spark_home = jars.spark_jars_dir().parent
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_CONF_DIR")}
    env.update(HADOOP_CONF_DIR=str(hadoop.conf_dir()), SPARK_HOME=str(spark_home))
    command = [str(spark_home / "bin" / "spark-submit"), "--master", "yarn", "--deploy-mode", "cluster",
               "--conf", f"spark.yarn.jars=local:{jars.spark_jars_dir()}/*",   # no upload of Spark's jars
               "--conf", f"spark.pyspark.python={python}", "--conf", f"spark.yarn.appMasterEnv.PYSPARK_PYTHON={python}",
               "--driver-memory", "512m", "--executor-memory", "512m", "--num-executors", "1", "--executor-cores", "1",
               "--files", str(resources.path("ontologies", QUERY)),    # to the driver's container
               "--py-files", str(artifact), str(launcher)]
    done = subprocess.run(command + ["materialize", "--engine", ENGINE, "--ontology", *[str(base / n) for n in EXAMPLE],
                                     "--out", str(base / "store")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "final status: SUCCEEDED" in done.stderr
    url = str(base / "store")
    manifest = store.read_manifest(url)
    assert manifest["version"] == "v000001" and manifest["engine"] == ENGINE
    assert [s["path"] for s in manifest["sources"]] == [str(base / n) for n in EXAMPLE]
    local = materialize_sources(spark, [tmp_path / n for n in EXAMPLE], tmp_path / "store", engine="local")
    assert manifest["tables"] == local["counts"]
    for name in TABLE_COLUMNS:
        got = {tuple(r) for r in store.open_version(spark, url).table(name, decoded=True).collect()}
        assert got == {tuple(r) for r in store.open_version(spark, tmp_path / "store").table(name, decoded=True).collect()}

    # the continuous query over that store on the keyed operator, stream, checkpoint and answers
    # on HDFS; the query file in the driver's container (--files)
    write_example_stream(base / "in", tmp_path / "in")
    done = subprocess.run(command + ["query", QUERY, "--closure", url, "--stream", f"{STREAM}={base / 'in'}",
                                     "--continuous", "--engine", "keyed", "--checkpoint", str(base / "ckpt"),
                                     "--out", str(base / "out"), "--time-unit", "m", "--trigger", "available-now"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "final status: SUCCEEDED" in done.stderr
    got = answers(base / "out")
    assert got == local_answers(spark, tmp_path, tmp_path / "store") and got
    lines = metrics(base / "ckpt")
    assert {m["engine"] for m in lines} == {"keyed"} and lines[-1]["state_rows"] > 0
