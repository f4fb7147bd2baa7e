"""Hadoop's mini cluster (HDFS, optionally YARN) on loopback, for the cluster tests and for trying
the jobs against ``hdfs://`` paths without a real cluster.

    python -m jobs.hadoop_cluster --dir /tmp/hadoop [--yarn]        # runs until Ctrl-C

    with MiniCluster(Path("/tmp/hadoop")) as cluster:
        cluster.hdfs            # "hdfs://localhost:PORT"
        cluster.config          # the cluster's client configuration (an XML file)

The cluster is Apache Hadoop's own test cluster (``org.apache.hadoop:hadoop-client-minicluster``
at the version of the Hadoop client PySpark bundles, fetched from Maven Central into the jar cache
on first use) started by its ``MiniHadoopClusterManager`` in one JVM beside PySpark's jars: a
namenode and one datanode, and with ``yarn=True`` a resource manager and one node manager. It
runs in ``directory`` (its data goes to ``directory/target``), writes its client configuration to
``directory/cluster.xml`` once it is up, and is stopped (and waited for) on exit.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from jobs.kafka_broker import free_port
from reasoner import jars
from reasoner.errors import SidecarError


class ClusterError(SidecarError, RuntimeError):
    """The mini cluster could not be started."""


class MiniCluster:
    """HDFS (and optionally YARN) of Hadoop's mini cluster, its data under ``directory``."""

    def __init__(self, directory: Path, *, yarn: bool = False, memory: str = "768m"):
        self.directory = Path(directory)
        self.yarn = yarn
        self.memory = memory
        self.namenode_port = free_port()
        self.process: subprocess.Popen | None = None
        self._log = None

    @property
    def config(self) -> Path:
        return self.directory / "cluster.xml"

    @property
    def hdfs(self) -> str:
        return f"hdfs://localhost:{self.namenode_port}"

    def settings(self) -> dict[str, str]:
        """The client configuration the cluster wrote (``name -> value``)."""
        text = self.config.read_text(encoding="utf-8")
        return dict(re.findall(r"<name>([^<]*)</name>\s*<value>([^<]*)</value>", text))

    def start(self, timeout: float = 180.0) -> "MiniCluster":
        classpath = os.pathsep.join([str(p) for p in jars.resolve_hadoop_minicluster()]
                                    + [str(jars.spark_jars_dir() / "*")])
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)
        command = [jars.java_command(), f"-Xmx{self.memory}", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
                   "-cp", classpath, "org.apache.hadoop.mapreduce.MiniHadoopClusterManager",
                   "-format", "-nnport", str(self.namenode_port), "-writeConfig", str(self.config)]
        if not self.yarn:
            command.append("-nomr")
        self._log = open(self.directory / "cluster.log", "w", encoding="utf-8")
        self.process = subprocess.Popen(command, cwd=self.directory, stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ClusterError(f"Hadoop's mini cluster exited with {self.process.returncode} at start-up; "
                                   f"see {self.directory / 'cluster.log'}")
            if self.config.exists() and "</configuration>" in self.config.read_text(encoding="utf-8"):
                try:
                    with socket.create_connection(("127.0.0.1", self.namenode_port), timeout=1):
                        return self
                except OSError:
                    pass
            time.sleep(0.5)
        self.stop()
        raise ClusterError(f"Hadoop's mini cluster was not up within {timeout:.0f} s; see {self.directory / 'cluster.log'}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "MiniCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Hadoop's mini cluster (HDFS; --yarn adds YARN) on loopback, "
                                             "until Ctrl-C")
    ap.add_argument("--dir", required=True, help="its data directory (wiped at start)")
    ap.add_argument("--yarn", action="store_true", help="also a resource manager and a node manager")
    args = ap.parse_args(argv)
    with MiniCluster(Path(args.dir), yarn=args.yarn) as cluster:
        print(f"HDFS at {cluster.hdfs}; client configuration in {cluster.config}; Ctrl-C stops it", flush=True)
        try:
            while cluster.process is not None and cluster.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
