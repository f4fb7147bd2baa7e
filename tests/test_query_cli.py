"""jobs.query end to end: the running example (DESIGN.md; CQELS-CEP Example 6) and the error cases.

The Spark runs call ``jobs.query.main`` in-process (the session fixture is reused by
``build_session``'s getOrCreate); the error cases fail before Spark starts, and one of them runs as
``python -m jobs.query`` and one through ``spark-submit jobs/query.py``, to check those entry points.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jobs import query as job
from tests.running_example import EXAMPLE_6, VIENNA, with_malformed_lines

REPO = Path(__file__).resolve().parent.parent
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"

# The running example's background with one change that only RDFS reasoning undoes: :a1 is a
# :metroTrain, a subclass of :subway (so ?v rdf:type :subway holds for :a1 only by rdfs9).
BACKGROUND_RDFS = """@prefix : <http://example.org/vienna#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:conn1 :beg :m ; :end :b ; :means :subway ; :dur "PT3M"^^xsd:duration .
:conn2 :beg :b ; :end :c ; :means :subway ; :dur "PT2M"^^xsd:duration .
:conn3 :beg :h ; :end :g ; :means :subway ; :dur "PT3M"^^xsd:duration .
:conn4 :beg :g ; :end :c ; :means :tram ; :dur "PT5M"^^xsd:duration .
:metroTrain rdfs:subClassOf :subway .
:a1 a :metroTrain .
:d1 a :subway .
"""

# The running example's stream, (:a1 :delayAt :m)@10, (:d1 :delayAt :h)@12, @14, (:a1 :delayAt :m)@16,
# as JSON Lines (prefixed names from the query) with one bad line, and as timestamped N-Triples.
STREAM_JSONL = "\n".join([
    '{"s": ":a1", "p": ":delayAt", "o": ":m", "t": 10}',
    '{"s": ":d1", "p": ":delayAt", "o": ":h", "t": 12}',
    '{"s": ":d1", "p": ":delayAt", "o": ":h", "t": 14}',
    '{"s": ":a1", "p": ":delayAt", "o": ":m"}',
    '{"s": ":a1", "p": ":delayAt", "o": ":m", "t": 16}',
]) + "\n"
# The JSON Lines file: those lines with issue 59's malformed lines between them (invalid UTF-8, NUL,
# broken JSON, bad timestamps, a 5 MB line, ...: tests/running_example.py), each a reject.
STREAM_BYTES, MALFORMED = with_malformed_lines(STREAM_JSONL.splitlines())
NO_T = STREAM_BYTES.split(b"\n").index(STREAM_JSONL.splitlines()[3].encode()) + 1     # the line without "t"
STREAM_TSNT = "".join(f'<{VIENNA}{v}> <{VIENNA}delayAt> <{VIENNA}{s}> "{t}" .\n'
                      for v, s, t in (("a1", "m", 10), ("d1", "h", 12), ("d1", "h", 14), ("a1", "m", 16)))


@pytest.fixture
def files(tmp_path):
    (tmp_path / "q.rq").write_text(EXAMPLE_6, encoding="utf-8")
    (tmp_path / "map.ttl").write_text(BACKGROUND_RDFS, encoding="utf-8")
    (tmp_path / "s.jsonl").write_bytes(STREAM_BYTES)
    (tmp_path / "s.nt").write_text(STREAM_TSNT, encoding="utf-8")
    return tmp_path


def _check_rejects(rows: list[dict]) -> None:
    """The rejects of s.jsonl: the line without "t" and every malformed line, each with the file,
    its line and its reason."""
    got = {r["line"]: r for r in rows}
    assert len(got) == len(rows) and sorted(got) == sorted([NO_T, *MALFORMED])
    assert "missing or null key 't'" in got[NO_T]["reason"] and got[NO_T]["raw"] == STREAM_JSONL.splitlines()[3]
    for line, reason in MALFORMED.items():
        assert got[line]["reason"].startswith(reason), (line, got[line]["reason"])
    assert all(r["file"].endswith("s.jsonl") for r in rows)


def _run(capsys, argv):
    code = job.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_example_6_at_14_has_no_answer(spark, files, capsys):
    """t=14: :h reaches :c only by tram; the original vienna_example.ttl as the FROM graph."""
    code, out, err = _run(capsys, [files / "q.rq", "--static", f"ex:transportationMap={REPO}/ontologies/vienna_example.ttl",
                                   "--stream", f"<http://example.org/publicTransport>={files / 's.nt'}",
                                   "--at", "14", "--time-unit", "m"])
    assert code == 0, err
    assert out == "?s\t?_start\t?_end\n"
    assert "0 rejected" in err


def test_example_6_at_16_exactly_m_from_10_to_16(spark, files, capsys):
    """t=16: exactly ?s = :m, interval [10, 16]; :a1 is a :subway only by RDFS entailment here,
    the stream has bad lines (reported, written to --rejects, not loaded)."""
    rejects = files / "rejects.jsonl"
    code, out, err = _run(capsys, [files / "q.rq", "--static", f"ex:transportationMap={files / 'map.ttl'}",
                                   "--stream", f"ex:publicTransport={files / 's.jsonl'}",
                                   "--at", "16", "--time-unit", "m", "--format", "json", "--rejects", rejects])
    assert code == 0, err
    result = json.loads(out)
    assert result["head"]["vars"] == ["s", "_start", "_end"]
    assert result["results"]["bindings"] == [{
        "s": {"type": "uri", "value": VIENNA + "m"},
        "_start": {"type": "literal", "datatype": XSD_INTEGER, "value": "10"},
        "_end": {"type": "literal", "datatype": XSD_INTEGER, "value": "16"},
    }]
    assert f"{1 + len(MALFORMED)} rejected line(s)" in err
    _check_rejects([json.loads(line) for line in rejects.read_text(encoding="utf-8").splitlines()])


def test_parse_at():
    assert job.parse_at("16", "m") == 16
    assert job.parse_at("-3", "ms") == -3
    assert job.parse_at("1970-01-01T00:16:00Z", "m") == 16
    assert job.parse_at("1970-01-01T01:16:30+01:00", "m") == 16
    assert job.parse_at("1970-01-01T00:00:01.5", "ms") == 1500
    assert job.parse_at("1969-12-31T23:59:59.5Z", "s") == -1
    with pytest.raises(job.QueryError, match="--at 'soon'"):
        job.parse_at("soon", "ms")


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


def test_parse_error_names_line_and_column(files, capsys):
    (files / "bad.rq").write_text("PREFIX : <http://example.org/vienna#>\nSELECT ?s\nWHERE { ?s :p }\n", encoding="utf-8")
    code, out, err = _run(capsys, [files / "bad.rq", "--at", "1"])
    assert code == 2 and out == ""
    line = _error_line(err)
    assert "bad.rq: line 3, column 15: unexpected '}'" in line and "expected" in line


def test_unknown_stream_iri(files, capsys):
    code, _, err = _run(capsys, [files / "q.rq", "--static", f"ex:transportationMap={files / 'map.ttl'}",
                                 "--stream", f"ex:otherStream={files / 's.jsonl'}", "--at", "16"])
    assert code == 2
    assert "reads stream <http://example.org/publicTransport>, which no --stream binds" in _error_line(err)


def test_unbound_from_graph(files, capsys):
    code, _, err = _run(capsys, [files / "q.rq", "--stream", f"ex:publicTransport={files / 's.jsonl'}", "--at", "16"])
    assert code == 2
    assert "FROM <http://example.org/transportationMap> has no file" in _error_line(err)


def test_missing_files(files, capsys):
    code, _, err = _run(capsys, [files / "nope.rq", "--at", "1"])
    assert code == 2 and "nope.rq: no such file" in _error_line(err)
    code, _, err = _run(capsys, [files / "q.rq", "--static", files / "nope.ttl",
                                 "--stream", f"ex:publicTransport={files / 's.jsonl'}", "--at", "1"])
    assert code == 2 and "nope.ttl: no such file" in _error_line(err)
    code, _, err = _run(capsys, [files / "q.rq", "--static", files / "map.ttl",
                                 "--stream", f"ex:publicTransport={files / 'nope.jsonl'}", "--at", "1"])
    assert code == 2 and "nope.jsonl: no such file" in _error_line(err)


def test_bad_at_and_bad_stream_binding(files, capsys):
    code, _, err = _run(capsys, [files / "q.rq", "--static", files / "map.ttl", "--at", "yesterday"])
    assert code == 2 and "--at 'yesterday'" in _error_line(err)
    code, _, err = _run(capsys, [files / "q.rq", "--stream", str(files / "s.jsonl"), "--at", "1"])
    assert code == 2 and "expected IRI=FILE" in _error_line(err)


def test_python_m_entry_point(files):
    done = subprocess.run([sys.executable, "-m", "jobs.query", str(files / "q.rq"), "--at", "later"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "--at 'later'" in _error_line(done.stderr)


def test_rsp_sidecar_query_subcommand(files, capsys):
    from jobs import cli

    code = cli.main(["query", str(files / "q.rq"), "--at", "later"])
    assert code == 2
    assert "--at 'later'" in _error_line(capsys.readouterr().err)


@pytest.mark.spark  # spark-submit is a JVM (SparkSubmit) that then runs the Python job
@pytest.mark.skipif(shutil.which("spark-submit") is None, reason="spark-submit is not on PATH")
def test_spark_submit_entry_point(files):
    done = subprocess.run(["spark-submit", "--master", "local[1]", str(REPO / "jobs" / "query.py"),
                           str(files / "q.rq"), "--at", "later"],
                          cwd=files, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    # spark-submit's PythonRunner merges the Python process's stderr into its own stdout
    assert [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error: ")] == \
        ["error: --at 'later': expected an integer number of ms or an ISO-8601 date-time (e.g. 2024-05-01T10:00:00Z)"]


def test_construct_over_a_stream_only(spark, files, capsys):
    """CONSTRUCT prints N-Triples (distinct, sorted); no static graph; --at as an ISO date-time."""
    (files / "c.rq").write_text("""PREFIX : <http://example.org/vienna#>
PREFIX ex: <http://example.org/>
CONSTRUCT { ?v :delayedTwiceAt ?s }
WHERE { WINDOW :W ON ex:publicTransport [RANGE 10m] { SEQ ({?v :delayAt ?s}, {?v :delayAt ?s}) } }
""", encoding="utf-8")
    code, out, err = _run(capsys, [files / "c.rq", "--stream", f"ex:publicTransport={files / 's.nt'}",
                                   "--at", "1970-01-01T00:16:00Z", "--time-unit", "m"])
    assert code == 0, err
    assert out.splitlines() == [f"<{VIENNA}a1> <{VIENNA}delayedTwiceAt> <{VIENNA}m> .",
                                f"<{VIENNA}d1> <{VIENNA}delayedTwiceAt> <{VIENNA}h> ."]


def test_interval_column_names_are_reserved(files, capsys):
    (files / "r.rq").write_text("""PREFIX : <http://example.org/vienna#>
SELECT ?_start WHERE { WINDOW :W ON :st [RANGE 5] { ?_start :p ?o } }
""", encoding="utf-8")
    code, _, err = _run(capsys, [files / "r.rq", "--stream", f":st={files / 's.nt'}", "--at", "1"])
    assert code == 2 and "the query projects ?_start" in _error_line(err)


def test_continuous_example_6_from_a_directory(spark, files, capsys):
    """--continuous over a directory of stream files, available-now: the running example's one
    answer (?s = :m on [10, 16], reported at 16), the bad lines in the rejects directory, the
    answers in the --out directory as JSON Lines, and the run summary on stderr."""
    stream_dir = files / "in"
    stream_dir.mkdir()
    shutil.copy(files / "s.jsonl", stream_dir / "s.jsonl")
    out_dir, rejects = files / "answers", files / "rejects"
    code, _out, err = _run(capsys, [files / "q.rq", "--static", f"ex:transportationMap={files / 'map.ttl'}",
                                    "--stream", f"ex:publicTransport={stream_dir}", "--continuous",
                                    "--checkpoint", files / "ckpt", "--out", out_dir, "--rejects", rejects,
                                    "--time-unit", "m"])
    assert code == 0, err
    rows = [json.loads(line) for f in sorted(out_dir.glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert [(r["s"], r["_start"], r["_end"], r["_at"]) for r in rows] == [(f"<{VIENNA}m>", 10, 16, 16)]
    _check_rejects([json.loads(line) for f in sorted(rejects.glob("*.jsonl")) for line in f.read_text().splitlines()])
    summary = json.loads([line for line in err.splitlines() if line.startswith('{"continuous"')][-1])["continuous"]
    assert summary["answers"] == 1 and summary["rejected"] == {"bad input": 1 + len(MALFORMED)}
    metrics = [json.loads(line) for line in (files / "ckpt" / "metrics.jsonl").read_text().splitlines()]
    assert {"input_items", "rejected", "answers", "state_items", "seconds", "watermark"} <= set(metrics[0])


def test_continuous_option_errors(files, capsys):
    base = [files / "q.rq", "--static", f"ex:transportationMap={files / 'map.ttl'}"]
    code, _, err = _run(capsys, base + ["--stream", f"ex:publicTransport={files / 's.jsonl'}", "--continuous",
                                        "--checkpoint", files / "ck"])
    assert code == 2 and "no such directory" in _error_line(err) and "--stream IRI=DIR" in _error_line(err)
    code, _, err = _run(capsys, base + ["--stream", f"ex:publicTransport={files}", "--continuous"])
    assert code == 2 and "--continuous needs --checkpoint DIR" in _error_line(err)
    code, _, err = _run(capsys, base + ["--stream", f"ex:publicTransport={files}", "--continuous",
                                        "--checkpoint", files / "ck", "--lateness", "soon"])
    assert code == 2 and "--lateness 'soon'" in _error_line(err)
    code, _, err = _run(capsys, base + ["--stream", f"ex:publicTransport={files}", "--continuous",
                                        "--checkpoint", files / "ck", "--trigger", "sometimes"])
    assert code == 2 and "--trigger 'sometimes'" in _error_line(err)
    assert job.parse_lateness("30s", "ms") == 30_000 and job.parse_lateness("3", "m") == 3


def test_named_graphs_from_files(spark, tmp_path, capsys):
    """FROM NAMED and GRAPH ?g read the graphs --static IRI=FILE gives, each closed on its own
    (a subclass in one graph types its instances there); ?g decodes to the graph's IRI."""
    (tmp_path / "a.ttl").write_text("@prefix : <http://ex/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                                    ":Tram rdfs:subClassOf :Vehicle . :t1 a :Tram .\n")
    (tmp_path / "b.nt").write_text("<http://ex/b1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex/Vehicle> .\n")
    (tmp_path / "q.rq").write_text("PREFIX : <http://ex/>\nSELECT ?g ?v FROM NAMED <http://ex/ga> FROM NAMED <http://ex/gb>\n"
                                   "WHERE { GRAPH ?g { ?v a :Vehicle } } ORDER BY ?v\n")
    code, out, err = _run(capsys, [tmp_path / "q.rq", "--static", f"<http://ex/ga>={tmp_path / 'a.ttl'}",
                                   f"<http://ex/gb>={tmp_path / 'b.nt'}", "--at", "0"])
    assert code == 0, err
    assert out.splitlines() == ["?g\t?v", "<http://ex/gb>\t<http://ex/b1>", "<http://ex/ga>\t<http://ex/t1>"]


def test_named_graph_without_a_file(files, capsys):
    (files / "g.rq").write_text("SELECT * WHERE { GRAPH <http://ex/g> { ?s ?p ?o } }\n")
    code, _, err = _run(capsys, [files / "g.rq", "--static", f"{REPO}/ontologies/vienna_example.ttl", "--at", "0"])
    assert code == 2
    assert "named graph <http://ex/g> (GRAPH / FROM NAMED), which has no file" in _error_line(err)


# --- --lang: each language, and its detection ---------------------------------------------------

LANG_PREFIX = "PREFIX : <http://ex/>\n"
#: the stream :s, (:a :p :b)@1 and (:b :q :c)@3, and a background (:b :r :z)
LANG_STREAM = '<http://ex/a> <http://ex/p> <http://ex/b> "1" .\n<http://ex/b> <http://ex/q> <http://ex/c> "3" .\n'
LANG_BACKGROUND = "<http://ex/b> <http://ex/r> <http://ex/z> .\n"
#: one small query per language, what auto-detection reads it as, and its answers at 5, by hand
LANG_QUERIES = {
    # CQELS-CEP: a window's answer carries its item's interval
    "cqels": ("SELECT ?x WHERE { WINDOW :W ON :s [RANGE 10] { ?x :p ?y } }", [{"x": "a", "_start": "1", "_end": "1"}]),
    # RSEP-QL: MATCH (detected); the SEQ of the two events spans [1, 3]
    "rsepql": ("SELECT ?x ?z FROM NAMED WINDOW :w ON :s [RANGE 10] "
               "WHERE { MATCH ( EVENT :w { ?x :p ?y } SEQ EVENT :w { ?y :q ?z } ) }",
               [{"x": "a", "z": "c", "_start": "1", "_end": "3"}]),
    # EP-SPARQL: SEQ between groups and no window (detected); SeqJoin covers [1, 3]
    "epsparql": ("SELECT ?x ?z WHERE { { ?x :p ?y } SEQ { ?y :q ?z } }", [{"x": "a", "z": "c", "_start": "1", "_end": "3"}]),
    # C-SPARQL: FROM STREAM / AGGREGATE (detected); at 5 the evaluation at the close 4 over the
    # background merged with the window (0, 4]: :a once, :b twice (:b :q :c, and :b :r :z)
    "csparql": ("SELECT ?x ?n FROM STREAM :s [RANGE 4 STEP 2] WHERE { ?x ?p ?y } AGGREGATE { (?n, COUNT, {?x}) }",
                [{"x": "a", "n": "1", "_start": "4", "_end": "4"}, {"x": "b", "n": "2", "_start": "4", "_end": "4"}]),
}


@pytest.fixture
def lang_files(tmp_path):
    (tmp_path / "s.nt").write_text(LANG_STREAM, encoding="utf-8")
    (tmp_path / "bg.nt").write_text(LANG_BACKGROUND, encoding="utf-8")
    return tmp_path


def _lang_run(capsys, files, text, flags):
    """Run ``text`` at 5 with ``flags``; its answers as rows of short values."""
    (files / "q.rq").write_text(LANG_PREFIX + text, encoding="utf-8")
    code, out, err = _run(capsys, [files / "q.rq", "--static", files / "bg.nt", "--stream",
                                   f"<http://ex/s>={files / 's.nt'}", "--at", "5", "--format", "json", *flags])
    assert code == 0, err
    return sorted(({k: v["value"].removeprefix("http://ex/") for k, v in b.items()}
                   for b in json.loads(out)["results"]["bindings"]), key=lambda r: sorted(r.items()))


def test_detect_language_of_each_example():
    from cep import parse
    from cep.lowering.languages import LANGUAGES, detect_language

    assert set(LANG_QUERIES) == set(LANGUAGES)
    for lang, (text, _rows) in LANG_QUERIES.items():
        assert detect_language(parse(LANG_PREFIX + text)) == lang


@pytest.mark.parametrize("lang", sorted(LANG_QUERIES))
def test_query_job_each_language_given_and_detected(spark, lang_files, capsys, lang):
    """``--lang L`` and auto-detection read each language's example alike, with the answers
    derived by hand."""
    text, rows = LANG_QUERIES[lang]
    assert _lang_run(capsys, lang_files, text, ["--lang", lang]) == rows
    assert _lang_run(capsys, lang_files, text, []) == rows


def test_query_job_lang_changes_the_reading(spark, lang_files, capsys):
    """The same text in another language: a lone WINDOW block is a CQELS-CEP window (the item's
    interval) and, with --lang rsepql, RSEP-QL's window graph pattern ([MIN_TIME, t]); a plain
    SELECT is a background query, with --lang epsparql one over the stream's occurrences, and with
    --lang csparql one over the snapshot at the instant (background and window merged)."""
    window = LANG_QUERIES["cqels"][0]
    assert _lang_run(capsys, lang_files, window, ["--lang", "rsepql"]) == [
        {"x": "a", "_start": str(-2**63), "_end": "5"}]
    plain = "SELECT ?x ?y WHERE { ?x ?p ?y }"
    assert _lang_run(capsys, lang_files, plain, []) == [{"x": "b", "y": "z"}]
    assert _lang_run(capsys, lang_files, plain, ["--lang", "epsparql"]) == [
        {"x": "a", "y": "b", "_start": "1", "_end": "1"}, {"x": "b", "y": "c", "_start": "3", "_end": "3"}]
    assert _lang_run(capsys, lang_files, plain, ["--lang", "csparql"]) == [{"x": "b", "y": "z", "_start": "5", "_end": "5"}]
    with pytest.raises(SystemExit) as exit_:
        job.main([str(lang_files / "q.rq"), "--at", "5", "--lang", "sparql"])
    assert exit_.value.code == 2 and "argument --lang: invalid choice: 'sparql'" in capsys.readouterr().err
