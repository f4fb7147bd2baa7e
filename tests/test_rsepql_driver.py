"""RSEP-QL ``query --at`` on the driver (``cep.engines.driver.rsepql``, issue 37), against the
reference (``cep.engines.reference.evaluate_sequence``), with no Spark: random event patterns
(nested SEQ / FIRST / LAST under every policy, several windows of one stream, items of one and two
triples, same-time items) at several instants in order (consumption between them), MATCH joined
with a background and with a WINDOW graph pattern, Fig. 1's table, the refusals and the command line.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cep import algebra as A
from cep import compile_query
from cep.engines import reference as R
from cep.engines.driver import answers as D
from cep.engines.driver import static
from jobs import query as job
from rdfcore.hashing import term_id
from tests.hypothesis_profiles import examples
from tests.test_rsepql import (EXAMPLE_6, FIG1, ITEMS, PREDS, QUERY, STREAM, SUBJ, WITH_MATCH, fig1_answers, iri,
                                rsep_cases, rsep_streams, windows, x, y, z)

REPO = Path(__file__).resolve().parent.parent


def driver_answers(query, items, times, background=()):
    """The driver's answers per instant, as ``evaluate_sequence`` gives them: [{(μ, t1, t2)}]."""
    assert D.refusal(query) is None, D.refusal(query)
    words = {x for (_i, g, _a, _b) in items for tr in g for x in tr} | {x for tr in background for x in tr}
    rows = np.array([(item, *map(term_id, tr), t1, t2) for item, g, t1, t2 in items for tr in g],
                    dtype=np.int64).reshape(-1, 6)
    graphs = {None: static.StaticGraph(frozenset(tuple(map(term_id, tr)) for tr in background))}
    got = D.answers_at(query, graphs, {STREAM: rows}, times, "ms", {term_id(w): w for w in words})
    out = {t: set() for t in times}
    for at, *values, t1, t2 in got.rows:
        out[at].add((frozenset((n, v) for n, v in zip(got.variables, values) if v is not None), t1, t2))
    return [out[t] for t in times]


def assert_equal_reference(items, cases, times) -> None:
    """Each query of ``cases`` at ``times`` (in order), on the driver and by the reference."""
    times = sorted(times)
    for query in cases:
        assert driver_answers(query, items, times) == R.evaluate_sequence(query, {}, {STREAM: items}, times), \
            f"{query} at {times}"


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=rsep_streams(), cases=st.lists(rsep_cases(), min_size=3, max_size=3),
       times=st.lists(st.integers(0, 14), min_size=3, max_size=3, unique=True))
def test_random_event_patterns_equal_the_reference(items, cases, times):
    assert_equal_reference(items, cases, times)


@st.composite
def crowded_streams(draw, most=40, subjects=SUBJ):
    """Longer streams on few times and few subjects: many events share their ≺ key, their values
    of the variables a SEQ's sides share, or both."""
    out = []
    for k in range(draw(st.integers(0, most))):
        t = draw(st.integers(0, 8))
        g = draw(st.frozensets(st.tuples(st.sampled_from(subjects), st.sampled_from(PREDS), st.sampled_from(subjects)),
                               min_size=1, max_size=3))
        out.append((k, g, t, t))
    return out


@st.composite
def mixed_nodes(draw, depth=3):
    """Event nodes nested three deep, each SEQ under its own policy (a MATCH's policy names the
    consumption; the SEQs inside may each select differently)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        a, b = draw(st.sampled_from([(x, y), (y, z), (x, z), (y, y), (x, x)]))
        name = draw(st.sampled_from(["w1", "w2"]))
        return A.EventPattern(iri(name), STREAM, draw(windows), A.bgp(A.triple(a, draw(st.sampled_from(PREDS)), b)))
    kind = draw(st.sampled_from(["seq", "seq", "seq", "first", "last"]))
    if kind == "first":
        return A.FirstEvent(draw(mixed_nodes(depth - 1)))
    if kind == "last":
        return A.LastEvent(draw(mixed_nodes(depth - 1)))
    return A.EventSeq(draw(mixed_nodes(depth - 1)), draw(mixed_nodes(depth - 1)), draw(st.sampled_from(A.POLICIES)))


@st.composite
def mixed_cases(draw):
    node = draw(mixed_nodes())
    names = sorted(v.name for v in A.variables(node))
    return A.Query(A.Project(tuple(A.Var(n) for n in names), False, A.Match(node, draw(st.sampled_from(A.POLICIES)))))


@settings(max_examples=examples(15, 300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=crowded_streams(), cases=st.lists(mixed_cases(), min_size=2, max_size=2),
       times=st.lists(st.integers(0, 10), min_size=3, max_size=4, unique=True))
def test_crowded_streams_and_mixed_policies_equal_the_reference(items, cases, times):
    """Up to 40 items on 9 instants and 3 subjects, SEQs nested three deep under mixed policies."""
    assert_equal_reference(items, cases, times)


@settings(max_examples=examples(5, 100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=crowded_streams(most=120, subjects=SUBJ[:2]), cases=st.lists(rsep_cases(), min_size=2, max_size=2),
       times=st.lists(st.integers(0, 10), min_size=2, max_size=2, unique=True))
def test_one_binding_key_equals_the_reference(items, cases, times):
    """Up to 120 items on two subjects: nearly every event shares its binding key and its ≺ key
    with many others (the ties FIRST / LAST keep, the E2 events that discard an E1 event)."""
    assert_equal_reference(items, cases, times)


@pytest.mark.parametrize("policy", A.POLICIES)
def test_fig1_table_at_8_and_10(policy):
    """Fig. 1 under each policy: the chronological and recent ones consume between 8 and 10."""
    query = compile_query(QUERY % policy.upper())
    assert driver_answers(query, ITEMS, [8, 10]) == list(FIG1[policy])


def test_match_with_a_background_and_a_window_graph_pattern():
    background = {(iri("a1"), iri("r"), iri("v1")), (iri("a2"), iri("r"), iri("v2")), (iri("b1"), iri("q"), iri("c9"))}
    with_background = compile_query("""PREFIX : <http://example.org/rsep#>
SELECT ?x ?y ?z ?v FROM NAMED WINDOW :w ON :S [RANGE 12 STEP 2]
WHERE { MATCH CHRONOLOGICAL ( EVENT :w { ?x :p ?y } SEQ EVENT :w { ?y :q ?z } ) . ?x :r ?v FILTER (?z != :c2) }""")
    times = [2, 5, 6, 8, 10, 13]
    for query in (with_background, compile_query(WITH_MATCH), compile_query(EXAMPLE_6)):
        expected = R.evaluate_sequence(query, {None: background}, {STREAM: ITEMS}, times)
        assert any(expected), query
        assert driver_answers(query, ITEMS, times, background) == expected, query


@pytest.mark.parametrize("text, reason", [
    ((QUERY % "").replace("SELECT ?x ?y ?z", "SELECT ?x ?y") + " ORDER BY ?z",
     "ORDER BY over a variable the SELECT does not project"),
    (QUERY.replace("?y :q ?z } )", "?y :q ?z } ) BIND (1 AS ?k)") % "", "BIND over the MATCH"),
])
def test_refusals_say_why(text, reason):
    why = D.refusal(compile_query(text))
    assert why is not None and reason in why and "(on Spark)" in why


def test_query_job_on_the_driver_prints_fig1(capsys):
    """``query ontologies/rsep_fig1_query.rq --at 8,10 --engine local`` prints Fig. 1's table."""
    for policy in A.POLICIES:
        code = job.main([str(REPO / "ontologies" / "rsep_fig1_query.rq"), "--stream",
                         f":S={REPO / 'ontologies' / 'rsep_fig1_stream.jsonl'}", "--at", "8,10", "--policy", policy,
                         "--engine", "local"])
        assert code == 0 and fig1_answers(capsys.readouterr().out.splitlines()) == FIG1[policy], policy
