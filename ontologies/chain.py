"""Synthetic deep ``rdfs:subClassOf`` chains and trees in N-Triples, for closure benchmarks.

Classes are ``<http://example.org/chain#C{k}>``.  With ``branching=1`` the output is the chain
``C0 ⊑ C1 ⊑ … ⊑ C{depth}`` (C0 the most specific class).  With ``branching=b > 1`` it is a complete
b-ary tree of the given depth whose root is ``C{N-1}`` (N classes in all); numbering is the
reversed breadth-first order, so the leaves carry the smallest numbers, as C0 does in a chain.

CLI: ``python -m ontologies.chain --depth D [--branching B] --out FILE``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rdfcore.errors import SidecarError
from rdfcore.progress import Progress
from rdfcore.vocab import RDFS_SUBCLASSOF, iri

CHAIN_NS = "http://example.org/chain#"
_CHUNK = 100_000  # triples per write



class ChainShapeError(SidecarError, ValueError):
    """A chain/tree shape that cannot be built (negative depth, no branches)."""

def chain_class(k: int) -> str:
    """The N-Triples IRI of class number ``k``."""
    return iri(f"{CHAIN_NS}C{k}")


def class_count(depth: int, branching: int = 1) -> int:
    """Number of classes in a complete ``branching``-ary tree of the given depth (a chain if 1)."""
    if depth < 0 or branching < 1:
        raise ChainShapeError(f"need depth >= 0 and branching >= 1, got depth={depth}, branching={branching}")
    return depth + 1 if branching == 1 else (branching ** (depth + 1) - 1) // (branching - 1)


def write_chain(out_path: str | Path, depth: int, branching: int = 1) -> int:
    """Write the chain (or tree) as N-Triples, one triple per non-root class; returns that count."""
    total = class_count(depth, branching)
    last = total - 1
    head = f"<{CHAIN_NS}C"
    middle = f"> {RDFS_SUBCLASSOF} {head}"
    with open(out_path, "w", encoding="utf-8", newline="\n") as out:
        # Breadth-first index i (root 0) has parent (i - 1) // branching; class number = last - i.
        for start in range(1, total, _CHUNK):
            out.write("".join([
                f"{head}{last - i}{middle}{last - (i - 1) // branching}> .\n"
                for i in range(start, min(start + _CHUNK, total))
            ]))
    return last


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints a one-line JSON summary."""
    parser = argparse.ArgumentParser(prog="python -m ontologies.chain", description=__doc__.split("\n")[0])
    parser.add_argument("--depth", type=int, required=True, help="levels below the root (>= 0)")
    parser.add_argument("--branching", type=int, default=1, help="subclasses per class (default 1: a chain)")
    parser.add_argument("--out", required=True, help="N-Triples output file")
    args = parser.parse_args(argv)
    if args.depth < 0 or args.branching < 1:
        parser.error("need --depth >= 0 and --branching >= 1")
    started = time.perf_counter()
    triples = write_chain(args.out, args.depth, args.branching)
    Progress("chain").phase(f"{args.out} written", rows=triples)
    print(json.dumps({
        "depth": args.depth,
        "branching": args.branching,
        "classes": triples + 1,
        "triples": triples,
        "root": chain_class(triples),
        "out": str(args.out),
        "seconds": round(time.perf_counter() - started, 3),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
