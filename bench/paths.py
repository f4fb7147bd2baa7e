"""Benchmark: property paths on the Vienna network, ours against pyoxigraph and rdflib, plus a scale curve.

    python bench/paths.py [--data-dir D] [--queries running all-pairs reach] [--scale 100000 1000000 10000000]
                          [--engines arrays local spark spark-levels] [--baselines oxigraph rdflib]
                          [--timeout 900] [--baseline-max-edges 10000000] [--rdflib-max-edges 1000000]

Queries on the real Wiener Linien network (``ontologies/vienna.py``: stations are the nodes,
connections link them; ~115k triples):

1. ``running`` — the running example ``?s (^:beg/[:means :subway]/:end)+ :c``, :c = Stephansplatz.
   SPARQL 1.1 cannot express it over this graph: a property path cannot test a property of the
   intermediate node (the connection's ``:means``), and SPARQL 1.1 has no recursion over a derived
   relation (a FILTER or a subquery cannot sit inside ``+``). What a SPARQL 1.1 engine *can* do is
   precompute the derived edge and close over it. So the baselines run a two-step equivalent —
   ``INSERT { ?x :subwayHop ?y } WHERE { ?c :beg ?x ; :means :subway ; :end ?y }`` (SPARQL 1.1
   Update), then ``?s :subwayHop+ :c`` — and their time includes the update. It gives the same
   answer (checked: the counts must agree); it is labelled "precomputed" in the table.
2. ``all-pairs`` — ``?x (^:beg/:end)+ ?y``, all pairs of stations connected by some trip.
3. ``reach`` — ``:s0 (^:beg/:end)+ ?x`` from one station (Stephansplatz): everything reachable.

Our executors (``--engines``), one row each: ``spark`` — ``paths.evaluate(..., engine="spark")``,
the compiler as Spark joins, a closure's steps after its second handed to the driver when the
step relation fits there (``SparkExecutor.hand_off``); ``spark-levels`` — the same with that
hand-off switched off (one Spark job per BFS level, as before it existed); ``local`` — ``engine="local"``, the same compiler on the graph's
in-memory index in the driver (what ``engine="auto"``, the default, picks for graphs of at most
``paths.spark.local_max_triples()`` triples: a memory budget), the answer handed back as a DataFrame; ``arrays`` — the
in-memory evaluation alone (``paths.local.evaluate``), answer as numpy arrays, no Spark job at all.
The index is built once per graph, like the baselines' stores; its build time is printed and not
in the query times.

Every query is counted (``SELECT (COUNT(*) AS ?n)``; ours: ``evaluate(...).count()``, or the
length of the arrays), and the counts of all engines must agree (the table says so). Our time:
warm session — each query is run once to warm up, then timed ``--repeat`` times (Spark: once) and
the best time kept; pyoxigraph the same. rdflib: one timed run (it is
slow enough that a warm-up would double the wait). The Spark rows print the number of Spark jobs
their timed run started. Baselines run in child processes (their
loading is not timed) killed after ``--timeout`` seconds, reported as "> T s".

Scale curve for query 3 on synthetic random graphs generated directly as encoded Spark DataFrames
(no files): ``--scale E`` gives E edges = E triples — E/2 connections, each ``:beg`` and ``:end``
one of E/4 stations drawn with ``xxhash64`` (average out-degree 2), so the reachable set is the
giant component. Baselines get the same rows (as N-Triples written from the DataFrame): pyoxigraph
up to ``--baseline-max-edges``, rdflib up to ``--rdflib-max-edges`` (it needs hours beyond).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ontologies import vienna  # noqa: E402
from ontologies.data import data_dir  # noqa: E402
from rdfcore.terms import write_ntriples  # noqa: E402

V = vienna.VIENNA_NS
PREFIX = f"PREFIX : <{V}>\n"
QUERIES = ("running", "all-pairs", "reach")
SYNTHETIC_NS = "http://example.org/synthetic/"
_STATION_OFFSET = 1 << 40  # synthetic ids: stations are u + offset, connections their row number

# One child process per baseline measurement.
# argv: engine, N-Triples file, query, update or "", warm (0/1), timed runs (the best is kept).
BASELINE_CHILD = r"""
import json, sys, time
engine, nt, query, update, warm = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"
repeats = int(sys.argv[6])
started = time.perf_counter()
if engine == "oxigraph":
    import pyoxigraph as ox
    store = ox.Store()
    store.bulk_load(path=nt, format=ox.RdfFormat.N_TRIPLES)
    def run():
        if update:
            store.update(update)
        return int(next(iter(store.query(query)))[0].value)
else:
    import rdflib, threading
    # rdflib evaluates a path recursively, one Python frame per hop: give it room (else RecursionError)
    sys.setrecursionlimit(1_000_000)
    threading.stack_size(1 << 29)
    graph = rdflib.Graph()
    graph.parse(nt, format="nt")
    def run():
        if update:
            graph.update(update)
        return int(next(iter(graph.query(query)))[0])
loaded = time.perf_counter() - started
result = {"load": loaded}
def measure():
    if warm:
        run()
    for _ in range(repeats):
        started = time.perf_counter()
        result["count"] = run()
        seconds = time.perf_counter() - started
        result["seconds"] = min(seconds, result.get("seconds", seconds))
worker = threading.Thread(target=measure) if engine == "rdflib" else None
if worker:
    worker.start()
    worker.join()
else:
    measure()
print(json.dumps(result))
"""


def baseline(engine: str, nt: Path, query: str, update: str, timeout: float, repeats: int = 1) -> dict:
    """One baseline measurement in a child process: pyoxigraph warmed up and timed ``repeats``
    times (the best kept), rdflib timed once."""
    warm = "1" if engine == "oxigraph" else "0"
    repeats = repeats if engine == "oxigraph" else 1
    try:
        done = subprocess.run([sys.executable, "-c", BASELINE_CHILD, engine, str(nt), query, update, warm,
                               str(repeats)],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "shown": f"> {timeout:.0f} s"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"seconds": None, "shown": f"failed ({last.split(':')[0][:30]})"}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if "seconds" not in result:  # the measuring thread died (its traceback is on stderr)
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"seconds": None, "shown": f"failed ({last.split(':')[0][:30]})"}
    result["shown"] = f"{result['seconds']:.3f}"
    return result


def timed(fn, repeats: int = 1) -> tuple[float, object]:
    """The best time of ``repeats`` runs of ``fn``, and its value."""
    best = None
    for _ in range(repeats):
        started = time.perf_counter()
        value = fn()
        seconds = time.perf_counter() - started
        best = seconds if best is None else min(best, seconds)
    return best, value


# --- the Vienna graph ------------------------------------------------------------------------

def vienna_graph(spark, directory: Path, work: Path):
    """(encoded triples DataFrame, N-Triples file, triple count) of the real network."""
    from pyspark import StorageLevel

    from rdfcore.dictionary import encode_triples

    network = vienna.build(directory)
    nt = work / "vienna.nt"
    lines = vienna.triples(network)
    count = write_ntriples(nt, lines, vienna.HEADER)
    rows = [tuple(line[:-3].split(" ", 2)) for line in lines]
    strings = spark.createDataFrame(rows, "s string, p string, o string")
    encoded = encode_triples(strings).persist(StorageLevel.MEMORY_AND_DISK)
    encoded.count()
    return encoded, nt, count


def vienna_queries(selected: list[str]) -> list[dict]:
    c, s0 = vienna.STEPHANSPLATZ, vienna.STEPHANSPLATZ
    specs = {
        "running": {
            "name": "(1) ?s (^:beg/[:means :subway]/:end)+ :c",
            "path": "(^:beg/[:means :subway]/:end)+", "start": None, "end": c,
            "sparql": PREFIX + f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s :subwayHop+ {c} }}",
            "update": PREFIX + "INSERT { ?x :subwayHop ?y } WHERE { ?c :beg ?x ; :means :subway ; :end ?y }",
            "note": "baselines: precomputed :subwayHop (SPARQL Update) + path; not expressible as one SPARQL 1.1 path",
        },
        "all-pairs": {
            "name": "(2) ?x (^:beg/:end)+ ?y",
            "path": "(^:beg/:end)+", "start": None, "end": None,
            "sparql": PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?x (^:beg/:end)+ ?y }", "update": "",
            "note": "",
        },
        "reach": {
            "name": "(3) :s0 (^:beg/:end)+ ?x",
            "path": "(^:beg/:end)+", "start": s0, "end": None,
            "sparql": PREFIX + f"SELECT (COUNT(*) AS ?n) WHERE {{ {s0} (^:beg/:end)+ ?x }}", "update": "",
            "note": ":s0 = Stephansplatz",
        },
    }
    return [specs[q] for q in selected]


# --- synthetic graphs ------------------------------------------------------------------------

def synthetic_graph(spark, edges: int):
    """Encoded (s, p, o) with ``edges`` triples: edges/2 connections over edges/4 stations."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from rdfcore.hashing import term_id

    connections = max(1, edges // 2)
    stations = max(2, edges // 4)
    conns = spark.range(connections).select(
        F.col("id").alias("c"),
        (F.pmod(F.xxhash64(F.col("id"), F.lit(1)), F.lit(stations)) + _STATION_OFFSET).alias("u"),
        (F.pmod(F.xxhash64(F.col("id"), F.lit(2)), F.lit(stations)) + _STATION_OFFSET).alias("v"),
    )
    triples = conns.select(F.col("c").alias("s"), F.lit(term_id(vienna.BEG)).alias("p"), F.col("u").alias("o")) \
        .unionByName(conns.select(F.col("c").alias("s"), F.lit(term_id(vienna.END)).alias("p"), F.col("v").alias("o")))
    triples = triples.persist(StorageLevel.MEMORY_AND_DISK)
    count = triples.count()
    start = conns.filter(F.col("c") == 0).first()["u"]  # a station with an outgoing connection
    return triples, count, start


def synthetic_ntriples(triples, path: Path) -> None:
    """The synthetic graph as N-Triples for the baselines (ids become IRIs; predicates :beg / :end)."""
    from pyspark.sql import functions as F

    from rdfcore.hashing import term_id

    names = {term_id(vienna.BEG): vienna.BEG, term_id(vienna.END): vienna.END}
    pred = F.when(F.col("p") == F.lit(term_id(vienna.BEG)), F.lit(names[term_id(vienna.BEG)])) \
        .otherwise(F.lit(names[term_id(vienna.END)]))
    lines = triples.select(F.concat(F.lit(f"<{SYNTHETIC_NS}"), F.col("s").cast("string"), F.lit("> "), pred,
                                    F.lit(f" <{SYNTHETIC_NS}"), F.col("o").cast("string"), F.lit("> .")).alias("l"))
    parts = path.with_name(path.name + ".parts")           # written by Spark: no collect into the driver
    lines.write.mode("overwrite").text(str(parts))
    with open(path, "wb") as out:
        for part in sorted(parts.glob("part-*")):
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 22)
    shutil.rmtree(parts)


# --- table -----------------------------------------------------------------------------------

def ratio(ours: float, theirs: dict) -> str:
    if theirs.get("seconds") is None:
        return "-"
    return f"{ours / theirs['seconds']:.2f}"


def agree(count: int, *others: dict) -> str:
    counts = [o["count"] for o in others if "count" in o]
    if not counts:
        return "(no baseline)"
    return "yes" if all(c == count for c in counts) else "NO: " + "/".join(map(str, counts))


def print_table(rows: list[list[str]], header: list[str]) -> None:
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths))  # noqa: E731
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    sys.stdout.flush()


ENGINES = ("arrays", "local", "spark", "spark-levels")


def spark_levels():
    """The Spark executor with no hand-off to the driver (one job per BFS level)."""
    from paths import spark as spark_paths
    spark_paths.HAND_OFF = False
    return _Restore(spark_paths)


class _Restore:
    def __init__(self, module):
        self.module = module

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.module.HAND_OFF = True


def engine_runs(graph, path, start, end, engines: list[str]) -> dict:
    """One zero-argument counting function per engine: ``arrays`` is ``paths.local.evaluate`` on
    the graph's in-memory index (what ``engine="local"`` computes, before the answer becomes a
    DataFrame), ``local`` and ``spark`` are ``paths.evaluate(..., engine=...).count()``."""
    from paths import evaluate
    from paths import local as local_paths

    runs = {
        "arrays": lambda: len(local_paths.evaluate(graph.local(), path, start, end)[0]),
        "local": lambda: evaluate(graph, path, start=start, end=end, engine="local").count(),
        "spark": lambda: evaluate(graph, path, start=start, end=end, engine="spark").count(),
    }

    def levels():
        with spark_levels():
            return evaluate(graph, path, start=start, end=end, engine="spark").count()
    runs["spark-levels"] = levels
    return {engine: runs[engine] for engine in engines}


def measure_engines(graph, path, start, end, engines: list[str], repeats: int, warm: bool = True) -> dict:
    """{engine: (seconds, count, Spark jobs)}: each run once to warm up (unless not ``warm``), then
    the best of ``repeats`` timed runs (Spark: one, its jobs counted). In-memory engines are skipped
    (None) on graphs over ``paths.spark.local_max_triples()``, as ``auto`` would."""
    from paths.spark import local_max_triples

    out = {}
    for engine, run in engine_runs(graph, path, start, end, engines).items():
        on_spark = engine.startswith("spark")
        if not on_spark and graph.size() > local_max_triples():
            out[engine] = None
            continue
        if warm:
            run()
        context = graph.spark.sparkContext
        group = f"bench-paths-{engine}-{time.monotonic_ns()}"
        context.setJobGroup(group, "bench/paths")
        seconds, count = timed(run, 1 if on_spark else repeats)
        context.setLocalProperty("spark.jobGroup.id", None)
        jobs = len(context.statusTracker().getJobIdsForGroup(group))
        out[engine] = (seconds, count, jobs)
    return out


def index_note(graph) -> str:
    """Builds the in-memory index (if not yet built) and says what it cost."""
    from paths.spark import local_max_triples

    if graph.size() > local_max_triples():
        return "no in-memory index (over the memory budget)"
    seconds, _ = timed(graph.local)
    return f"in-memory index built once in {seconds:.2f} s (not in the times)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--work", help="scratch directory (default: a temporary one)")
    parser.add_argument("--queries", nargs="*", choices=QUERIES, default=list(QUERIES))
    parser.add_argument("--scale", type=int, nargs="*", default=[100_000, 1_000_000, 10_000_000],
                        help="synthetic graph sizes in edges (= triples) for query 3")
    parser.add_argument("--engines", nargs="*", choices=ENGINES, default=list(ENGINES),
                        help="our executors to time (see the module doc)")
    parser.add_argument("--baselines", nargs="*", choices=("oxigraph", "rdflib"), default=["oxigraph", "rdflib"])
    parser.add_argument("--timeout", type=float, default=900, help="seconds per baseline run")
    parser.add_argument("--repeat", type=int, default=5,
                        help="timed runs of our in-memory engines and of pyoxigraph, best kept (Spark, rdflib: one)")
    parser.add_argument("--baseline-max-edges", type=int, default=10_000_000,
                        help="largest synthetic graph pyoxigraph is run on")
    parser.add_argument("--rdflib-max-edges", type=int, default=1_000_000,
                        help="largest synthetic graph rdflib is run on")
    parser.add_argument("--no-warm-up", action="store_true",
                        help="time the first run of each engine on the synthetic graphs (at 10M edges "
                             "a warm-up Spark run costs minutes)")
    args = parser.parse_args(argv)

    from jobs.spark import build_session
    from paths import PathGraph, lower, parse

    work = Path(args.work or tempfile.mkdtemp(prefix="rsp-bench-paths-"))
    work.mkdir(parents=True, exist_ok=True)
    spark = build_session("rsp-sidecar bench paths")
    spark.sparkContext.setLogLevel("ERROR")
    prefixes = {"": V}
    header = ["query", "graph", "triples", "engine", "result", "ours s", "jobs", "oxigraph s", "rdflib s", "ours/ox",
              "ours/rdflib", "counts agree", "note"]

    def report(rows, name, graph_name, size, measured, ox, rd, note):
        for engine, value in measured.items():
            if value is None:
                rows.append([name, graph_name, size, engine, "-", "-", "-", ox["shown"], rd["shown"], "-", "-",
                             "-", "over the memory budget"])
            else:
                ours, count, jobs = value
                rows.append([name, graph_name, size, engine, count, f"{ours:.3f}", jobs, ox["shown"],
                             rd["shown"], ratio(ours, ox), ratio(ours, rd), agree(count, ox, rd), note])
            print(" | ".join(map(str, rows[-1][:7])), file=sys.stderr, flush=True)

    if args.queries:
        encoded, nt, size = vienna_graph(spark, data_dir(args.data_dir), work)
        graph = PathGraph(encoded)
        print(f"Vienna: {index_note(graph) if set(args.engines) - {'spark'} else 'Spark only'}")
        rows = []
        for spec in vienna_queries(args.queries):
            path = lower(parse(spec["path"], prefixes))
            measured = measure_engines(graph, path, spec["start"], spec["end"], args.engines, args.repeat)
            theirs = {e: baseline(e, nt, spec["sparql"], spec["update"], args.timeout, args.repeat) for e in args.baselines}
            ox, rd = theirs.get("oxigraph", {"shown": "-"}), theirs.get("rdflib", {"shown": "-"})
            report(rows, spec["name"], "Vienna", size, measured, ox, rd, spec["note"])
        print_table(rows, header)
        print()
        encoded.unpersist()

    if args.scale:
        reach = lower(parse("(^:beg/:end)+", prefixes))
        rows = []
        for edges in args.scale:
            triples, size, start = synthetic_graph(spark, edges)
            graph = PathGraph(triples)
            note = index_note(graph) if set(args.engines) - {"spark"} else ""
            measured = measure_engines(graph, reach, start, None, args.engines, args.repeat,
                                       warm=not args.no_warm_up)
            ox = rd = {"shown": "-"}
            run_ox = "oxigraph" in args.baselines and edges <= args.baseline_max_edges
            run_rd = "rdflib" in args.baselines and edges <= args.rdflib_max_edges
            if run_ox or run_rd:
                nt = work / f"synthetic-{edges}.nt"
                synthetic_ntriples(triples, nt)
                query = PREFIX + f"SELECT (COUNT(*) AS ?n) WHERE {{ <{SYNTHETIC_NS}{start}> (^:beg/:end)+ ?x }}"
                if run_ox:
                    ox = baseline("oxigraph", nt, query, "", args.timeout, args.repeat)
                if run_rd:
                    rd = baseline("rdflib", nt, query, "", args.timeout)
                nt.unlink()
            report(rows, "(3) :s0 (^:beg/:end)+ ?x", f"synthetic {edges:,}", size, measured, ox, rd,
                   "; ".join(x for x in ("random, out-degree 2", note) if x))
            triples.unpersist()
        print_table(rows, header)
    return 0


if __name__ == "__main__":
    sys.exit(main())
