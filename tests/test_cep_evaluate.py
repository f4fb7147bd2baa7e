"""cep.engines.spark.evaluate.evaluate end to end: the paper's running example (DESIGN.md), and the other query parts
(FILTER, OPTIONAL, UNION, CONSTRUCT, windows) against cep.engines.reference on the same data.

Terms are encoded with Spark's xxhash64 (rdfcore.dictionary); the stream readers of cep.io.streams
are not used here.
"""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from cep import algebra as A
from cep import compile_query, evaluate
from cep.engines import reference as R
from cep.engines.columns import ITEM, T_END, T_START, column_var, var_column
from cep.engines.errors import DictionaryRequiredError, MissingInputError
from rdfcore.dictionary import build_dictionary, encode_column, encode_triples
from rdfcore.hashing import term_id
from rdfcore.errors import SidecarError
from rdfcore.schema import O, P, S
from tests.running_example import EXAMPLE_6, PUBLIC_TRANSPORT, TRANSPORTATION_MAP, VIENNA

EX = VIENNA                     # the shipped Example 6 query's namespace
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
XSD = "http://www.w3.org/2001/XMLSchema#"


def ex(name):
    return f"<{EX}{name}>"


def integer(n):
    return f'"{n}"^^<{XSD}integer>'


BACKGROUND = [
    (ex("conn1"), ex("beg"), ex("m")), (ex("conn1"), ex("end"), ex("b")),
    (ex("conn1"), ex("means"), ex("subway")), (ex("conn1"), ex("dur"), integer(3)),
    (ex("conn2"), ex("beg"), ex("b")), (ex("conn2"), ex("end"), ex("c")),
    (ex("conn2"), ex("means"), ex("subway")), (ex("conn2"), ex("dur"), integer(2)),
    (ex("conn3"), ex("beg"), ex("h")), (ex("conn3"), ex("end"), ex("g")),
    (ex("conn3"), ex("means"), ex("subway")), (ex("conn3"), ex("dur"), integer(3)),
    (ex("conn4"), ex("beg"), ex("g")), (ex("conn4"), ex("end"), ex("c")),
    (ex("conn4"), ex("means"), ex("tram")), (ex("conn4"), ex("dur"), integer(5)),
    (ex("a1"), RDF_TYPE, ex("subway")), (ex("d1"), RDF_TYPE, ex("subway")),
    # for the FILTER tests
    (ex("m"), ex("label"), '"Mariahilf"@de'), (ex("b"), ex("label"), '"Burggasse"'),
    (ex("h"), ex("label"), f'"Heiligenstadt"^^<{XSD}string>'), (ex("conn1"), ex("dur"), f'"3.0"^^<{XSD}decimal>'),
    (ex("conn2"), ex("cost"), f'"2.5E0"^^<{XSD}double>'),
    # for a variable repeated in a triple pattern and at both ends of a path
    (ex("c"), ex("near"), ex("c")), (ex("b"), ex("near"), ex("c")),
]

# (item, triples, t1, t2), times in minutes
STREAM = [
    (1, frozenset({(ex("a1"), ex("delayAt"), ex("m"))}), 10, 10),
    (2, frozenset({(ex("d1"), ex("delayAt"), ex("h"))}), 12, 12),
    (3, frozenset({(ex("d1"), ex("delayAt"), ex("h"))}), 14, 14),
    (4, frozenset({(ex("a1"), ex("delayAt"), ex("m"))}), 16, 16),
]
STREAM_IRI = PUBLIC_TRANSPORT
MAP_IRI = TRANSPORTATION_MAP
QUERY = EXAMPLE_6               # ontologies/vienna_example_query.rq


@pytest.fixture(scope="module")
def data(spark):
    strings = spark.createDataFrame(BACKGROUND, f"{S} string, {P} string, {O} string")
    rows = [(item, s, p, o, t1, t2) for (item, g, t1, t2) in STREAM for (s, p, o) in g]
    stream_strings = spark.createDataFrame(
        rows, f"{ITEM} long, {S} string, {P} string, {O} string, {T_START} long, {T_END} long")
    stream = stream_strings.select(ITEM, encode_column(S).alias(S), encode_column(P).alias(P),
                                   encode_column(O).alias(O), T_START, T_END)
    dictionary = build_dictionary(strings.unionByName(stream_strings.select(S, P, O))).cache()
    return {"background": {MAP_IRI: encode_triples(strings).cache()},
            "streams": {STREAM_IRI: stream.cache()}, "dictionary": dictionary}


def decode_rows(df):
    """Rows of ids -> set of (mapping of N-Triples terms, t1, t2) (ids looked up in Python)."""
    known = {term_id(t): t for triple in BACKGROUND for t in triple}
    known.update({term_id(t): t for (_i, g, _a, _b) in STREAM for tr in g for t in tr})
    out = set()
    for row in df.collect():
        d = row.asDict()
        mu = frozenset((column_var(k), known[v]) for k, v in d.items() if k not in (T_START, T_END) and v is not None)
        out.add((mu, d[T_START], d[T_END]))
    return out


def reference(query, at):
    return R.evaluate(query, {MAP_IRI: BACKGROUND}, {STREAM_IRI: STREAM}, at=at, time_unit="m")


def run(data, query, at):
    return evaluate(query, data["background"], data["streams"], at=at, time_unit="m",
                    dictionary=data["dictionary"])


def test_running_example_at_14_and_16(spark, data):
    q = compile_query(QUERY)
    at14, at16 = run(data, q, 14), run(data, q, 16)
    assert at16.columns == [var_column("s"), T_START, T_END]
    # a background unchanged only since 12 (eq. 17: [12, 16]) cuts the answer's interval (JOIN)
    since12 = evaluate(q, data["background"], data["streams"], at=16, time_unit="m", since=12)
    # one Spark job for all three
    both = (at14.withColumn("_at", F.lit(14)).unionByName(at16.withColumn("_at", F.lit(16)))
            .unionByName(since12.withColumn("_at", F.lit(-16))))
    got = {14: set(), 16: set(), -16: set()}
    rows = both.collect()
    known = {term_id(ex("m")): ex("m"), term_id(ex("h")): ex("h"), term_id(ex("b")): ex("b")}
    for r in rows:
        got[r["_at"]].add((frozenset({("s", known[r[var_column("s")]])}), r[T_START], r[T_END]))
    assert got[14] == set()                     # h reaches c only through the tram connection
    assert got[16] == {(frozenset({("s", ex("m"))}), 10, 16)}
    assert reference(q, 14) == got[14] and reference(q, 16) == got[16]
    assert got[-16] == {(frozenset({("s", ex("m"))}), 12, 16)}


def test_running_example_at_every_instant_in_one_plan(spark, data):
    """cep.engines.spark.evaluate.evaluate_lifetimes (the continuous runtime's plan): nothing at 14, ?s = :m on
    [10, 16] from 16 until the window drops the delay at 10 (16..20), each instant as evaluate's."""
    from cep.engines.columns import LIFE_FROM, LIFE_TO
    from cep.engines.spark.evaluate import Prepared, evaluate_lifetimes

    q = compile_query(QUERY)
    prepared = Prepared(q, data["background"], "m", dictionary=data["dictionary"])
    rows = evaluate_lifetimes(prepared, data["streams"]).collect()
    alive = {t: {(r[T_START], r[T_END]) for r in rows if r[LIFE_FROM] <= t <= r[LIFE_TO]} for t in range(0, 40)}
    assert alive[14] == set() and alive[16] == {(10, 16)}
    assert [t for t in alive if alive[t]] == list(range(16, 21))
    assert all(alive[t] == {(t1, t2) for (_mu, t1, t2) in reference(q, t)} for t in alive)
    prepared.unpersist()


def test_running_example_intermediate_result(spark, data):
    """Example 8/9: ⟦EC, 16⟧ = {<{v:a1, s:m}, [10,16]>, <{v:d1, s:h}, [12,14]>}; ⟦P, 16⟧_D has
    the interval [MIN_TIME, 16] (a static background, eq. 17)."""
    q = compile_query(QUERY)
    ec, bg = A.event_clauses(q.pattern)[0], A.background_patterns(q.pattern)[0]
    events = A.Project((A.Var("v"), A.Var("s")), False, ec)
    got = decode_rows(run(data, A.Query(events), 16))
    expected = {(frozenset({("v", ex("a1")), ("s", ex("m"))}), 10, 16),
                (frozenset({("v", ex("d1")), ("s", ex("h"))}), 12, 14)}
    assert got == expected == reference(A.Query(events), 16)
    static = A.Query(A.Project((A.Var("v"), A.Var("s")), False, bg))
    got_bg = decode_rows(run(data, static, 16))
    # subways a1, d1 × stops reaching :c by subway only, m and b (the paper's Ω5 = {{v:a1, s:m}}
    # lists only the mappings that matter for the join with ⟦EC, 16⟧)
    assert got_bg == {(frozenset({("v", v), ("s", s)}), R.MIN_TIME, 16)
                      for v in (ex("a1"), ex("d1")) for s in (ex("m"), ex("b"))} == reference(static, 16)


PREFIXES = (f"PREFIX : <{VIENNA}>\nPREFIX ex: <http://example.org/>\n"
            "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n")
# background-only and window queries, compared with the reference (and with a stated answer)
CASES = {
    "numeric_filter": (PREFIXES + "SELECT ?c ?d FROM ex:transportationMap WHERE { ?c :dur ?d FILTER(?d >= 3) }", 16,
                       {(("c", ex("conn1")), ("d", integer(3))), (("c", ex("conn3")), ("d", integer(3))),
                        (("c", ex("conn4")), ("d", integer(5))),
                        (("c", ex("conn1")), ("d", f'"3.0"^^<{XSD}decimal>'))}),
    "numeric_equal_across_types": (PREFIXES + "SELECT ?c FROM ex:transportationMap WHERE { ?c :dur ?d FILTER(?d = 3.0) }", 16,
                                   {(("c", ex("conn1")),), (("c", ex("conn3")),)}),
    "arith": (PREFIXES + "SELECT ?c FROM ex:transportationMap WHERE { ?c :cost ?x FILTER(?x * 2 = 5) }", 16,
              {(("c", ex("conn2")),)}),
    "regex_lang_str": (PREFIXES + 'SELECT ?x FROM ex:transportationMap WHERE { ?x :label ?l '
                       'FILTER(REGEX(STR(?l), "^b", "i") || LANG(?l) = "de") }', 16,
                       {(("x", ex("b")),), (("x", ex("m")),)}),
    "datatype_string": (PREFIXES + 'SELECT ?x FROM ex:transportationMap WHERE { ?x :label ?l '
                        'FILTER(DATATYPE(?l) = <http://www.w3.org/2001/XMLSchema#string>) }', 16,
                        {(("x", ex("b")),), (("x", ex("h")),)}),
    "optional_bound": (PREFIXES + "SELECT ?x ?l FROM ex:transportationMap WHERE { ?c :beg ?x "
                       "OPTIONAL { ?x :label ?l } FILTER(!BOUND(?l)) }", 16,
                       {(("x", ex("g")),)}),
    "union_iri_filter": (PREFIXES + "SELECT ?x FROM ex:transportationMap WHERE { { ?c :beg ?x } UNION { ?c :end ?x } "
                         "FILTER(?x != :c && ?x != :b) }", 16,
                         {(("x", ex("m")),), (("x", ex("h")),), (("x", ex("g")),)}),
    # kills cep/engines/spark/evaluate.py mutants (tests/MUTATION.md): a repeated variable compared with != in
    # _triple_part, and ?x path ?x keeping the pairs with start != end in path_part
    "repeated_variable": (PREFIXES + "SELECT ?x FROM ex:transportationMap WHERE { ?x :near ?x }", 16,
                          {(("x", ex("c")),)}),
    "path_same_ends": (PREFIXES + "SELECT ?x FROM ex:transportationMap WHERE { ?x :beg/^:beg ?x }", 16,
                       {(("x", ex(f"conn{i}")),) for i in (1, 2, 3, 4)}),
    "now_window": (PREFIXES + "SELECT ?v FROM NAMED WINDOW :W ON ex:publicTransport [NOW] "
                   "WHERE { WINDOW :W { ?v :delayAt ?s } }", 14, {(("v", ex("d1")),)}),
    "step_window": (PREFIXES + "SELECT ?v ?s FROM NAMED WINDOW :W ON ex:publicTransport [RANGE 10m STEP 5m] "
                    "WHERE { WINDOW :W { SEQ({?v :delayAt ?s}, {?v :delayAt ?s}) } }", 16,
                    {(("v", ex("d1")), ("s", ex("h")))}),
    "triples_window": (PREFIXES + "SELECT ?v FROM NAMED WINDOW :W ON ex:publicTransport [TRIPLES 2] "
                       "WHERE { WINDOW :W { ?v :delayAt ?s } }", 15, {(("v", ex("d1")),)}),
}


def test_filters_optional_union_and_windows_against_the_reference(spark, data):
    frames, expected = [], {}
    for i, (name, (text, at, answer)) in enumerate(CASES.items()):
        q = compile_query(text)
        out = run(data, q, at)
        cols = [c for c in out.columns if c not in (T_START, T_END)]
        frames.append(out.select(F.lit(i).alias("_case"),
                                 F.to_json(F.struct(*cols)).alias("_m"), T_START, T_END))
        ref = {frozenset(mu) for (mu, _a, _b) in reference(q, at)}
        assert ref == {frozenset(a) for a in answer}, name        # the oracle agrees with the stated answer
        expected[i] = (name, ref)
    union = frames[0]
    for f in frames[1:]:
        union = union.unionByName(f)
    import json
    known = {term_id(t): t for triple in BACKGROUND for t in triple}
    known.update({term_id(t): t for (_i, g, _a, _b) in STREAM for tr in g for t in tr})
    got = {i: set() for i in expected}
    rows = union.collect()
    # eq. 1 is a set: no row twice (kills the mutant that drops Project's distinct, tests/MUTATION.md)
    full = [(r["_case"], r["_m"], r[T_START], r[T_END]) for r in rows]
    assert len(full) == len(set(full)), "duplicate result rows"
    for r in rows:
        d = json.loads(r["_m"])
        got[r["_case"]].add(frozenset((column_var(k), known[v]) for k, v in d.items() if v is not None))
    for i, (name, ref) in expected.items():
        assert got[i] == ref, name


def test_construct(spark, data):
    text = PREFIXES + """CONSTRUCT { ?v :delayedAt ?s . ?v :kind :subway }
FROM ex:transportationMap
FROM NAMED WINDOW :W ON ex:publicTransport [RANGE 10m]
WHERE { WINDOW :W { SEQ({?v :delayAt ?s}, {?v :delayAt ?s}) } ?v rdf:type :subway . }"""
    q = compile_query(text)
    got = {(r[S], r[P], r[O], r[T_START], r[T_END]) for r in run(data, text, 16).collect()}  # text: compiled by evaluate
    expected = {((term_id(a), term_id(b), term_id(c)), t1, t2) for ((a, b, c), t1, t2) in reference(q, 16)}
    assert {((s, p, o), t1, t2) for (s, p, o, t1, t2) in got} == expected
    assert ((term_id(ex("a1")), term_id(ex("delayedAt")), term_id(ex("m"))), 10, 16) in expected
    assert ((term_id(ex("d1")), term_id(ex("kind")), term_id(ex("subway"))), 12, 14) in expected


def test_construct_skips_template_triples_with_an_unbound_variable(spark, data):
    """SPARQL 1.1 §16.2: a template triple with an unbound variable is not produced (:g has no
    label). Kills the mutant that drops CONSTRUCT's ``dropna`` (tests/MUTATION.md)."""
    text = PREFIXES + """CONSTRUCT { ?x :labelled ?l } FROM ex:transportationMap
WHERE { ?c :beg ?x OPTIONAL { ?x :label ?l } }"""
    got = {(r[S], r[P], r[O]) for r in run(data, text, 16).collect()}
    expected = {(term_id(a), term_id(b), term_id(c)) for ((a, b, c), _t1, _t2) in reference(compile_query(text), 16)}
    assert got == expected and len(expected) == 3          # m, b, h are labelled; g is not


def test_filter_without_dictionary_is_a_clear_error(spark, data):
    q = compile_query(PREFIXES + "SELECT ?c FROM ex:transportationMap WHERE { ?c :dur ?d FILTER(?d > 2) }")
    with pytest.raises(ValueError, match="dictionary") as info:
        evaluate(q, data["background"], data["streams"], at=16, time_unit="m")
    assert isinstance(info.value, DictionaryRequiredError)


def test_missing_stream_or_graph_is_a_clear_error(spark, data):
    """Found while the plan is built (no Spark job): a SidecarError that is still a KeyError."""
    q = compile_query(PREFIXES + "SELECT ?v FROM NAMED WINDOW :W ON ex:elsewhere [RANGE 10m] "
                                 "WHERE { WINDOW :W { ?v :delayAt ?s } }")
    with pytest.raises(KeyError, match="no stream <http://example.org/elsewhere> was given") as info:
        evaluate(q, data["background"], data["streams"], at=16, time_unit="m")
    assert isinstance(info.value, SidecarError)
    q = compile_query(PREFIXES + "SELECT ?v FROM ex:transportationMap WHERE { ?v :beg ?s }")
    with pytest.raises(MissingInputError, match="no background graph"):
        evaluate(q, {}, data["streams"], at=16, time_unit="m")
