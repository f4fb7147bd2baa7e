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


# 2 drawn examples and the explicit one by default (each is a batch of random queries on Spark); the
# thorough profile draws 100
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
