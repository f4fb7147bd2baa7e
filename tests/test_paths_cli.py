"""jobs/paths.py: the paths CLI (in-process with the session's Spark), its errors, and its entry points."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest

from jobs import cli
from jobs import paths as paths_job

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "ontologies" / "vienna_example.ttl"
V = "http://example.org/vienna#"


def run(spark, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = paths_job.main(list(argv), spark=spark, out=out)
    return code, out.getvalue()


@pytest.mark.parametrize("engine", ["auto", "spark", "local"])
def test_running_example_tsv_with_turtle_prefixes(spark, engine):
    code, text = run(spark, "--data", str(EXAMPLE), "--path", "(^:beg/[:means :subway]/:end)+", "--to", ":c",
                     "--engine", engine)
    assert code == 0
    assert text == f"?start\t?end\n<{V}b>\t<{V}c>\n<{V}m>\t<{V}c>\n"  # :h reaches :c only by tram


MIXED_TTL = """\
@prefix : <http://example.org/vienna#> .
@prefix geo: <http://www.w3.org/2003/01/geo/wgs84_pos#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
:m :name "Meidling, \\"Hbf\\""@de ; geo:lat "48.17"^^xsd:decimal .
:x :next :y .
"""


def test_json_and_csv_agree_with_pyoxigraph(spark, tmp_path):
    """Same query, oxigraph's own W3C results vs ours: the writers and the evaluation both checked."""
    data = tmp_path / "mixed.ttl"
    data.write_text(MIXED_TTL, encoding="utf-8")
    store = ox.Store()
    for f in (EXAMPLE, data):
        store.load(path=str(f), format=ox.RdfFormat.TURTLE)
    path = "(^:beg/:end)+|:name|geo:lat"   # geo: is the file's, not rdflib's default GeoSPARQL binding
    query = f"PREFIX : <{V}> PREFIX geo: <http://www.w3.org/2003/01/geo/wgs84_pos#> " \
            f"SELECT ?start ?end WHERE {{ ?start {path} ?end }}"
    expected_json = json.loads(store.query(query).serialize(format=ox.QueryResultsFormat.JSON))
    code, text = run(spark, "--data", str(EXAMPLE), str(data), "--path", path, "--format", "json")
    assert code == 0
    ours = json.loads(text)
    assert ours["head"] == expected_json["head"]
    key = lambda b: json.dumps(b, sort_keys=True)  # noqa: E731
    assert sorted(map(key, ours["results"]["bindings"])) == sorted(map(key, expected_json["results"]["bindings"]))
    assert len(ours["results"]["bindings"]) == 8
    # CSV of the same query (only lexical forms): compare as rows
    out_csv = tmp_path / "r.csv"
    assert paths_job.main(["--data", str(EXAMPLE), str(data), "--path", path, "--format", "csv",
                           "--out", str(out_csv)], spark=spark) == 0
    expected_csv = store.query(query).serialize(format=ox.QueryResultsFormat.CSV).decode()
    parse = lambda t: sorted(map(tuple, csv.reader(io.StringIO(t, newline=""))))  # noqa: E731
    assert parse(out_csv.read_text(encoding="utf-8")) == parse(expected_csv)
    assert out_csv.read_bytes().startswith(b"start,end\r\n")


def test_ntriples_input_bad_line_literal_end_and_unknown_constant(spark, tmp_path, capsys):
    data = tmp_path / "g.nt"
    data.write_text(f'<{V}a> <{V}p> <{V}b> .\nthis is not a triple\n<{V}b> <{V}p> "x, y"@en .\n', encoding="utf-8")
    # literal end in path syntax; the N-Triples file has no prefixes: --prefix gives ':'
    code, text = run(spark, "--data", str(data), "--path", ":p+", "--prefix", f"={V}", "--to", '"x, y"@EN')
    assert code == 0
    assert text == f'?start\t?end\n<{V}a>\t"x, y"@en\n<{V}b>\t"x, y"@en\n'
    err = capsys.readouterr().err
    assert "warning: 1 line(s)" in err and f"{data}:2:" in err
    # a bound start that is not in the data relates to itself through a zero-length path (§18.5)
    code, text = run(spark, "--data", str(data), "--path", "ex:p*", "--prefix", f"ex={V}", "--from", "<http://elsewhere/z>")
    assert code == 0
    assert text == "?start\t?end\n<http://elsewhere/z>\t<http://elsewhere/z>\n"


def test_syntax_error_names_line_column_and_expected(capsys):
    # no Spark is needed: the path is checked before a session is built
    code = paths_job.main(["--data", str(EXAMPLE), "--path", "(^:beg/:end", "--to", ":c"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: --path '(^:beg/:end': line 1, column 12: unexpected end of the path; expected ")
    assert "')'" in err


@pytest.mark.parametrize("argv, message", [
    (["--path", "foo:x"], "unknown prefix 'foo:'"),
    (["--path", ":beg", "--from", "nope:x"], "--from 'nope:x': line 1, column 1: unknown prefix 'nope:'"),
    (["--path", ":beg", "--to", ":a/:b"], "--to ':a/:b': expected one RDF term"),
    (["--path", ":beg", "--from", "_:b1"], "blank nodes cannot be named"),
    (["--path", ":beg", "--prefix", "ex"], "--prefix 'ex': expected NAME=IRI"),
])
def test_argument_errors_are_one_line_exit_2(argv, message, capsys):
    code = paths_job.main(["--data", str(EXAMPLE), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
    assert message in err


def test_prefix_option_overrides_the_files(spark):
    code, text = run(spark, "--data", str(EXAMPLE), "--path", ":beg", "--prefix", "=http://other/", "--from", f"<{V}conn1>")
    assert code == 0 and text == "?start\t?end\n"  # :beg is now <http://other/beg>: no pairs


def test_missing_and_malformed_files(spark, tmp_path, capsys):
    assert paths_job.main(["--data", str(tmp_path / "none.ttl"), "--path", ":p"]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'none.ttl'}: no such file\n"
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix : <http://e/> .\n:a :b .\n", encoding="utf-8")
    assert paths_job.main(["--data", str(bad), "--path", ":p"], spark=spark, out=io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}:2:") and err.count("\n") == 1


def test_rsp_sidecar_subcommand(tmp_path, capsys):
    assert cli.main(["paths", "--data", str(tmp_path / "none.nt"), "--path", ":p"]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["paths", "--help"])
    assert "--from TERM" in capsys.readouterr().out


def test_runnable_as_a_file_like_spark_submit(tmp_path):
    # spark-submit runs jobs/paths.py as a script: the project must be importable and jobs/paths.py
    # must not shadow the paths package. (An error case: no JVM is started.)
    result = subprocess.run([sys.executable, str(ROOT / "jobs" / "paths.py"), "--data", str(EXAMPLE),
                             "--path", "(:beg"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: --path '(:beg': line 1, column 6: unexpected end of the path")
