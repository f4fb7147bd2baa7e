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


@pytest.fixture(params=["local", "spark"])
def delta_engine(request, monkeypatch):
    """Where the refresh computes the added triples' consequences: on the driver (few added
    bytes, the default here) or on Spark (forced by a zero driver limit)."""
    if request.param == "spark":
        monkeypatch.setenv("RSP_LOCAL_MAX_BYTES", "0")
    return request.param


def test_appended_and_new_sources_refresh_incrementally(spark, tmp_path, delta_engine):
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
    assert store.read_manifest(out)["delta_engine"] == delta_engine
    assert second["rejected"] == 1
    ours = tables(spark, out)
    assert ours == full_tables(spark, tmp_path, [SCHEMA, data, extra])
    assert ours["rejects"][0][1] == 8        # line 8 of data.nt
    assert second["counts"] == {name: len(rows) for name, rows in ours.items() if name != "rejects"}


@pytest.mark.parametrize("change, because, engine", [
    ("schema", "change the schema", "local"),
    ("schema", "change the schema", "spark"),
    ("modified", "modified, not appended", None),
    ("removed", "removed", None),
])
def test_changes_that_need_a_full_run_say_why(spark, tmp_path, monkeypatch, change, because, engine):
    if engine == "spark":   # the added triples' check on Spark (else on the driver)
        monkeypatch.setenv("RSP_LOCAL_MAX_BYTES", "0")
    data = tmp_path / "data.nt"
    data.write_text(nt(f"<{V}u1>", RDF_TYPE, f"<{V}subway>"))
    extra = tmp_path / "extra.nt"
    extra.write_text(nt(f"<{V}u2>", RDF_TYPE, f"<{V}tram>"))
    out = tmp_path / "store"
    # the first version on the driver (setup, one Spark run fewer); the refresh runs on Spark
    materialize_sources(spark, [SCHEMA, data, extra], out, engine="local", if_changed=True)
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


# --- randomized: the driver-side refresh against a full run ------------------------------------

EX = "http://example.org/inc#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
#: every rule the refresh applies to added triples: rdfs2/3 (domain, range), rdfs7 (a sub-property
#: chain), prp-inv, prp-symp, rdfs9 (a class hierarchy)
RULES_SCHEMA = "".join([
    nt(f"<{EX}A>", f"<{RDFS}subClassOf>", f"<{EX}B>"), nt(f"<{EX}B>", f"<{RDFS}subClassOf>", f"<{EX}C>"),
    nt(f"<{EX}p>", f"<{RDFS}subPropertyOf>", f"<{EX}q>"), nt(f"<{EX}q>", f"<{RDFS}subPropertyOf>", f"<{EX}r>"),
    nt(f"<{EX}p>", f"<{RDFS}domain>", f"<{EX}A>"), nt(f"<{EX}q>", f"<{RDFS}range>", f"<{EX}B>"),
    nt(f"<{EX}i>", f"<{OWL}inverseOf>", f"<{EX}j>"), nt(f"<{EX}j>", f"<{RDFS}domain>", f"<{EX}C>"),
    nt(f"<{EX}k>", RDF_TYPE, f"<{OWL}SymmetricProperty>"), nt(f"<{EX}k>", f"<{RDFS}range>", f"<{EX}A>"),
])


def _random_lines(rng, n: int, fresh: str) -> str:
    """``n`` random lines: old and ``fresh`` subjects, every rule's predicate, literals, blank
    nodes, types of known and unheard classes, and now and then a line that is not N-Triples."""
    nodes = [f"<{EX}x{i}>" for i in range(6)] + [f"<{EX}{fresh}{i}>" for i in range(4)] + ["_:b1", "_:b2"]
    preds = [f"<{EX}{p}>" for p in "pqrijkz"]
    lines = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.05:
            lines.append("<broken> .\n")
        elif roll < 0.3:
            lines.append(nt(rng.choice(nodes), RDF_TYPE, f"<{EX}{rng.choice(['A', 'B', 'C', 'Unheard', 'D'])}>"))
        else:
            obj = rng.choice(nodes + ['"lit"', '"7"^^<http://www.w3.org/2001/XMLSchema#integer>'])
            lines.append(nt(rng.choice(nodes), rng.choice(preds), obj))
    return "".join(lines)


@pytest.mark.parametrize("seed", range(12))
def test_driver_refresh_equals_a_full_run_on_random_data(spark, tmp_path, seed):
    """Random old data, random appended lines and a random new file: the refresh on the driver
    (the first run and the full reference run on the driver too: no Spark job in this test but
    the source listing) gives the full run's tables, rejects included."""
    import random

    rng = random.Random(seed)
    schema = tmp_path / "schema.nt"
    schema.write_text(RULES_SCHEMA)
    data = tmp_path / "data.nt"
    data.write_text(_random_lines(rng, 30, "old"))
    out = tmp_path / "store"
    materialize_sources(spark, [schema, data], out, engine="local", if_changed=True)
    with data.open("a") as handle:
        handle.write(_random_lines(rng, 20, "new"))
    extra = tmp_path / "extra.nt"
    extra.write_text(_random_lines(rng, 10, "other"))
    summary = materialize_sources(spark, [schema, data, extra], out, engine="spark", if_changed=True)
    manifest = store.read_manifest(out)
    assert summary["mode"] == "incremental" and manifest["delta_engine"] == "local", manifest.get("full_because")
    assert _driver_tables(out) == _driver_tables(_full_local(tmp_path, [schema, data, extra]))


def _full_local(tmp_path: Path, sources: list[Path]) -> Path:
    out = tmp_path / "full"
    materialize_sources(None, sources, out, engine="local")
    return out


def _driver_tables(out: Path) -> dict:
    """The current version's tables read with pyarrow, as sorted rows."""
    from reasoner.publish import read_local_table

    root = out / store.VERSIONS / store.read_manifest(out)["version"]
    return {name: sorted(zip(*read_local_table(root / name).values())) for name in store.TABLES}
