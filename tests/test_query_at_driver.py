"""``query --at`` on the driver (``cep.engines.driver.answers``, ``cep.engines.driver.static``).

Semantics first: on random streams and random background graphs, the answers the driver engine
reads off one evaluation at every asked instant equal ``cep.engines.reference.evaluate`` at each
instant — before the first event, on event times, between, and after the windows empty — for
queries whose background has BGPs with constants and repeated variables, property paths,
UNION, OPTIONAL with a condition and FILTER. Then the CLI: ``--engine local`` prints what
``--engine spark`` prints, and says why when it cannot run a query.
"""
from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from cep import algebra as A
from cep import compile_query
from cep.algebra import expressions as E
from cep.engines import reference as R
from cep.engines.driver import answers as D
from cep.engines.driver import static
from jobs import query as job
from rdfcore.hashing import term_id
from tests.stream_terms import EX, OBJECTS, PREDICATES, SUBJECTS, STREAM_IRI
from tests.test_query_cli import MALFORMED, NO_T, files  # noqa: F401  (the running example's files, a fixture)

P0, P1, P2 = PREDICATES
LINK, KIND, TYPE = f"<{EX}link>", f"<{EX}Kind>", f"<{EX}type>"
HEAD = f"PREFIX : <{EX}> SELECT * FROM NAMED WINDOW :W ON {STREAM_IRI} "

QUERIES = {
    "SEQ, tail negated, background type": HEAD + "[RANGE 6] WHERE { WINDOW :W { SEQ ({?v :p0 ?s}, !{?v :p1 ?s}) } "
                                                 "?v :type :Kind . }",
    "head negated, background path": HEAD + "[RANGE 5] WHERE { WINDOW :W { SEQ (!{?v :p1 ?s}, {?v :p0 ?s}) } "
                                            "?s (:link/:link?)+ ?c . }",
    "STEP, background path to a constant": HEAD + "[RANGE 8 STEP 3] WHERE { WINDOW :W { SEQ ({?v :p0 ?s}, {?v :p2 ?x}) } "
                                                  "?s :link* <http://ex/h> . }",
    "background UNION and OPTIONAL with a condition": HEAD + "[RANGE 6] WHERE { WINDOW :W { ?v :p0 ?s } "
                                                             "{ ?v :type :Kind } UNION { ?v :link ?s } "
                                                             "OPTIONAL { ?s :link ?o FILTER (?o != :m) } }",
    "background FILTER and a repeated variable": HEAD + "[RANGE 4] WHERE { WINDOW :W { ?v :p2 ?x } "
                                                        "?x :link ?x . FILTER (?v != :c) }",
    "background only": HEAD + "[RANGE 4] WHERE { ?a :link ?b . ?b :type :Kind }",
    "BIND over the events and the background": HEAD + "[RANGE 6] WHERE { WINDOW :W { SEQ ({?v :p0 ?s}, "
                                                      "{?v :p1 ?x}) } OPTIONAL { ?x :link ?o } "
                                                      "BIND (CONCAT(STR(?s), \"/\", STR(?o)) AS ?k) }",
    "background NOT EXISTS and EXISTS in an OPTIONAL's condition": HEAD + "[RANGE 6] WHERE { WINDOW :W { ?v :p0 ?s } "
                                                                      "{ ?v :type :Kind FILTER NOT EXISTS { ?v :link ?o } } "
                                                                      "OPTIONAL { ?s :link ?c FILTER EXISTS { ?c :type ?k } } }",
    "background sub-queries: ORDER BY DESC with OFFSET and LIMIT, and a plain one": (
        HEAD + "[RANGE 6] WHERE { WINDOW :W { ?v :p0 ?s } "
               "{ SELECT ?v ?o WHERE { ?v :link ?o } ORDER BY DESC(?o) ?v OFFSET 1 LIMIT 2 } "
               "{ SELECT DISTINCT ?s WHERE { { ?s :link ?x } UNION { ?s :type :Kind } } } }"),
    "background VALUES and MINUS": HEAD + "[RANGE 6] WHERE { WINDOW :W { ?v :p0 ?s } "
                                          "{ ?v :type :Kind MINUS { ?v :link ?s } } UNION { VALUES (?v ?c) "
                                          "{ (:a :m) (UNDEF :h) } } }",
    "top-level FILTER and BIND reading NOW() and drawing, over a SEQ and the background": (
        HEAD + "[RANGE 6 STEP 2] WHERE { WINDOW :W { SEQ ({?v :p0 ?s}, {?v :p1 ?x}) } OPTIONAL { ?v :type ?k } "
               "BIND (NOW() AS ?n) BIND (RAND() AS ?r) BIND (STRUUID() AS ?u) "
               "FILTER (?n > \"1970-01-01T00:00:00.004Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> "
               "|| BOUND(?k)) }"),
    "GROUP BY over a SEQ and the background, HAVING, SELECT expressions": (
        HEAD.replace("SELECT *", "SELECT ?v (COUNT(*) AS ?n) (MAX(?s) AS ?m) (CONCAT(STR(?v), \"!\") AS ?k) "
                                 "(RAND() AS ?r)")
        + "[RANGE 6] WHERE { WINDOW :W { SEQ ({?v :p0 ?s}, {?v :p1 ?x}) } ?v :type :Kind . } "
          "GROUP BY ?v HAVING (COUNT(*) > 1)"),
    "GROUP BY an OPTIONAL's variable (unbound: a group of its own), interval events": (
        HEAD.replace("SELECT *", "SELECT ?o (COUNT(?s) AS ?n) (MIN(?v) AS ?w)")
        + "[RANGE 5 STEP 2] WHERE { WINDOW :W { ?v :p0 ?s } OPTIONAL { ?s :link ?o } } GROUP BY ?o"),
    "the implicit group: COUNT over nothing is 0 at every instant": (
        HEAD.replace("SELECT *", "SELECT (COUNT(*) AS ?n) (SUM(?x) AS ?sum)")
        + "[RANGE 3] WHERE { WINDOW :W { ?v :p2 ?x } }"),
}
NODES = SUBJECTS + OBJECTS


def random_background(rng: random.Random) -> set:
    triples = {(rng.choice(NODES), LINK, rng.choice(NODES)) for _ in range(rng.randint(0, 7))}
    triples |= {(rng.choice(NODES), TYPE, KIND) for _ in range(rng.randint(0, 3))}
    return triples


def random_stream(rng: random.Random, n: int, span: int) -> list:
    items = []
    for i in range(n):
        sub = rng.choice(SUBJECTS)
        g = {(sub, rng.choice(PREDICATES), rng.choice(NODES)) for _ in range(rng.choice((1, 1, 2)))}
        t1 = rng.randint(0, span)
        items.append((i, frozenset(g), t1, t1 + (rng.choice((0, 0, 1, 3)) if rng.random() < 0.25 else 0)))
    return items


def driver_inputs(background: set, items: list):
    graph = static.StaticGraph(frozenset((term_id(s), term_id(p), term_id(o)) for s, p, o in background))
    rows = [(item, term_id(s), term_id(p), term_id(o), t1, t2) for item, g, t1, t2 in items for s, p, o in g]
    terms = {term_id(t): t for t in NODES + PREDICATES + [LINK, KIND, TYPE]}
    return {None: graph}, {STREAM_IRI: np.array(rows, dtype=np.int64).reshape(-1, 6)}, terms


def per_instant(got: D.Answers, instants) -> dict:
    """The driver's answers as {instant: [(μ, t1, t2)] in its rows' order}."""
    out = {t: [] for t in instants}
    for at, *values, t1, t2 in got.rows:
        out[at].append((frozenset((n, v) for n, v in zip(got.variables, values) if v is not None), t1, t2))
    return out


@pytest.mark.parametrize("label", list(QUERIES))
def test_driver_answers_equal_the_reference_at_every_asked_instant(label):
    query = compile_query(QUERIES[label])
    assert D.refusal(query) is None
    instants = [-3, 0, 1, 2, 4, 5, 7, 8, 11, 12, 13, 16, 20, 25]
    answered = 0
    for seed in range(12):
        rng = random.Random(seed * 104729 + len(label))
        background, items = random_background(rng), random_stream(rng, 10, 12)
        graphs, streams, terms = driver_inputs(background, items)
        got = D.answers_at(query, graphs, streams, instants, "ms", terms)
        by_instant = {t: set(answers) for t, answers in per_instant(got, instants).items()}
        for t in instants:
            expected = R.evaluate(query, {None: background}, {STREAM_IRI: items}, at=t)
            assert by_instant[t] == expected, (seed, t)
            answered += bool(expected)
        assert got.rows == sorted(got.rows, key=lambda r: (r[0], *[(v is not None, v or "") for v in r[1:-2]],
                                                          r[-2], r[-1]))
    assert answered, "no seed gives this query an answer: the test would prove nothing"


PREFIX = f"PREFIX : <{EX}> "
#: ORDER BY / LIMIT / OFFSET in each language the driver evaluates (``cep.engines.driver.modifiers``)
MODIFIED = {
    "CQELS-CEP SEQ, background OPTIONAL, DESC then ASC, LIMIT": (
        HEAD + "[RANGE 6] WHERE { WINDOW :W { SEQ ({?v :p0 ?s}, {?v :p1 ?x}) } OPTIONAL { ?s :link ?o } } "
               "ORDER BY DESC(?s) ?o LIMIT 3", None),
    "CQELS-CEP tail negated, an expression key, OFFSET and LIMIT": (
        HEAD + "[RANGE 8] WHERE { WINDOW :W { SEQ ({?v :p0 ?s}, !{?v :p2 ?s}) } } "
               "ORDER BY DESC(STRLEN(STR(?s))) OFFSET 1 LIMIT 2", None),
    "CQELS-CEP ORDER BY an unbound-or-bound key, no LIMIT": (
        HEAD + "[RANGE 5 STEP 2] WHERE { WINDOW :W { ?v :p0 ?s } OPTIONAL { ?s :type ?k } } ORDER BY ?k", None),
    "C-SPARQL GROUP BY, ORDER BY an aggregate, LIMIT": (
        PREFIX + f"SELECT ?s (COUNT(*) AS ?n) FROM STREAM {STREAM_IRI} [RANGE 5 STEP 2] WHERE {{ ?s ?p ?o }} "
                 "GROUP BY ?s ORDER BY DESC(?n) LIMIT 2", None),
    "C-SPARQL OFFSET alone": (
        PREFIX + f"SELECT ?s ?o FROM STREAM {STREAM_IRI} [RANGE 4] WHERE {{ ?s :p0 ?o }} OFFSET 1", None),
    "RSEP-QL chronological MATCH, LIMIT 1 (every answer still consumes)": (
        PREFIX + f"SELECT ?v ?s ?x FROM NAMED WINDOW :w ON {STREAM_IRI} [RANGE 6] "
                 "WHERE { MATCH CHRONOLOGICAL ( EVENT :w { ?v :p0 ?s } SEQ EVENT :w { ?v :p1 ?x } ) } "
                 "ORDER BY ?x LIMIT 1", None),
    "EP-SPARQL SEQ, ORDER BY DESC, LIMIT": (
        PREFIX + "SELECT ?v ?s ?x WHERE { ?v :p0 ?s } SEQ { ?v :p1 ?x } ORDER BY DESC(?x) ?v LIMIT 2", "epsparql"),
}


@pytest.mark.parametrize("label", list(MODIFIED))
def test_modifiers_on_the_driver_equal_the_reference_at_every_asked_instant(label):
    """ORDER BY / LIMIT / OFFSET per instant, in each language: the driver's rows at each asked
    instant, in their order, are the reference's list (``evaluate_sequence``: an RSEP-QL query
    consumes from one instant to the next); DESC, expression keys, unbound keys, ties (broken by
    the terms' ids, then the interval) and slices that cut between equal keys all occur."""
    text, lang = MODIFIED[label]
    query = compile_query(text, lang=lang)
    assert query.modifiers is not None and D.refusal(query) is None, D.refusal(query)
    instants = [0, 2, 4, 5, 7, 8, 11, 13, 16]
    answered = cut = 0
    for seed in range(10):
        rng = random.Random(seed * 7919 + len(label))
        background, items = random_background(rng), random_stream(rng, 14, 12)
        graphs, streams, terms = driver_inputs(background, items)
        by_instant = per_instant(D.answers_at(query, graphs, streams, instants, "ms", terms), instants)
        expected = R.evaluate_sequence(query, {None: background}, {STREAM_IRI: items}, instants)
        assert [by_instant[t] for t in instants] == expected, seed
        unlimited = R.evaluate_sequence(replace(query, modifiers=replace(query.modifiers, limit=None, offset=0)),
                                        {None: background}, {STREAM_IRI: items}, instants)
        answered += sum(len(u) > 1 for u in unlimited)
        cut += sum(len(u) > len(e) for u, e in zip(unlimited, expected))
    assert answered, "no instant has two ordered answers: the test would prove nothing"
    if query.modifiers.limit is not None or query.modifiers.offset:
        assert cut, "no slice cut an answer: the test would prove nothing"


@pytest.mark.parametrize("text, reason", [
    (f"PREFIX : <{EX}> REGISTER STREAM q AS CONSTRUCT {{ ?s :p1 ?o }} FROM STREAM {STREAM_IRI} [RANGE 5 STEP 5] "
     f"WHERE {{ ?s :p0 ?o FILTER NOT EXISTS {{ ?s :p2 ?x OPTIONAL {{ ?x :p1 ?y }} }} }}", "OPTIONAL inside EXISTS"),
    (f"PREFIX : <{EX}> SELECT ?s FROM STREAM {STREAM_IRI} [RANGE 5] WHERE {{ ?s :p0 ?o }} ORDER BY ?o",
     "ORDER BY over a variable the SELECT does not project"),
    (HEAD.replace("SELECT *", "SELECT ?v") + "[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } } ORDER BY ?s LIMIT 1",
     "ORDER BY over a variable the SELECT does not project"),
    (HEAD + "[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } { SELECT ?v WHERE { ?v :link ?o } ORDER BY ?o LIMIT 1 } }",
     "does not project"),
    (HEAD + "[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } OPTIONAL { ?s :link ?o FILTER (NOW() > ?o) } }", "NOW()"),
    (HEAD + "[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } GRAPH :g { ?s :link ?o } }", "on Spark"),
    (f"PREFIX : <{EX}> SELECT ?v (COUNT(*) AS ?n) FROM NAMED WINDOW :W ON {STREAM_IRI} [RANGE 5] "
     "WHERE { WINDOW :W { ?v :p0 ?s FILTER (NOW() > ?s) } } GROUP BY ?v", "NOW()"),
])
def test_refusals_say_why(text, reason):
    assert reason in D.refusal(compile_query(text))


def test_group_by_over_events_refuses_exists_above_it():
    """The syntax keeps EXISTS out of HAVING; the algebra does not, and the driver's HAVING has no EXISTS."""
    query = compile_query(f"PREFIX : <{EX}> SELECT ?v (COUNT(*) AS ?n) FROM NAMED WINDOW :W ON {STREAM_IRI} "
                          "[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } } GROUP BY ?v HAVING (COUNT(*) > 1)")
    having = query.form.inner
    assert isinstance(having, A.Filter) and D.refusal(query) is None
    exists = E.Exists(A.bgp(A.triple(A.Var("v"), LINK, A.Var("v"))))
    query = replace(query, form=replace(query.form, inner=replace(having, condition=exists)))
    assert "EXISTS" in D.refusal(query)


# --- the CLI -----------------------------------------------------------------------------------

def _run(capsys, argv) -> tuple[int, str, str]:
    code = job.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _example(files, *more):
    return [files / "q.rq", "--static", f"<http://example.org/transportationMap>={files / 'map.ttl'}",
            "--stream", f"<http://example.org/publicTransport>={files / 's.nt'}", "--time-unit", "m", *more]


def test_local_engine_answers_the_running_example_without_spark(files, capsys):
    """The running example with its RDFS background (``:a1`` a ``:subway`` only by rdfs9), at
    several instants, on the driver: M over [10, 16] from 16 until the delay at 10 leaves the
    window [t − 10, t] after 20."""
    code, out, err = _run(capsys, _example(files, "--at", "9,10,14,16,20,21", "--engine", "local"))
    assert code == 0, err
    integer = job.XSD_INTEGER
    assert out.splitlines() == ["?_at\t?s\t?_start\t?_end"] + [
        f'"{t}"^^{integer}\t<http://example.org/vienna#m>\t"10"^^{integer}\t"16"^^{integer}' for t in (16, 20)]


def test_local_engine_imports_no_pyspark(files):
    """On the driver no JVM starts: the process never imports pyspark."""
    import subprocess
    import sys

    argv = [str(a) for a in _example(files, "--at", "16")]
    code = ("import sys\nfrom jobs.query import main\nrc = main(sys.argv[1:])\n"
            "assert 'pyspark' not in sys.modules, 'pyspark was imported'\nsys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300,
                          cwd=job.__file__.rsplit("/jobs/", 1)[0])
    assert done.returncode == 0, done.stderr
    assert "<http://example.org/vienna#m>" in done.stdout


def test_local_engine_refuses_what_it_cannot_run(files, capsys, tmp_path):
    csparql = tmp_path / "c.rq"
    csparql.write_text("PREFIX : <http://example.org/vienna#> REGISTER STREAM q AS CONSTRUCT { ?v :late ?s } "
                       "FROM STREAM <http://example.org/publicTransport> [RANGE 5m STEP 5m] "
                       "WHERE { ?v :delayAt ?s FILTER NOT EXISTS { ?v :arriveAt ?s MINUS { ?v :at ?s } } }")
    code, _out, err = _run(capsys, [csparql, "--stream", f"<http://example.org/publicTransport>={files / 's.nt'}",
                                    "--time-unit", "m", "--at", "16", "--engine", "local"])
    assert code == 2 and "--engine local" in err and "MINUS inside EXISTS" in err
    # a stream line the driver's readers leave to Spark's parser (no timestamp): Spark gives its reason
    code, _out, err = _run(capsys, [files / "q.rq", "--stream", f"<http://example.org/publicTransport>={files / 's.jsonl'}",
                                    "--static", f"<http://example.org/transportationMap>={files / 'map.ttl'}",
                                    "--at", "16", "--engine", "local"])
    # (the file holds issue 59's malformed lines too: the first line the driver leaves is named)
    first = min([NO_T, *MALFORMED])
    assert code == 2 and f"s.jsonl, line {first}: a line the driver's reader leaves to Spark's parser" in err, err


@pytest.mark.spark
@pytest.mark.parametrize("where", [
    "WINDOW :W { SEQ ({?v :delayAt ?s}, {?v :delayAt ?s}, !{?v :arriveAt ?s}) } ?v a :subway . "
    "?s (^:beg/[:means :subway]/:end)+ :c .",
    "WINDOW :W { ?v :delayAt ?s } { ?v a :subway } UNION { ?c :beg ?s } "
    "OPTIONAL { ?s ^:beg ?k . ?k :means ?m FILTER (?m != :tram) }",
])
def test_local_engine_prints_what_spark_prints(spark, files, capsys, where):
    (files / "q2.rq").write_text("PREFIX : <http://example.org/vienna#>\nPREFIX ex: <http://example.org/>\n"
                                 "SELECT * FROM ex:transportationMap FROM NAMED WINDOW :W ON ex:publicTransport "
                                 f"[RANGE 5m] WHERE {{ {where} }}", encoding="utf-8")
    argv = [files / "q2.rq", *_example(files)[1:], "--at", "9,10,12,14,16,18,22", "--format", "json"]
    local = _run(capsys, [*argv, "--engine", "local"])
    on_spark = _run(capsys, [*argv, "--engine", "spark"])
    assert local[0] == on_spark[0] == 0
    assert local[1] == on_spark[1] and '"bindings"' in local[1]
