"""``rsp-sidecar setup``: fetch GraphFrames' JVM jar into the cache (the jar knowledge is ``reasoner.jars``)."""
from __future__ import annotations

import argparse
import sys

from reasoner import jars


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--require-graphframes", action="store_true", help="fail when GraphFrames cannot be fetched")


def run(args: argparse.Namespace) -> int:
    try:
        paths = jars.resolve()
    except jars.JarUnavailable as exc:
        if args.require_graphframes:
            raise
        print(f"warning: {exc}\nContinuing without GraphFrames: the default 'dataframe' strategy does not need it.",
              file=sys.stderr)
        return 0
    print("GraphFrames jars cached:\n  " + "\n  ".join(str(p) for p in paths))
    return 0
