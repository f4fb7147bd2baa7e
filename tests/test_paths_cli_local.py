"""``paths --engine local`` (and ``auto`` on a small non-N-Triples file) answers without starting a JVM.

Spark-free: each run is a fresh interpreter, which would have to start Spark to create a
SparkContext; it reports whether one exists after answering.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "ontologies" / "vienna_example.ttl"
V = "http://example.org/vienna#"

_DRIVER = """
import sys
from jobs.cli import main
code = main(sys.argv[1:])
import pyspark
print("jvm" if pyspark.SparkContext._active_spark_context is not None else "no-jvm", file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("engine", ["local", "auto"])
def test_local_engine_on_a_file_starts_no_jvm(engine):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _DRIVER, "paths", "--data", str(EXAMPLE), "--path",
                           "(^:beg/[:means :subway]/:end)+", "--to", ":c", "--engine", engine],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"?start\t?end\n<{V}b>\t<{V}c>\n<{V}m>\t<{V}c>\n"
    assert done.stderr.strip().splitlines()[-1] == "no-jvm"
