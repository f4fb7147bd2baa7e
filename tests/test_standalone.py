"""Jobs on a Spark standalone cluster whose executors do not see the driver's files (issue 15):
a master and a worker on loopback (``devcluster.standalone_cluster``), the worker in its own mount
namespace where this project, the shared data and the test's scratch directories are empty
tmpfs — as on another host. The jobs run with ``spark-submit --master spark://...`` in client
mode, as users run them, every input and output on HDFS (the ``hadoop`` fixture); their results
equal local mode's, the keyed operator's too when its executor is killed mid-stream.

Marked ``cluster``. It needs a mount namespace (``unshare -m``: root or CAP_SYS_ADMIN, as on our
machines and in CI); without one it fails with the reason rather than skip, because a skip would
drop the only test that executors really cannot read the driver's files.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devcluster.standalone_cluster import StandaloneCluster, can_hide
from jobs import package
from rdfcore import jars, resources
from reasoner import store
from rdfcore.fs import HadoopPath
from rdfcore.schema import TABLE_COLUMNS
from tests.cluster_cases import STREAM, answers, local_answers, metrics, write_example_stream

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
EXAMPLE = ("vienna_schema.ttl", "vienna_example.ttl")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    why = can_hide()
    assert why is None, f"the worker cannot be kept from the driver's files on this machine: {why}"
    hidden = [REPO, tmp_path_factory.getbasetemp()] + ([SHARED] if SHARED.is_dir() else [])
    with StandaloneCluster(tmp_path_factory.mktemp("standalone"), hide=hidden) as cluster:
        yield cluster


def submit(cluster: StandaloneCluster, job: str, *args: str, cwd: Path, checkpoints: str,
           py_files: Path | None = None, wait: bool = True):
    """``spark-submit --master spark://... jobs/JOB.py ARGS`` in client mode (the driver here);
    ``checkpoints``: ``spark.checkpoint.dir``, on HDFS (the cluster's default filesystem is the
    local disk, which the nodes do not share); ``py_files``: the project's zip, for jobs whose
    Python runs on the executors too (``rsp-sidecar package``). With ``wait`` False, the running
    process, not its outcome: its output goes to ``cwd/submit.log``."""
    spark_home = jars.spark_jars_dir().parent
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "PYTHONPATH", "MASTER")}
    env["SPARK_HOME"] = str(spark_home)
    command = [str(spark_home / "bin" / "spark-submit"), "--master", cluster.master,
               "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.hadoop.dfs.replication=1",
               "--conf", f"spark.checkpoint.dir={checkpoints}",
               "--driver-memory", "768m", "--executor-memory", "768m", "--total-executor-cores", "1",
               *(["--py-files", str(py_files)] if py_files is not None else []),
               str(REPO / "jobs" / f"{job}.py"), *args]
    if not wait:
        with open(cwd / "submit.log", "w", encoding="utf-8") as log:
            return subprocess.Popen(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    # Spark's own INFO lines (spark-submit's log4j) say little: the job's error lines and stdout first
    done.report = "\n".join([line for line in done.stderr.splitlines()
                              if " INFO " not in line and not line.startswith("\tat ")][-40:] + [done.stdout[-1000:]])
    return done


def test_jobs_on_a_standalone_cluster_whose_executors_see_no_driver_file(spark, hadoop, standalone, tmp_path):
    from reasoner.publish import materialize_sources

    # what the executors see: nothing of this project, nor of the test's files
    assert standalone.worker_sees(REPO) == [] and standalone.worker_sees(tmp_path) is None
    base = HadoopPath(f"{hadoop.hdfs}/standalone")
    for name in EXAMPLE:
        (base / name).write_bytes(resources.data("ontologies", name))
        (tmp_path / name).write_bytes(resources.data("ontologies", name))
    write_example_stream(base / "in", tmp_path / "in")

    # the ontology refresh as scheduled on the cluster: sources read from HDFS, the store written
    # there (a small ontology: reasoned on the driver, engine auto; Spark's reasoner writing the
    # store to HDFS from executors: tests/test_hdfs.py, a minute more here on one executor core)
    done = submit(standalone, "materialize", "--ontology", *[str(base / n) for n in EXAMPLE],
                  "--out", str(base / "store"), cwd=tmp_path, checkpoints=str(base / "checkpoints"))
    assert done.returncode == 0, done.report
    local = materialize_sources(spark, [tmp_path / n for n in EXAMPLE], tmp_path / "store", engine="local")
    assert store.read_manifest(str(base / "store"))["tables"] == local["counts"]
    for name in TABLE_COLUMNS:
        got = {tuple(r) for r in store.open_version(spark, str(base / "store")).table(name, decoded=True).collect()}
        assert got == {tuple(r) for r in store.open_version(spark, tmp_path / "store").table(name, decoded=True).collect()}

    # the continuous query over that store, its stream, checkpoint and answers on HDFS, on the
    # keyed operator (the driver-side engine's state on HDFS, both engines' answers equal to the
    # local run's: tests/test_hdfs.py): its processor runs in the executor's Python, from the
    # project's zip (--py-files), its state in RocksDB checkpointed to HDFS, its static side
    # shipped from the driver as a file. One file per micro-batch, and after the first batch its
    # executor is killed (SIGKILL, as a lost host: issue 38's fault test): the worker starts a new
    # one, the lost tasks run again there from the state on HDFS, and the run ends with the same
    # answers, none twice
    query = resources.path("ontologies", "vienna_example_query.rq")
    got = local_answers(spark, tmp_path, tmp_path / "store", max_per_trigger=1)
    assert got, "the example has answers, or the test proves nothing"
    artifact, _launcher = package.build(tmp_path / "package")
    job = submit(standalone, "query", str(query), "--closure", str(base / "store"), "--stream",
                 f"{STREAM}={base / 'in'}", "--continuous", "--engine", "keyed", "--checkpoint",
                 str(base / "ckpt-keyed"), "--out", str(base / "out-keyed"), "--time-unit", "m",
                 "--max-per-trigger", "1", "--trigger", "available-now", cwd=tmp_path,
                 checkpoints=str(base / "checkpoints"), py_files=artifact, wait=False)
    def batches() -> int:
        return len(metrics(base / "ckpt-keyed")) if (base / "ckpt-keyed" / "metrics.jsonl").exists() else 0

    while batches() < 1 and job.poll() is None:      # polls: the job's speed decides nothing here
        time.sleep(0.2)
    killed = standalone.executors()
    assert job.poll() is None and killed, "the job must still run, on an executor, when its executor is killed"
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    at_kill = batches()
    assert job.wait(timeout=900) == 0, (tmp_path / "submit.log").read_text()[-3000:]
    assert not set(killed) & set(standalone.executors()), "the killed executor is still there"
    assert batches() > at_kill, "no batch ran after the kill: the test proves nothing"
    assert answers(base / "out-keyed") == got
    lines = metrics(base / "ckpt-keyed")
    assert {m["engine"] for m in lines} == {"keyed"} and lines[-1]["state_rows"] > 0
