"""Benchmark: ``query --at`` as a user runs it, the whole process, ``--engine auto`` against
``--engine spark`` (issue 37).

    python bench/query_at.py [--repeat 3] [--events 1000,10000,100000] [--instants 1000]
                             [--spark-max-events 100000] [--network real|example]
                             [--parts example,csparql,consuming,crossover]
                             [--consuming-events 2000] [--consuming-instants 40]
                             [--keyed-instants 34] [--split-sizes 2000,20000,200000]

Four parts, each timed as wall-clock seconds of ``python -m jobs.cli query ...`` (imports,
reading the files, the evaluation, printing the answers; a JVM only where Spark runs), the median
of ``--repeat`` runs, both engines side by side in one run. The project's bytecode is written
first, as a user's first run writes it (also where the environment asks Python not to).

1. **The running example** (DESIGN.md; 20 background triples, 4 events) at one instant; and its
   SEQ grouped, ordered and limited per instant (GROUP BY / ORDER BY / LIMIT) at 7 instants.
2. **CSRBench-style C-SPARQL**: a 4-pattern BGP and a FILTER over ~15,000 timestamped triples
   (3,750 sensor observations over 10 minutes, in seconds) with ``[RANGE 1s STEP 1s]`` at 34
   instants, on the driver (``cep.engines.driver.csparql``; the line says which engine ran) and on
   Spark (the 34 instants in one plan keyed by the instant, ``cep.engines.spark.keyed``).
3. **A consuming RSEP-QL MATCH at many instants** (``--parts consuming``): Fig. 1's query
   (``ontologies/rsep_fig1_query.rq``, chronological) over a synthetic stream of ``--consuming-events``
   items at ``--consuming-instants`` instants. What an instant sees depends on what the earlier ones
   consumed. Timed the whole process, ``auto`` (the driver) against ``spark``; then inside one
   Spark session (the JVM's start left out of both) against the evaluation instant by instant
   (``evaluate_each``, the only way Spark had before 2026-11-28), and the same with a BIND over
   the MATCH, which the driver engine refuses. On Spark the MATCH's events split by its key (?y),
   the rest keyed by the instant.
4. **The crossover**: the Vienna query (``ontologies/vienna_example_query.rq``) over a synthetic
   fleet's delays and arrivals (``scenarios.vienna_transit.write_stream``) on the real network
   (``../shared/data``; else the running example's map), at ``--instants`` instants spread over
   the stream, for each size in ``--events``; Spark is timed up to ``--spark-max-events``.
5. **Keyed by the instant on Spark** (``--parts keyed``), inside one Spark session: the plan keyed
   by the instant against the evaluation instant by instant (``evaluate_each``, the only way
   Spark had for these before 2026-12-02), at ``--keyed-instants`` instants. (a) Part 2's stream
   with a sensor hierarchy as the background (40 sensors, 10 rooms, 3 floors, a building) and a
   property path over each instant's snapshot (``?sensor :partOf+ ?site``): each instant's
   snapshot one key of one path evaluation (``paths.spark.PathGraph(keys=)``). (b) EP-SPARQL
   rules closed at each of 10 instants without a dictionary (the driver engine decodes terms, so
   it cannot take them): every rule at every instant in one plan per round
   (``close_rules_at_instants``), over 100 ``:next`` events among 80 nodes.
6. **A consuming MATCH split by its key** (``--parts split``, ``--split-sizes``), inside one Spark
   session: part 3's query and stream at each size, its events in a task per core, the stream's
   triples shuffled by ``?y`` (``cep.engines.spark.ordered.match_split``), against the whole query
   in one task (``evaluate_in_one_task``), after one warm-up round of each.
"""
from __future__ import annotations

import argparse
import json
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

from py4j.protocol import Py4JJavaError  # noqa: E402

from cep import compile_query  # noqa: E402  (the repository, put on the path above)
from cep.algebra.windows import RSEPQL_WINDOWS  # noqa: E402
from cep.engines.spark import ordered  # noqa: E402
from cep.engines.columns import STREAM_COLUMNS  # noqa: E402
from cep.engines.spark.evaluate import evaluate_at_instants, evaluate_each  # noqa: E402
from cep.io.streams import read_stream  # noqa: E402
from jobs.spark import build_session  # noqa: E402
from rdfcore.hashing import term_id  # noqa: E402
from rdfcore.schema import ID, O, P, S, TERM  # noqa: E402
from scenarios import vienna_transit as vt  # noqa: E402


PARTS = ("example", "csparql", "consuming", "crossover", "keyed", "split")
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


def consuming_stream(path: Path, events: int, rng: random.Random) -> int:
    """Fig. 1's stream, longer: ``events`` items (JSON Lines, integer ticks), ``:a_k :p :b_k`` and
    later ``:b_k :q :c_k`` for k among ``events // 2`` keys, every tick holding ~2 items; returns
    the last tick."""
    keys, last = events // 2, 0
    with open(path, "w", encoding="utf-8") as out:
        for n in range(events):
            k = rng.randrange(keys)
            t = n // 2
            triple = [f":a{k}", ":p", f":b{k}"] if rng.random() < 0.5 else [f":b{k}", ":q", f":c{k}"]
            out.write(f'{{"t": {t}, "triples": [{json.dumps(triple)}]}}\n')
            last = t
    return last


def consuming(work: Path, events: int, instants: int, repeat: int) -> None:
    """Part 3 (module doc)."""
    stream = work / "consuming.jsonl"
    last = consuming_stream(stream, events, random.Random(11))
    step = max(1, last // instants)
    at = list(range(step, last + 1, step))[:instants]
    query = REPO / "ontologies" / "rsep_fig1_query.rq"
    argv = [query, "--stream", f":S={stream}", "--policy", "chronological", "--at", ",".join(map(str, at))]
    ours, out, engine = timed([*argv, "--engine", "auto"], repeat)
    theirs, out_spark, _ = timed([*argv, "--engine", "spark"], repeat)
    assert out == out_spark, "the engines disagree"
    label = f"consuming RSEP-QL, {events:,} items x {len(at)} instants"
    line(label, ours, theirs, f"(auto ran on the {engine}; {len(out.splitlines()) - 1} answer rows)")
    # inside one session: the one task against instant by instant
    spark = build_session("bench query_at consuming")
    text = query.read_text(encoding="utf-8").replace("MATCH (", "MATCH CHRONOLOGICAL (")
    q = compile_query(text)
    read = read_stream(spark, str(stream), prefixes=dict(q.prefixes), time_unit="ms")
    frames = {"<http://example.org/rsep#S>": read.triples.cache()}
    dictionary = read.dictionary.cache()
    for frame in (*frames.values(), dictionary):   # read once, before the timed runs
        frame.count()
    # the same with a BIND over the MATCH, which the driver engine refuses: the MATCH's events in
    # the one task, the rest keyed by the instant (cep.engines.spark.ordered.match_in_one_task)
    bound = compile_query(text.replace("SELECT ?x ?y ?z", "SELECT ?x ?y ?z ?w").replace(
        "?z } ) }", "?z } ) BIND (STR(?z) AS ?w) }"))
    assert ordered.refusal(q, {}, dictionary, None, None, ()) is None
    assert ordered.refusal(bound, {}, dictionary, None, None, ()) is not None
    for name, query_ in ((label, q), (label + ", BIND", bound)):
        one, each = [], []
        for _ in range(repeat):
            start = time.perf_counter()
            rows_one = evaluate_at_instants(query_, {}, frames, at, dictionary=dictionary).count()
            one.append(time.perf_counter() - start)
        ours = statistics.median(one)
        how = "split+keyed"
        start = time.perf_counter()
        try:   # last: instant by instant may fill the JVM's heap (issue 37), which ends the session
            for _ in range(repeat):
                start = time.perf_counter()
                rows_each = sum(frame.count() for frame in evaluate_each(query_, {}, frames, at,
                                                                         dictionary=dictionary))
                each.append(time.perf_counter() - start)
                assert rows_one == rows_each, f"one pass: {rows_one} rows, instant by instant: {rows_each}"
        except Py4JJavaError as error:
            cause = str(error.java_exception).splitlines()[0]
            print(f"{name + ', one session':<44} {how} {ours:8.2f} s   instant by instant failed after "
                  f"{time.perf_counter() - start:.1f} s: {cause}  ({rows_one} answer rows)", flush=True)
            break
        theirs = statistics.median(each)
        print(f"{name + ', one session':<44} {how} {ours:8.2f} s   instant by instant {theirs:8.2f} s   "
              f"ratio {theirs / ours:6.1f}x  ({rows_one} answer rows, the same on both)", flush=True)
    spark.stop()


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

CSR = "http://example.org/csr#"
#: part 5 (a): a property path over each instant's snapshot (the window's triples and the hierarchy)
SITE_QUERY = f"""PREFIX : <{CSR}>
SELECT ?obs ?site FROM :hierarchy FROM STREAM <http://example.org/observations> [RANGE 5s STEP 1s]
WHERE {{ ?obs :procedure ?sensor ; :result ?value . ?sensor :partOf+ ?site FILTER (?value > 90) }}
"""
#: part 5 (b): who reaches whom by a chain of :next events, each later than the one before
CHAIN = f"PREFIX : <{CSR}> "
CHAIN_RULES = [CHAIN + "CONSTRUCT { ?x :reach ?y } WHERE { ?x :next ?y }",
               CHAIN + "CONSTRUCT { ?x :reach ?z } WHERE { { ?x :reach ?y } SEQ { ?y :next ?z } }"]
CHAIN_QUERY = CHAIN + "SELECT ?x ?z WHERE { ?x :reach ?z }"


def keyed_side_by_side(name: str, run_keyed, run_each, repeat: int) -> None:
    """Median seconds of ``run_keyed()`` and ``run_each()`` (each returns its row count), in one
    session, the keyed plan first (instant by instant may fill the JVM's heap)."""
    one, each = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        rows_one = run_keyed()
        one.append(time.perf_counter() - start)
    ours = statistics.median(one)
    for _ in range(repeat):
        start = time.perf_counter()
        rows_each = run_each()
        each.append(time.perf_counter() - start)
        assert rows_one == rows_each, f"keyed: {rows_one} rows, instant by instant: {rows_each}"
    theirs = statistics.median(each)
    print(f"{name:<44} keyed {ours:8.2f} s   instant by instant {theirs:8.2f} s   ratio {theirs / ours:6.1f}x  "
          f"({rows_one} answer rows, the same on both)", flush=True)


def keyed(instants: int, repeat: int) -> None:
    """Part 5 (module doc)."""
    spark = build_session("bench query_at keyed")
    rng = random.Random(7)
    terms: set = set()

    def iri(local: str) -> str:
        terms.add(f"<{CSR}{local}>")
        return f"<{CSR}{local}>"

    hierarchy = [(iri(f"sensor{i}"), iri("partOf"), iri(f"room{i % 10}")) for i in range(40)]
    hierarchy += [(iri(f"room{r}"), iri("partOf"), iri(f"floor{r % 3}")) for r in range(10)]
    hierarchy += [(iri(f"floor{f}"), iri("partOf"), iri("building")) for f in range(3)]
    rows = []
    for i in range(3750):                                  # part 2's observations, 4 triples each
        t = rng.randrange(0, 600)
        value = f'"{rng.randrange(0, 100)}"^^<http://www.w3.org/2001/XMLSchema#integer>'
        terms.add(value)
        for p, o in ((iri("procedure"), iri(f"sensor{rng.randrange(40)}")), (iri("result"), value)):
            rows.append((len(rows), term_id(iri(f"obs{i}")), term_id(p), term_id(o), t, t))
    schema = ", ".join(f"{c} long" for c in STREAM_COLUMNS)
    streams = {"<http://example.org/observations>": spark.createDataFrame(rows, schema).cache()}
    background = {f"<{CSR}hierarchy>": spark.createDataFrame(
        [tuple(term_id(x) for x in triple) for triple in hierarchy], f"{S} long, {P} long, {O} long").cache()}
    dictionary = spark.createDataFrame(sorted((term_id(t), t) for t in terms), f"{ID} long, {TERM} string").cache()
    for frame in (*streams.values(), *background.values(), dictionary):
        frame.count()
    at = list(range(100, 100 + instants))
    query = compile_query(SITE_QUERY)
    keyed_side_by_side(
        f"path over each snapshot, 15k triples, {instants} instants",
        lambda: evaluate_at_instants(query, background, streams, at, time_unit="s", dictionary=dictionary).count(),
        lambda: sum(f.count() for f in evaluate_each(query, background, streams, at, time_unit="s",
                                                     dictionary=dictionary)), repeat)
    chain = []
    for t in range(100):                                   # one :next event per tick among 80 nodes
        a, b = rng.randrange(80), rng.randrange(80)
        chain.append((t, term_id(iri(f"n{a}")), term_id(iri("next")), term_id(iri(f"n{b}")), t, t))
    chain_streams = {"<http://example.org/observations>": spark.createDataFrame(chain, schema).cache()}
    rules = [compile_query(r, lang="epsparql") for r in CHAIN_RULES]
    reach = compile_query(CHAIN_QUERY, lang="epsparql")
    chain_at = [10 * (k + 1) for k in range(10)]
    keyed_side_by_side(
        f"rules, no dictionary, 100 events, {len(chain_at)} instants",
        lambda: evaluate_at_instants(reach, {}, chain_streams, chain_at, rules=rules).count(),
        lambda: sum(f.count() for f in evaluate_each(reach, {}, chain_streams, chain_at, rules=rules)), repeat)
    spark.stop()


def split_by_key(work: Path, sizes: list[int], instants: int, repeat: int) -> None:
    """Part 6 (module doc)."""
    spark = build_session("bench query_at split")
    text = (REPO / "ontologies" / "rsep_fig1_query.rq").read_text(encoding="utf-8").replace(
        "MATCH (", "MATCH CHRONOLOGICAL (")
    q = compile_query(text)
    assert ordered.match_split(q) is not None
    for events in sizes:
        stream = work / f"split{events}.jsonl"
        last = consuming_stream(stream, events, random.Random(11))
        step = max(1, last // instants)
        at = list(range(step, last + 1, step))[:instants]
        read = read_stream(spark, str(stream), prefixes=dict(q.prefixes), time_unit="ms")
        frames = {"<http://example.org/rsep#S>": read.triples.cache()}
        dictionary = read.dictionary.cache()
        for frame in (*frames.values(), dictionary):   # read once, before the timed runs
            frame.count()
        split, whole = [], []
        for _ in range(repeat + 1):          # the first round warms both up and is not counted
            start = time.perf_counter()
            rows_split = evaluate_at_instants(q, {}, frames, at, dictionary=dictionary).count()
            split.append(time.perf_counter() - start)
            start = time.perf_counter()
            rows_whole = ordered.evaluate_in_one_task(q, {}, frames, at, "ms", dictionary, terms=None, column="_at",
                                                      window_convention=RSEPQL_WINDOWS).count()
            whole.append(time.perf_counter() - start)
            assert rows_split == rows_whole, f"split: {rows_split} rows, one task: {rows_whole}"
        ours, theirs = statistics.median(split[1:]), statistics.median(whole[1:])
        print(f"{f'consuming MATCH split by key, {events:,} items x {len(at)}':<44} split {ours:8.2f} s   "
              f"one task {theirs:8.2f} s   ratio {theirs / ours:6.1f}x  ({rows_split} answer rows, the same on both; "
              f"{spark.sparkContext.defaultParallelism} tasks)", flush=True)
        for frame in (*frames.values(), dictionary):
            frame.unpersist()
    spark.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--events", default="1000,10000,100000")
    ap.add_argument("--instants", type=int, default=1000)
    ap.add_argument("--spark-max-events", type=int, default=100_000)
    ap.add_argument("--network", choices=("real", "example"), default=None)
    ap.add_argument("--consuming-events", type=int, default=2000)
    ap.add_argument("--consuming-instants", type=int, default=40)
    ap.add_argument("--keyed-instants", type=int, default=34)
    ap.add_argument("--split-sizes", default="2000,20000,200000")
    ap.add_argument("--parts", default=",".join(PARTS), help="which parts to run, comma-separated (default all)")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= set(PARTS):
        ap.error(f"--parts: unknown part(s) {', '.join(sorted(parts - set(PARTS)))}")
    print(f"query --at, whole process, median of {args.repeat} (Spark crossover runs: 1); {os.cpu_count()} cores",
          flush=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", *PACKAGES], cwd=REPO, check=True)
    with tempfile.TemporaryDirectory(prefix="query-at-") as tmp:
        work = Path(tmp)
        if "example" in parts:
            running_example(work, args.repeat)
        if "csparql" in parts:
            csrbench(work, args.repeat)
        if "consuming" in parts:
            consuming(work, args.consuming_events, args.consuming_instants, args.repeat)
        if "crossover" in parts:
            crossover(work, [int(n) for n in args.events.split(",")], args.instants, args.spark_max_events,
                      args.network, args.repeat)
        if "keyed" in parts:
            keyed(args.keyed_instants, args.repeat)
        if "split" in parts:
            split_by_key(work, [int(n) for n in args.split_sizes.split(",")], args.consuming_instants, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
