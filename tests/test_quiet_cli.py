"""A one-line CLI call prints its answer and nothing else on stderr (no JVM/Spark banner); --verbose keeps it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "ontologies" / "vienna_example.ttl"

pytestmark = pytest.mark.spark  # starts its own JVM in a subprocess


def test_spark_engine_call_has_empty_stderr():
    env = {k: v for k, v in os.environ.items() if k not in ("RSP_VERBOSE", "SPARK_LOCAL_IP")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "jobs.cli", "paths", "--data", str(EXAMPLE), "--path",
                           "(^:beg/:end)+", "--to", ":c", "--engine", "spark"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("?start\t?end\n")
    assert done.stderr == ""
