"""Spark's standalone cluster on loopback — a master and one worker — for the cluster tests and for
trying the jobs with executors that do not share the driver's files.

    python -m devcluster.standalone_cluster --dir /tmp/standalone --hide /work/project   # until Ctrl-C

    with StandaloneCluster(Path("/tmp/standalone"), hide=[project, data]) as cluster:
        cluster.master          # "spark://127.0.0.1:PORT", for spark-submit --master

The master and the worker are PySpark's own (``bin/spark-class`` of the installed PySpark). The
worker, and so every executor it starts, runs in its own mount namespace (``unshare -m``) in which
each directory of ``hide`` is an empty tmpfs: an executor that opens a file of the driver's there
fails as it would on another host, while the loopback network (HDFS, the driver) stays shared.
That needs ``unshare`` and the right to make a mount namespace (root, or CAP_SYS_ADMIN):
:func:`can_hide` says whether this machine has it. Without ``hide`` the worker runs as it is.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from jobs.services import LocalService, free_port
from rdfcore import jars
from rdfcore.errors import SidecarError


class StandaloneError(SidecarError, RuntimeError):
    """The standalone cluster could not be started."""


def can_hide() -> str | None:
    """None when a worker can run with hidden directories here, else why not."""
    import tempfile

    if shutil.which("unshare") is None:
        return "no unshare command (util-linux)"
    with tempfile.TemporaryDirectory(prefix="rsp-unshare-probe-") as target:   # a directory that surely exists
        probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                f"mount -t tmpfs tmpfs {shlex.quote(target)}"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot make a mount namespace with a tmpfs (unshare -m: {probe.stderr.strip() or probe.returncode})"
    return None


class StandaloneCluster(LocalService):
    """A standalone master and one worker (``cores``, ``memory``) on 127.0.0.1, their logs and
    the worker's directory under ``directory``; ``hide``: directories the worker does not see."""

    grace = 10.0

    def __init__(self, directory: Path, *, hide=(), cores: int = 1, memory: str = "1g"):
        self.directory = Path(directory)
        self.hide = [Path(p).resolve() for p in hide]
        self.cores, self.memory = cores, memory
        self.port, self.ui_port = free_port(), free_port()
        self.worker: subprocess.Popen | None = None
        self._worker_log = None

    @property
    def master(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spark_class(self) -> str:
        return str(jars.spark_jars_dir().parent / "bin" / "spark-class")

    def _env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "PYTHONPATH")}
        env.update(SPARK_HOME=str(jars.spark_jars_dir().parent), SPARK_LOCAL_IP="127.0.0.1",
                   SPARK_WORKER_DIR=str(self.directory / "work"))
        return env

    def start(self, timeout: float = 120.0) -> "StandaloneCluster":
        if self.hide:
            why = can_hide()
            if why:
                raise StandaloneError(f"the worker cannot hide {', '.join(map(str, self.hide))}: {why}")
        shutil.rmtree(self.directory, ignore_errors=True)
        (self.directory / "work").mkdir(parents=True)
        env = self._env()
        self._log = open(self.directory / "master.log", "w", encoding="utf-8")
        self.process = subprocess.Popen(
            [self._spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(self.port), "--webui-port", str(self.ui_port)],
            env=env, cwd=self.directory, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        worker = [self._spark_class(), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                  "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(free_port()),
                  "--work-dir", str(self.directory / "work"), self.master]
        if self.hide:
            mounts = " && ".join(f"mount -t tmpfs tmpfs {shlex.quote(str(p))}" for p in self.hide)
            # the worker's own directory may lie under a hidden one: made again inside the namespace
            script = f"{mounts} && mkdir -p {shlex.quote(str(self.directory / 'work'))} && exec {shlex.join(worker)}"
            worker = ["unshare", "-m", "--propagation", "private", "sh", "-c", script]
        self._worker_log = open(self.directory / "worker.log", "w", encoding="utf-8")
        self.worker = subprocess.Popen(worker, env=env, cwd="/", stdout=self._worker_log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in (("master", self.process), ("worker", self.worker)):
                if proc.poll() is not None:
                    self.stop()
                    raise StandaloneError(f"the standalone {name} exited with {proc.returncode} at start-up; "
                                          f"see {self.directory / (name + '.log')}")
            if self._alive_workers() >= 1:
                return self
            time.sleep(0.5)
        self.stop()
        raise StandaloneError(f"no worker registered with the standalone master within {timeout:.0f} s; "
                              f"see {self.directory}/master.log and worker.log")

    def _alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as response:
                return int(json.load(response).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def worker_sees(self, path: Path) -> list[str] | None:
        """The names in directory ``path`` as the worker (and so its executors) sees it: empty for
        a hidden directory, None for one that does not exist there (under a hidden one)."""
        listing = subprocess.run(["nsenter", "-t", str(self.worker.pid), "-m", "ls", "-A", str(path)],
                                 capture_output=True, text=True)
        return listing.stdout.split() if listing.returncode == 0 else None

    def executors(self) -> list[int]:
        """The process ids of the executors the worker runs now (its descendants running
        ``CoarseGrainedExecutorBackend``): what a fault test kills, as a lost host would."""
        if self.worker is None:
            return []
        parents: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:         # the process ended while we looked
                continue
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        found, todo = [], list(parents.get(self.worker.pid, []))
        while todo:
            pid = todo.pop()
            todo.extend(parents.get(pid, []))
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"CoarseGrainedExecutorBackend" in command:
                found.append(pid)
        return sorted(found)

    def stop(self) -> None:
        self._stop_child("worker", "_worker_log")
        super().stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Spark's standalone master and one worker on loopback, until Ctrl-C")
    ap.add_argument("--dir", required=True, help="their logs and the worker's directory (wiped at start)")
    ap.add_argument("--hide", action="append", default=[], metavar="DIR",
                    help="a directory the worker and its executors do not see (repeatable; needs unshare -m)")
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--memory", default="1g")
    args = ap.parse_args(argv)
    try:
        with StandaloneCluster(Path(args.dir), hide=args.hide, cores=args.cores, memory=args.memory) as cluster:
            print(f"master at {cluster.master} (web UI http://127.0.0.1:{cluster.ui_port}); Ctrl-C stops it", flush=True)
            cluster.wait_for_interrupt()
    except StandaloneError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
