"""What the helper services for tests and demos share (``devcluster.kafka_broker``, ``devcluster.hadoop_cluster``):
a JVM child process in its own session with its log file, a context manager that stops it, a
free loopback port, and running in the foreground until Ctrl-C."""
from __future__ import annotations

import socket
import subprocess
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(process: subprocess.Popen | None, grace: float) -> None:
    """SIGTERM ``process`` (if it runs), then SIGKILL it after ``grace`` seconds; wait for it."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class LocalService:
    """A child process started by a subclass's ``start()`` (which sets ``process`` and ``_log``);
    ``grace``: seconds between SIGTERM and SIGKILL on stop."""

    grace = 30.0
    process: subprocess.Popen | None = None
    _log = None

    def start(self):  # pragma: no cover - each service defines it
        raise NotImplementedError

    def stop(self) -> None:
        self._stop_child("process", "_log")

    def _stop_child(self, process: str, log: str) -> None:
        """Stop the child process in attribute ``process`` and close its log file in ``log``."""
        stop_process(getattr(self, process), self.grace)
        setattr(self, process, None)
        if getattr(self, log) is not None:
            getattr(self, log).close()
            setattr(self, log, None)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def wait_for_interrupt(self) -> None:
        """Block while the process runs (the ``python -m`` entry points), until Ctrl-C."""
        try:
            while self.process is not None and self.process.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
