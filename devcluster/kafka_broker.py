"""A single-node Apache Kafka broker on loopback, for tests and for trying ``--continuous`` over Kafka.

    python -m devcluster.kafka_broker --dir /tmp/kafka [--port 9092]     # runs until Ctrl-C
    python -m devcluster.kafka_broker produce --topic events FILE         # one message per line of FILE

    with KafkaBroker(Path("/tmp/kafka")) as broker:
        broker.bootstrap        # "127.0.0.1:PORT"

The broker is Apache Kafka's own (``rdfcore.jars.kafka_broker``, fetched from Maven Central into
the jar cache by ``rsp-sidecar setup --kafka-broker`` or on first use) in KRaft mode — broker and
controller in one JVM, no ZooKeeper, no Docker: the directory gets a ``server.properties`` and a
log directory formatted with ``kafka.tools.StorageTool``, then ``kafka.Kafka`` runs with ``java
-cp``. It listens on 127.0.0.1 only, creates topics on first use (one partition unless told), and
is stopped (and waited for) on exit.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from jobs.services import LocalService, free_port
from rdfcore import jars
from rdfcore.errors import SidecarError


class BrokerError(SidecarError, RuntimeError):
    """The local Kafka broker could not be started."""


class KafkaBroker(LocalService):
    """Apache Kafka in KRaft mode on ``127.0.0.1:port`` with its data under ``directory``."""

    def __init__(self, directory: Path, port: int | None = None, partitions: int = 1):
        self.directory = Path(directory)
        self.port = port or free_port()
        self.controller_port = free_port()
        self.partitions = partitions
        self.process: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> "KafkaBroker":
        classpath = os.pathsep.join(str(p) for p in jars.resolve_kafka_broker())
        logs = self.directory / "logs"
        shutil.rmtree(self.directory, ignore_errors=True)
        self.directory.mkdir(parents=True)
        config = self.directory / "server.properties"
        config.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1",
            f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={logs}", f"num.partitions={self.partitions}", "auto.create.topics.enable=true",
            "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0", ""]), encoding="utf-8")
        java = [jars.java_command(), "-Xmx512m", "-cp", classpath]
        cluster = uuid.uuid4().hex[:22]
        formatted = subprocess.run(java + ["kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(config)],
                                   capture_output=True, text=True, timeout=120)
        if formatted.returncode != 0:
            raise BrokerError(f"formatting the KRaft log directory {logs} failed: "
                              f"{(formatted.stderr or formatted.stdout).strip()[-500:]}")
        self._log = open(self.directory / "broker.log", "w", encoding="utf-8")
        self.process = subprocess.Popen(java + ["kafka.Kafka", str(config)], stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerError(f"the Kafka broker exited with {self.process.returncode} at start-up; "
                                  f"see {self.directory / 'broker.log'}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise BrokerError(f"the Kafka broker did not listen on {self.bootstrap} within {timeout:.0f} s")


def produce(bootstrap: str, topic: str, lines_file: Path) -> int:
    """Send each line of ``lines_file`` as one message to ``topic`` (Kafka's own console producer,
    from the broker's jars); returns its exit code."""
    classpath = os.pathsep.join(str(p) for p in jars.resolve_kafka_broker())
    with open(lines_file, "rb") as data:
        return subprocess.run([jars.java_command(), "-cp", classpath, "kafka.tools.ConsoleProducer",
                               "--bootstrap-server", bootstrap, "--topic", topic], stdin=data).returncode


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["produce"]:
        ap = argparse.ArgumentParser(prog="python -m devcluster.kafka_broker produce",
                                     description="send each line of FILE as one message to TOPIC")
        ap.add_argument("--bootstrap", default="127.0.0.1:9092")
        ap.add_argument("--topic", required=True)
        ap.add_argument("file", type=Path)
        args = ap.parse_args(argv[1:])
        return produce(args.bootstrap, args.topic, args.file)
    ap = argparse.ArgumentParser(description="a single-node Kafka broker (KRaft) on 127.0.0.1, until Ctrl-C "
                                             "(or: produce --topic T FILE)")
    ap.add_argument("--dir", required=True, help="its data directory (wiped at start)")
    ap.add_argument("--port", type=int, default=9092)
    ap.add_argument("--partitions", type=int, default=1, help="partitions of auto-created topics")
    args = ap.parse_args(argv)
    with KafkaBroker(Path(args.dir), args.port, args.partitions) as broker:
        print(f"Kafka broker listening on {broker.bootstrap} (data in {args.dir}); Ctrl-C stops it", flush=True)
        broker.wait_for_interrupt()
    return 0


if __name__ == "__main__":
    sys.exit(main())
