"""Hadoop's mini cluster (HDFS, optionally YARN) on loopback, for the cluster tests and for trying
the jobs against ``hdfs://`` paths without a real cluster.

    python -m devcluster.hadoop_cluster --dir /tmp/hadoop [--yarn]        # runs until Ctrl-C

    with MiniCluster(Path("/tmp/hadoop")) as cluster:
        cluster.hdfs            # "hdfs://localhost:PORT"
        cluster.config          # the cluster's client configuration (an XML file)

The cluster is Apache Hadoop's own test cluster (``org.apache.hadoop:hadoop-client-minicluster``
at the version of the Hadoop client PySpark bundles, with the Bouncy Castle and JAXB jars YARN
needs, fetched from Maven Central into the jar cache on first use), started in one JVM beside
PySpark's jars by ``devcluster/MiniClusters.java`` (run by ``java`` in source-file mode: no build step):
a namenode and one datanode, and with ``yarn=True`` a resource manager (FIFO scheduler) and one
node manager. It runs in ``directory``, writes its clients' configuration to
``directory/cluster.xml`` once every service is up (:meth:`MiniCluster.conf_dir` turns it into a
``HADOOP_CONF_DIR`` for ``spark-submit --master yarn``), and is stopped (and waited for) on exit.
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

from jobs.services import LocalService, free_port
from rdfcore import jars, resources
from rdfcore.errors import SidecarError


class ClusterError(SidecarError, RuntimeError):
    """The mini cluster could not be started."""


class MiniCluster(LocalService):
    """HDFS (and optionally YARN) of Hadoop's mini cluster, its data under ``directory``."""

    grace = 5.0          # its data is scratch: a short grace, then a kill

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

    def conf_dir(self) -> Path:
        """A ``HADOOP_CONF_DIR`` holding the cluster's configuration (``core-site.xml``,
        ``hdfs-site.xml``, ``yarn-site.xml``), for ``spark-submit --master yarn``."""
        directory = self.directory / "conf"
        directory.mkdir(exist_ok=True)
        for name in ("core-site.xml", "hdfs-site.xml", "yarn-site.xml"):
            shutil.copyfile(self.config, directory / name)
        return directory

    def start(self, timeout: float = 180.0) -> "MiniCluster":
        classpath = os.pathsep.join([str(p) for p in jars.resolve_hadoop_minicluster()]
                                    + [str(jars.spark_jars_dir() / "*")])
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)
        command = [jars.java_command(), f"-Xmx{self.memory}", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
                   "-cp", classpath, str(resources.path("devcluster", "MiniClusters.java")),
                   "--dir", str(self.directory), "--nn-port", str(self.namenode_port), "--config", str(self.config)]
        if self.yarn:
            command.append("--yarn")
        self._log = open(self.directory / "cluster.log", "w", encoding="utf-8")
        self.process = subprocess.Popen(command, cwd=self.directory, stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ClusterError(f"Hadoop's mini cluster exited with {self.process.returncode} at start-up; "
                                   f"see {self.directory / 'cluster.log'}")
            if self.config.exists():                       # written (renamed into place) once all is up
                try:
                    with socket.create_connection(("127.0.0.1", self.namenode_port), timeout=1):
                        return self
                except OSError:
                    pass
            time.sleep(0.5)
        self.stop()
        raise ClusterError(f"Hadoop's mini cluster was not up within {timeout:.0f} s; see {self.directory / 'cluster.log'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Hadoop's mini cluster (HDFS; --yarn adds YARN) on loopback, "
                                             "until Ctrl-C")
    ap.add_argument("--dir", required=True, help="its data directory (wiped at start)")
    ap.add_argument("--yarn", action="store_true", help="also a resource manager and a node manager")
    args = ap.parse_args(argv)
    with MiniCluster(Path(args.dir), yarn=args.yarn) as cluster:
        yarn = f"; YARN: HADOOP_CONF_DIR={cluster.conf_dir()}" if args.yarn else ""
        print(f"HDFS at {cluster.hdfs}{yarn}; client configuration in {cluster.config}; Ctrl-C stops it", flush=True)
        cluster.wait_for_interrupt()
    return 0


if __name__ == "__main__":
    sys.exit(main())
