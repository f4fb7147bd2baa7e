"""Progress of long jobs on stderr — phase, rows, elapsed — only when stderr is a terminal.

Used by materialize (``reasoner.publish``), the benchmarks (``bench/``) and the data builders
(``ontologies/``). Off a terminal (a scheduler's log, a pipe, the tests) it prints nothing, so a
job's output stays its one JSON summary line. ``RSP_PROGRESS=1`` / ``=0`` forces it on / off.
"""
from __future__ import annotations

import os
import sys
import time
from typing import TextIO


class Progress:
    """``Progress("materialize").phase("dictionary", rows=n)`` prints ``materialize: dictionary — 1,234 rows, 3.2 s``."""

    def __init__(self, job: str, stream: TextIO | None = None, enabled: bool | None = None):
        self.job = job
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            forced = os.environ.get("RSP_PROGRESS")
            enabled = forced not in ("", "0") if forced is not None else _isatty(self.stream)
        self.enabled = enabled
        self.started = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def phase(self, name: str, rows: int | None = None) -> None:
        if not self.enabled:
            return
        counted = f"{rows:,} rows, " if rows is not None else ""
        print(f"{self.job}: {name} — {counted}{self.elapsed():.1f} s", file=self.stream, flush=True)


#: Off: for library calls made without a progress reporter.
SILENT = Progress("", enabled=False)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
