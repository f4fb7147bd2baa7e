"""Expected failures print one ``error:`` line (exit 2); programming errors keep their traceback (exit 1).

Spark-free: the failures are injected into ``rsp-sidecar setup`` (``jobs.jars.run``) by replacing
``rdfcore.jars.resolve``, in a subprocess so the exit code and stderr are the real ones.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.errors import run_cli
from rdfcore.errors import SidecarError

ROOT = Path(__file__).resolve().parents[1]

_DRIVER = """
import sys
from rdfcore import jars
from reasoner.store import StoreError
def boom():
    raise {exc}
jars.resolve = boom
from jobs.cli import main
sys.exit(main(["setup", "--require-graphframes"]))
"""


def _run(exc: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", _DRIVER.format(exc=exc)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("exc", ['StoreError("the store is locked")', 'FileNotFoundError("no such file: x.ttl")'])
def test_expected_failure_is_one_line_exit_2(exc):
    done = _run(exc)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: {done.stderr.strip()[len('error: '):]}"]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("exc", ['TypeError("unsupported operand")', 'ValueError("a bug, not bad input")'])
def test_programming_error_keeps_traceback_exit_1(exc):
    done = _run(exc)
    assert done.returncode == 1, done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    assert "error: " not in done.stderr.splitlines()[0]


def test_run_cli_in_process(capsys):
    def expected(_):
        raise SidecarError("bad input")

    assert run_cli(expected, None) == 2
    assert capsys.readouterr().err == "error: bad input\n"

    def bug(_):
        raise KeyError("s")

    with pytest.raises(KeyError):
        run_cli(bug, None)


def test_expected_classes_derive_from_sidecar_error():
    from jobs.paths import PathsError
    from jobs.query import QueryError
    from ontologies.plants import TaxonomyError
    from ontologies.vienna import ViennaDataError
    from paths.compiler import PathIterationLimit
    from paths.local import LocalTooLarge
    from reasoner.closure import GraphFramesUnavailable
    from rdfcore.errors import FixpointError, HashCollisionError
    from rdfcore.jars import JarUnavailable
    from rdfcore.errors import RDFLoadError
    from reasoner.materialize import SchemaTooLarge
    from rdfcore.schema import MissingColumnsError
    from reasoner.store import StoreError

    for cls, builtin in [(RDFLoadError, ValueError), (StoreError, RuntimeError), (HashCollisionError, RuntimeError),
                         (FixpointError, RuntimeError), (GraphFramesUnavailable, RuntimeError),
                         (JarUnavailable, RuntimeError), (MissingColumnsError, ValueError), (PathsError, ValueError),
                         (QueryError, ValueError), (ViennaDataError, ValueError), (TaxonomyError, ValueError),
                         (PathIterationLimit, RuntimeError), (LocalTooLarge, MemoryError),
                         (SchemaTooLarge, ValueError)]:
        assert issubclass(cls, SidecarError) and issubclass(cls, builtin), cls
