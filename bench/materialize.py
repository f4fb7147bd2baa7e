"""Benchmark: materialization of the plant taxonomy, ours against owlrl, plus a scale curve.

    python bench/materialize.py [--data-dir D] [--work DIR] [--owlrl-timeout 600]
                                [--instances 1000000] [--scale 1000000 5000000 20000000]
                                [--chain-depth 2000]

Prints a table: our wall time (warm session: a first run warms the JVM and is not counted),
owlrl's wall time on the same input (RDFS semantics, parse + closure, in a child process killed
at ``--owlrl-timeout`` seconds — reported as "> timeout"), and the ratio; then our time for each
instance-triple count of ``--scale``; then the closure strategies on a deep chain (GraphFrames
only when its jar is on the classpath — otherwise the line says why).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ontologies import chain, plants  # noqa: E402
from ontologies.data import data_dir  # noqa: E402
from reasoner.progress import Progress  # noqa: E402

OWLRL_CHILD = """
import sys, time, rdflib, owlrl
start = time.perf_counter()
graph = rdflib.Graph()
for path in sys.argv[1:]:
    graph.parse(path, format="nt")
owlrl.DeductiveClosure(owlrl.RDFS_Semantics, axiomatic_triples=False, datatype_axioms=False).expand(graph)
print(time.perf_counter() - start, len(graph))
"""


def owlrl_seconds(paths: list[Path], timeout: float) -> tuple[float | None, str]:
    """owlrl's wall time on ``paths`` in a child process; None when it did not finish."""
    try:
        done = subprocess.run([sys.executable, "-c", OWLRL_CHILD, *map(str, paths)], capture_output=True,
                              text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None, f"> {timeout:.0f} s (did not finish)"
    seconds, triples = done.stdout.split()
    return float(seconds), f"{float(seconds):.1f} s ({triples} triples)"


def ours_seconds(spark, paths: list[Path], work: Path, strategy: str = "dataframe") -> float:
    from reasoner.publish import materialize_sources

    out = work / "store"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    materialize_sources(spark, paths, out, strategy=strategy)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--work", help="scratch directory (default: a temporary one)")
    parser.add_argument("--owlrl-timeout", type=float, default=600)
    parser.add_argument("--instances", type=int, default=1_000_000)
    parser.add_argument("--scale", type=int, nargs="*", default=[1_000_000, 5_000_000, 20_000_000])
    parser.add_argument("--chain-depth", type=int, default=2000)
    args = parser.parse_args(argv)

    from jobs.spark import build_session
    from reasoner.closure import graphframes_available

    work = Path(args.work or tempfile.mkdtemp(prefix="rsp-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    taxa = plants.read_taxonomy(plants.taxonomy_path(data_dir(args.data_dir)))
    hierarchy = work / "plants.nt"
    plants.write_hierarchy(taxa, hierarchy, labels=False)
    spark = build_session("rsp-sidecar bench")
    spark.sparkContext.setLogLevel("ERROR")
    progress = Progress("bench/materialize")
    ours_seconds(spark, [hierarchy], work)  # warm-up, not counted
    progress.phase("warm-up")

    rows = []
    ours = ours_seconds(spark, [hierarchy], work)
    theirs, shown = owlrl_seconds([hierarchy], args.owlrl_timeout)
    rows.append(("plant hierarchy (42k Tracheobionta subclasses)", ours, shown, theirs))
    progress.phase("plant hierarchy: ours and owlrl")
    if args.instances:
        instances = work / f"instances_{args.instances}.nt"
        plants.write_instances(taxa, instances, args.instances, seed=1)
        ours = ours_seconds(spark, [hierarchy, instances], work)
        theirs, shown = owlrl_seconds([hierarchy, instances], args.owlrl_timeout)
        rows.append((f"hierarchy + {args.instances:,} instance triples", ours, shown, theirs))
        progress.phase("hierarchy + instances: ours and owlrl", rows=args.instances)

    print(f"\n{'input':<50} {'ours':>10} {'owlrl':>36} {'owlrl/ours':>11}")
    for name, ours, shown, theirs in rows:
        ratio = f"{theirs / ours:.1f}x" if theirs else f"> {args.owlrl_timeout / ours:.1f}x"
        print(f"{name:<50} {ours:>8.1f} s {shown:>36} {ratio:>11}")

    print(f"\nscale curve (ours, hierarchy + N instance triples, default memory settings)")
    for n in args.scale:
        instances = work / f"instances_{n}.nt"
        if not instances.exists():
            plants.write_instances(taxa, instances, n, seed=1)
        seconds = ours_seconds(spark, [hierarchy, instances], work)
        progress.phase("scale curve point", rows=n)
        print(f"  {n:>12,}  {seconds:8.1f} s  ({n / seconds:,.0f} instance triples/s)")
        instances.unlink()

    print(f"\nclosure strategies on a subClassOf chain of depth {args.chain_depth}")
    deep = work / "chain.nt"
    chain.write_chain(deep, args.chain_depth)
    print(f"  dataframe    {ours_seconds(spark, [deep], work):8.1f} s")
    if graphframes_available(spark):
        print(f"  graphframes  {ours_seconds(spark, [deep], work, 'graphframes'):8.1f} s")
    else:
        print("  graphframes  not run: GraphFrames' JVM jar is not on the classpath (run `rsp-sidecar setup`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
