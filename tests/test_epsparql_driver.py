"""EP-SPARQL and CONSTRUCT ``query --at`` on the driver (``cep.engines.driver.epsparql``, issue 37),
against the reference (``cep.engines.reference``), with no Spark.

EP-SPARQL: random patterns of every operator (Join, SEQ, EQUALS, UNION, OPTIONAL, OPTIONALSEQ,
EQUALSOPTIONAL, FILTER over getDURATION() and BOUND, BIND, sub-queries, GROUP BY and aggregates)
over random streams split into two, at every instant from before the first occurrence to after the last has ended; each
instant with a lookback D; CONSTRUCT templates with constants and blank nodes; random CONSTRUCT
rules feeding the stream (the Q-closure) and the paper's (the downrating, the chain, the sliding
average); EP-SPARQL's operators alone on mappings with unbound variables. Then CONSTRUCT in the
other languages (C-SPARQL's plain and REGISTER STREAM under every window convention, CQELS-CEP's
with a background-only answer on both driver engines, RSEP-QL's under every policy; RSEP-QL's
GROUP BY), the
refusals, and the command line: ``--engine local`` prints the reference's answers and never
imports pyspark, and prints byte for byte what ``--engine spark`` prints.
"""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cep import algebra as A
from cep import compile_query
from cep.engines import reference as R
from cep.engines.columns import column_var, var_column
from cep.engines.driver import answers as D
from cep.engines.driver import epsparql as E
from cep.engines.driver import rows as L
from cep.engines.driver import static
from cep.engines.rules import RulesError
from jobs import query as job
from rdfcore.hashing import term_id
from tests import test_csparql_driver as CS
from tests import test_query_at_driver as CQ
from tests.hypothesis_profiles import examples
from tests.stream_terms import PREDICATES, STREAM_IRI, SUBJECTS
from tests.test_epsparql import (AVG_ITEMS, CHAIN_ITEMS, CHAIN_QUERY, CHAIN_RULES, DOWNRATED_TWICE, ITEMS, Q1, Q2, Q4,
                                 Q5, Q6, Q6_FIXED, QUERIES, STREAM_FILE, TRIPLES, ep_extended, ep_patterns,
                                 ep_query, ep_streams, mappings)
from tests.test_rsepql import ITEMS as RSEP_ITEMS
from tests.test_rsepql import QUERY as RSEP_QUERY
from tests.test_rsepql import STREAM as RSEP_STREAM

OTHER = "<http://ex/other>"
DERIVED_P = "<http://ex/derived>"
#: before every occurrence (the streams' times are 0..12, their ends up to 14), on, between, after
INSTANTS = list(range(-1, 17))
v, s, x = (A.Var(n) for n in ("v", "s", "x"))


def id_rows(items) -> np.ndarray:
    return np.array([(item, *map(term_id, tr), t1, t2) for item, g, t1, t2 in items for tr in g],
                    dtype=np.int64).reshape(-1, 6)


def known_terms(streams, queries) -> dict:
    words = {w for items in streams.values() for (_i, g, _a, _b) in items for tr in g for w in tr}
    words |= {w for q in queries for w in A.constants(q.form)}
    return {term_id(w): w for w in words}


def as_reference(query, got_rows, variables) -> dict:
    """Driver rows ``(t, term..., t1, t2)`` as the reference's answers per instant: {t: {(μ or triple, t1, t2)}}."""
    out: dict = {}
    for at, *values, t1, t2 in got_rows:
        if isinstance(query.form, A.Construct):
            answer = tuple(values)
        else:
            answer = frozenset((n, w) for n, w in zip(variables, values) if w is not None)
        out.setdefault(at, set()).add((answer, t1, t2))
    return out


def driver(query, streams, instants, rules=(), time_unit="ms", background=(), convention=None) -> dict:
    """The driver's answers (``answers_at``, the job's entry) per instant; ``background``: the
    default graph's triples."""
    assert D.refusal(query, convention, rules) is None, D.refusal(query, convention, rules)
    graphs = {None: static.StaticGraph(frozenset(tuple(map(term_id, tr)) for tr in background))}
    known = known_terms(streams, [query, *rules])
    known.update((term_id(w), w) for tr in background for w in tr)
    got = D.answers_at(query, graphs, {iri: id_rows(items) for iri, items in streams.items()}, instants, time_unit,
                       known, window_convention=convention, rules=rules)
    assert got.rows == D.sorted_rows(got.rows)
    return as_reference(query, got.rows, got.variables)


def reference(query, streams, instants, rules=(), time_unit="ms") -> dict:
    out = {}
    for t in instants:
        found = R.evaluate(query, {}, streams, t, time_unit, rules=rules)
        if found:
            out[t] = found
    return out


def split(items, other: bool) -> dict:
    """The items as one stream, or as two (every other item in the second): EP-SPARQL merges them."""
    if not other:
        return {STREAM_IRI: items}
    return {STREAM_IRI: items[::2], OTHER: items[1::2]}


# --- EP-SPARQL SELECT, random --------------------------------------------------------------------

@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=ep_streams(), other=st.booleans(),
       patterns=st.lists(st.one_of(ep_patterns(depth=3), ep_extended()), min_size=2, max_size=2))
def test_random_patterns_equal_the_reference_at_every_instant(items, other, patterns):
    streams = split(items, other)
    for pattern in patterns:
        query = ep_query(pattern)
        assert driver(query, streams, INSTANTS) == reference(query, streams, INSTANTS), str(pattern)


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=ep_streams(), pattern=ep_patterns(depth=3), lookback=st.integers(0, 6))
def test_a_lookback_keeps_the_occurrences_started_in_it(items, pattern, lookback):
    """Each instant t sees the occurrences started at or after t − D (``cep.continuous.instants``'
    reading of ``--horizon``), nothing else: the reference over those occurrences."""
    query = ep_query(pattern)
    known = known_terms({STREAM_IRI: items}, [query])
    got = E.answers(query, {STREAM_IRI: id_rows(items)}, INSTANTS, "ms", known, lookback=lookback)
    expected = {}
    for t in INSTANTS:
        found = R.evaluate(query, {}, {STREAM_IRI: [it for it in items if it[2] >= t - lookback]}, t)
        if found:
            expected[t] = found
    assert as_reference(query, got, [var.name for var in query.form.variables]) == expected


@st.composite
def ep_constructs(draw):
    """A CONSTRUCT over a random pattern: a template of a derived triple between two of its
    variables (or a constant), and a blank node per solution pointing at one of them."""
    pattern = draw(st.one_of(ep_patterns(depth=2), ep_extended()))
    names = sorted(A.variables(pattern), key=lambda var: var.name) or [v]   # a sub-query may project none
    first, second = draw(st.sampled_from(names)), draw(st.sampled_from(names + [SUBJECTS[0]]))
    template = [A.TriplePattern(first, DERIVED_P, second)]
    if draw(st.booleans()):
        template.append(A.TriplePattern("_:n", "<http://ex/of>", first))
    return A.Query(A.Construct(tuple(template), A.Occurrences(pattern)))


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=ep_streams(), query=ep_constructs())
def test_random_constructs_equal_the_reference(items, query):
    streams = {STREAM_IRI: items}
    assert driver(query, streams, INSTANTS) == reference(query, streams, INSTANTS), str(query.form)


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=ep_streams(), rule=ep_constructs(), recursive=st.booleans(), pattern=ep_patterns(depth=1),
       op=st.sampled_from(["alone", "seq", "cover", "seqright", "union"]))
def test_random_rules_feed_the_stream_as_the_references(items, rule, recursive, pattern, op):
    """A random rule (with a recursive one: derived SEQ a stream triple derives again), and a query
    reading what it derives, alone or with a random pattern."""
    rules = [rule]
    if recursive:
        rules.append(A.Query(A.Construct((A.TriplePattern(v, DERIVED_P, x),), A.Occurrences(A.Sequence(
            A.bgp(A.triple(v, DERIVED_P, s)), A.bgp(A.triple(s, PREDICATES[0], x)))))))
    derived = A.bgp(A.triple(v, DERIVED_P, s))
    body = {"alone": derived, "seq": A.Sequence(derived, pattern), "cover": A.CoverJoin(pattern, derived),
            "seqright": A.SeqRightJoin(derived, pattern), "union": A.Union(derived, pattern)}[op]
    query = ep_query(body)
    streams = {STREAM_IRI: items}
    assert driver(query, streams, INSTANTS, rules) == reference(query, streams, INSTANTS, rules), \
        (str(query.form), [str(r.form) for r in rules])


# --- EP-SPARQL, the paper's queries and rules ---------------------------------------------------

def test_the_papers_queries_at_every_day():
    """Q1-Q4 (tests/test_epsparql.py), every day from -1 to 104 and at 200."""
    days = list(range(-1, 105)) + [200]
    streams = {STREAM_IRI: ITEMS}
    for name, text in sorted(QUERIES.items()):
        query = compile_query(text)
        expected = reference(query, streams, days, time_unit="d")
        assert expected and driver(query, streams, days, time_unit="d") == expected, name


def test_the_papers_rules_and_the_sliding_average():
    """The downrating rule (Q4) under DOWNRATED_TWICE, the recursive chain, and the sliding average
    (rule (5) under query (6) as printed and fixed): the closure at each instant."""
    cases = [(DOWNRATED_TWICE, [Q4], ITEMS, "d", [99, 100, 101, 102, 200]),
             (CHAIN_QUERY, CHAIN_RULES, CHAIN_ITEMS, "ms", list(range(0, 8))),
             (Q6, [Q5], AVG_ITEMS, "d", [5, 6, 10, 11, 12, 17, 30]),
             (Q6_FIXED, [Q5], AVG_ITEMS, "d", [5, 6, 10, 11, 12, 17, 30])]
    for text, rule_texts, items, unit, times in cases:
        query = compile_query(text, lang="epsparql")
        rules = [compile_query(r, lang="epsparql") for r in rule_texts]
        streams = {STREAM_IRI: items}
        expected = reference(query, streams, times, rules, unit)
        assert expected and driver(query, streams, times, rules, unit) == expected, text
    rule = compile_query(Q5)      # the rule itself over its closure: every point it derives
    expected = reference(rule, {STREAM_IRI: AVG_ITEMS}, [10, 12, 30], [rule], "d")
    assert expected and driver(rule, {STREAM_IRI: AVG_ITEMS}, [10, 12, 30], [rule], "d") == expected


def test_a_rule_with_no_fixpoint_is_the_references_error():
    growing = compile_query("PREFIX : <http://e/> CONSTRUCT { [] :next ?x } WHERE { ?x :next ?y }", lang="epsparql")
    query = compile_query(CHAIN_QUERY, lang="epsparql")
    with pytest.raises(RulesError, match="never reach a fixpoint") as on_driver:
        driver(query, {STREAM_IRI: CHAIN_ITEMS}, [5], [growing])
    with pytest.raises(RulesError) as on_reference:
        R.evaluate(query, {}, {STREAM_IRI: CHAIN_ITEMS}, 5, rules=[growing])
    assert str(on_driver.value) == str(on_reference.value)


@settings(max_examples=examples(40), deadline=None)
@given(o1=mappings, o2=mappings)
def test_operators_equal_the_references(o1, o2):
    """cover_join, eq_join and the three optional joins (with and without a condition) of
    ``cep.engines.driver.rows``, rows alive at one instant, against the reference's operators on
    mappings with unbound variables."""
    names = ("case", "v", "s")

    def rel(omega):
        return L.Rel.of([var_column(n) for n in names],
                        {tuple(dict(mu).get(n) for n in names) + (t1, t2, 0, 0) for (mu, t1, t2) in omega})

    def back(r: L.Rel) -> set:
        return {(frozenset((column_var(c), w) for c, w in zip(r.vars, row) if w is not None), row[-4], row[-3])
                for row in r.rows}

    short = L.keeper(A.Compare("<=", A.IntervalFn("DURATION"), A.Const('"PT0.002S"^^<http://www.w3.org/2001/'
                                                                       'XMLSchema#dayTimeDuration>')),
                     lambda ids: {}, "ms")
    r1, r2 = rel(o1), rel(o2)
    assert back(L.cover_join(r1, r2)) == R.cover_join(o1, o2)
    assert back(L.eq_join(r1, r2)) == R.eq_join(o1, o2)
    for order in ("left", "seq", "equal"):
        assert back(L.optional_join(r1, r2, order)) == R.optional_join(o1, o2, order), order
        assert back(L.optional_join(r1, r2, order, short)) == R.optional_join(o1, o2, order,
                                                                              lambda e: e[2] - e[1] <= 2), order


@st.composite
def ep_groups(draw):
    """GROUP BY (or the implicit group) over a random pattern, with aggregates of its variables."""
    pattern = draw(ep_patterns(depth=2))
    names = sorted(A.variables(pattern), key=lambda var: var.name)
    group = tuple(draw(st.lists(st.sampled_from(names), max_size=1, unique=True)))
    specs = tuple(A.AggregateSpec(A.Var(f"a{k}"), function, None if function == "COUNT" and star else arg,
                                  distinct, group)
                  for k, (function, star, arg, distinct) in enumerate(draw(st.lists(st.tuples(
                      st.sampled_from(A.AGGREGATES), st.booleans(), st.sampled_from(names), st.booleans()),
                      min_size=0 if group else 1, max_size=2))))
    inner = A.GroupCover(A.Occurrences(pattern), group, specs)
    if draw(st.booleans()) and specs:      # HAVING
        inner = A.Filter(A.Bound(specs[0].var), inner)
    return A.Query(A.Project(group + tuple(spec.var for spec in specs), False, inner))


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=ep_streams(), query=ep_groups())
def test_random_groups_equal_the_reference(items, query):
    """One answer per group over the interval covering its members, the aggregates' terms as the
    reference writes them (MIN / MAX of IRIs, COUNT, SUM / AVG of IRIs an error: unbound), the
    implicit group of nothing over [t, t]."""
    streams = {STREAM_IRI: items}
    assert driver(query, streams, INSTANTS) == reference(query, streams, INSTANTS), str(query.form)


def test_groups_over_the_papers_stream():
    """Q1's answers per company counted, the lowest first price, the sum of the second prices
    (numbers: integer sums), with HAVING; and RSEP-QL's GROUP BY over MATCH under every policy."""
    query = compile_query(Q1.replace("SELECT ?company", "SELECT ?company (COUNT(*) AS ?n) (MIN(?price1) AS ?lo) "
                                     "(SUM(?price2) AS ?sum) (AVG(?price3) AS ?avg)")
                          + " GROUP BY ?company HAVING (COUNT(*) > 0)")
    days = [0, 5, 10, 40, 80, 200]
    expected = reference(query, {STREAM_IRI: ITEMS}, days, time_unit="d")
    assert expected and driver(query, {STREAM_IRI: ITEMS}, days, time_unit="d") == expected
    # the implicit group: nothing before the first price (COUNT 0 over [t, t]), then one answer
    # covering every price; per company, the prices' span
    for text in ("SELECT (COUNT(*) AS ?n) (MIN(?p) AS ?m) (COUNT(?p) AS ?k) WHERE { ?c :hasStockPrice ?p }",
                 "SELECT ?c (COUNT(*) AS ?n) WHERE { ?c :hasStockPrice ?p } GROUP BY ?c"):
        query = compile_query("PREFIX : <http://stock.example/> " + text, lang="epsparql")
        days = [-1, 0, 1, 3, 21, 200]
        expected = reference(query, {STREAM_IRI: ITEMS}, days, time_unit="d")
        assert driver(query, {STREAM_IRI: ITEMS}, days, time_unit="d") == expected, text
    for policy in A.POLICIES:
        grouped = compile_query((RSEP_QUERY % policy.upper()).replace(
            "SELECT ?x ?y ?z", "SELECT ?x (COUNT(*) AS ?n) (MAX(?z) AS ?m)") + " GROUP BY ?x")
        times = [2, 5, 6, 8, 10, 13]
        results = R.evaluate_sequence(grouped, {}, {RSEP_STREAM: RSEP_ITEMS}, times)
        expected = {t: found for t, found in zip(times, results) if found}
        assert expected and driver(grouped, {RSEP_STREAM: RSEP_ITEMS}, times) == expected, policy


@pytest.mark.parametrize("text, reason", [
    (Q2 + " ORDER BY ?price1 LIMIT 1", "ORDER BY over a variable the SELECT does not project"),
])
def test_refusals_say_why(text, reason):
    why = D.refusal(compile_query(text))
    assert why is not None and reason in why and "(on Spark)" in why


def test_values_after_where_in_a_query_and_in_a_rule():
    """VALUES after WHERE joins each solution with its rows (UNDEF: any value), over [MIN_TIME, t]:
    in a query and in a rule feeding the stream, the reference's answers at every instant. A JOIN
    of anything else, or VALUES elsewhere (only the algebra builds them), are refused."""
    days = [-1, 3, 21, 50, 99, 100, 101, 102, 200]
    acme, other = "<http://stock.example/ACME>", "<http://stock.example/Nothing>"
    query = compile_query(Q2 + f" VALUES (?company ?agency) {{ ({acme} UNDEF) ({other} UNDEF) }}")
    streams = {STREAM_IRI: ITEMS}
    expected = reference(query, streams, days, time_unit="d")
    unrestricted = reference(compile_query(Q2), streams, days, time_unit="d")
    assert expected and expected != unrestricted
    assert driver(query, streams, days, time_unit="d") == expected
    rule = compile_query(Q4)
    joined = A.Query(A.Construct(rule.form.template, A.Join(rule.form.inner, A.Values(
        (A.Var("company"),), ((other,),)))))     # the rule derives nothing for ACME now
    twice = compile_query(DOWNRATED_TWICE)
    expected = reference(twice, streams, days, [joined], "d")
    assert expected != reference(twice, streams, days, [rule], "d")
    assert driver(twice, streams, days, [joined], "d") == expected
    crossed = A.Query(A.Construct(rule.form.template, A.Join(rule.form.inner, rule.form.inner)))
    assert "a JOIN other than VALUES after WHERE" in D.refusal(twice, None, [crossed])


def test_a_sub_query_ordered_keeps_its_solutions():
    """ORDER BY in a sub-query over the stream (LIMIT and OFFSET are refused there) changes no
    solution: the driver evaluates it, as the reference."""
    query = compile_query("PREFIX : <http://stock.example/> SELECT ?c ?p ?r WHERE { { SELECT ?c ?p WHERE "
                          "{ ?c :hasStockPrice ?p } ORDER BY DESC(?p) } SEQ { ?c :hasRating ?r } }")
    days = [0, 50, 100, 101, 102, 200]
    expected = reference(query, {STREAM_IRI: ITEMS}, days, time_unit="d")
    assert expected and driver(query, {STREAM_IRI: ITEMS}, days, time_unit="d") == expected


# --- CONSTRUCT in the other languages ------------------------------------------------------------

CSPARQL_CONSTRUCTS = [
    CS.HEAD + """REGISTER STREAM out AS CONSTRUCT { ?s :seen ?v . _:b :count ?n . _:b :of ?s }
FROM STREAM :S [RANGE 6 STEP 3] FROM STREAM :S2 [RANGE 4] WHERE { ?s :p ?v } AGGREGATE { (?n, COUNT, {?s}) }""",
    CS.HEAD + """CONSTRUCT { ?s :kindOf ?k . ?s ?p ?o } FROM STREAM :S [TRIPLES 4] FROM STREAM :S2 [ALL]
WHERE { ?s ?p ?o OPTIONAL { ?s :kind ?k } }""",
    "REGISTER STREAM out COMPUTED EVERY 4 AS " + CS.HEAD + """CONSTRUCT { ?g :holds ?s . ?s :at ?t }
FROM NAMED STREAM :S [RANGE 5 STEP 2] WHERE { GRAPH ?g { ?s :q ?o } BIND (NOW() AS ?t) }""",
]


def test_csparql_constructs_equal_the_reference_under_every_convention():
    answered = 0
    for round_ in range(3):
        rng = random.Random(3707 + round_)
        streams = {CS.S1: CS.random_stream(rng, 14, 12), CS.S2: CS.random_stream(rng, 8, 12, first=100)}
        background = CS.random_background(rng)
        for text in CSPARQL_CONSTRUCTS:
            query = compile_query(text)
            for convention in CS.CONVENTIONS:
                results = R.evaluate_sequence(query, {None: set(background)}, streams, CS.INSTANTS,
                                              window_convention=convention)
                expected = {t: found for t, found in zip(CS.INSTANTS, results) if found}
                got = driver(query, streams, CS.INSTANTS, background=background, convention=convention)
                assert got == expected, (round_, text, convention)
                answered += len(expected)
    assert answered


#: a stream answer's triples, and a background-only answer's (over [MIN_TIME, t]: a blank node is named from t)
CQELS_CONSTRUCTS = [
    CQ.HEAD.replace("SELECT *", "CONSTRUCT { ?v :seen ?s . _:b :of ?v . _:b :with ?c }") +
    "[RANGE 5] WHERE { WINDOW :W { SEQ ({?v :p0 ?s}, {?v :p2 ?c}) } OPTIONAL { ?s :link ?c } }",
    CQ.HEAD.replace("SELECT *", "CONSTRUCT { ?a :near ?b . _:b :of ?a }") +
    "[RANGE 4] WHERE { ?a :link ?b OPTIONAL { ?b :type ?k } }",
]


@pytest.mark.parametrize("columnar", [False, True])
@pytest.mark.parametrize("text", CQELS_CONSTRUCTS)
def test_cqels_construct_equals_the_reference(monkeypatch, columnar, text):
    """On the Python rows and on the numpy columns."""
    if columnar:
        monkeypatch.setattr(D, "COLUMNAR_FROM", 0)
    query = compile_query(text)
    instants = [-3, 0, 2, 4, 5, 7, 8, 11, 12, 13, 16, 20]
    answered = 0
    for seed in range(6):
        rng = random.Random(seed * 7919 + 37)
        background, items = CQ.random_background(rng), CQ.random_stream(rng, 10, 12)
        got = driver(query, {STREAM_IRI: items}, instants, background=background)
        expected = {}
        for t in instants:
            found = R.evaluate(query, {None: background}, {STREAM_IRI: items}, at=t)
            if found:
                expected[t] = found
        assert got == expected, seed
        answered += len(expected)
    assert answered, "no answer: the test would prove nothing"


@pytest.mark.parametrize("policy", A.POLICIES)
def test_rsepql_construct_equals_the_reference(policy):
    query = compile_query((RSEP_QUERY % policy.upper()).replace("SELECT ?x ?y ?z",
                                                                "CONSTRUCT { ?x :to ?z . _:e :via ?y }"))
    times = [2, 5, 6, 8, 10, 13]
    results = R.evaluate_sequence(query, {}, {RSEP_STREAM: RSEP_ITEMS}, times)
    expected = {t: found for t, found in zip(times, results) if found}
    assert expected and driver(query, {RSEP_STREAM: RSEP_ITEMS}, times) == expected


# --- the command line ------------------------------------------------------------------------------

def _tsnt(triples) -> str:
    return "".join(f'{a} {b} {c} "{t}" .\n' for (a, b, c, t) in triples)


def _ep_files(tmp_path: Path) -> list[str]:
    """Q2 over the stock stream split in two files (one named, one not) and the downrating rule."""
    (tmp_path / "q2.rq").write_text(Q2, encoding="utf-8")
    prices = [t for t in TRIPLES if "hasStockPrice" in t[1]]
    (tmp_path / "prices.nt").write_text(_tsnt(prices), encoding="utf-8")
    (tmp_path / "other.nt").write_text(_tsnt([t for t in TRIPLES if t not in prices]), encoding="utf-8")
    return [str(tmp_path / "q2.rq"), "--stream", str(tmp_path / "prices.nt"), "--stream",
            f"<http://stock.example/other>={tmp_path / 'other.nt'}", "--time-unit", "d"]


def test_query_job_on_the_driver_prints_the_reference_rows(tmp_path, capsys):
    argv = _ep_files(tmp_path) + ["--at", "4,5,21,200", "--engine", "local"]
    assert job.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    integer = job.XSD_INTEGER
    acme, agency, gamma = (f"<http://stock.example/{n}>" for n in ("ACME", "AgencyX", "GAMMA"))
    assert out == ["?_at\t?company\t?agency\t?_start\t?_end",
                   f'"5"^^{integer}\t{acme}\t{agency}\t"0"^^{integer}\t"5"^^{integer}',
                   f'"21"^^{integer}\t{acme}\t{agency}\t"0"^^{integer}\t"5"^^{integer}',
                   f'"21"^^{integer}\t{gamma}\t\t"20"^^{integer}\t"21"^^{integer}',
                   f'"200"^^{integer}\t{acme}\t{agency}\t"0"^^{integer}\t"5"^^{integer}',
                   f'"200"^^{integer}\t{gamma}\t\t"20"^^{integer}\t"21"^^{integer}']
    (tmp_path / "q4.rq").write_text(Q4, encoding="utf-8")
    assert job.main([str(tmp_path / "q4.rq"), "--stream", str(STREAM_FILE), "--at", "100,101,200",
                     "--time-unit", "d", "--engine", "local"]) == 0
    assert capsys.readouterr().out == ('<http://stock.example/ACME> <http://stock.example/downrated> '
                                       '"true"^^<http://www.w3.org/2001/XMLSchema#boolean> .\n')


def test_query_job_on_the_driver_imports_no_pyspark(tmp_path):
    """``rsp-sidecar query --at`` of an EP-SPARQL query under a rule, ``--engine auto``: answered on
    the driver, and the process never imports pyspark."""
    repo = Path(__file__).resolve().parent.parent
    argv = ["query", str(repo / "ontologies" / "stock_downrated_query.rq"), "--rules",
            str(repo / "ontologies" / "stock_downrated_rule.rq"), "--stream", str(STREAM_FILE), "--at", "100,101",
            "--time-unit", "d"]
    code = ("import sys\nfrom jobs.cli import main\nrc = main(sys.argv[1:])\n"
            "assert 'pyspark' not in sys.modules, 'pyspark was imported'\nsys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, *argv, "--engine", "auto"], capture_output=True, text=True,
                          timeout=300, cwd=repo)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[1].split("\t")[:3] == ['"101"^^<http://www.w3.org/2001/XMLSchema#integer>',
                                                           "<http://stock.example/ACME>",
                                                           "<http://stock.example/AgencyX>"]


CLI_CONSTRUCT = CS.HEAD + """REGISTER STREAM out AS CONSTRUCT { ?s :kindOf ?k . _:b :sum ?sum . _:b :of ?s }
FROM STREAM :S [RANGE 6 STEP 2] FROM STREAM :S2 [RANGE 4 TUMBLING]
WHERE { ?s :p ?v OPTIONAL { ?s :kind ?k } } AGGREGATE { (?sum, SUM(?v), {?s}) }"""


@pytest.mark.spark
def test_local_engine_prints_what_spark_prints(spark, tmp_path, capsys):
    """``--engine local`` prints, byte for byte, what ``--engine spark`` prints: an EP-SPARQL query
    (OPTIONALSEQ over two stream files, an unbound variable) and a C-SPARQL REGISTER STREAM
    CONSTRUCT with aggregates, an OPTIONAL and blank nodes (timestamped N-Triples) at two instants.
    Each instant is a Spark evaluation of its own (tens of seconds); the answers at many instants
    are compared with the reference by the Spark-free tests above."""
    ep = _ep_files(tmp_path) + ["--at", "21"]
    cs, _streams, _background = CS.cli_files(tmp_path)
    (tmp_path / "c.rq").write_text(CLI_CONSTRUCT, encoding="utf-8")
    cs = [str(tmp_path / "c.rq")] + [a for a in cs[1:] if not a.startswith("--at=")] + ["--at", "9,13"]
    for argv in (ep, cs):
        assert job.main(argv + ["--engine", "local"]) == 0
        local = capsys.readouterr().out
        assert job.main(argv + ["--engine", "spark"]) == 0
        on_spark = capsys.readouterr().out
        assert len(local.splitlines()) > 2 and local == on_spark, argv[0]
