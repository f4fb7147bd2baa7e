"""Continuous evaluation (cep.continuous.plan plan, cep.continuous.runner runtime) against the one-instant oracle.

The equivalence (DESIGN.md "Continuous evaluation"): for a finite point-event stream, the
continuous Istream output equals the union over every integer instant t between the first and
the last event time of ``cep.engines.reference.evaluate(query, ..., at=t)``, and no answer is emitted twice.
Streams are cut into several files read one per micro-batch (``max_files_per_trigger=1``), so
the state carried between batches, the watermark and the end-of-input close are all exercised.
"""
from __future__ import annotations

import json
import os
import random
import zlib
from pathlib import Path

import pytest

from cep import algebra as A
from cep.algebra import expressions as E
from cep.engines import reference as R
from cep.continuous.plan import ContinuousError, plan
from cep.lowering.languages import compile_query
from tests.stream_terms import OBJECTS, PREDICATES, STREAM_IRI, SUBJECTS, WINDOW_IRI, random_items

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parent.parent
v, s, x = (A.Var(n) for n in ("v", "s", "x"))


# --- the plan, without Spark -------------------------------------------------------------------

def _query(window, pattern):
    names = sorted(var.name for var in A.variables(pattern))
    return A.Query(A.Project(tuple(A.Var(n) for n in names), False,
                             A.StreamPattern(WINDOW_IRI, STREAM_IRI, window, pattern)))


P0 = A.bgp(A.triple(v, PREDICATES[0], s))


@pytest.mark.parametrize("window, kind", [
    (A.Range(A.Duration(10)), "sliding"), (A.Now(), "sliding"), (A.Triples(3), "count"),
    (A.Range(A.Duration(10), A.Duration(5)), "step"), (A.Range(A.Duration(6), tumbling=True), "step"),
    (A.All(), "landmark")])
def test_plan_rules(window, kind):
    p = plan(_query(window, P0))
    assert [w.kind for w in p.windows] == [kind]
    assert p.streams == (STREAM_IRI,)
    assert bool(p.warnings) == (kind == "landmark")       # an [ALL] window's state grows: the run says so


def test_plan_horizon_adds_step_and_lateness():
    assert plan(_query(A.Range(A.Duration(10), A.Duration(5)), P0), lateness=3).horizon == 18
    assert plan(_query(A.Triples(3), P0)).horizon is None


def test_plan_refuses_queries_without_windows_and_bad_options():
    with pytest.raises(ContinuousError, match="--every sets when C-SPARQL"):
        plan(_query(A.Now(), P0), every=5)
    with pytest.raises(ContinuousError, match="no WINDOW"):
        plan(compile_query("SELECT ?s WHERE { ?s ?p ?o }"))
    with pytest.raises(ContinuousError, match="lateness"):
        plan(_query(A.Now(), P0), lateness=-1)
    with pytest.raises(ContinuousError, match="rstream"):
        plan(_query(A.Now(), P0), emit="bstream")


# --- running it --------------------------------------------------------------------------------

def write_stream(directory: Path, chunks) -> dict:
    """One JSON Lines file per chunk of items ``(item, graph, t1, t2)``, modified in order (the
    file source reads the oldest first). Returns {item: (file, line)}."""
    directory.mkdir(parents=True, exist_ok=True)
    base = 1_600_000_000
    placed = {}
    for i, chunk in enumerate(chunks):
        path = directory / f"part{i:03d}.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            for line, (item, g, t1, t2) in enumerate(chunk, start=1):
                placed[item] = (str(path.resolve()), line)
                row = {"t": t1, "triples": [list(tr) for tr in sorted(g)]}
                if t2 != t1:
                    row["t_end"] = t2
                out.write(json.dumps(row) + "\n")
        os.utime(path, (base + i, base + i))
    return placed


def runtime_ids(spark, placed: dict) -> dict:
    """{item: the id the file source gives it}, ``xxhash64(file, line)``: TRIPLES windows break
    ties between items of one time by id, so the reference must see the same ids."""
    from pyspark.sql import functions as F

    rows = [(item, f, line) for item, (f, line) in placed.items()]
    df = spark.createDataFrame(rows, "item long, file string, line long")
    return {r["item"]: r["id"] for r in df.select("item", F.xxhash64("file", "line").alias("id")).collect()}


def relabeled(items, ids):
    return [(ids[i], g, t1, t2) for (i, g, t1, t2) in items]


def run_continuous(spark, tmp_path: Path, query, chunks, *, lateness=0, static=None, name="run", emit="istream",
                   engine="auto"):
    from cep.continuous.job import run
    from cep.continuous.sinks import CallbackSink
    from cep.continuous.sources import FileSource

    directory = tmp_path / name / "in"
    ids = runtime_ids(spark, write_stream(directory, chunks))
    got: list[dict] = []
    summary = run(spark, query, [FileSource(STREAM_IRI, str(directory), max_files_per_trigger=1)],
                  sink=CallbackSink(lambda label, rows: got.extend(rows)), checkpoint=tmp_path / name / "ckpt",
                  static=static, lateness=lateness, emit=emit, rejects=tmp_path / name / "rejects",
                  metrics=open(os.devnull, "w"), engine=engine)
    return got, summary, ids


def as_answers(rows, names):
    return [(frozenset((n, r[n]) for n in names if r.get(n) is not None), r["_start"], r["_end"]) for r in rows]


def reference_union(query, items, background=None):
    times = [t for (_i, _g, t1, t2) in items for t in (t1, t2)]
    out = set()
    for t in range(min(times), max(times) + 1):
        out |= R.evaluate(query, {None: background or set()}, {STREAM_IRI: items}, at=t)
    return out


def chunked(items, k):
    size = max(1, -(-len(items) // k))
    return [items[i:i + size] for i in range(0, len(items), size)]


def b(*triples):
    return A.bgp(*(A.triple(*t) for t in triples))


p0, p1, p2 = PREDICATES
ELEMENT_A = b((v, p0, s))
ELEMENT_B = b((v, p1, s))
ELEMENT_TWO = b((v, p0, s), (v, p2, x))       # a two-pattern BGP: matched inside one item (eq. 16)
QUERIES = [
    ("tail negated, RANGE", A.Range(A.Duration(6)), A.sequence(ELEMENT_A, ELEMENT_A, ELEMENT_B, negated=2)),
    ("head negated, RANGE", A.Range(A.Duration(5)), A.sequence(ELEMENT_B, ELEMENT_A, negated=0)),
    ("middle negated, STEP", A.Range(A.Duration(8), A.Duration(3)),
     A.sequence(ELEMENT_A, ELEMENT_B, ELEMENT_TWO, negated=1)),
    ("multi-pattern BGP, TUMBLING", A.Range(A.Duration(5), tumbling=True), A.sequence(ELEMENT_TWO, ELEMENT_A)),
    ("TRIPLES with tail negation", A.Triples(4), A.sequence(ELEMENT_A, ELEMENT_B, negated=1)),
    ("NOW, one multi-pattern BGP", A.Now(), ELEMENT_TWO),
    ("tail negated, ALL (landmark)", A.All(), A.sequence(ELEMENT_A, ELEMENT_B, negated=1)),
    ("FILTER over a negated tail, RANGE", A.Range(A.Duration(6)), A.Filter(
        E.Or(E.Compare("!=", s, E.Const(OBJECTS[0])), E.Compare("=", v, E.Const(SUBJECTS[1]))),
        A.sequence(ELEMENT_A, ELEMENT_B, negated=1))),
    ("OPTIONAL with a condition, RANGE", A.Range(A.Duration(4)), A.left_join(
        ELEMENT_A, b((v, p2, x)), E.Builtin("STRENDS", (E.Str(x), E.Const('"h"'))))),
]


#: every query on the driver-side engine; on both in turns (each engine reads the other's state)
#: the queries of every window kind whose state outlives a batch differently (a negated head over
#: a RANGE, STEP, TUMBLING, TRIPLES, ALL). Under the thorough profile (``tests/hypothesis_profiles.py``:
#: each mixed run is a Spark evaluation per batch) every query in turns, and two with negation on
#: Spark alone (a Spark batch reading a Spark batch's state: NO_TAIL's expiries over a RANGE, a
#: negated middle's STEP closes): the turns already have Spark read the state the driver wrote and
#: write the state the driver reads
SPARK_ALONE = ("tail negated, RANGE", "middle negated, STEP")
MIXED = ("head negated, RANGE", "middle negated, STEP", "multi-pattern BGP, TUMBLING", "TRIPLES with tail negation",
         "tail negated, ALL (landmark)")
assert {*MIXED, *SPARK_ALONE} <= {q[0] for q in QUERIES}
ENGINE_CASES = [pytest.param(q[0], q[1], q[2], engine, id=f"{q[0]}-{engine}",
                             marks=() if engine == "local" or (engine == "mixed" and q[0] in MIXED)
                             else pytest.mark.thorough)
                for q in QUERIES
                for engine in ("local", "mixed") + (("spark",) if q[0] in SPARK_ALONE else ())]


@pytest.mark.parametrize("label, window, pattern, engine", ENGINE_CASES)
def test_continuous_equals_union_of_instants(spark, tmp_path, monkeypatch, label, window, pattern, engine):
    """Random point-event streams (24 multi-triple items, several per time) in 3 micro-batches:
    the Istream equals ⋃_t ⟦Q, t⟧ of the reference, each answer once. Guards the instants (a
    missed expiry of a negated head, a missed STEP close), the state kept between batches (an item
    pruned too early loses a SEQ), and Istream's dedup (an answer found again in a later batch).
    Each engine: Spark, the driver (``cep.engines.driver.rows``), and both in turns (the state passes from one
    to the other between batches)."""
    import cep.continuous.runner

    query = _query(window, pattern)
    names = [var.name for var in query.form.variables]
    rng = random.Random(zlib.crc32(label.encode()))
    items = random_items(rng, 24, 16)
    assert reference_union(query, items), "the seed gives this query no answer: the test would prove nothing"
    if engine == "mixed":   # the driver for the 1st and 3rd decision, Spark for the 2nd and 4th
        decide, calls = cep.continuous.runner.Runner._local_first, []

        def alternate(runner, meta):
            calls.append(None)
            return decide(runner, meta) and len(calls) % 2 == 1

        monkeypatch.setattr(cep.continuous.runner.Runner, "_local_first", alternate)
    got, summary, ids = run_continuous(spark, tmp_path, query, chunked(items, 3),
                                       engine="auto" if engine == "mixed" else engine)
    used = {json.loads(line)["engine"] for line in (tmp_path / "run" / "ckpt" / "metrics.jsonl").read_text().splitlines()}
    assert used == ({"spark", "local"} if engine == "mixed" else {engine})
    expected = reference_union(query, relabeled(items, ids))
    answers = as_answers(got, names)
    assert len(answers) == len(set(answers)), "an answer was emitted twice"
    assert set(answers) == expected
    assert summary.batches >= 3


@pytest.mark.parametrize("engine", ["local", pytest.param("spark", marks=pytest.mark.thorough)])
def test_construct_template_blank_nodes_are_those_of_each_instant(spark, tmp_path, engine):
    """A CONSTRUCT template's blank node, named from its solution and interval: the continuous
    triples (both engines, 3 micro-batches) equal ⋃_t of the reference's at every instant, blank
    node labels included (``cep.terms.values.fresh_blank``), each triple once; one node per solution,
    shared by the template's triples. A UNION side without a stream (an answer's interval
    [MIN_TIME, t] changes with t; only ``cep.algebra.patterns`` can build one: the syntax keeps WINDOW
    blocks at the top of WHERE) is refused with the reason."""
    event = A.BGP((A.TriplePattern("_:e", "<urn:x:about>", v), A.TriplePattern("_:e", "<urn:x:seen>", s)))
    query = A.Query(A.construct(event.patterns, A.StreamPattern(WINDOW_IRI, STREAM_IRI, A.Range(A.Duration(8)),
                                                                 A.sequence(ELEMENT_A, ELEMENT_B))))
    items = random_items(random.Random(49), 24, 14)
    got, summary, ids = run_continuous(spark, tmp_path, query, chunked(items, 3), engine=engine)
    used = {json.loads(line)["engine"] for line in (tmp_path / "run" / "ckpt" / "metrics.jsonl").read_text().splitlines()}
    assert used == {engine}
    expected = reference_union(query, relabeled(items, ids))
    answers = [((r["s"], r["p"], r["o"]), r["_start"], r["_end"]) for r in got]
    assert len(answers) == len(set(answers)), "a triple was emitted twice"
    assert set(answers) == expected and len(expected) > 10
    nodes = {a[0][0] for a in answers}
    assert all(n.startswith("_:e_") for n in nodes) and len(nodes) == len(answers) // 2
    with pytest.raises(ContinuousError, match=r"\[MIN_TIME, t\]"):
        plan(A.Query(A.construct(event.patterns, A.Union(
            A.StreamPattern(WINDOW_IRI, STREAM_IRI, A.Range(A.Duration(5)), ELEMENT_A),
            A.Background(None, b((v, p0, s)))))))


@pytest.mark.parametrize("emit", ["rstream", "dstream"])
def test_rstream_and_dstream_equal_the_changes_between_instants(spark, tmp_path, emit):
    """Rstream: at each instant t where ⟦Q, t⟧ differs from ⟦Q, t − 1⟧, all of ⟦Q, t⟧; Dstream:
    ⟦Q, t − 1⟧ − ⟦Q, t⟧ at t. A negated head makes answers appear without an arrival and the
    window makes them leave; two batches, so the set alive at a batch's last instant is carried
    to the next (guards a change at a batch boundary reported twice or lost)."""
    query = _query(A.Range(A.Duration(4)), A.sequence(ELEMENT_B, ELEMENT_A, negated=0))
    names = [var.name for var in query.form.variables]
    items = random_items(random.Random(11), 16, 14)
    got, _summary, ids = run_continuous(spark, tmp_path, query, chunked(items, 2), emit=emit)
    items = relabeled(items, ids)
    times = [t for (_i, _g, t1, _t2) in items for t in (t1,)]
    expected, previous = set(), set()
    for t in range(min(times), max(times) + 1):
        now = R.evaluate(query, {None: set()}, {STREAM_IRI: items}, at=t)
        if emit == "rstream" and now != previous:
            expected |= {(a, t) for a in now}
        if emit == "dstream":
            expected |= {(a, t) for a in previous - now}
        previous = now
    answers = [(a, r["_at"]) for a, r in zip(as_answers(got, names), got)]
    assert len(answers) == len(set(answers))
    assert set(answers) == expected and expected


def test_out_of_order_within_lateness_equals_in_order(spark, tmp_path):
    """Items shuffled by up to D ticks, with --lateness D, give exactly the in-order answers;
    guards the watermark (an instant evaluated before its late items arrived)."""
    query = _query(A.Range(A.Duration(5)), A.sequence(ELEMENT_A, ELEMENT_A, ELEMENT_B, negated=2))
    names = [var.name for var in query.form.variables]
    rng = random.Random(7)
    items = random_items(rng, 20, 14)
    shuffled = sorted(items, key=lambda it: it[2] + rng.uniform(0, 2.9))   # displaced by < 3 ticks
    got, summary, ids = run_continuous(spark, tmp_path, query, chunked(shuffled, 4), lateness=3)
    assert summary.rejected == {}
    expected = reference_union(query, relabeled(items, ids))
    # a canonical order: a frozenset's repr lists its pairs in an order that depends on string
    # hashing and insertion history, so two equal answers can print differently
    def canonical(answer):
        head, start, end = answer
        return sorted(head), start, end

    assert expected and sorted(as_answers(got, names), key=canonical) == sorted(expected, key=canonical)


def test_late_items_are_rejected_with_reason_and_counted(spark, tmp_path):
    query = _query(A.Range(A.Duration(5)), ELEMENT_A)
    first = [(0, frozenset({(SUBJECTS[0], p0, OBJECTS[0])}), 10, 10)]
    late = [(1, frozenset({(SUBJECTS[1], p0, OBJECTS[0])}), 3, 3),
            (2, frozenset({(SUBJECTS[2], p0, OBJECTS[0])}), 12, 12)]
    got, summary, _ids = run_continuous(spark, tmp_path, query, [first, late])
    assert summary.rejected == {"late": 1}
    rejects = [json.loads(line) for f in sorted((tmp_path / "run" / "rejects").glob("*.jsonl"))
               for line in f.read_text().splitlines()]
    assert [(r["line"], r["reason"].split(":")[0]) for r in rejects] == [(1, "late")]
    assert {r["v"] for r in got} == {SUBJECTS[0], SUBJECTS[2]}


@pytest.mark.parametrize("shape, engine", [("files", "auto"), ("bytes", "auto"), ("bytes", "spark"),
                                           ("bytes", "keyed")])
def test_running_example_continuously(spark, tmp_path, shape, engine):
    """DESIGN.md's running example, streamed: over all instants the one answer is ?s = :m on
    [10, 16] (t=14 gives none; t=16 gives :m). Issue 59's malformed lines stand between its events
    (``tests/running_example.py``: invalid UTF-8, NUL, broken JSON, bad timestamps, a 5 MB line...),
    each rejected with its file, line and reason while the run goes on: from files (one event and
    its share of the malformed lines a file, four micro-batches), and as a Kafka topic hands lines
    over (a Spark string of the bytes as they are, invalid UTF-8 included) to the driver-side
    engine, to Spark's and to the keyed operator."""
    from cep.continuous.job import run
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from cep.continuous.static import StaticFiles
    from tests.running_example import MALFORMED_LINES, raw_bytes_source, with_malformed_lines

    stream = "<http://example.org/publicTransport>"
    lines = (REPO / "ontologies" / "vienna_example_stream.jsonl").read_text().splitlines()
    expected = {}
    if shape == "files":
        stream_dir = tmp_path / "stream"
        stream_dir.mkdir()
        for i, line in enumerate(lines):  # one event per file: four micro-batches
            data, reasons = with_malformed_lines([line], MALFORMED_LINES[i::len(lines)])
            path = stream_dir / f"e{i}.jsonl"
            path.write_bytes(data)
            os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))
            expected.update({(path.name, n): why for n, why in reasons.items()})
        source = FileSource(stream, str(stream_dir), max_files_per_trigger=1)
    else:
        data, reasons = with_malformed_lines(lines)
        source = raw_bytes_source(stream, tmp_path / "topic", data)
        expected = {("kafka:raw/0", n): why for n, why in reasons.items()}
    query = (REPO / "ontologies" / "vienna_example_query.rq").read_text()
    summary = run(spark, query, [source], static=StaticFiles({None: [REPO / "ontologies" / "vienna_example.ttl"]}),
                  sink=DirectorySink(tmp_path / "out"), checkpoint=tmp_path / "ckpt", time_unit="m",
                  rejects=tmp_path / "rejects", metrics=open(os.devnull, "w"), engine=engine)
    rows = [json.loads(line) for f in sorted((tmp_path / "out").glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert [(r["s"], r["_start"], r["_end"], r["_at"]) for r in rows] == [("<http://example.org/vienna#m>", 10, 16, 16)]
    assert rows[0]["_version"].startswith("files:")
    assert summary.answers == 1
    rejects = {(Path(r["file"]).name if shape == "files" else r["file"], r["line"]): r["reason"]
               for f in (tmp_path / "rejects").glob("*.jsonl") for r in map(json.loads, f.read_text().splitlines())}
    assert sorted(rejects) == sorted(expected)
    assert all(rejects[k].startswith(why) for k, why in expected.items()), rejects
    assert summary.rejected == {"bad input": len(MALFORMED_LINES)}


class ClosureSwap:
    """The hot-swap case of a continuous query over ``--closure STORE``: version 1 is the example
    map (:h reaches :c only by tram); version 2 adds a subway :g → :c, so two delays of subway :d1
    at :h become an answer. Two stream files: :m's delays (an answer under v1), then :h's."""

    BATCHES = [[(":a1", ":m", 1), (":a1", ":m", 2), (":x9", ":b", 5)],       # :m on [1, 2], under v1
               [(":d1", ":h", 10), (":d1", ":h", 12), (":x9", ":b", 15)]]   # :h on [10, 12], only under v2
    QUERY = (REPO / "ontologies" / "vienna_example_query.rq").read_text()
    STREAM = "<http://example.org/publicTransport>"

    def __init__(self, spark, tmp_path: Path):
        from reasoner.publish import materialize_sources
        from reasoner.store import current_version

        self.spark, self.materialize, self.current = spark, materialize_sources, current_version
        self.store, self.example = tmp_path / "store", REPO / "ontologies" / "vienna_example.ttl"
        self.materialize(spark, [self.example], self.store)
        self.v1 = current_version(self.store)
        self.extra = tmp_path / "new_line.ttl"
        self.extra.write_text("@prefix : <http://example.org/vienna#> .\n:conn5 :beg :g ; :end :c ; :means :subway .\n")
        self.stream_dir = tmp_path / "in"
        self.stream_dir.mkdir()

    def write(self, i: int) -> None:
        path = self.stream_dir / f"part{i}.jsonl"
        path.write_text("".join(json.dumps({"s": v, "p": ":delayAt", "o": st, "t": t}) + "\n"
                                for v, st, t in self.BATCHES[i]))
        os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))

    def publish(self) -> str:
        self.materialize(self.spark, [self.example, self.extra], self.store)
        return self.current(self.store)

    def check(self, got: list, v2: str) -> None:
        assert self.v1 != v2
        vienna = "http://example.org/vienna#"
        assert [(r["s"], r["_start"], r["_end"], r["_version"]) for r in got] == [
            (f"<{vienna}m>", 1, 2, self.v1), (f"<{vienna}h>", 10, 12, v2)]


def test_a_new_closure_version_is_used_from_the_next_batch_on(spark, tmp_path):
    """``--closure STORE``: a version published while the query runs (here: between two
    micro-batches, from the answer hook) is used from the next batch on, and every answer says
    which version it was computed with (``ClosureSwap``)."""
    from cep.continuous.job import run
    from cep.continuous.sinks import CallbackSink
    from cep.continuous.sources import FileSource
    from cep.continuous.static import ClosureStore

    case = ClosureSwap(spark, tmp_path)
    case.write(0)
    case.write(1)
    published = []

    def publish_after_first_batch(label, rows):
        if not published:
            published.append(case.publish())

    got: list[dict] = []
    run(spark, case.QUERY, [FileSource(case.STREAM, str(case.stream_dir), max_files_per_trigger=1)],
        static=ClosureStore(case.store), sink=CallbackSink(lambda label, rows: got.extend(rows)),
        on_answers=publish_after_first_batch, checkpoint=tmp_path / "ckpt", time_unit="m",
        metrics=open(os.devnull, "w"))
    (v2,) = published
    case.check(got, v2)
