"""Turn the project's expected failures into one clear line on stderr and exit code 2."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from reasoner.jars import JarUnavailable
from reasoner.closure import FixpointError, GraphFramesUnavailable
from reasoner.dictionary import HashCollisionError
from reasoner.loading import RDFLoadError
from reasoner.schema import MissingColumnsError
from reasoner.store import StoreError

EXPECTED = (RDFLoadError, StoreError, HashCollisionError, FixpointError, GraphFramesUnavailable, JarUnavailable,
            MissingColumnsError, FileNotFoundError, ValueError)


def run_cli(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return run(args)
    except EXPECTED as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
