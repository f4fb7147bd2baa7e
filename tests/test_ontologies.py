"""Tests of the ontology builders in ``ontologies/`` (no Spark)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rdflib import Graph, Literal, Namespace, URIRef
from rdflib.namespace import RDF, RDFS

from ontologies import chain, plants
from ontologies.data import DATA_DIR_ENV, data_dir
from ontologies.plants import (
    PLANTS_NS,
    PLANTS_RANK,
    TRACHEOBIONTA,
    TRACHEOBIONTA_ID,
    Taxon,
    TaxonomyError,
    class_iri,
    descendants,
    instance_classes,
    nt_string,
    read_taxonomy,
    taxonomy_path,
    write_hierarchy,
    write_instances,
)
from rdfcore.vocab import RDF_TYPE, RDFS_SUBCLASSOF, XSD_NS

ONTOLOGIES = Path(plants.__file__).resolve().parent
VIENNA = Namespace("http://example.org/vienna#")
XSD_DURATION = URIRef(XSD_NS + "duration")
HEADER = "id,name,rank,parent_id\n"
SMALL_CSV = HEADER + (
    "kingdom:Plantae,Plantae,kingdom,\n"
    "subkingdom:Tracheobionta,Tracheobionta,subkingdom,kingdom:Plantae\n"
    "genus:Acer,Acer,genus,subkingdom:Tracheobionta\n"
    'usda:ACSA,\"Acer \"\"sugar\"\" ×saccharum\",species,genus:Acer\n'
    "usda:ACSA2,Acer saccharum var. x,variety,usda:ACSA\n"
    "division:Bryophyta,Bryophyta,division,kingdom:Plantae\n"
    "usda:BRYUM,Bryum argenteum,species,division:Bryophyta\n"
)


def write_csv(tmp_path: Path, text: str, name: str = "taxa.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def parse_nt(path: Path) -> Graph:
    return Graph().parse(str(path), format="nt")


@pytest.fixture(scope="module")
def real_data() -> Path:
    try:
        return data_dir()
    except FileNotFoundError as error:
        pytest.skip(f"real data not available: {error}")


@pytest.fixture(scope="module")
def real_taxa(real_data: Path) -> list[Taxon]:
    return read_taxonomy(taxonomy_path(real_data))


@pytest.fixture()
def small_taxa(tmp_path: Path) -> list[Taxon]:
    return read_taxonomy(write_csv(tmp_path, SMALL_CSV))


# --- data directory -------------------------------------------------------------------------

def test_data_dir_prefers_explicit_then_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env = tmp_path / "explicit", tmp_path / "env"
    explicit.mkdir()
    env.mkdir()
    monkeypatch.setenv(DATA_DIR_ENV, str(env))
    assert data_dir(str(explicit)) == explicit
    assert data_dir() == env


def test_data_dir_missing_names_path_and_remedy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv(DATA_DIR_ENV, str(missing))
    with pytest.raises(FileNotFoundError, match="nowhere") as caught:
        data_dir()
    assert DATA_DIR_ENV in str(caught.value) and "--data-dir" in str(caught.value)


# --- class IRIs and literals ----------------------------------------------------------------

def test_class_iri_examples() -> None:
    assert class_iri("usda:ABAB") == "<http://example.org/plants#usda_ABAB>"
    assert class_iri("family:Rosaceae") == "<http://example.org/plants#family_Rosaceae>"
    assert TRACHEOBIONTA == "<http://example.org/plants#subkingdom_Tracheobionta>"
    assert class_iri("a_b") == f"<{PLANTS_NS}a%5Fb>"
    assert class_iri("x y/é") == f"<{PLANTS_NS}x%20y%2F%C3%A9>"


def test_class_iri_tricky_ids_do_not_collide() -> None:
    ids = ["a:b", "a_b", "a%5Fb", "a%3Ab", "a%b", "a::b", "a:_b", "a_:b", "a__b", "", ":", "_", "%"]
    assert len({class_iri(i) for i in ids}) == len(ids)


@given(st.lists(st.text(), unique=True, max_size=20))
def test_class_iri_is_injective(ids: list[str]) -> None:
    assert len({class_iri(i) for i in ids}) == len(ids)


@given(st.text())
def test_class_iri_is_a_valid_iri(taxon_id: str) -> None:
    assert re.fullmatch(r"<http://example\.org/plants#[A-Za-z0-9._~%-]*>", class_iri(taxon_id))


@pytest.mark.parametrize("value", ["plain", 'say "hi"', "back\\slash", "two\nlines\r", "Acer ×freemanii", ""])
def test_nt_string_round_trips_through_rdflib(value: str) -> None:
    graph = Graph().parse(data=f"<http://e/s> <http://e/p> {nt_string(value)} .\n", format="nt")
    assert list(graph.objects()) == [Literal(value)]


# --- reading the taxonomy -------------------------------------------------------------------

def test_read_taxonomy_small(small_taxa: list[Taxon]) -> None:
    assert [t.id for t in small_taxa][:2] == ["kingdom:Plantae", TRACHEOBIONTA_ID]
    assert small_taxa[0] == Taxon("kingdom:Plantae", "Plantae", "kingdom", "", 2)
    assert small_taxa[3].name == 'Acer "sugar" ×saccharum'
    assert descendants(small_taxa, TRACHEOBIONTA_ID) == {"genus:Acer", "usda:ACSA", "usda:ACSA2"}
    assert descendants(small_taxa, "usda:ACSA2") == set()
    with pytest.raises(KeyError, match="nope"):
        descendants(small_taxa, "nope")


def test_read_taxonomy_real(real_taxa: list[Taxon]) -> None:
    assert len(real_taxa) == 49_762
    assert len(descendants(real_taxa, TRACHEOBIONTA_ID)) == 42_006
    assert {t.id for t in real_taxa if not t.parent_id} == {"kingdom:Plantae", "kingdom:Fungi"}


def test_read_taxonomy_real_species_level(real_data: Path) -> None:
    taxa = read_taxonomy(taxonomy_path(real_data, species_level=True))
    assert len(taxa) == 40_433
    assert len(descendants(taxa, TRACHEOBIONTA_ID)) == 33_240


@pytest.mark.parametrize(
    ("text", "line", "column", "expected"),
    [
        ("", 1, "id", "header"),
        ("id,name,rank,parent\n", 1, "parent_id", "header"),
        ("id,name,rank\n", 1, "parent_id", "header"),
        ("id,name,rank,parent_id,extra\n", 1, "(extra)", "header"),
        (HEADER + "k:A,A,kingdom,\nk:B,B,kingdom\n", 3, "parent_id", "4 columns"),
        (HEADER + "k:A,A,kingdom,,x\n", 2, "(extra)", "4 columns"),
        (HEADER + "k:A,A,kingdom,\n\n", 3, "id", "4 columns"),
        (HEADER + "k:A,A,kingdom,\n,B,genus,k:A\n", 3, "id", "non-empty"),
        (HEADER + "k:A,A,kingdom,\ng:B,B,genus,k:A\ng:B,B2,genus,k:A\n", 4, "id", "line 3"),
        (HEADER + "g:B,B,genus,k:A\nk:A,A,kingdom,\n", 2, "parent_id", "earlier line"),
        (HEADER + "k:A,A,kingdom,\ng:B,B,genus,k:Z\n", 3, "parent_id", "'k:Z'"),
        (HEADER + "k:A,A,kingdom,k:A\n", 2, "parent_id", "earlier line"),
        # A quoted field spanning two lines: the error is reported at the record's first line.
        (HEADER + 'k:A,"A\nA",kingdom,\ng:B,B,genus,k:Z\n', 4, "parent_id", "earlier line"),
    ],
)
def test_read_taxonomy_rejects_malformed(
    tmp_path: Path, text: str, line: int, column: str, expected: str
) -> None:
    path = write_csv(tmp_path, text)
    with pytest.raises(TaxonomyError) as caught:
        read_taxonomy(path)
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.line, error.column) == (line, column)
    message = str(error)
    assert message.startswith(f"{path}:{line}: column {column!r}: ")
    assert expected in message


# --- writing the hierarchy ------------------------------------------------------------------

def test_write_hierarchy_small(tmp_path: Path, small_taxa: list[Taxon]) -> None:
    out = tmp_path / "h.nt"
    assert write_hierarchy(small_taxa, out, ranks=True) == 6 + 7 + 7
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines == sorted(lines)
    graph = parse_nt(out)
    assert len(graph) == 20
    acsa = URIRef(PLANTS_NS + "usda_ACSA")
    assert graph.value(acsa, RDFS.subClassOf) == URIRef(PLANTS_NS + "genus_Acer")
    assert graph.value(acsa, RDFS.label) == Literal('Acer "sugar" ×saccharum')
    assert graph.value(acsa, URIRef(PLANTS_RANK[1:-1])) == Literal("species")
    assert graph.value(URIRef(PLANTS_NS + "kingdom_Plantae"), RDFS.subClassOf) is None
    assert not list(graph.triples((None, RDF.type, None)))


def test_write_hierarchy_without_labels(tmp_path: Path, small_taxa: list[Taxon]) -> None:
    out = tmp_path / "h.nt"
    assert write_hierarchy(small_taxa, out, labels=False) == 6
    assert {p for _, p, _ in parse_nt(out)} == {RDFS.subClassOf}


def test_write_hierarchy_real(tmp_path: Path, real_taxa: list[Taxon]) -> None:
    out = tmp_path / "plants.nt"
    assert write_hierarchy(real_taxa, out) == (49_762 - 2) + 49_762
    first = out.read_bytes()
    write_hierarchy(real_taxa, out)
    assert out.read_bytes() == first
    graph = parse_nt(out)
    assert len(graph) == 99_522
    assert len(set(graph.subjects(RDFS.subClassOf))) == 49_760
    assert len(set(graph.subjects(RDFS.label))) == 49_762
    tracheo = URIRef(TRACHEOBIONTA[1:-1])
    assert len(set(graph.transitive_subjects(RDFS.subClassOf, tracheo))) - 1 == 42_006


# --- writing instances ----------------------------------------------------------------------

def test_instance_classes(small_taxa: list[Taxon]) -> None:
    assert [t.id for t in instance_classes(small_taxa)] == ["usda:ACSA", "usda:ACSA2", "usda:BRYUM"]
    higher = [t for t in small_taxa if t.rank not in plants.INSTANCE_RANKS]
    assert instance_classes(higher) == higher
    with pytest.raises(ValueError):
        instance_classes([])


def test_write_instances_small_parses(tmp_path: Path, small_taxa: list[Taxon]) -> None:
    out = tmp_path / "i.nt"
    assert write_instances(small_taxa, out, 500, seed=1, prefix="http://e.org/x/") == 500
    graph = parse_nt(out)
    assert len(graph) == 500
    assert set(graph.subjects()) == {URIRef(f"http://e.org/x/{i}") for i in range(500)}
    assert {str(o) for o in graph.objects()} == {
        PLANTS_NS + "usda_ACSA", PLANTS_NS + "usda_ACSA2", PLANTS_NS + "usda_BRYUM"
    }


@pytest.mark.parametrize("n", [0, 1, 99_999, 100_000, 100_001, 250_003])
def test_write_instances_writes_exactly_n_numbered_lines(
    tmp_path: Path, small_taxa: list[Taxon], n: int
) -> None:
    out = tmp_path / "i.nt"
    assert write_instances(small_taxa, out, n) == n
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == n
    prefix = f"<{plants.INSTANCE_NS}"
    assert all(line.startswith(f"{prefix}{i}> {RDF_TYPE} <") for i, line in enumerate(lines))


def test_write_instances_is_deterministic(tmp_path: Path, small_taxa: list[Taxon]) -> None:
    a, b, c = tmp_path / "a.nt", tmp_path / "b.nt", tmp_path / "c.nt"
    write_instances(small_taxa, a, 1000, seed=7)
    write_instances(small_taxa, b, 1000, seed=7)
    write_instances(small_taxa, c, 1000, seed=8)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


def test_write_instances_rejects_bad_arguments(tmp_path: Path, small_taxa: list[Taxon]) -> None:
    with pytest.raises(ValueError, match="n must be"):
        write_instances(small_taxa, tmp_path / "i.nt", -1)
    with pytest.raises(ValueError, match="not allowed in an IRI"):
        write_instances(small_taxa, tmp_path / "i.nt", 1, prefix="http://e.org/a b/")


def test_write_instances_real_has_negatives(tmp_path: Path, real_taxa: list[Taxon]) -> None:
    out = tmp_path / "i.nt"
    write_instances(real_taxa, out, 5000, seed=0)
    vascular = {class_iri(t) for t in descendants(real_taxa, TRACHEOBIONTA_ID)}
    allowed = {class_iri(t.id) for t in instance_classes(real_taxa)}
    classes = [line.split(" ")[2] for line in out.read_text(encoding="utf-8").splitlines()]
    assert set(classes) <= allowed
    outside = sum(c not in vascular for c in classes)
    # 6,485 of the 43,910 species-or-below taxa lie outside Tracheobionta (14.8 %, ~739 of 5,000).
    assert 600 < outside < 880


# --- CLI ------------------------------------------------------------------------------------

def test_plants_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plants").mkdir()
    write_csv(tmp_path / "plants", SMALL_CSV, "plants_taxonomy.csv")
    out, inst = tmp_path / "h.nt", tmp_path / "i.nt"
    argv = ["--data-dir", str(tmp_path), "--out", str(out), "--instances", "10", "--instances-out", str(inst)]
    assert plants.main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["taxa"] == 7 and summary["triples"] == 13
    assert summary["tracheobionta_subclasses"] == 3 and summary["instances"] == 10
    assert summary["out"] == str(out) and summary["instances_out"] == str(inst)
    assert len(inst.read_text().splitlines()) == 10


def test_plants_cli_reports_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert plants.main(["--data-dir", str(tmp_path / "missing"), "--out", str(tmp_path / "h.nt")]) == 2
    assert "missing" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        plants.main(["--out", str(tmp_path / "h.nt"), "--instances", "5"])


# --- hand-written Turtle --------------------------------------------------------------------

def test_vienna_example_is_the_running_example() -> None:
    graph = Graph().parse(ONTOLOGIES / "vienna_example.ttl", format="turtle")
    assert len(graph) == 18
    v = VIENNA
    for conn, beg, end, means, dur in [
        (v.conn1, v.m, v.b, v.subway, "PT3M"),
        (v.conn2, v.b, v.c, v.subway, "PT2M"),
        (v.conn3, v.h, v.g, v.subway, "PT3M"),
        (v.conn4, v.g, v.c, v.tram, "PT5M"),
    ]:
        assert graph.value(conn, v.beg) == beg and graph.value(conn, v.end) == end
        assert graph.value(conn, v.means) == means
        assert graph.value(conn, v.dur) == Literal(dur, datatype=XSD_DURATION)
    assert set(graph.subjects(RDF.type, v.subway)) == {v.a1, v.d1}


def test_vienna_schema_parses_and_its_documented_inferences_hold() -> None:
    owlrl = pytest.importorskip("owlrl")
    schema = Graph().parse(ONTOLOGIES / "vienna_schema.ttl", format="turtle")
    assert len(schema) < 60
    graph = Graph().parse(ONTOLOGIES / "vienna_example.ttl", format="turtle")
    graph += schema
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics).expand(graph)
    v = VIENNA
    for triple in [
        (v.SubwayConnection, RDFS.subClassOf, v.Link),  # rdfs11
        (v.a1, RDF.type, v.Vehicle),  # rdfs9
        (v.a1, RDF.type, v.Conveyance),  # subClassOf cycle
        (v.m, RDF.type, v.Station),  # owl:equivalentClass
        (v.beg, RDFS.subPropertyOf, v.involves),  # rdfs5
        (v.conn1, v.touches, v.m),  # rdfs7
        (v.conn1, v.duration, Literal("PT3M", datatype=XSD_DURATION)),  # owl:equivalentProperty
        (v.conn1, RDF.type, v.Link),  # rdfs2 + rdfs9
        (v.m, RDF.type, v.Place),  # rdfs7 + rdfs3
        (v.subway, RDF.type, v.Mode),  # rdfs3
        (v.b, v.previous, v.m),  # owl:inverseOf
        (v.m, v.reaches, v.c),  # rdfs7 + owl:TransitiveProperty
        (v.g, v.adjacent, v.h),  # owl:SymmetricProperty
    ]:
        assert triple in graph, triple


# --- synthetic chains -----------------------------------------------------------------------

def test_write_chain(tmp_path: Path) -> None:
    out = tmp_path / "c.nt"
    assert chain.write_chain(out, 5) == 5
    graph = parse_nt(out)
    cls = [URIRef(chain.chain_class(k)[1:-1]) for k in range(6)]
    assert set(graph) == {(cls[k], RDFS.subClassOf, cls[k + 1]) for k in range(5)}
    assert chain.write_chain(out, 0) == 0 and out.read_text() == ""


@pytest.mark.parametrize(("depth", "branching", "classes"), [(3, 2, 15), (2, 3, 13), (1, 5, 6)])
def test_write_chain_tree(tmp_path: Path, depth: int, branching: int, classes: int) -> None:
    out = tmp_path / "t.nt"
    assert chain.class_count(depth, branching) == classes
    assert chain.write_chain(out, depth, branching) == classes - 1
    graph = parse_nt(out)
    assert len(graph) == classes - 1
    root = URIRef(chain.chain_class(classes - 1)[1:-1])
    assert len(set(graph.subjects(RDFS.subClassOf))) == classes - 1  # one parent per non-root
    assert len(list(graph.subjects(RDFS.subClassOf, root))) == branching
    leaf = URIRef(chain.chain_class(0)[1:-1])
    assert len(list(graph.transitive_objects(leaf, RDFS.subClassOf))) == depth + 1


def test_write_chain_rejects_bad_shape(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        chain.write_chain(tmp_path / "c.nt", -1)
    with pytest.raises(ValueError):
        chain.write_chain(tmp_path / "c.nt", 3, branching=0)


def test_chain_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.nt"
    assert chain.main(["--depth", "4", "--branching", "2", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["classes"] == 31 and summary["triples"] == 30
    assert summary["root"] == chain.chain_class(30)
    assert f"{chain.chain_class(0)} {RDFS_SUBCLASSOF} " in out.read_text()
