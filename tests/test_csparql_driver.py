"""C-SPARQL ``query --at`` on the driver (``cep.engines.driver.csparql``, issue 37), against the
reference (``cep.engines.reference.evaluate_sequence``), with no Spark.

On random streams and a random background, at every instant from before the first item to after
the last window has emptied, the driver's answers are the reference's: every window kind
(sliding RANGE, STEP, TUMBLING, TRIPLES, ALL, NOW), every window convention, aggregates over
integers, decimals and doubles (0.1 and 97.0 among them) with GROUP BY, HAVING, DISTINCT, the
AGGREGATE clause and its FILTER, SELECT expressions, FILTERs calling timestamp(), named streams
(GRAPH <s>, GRAPH ?g), a named background graph, property paths, OPTIONAL, UNION, BIND and
COMPUTED EVERY. Then what the driver refuses and why, and the command line: ``--engine local``
prints the reference's rows and never imports pyspark.
"""
from __future__ import annotations

import json
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
from cep.engines.driver import answers as D
from cep.engines.driver import static
from cep.engines.errors import MissingInputError
from jobs import query as job
from rdfcore.hashing import term_id
from tests.hypothesis_profiles import examples
from tests.test_csparql import dataset_answers_at, dataset_files
from tests.test_csparql_windows import BOUNDARY_QUERIES, CONVENTIONS, EX, RANDOM_QUERIES, S1, S2, boundary_streams, ex

XSD = "http://www.w3.org/2001/XMLSchema#"
G = ex("G")
HEAD = f"PREFIX : <{EX}> "


def typed(lexical: str, datatype: str) -> str:
    return f'"{lexical}"^^<{XSD}{datatype}>'


#: the objects of :p: numbers of every kind (exact 0.1 and 2.50, doubles 0.1 and 97.0), and now and
#: then a string, which makes SUM / AVG of its group an error
NUMBERS = [typed("1", "integer"), typed("2", "integer"), typed("-3", "integer"), typed("0.1", "decimal"),
           typed("2.50", "decimal"), typed("97.0", "double"), typed("0.1", "double")]
NODES = [ex(n) for n in "abcd"]
OTHERS = NODES + ['"x"']

#: driver-specific queries, over the default graph's background (:kind, :link) and both streams
QUERIES = [
    HEAD + """SELECT ?s (COUNT(*) AS ?n) (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MIN(?v) AS ?min) (MAX(?v) AS ?max)
(COUNT(DISTINCT ?v) AS ?d) (SUM(DISTINCT ?v) AS ?sd) FROM STREAM :S [RANGE 6 STEP 3] FROM STREAM :S2 [RANGE 4 TUMBLING]
WHERE { ?s :p ?v } GROUP BY ?s HAVING (COUNT(*) > 1)""",
    HEAD + """SELECT ?s ?v ?n FROM STREAM :S [TRIPLES 4] WHERE { ?s :p ?v } AGGREGATE { (?n, SUM(?v), {?s}) FILTER (?n > 2) }""",
    HEAD + """SELECT ?s ?v FROM STREAM :S [RANGE 5] FROM STREAM :S2 [RANGE 8 STEP 2] WHERE { ?s :p ?v . ?s :q ?w
FILTER (timestamp(?v, :S) > timestamp(?w, :S2) || timestamp(?s :q ?w) = timestamp(?s :p ?v)) }""",
    HEAD + """SELECT ?g ?s ?o ?k FROM NAMED STREAM :S [RANGE 7 STEP 2] FROM STREAM :S2 [ALL]
WHERE { { GRAPH ?g { ?s :p ?o } } UNION { GRAPH :S { ?s :q ?o } ?s :kind ?k } }""",
    HEAD + """SELECT ?s ?x ?y ?w ?t FROM STREAM :S [RANGE 5 STEP 2] WHERE { ?s :link+ ?x
OPTIONAL { ?x :p ?w FILTER (isLiteral(?w)) } { ?s :q ?y } UNION { ?s :kind ?y } BIND (STR(?s) AS ?t) }""",
    "REGISTER QUERY q COMPUTED EVERY 3 AS " + HEAD + """SELECT ?s ?v FROM STREAM :S [NOW] FROM STREAM :S2 [RANGE 2]
WHERE { ?s ?p ?v }""",
    HEAD + """SELECT ?s ((SUM(?v) * 2) AS ?x) (AVG(?v + 0.1) AS ?a) (MIN(?v) AS ?m) FROM STREAM :S [RANGE 4]
FROM STREAM :S2 [TRIPLES 2] WHERE { ?s ?p ?v } GROUP BY ?s""",
    HEAD + """SELECT ?s ?g ?k (COUNT(?o) AS ?n) FROM NAMED :G FROM STREAM :S [RANGE 6 STEP 2]
WHERE { ?s :q ?o . GRAPH ?g { ?s :kind ?k } } GROUP BY ?s ?g ?k""",
    HEAD + """SELECT (AVG(?v) AS ?avg) (SUM(?v) AS ?sum) (COUNT(*) AS ?n) (COUNT(DISTINCT ?v) AS ?d)
(SUM(DISTINCT ?v) AS ?sd) (AVG(DISTINCT ?v) AS ?ad) FROM STREAM :S [RANGE 5 STEP 2]
FROM STREAM :S2 [RANGE 2] WHERE { ?s :p ?v FILTER (isNumeric(?v)) }""",
    # drawn from the whole solution and [c, c]: in a FILTER, a BIND and a SELECT expression
    HEAD + """SELECT ?s ?v ?y ?b ?u (BNODE(STR(?v)) AS ?c) FROM STREAM :S [RANGE 6 STEP 2] FROM STREAM :S2 [RANGE 3]
WHERE { { ?s :p ?v FILTER (RAND() < 0.7) } UNION { ?s :q ?y BIND (BNODE() AS ?b) } BIND (STRUUID() AS ?u) }""",
    # drawn in an OPTIONAL's condition, in a GRAPH over a named background graph, in an aggregate's
    # argument and in HAVING: each from its solution and [c, c]
    HEAD + """SELECT ?s ?y ?k FROM NAMED :G FROM STREAM :S [RANGE 6 STEP 2] FROM STREAM :S2 [RANGE 3]
WHERE { ?s ?p ?v OPTIONAL { ?s :q ?y FILTER (RAND() < 0.6) } OPTIONAL { GRAPH :G { ?s :kind ?k FILTER (RAND() < 0.5) } } }""",
    HEAD + """SELECT ?s (COUNT(*) AS ?n) (SUM(?v * RAND()) AS ?x) (MAX(STRUUID()) AS ?u) FROM STREAM :S [RANGE 6 STEP 2]
WHERE { ?s :p ?v FILTER (isNumeric(?v)) } GROUP BY ?s HAVING (RAND() < 0.8)""",
    # [NOT] EXISTS over the snapshot: a shared variable, none, one over a stream's GRAPH, a FILTER
    # inside reading its own variables, in an OPTIONAL's condition
    HEAD + """SELECT ?s ?v ?y FROM NAMED STREAM :S2 [RANGE 4] FROM STREAM :S [RANGE 6 STEP 2] WHERE { ?s ?p ?v
FILTER NOT EXISTS { ?s :q ?w FILTER (isLiteral(?w) || ?w != :K) } FILTER (EXISTS { ?a :kind :K } || ?p = :p)
FILTER NOT EXISTS { { ?v :link ?s } UNION { ?u :kind :L . ?u :link ?v } }
OPTIONAL { ?s :link ?y FILTER (!EXISTS { GRAPH :S2 { ?y ?q ?z } } || EXISTS { ?y :kind ?k }) } }""",
    # sub-queries over the snapshot: the top 2 by value (ties cut), one over a named stream's GRAPH
    HEAD + """SELECT ?s ?v ?g FROM NAMED STREAM :S2 [RANGE 5] FROM STREAM :S [RANGE 6 STEP 2] WHERE { ?s :q ?y
{ SELECT ?s ?v WHERE { ?s :p ?v } ORDER BY DESC(?v) LIMIT 2 } OPTIONAL { { SELECT DISTINCT ?s ?g WHERE { GRAPH :S2 { ?s ?p ?g } } } } }""",
    # MINUS (a shared variable and none), VALUES with UNDEF, joined with a window and the background
    HEAD + """SELECT ?s ?v ?k FROM STREAM :S [RANGE 6 STEP 2] FROM STREAM :S2 [RANGE 4]
WHERE { ?s ?p ?v MINUS { ?s :q ?v } MINUS { ?a :kind :K } VALUES (?s ?k) { (:a :K) (UNDEF :L) (:c UNDEF) } }""",
    HEAD + """SELECT ?s ?x FROM STREAM :S [TRIPLES 5] WHERE { { ?s :link ?x } UNION { ?s :p ?x }
MINUS { ?x :kind ?k } }""",
    # ORDER BY over numbers and other terms, the slice cutting between ties (``cep.engines.driver.modifiers``)
    HEAD + """SELECT ?s ?v FROM STREAM :S [RANGE 6 STEP 2] FROM STREAM :S2 [RANGE 3] WHERE { ?s ?p ?v }
ORDER BY DESC(?v) OFFSET 1 LIMIT 3""",
]
ALL_QUERIES = QUERIES + RANDOM_QUERIES + BOUNDARY_QUERIES
#: the instants asked: before the first item (0), past the last (12) and past every window's end
INSTANTS = list(range(-2, 24))


def random_stream(rng: random.Random, n: int, span: int, first: int = 0) -> list:
    out = []
    for k in range(n):
        t = rng.randint(0, span)
        p = rng.choice([ex("p"), ex("p"), ex("q"), ex("link")])
        o = rng.choice(NUMBERS + NUMBERS + OTHERS) if p == ex("p") else rng.choice(OTHERS)
        end = t + rng.choice((0, 0, 0, 1, 3))      # an item may last: its window time τ is its start
        out.append((first + k, frozenset({(rng.choice(NODES), p, o)}), t, end))
    return sorted(out, key=lambda it: it[2])


def random_background(rng: random.Random) -> set:
    out = {(rng.choice(NODES), ex("link"), rng.choice(NODES)) for _ in range(rng.randint(0, 5))}
    return out | {(rng.choice(NODES), ex("kind"), rng.choice([ex("K"), ex("L")])) for _ in range(rng.randint(0, 3))}


def _key(row):
    return (row[0], sorted(row[1]), row[2], row[3])


def driver_rows(text, streams, instants, convention, background=(), named=()):
    """The driver's answers as (instant, mapping, t1, t2), sorted."""
    query = compile_query(text)
    assert D.refusal(query, convention) is None, D.refusal(query, convention)
    words = {x for its in streams.values() for (_i, g, _a, _b) in its for tr in g for x in tr}
    words |= {x for tr in [*background, *named] for x in tr}
    rows = {iri: np.array([(item, *map(term_id, tr), t1, t2) for item, g, t1, t2 in its for tr in g],
                          dtype=np.int64).reshape(-1, 6) for iri, its in streams.items()}
    graphs = {graph: static.StaticGraph(frozenset(tuple(map(term_id, tr)) for tr in triples))
              for graph, triples in ((None, background), (G, named))}
    got = D.answers_at(query, graphs, rows, instants, "ms", {term_id(w): w for w in words},
                       window_convention=convention)
    out = [(at, frozenset((n, v) for n, v in zip(got.variables, values) if v is not None), t1, t2)
           for at, *values, t1, t2 in got.rows]
    assert len(out) == len(set(out))
    return sorted(out, key=_key)


def reference_rows(text, streams, instants, convention, background=(), named=()):
    results = R.evaluate_sequence(compile_query(text), {None: set(background), G: set(named)}, streams, instants,
                                  window_convention=convention)
    return sorted(((at, mu, t1, t2) for at, answers in zip(instants, results) for (mu, t1, t2) in answers), key=_key)


def _applies(text: str, convention) -> bool:
    """A left-closed [NOW] window is always empty: the conventions refuse it (``check_window_convention``)."""
    return not ("[NOW]" in text and convention.bounds == A.LEFT_CLOSED)


def test_every_query_and_convention_equals_the_reference_at_every_instant():
    answered = {k: 0 for k in range(len(ALL_QUERIES))}
    for round_ in range(4):
        rng = random.Random(3701 + round_)
        streams = {S1: random_stream(rng, 14, 12), S2: random_stream(rng, 8, 12, first=100)}
        background, named = random_background(rng), random_background(rng)
        for k, text in enumerate(ALL_QUERIES):
            for convention in CONVENTIONS:
                if not _applies(text, convention):
                    continue
                expected = reference_rows(text, streams, INSTANTS, convention, background, named)
                assert driver_rows(text, streams, INSTANTS, convention, background, named) == expected, \
                    (round_, text, convention)
                answered[k] += len(expected)
    assert all(answered.values()), f"queries with no answer at all (the test proves nothing for them): {answered}"


def test_boundary_items_equal_the_reference():
    """Items on the openings and closes of every convention's windows (``test_csparql_windows``)."""
    streams = boundary_streams()
    instants = list(range(-3, 50))
    for text in BOUNDARY_QUERIES:
        for convention in CONVENTIONS:
            assert driver_rows(text, streams, instants, convention) == \
                reference_rows(text, streams, instants, convention), (text, convention)


def test_aggregates_write_the_shared_number_terms():
    """SUM / AVG of exact values stay exact (0.1 + 2.50 is 2.6, not 2.6000000000000001), a double
    makes them doubles written in the fewest digits that read back, in XSD's canonical form
    (0.1 + 97.0 = 9.71E1), MIN / MAX keep the term itself."""
    text = HEAD + """SELECT ?s (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MAX(?v) AS ?max) FROM STREAM :S [RANGE 10]
WHERE { ?s :p ?v } GROUP BY ?s"""
    items = [(0, frozenset({(ex("a"), ex("p"), typed("0.1", "decimal"))}), 1, 1),
             (1, frozenset({(ex("a"), ex("p"), typed("2.50", "decimal"))}), 2, 2),
             (2, frozenset({(ex("b"), ex("p"), typed("0.1", "double"))}), 3, 3),
             (3, frozenset({(ex("b"), ex("p"), typed("97.0", "double"))}), 4, 4),
             (4, frozenset({(ex("c"), ex("p"), typed("7", "integer"))}), 5, 5)]
    got = {dict(mu)["s"]: dict(mu) for (_at, mu, _a, _b) in driver_rows(text, {S1: items}, [5], A.RSEPQL_WINDOWS)}
    assert got[ex("a")]["sum"] == typed("2.6", "decimal") and got[ex("a")]["avg"] == typed("1.3", "decimal")
    assert got[ex("b")]["sum"] == typed("9.71E1", "double") and got[ex("b")]["avg"] == typed("4.855E1", "double")
    assert got[ex("b")]["max"] == typed("97.0", "double")
    assert got[ex("c")]["sum"] == typed("7", "integer") and got[ex("c")]["avg"] == typed("7.0", "decimal")
    assert driver_rows(text, {S1: items}, [5], A.RSEPQL_WINDOWS) == reference_rows(text, {S1: items}, [5],
                                                                                  A.RSEPQL_WINDOWS)


@st.composite
def cases(draw):
    def stream(first):
        rows = draw(st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from([ex("p"), ex("q"), ex("link")]),
                                       st.sampled_from(NUMBERS + OTHERS), st.integers(0, 12)), max_size=10))
        return [(first + k, frozenset({r[:3]}), r[3], r[3]) for k, r in enumerate(sorted(rows, key=lambda r: r[3]))]

    convention = A.WindowConvention(draw(st.sampled_from(A.BOUNDS)), draw(st.integers(-4, 4)),
                                    draw(st.sampled_from(A.EMPTY_WINDOWS)))
    background = draw(st.sets(st.tuples(st.sampled_from(NODES), st.sampled_from([ex("link"), ex("kind")]),
                                        st.sampled_from(NODES)), max_size=5))
    return {S1: stream(0), S2: stream(100)}, convention, background


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=cases())
def test_random_streams_and_conventions_equal_the_reference(drawn):
    streams, convention, background = drawn
    for text in ALL_QUERIES:
        if _applies(text, convention):
            assert driver_rows(text, streams, INSTANTS, convention, background) == \
                reference_rows(text, streams, INSTANTS, convention, background), (text, convention)


@pytest.mark.parametrize("text, reason", [
    (HEAD + "SELECT ?s FROM STREAM :S [RANGE 5] WHERE { ?s :p ?o } ORDER BY ?o LIMIT 2",
     "ORDER BY over a variable the SELECT does not project"),
    (HEAD + "SELECT ?s FROM STREAM :S [RANGE 5] WHERE { ?s :p ?o { SELECT ?s (COUNT(*) AS ?n) WHERE { ?s :q ?y } "
            "GROUP BY ?s } }", "a sub-query with BIND, aggregates"),
    (HEAD + "SELECT ?s FROM STREAM :S [RANGE 5] WHERE { ?s :p ?o FILTER EXISTS { VALUES ?o { :a } } }",
     "VALUES inside EXISTS"),
    (HEAD + "SELECT ?s FROM STREAM :S [RANGE 5] WHERE { ?s :p ?o FILTER EXISTS { ?s :q ?y FILTER (?y != ?o) } }",
     "reads a variable of the solution outside it"),
    (HEAD + "SELECT ?s FROM STREAM :S [RANGE 5] WHERE { ?s :p ?o FILTER (EXISTS { ?s :q ?o } && RAND() < 0.5) }",
     "also draws"),
])
def test_refusals_say_why(text, reason):
    why = D.refusal(compile_query(text), A.CSPARQL_ENGINE_WINDOWS)
    assert why is not None and reason in why and "(on Spark)" in why


def test_missing_stream_is_a_located_error():
    with pytest.raises(MissingInputError, match="no stream <http://example.org/cw#S2>"):
        driver_rows(RANDOM_QUERIES[0], {S1: []}, [5], A.RSEPQL_WINDOWS)


# --- the command line --------------------------------------------------------------------------

#: aggregates over exact and double values, a timestamp() FILTER, a background join and both
#: stream formats (JSON Lines through Python, timestamped N-Triples through the compiled scanner)
CLI_QUERY = HEAD + """SELECT ?s ?k (COUNT(*) AS ?n) (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MAX(?v) AS ?max)
FROM STREAM :S [RANGE 6 STEP 2] FROM STREAM :S2 [RANGE 4 TUMBLING]
WHERE { ?s :p ?v . ?s :kind ?k FILTER (timestamp(?v) > timestamp(?s :q :a) || ?v != 1) } GROUP BY ?s ?k"""
CLI_INSTANTS = list(range(-1, 22))


def cli_files(tmp_path: Path):
    rng = random.Random(37)
    streams = {S1: random_stream(rng, 30, 16), S2: random_stream(rng, 12, 16, first=100)}
    background = {(n, ex("kind"), rng.choice([ex("K"), ex("L")])) for n in NODES[:3]}
    (tmp_path / "q.rq").write_text(CLI_QUERY, encoding="utf-8")
    (tmp_path / "bg.nt").write_text("".join(f"{s} {p} {o} .\n" for s, p, o in sorted(background)), encoding="utf-8")
    with open(tmp_path / "s1.jsonl", "w", encoding="utf-8") as out:
        for (_i, g, t, _t2) in streams[S1]:
            for s, p, o in g:
                out.write(json.dumps({"s": s, "p": p, "o": o, "t": t}) + "\n")
    with open(tmp_path / "s2.nt", "w", encoding="utf-8") as out:
        for (_i, g, t, _t2) in streams[S2]:
            for s, p, o in g:
                out.write(f'{s} {p} {o} "{t}" .\n')
    argv = [str(tmp_path / "q.rq"), "--static", str(tmp_path / "bg.nt"), "--stream", f"{S1}={tmp_path / 's1.jsonl'}",
            "--stream", f"{S2}={tmp_path / 's2.nt'}", "--at=" + ",".join(map(str, CLI_INSTANTS))]
    return argv, streams, background


def _expected_lines(streams, background, convention) -> list[str]:
    query = compile_query(CLI_QUERY)
    names = [v.name for v in query.form.variables]
    integer = f"<{XSD}integer>"
    lines = []
    for at, mu, t1, t2 in reference_rows(CLI_QUERY, streams, CLI_INSTANTS, convention, background):
        row = dict(mu)
        lines.append("\t".join([f'"{at}"^^{integer}', *[row.get(n, "") for n in names],
                                f'"{t1}"^^{integer}', f'"{t2}"^^{integer}']))
    return lines


@pytest.mark.parametrize("options, convention", [
    ([], A.RSEPQL_WINDOWS),
    (["--csparql-compat", "--window-start", "-1"], A.WindowConvention(A.LEFT_CLOSED, -1, A.SKIP)),
])
def test_query_job_on_the_driver_prints_the_reference_rows(tmp_path, capsys, options, convention):
    argv, streams, background = cli_files(tmp_path)
    assert job.main(argv + ["--engine", "local", *options]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "?_at\t?s\t?k\t?n\t?sum\t?avg\t?max\t?_start\t?_end"
    expected = _expected_lines(streams, background, convention)
    assert expected and sorted(out[1:]) == sorted(expected)
    assert out[1:] == sorted(out[1:], key=lambda line: int(line.split('"')[1]))   # by instant


def test_query_job_datasets_on_the_driver(tmp_path, capsys):
    """Several FROMs, FROM NAMED and GRAPH ?g over a named stream and a named background graph, each
    a file (``tests.test_csparql.dataset_files``): the answers derived by hand, on the driver."""
    args, files, _directories, expected, short = dataset_files(tmp_path)
    assert dataset_answers_at(capsys, args + files + ["--engine", "local"], short) == expected


def test_query_job_on_the_driver_imports_no_pyspark(tmp_path):
    """``rsp-sidecar query --at`` (``jobs.cli``, as a user runs it) on the driver: the process never
    imports pyspark, nor the modules of the commands that do."""
    argv, streams, background = cli_files(tmp_path)
    code = ("import sys\nfrom jobs.cli import main\nrc = main(sys.argv[1:])\n"
            "assert 'pyspark' not in sys.modules, 'pyspark was imported'\nsys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, "query", *argv, "--engine", "auto"], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()[1:]) == sorted(_expected_lines(streams, background, A.RSEPQL_WINDOWS))


@pytest.mark.spark
def test_local_engine_prints_what_spark_prints(spark, tmp_path, capsys):
    """The same files at three instants under the C-SPARQL engine's conventions: ``--engine local``
    prints, byte for byte, what ``--engine spark`` prints (aggregates' terms, unbound values, the
    intervals, the order)."""
    argv, _streams, _background = cli_files(tmp_path)
    argv = [a for a in argv if not a.startswith("--at=")] + ["--at", "6,9,13", "--csparql-compat"]
    assert job.main(argv + ["--engine", "local"]) == 0
    local = capsys.readouterr().out
    assert job.main(argv + ["--engine", "spark"]) == 0
    on_spark = capsys.readouterr().out
    assert len(local.splitlines()) > 3 and local == on_spark
