"""Benchmark: materialization of the plant taxonomy, ours against owlrl, plus a scale curve.

    python bench/materialize.py [--data-dir D] [--work DIR] [--owlrl-timeout 600]
                                [--instances 1000000] [--scale 1000000 5000000 20000000]
                                [--incremental 5000000] [--chain-depth 2000]

Prints, in one run (warm session: a first run warms the JVM and is not counted): small
ontologies end to end with the default engine (the driver, ``reasoner.local``) and with Spark,
and the Spark jobs each ran; the plant hierarchy with both engines beside pyoxigraph (load +
``COUNT`` of ``rdfs:subClassOf+``) and owlrl (RDFS semantics, parse + closure, in a child process
killed at ``--owlrl-timeout`` seconds — reported as "> timeout"), with the ratios; then our time
for each instance-triple count of ``--scale``; an incremental refresh (1% instance triples
appended to the ``--incremental`` store) beside the full run, twice from the same store: the added
triples' consequences on the driver (the default for a few added MB) and on Spark
(``RSP_LOCAL_MAX_BYTES=0``); then the closure strategies on a deep chain
(GraphFrames only when its jar is on the classpath — otherwise the line says why).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ontologies import chain, plants  # noqa: E402
from ontologies.data import data_dir  # noqa: E402
from rdfcore.progress import Progress  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VIENNA = [ROOT / "ontologies" / "vienna_schema.ttl", ROOT / "ontologies" / "vienna_example.ttl"]

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


def ours_seconds(spark, paths: list[Path], work: Path, strategy: str = "dataframe", engine: str = "auto") -> float:
    return ours(spark, paths, work, strategy, engine)[0]


def ours(spark, paths: list[Path], work: Path, strategy: str = "dataframe", engine: str = "auto",
         if_changed: bool = False, keep: bool = False) -> tuple[float, int, str]:
    """Our wall time (load, close, write the store), the number of Spark jobs it ran, the engine
    (``keep``: refresh the store of the previous call instead of starting a new one)."""
    from reasoner.publish import materialize_sources

    out = work / "store"
    if not keep:
        shutil.rmtree(out, ignore_errors=True)
    group = f"bench-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, "bench/materialize")
    start = time.perf_counter()
    summary = materialize_sources(spark, paths, out, strategy=strategy, engine=engine, if_changed=if_changed)
    seconds = time.perf_counter() - start
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
    spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return seconds, jobs, summary["engine"]


def oxigraph_seconds(path: Path) -> tuple[float, int]:
    """pyoxigraph: load the file into an in-memory store and count ``rdfs:subClassOf+`` pairs."""
    import pyoxigraph

    start = time.perf_counter()
    store = pyoxigraph.Store()
    store.bulk_load(path=str(path), format=pyoxigraph.RdfFormat.N_TRIPLES)
    rows = list(store.query("SELECT (COUNT(*) AS ?n) { ?a <http://www.w3.org/2000/01/rdf-schema#subClassOf>+ ?b }"))
    return time.perf_counter() - start, int(rows[0]["n"].value)


def plant_hierarchy(spark, hierarchy: Path, work: Path, owlrl_timeout: float, progress) -> None:
    """The plant hierarchy on both engines beside pyoxigraph and owlrl."""
    seconds, jobs, used = ours(spark, [hierarchy], work)
    spark_seconds, spark_jobs, _ = ours(spark, [hierarchy], work, engine="spark")
    oxi, pairs = oxigraph_seconds(hierarchy)
    theirs, shown = owlrl_seconds([hierarchy], owlrl_timeout)
    progress.phase("plant hierarchy: ours, pyoxigraph and owlrl")
    print(f"\nplant hierarchy ({pairs:,} rdfs:subClassOf+ pairs)")
    print(f"  ours, engine {used:<6}   {seconds:8.2f} s  ({jobs} Spark jobs)")
    print(f"  ours, engine spark    {spark_seconds:8.2f} s  ({spark_jobs} Spark jobs)")
    print(f"  pyoxigraph            {oxi:8.2f} s  (load + COUNT of subClassOf+)   ours/pyoxigraph = {seconds / oxi:.1f}x")
    print(f"  owlrl                 {shown}   owlrl/ours = {theirs / seconds:.1f}x" if theirs else f"  owlrl  {shown}")



SECTIONS = ("small", "plants", "instances", "scale", "incremental", "chain")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--work", help="scratch directory (default: a temporary one)")
    parser.add_argument("--owlrl-timeout", type=float, default=600)
    parser.add_argument("--instances", type=int, default=1_000_000)
    parser.add_argument("--scale", type=int, nargs="*", default=[1_000_000, 5_000_000, 20_000_000])
    parser.add_argument("--chain-depth", type=int, default=2000)
    parser.add_argument("--incremental", type=int, default=5_000_000, metavar="N",
                        help="store of the hierarchy + N instance triples, then 1%% more appended (0: skip)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                        help="run these sections only (default: all)")
    args = parser.parse_args(argv)
    if "chain" not in args.only:
        args.chain_depth = 0
    if "instances" not in args.only:
        args.instances = 0
    if "scale" not in args.only:
        args.scale = []
    if "incremental" not in args.only:
        args.incremental = 0

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
    ours_seconds(spark, [hierarchy], work, engine="spark")  # warm-up, not counted
    progress.phase("warm-up")

    small = []
    if "small" in args.only:
        print("\nsmall ontologies, end to end (load, close, write the store); warm Spark session")
        print(f"  {'input':<46} {'engine':>7} {'seconds':>9} {'Spark jobs':>11}")
        synthetic = work / "tree10k.nt"
        chain.write_chain(synthetic, depth=4, branching=10)
        small = [("Vienna schema + running example", VIENNA),
                 (f"synthetic tree, {chain.class_count(4, 10):,} classes", [synthetic])]
    for name, paths in small:
        for engine in ("auto", "spark"):
            seconds, jobs, used = ours(spark, paths, work, engine=engine)
            print(f"  {name:<46} {used:>7} {seconds:>7.2f} s {jobs:>11}")
    progress.phase("small ontologies")

    rows = []
    if "plants" in args.only:
        plant_hierarchy(spark, hierarchy, work, args.owlrl_timeout, progress)
    if args.instances:
        instances = work / f"instances_{args.instances}.nt"
        plants.write_instances(taxa, instances, args.instances, seed=1)
        ours_ = ours_seconds(spark, [hierarchy, instances], work)
        theirs, shown = owlrl_seconds([hierarchy, instances], args.owlrl_timeout)
        rows.append((f"hierarchy + {args.instances:,} instance triples", ours_, shown, theirs))
        progress.phase("hierarchy + instances: ours and owlrl", rows=args.instances)

    if rows:
        print(f"\n{'input':<50} {'ours':>10} {'owlrl':>36} {'owlrl/ours':>11}")
    for name, ours_, shown, theirs in rows:
        ratio = f"{theirs / ours_:.1f}x" if theirs else f"> {args.owlrl_timeout / ours_:.1f}x"
        print(f"{name:<50} {ours_:>8.1f} s {shown:>36} {ratio:>11}")

    if args.scale:
        print("\nscale curve (ours, hierarchy + N instance triples, default memory settings)")
    for n in args.scale:
        instances = work / f"instances_{n}.nt"
        if not instances.exists():
            plants.write_instances(taxa, instances, n, seed=1)
        seconds, jobs, used = ours(spark, [hierarchy, instances], work)
        progress.phase("scale curve point", rows=n)
        print(f"  {n:>12,}  {seconds:8.1f} s  ({n / seconds:,.0f} instance triples/s, engine {used}, {jobs} Spark jobs)")
        instances.unlink()

    if args.incremental:
        n = args.incremental
        instances = work / f"instances_{n}.nt"
        plants.write_instances(taxa, instances, n, seed=1)
        full, _, _ = ours(spark, [hierarchy, instances], work, engine="spark", if_changed=True)
        added = work / "added.nt"
        plants.write_instances(taxa, added, n // 100, seed=2, prefix="http://example.org/plants/added/")
        with instances.open("ab") as handle, added.open("rb") as extra:
            shutil.copyfileobj(extra, handle)
        before = work / "store-before-refresh"
        shutil.copytree(work / "store", before)
        print(f"\nincremental refresh: hierarchy + {n:,} instance triples, then 1% more appended")
        print(f"  full run {full:8.1f} s")
        for label, limit in (("added triples on the driver (default)", None), ("added triples on Spark", "0")):
            shutil.rmtree(work / "store")
            shutil.copytree(before, work / "store")
            saved = os.environ.get("RSP_LOCAL_MAX_BYTES")
            if limit is not None:           # RSP_LOCAL_MAX_BYTES=0: the delta on Spark
                os.environ["RSP_LOCAL_MAX_BYTES"] = limit
            try:
                again, jobs, _ = ours(spark, [hierarchy, instances], work, engine="spark", if_changed=True, keep=True)
            finally:
                os.environ.pop("RSP_LOCAL_MAX_BYTES", None) if saved is None else os.environ.update(
                    RSP_LOCAL_MAX_BYTES=saved)
            manifest = json.loads((work / "store" / "versions" / "v000002" / "manifest.json").read_text())
            print(f"  refresh ({manifest['mode']}, {label}) {again:8.1f} s  ({jobs} Spark jobs)   "
                  f"refresh/full = {again / full:.1%}")
            phases = {k: v for k, v in manifest.get("timings", {}).items() if k.startswith("incremental_")}
            print("    phases: " + ", ".join(f"{k[len('incremental_'):]} {v:.1f} s" for k, v in phases.items()))
        shutil.rmtree(before)
        instances.unlink()
        progress.phase("incremental refresh")

    if not args.chain_depth:
        return 0
    print(f"\nclosure strategies on a subClassOf chain of depth {args.chain_depth}")
    deep = work / "chain.nt"
    chain.write_chain(deep, args.chain_depth)
    from reasoner import materialize as M

    print(f"  driver (engine local)              {ours_seconds(spark, [deep], work, engine='local'):8.1f} s")
    print(f"  Spark, hierarchy closed on driver  {ours_seconds(spark, [deep], work, engine='spark'):8.1f} s")
    saved, M.DRIVER_SCHEMA_ROWS = M.DRIVER_SCHEMA_ROWS, 0       # force the closure by squaring on Spark
    try:
        print(f"  Spark, closure by squaring         {ours_seconds(spark, [deep], work, engine='spark'):8.1f} s")
    finally:
        M.DRIVER_SCHEMA_ROWS = saved
    if graphframes_available(spark):
        print(f"  graphframes  {ours_seconds(spark, [deep], work, 'graphframes'):8.1f} s")
    else:
        print("  graphframes  not run: GraphFrames' JVM jar is not on the classpath (run `rsp-sidecar setup`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
