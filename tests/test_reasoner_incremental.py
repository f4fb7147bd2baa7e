"""Incremental refresh (``reasoner.incremental``): appended and new sources give the tables of a
full run; anything that could change old consequences recomputes fully, and says why."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reasoner import store
from reasoner.publish import materialize_sources

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "ontologies" / "vienna_schema.ttl"
V = "http://example.org/vienna#"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


def nt(s: str, p: str, o: str) -> str:
    return f"{s} {p} {o} .\n"


def tables(spark, out: Path) -> dict:
    version = store.open_version(spark, out)
    return {name: sorted(tuple(r) for r in version.table(name).collect()) for name in store.TABLES}


def full_tables(spark, tmp_path: Path, sources: list[Path]) -> dict:
    """The tables of a full run, by the driver-side reasoner (the same tables as Spark's:
    tests/test_reasoner_local.py), so each case costs one Spark run fewer."""
    out = tmp_path / "full"
    shutil.rmtree(out, ignore_errors=True)
    materialize_sources(spark, sources, out, engine="local")
    return tables(spark, out)


def test_appended_and_new_sources_refresh_incrementally(spark, tmp_path):
    data = tmp_path / "data.nt"
    data.write_text(nt(f"<{V}u1>", RDF_TYPE, f"<{V}subway>") + nt(f"<{V}c1>", f"<{V}beg>", f"<{V}s1>")
                    + nt("_:b", f"<{V}beg>", f"<{V}s2>"))
    out = tmp_path / "store"
    first = materialize_sources(spark, [SCHEMA, data], out, engine="spark", if_changed=True)
    assert first["mode"] == "full"
    # appended: a type (rdfs9 up the hierarchy), a fact with a domain and range (rdfs2/3), the same
    # blank node again (same scope), a duplicate of an old triple, a bad line (a reject numbered
    # as in the whole file), a type with a class never seen (a new reflexive subclass row)
    with data.open("a") as handle:
        handle.write(nt(f"<{V}u2>", RDF_TYPE, f"<{V}subway>") + nt(f"<{V}c2>", f"<{V}end>", f"<{V}s3>")
                     + nt("_:b", f"<{V}end>", f"<{V}s3>") + nt(f"<{V}u1>", RDF_TYPE, f"<{V}subway>")
                     + "<oops> .\n" + nt(f"<{V}u3>", RDF_TYPE, f"<{V}Unheard>"))
    extra = tmp_path / "extra.nt"
    extra.write_text(nt("_:b", f"<{V}beg>", f"<{V}s9>") + nt(f"<{V}u4>", f"<{V}arriveAt>", f"<{V}s1>"))
    second = materialize_sources(spark, [SCHEMA, data, extra], out, engine="spark", if_changed=True)
    assert second["mode"] == "incremental", store.read_manifest(out).get("full_because")
    assert store.read_manifest(out)["previous"] == first["version"]
    assert second["rejected"] == 1
    ours = tables(spark, out)
    assert ours == full_tables(spark, tmp_path, [SCHEMA, data, extra])
    assert ours["rejects"][0][1] == 8        # line 8 of data.nt
    assert second["counts"] == {name: len(rows) for name, rows in ours.items() if name != "rejects"}


@pytest.mark.parametrize("change, because", [
    ("schema", "change the schema"),
    ("modified", "modified, not appended"),
    ("removed", "removed"),
])
def test_changes_that_need_a_full_run_say_why(spark, tmp_path, change, because):
    data = tmp_path / "data.nt"
    data.write_text(nt(f"<{V}u1>", RDF_TYPE, f"<{V}subway>"))
    extra = tmp_path / "extra.nt"
    extra.write_text(nt(f"<{V}u2>", RDF_TYPE, f"<{V}tram>"))
    out = tmp_path / "store"
    materialize_sources(spark, [SCHEMA, data, extra], out, engine="spark", if_changed=True)
    sources = [SCHEMA, data, extra]
    if change == "schema":
        with data.open("a") as handle:
            handle.write(nt(f"<{V}subway>", "<http://www.w3.org/2000/01/rdf-schema#subClassOf>", f"<{V}Fast>"))
    elif change == "modified":
        data.write_text(nt(f"<{V}u9>", RDF_TYPE, f"<{V}subway>") + nt(f"<{V}u1>", RDF_TYPE, f"<{V}tram>"))
    else:
        sources = [SCHEMA, data]
    summary = materialize_sources(spark, sources, out, engine="spark", if_changed=True)
    assert summary["mode"] == "full"
    assert because in store.read_manifest(out)["full_because"]
    assert tables(spark, out) == full_tables(spark, tmp_path, sources)
