"""Continuous C-SPARQL and RSEP-QL (``cep.continuous.instants``) against the reference evaluator.

The equivalence (``cep.continuous.instants`` module doc): over a finite stream cut into micro-batches, the
continuous output is ``cep.engines.reference.evaluate_sequence`` at the evaluation instants of the whole
stream (``cep.continuous.plan.evaluation_instants`` from the first to the last event time), reported
as Rstream (every answer at every instant), Istream (each (mapping, interval) once, at its first
instant) or Dstream (the answers an instant drops). The schedule itself is checked by hand below.
"""
from __future__ import annotations

import json
import os
import random
import zlib
from dataclasses import replace

import pytest

from cep import algebra as A
from cep.engines import reference as R
from cep.continuous.instants import driver_refusal
from cep.continuous.plan import ContinuousError, end_instant, evaluation_instants, keep_from, plan
from cep.lowering.languages import compile_query
from cep.algebra.timeline import MIN_TIME

EX = "http://example.org/ci#"
S1, S2 = f"<{EX}S>", f"<{EX}S2>"
XSD = "http://www.w3.org/2001/XMLSchema#"
SUBJECTS = [f"<{EX}{n}>" for n in "abc"]
PREDICATES = [f"<{EX}{n}>" for n in "pq"]
VALUES = [f'"{v}"^^<{XSD}integer>' for v in (1, 2, 5)] + ['"x"']


# --- the schedule and the state rule, by hand (no Spark) --------------------------------------------

def _csparql(windows: str, every: str = "") -> A.Query:
    return compile_query(f"REGISTER QUERY q {every} AS PREFIX : <{EX}> SELECT ?s FROM STREAM :S {windows} "
                         f"WHERE {{ ?s ?p ?o }}" if every else
                         f"PREFIX : <{EX}> SELECT ?s FROM STREAM :S {windows} WHERE {{ ?s ?p ?o }}")


def test_evaluation_instants_by_hand():
    step = plan(_csparql("[RANGE 6 STEP 4]"))
    assert step.mode == "instants"
    assert evaluation_instants(step, {S1: [1, 9]}, 1, 17) == [4, 8, 12, 16]        # every close, empty or not
    sliding = plan(_csparql("[RANGE 5]"))                                           # slide 1: where it changes
    assert evaluation_instants(sliding, {S1: [1, 3, 3, 20]}, 1, 12) == [1, 3, 6, 8]  # arrivals, leavings (+5)
    assert evaluation_instants(plan(_csparql("[RANGE 5 STEP 1]")), {S1: [2]}, 0, 9) == [2, 7]
    assert evaluation_instants(plan(_csparql("[TRIPLES 2]")), {S1: [2, 4, 4]}, 0, 9) == [2, 4]
    every = plan(_csparql("[RANGE 5]", "COMPUTED EVERY 3"))
    assert every.every == (3,) and evaluation_instants(every, {S1: [1, 2]}, 1, 10) == [3, 6, 9]
    rsep = plan(compile_query(f"""PREFIX : <{EX}> SELECT ?x FROM NAMED WINDOW :w1 ON :S [RANGE 4 STEP 2]
        FROM NAMED WINDOW :w2 ON :S2 [NOW] WHERE {{ MATCH RECENT ( EVENT :w1 {{ ?x :p ?y }} SEQ
        EVENT :w2 {{ ?y :q ?z }} ) }}"""))
    assert rsep.consuming and evaluation_instants(rsep, {S1: [3], S2: [5]}, 3, 9) == [4, 5, 6, 8]   # NOW: 5, 6


def test_keep_from_by_hand():
    # RANGE 6 STEP 4, evaluated up to 9: an evaluation at 10 (another window's) sees its close 8,
    # (8 - 6, 8]
    assert keep_from(plan(_csparql("[RANGE 6 STEP 4]")), S1, 9) == 3
    assert keep_from(plan(_csparql("[RANGE 6 STEP 4]")), S1, 11) == 7
    # (10 - 5, 10] holds τ ≥ 6; the item stamped 5 leaves at 10, an evaluation instant: it stays
    assert keep_from(plan(_csparql("[RANGE 5]")), S1, 9) == 5
    assert keep_from(plan(_csparql("[RANGE 5]"), every=5), S1, 9) == 6               # no evaluation at leavings
    assert keep_from(plan(_csparql("[NOW]")), S1, 9) == 9                             # 9 leaves at 10
    triples = plan(_csparql("[TRIPLES 3]"))
    assert keep_from(triples, S1, 9, [(8, 1), (7, 1), (5, 2), (2, 1)]) == 5          # the boundary's ties stay
    assert keep_from(triples, S1, 9, [(8, 1), (7, 1)]) == MIN_TIME                   # fewer than n: all


def test_landmark_windows_and_the_report_policy():
    """An [ALL] window: content changes at arrivals only, every item is kept, and the plan warns;
    ``every`` (--every) replaces the content-change instants by its multiples."""
    rsep = plan(compile_query(f"PREFIX : <{EX}> SELECT ?x FROM NAMED WINDOW :w ON :S [ALL] "
                              f"WHERE {{ MATCH ( EVENT :w {{ ?x :p ?y }} ) }}"))
    assert [w.kind for w in rsep.windows] == ["landmark"] and "grows with the stream" in rsep.warnings[0]
    assert evaluation_instants(rsep, {S1: [2, 4, 4, 9]}, 0, 20) == [2, 4, 9]
    assert keep_from(rsep, S1, 100) == MIN_TIME
    every = plan(rsep.query, every=4)
    assert every.every == (4,) and evaluation_instants(every, {S1: [2, 9]}, 1, 13) == [4, 8, 12]
    with pytest.raises(ContinuousError, match="COMPUTED EVERY already"):
        plan(_csparql("[RANGE 5]", "COMPUTED EVERY 3"), every=2)
    with pytest.raises(ContinuousError, match="must be a positive"):
        plan(rsep.query, every=0)


# --- running it ----------------------------------------------------------------------------------

CSPARQL = [
    ("aggregates, STEP", "dstream", f"""PREFIX : <{EX}> SELECT ?s ?n ?sum ?max FROM STREAM :S [RANGE 6 STEP 2]
WHERE {{ ?s :p ?v }} AGGREGATE {{ (?n, COUNT, {{?s}}) }} AGGREGATE {{ (?sum, SUM(?v), ?s) }}
AGGREGATE {{ (?max, MAX(?v), ?s) FILTER (?n > 1) }}"""),
    ("two streams, TUMBLING + TRIPLES, timestamp()", "istream", f"""PREFIX : <{EX}>
SELECT ?s ?o ?w FROM STREAM :S [RANGE 5 TUMBLING] FROM STREAM :S2 [TRIPLES 3]
WHERE {{ ?s :q ?o OPTIONAL {{ GRAPH :S2 {{ ?s :p ?w }} }} FILTER (!BOUND(?w) || timestamp(?s :p ?w) >= timestamp(?s :q ?o)) }}"""),
    ("GROUP BY, ORDER BY, LIMIT per evaluation, background", "rstream", f"""PREFIX : <{EX}>
SELECT ?s (COUNT(*) AS ?n) (MAX(?v) AS ?m) FROM <{EX}bg> FROM STREAM :S [RANGE 4]
WHERE {{ ?s ?p ?v }} GROUP BY ?s ORDER BY DESC(?n) ?s LIMIT 2"""),
    ("REGISTER STREAM CONSTRUCT, COMPUTED EVERY", "rstream", f"""REGISTER STREAM out COMPUTED EVERY 3 AS
PREFIX : <{EX}> CONSTRUCT {{ ?s :seen [ :value ?o ] }} FROM STREAM :S [RANGE 4] FROM STREAM :S2 [RANGE 6 STEP 2]
WHERE {{ {{ ?s :p ?o }} UNION {{ ?s :q ?o }} }}"""),
    ("NOW(), RAND(), BNODE() at each evaluation", "rstream", f"""PREFIX : <{EX}>
SELECT ?s ?o ?now ?b FROM STREAM :S [RANGE 4 STEP 2] WHERE {{ ?s :p ?o FILTER (RAND() < 0.7)
BIND (NOW() AS ?now) BIND (BNODE() AS ?b) }}"""),
]

RSEPQL = [
    (policy, emit, f"""PREFIX : <{EX}> SELECT ?x ?y ?z FROM NAMED WINDOW :w1 ON :S [RANGE 6 STEP 2]
FROM NAMED WINDOW :w2 ON :S2 [RANGE 4]
WHERE {{ MATCH {policy} ( EVENT :w1 {{ ?x :p ?y }} SEQ EVENT :w2 {{ ?y :q ?z }} ) }}""")
    for policy, emit in (("CHRONOLOGICAL", "istream"), ("RECENT", "rstream"), ("", "dstream"))] + [
    ("FIRST / LAST, recent", "rstream", f"""PREFIX : <{EX}> SELECT * FROM NAMED WINDOW :w ON :S [RANGE 5]
WHERE {{ MATCH RECENT ( FIRST EVENT :w {{ ?x :p ?y }} SEQ (LAST (EVENT :w {{ ?y :q ?z }})) ) }}"""),
    ("window graph pattern, chronological", "istream", f"""PREFIX : <{EX}> SELECT ?x ?y ?z
FROM NAMED WINDOW :w1 ON :S [RANGE 6 STEP 2] FROM NAMED WINDOW :w2 ON :S2 [RANGE 4]
WHERE {{ MATCH CHRONOLOGICAL ( EVENT :w1 {{ ?x :p ?y }} ) WINDOW :w2 {{ ?y :q ?z }} }}"""),
    ("Fig. 1's windows: [ALL] (landmark) SEQ RANGE, chronological", "istream", f"""PREFIX : <{EX}>
SELECT ?x ?y ?z FROM NAMED WINDOW :w1 ON :S [ALL] FROM NAMED WINDOW :w2 ON :S [RANGE 5 STEP 1]
WHERE {{ MATCH CHRONOLOGICAL ( EVENT :w1 {{ ?x :p ?y }} SEQ EVENT :w2 {{ ?y :q ?z }} ) }}""")]


EPSPARQL = [
    ("SEQ", "istream", f"""PREFIX : <{EX}> SELECT ?s ?o ?z WHERE {{ ?s :p ?o }} SEQ {{ ?s :q ?z }}"""),
    ("OPTIONALSEQ, EQUALS, two streams", "rstream", f"""PREFIX : <{EX}> SELECT ?s ?o ?z ?w
WHERE {{ {{ ?s :p ?o }} OPTIONALSEQ {{ ?s :q ?z }} }} UNION {{ {{ ?s :q ?w }} EQUALS {{ ?w :p ?z }} }}"""),
    ("CONSTRUCT rules (the Q-closure)", "istream",
     f"""PREFIX : <{EX}> SELECT ?x ?z ?w WHERE {{ ?x :r ?z }} SEQ {{ ?z :p ?w }}"""),
]
#: the rules of the Q-closure case: :p edges, extended by later :q edges
RULES = [f"PREFIX : <{EX}> CONSTRUCT {{ ?x :r ?y }} WHERE {{ ?x :p ?y }}",
         f"PREFIX : <{EX}> CONSTRUCT {{ ?x :r ?z }} WHERE {{ {{ ?x :r ?y }} SEQ {{ ?y :q ?z }} }}"]


def random_stream(rng: random.Random, n: int, span: int, first_id: int = 0):
    items = []
    for i in range(n):
        g = {(rng.choice(SUBJECTS), rng.choice(PREDICATES), rng.choice(VALUES + SUBJECTS))
             for _ in range(rng.choice([1, 1, 2]))}
        t = rng.randint(0, span)
        items.append((first_id + i, frozenset(g), t, t))
    return sorted(items, key=lambda it: it[2])


def _write(directory, chunks) -> dict:
    from tests.test_cep_continuous import write_stream

    return write_stream(directory, chunks)


def run_instants(spark, tmp_path, text, streams, *, emit, engine, background=None, name="run", horizon=None,
                 rules=(), every=None, window_convention=None):
    """Run ``text`` over ``streams`` ({IRI: items}, each cut into 3 files by time — the same
    ranges for every stream, so that no stream's items arrive late — one file per batch);
    returns (rows, the items relabeled with the runtime's ids, metrics lines)."""
    from cep.continuous.job import run
    from cep.continuous.sinks import CallbackSink
    from cep.continuous.sources import FileSource
    from cep.continuous.static import StaticFiles
    from tests.test_cep_continuous import relabeled, runtime_ids

    top = max(t1 for items in streams.values() for (_i, _g, t1, _t2) in items)
    cuts = [top // 3, 2 * top // 3]
    sources, relabeled_streams = [], {}
    for k, (iri, items) in enumerate(streams.items()):
        directory = tmp_path / name / f"in{k}"
        chunks = [[it for it in items if it[2] <= cuts[0]], [it for it in items if cuts[0] < it[2] <= cuts[1]],
                  [it for it in items if it[2] > cuts[1]]]
        ids = runtime_ids(spark, _write(directory, chunks))
        relabeled_streams[iri] = relabeled(items, ids)
        sources.append(FileSource(iri, str(directory), max_files_per_trigger=1))
    static = None
    if background:
        path = tmp_path / name / "bg.nt"
        path.write_text("".join(f"{s} {p} {o} .\n" for (s, p, o) in sorted(background)), encoding="utf-8")
        static = StaticFiles({f"<{EX}bg>": [str(path)]})
    got: list[dict] = []
    run(spark, text, sources, sink=CallbackSink(lambda label, rows: got.extend(rows)),
        checkpoint=tmp_path / name / "ckpt", static=static, emit=emit, metrics=open(os.devnull, "w"),
        engine=engine, rejects=tmp_path / name / "rejects", horizon=horizon,
        rules=[compile_query(r, lang="epsparql") for r in rules], every=every, window_convention=window_convention)
    metrics = [json.loads(line) for line in (tmp_path / name / "ckpt" / "metrics.jsonl").read_text().splitlines()]
    assert not any(m["rejected"] for m in metrics), metrics
    return got, relabeled_streams, metrics


def engine_for(text, **kwargs) -> str:
    """``local`` where the driver engines evaluate the query (``cep.continuous.instants.driver_refusal``),
    else ``auto`` (Spark: ``local`` would refuse)."""
    return "local" if driver_refusal(plan(compile_query(text), **kwargs)) is None else "auto"


def expected_rows(text, streams, emit, background=None, horizon=None, rules=(), every=None, window_convention=None):
    """The reference at the evaluation instants of the whole stream (up to the end-of-input close's
    last instant, ``cep.continuous.plan.end_instant``), as (instant, answer) rows."""
    query = compile_query(text)
    cplan = plan(query, emit=emit, horizon=horizon, streams=list(streams), every=every,
                 window_convention=window_convention)
    starts = {iri: [t1 for (_i, _g, t1, _t2) in items] for iri, items in streams.items()}
    ends = {iri: [t2 for (_i, _g, _t1, t2) in items] for iri, items in streams.items()}
    times = [t for values in starts.values() for t in values]
    instants = evaluation_instants(cplan, starts, min(times), end_instant(cplan, max(times)), ends)
    graphs = {None: set()}
    if background:
        graphs[f"<{EX}bg>"] = set(background)
    if horizon is None:
        results = R.evaluate_sequence(query, graphs, streams, instants, window_convention=window_convention)
    else:   # EP-SPARQL: each instant c sees the occurrences started at or after c - horizon
        compiled = [compile_query(r, lang="epsparql") for r in rules]
        results = [R.evaluate(query, graphs, {iri: [it for it in items if it[2] >= c - horizon]
                                              for iri, items in streams.items()}, c, rules=compiled)
                   for c in instants]
    construct = isinstance(query.form, A.Construct)

    def key(answer):
        head, t1, t2 = answer
        return (tuple(head) if construct else tuple(sorted(head)), t1, t2)

    rows, emitted, last = [], set(), []
    for c, answers in zip(instants, results):
        keys = [key(a) for a in answers] if isinstance(answers, list) else sorted({key(a) for a in answers}, key=repr)
        if emit == "rstream":
            out = keys
        elif emit == "istream":
            out = [k for k in keys if k not in emitted]
            emitted.update(out)
        else:
            out = sorted(set(last) - set(keys), key=repr)
        last = keys
        rows += [(c, k) for k in out]
    return rows, bool(query.modifiers)


def got_rows(rows, text):
    query = compile_query(text)
    construct = isinstance(query.form, A.Construct)
    names = ["s", "p", "o"] if construct else [v.name for v in query.form.variables]
    out = []
    for r in rows:
        head = (tuple(r[n] for n in names) if construct
                else tuple(sorted((n, r[n]) for n in names if r.get(n) is not None)))
        if "_at" not in r:   # REGISTER STREAM: a stream item, timestamped at its instant c ([c, c])
            assert set(r) == {"s", "p", "o", "t"}, r
            r = {**r, "_at": r["t"], "_start": r["t"], "_end": r["t"]}
        out.append((r["_at"], (head, r["_start"], r["_end"])))
    return out


def _check(got, expected, ordered):
    if ordered:   # ORDER BY: each instant's rows in the query's order
        assert got == expected
    else:
        assert sorted(got, key=repr) == sorted(expected, key=repr)


@pytest.mark.spark
@pytest.mark.parametrize("label, emit, text", CSPARQL, ids=[c[0] for c in CSPARQL])
def test_continuous_csparql_equals_reference(spark, tmp_path, label, emit, text):
    """Random streams in 3 micro-batches per stream on the driver engine (``cep.engines.driver.csparql``;
    Spark where it refuses the query): the rows are the reference's at every evaluation instant (a missed close, an item pruned too early, a key
    emitted twice all show)."""
    rng = random.Random(zlib.crc32(label.encode()))
    streams = {S1: random_stream(rng, 16, 14), S2: random_stream(rng, 10, 14, first_id=100)}
    background = {(SUBJECTS[0], PREDICATES[0], VALUES[0]), (SUBJECTS[1], PREDICATES[1], VALUES[2])}
    engine = engine_for(text)
    got, relabeled_streams, metrics = run_instants(spark, tmp_path, text, streams, emit=emit, engine=engine,
                                                   background=background)
    assert {m["engine"] for m in metrics} == {"local" if engine == "local" else "spark"}
    expected, ordered = expected_rows(text, relabeled_streams, emit, background)
    assert expected, "the seed gives this query no answer: the test would prove nothing"
    _check(got_rows(got, text), expected, ordered)


@pytest.mark.spark
@pytest.mark.parametrize("label, emit, text", RSEPQL, ids=[c[0] or "unrestricted" for c in RSEPQL])
def test_continuous_rsepql_equals_reference(spark, tmp_path, label, emit, text):
    """The consuming policies carry what earlier evaluations used from batch to batch."""
    rng = random.Random(zlib.crc32(label.encode()))
    streams = {S1: random_stream(rng, 24, 14)}
    if "S2" in text:
        streams[S2] = random_stream(rng, 20, 14, first_id=100)
    got, relabeled_streams, _metrics = run_instants(spark, tmp_path, text, streams, emit=emit, engine="local")
    expected, ordered = expected_rows(text, relabeled_streams, emit)
    assert expected, "the seed gives this query no answer: the test would prove nothing"
    _check(got_rows(got, text), expected, ordered)


@pytest.mark.spark
def test_continuous_rsepql_with_a_report_period(spark, tmp_path):
    """--every 3: the evaluations are at 3, 6, 9, ... (not at each content change), and a
    consuming policy consumes at those evaluations only."""
    label, emit, text = RSEPQL[-1]
    rng = random.Random(zlib.crc32(label.encode()))
    streams = {S1: random_stream(rng, 24, 14)}
    got, relabeled_streams, _metrics = run_instants(spark, tmp_path, text, streams, emit=emit, engine="local",
                                                    every=3)
    expected, ordered = expected_rows(text, relabeled_streams, emit, every=3)
    assert expected and {c for (c, _a) in expected} <= set(range(0, 30, 3))
    assert expected != expected_rows(text, relabeled_streams, emit)[0], "the period made no difference"
    _check(got_rows(got, text), expected, ordered)


@pytest.mark.spark
@pytest.mark.parametrize("label, emit, text, seed, horizon", [
    pytest.param(*RSEPQL[0], 10, None, id="rsepql-chronological"),
    # C-SPARQL takes RSEP-QL's Spark path (below): a second check, under the thorough profile
    pytest.param(*CSPARQL[0], 3, None, id="csparql-aggregates", marks=pytest.mark.thorough)])
def test_continuous_instants_on_spark_and_switching_engines(spark, tmp_path, monkeypatch, label, emit, text, seed,
                                                            horizon):
    """The Spark engine, alternating with the driver between batches (the state — items,
    consumed triples, emitted keys — passes from one to the other). C-SPARQL takes the same Spark
    path as RSEP-QL (``evaluate_sequence`` at the instants)."""
    import cep.continuous.instants

    decide, calls = cep.continuous.instants.InstantsRunner._local_first, []

    def alternate(runner, meta):
        calls.append(None)
        return decide(runner, meta) and len(calls) % 2 == 0

    monkeypatch.setattr(cep.continuous.instants.InstantsRunner, "_local_first", alternate)
    rng = random.Random(zlib.crc32(label.encode()) + seed)   # a seed with answers
    streams = {S1: random_stream(rng, 12, 12) if horizon is None else random_stream(rng, 10, 10)}
    if "S2" in text:
        streams[S2] = random_stream(rng, 8, 12, first_id=100)
    got, relabeled_streams, metrics = run_instants(spark, tmp_path, text, streams, emit=emit, engine="auto",
                                                   horizon=horizon)
    assert {m["engine"] for m in metrics} == {"spark", "local"}
    expected, ordered = expected_rows(text, relabeled_streams, emit, horizon=horizon)
    assert expected
    _check(got_rows(got, text), expected, ordered)


@pytest.mark.spark
@pytest.mark.parametrize("label, emit, text", EPSPARQL, ids=[c[0] for c in EPSPARQL])
def test_continuous_epsparql_equals_reference(spark, tmp_path, label, emit, text):
    """``--horizon D``: each instant c sees the occurrences started in [c - D, c] and ended by c (on
    Spark: ``--engine local`` refuses EP-SPARQL at evaluation instants)."""
    rng = random.Random(zlib.crc32(label.encode()))
    streams = {S1: random_stream(rng, 20, 16)}
    if "two streams" in label:
        streams[S2] = random_stream(rng, 12, 16, first_id=100)
    rules = RULES if "rules" in label else ()
    got, relabeled_streams, _metrics = run_instants(spark, tmp_path, text, streams, emit=emit, engine="auto",
                                                    horizon=4, rules=rules)
    expected, ordered = expected_rows(text, relabeled_streams, emit, horizon=4, rules=rules)
    assert expected, "the seed gives this query no answer: the test would prove nothing"
    _check(got_rows(got, text), expected, ordered)


@pytest.mark.spark
def test_continuous_rsepql_resumes_from_its_checkpoint(spark, tmp_path):
    """A second run over the same checkpoint (new files since) goes on where the first stopped: the
    consumed triples, the emitted keys and the items kept cross the restart, so the two runs
    together print what one run over all the files prints."""
    from cep.continuous.job import run
    from cep.continuous.sinks import CallbackSink
    from cep.continuous.sources import FileSource
    from tests.test_cep_continuous import relabeled, runtime_ids

    label, emit, text = RSEPQL[0]       # chronological: consumes
    rng = random.Random(zlib.crc32(label.encode()))
    items = random_stream(rng, 24, 14)
    directory = tmp_path / "in"
    first, second = [it for it in items if it[2] <= 6], [it for it in items if it[2] > 6]
    text = text.replace("FROM NAMED WINDOW :w2 ON :S2", "FROM NAMED WINDOW :w2 ON :S")
    got: list[dict] = []
    ids = runtime_ids(spark, _write(directory, [first]))
    for _run in range(2):
        if _run == 1:   # new files arrive while the job is down
            from tests.test_cep_continuous import write_stream

            later = tmp_path / "later"
            placed = write_stream(later, [first, second])
            (later / "part001.jsonl").rename(directory / "part001.jsonl")
            moved = str((directory / "part001.jsonl").resolve())
            ids.update(runtime_ids(spark, {i: (moved, line) for i, (f, line) in placed.items()
                                           if f.endswith("part001.jsonl")}))
        run(spark, text, [FileSource(S1, str(directory), max_files_per_trigger=1)],
            sink=CallbackSink(lambda label, rows: got.extend(rows)), checkpoint=tmp_path / "ckpt", emit=emit,
            metrics=open(os.devnull, "w"), engine="local", lateness=3)
    expected, _ordered = expected_rows(text, {S1: relabeled(items, ids)}, emit)
    assert expected
    _check(got_rows(got, text), expected, False)


# --- CQELS-CEP queries defined per instant: evaluated at their windows' content changes -----------

CQELS_WINDOWS = ["[RANGE 4]", "[RANGE 6 STEP 3]", "[RANGE 5 TUMBLING]", "[NOW]", "[TRIPLES 3]", "[ALL]"]
CQELS_PATTERNS = ["?s :p ?o", "SEQ({?s :p ?o}, {?s :q ?z})", "SEQ({?s :p ?o}, !{?s :q ?z}, {?s :p ?w})",
                  "SEQ(!{?s :q ?z}, {?s :p ?o})"]


def cqels(window: str, pattern: str, tail: str = "ORDER BY ?s LIMIT 50", select: str = "*") -> str:
    return (f"PREFIX : <{EX}> SELECT {select} FROM NAMED WINDOW :w ON :S {window} "
            f"WHERE {{ WINDOW :w {{ {pattern} }} }} {tail}")


def interval_stream(rng: random.Random, n: int, span: int, first_id: int = 0):
    """Point events and some interval events ([t, t + 1..4]), one or two triples each."""
    items = []
    for i in range(n):
        g = {(rng.choice(SUBJECTS), rng.choice(PREDICATES), rng.choice(VALUES)) for _ in range(rng.choice([1, 1, 2]))}
        t = rng.randint(0, span)
        items.append((first_id + i, frozenset(g), t, t + (rng.randint(1, 4) if rng.random() < 0.3 else 0)))
    return sorted(items, key=lambda it: (it[2], it[0]))


@pytest.mark.parametrize("window", CQELS_WINDOWS)
def test_cqels_content_changes_are_every_change(window):
    """The schedule of a CQELS-CEP query evaluated per instant, checked against the definition: at
    every instant t, ⟦Q, t⟧ equals ⟦Q, c⟧ at the last evaluation instant c ≤ t (nothing changes
    between two of them), on random streams with interval events and every kind of negation."""
    changed = 0
    for pattern in CQELS_PATTERNS:
        query = compile_query(cqels(window, pattern, tail=""))
        cplan = replace(plan(compile_query(cqels(window, pattern))), query=query)
        assert cplan.cqels and cplan.mode == "instants"
        for seed in range(6):
            items = interval_stream(random.Random(seed), 12, 16)
            starts = {S1: [t1 for (_i, _g, t1, _t2) in items]}
            ends = {S1: [t2 for (_i, _g, _t1, t2) in items]}
            lo, hi = min(starts[S1]), max(ends[S1]) + 12
            instants = evaluation_instants(cplan, starts, lo, hi, ends)
            held, c = set(), None          # before the first change: no answer
            for t in range(lo, hi + 1):
                now = R.evaluate(query, {None: set()}, {S1: items}, at=t)
                if t in instants:
                    changed += now != held
                    held, c = now, t
                assert now == held, (pattern, seed, t, c)
    assert changed, "no answer ever changed: the test would prove nothing"


@pytest.mark.spark
@pytest.mark.parametrize("label, emit, text", [
    ("ORDER BY / LIMIT per instant", "istream",
     cqels("[RANGE 5]", "SEQ({?s :p ?o}, !{?s :q ?z}, {?s :p ?w})", "ORDER BY DESC(?o) ?s LIMIT 2")),
    ("NOW() in a FILTER and a BIND, STEP", "rstream",
     cqels("[RANGE 6 STEP 2]", "SEQ({?s :p ?o}, {?s :q ?z})", "", "?s ?o ?n").replace(
         "} }", "} BIND (NOW() AS ?n) FILTER (?n > \"1970-01-01T00:00:00.003Z\"^^<" + XSD + "dateTime>) }")),
    ("GROUP BY over a SEQ, HAVING", "istream",
     cqels("[RANGE 6]", "SEQ({?s :p ?o}, {?s :q ?z})", "GROUP BY ?s HAVING (COUNT(*) > 1)",
           "?s (COUNT(*) AS ?n) (MAX(?o) AS ?m)")),
    ("a sub-query's LIMIT, interval events, dstream", "dstream",
     f"PREFIX : <{EX}> SELECT ?s ?o FROM NAMED WINDOW :w ON :S [RANGE 4] WHERE {{ WINDOW :w {{ ?s :p ?o }} "
     f"{{ SELECT ?s WHERE {{ VALUES ?s {{ {SUBJECTS[0]} {SUBJECTS[1]} }} }} ORDER BY ?s LIMIT 1 }} }} "
     "ORDER BY ?o"),
], ids=lambda x: x if isinstance(x, str) and len(x) < 60 else None)
def test_continuous_cqels_per_instant_equals_reference(spark, tmp_path, label, emit, text):
    """CQELS-CEP queries whose answers are defined per instant run continuously (micro-batches,
    state; the driver engine where it takes the query): the rows are the reference's at every content change."""
    assert plan(compile_query(text)).cqels
    rng = random.Random(zlib.crc32(label.encode()))
    streams = {S1: interval_stream(rng, 24, 14)}
    got, relabeled_streams, _metrics = run_instants(spark, tmp_path, text, streams, emit=emit,
                                                    engine=engine_for(text))
    expected, ordered = expected_rows(text, relabeled_streams, emit)
    assert expected, "the seed gives this query no answer: the test would prove nothing"
    _check(got_rows(got, text), expected, ordered)
