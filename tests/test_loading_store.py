"""Loading (located errors, rejects), dictionary ids, the versioned store and the CLI."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from reasoner import store
from rdfcore.hashing import term_id
from rdfcore.loading import load
from rdfcore.errors import RDFLoadError
from rdfcore.sources import parse_with_rdflib
from reasoner.publish import materialize_sources

ROOT = Path(__file__).resolve().parent.parent
VIENNA = [ROOT / "ontologies" / "vienna_schema.ttl", ROOT / "ontologies" / "vienna_example.ttl"]


def test_turtle_syntax_error_names_line_and_column(tmp_path):
    bad = tmp_path / "bad.ttl"
    bad.write_text('@prefix : <http://e/> .\n:a :b :c .\n:a :b "open\n')
    with pytest.raises(RDFLoadError) as err:
        parse_with_rdflib(bad, "turtle", 0)
    assert err.value.line == 3 and err.value.column is not None
    assert str(err.value).startswith(f"{bad}:3:")


def test_rdfxml_external_entity_is_refused(tmp_path):
    doc = tmp_path / "x.rdf"
    doc.write_text('<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [\n  <!ENTITY leak SYSTEM "file:///etc/passwd">\n]>\n'
                   '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/>\n')
    with pytest.raises(RDFLoadError, match="external entity") as err:
        parse_with_rdflib(doc, "xml", 0)
    assert err.value.line == 3


@pytest.mark.spark
def test_term_ids_equal_spark_xxhash64(spark):
    terms = ["<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", '"caf\u00e9"@fr', "_:b0", "x" * 77, ""]
    rows = spark.createDataFrame([(t,) for t in terms], "t string").select("t", F.xxhash64("t").alias("h")).collect()
    assert all(row.h == term_id(row.t) for row in rows)


@pytest.mark.spark
def test_ntriples_reader_rejects_bad_lines_with_line_numbers(spark, tmp_path):
    nt = tmp_path / "data.nt"
    nt.write_text("\n".join([
        "<http://e/a> <http://e/p> <http://e/b> .",
        "# a comment",
        "",
        '<http://e/a> <http://e/p> "lit"@EN .',
        "<http://e/a> <http://e/p> <http://e/c>",            # 5: no final dot
        '"lit" <http://e/p> <http://e/c> .',                 # 6: literal subject
        "<http://e/a> _:b <http://e/c> .",                   # 7: blank predicate
        '_:x <http://e/p> "s"^^<http://www.w3.org/2001/XMLSchema#string> . # trailing comment',
        "<http://e/a> <http://e/p> <http://e/b> . junk",     # 9: text after the dot
    ]) + "\n")
    loaded = load(spark, [nt])
    triples = {tuple(r) for r in loaded.triples.collect()}
    assert ("<http://e/a>", "<http://e/p>", '"lit"@en') in triples  # language tags lower-cased
    assert ("_:f0.x", "<http://e/p>", '"s"') in triples             # xsd:string dropped, bnode scoped
    assert len(triples) == 3
    rejects = {r.line: r.reason for r in loaded.rejects.collect()}
    assert set(rejects) == {5, 6, 7, 9}
    assert rejects[5].startswith("expected '.'")
    assert rejects[6].startswith("expected a subject") and rejects[6].endswith("column 1")
    assert rejects[7].startswith("expected a predicate") and rejects[7].endswith("column 14")
    assert rejects[9].startswith("unexpected text after '.'")
    assert loaded.rejected == 4


@pytest.mark.spark
@pytest.mark.parametrize("engine", ["spark", "local"])
def test_store_versions_refresh_failure_and_export(spark, tmp_path, monkeypatch, engine):
    out = tmp_path / "closure"
    first = materialize_sources(spark, VIENNA, out, engine=engine)
    assert first["version"] == "v000001" and not first["skipped"]
    assert store.current_version(out) == "v000001"
    manifest = store.read_manifest(out)
    assert {s["path"] for s in manifest["sources"]} == {str(p) for p in VIENNA}
    assert manifest["tables"]["inferred"] == first["counts"]["inferred"]

    again = materialize_sources(spark, VIENNA, out, if_changed=True, engine=engine)
    assert again["skipped"] and store.list_versions(out) == ["v000001"]

    # a run failing half-way leaves the current version untouched and readable
    method = "write_table" if engine == "spark" else "write_columns"   # the local engine writes with pyarrow
    original = getattr(store.VersionWriter, method)

    def failing(self, name, *args):
        if name == "inferred":
            raise RuntimeError("disk full (simulated)")
        return original(self, name, *args)

    monkeypatch.setattr(store.VersionWriter, method, failing)
    with pytest.raises(RuntimeError, match="simulated"):
        materialize_sources(spark, VIENNA, out, engine=engine)
    monkeypatch.undo()
    assert store.current_version(out) == "v000001"
    assert store.list_versions(out) == ["v000001"]
    assert not list((out / "versions").glob(".tmp-*"))

    exported = tmp_path / "inferred.nt"
    materialize_sources(spark, VIENNA, out, if_changed=True, export_ntriples=exported, engine=engine)
    lines = exported.read_text().splitlines()
    assert len(lines) == first["counts"]["inferred"] and lines == sorted(lines)
    version = store.open_version(spark, out)
    types = {tuple(r) for r in version.table("types", decoded=True).collect()}
    assert ("<http://example.org/vienna#a1>", "<http://example.org/vienna#Conveyance>") in types
    with pytest.raises(store.StoreError, match="v000009 does not exist"):
        store.open_version(spark, out, "v000009")


@pytest.mark.spark  # the subprocess starts a Spark session before it reads the ontology
def test_cli_reports_bad_input_in_one_line(tmp_path):
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix : <http://e/> .\n:a :b .\n")
    result = subprocess.run([sys.executable, "-m", "jobs.materialize", "--ontology", str(bad), "--out", str(tmp_path / "o")],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 2
    assert f"error: {bad}:2:" in result.stderr
    assert not (tmp_path / "o" / "CURRENT").exists()
