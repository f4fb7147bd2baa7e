"""Randomized differential test: cep.engines.spark.evaluate.evaluate (Spark) against cep.engines.reference (pure Python).

Each hypothesis example draws one random stream of point and interval events and a batch of
random sequence patterns (1, 2, 3 or 4 elements, at most one negated — head, middle or tail — some
elements a UNION of different variable sets, so unbound variables meet the compatibility test),
each with its own window and evaluation time. The batch is evaluated as ONE Spark job (the
results are unioned, tagged by a case column) and compared case by case with the reference.

The stream's items are graphs of one to three triples, and items often share their time (a
graph split over two items with the same interval): an element's BGP of two triple patterns must
match inside ONE item (eq. 16), never across two items that are in the window at the same time.
"""
from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from cep import algebra as A
from cep import evaluate
from cep.engines import reference as R
from cep.engines.columns import ITEM, T_END, T_START, column_var, var_column
from rdfcore.hashing import term_id
from rdfcore.schema import O, P, S
from tests.hypothesis_profiles import examples
from tests.stream_terms import OBJECTS, PREDICATES, STREAM_IRI, SUBJECTS, WINDOW_IRI

TERMS = {term_id(t): t for t in SUBJECTS + OBJECTS + PREDICATES}
BATCH = 6

v, s, x, w = (A.Var(n) for n in ("v", "s", "x", "w"))

@st.composite
def streams(draw):
    """Items (item, graph, t1, t2): graphs of 1-3 triples about one subject (an event described by
    several triples); a graph of two or more triples is mostly split into two items with the same
    interval (the same time, different items: a BGP must not match across them)."""
    out = []
    for _ in range(draw(st.integers(0, 8))):
        subject = draw(st.sampled_from(SUBJECTS))
        size = draw(st.sampled_from([1, 2, 2, 3]))
        graph = sorted(draw(st.frozensets(st.tuples(st.just(subject), st.sampled_from(PREDICATES),
                                                    st.sampled_from(OBJECTS)), min_size=size, max_size=size)))
        t1 = draw(st.integers(0, 20))
        t2 = t1 + draw(st.sampled_from([0, 0, 0, 1, 3]))
        cut = draw(st.integers(0, len(graph) - 1))
        for part in ([graph[:cut], graph[cut:]] if cut else [graph]):
            out.append((len(out), frozenset(part), t1, t2))
    return out


@st.composite
def elements(draw):
    """One element of a sequence: a BGP of one or two triple patterns (two share ?v, or share
    nothing), or a UNION of two such BGPs."""
    shapes = [(v, s), (v, s), (v, x), (w, s)]

    def pattern(shape):
        a, b = shape
        return A.triple(a, draw(st.sampled_from(PREDICATES)), b)

    def bgp():
        if draw(st.booleans()):
            return A.bgp(pattern(draw(st.sampled_from(shapes))))
        return A.bgp(pattern((v, s)), pattern(draw(st.sampled_from([(v, x), (v, x), (w, x)]))))
    first = bgp()
    if draw(st.integers(0, 4)) == 0:
        return A.Union(first, bgp())
    return first


windows = st.one_of(
    st.sampled_from([3, 8, 25]).map(lambda T: A.Range(A.Duration(T))),
    st.tuples(st.sampled_from([4, 10]), st.sampled_from([3, 5])).map(
        lambda ts: A.Range(A.Duration(ts[0]), A.Duration(ts[1]))),
    st.just(A.All()), st.just(A.Now()), st.sampled_from([2, 5]).map(A.Triples),
)


@st.composite
def cases(draw, times=()):
    """A query and its evaluation time: any time, or often one of ``times`` (the stream's event
    times: the instants a continuous query is evaluated at)."""
    n = draw(st.sampled_from([1, 2, 2, 3, 4]))           # 1: the window's BGPs on their own
    parts = [draw(elements()) for _ in range(n)]
    negated = None if n == 1 else draw(st.sampled_from(
        [None, 0, n - 1] + ([1] if n > 2 else []) + ([n - 2] if n > 3 else [])))
    pattern = A.sequence(*parts, negated=negated)
    win = draw(windows)
    at = draw(st.sampled_from(sorted(times)) if times and draw(st.booleans()) else st.integers(0, 24))
    names = sorted(var.name for var in A.variables(pattern))
    query = A.Query(A.Project(tuple(A.Var(n) for n in names), False,
                              A.StreamPattern(WINDOW_IRI, STREAM_IRI, win, pattern)))
    return query, at


def stream_frame(spark, items):
    rows = [(item, term_id(a), term_id(b), term_id(c), t1, t2) for (item, g, t1, t2) in items for (a, b, c) in g]
    return spark.createDataFrame(rows, f"{ITEM} long, {S} long, {P} long, {O} long, {T_START} long, {T_END} long")


def tagged_results(frames: dict, decode=lambda value: value) -> dict:
    """Each DataFrame of mappings with intervals in ``frames`` (key: a case, an operator) as a
    list of (mapping, t1, t2), the ids decoded by ``decode``: all collected in ONE Spark job (the
    frames unioned, each row tagged with its key). A list, so that a caller sees duplicate rows."""
    tagged = [out.select(F.lit(i).alias("_case"),
                         F.to_json(F.struct(*[c for c in out.columns if c not in (T_START, T_END)])).alias("_m"),
                         T_START, T_END) for i, out in enumerate(frames.values())]
    union = tagged[0]
    for f in tagged[1:]:
        union = union.unionByName(f)
    keys = list(frames)
    got = {key: [] for key in keys}
    for r in union.collect():
        mu = frozenset((column_var(k), decode(val)) for k, val in json.loads(r["_m"]).items() if val is not None)
        got[keys[r["_case"]]].append((mu, r[T_START], r[T_END]))
    return got


def assert_same_sets(got: dict, expected: dict, what=str) -> None:
    """``got`` (``tagged_results``) equals ``expected`` key by key, without duplicate rows (the
    operators and eq. 1 define sets)."""
    for key, want in expected.items():
        assert set(got[key]) == want, f"{what(key)}"
        assert len(got[key]) == len(set(got[key])), f"{what(key)}: duplicate rows"


def _split_graph_example():
    """:a's graph {:a :p0 :m . :a :p1 :h} split over items 0 and 1 at time 5: the BGP
    {?v :p0 ?s . ?v :p1 ?x} has no match (random examples find such a case one time in five).
    And a negated tail that ends exactly at the evaluation time counts (t4 ≤ t, eq. 7/14): at 7,
    (:a :p1 :m)@7 blocks (:a :p0 :m)@5 (kills the mutant that evaluates NoTail at t - 1); a
    SEQ_WO whose left and right patterns differ (kills swapping them)."""
    a, (p0, p1, _), (m, h) = SUBJECTS[0], PREDICATES, OBJECTS
    items = [(0, frozenset({(a, p0, m)}), 5, 5), (1, frozenset({(a, p1, h)}), 5, 5),
             (2, frozenset({(a, p0, h), (a, p1, m)}), 7, 7)]
    pattern = A.bgp(A.triple(v, p0, s), A.triple(v, p1, x))
    query = A.Query(A.Project((s, v, x), False, A.StreamPattern(WINDOW_IRI, STREAM_IRI, A.Range(A.Duration(3)),
                                                                 pattern)))
    no_tail = A.Query(A.Project((s, v), False, A.StreamPattern(
        WINDOW_IRI, STREAM_IRI, A.Range(A.Duration(25)),
        A.sequence(A.bgp(A.triple(v, p0, s)), A.bgp(A.triple(v, p1, s)), negated=1))))
    # a negated middle between different left and right patterns: kills SeqWithout's left/right swap
    seq_wo = A.Query(A.Project((s, v, x), False, A.StreamPattern(
        WINDOW_IRI, STREAM_IRI, A.Range(A.Duration(25)),
        A.sequence(A.bgp(A.triple(v, p0, x)), A.bgp(A.triple(v, PREDICATES[2], x)), A.bgp(A.triple(v, p1, s)),
                   negated=1))))
    return items, [(query, 5), (query, 7), (no_tail, 7), (seq_wo, 7)]


SPLIT_GRAPH = _split_graph_example()


@st.composite
def streams_and_cases(draw):
    items = draw(streams())
    times = {t for (_i, _g, t1, t2) in items for t in (t1, t2)}
    return items, draw(st.lists(cases(times), min_size=BATCH, max_size=BATCH))


@settings(max_examples=examples(4), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                             HealthCheck.too_slow])
@given(drawn=streams_and_cases())
@example(drawn=SPLIT_GRAPH)
def test_sequences_spark_equals_reference(spark, drawn):
    """Guards (besides the operators) the eq. 16 mutant of ``cep.engines.spark.evaluate._bgp_in_items`` that drops
    the stream item from the join key of a BGP's triple patterns (key (ITEM, T_START, T_END) ->
    (T_START, T_END)): two-pattern BGPs over graphs split into same-time items then match across
    items, which the reference never does (tests/MUTATION.md)."""
    items, batch = drawn
    stream = stream_frame(spark, items)
    got = tagged_results({i: evaluate(query, {}, {STREAM_IRI: stream}, at=at, time_unit="ms")
                          for i, (query, at) in enumerate(batch)}, TERMS.get)
    assert_same_sets(got, {i: R.evaluate(query, {}, {STREAM_IRI: items}, at=at, time_unit="ms")
                           for i, (query, at) in enumerate(batch)},
                     lambda i: f"case {i}: {batch[i][0]} at {batch[i][1]}")


def test_differential_harness_sees_a_difference():
    """The comparison is not vacuous: the reference distinguishes the negation positions."""
    items = [(0, frozenset({(SUBJECTS[0], PREDICATES[0], OBJECTS[0])}), 1, 1),
             (1, frozenset({(SUBJECTS[0], PREDICATES[1], OBJECTS[0])}), 2, 2),
             (2, frozenset({(SUBJECTS[0], PREDICATES[0], OBJECTS[0])}), 3, 3)]
    p0, p1 = A.bgp(A.triple(v, PREDICATES[0], s)), A.bgp(A.triple(v, PREDICATES[1], s))

    def run(pattern):
        q = A.Query(A.Project((v, s), False, A.StreamPattern(WINDOW_IRI, STREAM_IRI, A.All(), pattern)))
        return R.evaluate(q, {}, {STREAM_IRI: items}, at=5)
    mu = frozenset({("v", SUBJECTS[0]), ("s", OBJECTS[0])})
    assert run(A.sequence(p0, p1, p0, negated=None)) == {(mu, 1, 3)}
    assert run(A.sequence(p0, p1, p0, negated=1)) == set()          # the p1 event at 2 is in between
    assert run(A.sequence(p0, p1, negated=1)) == {(mu, 3, 3)}       # NO_TAIL: p1 at 2 is after p0 at 1 only
    assert run(A.sequence(p1, p0, negated=0)) == {(mu, 1, 1)}       # NO_HEAD: p0 at 3 is after p1


# --- the operators themselves on mappings with unbound variables --------------------------------
# Every mapping binds ``case`` (never null): mappings of different cases are incompatible, so one
# DataFrame holds many independent cases and each operator runs once for all of them. ``v`` and
# ``s`` are often unbound (null), exercising the null-aware compatibility test.

# small time and value ranges: many compatible pairs and many equal endpoints (the edges)
mappings = st.lists(st.tuples(st.integers(0, 2), st.sampled_from([None, 1, 2]), st.sampled_from([None, 1]),
                              st.integers(0, 5), st.sampled_from([0, 0, 1, 2])), min_size=4, max_size=16).map(
    lambda rows: {(R.mapping(case=c, v=a, s=b), t1, t1 + d) for (c, a, b, t1, d) in rows})


def mapping_frame(spark, omega):
    names = ["case", "v", "s"]
    schema = ", ".join([f"`{var_column('case')}` long not null", f"`{var_column('v')}` long",
                        f"`{var_column('s')}` long", f"{T_START} long", f"{T_END} long"])
    return spark.createDataFrame(R.to_records(omega, names), schema)


@settings(max_examples=examples(5), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(o1=mappings, o2=mappings, o3=mappings, t=st.integers(1, 6))
def test_operators_with_unbound_variables_spark_equals_reference(spark, o1, o2, o3, t):
    """Each operator's rows are distinct, too: kills the mutants that remove a ``distinct`` from
    cep.engines.spark.intervals (tests/MUTATION.md)."""
    from cep.engines.spark import intervals as I

    d1, d2, d3 = (mapping_frame(spark, o) for o in (o1, o2, o3))
    ops = {
        "join": (I.join(d1, d2), R.join(o1, o2)),
        "or": (I.union(d1, d3), R.union(o1, o3)),
        "seq": (I.seq(d1, d2), R.seq(o1, o2)),
        "seq_wo": (I.seq_wo(d1, d2, d3), R.seq_wo(o1, o2, o3)),
        "no_head": (I.no_head(d1, d3), R.no_head(o1, o3)),
        "no_tail": (I.no_tail(d1, d2, t), R.no_tail(o1, o2, t)),
    }
    got = tagged_results({name: out for name, (out, _ref) in ops.items()})
    assert_same_sets(got, {name: ref for name, (_out, ref) in ops.items()})
