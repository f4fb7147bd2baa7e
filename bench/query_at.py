"""Benchmark: ``query --at`` as a user runs it, the whole process, ``--engine auto`` against
``--engine spark`` (issue 37).

    python bench/query_at.py [--repeat 3] [--events 1000,10000,100000] [--instants 1000]
                             [--spark-max-events 100000] [--network real|example]
                             [--parts example,csparql,crossover]

Three parts, each timed as wall-clock seconds of ``python -m jobs.cli query ...`` (imports,
reading the files, the evaluation, printing the answers; a JVM only where Spark runs), the median
of ``--repeat`` runs, both engines side by side in one run. The project's bytecode is written
first, as a user's first run writes it (also where the environment asks Python not to).

1. **The running example** (DESIGN.md; 20 background triples, 4 events) at one instant; and its
   SEQ grouped, ordered and limited per instant (GROUP BY / ORDER BY / LIMIT) at 7 instants.
2. **CSRBench-style C-SPARQL**: a 4-pattern BGP and a FILTER over ~15,000 timestamped triples
   (3,750 sensor observations over 10 minutes, in seconds) with ``[RANGE 1s STEP 1s]`` at 34
   instants, on the driver (``cep.engines.driver.csparql``; the line says which engine ran) and on
   Spark (the 34 instants in one plan keyed by the instant, ``cep.engines.spark.keyed``).
3. **The crossover**: the Vienna query (``ontologies/vienna_example_query.rq``) over a synthetic
   fleet's delays and arrivals (``scenarios.vienna_transit.write_stream``) on the real network
   (``../shared/data``; else the running example's map), at ``--instants`` instants spread over
   the stream, for each size in ``--events``; Spark is timed up to ``--spark-max-events``.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scenarios import vienna_transit as vt  # noqa: E402  (the repository, put on the path above)


#: the project's packages (their bytecode is written before the timed runs)
PACKAGES = ("cep", "jobs", "paths", "rdfcore", "reasoner", "scenarios")


def timed(argv: list, repeat: int) -> tuple[float, str, str]:
    """Median wall seconds of ``python -m jobs.cli --verbose query ARGV`` over ``repeat`` runs, with
    the last run's output and the engine it used."""
    times, out, engine = [], "", "driver"
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "jobs.cli", "--verbose", "query", *map(str, argv)], cwd=REPO,
                              capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"query failed ({done.returncode}): {' '.join(map(str, argv))}\n{done.stderr[-2000:]}")
        out = done.stdout
        engine = "spark" if ("evaluated on Spark" in done.stderr or "--engine" in argv and "spark" in argv) else "driver"
    return statistics.median(times), out, engine


def line(label: str, ours: float, theirs: float | None, note: str = "", engine: str = "auto") -> None:
    ratio = f"{theirs / ours:6.1f}x" if theirs else "   n/a"
    shown = f"{theirs:8.2f} s" if theirs else "      n/a"
    print(f"{label:<44} {engine} {ours:8.2f} s   spark {shown}   ratio {ratio}  {note}", flush=True)


def running_example(work: Path, repeat: int) -> None:
    onto = REPO / "ontologies"
    argv = [onto / "vienna_example_query.rq", "--static", f"<http://example.org/transportationMap>={onto / 'vienna_example.ttl'}",
            "--stream", f"<http://example.org/publicTransport>={onto / 'vienna_example_stream.jsonl'}",
            "--at", "16", "--time-unit", "m"]
    ours, out_auto, engine = timed([*argv, "--engine", "auto"], repeat)
    theirs, out_spark, _ = timed([*argv, "--engine", "spark"], repeat)
    assert out_auto == out_spark, "the engines disagree"
    line("running example, 1 instant", ours, theirs, f"(auto ran on the {engine}; same answers)")
    # defined per instant: a GROUP BY over the SEQ, ORDER BY, LIMIT (on Spark before 2026-11-28)
    ranked = work / "ranked.rq"
    ranked.write_text(RANKED_QUERY, encoding="utf-8")
    argv = [ranked, *argv[1:-4], "--at", "10,12,14,16,18,20,25", "--time-unit", "m"]
    ours, out_auto, engine = timed([*argv, "--engine", "auto"], repeat)
    theirs, out_spark, _ = timed([*argv, "--engine", "spark"], repeat)
    assert out_auto == out_spark, "the engines disagree"
    line("GROUP BY / ORDER BY / LIMIT, 7 instants", ours, theirs, f"(auto ran on the {engine}; same answers)")


#: the running example's SEQ, ranked per instant (answers defined per instant)
RANKED_QUERY = """PREFIX : <http://example.org/vienna#>
PREFIX ex: <http://example.org/>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
SELECT ?s (COUNT(*) AS ?n)
FROM ex:transportationMap
FROM NAMED WINDOW :W ON ex:publicTransport [RANGE 10m]
WHERE { WINDOW :W { SEQ ({?v :delayAt ?s}, {?v :delayAt ?s}) } ?v rdf:type :subway . }
GROUP BY ?s ORDER BY DESC(?n) ?s LIMIT 1
"""


CSR_QUERY = """PREFIX : <http://example.org/csr#>
REGISTER QUERY hot AS
SELECT ?sensor ?obs ?value
FROM STREAM <http://example.org/observations> [RANGE 1s STEP 1s]
WHERE { ?obs a :Observation ; :observedProperty :temperature ; :procedure ?sensor ; :result ?value .
        FILTER (?value > 90) }
"""


def csrbench(work: Path, repeat: int, engine: str = "auto") -> None:
    rng = random.Random(7)
    stream = work / "observations.nt"
    ex = "http://example.org/csr#"
    with open(stream, "w", encoding="utf-8") as out:
        for i in range(3750):
            t = rng.randrange(0, 600)
            obs = f"<{ex}obs{i}>"
            for p, o in (("http://www.w3.org/1999/02/22-rdf-syntax-ns#type", f"<{ex}Observation>"),
                         (f"{ex}observedProperty", f"<{ex}{rng.choice(('temperature', 'humidity'))}>"),
                         (f"{ex}procedure", f"<{ex}sensor{rng.randrange(40)}>"),
                         (f"{ex}result", f'"{rng.randrange(0, 100)}"^^<http://www.w3.org/2001/XMLSchema#integer>')):
                out.write(f'{obs} <{p}> {o} "{t}" .\n')
    (work / "csr.rq").write_text(CSR_QUERY, encoding="utf-8")
    instants = ",".join(str(t) for t in range(100, 134))
    argv = [work / "csr.rq", "--stream", f"<http://example.org/observations>={stream}", "--time-unit", "s",
            "--at", instants]
    ours, out, ran = timed([*argv, "--engine", engine], repeat)
    # on Spark: the 34 instants in one plan keyed by the instant (cep.engines.spark.keyed)
    theirs, out_spark, _ = timed([*argv, "--engine", "spark"], repeat)
    assert sorted(out.splitlines()) == sorted(out_spark.splitlines()), "the engines disagree"
    line("CSRBench-style C-SPARQL, 15k triples, 34 instants", ours, theirs,
         f"(ran on the {ran}; {len(out.splitlines()) - 1} answers, the same on both)", engine)


def crossover(work: Path, sizes: list[int], instants: int, spark_max: int, network: str, repeat: int) -> None:
    network, world = vt.network_world(network, work / "net")
    (work / "q.rq").write_text(world.query, encoding="utf-8")
    static = [f"{graph}={path}" for graph, paths in world.static.items() for path in paths]
    static_bytes = sum(Path(p).stat().st_size for paths in world.static.values() for p in paths)
    print(f"crossover: {network} network, static files {static_bytes / 1e6:.1f} MB, {instants} instants", flush=True)
    for events in sizes:
        per_minute = 50
        minutes = max(1, events // per_minute)
        parts = work / f"s{events}"
        vt.write_stream(parts, minutes, per_minute, minutes, 1, world)
        stream = work / f"s{events}.jsonl"
        with open(stream, "w", encoding="utf-8") as out:
            for part in sorted(parts.glob("*.jsonl")):
                out.write(part.read_text(encoding="utf-8"))
        step = max(1, minutes // instants)
        at = ",".join(str(t) for t in range(step, minutes + 1, step)[:instants])
        argv = [work / "q.rq", "--static", *static, "--stream", f"<http://example.org/publicTransport>={stream}",
                "--time-unit", "m", "--at", at]
        ours, out, engine = timed([*argv, "--engine", "auto"], repeat)
        theirs = None
        if events <= spark_max:
            theirs, out_spark, _ = timed([*argv, "--engine", "spark"], 1)
            assert out == out_spark, f"the engines disagree at {events} events"
        line(f"{events:>9,} events x {len(at.split(','))} instants", ours, theirs,
             f"(auto ran on the {engine}; {len(out.splitlines()) - 1} answer rows)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--events", default="1000,10000,100000")
    ap.add_argument("--instants", type=int, default=1000)
    ap.add_argument("--spark-max-events", type=int, default=100_000)
    ap.add_argument("--network", choices=("real", "example"), default=None)
    ap.add_argument("--parts", default="example,csparql,crossover",
                    help="which parts to run, comma-separated (default all three)")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= {"example", "csparql", "crossover"}:
        ap.error(f"--parts: unknown part(s) {', '.join(sorted(parts - {'example', 'csparql', 'crossover'}))}")
    print(f"query --at, whole process, median of {args.repeat} (Spark crossover runs: 1); {os.cpu_count()} cores",
          flush=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", *PACKAGES], cwd=REPO, check=True)
    with tempfile.TemporaryDirectory(prefix="query-at-") as tmp:
        work = Path(tmp)
        if "example" in parts:
            running_example(work, args.repeat)
        if "csparql" in parts:
            csrbench(work, args.repeat)
        if "crossover" in parts:
            crossover(work, [int(n) for n in args.events.split(",")], args.instants, args.spark_max_events,
                      args.network, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
