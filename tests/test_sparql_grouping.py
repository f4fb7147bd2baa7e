"""SPARQL 1.1 GROUP BY, HAVING and (aggregate AS ?v) in SELECT (§11, §18.2.4.1), and ORDER BY /
LIMIT / OFFSET (§15), shared by every front end (grouping lowered onto C-SPARQL's ``Aggregate``
node; over CQELS-CEP's event clauses onto ``GroupCover``, tests/test_cep_grouping.py): the reference evaluator against pyoxigraph on the background-only fragment (same query,
same data, same answers), and the errors.

Answers are sets in ``cep`` (a projection drops duplicate rows; SPARQL's are bags), so the ordered
queries below are written so that they have no duplicates (DISTINCT, or projecting enough).
Ordering is compared where SPARQL defines it (numbers, strings, IRIs, each on their own): the
sequence of the keys' values, since SPARQL leaves the order of equal keys open (we break ties by
the answers' ids, which is what makes LIMIT deterministic here; ``cep.algebra.patterns.Modifiers``).

Aggregate values are compared by value where the two write one value differently (pyoxigraph
writes a decimal sum of 4 as "4", we as XSD's canonical "4.0"; a double as "3.5", we as "3.5E0";
we write doubles to 15 significant digits).
Solutions are sets here (as everywhere in ``cep``); the queries below produce no duplicate
solutions, so bag and set semantics agree on them.
"""
from __future__ import annotations

from decimal import Decimal, localcontext

import pyoxigraph as ox
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cep import CepSemanticError, compile_query
from cep import algebra as A
from cep.engines import reference as R
from cep.terms.literals import number_kind, parse_literal
from tests.hypothesis_profiles import examples

EX = "http://example.org/g#"
XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIX = f"PREFIX : <{EX}>\n"

#: with integers of more than 28 - 18 digits (the exact decimals' context needs more than Python's
#: default 28 digits) and past a double's 53 bits
VALUES = ([f'"{v}"^^<{XSD}integer>' for v in ("0", "1", "2", "7", "12345678901234", "9007199254740993")] + [f'"{v}"^^<{XSD}decimal>' for v in ("0.5", "1.25")]
          + [f'"{v}"^^<{XSD}double>' for v in ("1.5E0", "-2.0E0")] + ['"x"', '"y"', f"<{EX}o>"])
NODES = [f"<{EX}{n}>" for n in "abc"]

QUERIES = [
    PREFIX + "SELECT ?s (COUNT(*) AS ?n) (COUNT(DISTINCT ?o) AS ?d) (SUM(?o) AS ?t) (AVG(?o) AS ?a) "
             "(MIN(?o) AS ?mi) (MAX(?o) AS ?ma) WHERE { ?s :p ?o } GROUP BY ?s",
    PREFIX + "SELECT ?s (SUM(DISTINCT ?o) AS ?t) WHERE { ?s :p ?o } GROUP BY ?s HAVING (COUNT(?o) > 1)",
    PREFIX + "SELECT (COUNT(*) AS ?n) (SUM(?o) AS ?t) (AVG(?o) AS ?a) (MAX(?o) AS ?m) WHERE { ?s :q ?o }",
    PREFIX + "SELECT ?w (COUNT(?w) AS ?n) (COUNT(*) AS ?all) WHERE { ?s :p ?o OPTIONAL { ?s :q ?w } } GROUP BY ?w",
    PREFIX + "SELECT ?s ?o WHERE { ?s :p ?o } GROUP BY ?s ?o HAVING (isNumeric(?o))",
    PREFIX + "SELECT (MIN(?s) AS ?first) (COUNT(DISTINCT ?s) AS ?n) WHERE { ?s ?p ?o FILTER (?o != :o) }",
]


def _value(term):
    """A term as pyoxigraph and we agree on it: numbers by (kind, value), the rest as written."""
    if term is None:
        return None
    lit = parse_literal(term)
    kind = number_kind(lit[2]) if lit else None
    if kind is None:
        return term
    if kind == "double":   # we write 15 significant digits
        return ("double", float(f"{float(lit[0]):.13e}"))
    with localcontext() as ctx:   # 20 integer and 18 fraction digits
        ctx.prec = 80
        return (kind, round(Decimal(lit[0]), 17))    # AVG: 18 digits, rounded (we) or truncated (pyoxigraph)


def _store(triples) -> ox.Store:
    store = ox.Store()
    for tr in triples:
        store.add(ox.Quad(*(_ox_term(x) for x in tr)))
    return store


def _oxigraph(query: str, triples) -> set:
    out = set()
    result = _store(triples).query(query)
    names = [v.value for v in result.variables]
    for row in result:
        out.add(frozenset((n, _value(str(row[n]))) for n in names if row[n] is not None))
    return out


def _ox_term(term: str):
    if term.startswith("<"):
        return ox.NamedNode(term[1:-1])
    lex, _lang, dt = parse_literal(term)
    return ox.Literal(lex, datatype=ox.NamedNode(dt))


def _ours(query: str, triples) -> set:
    got = R.evaluate(compile_query(query), {None: set(triples)}, {}, 0)
    return {frozenset((k, _value(v)) for k, v in mu) for (mu, _t1, _t2) in got}


graphs = st.sets(st.tuples(st.sampled_from(NODES), st.sampled_from([f"<{EX}p>", f"<{EX}q>"]),
                           st.sampled_from(VALUES)), max_size=10)


@settings(max_examples=examples(40), deadline=None)
@given(triples=graphs)
# MIN over numbers and a string: 2, the least number (by text, "12345678901234" came first)
@example(triples={(f"<{EX}a>", f"<{EX}p>", f'"12345678901234"^^<{XSD}integer>'),
                  (f"<{EX}a>", f"<{EX}p>", f'"2"^^<{XSD}integer>'), (f"<{EX}a>", f"<{EX}p>", '"x"')})
def test_grouping_equals_pyoxigraph(triples):
    for query in QUERIES:
        assert _ours(query, triples) == _oxigraph(query, triples), query


ORDERED = [
    (PREFIX + "SELECT ?s ?o WHERE { ?s :p ?o FILTER (isNumeric(?o)) } ORDER BY ?o", "o"),
    (PREFIX + "SELECT DISTINCT ?s ?o WHERE { ?s ?p ?o FILTER (isNumeric(?o)) } ORDER BY DESC(?o) LIMIT 3 OFFSET 1", "o"),
    (PREFIX + "SELECT DISTINCT ?o WHERE { ?s ?p ?o FILTER (isLiteral(?o) && !isNumeric(?o)) } ORDER BY DESC(?o)", "o"),
    (PREFIX + "SELECT DISTINCT ?s WHERE { ?s ?p ?o } ORDER BY DESC(?s) OFFSET 1", "s"),
    (PREFIX + "SELECT ?s (COUNT(*) AS ?n) WHERE { ?s ?p ?o } GROUP BY ?s ORDER BY DESC(?n) LIMIT 2", "n"),
    (PREFIX + "SELECT ?s ?o WHERE { ?s :p ?o FILTER (isNumeric(?o)) } ORDER BY ASC(?o * -1) LIMIT 2", "o"),
]


@settings(max_examples=examples(40), deadline=None)
@given(triples=graphs)
def test_order_limit_offset_equal_pyoxigraph(triples):
    for query, key in ORDERED:
        ours = R.evaluate(compile_query(query), {None: set(triples)}, {}, 0)
        assert isinstance(ours, list)
        mine = [_value(dict(mu).get(key)) for (mu, _t1, _t2) in ours]
        theirs = [_value(str(row[key])) for row in _store(triples).query(query)]
        numbers = all(isinstance(v, tuple) for v in mine + theirs)
        if numbers:   # 1 (integer) and 1.0 (decimal) are equal keys: compare the values alone
            mine, theirs = [float(v[1]) for v in mine], [float(v[1]) for v in theirs]
        assert mine == theirs, query


def test_order_of_mixed_terms():
    """Unbound < blank nodes < IRIs < literals; numbers by value, then booleans, times, strings by
    lexical form, other literals by their text; DESC reverses the keys, not the ties."""
    terms = [f'"10"^^<{XSD}integer>', f'"9.5"^^<{XSD}decimal>', '"b"', '"a"', '"a"@en', f"<{EX}z>", "_:n",
             f'"true"^^<{XSD}boolean>', f'"2026-01-01T00:00:00Z"^^<{XSD}dateTime>']
    graph = {(f"<{EX}s{i}>", f"<{EX}p>", t) for i, t in enumerate(terms)} | {(f"<{EX}u>", f"<{EX}q>", '"x"')}
    q = compile_query(PREFIX + "SELECT ?s ?o WHERE { ?s ?p ?x OPTIONAL { ?s :p ?o } } ORDER BY ?o")
    got = [dict(mu).get("o") for (mu, _a, _b) in R.evaluate(q, {None: graph}, {}, 0)]
    assert got == [None, "_:n", f"<{EX}z>", f'"9.5"^^<{XSD}decimal>', f'"10"^^<{XSD}integer>',
                   f'"true"^^<{XSD}boolean>', f'"2026-01-01T00:00:00Z"^^<{XSD}dateTime>', '"a"', '"b"', '"a"@en']


def test_implicit_group_of_nothing():
    """No solution: one row, COUNT 0, SUM 0, AVG 0, MAX unbound (SPARQL 1.1 §18.5)."""
    got = R.evaluate(compile_query(QUERIES[2]), {None: set()}, {}, 5)
    zero = f'"0"^^<{XSD}integer>'
    assert got == {(frozenset({("n", zero), ("t", zero), ("a", zero)}), R.MIN_TIME, 5)}


def test_lowering():
    q = compile_query(QUERIES[1])
    having = q.pattern
    assert isinstance(having, A.Filter) and isinstance(having.inner, A.Aggregate)
    assert [s.var.name for s in having.inner.specs] == ["t", "_agg1"]
    assert having.inner.specs[0] == A.AggregateSpec(A.Var("t"), "SUM", A.Var("o"), True, (A.Var("s"),))
    assert q.form.variables == (A.Var("s"), A.Var("t"))


@pytest.mark.parametrize("text, message", [
    (PREFIX + "SELECT ?s ?o (COUNT(*) AS ?n) WHERE { ?s :p ?o } GROUP BY ?s", "?o is selected but neither grouped"),
    (PREFIX + "SELECT ?s (?o + 1 AS ?n) WHERE { ?s :p ?o } GROUP BY ?s", "?o is neither grouped nor inside an aggregate"),
    (PREFIX + "SELECT ?s (SUM(MAX(?o)) AS ?n) WHERE { ?s :p ?o } GROUP BY ?s", "an aggregate inside an aggregate"),
    (PREFIX + "SELECT ?s (COUNT(*) AS ?o) WHERE { ?s :p ?o } GROUP BY ?s", "?o is already bound"),
    (PREFIX + "SELECT ?s WHERE { ?s :p ?o FILTER (COUNT(?o) > 1) }", "belongs in SELECT"),
    (PREFIX + "SELECT ?s WHERE { ?s :p ?o } HAVING (?s = :a)", "HAVING without GROUP BY"),
    (PREFIX + "SELECT * WHERE { ?s :p ?o } GROUP BY ?s", "SELECT * with GROUP BY"),
    (PREFIX + "SELECT (SUM(*) AS ?n) WHERE { ?s :p ?o }", "SUM(*) is not an aggregate"),
    # over event clauses grouping is GroupCover, in every language (tests/test_cep_grouping.py)
    (PREFIX + "SELECT ?s (COUNT(*) AS ?n) WHERE { ?s :p ?o } GROUP BY ?s ORDER BY ?o", "ORDER BY reads ?o, which is not selected"),
])
def test_errors(text, message):
    with pytest.raises(CepSemanticError) as err:
        compile_query(text)
    assert message in str(err.value)
