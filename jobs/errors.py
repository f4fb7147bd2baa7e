"""Expected failures become one ``error:`` line on stderr and exit code 2; anything else keeps its traceback.

Expected failures are :class:`rdfcore.errors.SidecarError` (bad input, syntax, locked store,
missing jar, iteration cap: every package derives its own from it) and the operating system's
file errors (missing file, no permission, a directory where a file was expected). Any other
exception is a programming error: Python prints its traceback and the process exits with code 1.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from rdfcore.errors import SidecarError

EXPECTED = (SidecarError, FileNotFoundError, PermissionError, IsADirectoryError)


def run_cli(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return run(args)
    except EXPECTED as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def job_main(prog: str, doc: str, add_arguments: Callable[[argparse.ArgumentParser], None],
             run: Callable[[argparse.Namespace], int], argv: list[str] | None) -> int:
    """A job's own entry point (``python -m jobs.X`` / ``spark-submit jobs/X.py``): its options
    (described by the first paragraph of ``doc``), parsed and run by :func:`run_cli`."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    add_arguments(parser)
    return run_cli(run, parser.parse_args(argv))
