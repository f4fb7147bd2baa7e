"""C-SPARQL window conventions (issue 37; ``cep.algebra.WindowConvention``, docs/csparql.md
"Window conventions"): left-closed windows, a window start t0 and no report for empty windows.

Each option on items stamped exactly on a window's opening o and close c, in the reference; the
Spark engine against the reference at every asked instant (``--at``) and the continuous runtime
(driver and Spark engines) against the reference at the evaluation instants; a random
differential test; the refusals and the command line's errors.
"""
from __future__ import annotations

import json
import os
import random
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cep import algebra as A
from cep import compile_query
from cep.continuous.plan import ContinuousError, end_instant, evaluation_instants, keep_from, plan
from cep.engines import reference as R
from tests.hypothesis_profiles import examples

EX = "http://example.org/cw#"
S1, S2 = f"<{EX}S>", f"<{EX}S2>"
XSD = "http://www.w3.org/2001/XMLSchema#"
LEFT, RIGHT = A.LEFT_CLOSED, A.RIGHT_CLOSED
ENGINE = A.CSPARQL_ENGINE_WINDOWS


def canonical(row) -> str:
    """A sort key of answer rows whose mappings are frozensets: the repr of a frozenset follows its
    iteration order, which two equal sets built in different orders need not share."""
    return repr(tuple(sorted(x) if isinstance(x, frozenset) else x for x in row))


def num(n: int) -> str:
    return f'"{n}"^^<{XSD}integer>'


def ex(name: str) -> str:
    return f"<{EX}{name}>"


def items(*times, first: int = 0, subject: str = "a"):
    """One item per time: (a :p n) with n its time, so an answer says which items a window held."""
    return [(first + k, frozenset({(ex(subject), ex("p"), num(t))}), t, t) for k, t in enumerate(times)]


#: the values a window held, as a set of times (each item's value is its time)
SELECT = f"PREFIX : <{EX}> SELECT ?v FROM STREAM :S WIN WHERE {{ ?s :p ?v }}"
#: an aggregate over the implicit group: one row at every instant, AVG = 0 over nothing
COUNT = f"PREFIX : <{EX}> SELECT (COUNT(*) AS ?n) FROM STREAM :S WIN WHERE {{ ?s :p ?v }}"


def held(window: str, stream, at: int, convention=None) -> set[int]:
    query = compile_query(SELECT.replace("WIN", window))
    out = R.evaluate(query, {None: set()}, {S1: stream}, at, window_convention=convention)
    return {int(dict(mu)["v"].split('"')[1]) for (mu, _t1, _t2) in out}


# --- the options on boundary-stamped items (reference) -------------------------------------------

def test_bounds_on_the_opening_and_the_close():
    """RANGE 10 STEP 5 at 15 (window o = 5, c = 15): items at 4, 5, 6, 14, 15, 16. Right-closed
    (5, 15] holds 6..15; left-closed [5, 15) holds 5..14. The sliding RANGE 3 and TRIPLES / ALL
    follow: τ ≤ c or τ < c."""
    stream = items(4, 5, 6, 14, 15, 16)
    assert held("[RANGE 10 STEP 5]", stream, 15) == {6, 14, 15}
    assert held("[RANGE 10 STEP 5]", stream, 15, A.WindowConvention(LEFT)) == {5, 6, 14}
    assert held("[RANGE 10 STEP 5]", stream, 17, A.WindowConvention(LEFT)) == {5, 6, 14}   # still the close 15
    assert held("[RANGE 10 TUMBLING]", stream, 10, A.WindowConvention(LEFT)) == {4, 5, 6}
    assert held("[RANGE 10 TUMBLING]", stream, 10) == {4, 5, 6}     # (0, 10] and [0, 10): no item on 0 or 10
    assert held("[RANGE 3]", stream, 15) == {14, 15} and held("[RANGE 3]", stream, 15, A.WindowConvention(LEFT)) == {14}
    assert held("[TRIPLES 2]", stream, 15) == {14, 15}
    assert held("[TRIPLES 2]", stream, 15, A.WindowConvention(LEFT)) == {6, 14}
    assert held("[ALL]", stream, 5) == {4, 5} and held("[ALL]", stream, 5, A.WindowConvention(LEFT)) == {4}


def test_window_start_moves_the_closes():
    """t0 = 2: RANGE 10 STEP 5 closes at 2 + 5k. At 13 the last close is 12: (2, 12] or [2, 12);
    items on 2 and 12 are the boundaries; t0 = 7 is the same phase as t0 = 2."""
    stream = items(1, 2, 3, 11, 12, 13)
    assert held("[RANGE 10 STEP 5]", stream, 13, A.WindowConvention(start=2)) == {3, 11, 12}
    assert held("[RANGE 10 STEP 5]", stream, 13, A.WindowConvention(LEFT, 2)) == {2, 3, 11}
    assert held("[RANGE 10 STEP 5]", stream, 13, A.WindowConvention(LEFT, 7)) == {2, 3, 11}
    assert held("[RANGE 10 STEP 5]", stream, 13, A.WindowConvention(LEFT, -3)) == {2, 3, 11}
    assert held("[RANGE 10 STEP 5]", stream, 13) == {1, 2, 3}                       # the close 10: (0, 10]
    assert held("[RANGE 10 STEP 5]", stream, 11, A.WindowConvention(start=2)) == {1, 2, 3}   # the close 7
    # COMPUTED EVERY 5 with t0 = 3: reports at 3 + 5k, each answer stamped with its instant
    query = compile_query(f"REGISTER QUERY q COMPUTED EVERY 5 AS PREFIX : <{EX}> SELECT ?v FROM STREAM :S [RANGE 4] "
                          "WHERE { ?s :p ?v }")
    assert R.evaluate(query, {None: set()}, {S1: stream}, 12, window_convention=A.WindowConvention(start=3)) == set()
    out = R.evaluate(query, {None: set()}, {S1: stream}, 14, window_convention=A.WindowConvention(start=3))
    assert {(dict(mu)["v"], t1, t2) for (mu, t1, t2) in out} == {(num(11), 13, 13), (num(12), 13, 13),
                                                                 (num(13), 13, 13)}


def test_empty_windows_report_or_skip():
    """COUNT over the implicit group: one row of 0 when the window is empty (report), none with
    skip. With two streams an instant is skipped only when both windows are empty, and answered
    as usual when one holds a triple that WHERE does not match."""
    query = compile_query(COUNT.replace("WIN", "[RANGE 5 TUMBLING]"))
    stream = {S1: items(5, 7)}

    def count(at, convention=None, streams=stream, q=query):
        return sorted(dict(mu)["n"] for (mu, _t1, _t2) in R.evaluate(q, {None: set()}, streams, at,
                                                                     window_convention=convention))

    assert count(0) == [num(0)] and count(5) == [num(1)] and count(10) == [num(1)] and count(15) == [num(0)]
    skip = A.WindowConvention(empty=A.SKIP)
    assert count(0, skip) == [] and count(5, skip) == [num(1)] and count(15, skip) == []
    assert count(5, ENGINE) == [] and count(10, ENGINE) == [num(2)] and count(15, ENGINE) == []   # [0,5), [5,10)
    two = compile_query(f"PREFIX : <{EX}> SELECT (COUNT(*) AS ?n) FROM STREAM :S [RANGE 5 TUMBLING] "
                        f"FROM NAMED STREAM :S2 [RANGE 5 TUMBLING] WHERE {{ ?s :p ?v }}")
    other = {(0, frozenset({(ex("b"), ex("q"), ex("c"))}), 12, 12)}
    streams = {S1: items(5, 7), S2: list(other)}
    assert count(15, skip, streams, two) == [num(0)]          # :S2 holds a triple (named, unmatched): answered
    assert count(20, skip, streams, two) == []                # both empty


def test_left_closed_at_c_is_right_closed_at_c_minus_one():
    """Over integer ticks [c − ρ, c) with closes at t0 + kσ holds what (c − 1 − ρ, c − 1] with
    closes at t0 − 1 + kσ holds: the answers at t are those at t − 1, reported one tick later."""
    rng = random.Random(37)
    for text in RANDOM_QUERIES:
        query = compile_query(text)
        for _round in range(6):
            streams = {S1: random_items(rng, 9, 14), S2: random_items(rng, 6, 14, first=100)}
            t0, at = rng.randint(-4, 4), rng.randint(0, 16)
            left = R.evaluate(query, {None: set()}, streams, at, window_convention=A.WindowConvention(LEFT, t0))
            right = R.evaluate(query, {None: set()}, streams, at - 1, window_convention=A.WindowConvention(RIGHT, t0 - 1))
            assert _shifted(left, -1) == _shifted(right, 0), (text, t0, at)


def _shifted(answers, by: int):
    return sorted(((mu, t1 + by, t2 + by) for (mu, t1, t2) in answers), key=canonical)


# --- refusals -------------------------------------------------------------------------------------

def test_refusals():
    with pytest.raises(A.WindowConventionError, match="window bounds must be one of right-closed, left-closed"):
        A.WindowConvention("closed")
    with pytest.raises(A.WindowConventionError, match="empty windows must be one of report, skip"):
        A.WindowConvention(empty="drop")
    with pytest.raises(A.WindowConventionError, match="integer number of ticks"):
        A.WindowConvention(start=1.5)
    cqels = compile_query(f"PREFIX : <{EX}> SELECT ?s WHERE {{ WINDOW :w ON :S [RANGE 5] {{ ?s :p ?o }} }}")
    for convention in (A.WindowConvention(LEFT), A.WindowConvention(start=1), A.WindowConvention(empty=A.SKIP)):
        with pytest.raises(A.WindowConventionError, match="apply to C-SPARQL windows .* a CQELS-CEP query"):
            R.evaluate(cqels, {None: set()}, {S1: []}, 5, window_convention=convention)
        with pytest.raises(A.WindowConventionError, match="a CQELS-CEP query"):
            plan(cqels, window_convention=convention)
    assert R.evaluate(cqels, {None: set()}, {S1: []}, 5, window_convention=A.RSEPQL_WINDOWS) == set()
    now = compile_query(f"PREFIX : <{EX}> SELECT ?s FROM STREAM :S [NOW] WHERE {{ ?s :p ?o }}")
    with pytest.raises(A.WindowConventionError, match=r"left-closed window \[c, c\) holds none"):
        R.evaluate(now, {None: set()}, {S1: []}, 5, window_convention=ENGINE)
    nothing = compile_query(f"PREFIX : <{EX}> SELECT ?s ?n WHERE {{ ?s :p ?o }} AGGREGATE {{ (?n, COUNT, {{?s}}) }}")
    with pytest.raises(A.WindowConventionError, match="reads no stream window"):
        R.evaluate(nothing, {None: set()}, {}, 5, window_convention=ENGINE)
    assert R.evaluate(nothing, {None: set()}, {}, 5, window_convention=A.WindowConvention(LEFT)) == set()
    from cep.engines.driver.answers import refusal

    assert "apply to C-SPARQL windows" in refusal(cqels, A.WindowConvention(LEFT))
    assert refusal(compile_query(SELECT.replace("WIN", "[RANGE 5]")), ENGINE) is None   # the driver's C-SPARQL


# --- the continuous plan: instants and state (no Spark) -----------------------------------------------

def test_continuous_instants_and_state_follow_the_convention():
    def csparql(window, every=""):
        head = f"REGISTER QUERY q {every} AS " if every else ""
        return compile_query(head + f"PREFIX : <{EX}> SELECT ?s FROM STREAM :S {window} WHERE {{ ?s ?p ?o }}")

    step = csparql("[RANGE 6 STEP 4]")
    assert evaluation_instants(plan(step), {S1: [1, 9]}, 1, 17) == [4, 8, 12, 16]
    assert evaluation_instants(plan(step, window_convention=A.WindowConvention(start=3)), {S1: [1]}, 1, 17) == \
        [3, 7, 11, 15]
    assert evaluation_instants(plan(step, window_convention=A.WindowConvention(start=-3)), {S1: [1]}, 1, 17) == \
        [1, 5, 9, 13, 17]
    sliding = csparql("[RANGE 5]")   # arrivals and leavings: one tick later when left-closed
    assert evaluation_instants(plan(sliding), {S1: [1, 3]}, 0, 12) == [1, 3, 6, 8]
    assert evaluation_instants(plan(sliding, window_convention=ENGINE), {S1: [1, 3]}, 0, 12) == [2, 4, 7, 9]
    every = csparql("[RANGE 5]", "COMPUTED EVERY 3")
    assert evaluation_instants(plan(every, window_convention=A.WindowConvention(start=1)), {S1: [1]}, 1, 10) == \
        [1, 4, 7, 10]
    # the state: after 9, the close ≥ 10 of RANGE 6 STEP 4 (closes 12, ...) needs τ > 6, or ≥ 6 left-closed;
    # with t0 = 3 the next close is 11: τ > 5, or ≥ 5
    assert keep_from(plan(step), S1, 9) == 3     # the close 8 (an evaluation at 10 of another window's)
    assert keep_from(plan(step, window_convention=A.WindowConvention(LEFT)), S1, 9) == 2
    assert keep_from(plan(step, window_convention=A.WindowConvention(start=3)), S1, 9) == 2
    assert keep_from(plan(step, window_convention=A.WindowConvention(LEFT, 3)), S1, 9) == 1
    assert plan(step, window_convention=ENGINE).convention == ENGINE


def test_the_end_of_input_closes_every_window_over_the_last_items():
    """``end_instant``: right-closed, the largest event time M; left-closed [c − ρ, c), the first close
    after M of every window (each holds the items stamped M there), then the next report instant."""
    def csparql(windows, every=""):
        head = f"REGISTER QUERY q {every} AS " if every else ""
        return compile_query(head + f"PREFIX : <{EX}> SELECT ?s FROM STREAM :S {windows} WHERE {{ ?s ?p ?o }}")

    step, sliding = csparql("[RANGE 10 STEP 5]"), csparql("[RANGE 5]")
    both = csparql("[RANGE 10 STEP 5] FROM STREAM :S2 [TRIPLES 2]")
    every = csparql("[RANGE 6] FROM STREAM :S2 [TRIPLES 2]", "COMPUTED EVERY 4")
    for query in (step, sliding, both, every):
        assert end_instant(plan(query), 45) == 45
    assert [end_instant(plan(step, window_convention=ENGINE), m) for m in (44, 45, 46)] == [45, 50, 50]
    assert end_instant(plan(step, window_convention=A.WindowConvention(LEFT, -2)), 43) == 48
    assert [end_instant(plan(sliding, window_convention=ENGINE), m) for m in (44, 45)] == [45, 46]
    assert end_instant(plan(both, window_convention=ENGINE), 44) == 45
    assert [end_instant(plan(every, window_convention=ENGINE), m) for m in (42, 43, 44)] == [44, 44, 48]
    assert end_instant(plan(every, window_convention=A.WindowConvention(LEFT, 1)), 44) == 45
    # the item stamped M is in the window closing at end_instant, and in none closing before
    stream = items(30, 45)
    for query, window in ((step, "[RANGE 10 STEP 5]"), (sliding, "[RANGE 5]")):
        last = end_instant(plan(query, window_convention=ENGINE), 45)
        assert 45 in held(window, stream, last, ENGINE)
        assert all(45 not in held(window, stream, c, ENGINE) for c in range(40, last))


def test_a_checkpoint_keeps_its_window_convention(tmp_path):
    """A restart on a checkpoint written under another window convention is refused, saying both."""
    from cep.continuous.instants import InstantsRunner
    from cep.continuous.state import Meta, StateStore

    query = compile_query(COUNT.replace("WIN", "[RANGE 10 STEP 5]"))
    StateStore(None, tmp_path, {"bounds": LEFT, "start": 0, "empty": A.SKIP}).write("0000000000", {}, Meta(done=4))

    def runner(convention):
        return InstantsRunner(None, plan(query, window_convention=convention), None, None, tmp_path, None, None,
                              None, {}, "auto")

    assert runner(ENGINE).plan.convention == ENGINE
    for other in (A.RSEPQL_WINDOWS, A.WindowConvention(LEFT, 0), A.WindowConvention(LEFT, 5, A.SKIP)):
        with pytest.raises(ContinuousError, match="written with windows left-closed, start 0, empty windows skip; "
                                                  f"this run asks for {other}"):
            runner(other)


# --- the command line: errors before anything runs (no Spark) -----------------------------------------

def _files(tmp_path, text, stream=None):
    (tmp_path / "q.rq").write_text(text, encoding="utf-8")
    lines = [json.dumps({"s": f"<{EX}a>", "p": f"<{EX}p>", "o": num(t), "t": t}) for t in (stream or (0, 5, 10))]
    (tmp_path / "s.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [str(tmp_path / "q.rq"), "--stream", f"{S1}={tmp_path / 's.jsonl'}"]


def test_command_line_errors(tmp_path, capsys):
    from jobs import query as job

    args = _files(tmp_path, SELECT.replace("WIN", "[RANGE 10 STEP 5]"))
    with pytest.raises(SystemExit) as exit_:
        job.main(args + ["--at", "5", "--window-bounds", "closed"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--window-bounds: invalid choice: 'closed'" in err and "right-closed" in err and "left-closed" in err
    with pytest.raises(SystemExit) as exit_:
        job.main(args + ["--at", "5", "--empty-windows", "drop"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--empty-windows: invalid choice: 'drop'" in err and "skip" in err
    assert job.main(args + ["--at", "5", "--window-start", "soon"]) == 2
    assert "--window-start 'soon': expected an integer number of ms or an ISO-8601 date-time" in capsys.readouterr().err
    assert job.main(args + ["--at", "5", "--csparql-compat", "--engine", "local"]) == 0   # on the driver: [-5, 5)
    assert capsys.readouterr().out.splitlines()[1:] == [f"{num(0)}\t{num(5)}\t{num(5)}"]
    sliding = _files(tmp_path, SELECT.replace("WIN", "[RANGE 5]"))
    assert job.main(sliding + ["--at", "5", "--window-start", "3", "--engine", "local"]) == 0
    err = capsys.readouterr().err
    assert "warning: --window-start has no effect: the query has no STEP or TUMBLING window" in err
    now = _files(tmp_path, SELECT.replace("WIN", "[NOW]"))
    assert job.main(now + ["--at", "5", "--csparql-compat"]) == 2
    assert "left-closed window [c, c) holds none" in capsys.readouterr().err
    cqels = _files(tmp_path, f"PREFIX : <{EX}> SELECT ?s WHERE {{ WINDOW :w ON :S [RANGE 5] {{ ?s :p ?o }} }}")
    for option in (["--csparql-compat"], ["--window-start", "3"], ["--window-bounds", "left-closed"]):
        assert job.main(cqels + ["--at", "5", *option]) == 2
        assert "apply to C-SPARQL windows (FROM STREAM); this is a CQELS-CEP query" in capsys.readouterr().err
    assert job.main(cqels + ["--continuous", "--checkpoint", str(tmp_path / "c"), "--empty-windows", "skip"]) == 2
    assert "a CQELS-CEP query" in capsys.readouterr().err


# --- Spark against the reference ------------------------------------------------------------------

#: the conventions the Spark tests run: each option alone, and all three
CONVENTIONS = [A.RSEPQL_WINDOWS, A.WindowConvention(LEFT), A.WindowConvention(start=3),
               A.WindowConvention(empty=A.SKIP), A.WindowConvention(LEFT, -2, A.SKIP)]

#: the boundary case: items on the opening and the close of RANGE 10 STEP 5 windows (closes at 5k,
#: or 5k + 3 / 5k − 2), a gap that leaves the windows empty, and both streams
BOUNDARY_TIMES = (0, 3, 5, 8, 10, 13, 15, 40, 43, 45)
BOUNDARY_QUERIES = [
    f"""PREFIX : <{EX}> SELECT (COUNT(*) AS ?n) (AVG(?v) AS ?avg) (MAX(?v) AS ?max)
FROM STREAM :S [RANGE 10 STEP 5] WHERE {{ ?s :p ?v }}""",
    f"""PREFIX : <{EX}> SELECT ?v ?w FROM STREAM :S [RANGE 10 STEP 5] FROM STREAM :S2 [RANGE 5 TUMBLING]
WHERE {{ ?s :p ?v OPTIONAL {{ ?s :q ?w }} }}""",
    f"""REGISTER QUERY q COMPUTED EVERY 5 AS PREFIX : <{EX}> SELECT ?s ?n FROM STREAM :S [RANGE 6]
FROM STREAM :S2 [TRIPLES 2] WHERE {{ ?s ?p ?v }} AGGREGATE {{ (?n, COUNT, {{?s}}) }}""",
]
#: instants on and beside the closes of every convention above (5k, 5k + 3, 5k − 2), before, inside
#: and after the gap
BOUNDARY_INSTANTS = [-1, 0, 5, 8, 15, 40, 45]


def boundary_streams():
    s2 = [(100 + k, frozenset({(ex("a"), ex("q"), num(t))}), t, t) for k, t in enumerate((5, 10, 30))]
    return {S1: items(*BOUNDARY_TIMES), S2: s2}


def _spark_inputs(spark, streams):
    from rdfcore.hashing import term_id
    from rdfcore.schema import ID, TERM
    from tests.test_cep_differential import stream_frame

    words = {x for its in streams.values() for (_i, g, _a, _b) in its for tr in g for x in tr}
    frames = {iri: stream_frame(spark, its) for iri, its in streams.items()}
    background = {None: spark.createDataFrame([], "s long, p long, o long")}
    return frames, background, words, lambda extra: spark.createDataFrame(
        sorted({(term_id(w), w) for w in words | extra}), f"{ID} long, {TERM} string")


def _spark_at_instants(spark, cases, streams, keyed: bool):
    """{key: [(instant, mapping, t1, t2)]} of each (query text, convention, instants) in ``cases``,
    on Spark: ``keyed``: ``evaluate_at_instants`` (every instant in one plan keyed by the instant,
    ``cep.engines.spark.keyed``); else ``evaluate`` at each instant (what ``evaluate_each`` does,
    without materialising each), each case collected in one job."""
    from pyspark.sql import functions as F

    from cep.engines.columns import column_var
    from cep.engines.spark.evaluate import AT, evaluate, evaluate_at_instants, keyed_refusal
    from rdfcore.schema import ID, TERM, T_END, T_START

    frames, background, words, dictionary_of = _spark_inputs(spark, streams)
    out, computed = {}, []
    for key, (text, convention, instants) in cases.items():
        query = compile_query(text)
        dictionary = dictionary_of(set(A.constants(query.form)))
        if keyed:
            assert keyed_refusal(query) is None, text
            out[key] = evaluate_at_instants(query, background, frames, instants, dictionary=dictionary,
                                            terms=computed, window_convention=convention)
            continue
        parts = [evaluate(query, background, frames, at, dictionary=dictionary, terms=computed,
                          window_convention=convention).withColumn(AT, F.lit(at).cast("long")) for at in instants]
        out[key] = parts[0]
        for part in parts[1:]:
            out[key] = out[key].unionByName(part)
    ids = {}
    if computed:
        terms = computed[0]
        for more in computed[1:]:
            terms = terms.unionByName(more)
        ids.update({r[ID]: r[TERM] for r in terms.collect()})
    from rdfcore.hashing import term_id

    ids.update({term_id(w): w for w in words})
    got = {}
    for key, frame in out.items():   # one job per case: one union of every case's plans plans slowly
        rows = frame.select(F.col(AT).alias("_at"), F.to_json(F.struct(
            *[c for c in frame.columns if c not in (T_START, T_END, AT)])).alias("_m"), T_START, T_END).collect()
        got[key] = [(r["_at"], frozenset((column_var(k), ids.get(v, v)) for k, v in json.loads(r["_m"]).items()
                                         if v is not None), r[T_START], r[T_END]) for r in rows]
    for terms in computed:
        terms.unpersist()
    return got


def _reference_at_instants(text, convention, instants, streams):
    query = compile_query(text)
    results = R.evaluate_sequence(query, {None: set()}, streams, instants, window_convention=convention)
    return sorted(((at, mu, t1, t2) for at, answers in zip(instants, results) for (mu, t1, t2) in answers), key=canonical)


@pytest.mark.spark
def test_boundary_items_spark_equals_reference_at_every_instant(spark):
    """Each convention, each query, at every instant from before the first item to past the last:
    Spark's rows, every instant in one plan, are the reference's (the driver's:
    tests/test_csparql_driver.py; instant by instant on Spark: the random test below)."""
    streams = boundary_streams()
    # every convention on the aggregate; the others under the three options together
    cases = {(q, c): (text, convention, BOUNDARY_INSTANTS) for q, text in enumerate(BOUNDARY_QUERIES)
             for c, convention in enumerate(CONVENTIONS) if q == 0 or c == len(CONVENTIONS) - 1}
    got = _spark_at_instants(spark, cases, streams, keyed=True)
    for (q, c), (text, convention, instants) in cases.items():
        expected = _reference_at_instants(text, convention, instants, streams)
        assert sorted(got[(q, c)], key=canonical) == expected, (text, convention)
    # the options do change the answers here (a test of equal nothings would prove nothing)
    answers = {c: _reference_at_instants(BOUNDARY_QUERIES[0], conv, BOUNDARY_INSTANTS, streams)
               for c, conv in enumerate(CONVENTIONS)}
    assert len({repr(a) for a in answers.values()}) == len(CONVENTIONS)


#: random C-SPARQL queries (sliding, STEP, TUMBLING, TRIPLES, ALL windows, COMPUTED EVERY, timestamp(),
#: GRAPH over a named stream, aggregates) for the differential tests
RANDOM_QUERIES = [
    f"""PREFIX : <{EX}> SELECT ?s (COUNT(*) AS ?n) (SUM(?v) AS ?sum) FROM STREAM :S [RANGE 6 STEP 3]
FROM STREAM :S2 [RANGE 4 TUMBLING] WHERE {{ ?s :p ?v }} GROUP BY ?s""",
    f"""PREFIX : <{EX}> SELECT ?s ?o FROM STREAM :S [RANGE 5] FROM STREAM :S2 [TRIPLES 3]
WHERE {{ ?s :p ?o . ?s :q ?z FILTER (timestamp(?o) >= timestamp(?z)) }}""",
    f"""REGISTER QUERY q COMPUTED EVERY 4 AS PREFIX : <{EX}> SELECT ?g ?s ?o FROM NAMED STREAM :S [RANGE 7 STEP 2]
FROM STREAM :S2 [ALL] WHERE {{ {{ ?s :q ?o }} UNION {{ GRAPH ?g {{ ?s :p ?o }} }} }}""",
    f"""PREFIX : <{EX}> SELECT (COUNT(?o) AS ?n) (MIN(?o) AS ?m) FROM STREAM :S [RANGE 3 TUMBLING] WHERE {{ ?s ?p ?o }}""",
]
SUBJECTS = [ex(n) for n in "abc"]
VALUES = [num(v) for v in (1, 2, 5)]


def random_items(rng: random.Random, n: int, span: int, first: int = 0):
    out = []
    for k in range(n):
        t = rng.randint(0, span)
        out.append((first + k, frozenset({(rng.choice(SUBJECTS), rng.choice([ex("p"), ex("q")]),
                                           rng.choice(VALUES + SUBJECTS))}), t, t))
    return sorted(out, key=lambda it: it[2])


@st.composite
def random_cases(draw):
    def stream(first):
        rows = draw(st.lists(st.tuples(st.sampled_from(SUBJECTS), st.sampled_from([ex("p"), ex("q")]),
                                       st.sampled_from(VALUES + SUBJECTS), st.integers(0, 12)), max_size=8))
        return [(first + k, frozenset({r[:3]}), r[3], r[3]) for k, r in enumerate(sorted(rows, key=lambda r: r[3]))]
    convention = A.WindowConvention(draw(st.sampled_from(A.BOUNDS)), draw(st.integers(-4, 4)),
                                    draw(st.sampled_from(A.EMPTY_WINDOWS)))
    instants = sorted(draw(st.sets(st.integers(-1, 15), min_size=1, max_size=3)))
    return {S1: stream(0), S2: stream(100)}, convention, instants


@pytest.mark.spark
@settings(max_examples=examples(1), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                         HealthCheck.too_slow])
@given(drawn=random_cases())
@pytest.mark.thorough   # the boundary items above check each convention on Spark at every instant
@pytest.mark.parametrize("keyed", [True, False], ids=["every instant in one plan", "instant by instant"])
def test_random_conventions_spark_equals_reference(spark, keyed, drawn):
    streams, convention, instants = drawn
    cases = {i: (text, convention, instants) for i, text in enumerate(RANDOM_QUERIES)}
    got = _spark_at_instants(spark, cases, streams, keyed)
    for i, text in enumerate(RANDOM_QUERIES):
        assert sorted(got[i], key=canonical) == _reference_at_instants(text, convention, instants, streams), \
            (text, convention, instants)


# --- the job: --at and --continuous -----------------------------------------------------------------

def _job_rows(lines) -> list[tuple]:
    return sorted(tuple(line.split("\t")) for line in lines[1:])


@pytest.mark.spark
def test_query_job_at_instants_with_the_options(spark, tmp_path, capsys):
    """``query --at`` with the options gives the reference's rows at every asked instant."""
    from jobs import query as job

    text = BOUNDARY_QUERIES[0]
    args = _files(tmp_path, text, BOUNDARY_TIMES)
    instants = [0, 5, 10, 15, 50]
    stream = {S1: [(k, frozenset({(ex("a"), ex("p"), num(t))}), t, t) for k, t in enumerate(BOUNDARY_TIMES)]}
    counts = []
    for options, convention in ((["--csparql-compat", "--window-start", "-2"], A.WindowConvention(LEFT, -2, A.SKIP)),
                                (["--window-bounds", "left-closed"], A.WindowConvention(LEFT))):
        assert job.main(args + ["--at", ",".join(map(str, instants)), "--engine", "spark", *options]) == 0
        got = _job_rows(capsys.readouterr().out.splitlines())
        query = compile_query(text)
        expected = []
        for at, answers in zip(instants, R.evaluate_sequence(query, {None: set()}, stream, instants,
                                                             window_convention=convention)):
            for (mu, t1, t2) in answers:
                row = dict(mu)
                expected.append((f'"{at}"^^<{XSD}integer>', row["n"], row.get("avg", ""), row.get("max", ""),
                                 f'"{t1}"^^<{XSD}integer>', f'"{t2}"^^<{XSD}integer>'))
        assert got == sorted(expected), options
        counts.append(len(got))
    # closes at -2 + 5k with skip: at 0 the window [-12, -2) is empty, no row; reported, a COUNT of 0
    assert counts == [len(instants) - 1, len(instants)]


@pytest.mark.spark
# Spark's per-batch engine under the thorough profile: the same Spark path (evaluate_sequence at
# the instants, the runner's state) runs in tests/test_continuous_instants.py's alternating run
@pytest.mark.parametrize("engine", ["local", pytest.param("spark", marks=pytest.mark.thorough)])
def test_continuous_with_the_options_equals_reference(spark, tmp_path, engine):
    """``--continuous`` (the runtime ``query --continuous`` runs) with each option: on the driver's
    engine and on Spark, the rows are the reference's at the evaluation instants, which the
    convention moves; the partial, empty window at the first event time is not reported with skip."""
    from tests.test_continuous_instants import _check, expected_rows, got_rows, run_instants

    rng = random.Random(zlib.crc32(engine.encode()))
    text = RANDOM_QUERIES[0] if engine == "local" else BOUNDARY_QUERIES[0]
    streams = {S1: random_items(rng, 14, 14), S2: random_items(rng, 8, 14, first=100)} if engine == "local" \
        else {S1: items(*BOUNDARY_TIMES)}
    conventions = CONVENTIONS[1:4] if engine == "local" else [ENGINE]
    for k, convention in enumerate(conventions):
        got, relabeled, metrics = run_instants(spark, tmp_path, text, streams, emit="rstream", engine=engine,
                                               name=f"run{k}", window_convention=convention)
        assert {m["engine"] for m in metrics} == {engine}
        expected, ordered = expected_rows(text, relabeled, "rstream", window_convention=convention)
        assert expected
        _check(got_rows(got, text), expected, ordered)
        if engine == "spark":   # the close at the first event time, 0, holds [-10, 0): empty, no row (COUNT 0)
            assert min(at for at, _row in expected) == 5
            # the last item, 45, is on a close: the end of input goes on to the close 50, [40, 50)
            assert max(at for at, _row in expected) == 50


@pytest.mark.spark
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_left_closed_windows_take_an_item_stamped_at_the_last_evaluated_instant(spark, tmp_path, engine):
    """Under left-closed windows an item stamped τ first counts at τ + 1: once the instants up to
    ``done`` are evaluated, an item stamped ``done`` changes none of them and is taken, and one
    stamped ``done − 1`` is late. Two runs of one checkpoint; the second brings both. The rows are
    the reference's over the items taken, at every evaluation instant — also the instant 6 at which
    the first item leaves, which the first batch (up to 5) had to keep although no window after 5
    holds it (``keep_from``)."""
    from cep.continuous.job import run
    from cep.continuous.sinks import CallbackSink
    from cep.continuous.sources import FileSource
    from tests.test_cep_continuous import relabeled, runtime_ids, write_stream
    from tests.test_continuous_instants import expected_rows, got_rows

    text = SELECT.replace("WIN", "[RANGE 4]")
    convention = A.WindowConvention(LEFT)
    cplan = plan(compile_query(text), window_convention=convention)
    first = items(1, 3, 6)
    done = end_instant(cplan, 6)                 # the first run closes its input: 7, [3, 7) holds 3 and 6
    assert done == 7
    later = items(done, done - 1, first=10)      # 7 is taken, 6 is late
    directory, ckpt, rejects = tmp_path / "in", tmp_path / "ckpt", tmp_path / "rejects"
    got: list = []

    def once():
        return run(spark, text, [FileSource(S1, str(directory))], sink=CallbackSink(lambda _l, rows: got.extend(rows)),
                   checkpoint=ckpt, rejects=rejects, emit="rstream", metrics=open(os.devnull, "w"), engine=engine,
                   window_convention=convention)

    placed = write_stream(directory, [first])
    assert once().rejected == {}
    staged = write_stream(tmp_path / "staged", [later])
    for item, (path, line) in staged.items():
        placed[item] = (str((directory / f"later-{Path(path).name}").resolve()), line)
    for path in (tmp_path / "staged").glob("*.jsonl"):
        (directory / f"later-{path.name}").write_text(path.read_text())
    assert once().rejected == {"late": 1}
    reasons = [json.loads(line)["reason"] for f in sorted(rejects.glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert len(reasons) == 1 and reasons[0].startswith(f"late: event time {done - 1} is not after {done - 1}: "
                                                       f"instant {done} is already evaluated"), reasons
    taken = first + later[:1]
    ids = runtime_ids(spark, {it[0]: placed[it[0]] for it in taken})
    expected, _ordered = expected_rows(text, {S1: relabeled(taken, ids)}, "rstream", window_convention=convention)
    assert any(at > done for at, _row in expected), "the item taken must change an instant after done"
    assert sorted(got_rows(got, text), key=canonical) == sorted(expected, key=canonical)
