"""SPARQL 1.1 GROUP BY / HAVING / aggregates over event clauses (CQELS-CEP, RSEP-QL, EP-SPARQL;
``A.GroupCover``; ``cep.lowering.common`` module doc, "Grouping over event clauses"): at an instant t, the
group of a key is the set of distinct (mapping, interval) solutions of ⟦P, t⟧ agreeing on the GROUP BY
variables, and it gives ONE answer — the key, the aggregates, and [min t1, max t2] of its members.

* hand-derived answers on a small Vienna-like stream (delays per stop, in a RANGE window and with
  SEQ; DISTINCT, HAVING, GROUP BY without aggregates, the implicit group, empty results), checked
  on the reference and, in ONE Spark job, on the Spark engine;
* the reference against Spark on random streams and random grouped sequence patterns
  (``tests/test_cep_differential.py``'s strategies and helpers), a few examples;
* RSEP-QL's MATCH and EP-SPARQL's operators group the same way (``GroupCover``); a
  continuous run evaluates a grouped CQELS-CEP query at its content changes (``cep.continuous.plan.plan``).
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cep import CepSemanticError, compile_query, evaluate
from cep import algebra as A
from cep.engines import reference as R
from cep.continuous.plan import plan
from rdfcore.hashing import term_id
from rdfcore.schema import ID, O, P, S, TERM
from tests.hypothesis_profiles import examples
from tests.stream_terms import OBJECTS, PREDICATES, SUBJECTS, WINDOW_IRI
from tests.stream_terms import STREAM_IRI as RANDOM_STREAM
from tests.test_cep_differential import (TERMS, assert_same_sets, elements, stream_frame, streams,
                                         tagged_results)

VIENNA = "http://example.org/vienna#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
STREAM = "<http://example.org/publicTransport>"
MAP = "<http://example.org/transportationMap>"
PREFIXES = f"PREFIX : <{VIENNA}>\nPREFIX ex: <http://example.org/>\n"
WINDOW = "FROM NAMED WINDOW :W ON ex:publicTransport [RANGE 10m]\n"


def ex(name: str) -> str:
    return f"<{VIENNA}{name}>"


def integer(n: int) -> str:
    return f'"{n}"^^<{XSD}integer>'


def decimal(text: str) -> str:
    return f'"{text}"^^<{XSD}decimal>'


def delay(item: int, vehicle: str, stop: str, minutes: int, t: int):
    """A stream item: ``vehicle`` delayed at ``stop`` by ``minutes``, at ``t`` (a point event)."""
    return (item, frozenset({(ex(vehicle), ex("delayAt"), ex(stop)),
                             (ex(vehicle), ex("minutes"), integer(minutes))}), t, t)


# (times in minutes) d1's delays at 12 and 14 have the same mapping {v: d1, s: h, d: 2}: two members
ITEMS = [delay(1, "a1", "m", 3, 10), delay(2, "d1", "h", 2, 12), delay(3, "b2", "h", 4, 13),
         delay(4, "d1", "h", 2, 14), delay(5, "d1", "h", 5, 15), delay(6, "a1", "m", 1, 16),
         delay(7, "b2", "h", 4, 16)]
BACKGROUND = [(ex("a1"), RDF_TYPE, ex("subway")), (ex("d1"), RDF_TYPE, ex("subway")),
              (ex("b2"), RDF_TYPE, ex("bus"))]

PER_STOP = PREFIXES + (
    "SELECT ?s (COUNT(*) AS ?n) (COUNT(DISTINCT ?v) AS ?vehicles) (SUM(?d) AS ?total) "
    "(SUM(DISTINCT ?d) AS ?distinct) (MIN(?d) AS ?least) (MAX(?d) AS ?most) (AVG(?d) AS ?mean)\n"
    + WINDOW + "WHERE { WINDOW :W { ?v :delayAt ?s . ?v :minutes ?d } } GROUP BY ?s")
TWICE = PREFIXES + ("SELECT ?s (COUNT(*) AS ?n) (COUNT(DISTINCT ?v) AS ?vehicles)\n" + WINDOW
                    + "WHERE { WINDOW :W { SEQ({?v :delayAt ?s}, {?v :delayAt ?s}) } } GROUP BY ?s")
SUBWAY_TWICE = PREFIXES + (
    "SELECT ?s (COUNT(*) AS ?n)\nFROM ex:transportationMap\n" + WINDOW
    + "WHERE { WINDOW :W { SEQ({?v :delayAt ?s}, {?v :delayAt ?s}) } ?v a :subway . } GROUP BY ?s")
SUBWAY_TWICE_HAVING = SUBWAY_TWICE + " HAVING (COUNT(*) > 1)"
NOBODY = PER_STOP + " HAVING (COUNT(*) > 10)"
VEHICLES = PREFIXES + "SELECT ?v\n" + WINDOW + "WHERE { WINDOW :W { ?v :delayAt ?s } } GROUP BY ?v"
TOTAL = PREFIXES + ("SELECT (COUNT(*) AS ?n) (MAX(?d) AS ?most)\n" + WINDOW
                    + "WHERE { WINDOW :W { ?v :delayAt ?s . ?v :minutes ?d } }")
SOME = TOTAL + " HAVING (COUNT(*) > 0)"
#: HAVING reads the cover: h's pairs last 1-3 minutes each, its cover [12, 16] four
LONG = TWICE + f' HAVING (getDURATION() >= "PT4M"^^<{XSD}dayTimeDuration>)'
LONGER = TWICE + f' HAVING (getDURATION() > "PT5M"^^<{XSD}dayTimeDuration>)'
#: RSEP-QL's MATCH and EP-SPARQL's SEQ group the same way (``--lang`` decides the language)
RSEP_PER_STOP = PREFIXES + ("SELECT ?s (COUNT(*) AS ?n) (MAX(?d) AS ?most)\n" + WINDOW
                            + "WHERE { MATCH ( EVENT :W { ?v :delayAt ?s . ?v :minutes ?d } ) } GROUP BY ?s")
EP_TWICE = PREFIXES + ("SELECT ?s (COUNT(*) AS ?n) (COUNT(DISTINCT ?v) AS ?vehicles) "
                       "WHERE { { ?v :delayAt ?s } SEQ { ?v :delayAt ?s } } GROUP BY ?s HAVING (COUNT(*) > 1)")


def answer(t1: int, t2: int, **bindings) -> tuple:
    return (frozenset(bindings.items()), t1, t2)


def stop_stats(stop, n, vehicles, total, distinct, least, most, mean, t1, t2):
    return answer(t1, t2, s=ex(stop), n=integer(n), vehicles=integer(vehicles), total=integer(total),
                  distinct=integer(distinct), least=integer(least), most=integer(most), mean=decimal(mean))


#: (query, instant) -> its answer, derived by hand from ITEMS / BACKGROUND
EXPECTED = {
    # every item is in the 10m window at 16: m has a1's 3@10 and 1@16; h five delays, d1's 2 twice
    (PER_STOP, 16): {stop_stats("m", 2, 1, 4, 4, 1, 3, "2.0", 10, 16),
                     stop_stats("h", 5, 2, 17, 11, 2, 5, "3.4", 12, 16)},
    # at 25 the window holds 15..25: a1's 1@16; d1's 5@15, b2's 4@16 (the cover shrinks with it)
    (PER_STOP, 25): {stop_stats("m", 1, 1, 1, 1, 1, 1, "1.0", 16, 16),
                     stop_stats("h", 2, 2, 9, 9, 4, 5, "4.5", 15, 16)},
    (PER_STOP, 40): set(),                                   # an empty window: no group, no answer
    # SEQ pairs: a1 [10,16]; d1 [12,14], [12,15], [14,15]; b2 [13,16]
    (TWICE, 16): {answer(10, 16, s=ex("m"), n=integer(1), vehicles=integer(1)),
                  answer(12, 16, s=ex("h"), n=integer(4), vehicles=integer(2))},
    # b2 is a bus: h keeps d1's three pairs, covered by [12, 15]
    (SUBWAY_TWICE, 16): {answer(10, 16, s=ex("m"), n=integer(1)), answer(12, 15, s=ex("h"), n=integer(3))},
    (SUBWAY_TWICE_HAVING, 16): {answer(12, 15, s=ex("h"), n=integer(3))},
    (LONG, 16): {answer(10, 16, s=ex("m"), n=integer(1), vehicles=integer(1)),
                 answer(12, 16, s=ex("h"), n=integer(4), vehicles=integer(2))},
    (LONGER, 16): {answer(10, 16, s=ex("m"), n=integer(1), vehicles=integer(1))},
    (SUBWAY_TWICE, 12): set(),                               # no vehicle was delayed twice yet
    (NOBODY, 16): set(),
    # GROUP BY without aggregates: one answer per vehicle, not one per delay
    (VEHICLES, 16): {answer(10, 16, v=ex("a1")), answer(12, 15, v=ex("d1")), answer(13, 16, v=ex("b2"))},
    # the implicit group: all seven delays; over an empty window COUNT 0, MAX unbound, over [t, t]
    (TOTAL, 16): {answer(10, 16, n=integer(7), most=integer(5))},
    (TOTAL, 40): {answer(40, 40, n=integer(0))},
    (TOTAL, 5): {answer(5, 5, n=integer(0))},
    (SOME, 40): set(),
    # RSEP-QL, RANGE 10m at 16: (6, 16] holds every delay; each EVENT match is a point event
    (RSEP_PER_STOP, 16): {answer(10, 16, s=ex("m"), n=integer(2), most=integer(3)),
                          answer(12, 16, s=ex("h"), n=integer(5), most=integer(5))},
    # at 21: (11, 21], a1's delay at 10 has left
    (RSEP_PER_STOP, 21): {answer(16, 16, s=ex("m"), n=integer(1), most=integer(1)),
                          answer(12, 16, s=ex("h"), n=integer(5), most=integer(5))},
    # EP-SPARQL at 16 sees every occurrence ended by 16: the pairs of TWICE; HAVING drops m's one
    (EP_TWICE, 16): {answer(12, 16, s=ex("h"), n=integer(4), vehicles=integer(2))},
    (EP_TWICE, 14): set(),            # by 14 only d1's [12, 14]: one pair, which HAVING drops
}


def reference(query, at):
    return R.evaluate(query, {MAP: BACKGROUND}, {STREAM: ITEMS}, at=at, time_unit="m")


def test_lowering_builds_one_group_cover_under_having():
    q = compile_query(SUBWAY_TWICE_HAVING)
    having = q.pattern
    assert isinstance(having, A.Filter) and isinstance(having.inner, A.GroupCover)
    node = having.inner
    assert node.group == (A.Var("s"),)
    assert node.specs == (A.AggregateSpec(A.Var("n"), "COUNT", None, False, (A.Var("s"),)),)
    assert len(A.event_clauses(q.pattern)) == 1 and len(A.background_patterns(q.pattern)) == 1
    assert isinstance(compile_query(VEHICLES).pattern, A.GroupCover)           # GROUP BY alone
    assert A.variables(node) == {A.Var("s"), A.Var("n")}                       # ?v is not in scope after it


def test_background_only_and_csparql_keep_aggregate():
    """C-SPARQL's rule (each mapping keeps its interval) and background-only grouping are unchanged."""
    background = compile_query(PREFIXES + "SELECT ?v (COUNT(*) AS ?n) WHERE { ?v a ?c } GROUP BY ?v")
    assert isinstance(background.pattern, A.Aggregate)
    csparql = compile_query("REGISTER QUERY q AS\n" + PREFIXES + "SELECT ?s (COUNT(*) AS ?n) "
                            "FROM STREAM ex:publicTransport [RANGE 10m STEP 1m] "
                            "WHERE { ?v :delayAt ?s } GROUP BY ?s")
    assert isinstance(csparql.pattern, A.Aggregate)
    assert not any(isinstance(n, A.GroupCover) for n in A.walk(csparql.form))


@pytest.mark.parametrize("query, at", list(EXPECTED))
def test_reference_hand_derived(query, at):
    assert reference(compile_query(query), at) == EXPECTED[(query, at)]


def test_group_cover_counts_events_not_mappings():
    """Two events with one mapping at two intervals are two members; the cover spans both."""
    mu = R.mapping(s="h")
    out = R.group_cover({(mu, 12, 12), (mu, 14, 14)}, (A.Var("s"),),
                        (A.AggregateSpec(A.Var("n"), "COUNT", None, False, (A.Var("s"),)),), at=20)
    assert out == {(frozenset({("s", "h"), ("n", integer(2))}), 12, 14)}


def test_node_checks():
    s, n = A.Var("s"), A.Var("n")
    inner = A.bgp(A.triple(s, ex("p"), A.Var("o")))
    with pytest.raises(ValueError, match="groups by"):
        A.GroupCover(inner, (s,), (A.AggregateSpec(n, "COUNT", None, False, ()),))
    with pytest.raises(ValueError, match="group variables or aggregates"):
        A.GroupCover(inner, ())
    with pytest.raises(ValueError, match="a variable of its own"):
        A.GroupCover(inner, (s,), (A.AggregateSpec(s, "COUNT", None, False, (s,)),))


def _encoded(spark, triples):
    rows = [tuple(term_id(x) for x in tr) for tr in triples]
    return spark.createDataFrame(rows, f"{S} long, {P} long, {O} long")


def _dictionary(spark, terms):
    return spark.createDataFrame(sorted({(term_id(t), t) for t in terms}), f"{ID} long, {TERM} string")


def _decoder(*answer_sets, known=()):
    """Ids -> terms: the given terms and every term of the expected answers (computed aggregates
    are ids of their terms, ``xxhash64``); an id nobody expects decodes to None and fails."""
    table = {term_id(t): t for t in known}
    for answers in answer_sets:
        for (mu, _t1, _t2) in answers:
            table.update({term_id(x): x for _k, x in mu})
    return table.get


#: the hand-derived cases run on Spark too (one of each kind: every aggregate function, SEQ with a
#: background and HAVING, HAVING on the cover, GROUP BY alone, the implicit group of nothing), to
#: keep Spark's time short
SPARK_CASES = [(PER_STOP, 16), (SUBWAY_TWICE_HAVING, 16), (LONG, 16), (VEHICLES, 16), (TOTAL, 40),
               (RSEP_PER_STOP, 21), (EP_TWICE, 16)]


def test_spark_hand_derived(spark):
    """The ``SPARK_CASES`` on the Spark engine, collected in one Spark job."""
    terms = {x for (_i, g, _a, _b) in ITEMS for tr in g for x in tr} | {x for tr in BACKGROUND for x in tr}
    stream = stream_frame(spark, ITEMS)
    background = {MAP: _encoded(spark, BACKGROUND)}
    dictionary = _dictionary(spark, terms)
    frames = {key: evaluate(compile_query(key[0]), background, {STREAM: stream}, at=key[1], time_unit="m",
                            dictionary=dictionary) for key in SPARK_CASES}
    expected = {key: EXPECTED[key] for key in SPARK_CASES}
    got = tagged_results(frames, _decoder(*expected.values(), known=terms))
    assert_same_sets(got, expected, lambda key: f"{key[0].splitlines()[2]} ... at {key[1]}")


# --- the reference against Spark on random streams and grouped sequence patterns ----------------

#: the aggregates drawn: COUNT of solutions, of a variable's values (bound or not), DISTINCT; MIN /
#: MAX of IRIs (by their text); SUM of IRIs (an error: unbound). Each function's values are the
#: C-SPARQL code's (tests/test_sparql_grouping.py): what is new here is the grouping and the cover.
FUNCTIONS = [("COUNT", False, False), ("COUNT", True, False), ("COUNT", True, True), ("MIN", True, False),
             ("MAX", True, True), ("SUM", True, False)]
#: cases per Spark job (each example runs one)
GROUPED_BATCH = 4


#: wide windows and short sequences, so that most random cases have several groups
GROUPED_WINDOWS = st.one_of(st.sampled_from([8, 25]).map(lambda T: A.Range(A.Duration(T))), st.just(A.All()),
                            st.just(A.Range(A.Duration(10), A.Duration(5))))


@st.composite
def grouped_cases(draw, times=()):
    """A random sequence of 1-3 elements (``elements``: BGPs and UNIONs, so that group variables
    and arguments are sometimes unbound; one element sometimes negated) in a wide window, grouped
    by 0-2 of its variables with 0-2 aggregates (at least one of the two), sometimes under a
    HAVING on a count; evaluated mostly at one of the stream's times."""
    n = draw(st.sampled_from([1, 1, 2, 2, 3]))
    parts = [draw(elements()) for _ in range(n)]
    negated = None if n == 1 else draw(st.sampled_from([None, None, 0, n - 1]))
    inner = A.StreamPattern(WINDOW_IRI, RANDOM_STREAM, draw(GROUPED_WINDOWS), A.sequence(*parts, negated=negated))
    at = draw(st.sampled_from(sorted(times)) if times and draw(st.integers(0, 3)) else st.integers(0, 24))
    names = sorted(A.variables(inner), key=lambda v: v.name)
    group = tuple(draw(st.lists(st.sampled_from(names), unique=True, max_size=2)))
    chosen = draw(st.lists(st.sampled_from(FUNCTIONS), min_size=0 if group else 1, max_size=2))
    specs = tuple(A.AggregateSpec(A.Var(f"a{i}"), function, draw(st.sampled_from(names)) if argument else None,
                                  distinct, group) for i, (function, argument, distinct) in enumerate(chosen))
    pattern: A.Pattern = A.GroupCover(inner, group, specs)
    counts = [spec.var for spec in specs if spec.function == "COUNT"]
    if counts and draw(st.booleans()):
        pattern = A.Filter(A.Compare(">", counts[0], A.Const(integer(1))), pattern)
    return A.Query(A.Project(group + tuple(spec.var for spec in specs), False, pattern)), at


@st.composite
def streams_and_grouped_cases(draw):
    items = draw(streams())
    times = {t for (_i, _g, t1, t2) in items for t in (t1, t2)}
    return items, draw(st.lists(grouped_cases(times), min_size=GROUPED_BATCH, max_size=GROUPED_BATCH))


def _grouped_example():
    """A stream where every case has members (hypothesis' first examples are the smallest, often an
    empty stream): a group whose variable is unbound (a UNION side without ?s) beside two others,
    an interval event [3, 4] inside a cover; SEQ grouped by ?v under HAVING; NO_TAIL's survivors in
    the implicit group with SUM of IRIs (an error: unbound); GROUP BY alone in a STEP window."""
    a, b, c = SUBJECTS
    m, h = OBJECTS
    p0, p1, p2 = PREDICATES
    v, s, x = (A.Var(n) for n in "vsx")
    items = [(0, frozenset({(a, p0, m)}), 1, 1), (1, frozenset({(b, p0, h)}), 2, 2),
             (2, frozenset({(a, p0, m), (a, p1, h)}), 3, 4), (3, frozenset({(c, p0, h)}), 5, 5),
             (4, frozenset({(a, p1, m)}), 6, 6), (5, frozenset({(b, p0, h)}), 7, 7), (6, frozenset({(c, p2, m)}), 8, 8)]

    def query(window, pattern, group, specs, having=False):
        node: A.Pattern = A.GroupCover(A.StreamPattern(WINDOW_IRI, RANDOM_STREAM, window, pattern), group,
                                       tuple(A.AggregateSpec(A.Var(f"a{i}"), f, arg, d, group)
                                             for i, (f, arg, d) in enumerate(specs)))
        if having:
            node = A.Filter(A.Compare(">", A.Var("a0"), A.Const(integer(1))), node)
        return A.Query(A.Project(group + tuple(A.Var(f"a{i}") for i in range(len(specs))), False, node))

    wide = A.Range(A.Duration(25))
    return items, [
        (query(wide, A.Union(A.bgp(A.triple(v, p0, s)), A.bgp(A.triple(v, p1, x))), (s,),
               [("COUNT", None, False), ("MIN", v, False)]), 8),
        (query(wide, A.sequence(A.bgp(A.triple(v, p0, s)), A.bgp(A.triple(v, p1, x))), (v,),
               [("COUNT", x, True), ("MAX", s, False)], having=True), 8),
        (query(wide, A.sequence(A.bgp(A.triple(v, p0, s)), A.bgp(A.triple(v, p1, s)), negated=1), (),
               [("COUNT", None, False), ("SUM", s, False)]), 8),
        (query(A.Range(A.Duration(10), A.Duration(5)), A.bgp(A.triple(v, p0, s)), (v,), []), 8),
    ]


@settings(max_examples=examples(2), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                             HealthCheck.too_slow])
@given(drawn=streams_and_grouped_cases())
@example(drawn=_grouped_example())
def test_grouping_spark_equals_reference(spark, drawn):
    items, batch = drawn
    stream = stream_frame(spark, items)
    dictionary = _dictionary(spark, TERMS.values())
    expected = {i: R.evaluate(query, {}, {RANDOM_STREAM: items}, at=at, time_unit="ms")
                for i, (query, at) in enumerate(batch)}
    got = tagged_results({i: evaluate(query, {}, {RANDOM_STREAM: stream}, at=at, time_unit="ms",
                                      dictionary=dictionary) for i, (query, at) in enumerate(batch)},
                         _decoder(*expected.values(), known=TERMS.values()))
    assert_same_sets(got, expected, lambda i: f"case {i}: {batch[i][0]} at {batch[i][1]}")


# --- every event language groups alike ------------------------------------------------------------

def test_rsepql_and_epsparql_group_with_a_cover():
    """RSEP-QL's MATCH and EP-SPARQL's operators lower to the same ``GroupCover`` (their answers at
    an instant are mappings with intervals, as CQELS-CEP's); C-SPARQL keeps ``Aggregate``."""
    for text, lang in ((RSEP_PER_STOP, "rsepql"), (EP_TWICE, "epsparql")):
        q = compile_query(text)
        assert getattr(A, f"is_{lang}")(q)
        assert any(isinstance(n, A.GroupCover) for n in A.walk(q.form)), lang


def test_a_continuous_run_evaluates_grouping_at_content_changes():
    """A group's values and cover change with its members, so a continuous run evaluates a grouped
    query at its windows' content changes (``cep.continuous.plan``; run in tests/test_continuous_instants.py)."""
    grouped = plan(compile_query(TWICE), "m")
    assert (grouped.mode, grouped.cqels) == ("instants", True)
    plain = plan(compile_query(PREFIXES + "SELECT ?s\n" + WINDOW + "WHERE { WINDOW :W { ?v :delayAt ?s } }"), "m")
    assert (plain.mode, plain.cqels) == ("lifetimes", False)


def test_query_job_reads_the_background_of_a_grouped_query(tmp_path):
    """``rsp-sidecar query --at T``: the FROM graph under the grouping is still a graph the query
    reads (``A.background_patterns`` looks below GroupCover / HAVING), so its --static file is kept."""
    import argparse

    from jobs import query as Q

    (tmp_path / "map.nt").write_text("".join(f"{s} {p} {o} .\n" for s, p, o in BACKGROUND), encoding="utf-8")
    (tmp_path / "stream.nt").write_text("", encoding="utf-8")
    (tmp_path / "q.rq").write_text(SUBWAY_TWICE_HAVING, encoding="utf-8")
    parser = argparse.ArgumentParser()
    Q.add_arguments(parser)
    args = parser.parse_args([str(tmp_path / "q.rq"), "--static", f"{MAP}={tmp_path / 'map.nt'}",
                              "--stream", f"{STREAM}={tmp_path / 'stream.nt'}", "--at", "16", "--time-unit", "m"])
    assert list(Q.plan(args).graphs) == [MAP]
