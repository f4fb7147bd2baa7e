"""cep.engines.spark.lifetimes (every instant in one plan) against the reference evaluator at each instant.

``cep.engines.spark.evaluate.evaluate_lifetimes`` gives each result row the instants at which it is an answer.
For random streams of point and interval events, multi-triple items and random sequence queries
(the generator of test_cep_differential: negation at head, middle, tail; RANGE, STEP, TRIPLES,
NOW, ALL windows), the rows alive at t must be exactly ``cep.engines.reference.evaluate(..., at=t)`` for
every t from before the first event until every window has emptied. This is the heart of the
continuous runtime's correctness (tests/test_cep_continuous.py runs the whole service).
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from pyspark.sql import functions as F

from cep import algebra as A
from cep.engines import reference as R
from cep.engines.columns import LIFE_FROM, LIFE_TO, T_END, T_START, column_var
from cep.algebra.timeline import OPEN_END
from cep.engines.spark.evaluate import Prepared, evaluate_lifetimes
from tests.hypothesis_profiles import examples
from tests.test_cep_differential import (SPLIT_GRAPH, STREAM_IRI, TERMS, WINDOW_IRI, stream_frame,
                                         streams_and_cases)

pytestmark = pytest.mark.spark

LAST_INSTANT = 50        # events end by 23, windows reach 25 ticks: every window is empty after


def lifetimes_of(spark, batch, items, background=None):
    """{case: [(mapping, t1, t2, from, to)]} for the queries of ``batch``, in one Spark job."""
    stream = stream_frame(spark, items)
    frames = []
    for i, query in enumerate(batch):
        out = evaluate_lifetimes(Prepared(query, background or {}), {STREAM_IRI: stream})
        cols = [c for c in out.columns if c not in (T_START, T_END, LIFE_FROM, LIFE_TO)]
        frames.append(out.select(F.lit(i).alias("_case"), F.to_json(F.struct(*cols)).alias("_m"),
                                 T_START, T_END, LIFE_FROM, LIFE_TO))
    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    got = {i: [] for i in range(len(batch))}
    for r in union.collect():
        mu = frozenset((column_var(k), TERMS[val]) for k, val in json.loads(r["_m"]).items() if val is not None)
        got[r["_case"]].append((mu, r[T_START], r[T_END], r[LIFE_FROM], r[LIFE_TO]))
    return got


def alive(rows, t):
    return {(mu, t1, t if t2 == OPEN_END else t2) for (mu, t1, t2, a, b) in rows if a <= t <= b}


# Under the thorough profile only, drawing 100: the lifetimes plan is what evaluate_at_instants
# reads at each instant, and tests/test_cep_at_instants.py::test_sequences_at_instants_equal_reference
# checks it at every instant against the reference, with this test's generator and explicit example
@pytest.mark.thorough
@settings(max_examples=examples(2, 100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                                  HealthCheck.too_slow])
@given(drawn=streams_and_cases())
@example(drawn=SPLIT_GRAPH)
def test_lifetimes_equal_reference_at_every_instant(spark, drawn):
    """Guards every lifetime rule: an interval event's moving clip (one row per instant), a STEP
    window's closes, a TRIPLES triple leaving when the n-th later one starts, the negations'
    subtraction (a blocker's lifetime, NO_TAIL's t4 ≤ t) and the positive operators' intersection."""
    items, cases = drawn
    batch = [query for (query, _at) in cases]
    got = lifetimes_of(spark, batch, items)
    for i, query in enumerate(batch):
        for t in range(-1, LAST_INSTANT + 1):
            expected = R.evaluate(query, {}, {STREAM_IRI: items}, at=t, time_unit="ms")
            assert alive(got[i], t) == expected, f"case {i}: {query} at {t}"


def test_background_only_answers_read_the_instant_as_their_end(spark):
    """A background mapping's interval is [t1, t] at t (eq. 17): written [t1, OPEN_END]."""
    from tests.test_cep_differential import OBJECTS, PREDICATES, SUBJECTS

    from rdfcore.hashing import term_id
    g = spark.createDataFrame([(term_id(SUBJECTS[0]), term_id(PREDICATES[0]), term_id(OBJECTS[0]))], "s long, p long, o long")
    v = A.Var("v")
    query = A.Query(A.Project((v,), False, A.Background(None, A.bgp(A.triple(v, PREDICATES[0], OBJECTS[0])))))
    prepared = Prepared(query, {None: g}, since=5)
    rows = evaluate_lifetimes(prepared, {}).collect()
    assert [(r[T_START], r[T_END], r[LIFE_FROM], r[LIFE_TO]) for r in rows] == [(5, OPEN_END, 5, OPEN_END)]
    assert query.form.inner in prepared.cache or prepared.cache      # the static side was kept
    prepared.unpersist()
    assert prepared.cache == {}


def _free_runs(life_from, life_to, blocked):
    """The maximal runs of [life_from, life_to] outside every [a, b] of ``blocked``, by walking
    the blocked stretches in order (OPEN_END stands for itself: no instant is enumerated)."""
    runs, start = [], life_from
    for a, b in sorted(blocked):
        a, b = max(a, life_from), min(b, life_to)
        if a > b or b < start:
            continue
        if a > start:
            runs.append((start, a - 1))
        start = max(start, b + 1)
    if start <= life_to:
        runs.append((start, life_to))
    return runs


def test_subtraction_keeps_the_maximal_free_runs(spark):
    """``_subtract``, the negations' core, on 400 random rows at once: each row's lifetime minus
    its blockers' (overlapping, nested, touching, duplicated, ending at OPEN_END, blocking
    nothing), against the runs computed in Python. A row with an unbound variable is matched
    null-safely."""
    import random

    from cep.engines.spark.lifetimes import _subtract

    rng = random.Random(5)
    rows, blockers, expected = [], [], set()
    for key in range(400):
        v = None if key % 7 == 0 else key
        a = rng.randint(-3, 20)
        b = OPEN_END if rng.random() < 0.2 else a + rng.randint(0, 25)
        rows.append((v, key, 0, a, b))
        mine = []
        for _ in range(rng.choice((0, 0, 1, 2, 3, 5))):
            x = rng.randint(a - 5, a + 30)
            y = OPEN_END if rng.random() < 0.1 else x + rng.choice((0, 0, 1, 3, 8))
            mine.append((x, y))
            if rng.random() < 0.2:
                mine.append((x, y))                           # the same stretch from two blockers
        blockers.extend((v, key, x, y) for x, y in mine)
        expected |= {(v, key, lo, hi) for lo, hi in _free_runs(a, b, mine)}
    cols = "v_v long, t_start long, t_end long, life_from long, life_to long"
    frame = spark.createDataFrame(rows, cols)
    blocking = spark.createDataFrame(blockers, "n_v long, n_key long, n_from long, n_to long")
    same = F.col("v_v").eqNullSafe(F.col("n_v")) & (F.col(T_START) == F.col("n_key"))
    out = _subtract(frame, blocking, same, F.col("n_from"), F.col("n_to"))
    got = [(r["v_v"], r[T_START], r[LIFE_FROM], r[LIFE_TO]) for r in out.collect()]
    assert len(got) == len(set(got)), "a run was written twice"
    assert set(got) == expected
    assert any(hi == OPEN_END for *_row, hi in expected) and len(expected) > 400


def test_optional_without_a_condition_equals_the_filtered_pairs_path(spark):
    """OPTIONAL with no condition takes one left join (``_left_join_all``); with a condition the
    pairs are filtered first, then each row's unmatched instants subtracted. A condition that
    keeps every pair must give the same rows: 300 random rows a side, shared and own variables,
    unbound values, intervals that do and do not intersect, lifetimes ending at OPEN_END."""
    import random

    from cep.engines.spark import lifetimes as L

    rng = random.Random(3)

    def value():
        return None if rng.random() < 0.15 else rng.randint(1, 4)

    def timing():
        t1 = rng.randint(0, 12)
        a = rng.randint(t1, 20)
        return t1, t1 + rng.randint(0, 4), a, OPEN_END if rng.random() < 0.2 else a + rng.randint(0, 15)

    cols = "t_start long, t_end long, life_from long, life_to long"
    left = spark.createDataFrame([(value(), value(), *timing()) for _ in range(300)], f"v_a long, v_b long, {cols}")
    right = spark.createDataFrame([(value(), rng.randint(1, 4), *timing()) for _ in range(300)],
                                  f"v_b long, v_c long, {cols}")

    def rows(df):
        return sorted((tuple(r) for r in df.select(sorted(df.columns)).collect()),
                      key=lambda row: tuple((v is None, v or 0) for v in row))

    one_join = rows(L.left_join(left, right))
    assert one_join == rows(L.left_join(left, right, keep=lambda pairs: pairs))
    alone = [r for r in one_join if r[-1] is None]      # columns sorted: ..., v_a, v_b, v_c
    assert alone and len(alone) < len(one_join), "both matched and unmatched rows, or the test proves little"
