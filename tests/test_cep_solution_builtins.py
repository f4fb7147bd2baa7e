"""NOW(), RAND(), UUID(), STRUUID() and BNODE() (SPARQL 1.1 §17.4): the built-ins whose value is not a
function of their arguments alone.

NOW() is the evaluation instant as an xsd:dateTime; the others draw from a hash of the solution
(``cep.terms.values.solution_hash``), so each solution gets its own value and a re-evaluated or replayed
answer the same one. pyoxigraph cannot be the oracle here (its values are random), so the reference
is checked for what §17.4 asks of the values (range, shape, distinctness, sameness), and Spark for
giving the reference's very values.
"""
from __future__ import annotations

import re
from collections import Counter

import pytest

from cep import CepSemanticError, compile_query
from cep.engines import reference as R

EX = "http://example.org/r#"
PREFIX = f"PREFIX : <{EX}>\n"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def triples(n: int) -> set:
    return {(f"<{EX}s{i}>", f"<{EX}p>", f'"v{i % 3}"') for i in range(n)}


def solve(text: str, data: set, at: int = 0, unit: str = "ms") -> list[dict]:
    return [dict(mu) for (mu, _t1, _t2) in R.evaluate(compile_query(PREFIX + text), {None: data}, {}, at=at,
                                                         time_unit=unit)]


def test_rand_is_a_double_in_0_1_spread_over_the_solutions():
    rows = solve("SELECT ?s ?r WHERE { ?s :p ?o BIND(RAND() AS ?r) }", triples(2000))
    values = [float(re.match(r'^"(.*)"\^\^<http://www.w3.org/2001/XMLSchema#double>$', mu["r"]).group(1))
              for mu in rows]
    assert len(values) == 2000 and all(0 <= v < 1 for v in values)
    assert len(set(values)) == 2000
    buckets = Counter(int(v * 10) for v in values)
    assert sorted(buckets) == list(range(10)) and all(140 <= c <= 260 for c in buckets.values()), buckets
    # in FILTER: a number (about half the solutions below 0.5), the same draw as BIND's
    half = solve("SELECT ?s WHERE { ?s :p ?o FILTER(RAND() < 0.5) }", triples(2000))
    assert 900 <= len(half) <= 1100


def test_uuid_and_struuid_are_version_4_and_fresh_per_solution():
    rows = solve("SELECT ?s ?u ?t WHERE { ?s :p ?o BIND(UUID() AS ?u) BIND(STRUUID() AS ?t) }", triples(300))
    assert all(re.fullmatch(f"<urn:uuid:{UUID}>", mu["u"]) for mu in rows)
    assert all(re.fullmatch(f'"{UUID}"', mu["t"]) for mu in rows)
    assert len({mu["u"] for mu in rows}) == len({mu["t"] for mu in rows}) == 300
    kept = solve('SELECT ?s WHERE { ?s :p ?o FILTER(isIRI(UUID()) && STRLEN(STRUUID()) = 36 && !isIRI(STRUUID())) }',
                 triples(5))
    assert len(kept) == 5


def test_bnode_fresh_per_solution_and_the_same_for_the_same_string():
    rows = solve('SELECT ?s ?o ?b ?c ?d WHERE { ?s :p ?o BIND(BNODE() AS ?b) BIND(BNODE(?o) AS ?c) '
                 'BIND(BNODE("v1") AS ?d) }', triples(30))
    assert all(mu[k].startswith("_:b") for mu in rows for k in "bcd")
    assert len({mu["b"] for mu in rows}) == 30
    assert len({mu["c"] for mu in rows}) == 30         # each solution has its own nodes
    same = solve('SELECT ?s WHERE { ?s :p ?o FILTER(BNODE(?o) = BNODE(STR(?o)) && BNODE(?o) != BNODE("w") '
                 '&& isBlank(BNODE()) && BNODE() = BNODE()) }', triples(6))
    assert len(same) == 6
    # only a simple literal or xsd:string names one; anything else is an error (the row is dropped)
    assert solve('SELECT ?s WHERE { ?s :p ?o FILTER(isBlank(BNODE(?s)) || isBlank(BNODE("x"@en))) }', triples(3)) == []
    # a re-evaluation gives the same values (what exactly-once output needs)
    text = "SELECT ?s ?b ?r WHERE { ?s :p ?o BIND(BNODE() AS ?b) BIND(RAND() AS ?r) }"
    assert solve(text, triples(10)) == solve(text, triples(10))


def test_now_is_the_evaluation_instant():
    text = f'SELECT ?s ?n WHERE {{ ?s :p ?o BIND(NOW() AS ?n) FILTER(NOW() > "2023-01-01T00:00:00Z"^^<{XSD_DATETIME}>) }}'
    rows = solve(text, triples(2), at=1_700_000_000_250)
    assert {mu["n"] for mu in rows} == {f'"2023-11-14T22:13:20.25Z"^^<{XSD_DATETIME}>'} and len(rows) == 2
    assert solve(text, triples(2), at=1_600_000_000_000) == []
    rows = solve("SELECT ?s ?n WHERE { ?s :p ?o BIND(NOW() AS ?n) }", triples(1), at=90, unit="m")
    assert rows[0]["n"] == f'"1970-01-01T01:30:00Z"^^<{XSD_DATETIME}>'
    assert R.evaluate_sequence(compile_query(PREFIX + "SELECT ?n WHERE { BIND(NOW() AS ?n) }"), {None: set()}, {},
                               [0, 60], time_unit="s")[1] == {
        (frozenset({("n", f'"1970-01-01T00:01:00Z"^^<{XSD_DATETIME}>')}), R.MIN_TIME, 60)}


def test_arguments_and_continuous_plans():
    with pytest.raises(CepSemanticError, match="RAND takes 0 argument"):
        compile_query(PREFIX + "SELECT * WHERE { ?s :p ?o FILTER(RAND(1) < 1) }")
    with pytest.raises(CepSemanticError, match="BNODE takes 0 to 1 argument"):
        compile_query(PREFIX + "SELECT * WHERE { ?s :p ?o FILTER(isBlank(BNODE(?o, ?s))) }")
    from cep.continuous.plan import ContinuousError, plan

    windowed = (f"SELECT ?s FROM NAMED WINDOW :W ON <{EX}st> [RANGE 5] WHERE {{ WINDOW :W {{ ?s :p ?o }} "
                "FILTER(CONDITION) }")
    now = plan(compile_query(PREFIX + windowed.replace("CONDITION", "?o < NOW()")))
    assert (now.mode, now.cqels) == ("instants", True)       # NOW() is t: evaluated at content changes
    assert plan(compile_query(PREFIX + windowed.replace("CONDITION", "RAND() < 0.5"))).mode == "lifetimes"
    with pytest.raises(ContinuousError, match="--every sets when"):
        plan(compile_query(PREFIX + windowed.replace("CONDITION", "RAND() < 0.5")), every=3)


@pytest.mark.spark
def test_spark_gives_the_references_values(spark):
    """BIND (the reference's function in an Arrow task, over the whole solution's ids) and FILTER
    (Spark columns) give exactly the reference's terms."""
    from tests.test_cep_differential import tagged_results
    from tests.test_csparql import _spark_frames

    data = triples(12) | {(f"<{EX}s1>", f"<{EX}q>", f"<{EX}s2>")}
    texts = [
        "SELECT ?s ?o ?x ?r ?u ?t ?b ?c ?n WHERE { ?s :p ?o OPTIONAL { ?s :q ?x } BIND(RAND() AS ?r) "
        "BIND(UUID() AS ?u) BIND(STRUUID() AS ?t) BIND(BNODE() AS ?b) BIND(BNODE(?o) AS ?c) BIND(NOW() AS ?n) }",
        f'SELECT ?s ?o WHERE {{ ?s :p ?o FILTER(RAND() < 0.5 && STRSTARTS(STR(UUID()), "urn:uuid:") '
        f'&& STRLEN(STRUUID()) = 36 && isBlank(BNODE()) && BNODE(?o) != BNODE("v1") '
        f'&& NOW() = "1970-01-01T00:00:05Z"^^<{XSD_DATETIME}> && NOW() > "1970-01-01T00:00:04Z"^^<{XSD_DATETIME}>) }}',
        "SELECT ?s ?o ?k WHERE { ?s :p ?o FILTER(RAND() >= 0.5) BIND(CONCAT(STRUUID(), STR(RAND())) AS ?k) }",
    ]
    for text in texts:
        frames, decode = _spark_frames(spark, {0: (PREFIX + text, {None: data}, {}, 5000, None)})
        got = tagged_results(frames, decode)[0]
        expected = R.evaluate(compile_query(PREFIX + text), {None: data}, {}, 5000)
        assert expected and set(got) == expected, text
