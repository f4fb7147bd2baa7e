"""``cep.engines.spark.evaluate.evaluate_at_instants`` (``query --at T1,T2,...``) against the reference
evaluator at every asked instant.

A CQELS-CEP query whose answers are rows with lifetimes is evaluated once for all the instants
(the lifetimes plan, read at each instant by one range join); the others at every instant at once
too, in one plan keyed by the instant or in one Spark task, never instant by instant
(``evaluate_each``). Either way the rows tagged with instant t must be exactly
``cep.engines.reference.evaluate(query, ..., at=t)`` (``evaluate_sequence`` for RSEP-QL's consuming
policies). The instants asked lie before the first event, on event times, between them and after
every window has emptied.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from cep import algebra as A
from cep import compile_query
from cep.engines import reference as R
from cep.engines.columns import T_END, T_START, column_var
from cep.engines.spark import evaluate as E
from cep.engines.spark.evaluate import AT, evaluate_at_instants, evaluate_each, keyed_refusal, one_pass_refusal
from cep.engines.spark.filters import ORDER
from rdfcore.hashing import term_id
from rdfcore.schema import ID, O, P, S, TERM
from tests.hypothesis_profiles import examples
from tests.stream_terms import EX
from tests.test_cep_differential import (OBJECTS, PREDICATES, SPLIT_GRAPH, STREAM_IRI, SUBJECTS, TERMS, WINDOW_IRI,
                                         stream_frame, streams, streams_and_cases)

LAST_INSTANT = 50        # events end by 23, windows reach 25 ticks: every window is empty after

v, s, x, y = (A.Var(n) for n in ("v", "s", "x", "y"))


def instants_of(items) -> list[int]:
    """Before the first event, each event's start and end, the tick after each (between events),
    and after every window has emptied."""
    times = {t for (_i, _g, t1, t2) in items for t in (t1, t2)}
    return sorted({-1, LAST_INSTANT} | times | {t + 1 for t in times})


def per_instant(frames: dict, decode) -> dict:
    """{(case, t): [(mapping or triple, t1, t2)]} of the ``evaluate_at_instants`` results ``frames``
    ({case: DataFrame}), collected in ONE Spark job; a list, so that duplicate rows show."""
    tagged = []
    for i, out in enumerate(frames.values()):
        cols = [c for c in out.columns if c not in (T_START, T_END, AT, ORDER)]
        tagged.append(out.select(F.lit(i).alias("_case"), F.to_json(F.struct(*cols)).alias("_m"), T_START, T_END,
                                 AT))
    union = tagged[0]
    for frame in tagged[1:]:
        union = union.unionByName(frame)
    keys = list(frames)
    got: dict = {}
    for r in union.collect():
        values = json.loads(r["_m"])
        if set(values) == {S, P, O}:
            answer = tuple(decode(values[c]) for c in (S, P, O))
        else:
            answer = frozenset((column_var(k), decode(val)) for k, val in values.items() if val is not None)
        got.setdefault((keys[r["_case"]], r[AT]), []).append((answer, r[T_START], r[T_END]))
    return got


def dictionary_frame(spark):
    """(id, term) of the test vocabulary: what FILTER and ORDER BY read values from."""
    return spark.createDataFrame(sorted(TERMS.items()), f"{ID} long, {TERM} string")


def assert_each_instant(got: dict, queries: dict, instants, expected_at) -> None:
    """Each case's rows at each instant are ``expected_at(case, t)``, without duplicates."""
    for key, query in queries.items():
        for t in instants:
            rows = got.get((key, t), [])
            assert set(rows) == expected_at(key, t), f"case {key}: {query} at {t}"
            assert len(rows) == len(set(rows)), f"case {key} at {t}: duplicate rows"


@settings(max_examples=examples(2), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                             HealthCheck.too_slow])
@given(drawn=streams_and_cases())
@example(drawn=SPLIT_GRAPH)
def test_sequences_at_instants_equal_reference(spark, drawn):
    """Random sequence queries (negation at head, middle, tail; RANGE, STEP, TRIPLES, NOW, ALL
    windows) over random streams of point and interval events, all in one pass."""
    items, cases = drawn
    queries = {i: query for i, (query, _at) in enumerate(cases)}
    assert all(one_pass_refusal(q) is None for q in queries.values())
    instants = instants_of(items)
    stream = stream_frame(spark, items)
    got = per_instant({i: evaluate_at_instants(q, {}, {STREAM_IRI: stream}, instants) for i, q in queries.items()},
                      TERMS.get)
    assert_each_instant(got, queries, instants,
                        lambda i, t: R.evaluate(queries[i], {}, {STREAM_IRI: items}, at=t, time_unit="ms"))


@st.composite
def backgrounds(draw):
    """A few (subject, p1, object) triples: what the background pattern {?v :p1 ?y} matches."""
    return draw(st.frozensets(st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(PREDICATES[1:2]),
                                        st.sampled_from(OBJECTS)), max_size=4))


def background_queries() -> dict:
    """A SEQ WITHOUT joined with a background pattern; a UNION with a background-only side (its
    answers' interval [MIN_TIME, t] ends at the instant asked); and a CONSTRUCT with a blank node
    over it (a fresh node per solution and interval: the instant's own)."""
    p0, p1, p2 = PREDICATES
    events = A.StreamPattern(WINDOW_IRI, STREAM_IRI, A.Range(A.Duration(8)),
                             A.sequence(A.bgp(A.triple(v, p0, s)), A.bgp(A.triple(v, p1, s)),
                                        A.bgp(A.triple(v, p2, x)), negated=1))
    background = A.Background(None, A.bgp(A.triple(v, p1, y)))
    either = A.Union(A.StreamPattern(WINDOW_IRI, STREAM_IRI, A.Range(A.Duration(3)), A.bgp(A.triple(v, p0, s))),
                     background)
    return {
        "seq without, background": A.Query(A.Project((v, s, x, y), False, A.Join(events, background))),
        "union with background only": A.Query(A.Project((v, s, y), False, either)),
        "construct, blank node": A.Query(A.Construct((A.triple("_:e", p2, v), A.triple(v, p0, s)), either)),
    }


@settings(max_examples=examples(2, 30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                             HealthCheck.too_slow])
@given(items=streams(), triples=backgrounds())
def test_background_and_negation_at_instants_equal_reference(spark, items, triples):
    queries = background_queries()
    assert all(one_pass_refusal(q) is None for q in queries.values())
    instants = instants_of(items)
    stream = stream_frame(spark, items)
    rows = [(term_id(a), term_id(b), term_id(c)) for (a, b, c) in sorted(triples)]
    graph = spark.createDataFrame(rows, f"{S} long, {P} long, {O} long")
    computed: list = []
    frames = {k: evaluate_at_instants(q, {None: graph}, {STREAM_IRI: stream}, instants, terms=computed)
              for k, q in queries.items()}
    names = dict(TERMS)
    for terms in computed:
        names.update({r[ID]: r[TERM] for r in terms.collect()})
    got = per_instant(frames, names.get)
    assert_each_instant(got, queries, instants,
                        lambda k, t: R.evaluate(queries[k], {None: triples}, {STREAM_IRI: items}, at=t))


PREFIXES = f"PREFIX : <{EX}>\n"
#: CQELS-CEP queries answered instant by instant: a top n per instant, and an interval read off a
#: background-only answer (whose end is the instant itself)
PER_INSTANT = {
    "limit": PREFIXES + "SELECT ?v ?s FROM NAMED WINDOW :W ON :stream [RANGE 8] "
                        "WHERE { WINDOW :W { ?v :p0 ?s } } ORDER BY DESC(?v) ?s LIMIT 2",
    "end time": PREFIXES + "SELECT ?v WHERE { ?v :p1 ?y "
                           "FILTER (getENDTIME() < \"1970-01-01T00:00:00.012Z\"^^"
                           "<http://www.w3.org/2001/XMLSchema#dateTime>) }",
}


@settings(max_examples=examples(2), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                             HealthCheck.too_slow])
@given(items=streams(), triples=backgrounds())
def test_per_instant_queries_at_instants_equal_reference(spark, items, triples):
    queries = {k: compile_query(text) for k, text in PER_INSTANT.items()}
    assert all(one_pass_refusal(q) is not None for q in queries.values())
    instants = instants_of(items)
    stream = stream_frame(spark, items)
    rows = [(term_id(a), term_id(b), term_id(c)) for (a, b, c) in sorted(triples)]
    graph = spark.createDataFrame(rows, f"{S} long, {P} long, {O} long")
    frames = {k: evaluate_at_instants(q, {None: graph}, {STREAM_IRI: stream}, instants,
                                      dictionary=dictionary_frame(spark)) for k, q in queries.items()}
    got = per_instant(frames, TERMS.get)

    def expected(k, t):
        return set(R.evaluate(queries[k], {None: triples}, {STREAM_IRI: items}, at=t))
    assert_each_instant(got, queries, instants, expected)


CSPARQL = PREFIXES + ("SELECT ?v (COUNT(?s) AS ?n) FROM STREAM :stream [RANGE 5ms STEP 3ms] "
                      "WHERE { ?v :p0 ?s } GROUP BY ?v")
RSEPQL = PREFIXES + ("SELECT ?v ?s ?x FROM NAMED WINDOW :W ON :stream [RANGE 10 STEP 1] "
                     "WHERE { MATCH CHRONOLOGICAL ( EVENT :W { ?v :p0 ?s } SEQ EVENT :W { ?v :p1 ?x } ) }")

XSD_DATETIME = "<http://www.w3.org/2001/XMLSchema#dateTime>"
#: per-instant queries that read the instant (NOW()) or draw from the solution (RAND(), UUID(),
#: BNODE(), a CONSTRUCT template's blank node), evaluated in the one plan keyed by the instant
DRAWN = [
    PREFIXES + ("SELECT ?v ?s ?n ?b ?c ?u FROM STREAM :stream [RANGE 5ms STEP 1ms] WHERE { ?v :p0 ?s "
                f'FILTER (RAND() < 0.8 && NOW() > "1970-01-01T00:00:00.002Z"^^{XSD_DATETIME}) '
                "BIND (NOW() AS ?n) BIND (BNODE() AS ?b) BIND (BNODE(STR(?s)) AS ?c) BIND (UUID() AS ?u) }"),
    PREFIXES + ("CONSTRUCT { _:e :p2 ?v . _:e :p1 ?s } FROM STREAM :stream [RANGE 4ms STEP 2ms] "
                "WHERE { ?v :p0 ?s FILTER (STRLEN(STRUUID()) = 36) }"),
    PREFIXES + ("SELECT ?v ?s ?n ?r FROM NAMED WINDOW :W ON :stream [RANGE 8] WHERE { WINDOW :W { ?v :p0 ?s } "
                "BIND (NOW() AS ?n) BIND (RAND() AS ?r) } ORDER BY DESC(?v) ?s LIMIT 2"),
]


#: a property path over a C-SPARQL snapshot: each instant's snapshot a graph of its own in one path
#: evaluation (``paths.spark.PathGraph(keys=)``)
CSPARQL_PATH = PREFIXES + "SELECT ?v ?s FROM STREAM :stream [RANGE 5ms STEP 1ms] WHERE { ?v (:p0|:p1)+ ?s }"


@pytest.mark.parametrize("text", [CSPARQL, RSEPQL, CSPARQL_PATH, *DRAWN],
                         ids=["csparql", "rsepql consuming", "csparql path", "csparql now rand bnode",
                              "construct blank node", "cqels limit now rand"])
def test_evaluation_instant_languages_at_instants_equal_reference(spark, monkeypatch, text):
    """C-SPARQL (its aggregate's counts are terms the evaluation computes), an RSEP-QL MATCH
    whose chronological policy consumes what earlier instants used (in one Spark task), a path over
    a snapshot, and queries that read the
    instant or draw from the solution in the plan keyed by the instant: each instant's answers
    are ``cep.engines.reference.evaluate_sequence``'s."""
    a, b = SUBJECTS[:2]
    p0, p1, _p2 = PREDICATES
    m, h = OBJECTS
    items = [(0, frozenset({(a, p0, m)}), 1, 1), (1, frozenset({(a, p1, h)}), 3, 3), (2, frozenset({(b, p0, h)}), 3, 3),
             (3, frozenset({(a, p0, h)}), 4, 4), (4, frozenset({(a, p1, m)}), 6, 6), (5, frozenset({(b, p1, m)}), 9, 9)]
    query = compile_query(text)
    assert one_pass_refusal(query) is not None
    monkeypatch.setattr(E, "evaluate_each", None)   # in one task or one keyed plan, not instant by instant
    instants = [0, 1, 3, 4, 5, 6, 8, 9, 12, 20]
    computed: list = []
    frame = evaluate_at_instants(query, {None: spark.createDataFrame([], f"{S} long, {P} long, {O} long")},
                                 {STREAM_IRI: stream_frame(spark, items)}, instants,
                                 dictionary=dictionary_frame(spark), terms=computed)
    names = dict(TERMS)
    for terms in computed:
        names.update({r[ID]: r[TERM] for r in terms.collect()})
    got = per_instant({0: frame}, names.get)
    expected = R.evaluate_sequence(query, {None: set()}, {STREAM_IRI: items}, instants)
    assert_each_instant(got, {0: query}, instants, lambda _k, t: set(expected[instants.index(t)]))
    assert any(expected), "the case is not vacuous"


#: property paths over each instant's graph (a C-SPARQL snapshot), with a variable and with a constant
#: start (which relates to itself at every instant, an empty window's too), evaluated in the plan
#: keyed by the instant (``paths.spark.PathGraph(keys=)``)
KEYED_PATHS = {
    "snapshot": (PREFIXES + "SELECT ?v ?s FROM STREAM :stream [RANGE 5ms STEP 1ms] WHERE { ?v (:p0/^:p1)+ ?s }",
                 None),
    "constant start": (PREFIXES + "SELECT ?s FROM STREAM :stream [RANGE 3ms STEP 2ms] WHERE { :a (:p0/^:p1)* ?s }",
                       None),
    "named stream graph": (PREFIXES + "SELECT ?v ?s FROM STREAM :stream [RANGE 4ms STEP 1ms] "
                                      "WHERE { GRAPH :stream { ?v :p0/^:p2 ?s } }", None),
}


@settings(max_examples=examples(2), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                             HealthCheck.too_slow])
@given(items=streams())
@example(items=[(0, frozenset({(SUBJECTS[0], PREDICATES[0], OBJECTS[0])}), 2, 2),
                (1, frozenset({(SUBJECTS[1], PREDICATES[1], OBJECTS[0]), (SUBJECTS[1], PREDICATES[0], OBJECTS[1])}),
                 3, 3),
                (2, frozenset({(SUBJECTS[2], PREDICATES[1], OBJECTS[1]), (SUBJECTS[2], PREDICATES[2], OBJECTS[0])}),
                 4, 4)])
def test_paths_over_each_instants_graph_in_one_keyed_plan(spark, monkeypatch, items):
    """Without a dictionary the driver engine refuses these queries, and they are not evaluated
    instant by instant either: each instant's graph is its own key of one path evaluation. Every
    instant's answers are the reference's."""
    monkeypatch.setattr(E, "evaluate_each", None)
    queries = {k: compile_query(text, lang=lang) for k, (text, lang) in KEYED_PATHS.items()}
    assert all(keyed_refusal(q) is None for q in queries.values())
    instants = instants_of(items)
    stream = stream_frame(spark, items)
    frames = {k: evaluate_at_instants(q, {}, {STREAM_IRI: stream}, instants) for k, q in queries.items()}
    got = per_instant(frames, TERMS.get)
    expected = {k: R.evaluate_sequence(q, {}, {STREAM_IRI: items}, instants) for k, q in queries.items()}
    assert_each_instant(got, queries, instants, lambda k, t: set(expected[k][instants.index(t)]))


def test_instants_must_increase(spark):
    stream = stream_frame(spark, [(0, frozenset({(SUBJECTS[0], PREDICATES[0], OBJECTS[0])}), 1, 1)])
    query = compile_query(PER_INSTANT["limit"])
    with pytest.raises(ValueError, match="must increase"):
        evaluate_at_instants(query, {}, {STREAM_IRI: stream}, [3, 3])
    with pytest.raises(ValueError, match="must increase"):
        next(evaluate_each(query, {}, {STREAM_IRI: stream}, [5, 2]))


def test_one_pass_refusal_says_why():
    """Which queries are evaluated instant by instant, and which at every instant at once."""
    assert "C-SPARQL" in one_pass_refusal(compile_query(CSPARQL))
    assert "RSEP-QL" in one_pass_refusal(compile_query(RSEPQL))
    # per instant, but in one plan keyed by the instant (cep.engines.spark.keyed) ...
    assert keyed_refusal(compile_query(CSPARQL)) is None
    assert all(keyed_refusal(compile_query(text)) is None for text in PER_INSTANT.values())
    assert "RSEP-QL" in keyed_refusal(compile_query(RSEPQL))
    # ... NOW() reading each row's instant, RAND() ... drawing from the solution without it ...
    assert all(keyed_refusal(compile_query(text)) is None for text in DRAWN)
    # ... a path matched on a snapshot too
    path = CSPARQL.replace("WHERE { ?v :p0 ?s }", "WHERE { ?v :p0+ ?s }")
    assert keyed_refusal(compile_query(path)) is None
    assert "ORDER BY" in one_pass_refusal(compile_query(PER_INSTANT["limit"]))
    assert "interval" in one_pass_refusal(compile_query(PER_INSTANT["end time"]))
    duration = compile_query(PREFIXES + "SELECT ?v FROM NAMED WINDOW :W ON :stream [RANGE 8] WHERE { WINDOW :W "
                             "{ SEQ ({?v :p0 ?s}, {?v :p1 ?s}) } FILTER (getDURATION() < \"PT0.005S\"^^"
                             "<http://www.w3.org/2001/XMLSchema#dayTimeDuration>) }")
    assert one_pass_refusal(duration) is None      # no background mapping: every interval is closed
    assert all(one_pass_refusal(q) is None for q in background_queries().values())
