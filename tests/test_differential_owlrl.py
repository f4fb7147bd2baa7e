"""Differential tests: our closure against owlrl, the independent oracle.

owlrl's RDFS semantics adds axiomatic triples, ``rdfs:Resource``/``rdf:Property``/``rdfs:Class``
typing (rdfs4, 6, 8, 10, 12, 13) and literal subjects; :func:`rho_df` removes those from both
sides, so the comparison is exactly on the rules rdfs2, 3, 5, 7, 9, 11. The OWL extras are
compared with owlrl's OWL 2 RL semantics projected on the ontology's own vocabulary.

Many random ontologies are closed in one Spark run: each gets its own namespace, so they cannot
interact, and one materialization checks them all.
"""
from __future__ import annotations

import random

import owlrl
import pytest
import rdflib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ontologies import plants
from rdfcore.vocab import RDF_NS, RDFS_NS, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF, RDF_TYPE, XSD_NS
from tests.hypothesis_profiles import examples
from tests.rdfhelpers import graph_triples, parse_turtle, tables_for

pytestmark = pytest.mark.spark

ONTOLOGIES = plants.Path(__file__).resolve().parent.parent / "ontologies"
_RDFS_CLASSES = {f"<{RDFS_NS}{n}>" for n in ("Resource", "Class", "Literal", "Datatype", "ContainerMembershipProperty")}
_RDFS_CLASSES.add(f"<{RDF_NS}Property>")


def to_graph(triples: set[tuple[str, str, str]]) -> rdflib.Graph:
    return rdflib.Graph().parse(data="".join(f"{s} {p} {o} .\n" for s, p, o in triples), format="nt")


def owlrl_closure(triples: set[tuple[str, str, str]], semantics=owlrl.RDFS_Semantics) -> set[tuple[str, str, str]]:
    graph = to_graph(triples)
    owlrl.DeductiveClosure(semantics, axiomatic_triples=False, datatype_axioms=False).expand(graph)
    return graph_triples(graph)


def rho_df(triples: set[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    """Drop what only the non-ρdf RDFS rules (and literal subjects) produce."""
    def keep(s: str, p: str, o: str) -> bool:
        if s.startswith('"') or s.startswith((f"<{RDF_NS}", f"<{RDFS_NS}", f"<{XSD_NS}")):
            return False
        if p == RDF_TYPE and o in _RDFS_CLASSES:
            return False
        if p in (RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF) and (s == o or o.startswith(f"<{RDFS_NS}")):
            return False
        return p != f"<{RDFS_NS}member>"
    return {t for t in triples if keep(*t)}


# --- random ontologies ---------------------------------------------------------------------
SC, SP, DOM, RNG = RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF, f"<{RDFS_NS}domain>", f"<{RDFS_NS}range>"


@st.composite
def ontology(draw, ns: str) -> set[tuple[str, str, str]]:
    cls = [f"<{ns}C{i}>" for i in range(4)]
    prop = [f"<{ns}p{i}>" for i in range(3)]
    ind = [f"<{ns}a{i}>" for i in range(4)] + ['"lit"']
    kinds = {
        "sc": st.tuples(st.sampled_from(cls), st.just(SC), st.sampled_from(cls)),
        "sp": st.tuples(st.sampled_from(prop), st.just(SP), st.sampled_from(prop)),
        "dom": st.tuples(st.sampled_from(prop), st.just(DOM), st.sampled_from(cls)),
        "rng": st.tuples(st.sampled_from(prop), st.just(RNG), st.sampled_from(cls)),
        "type": st.tuples(st.sampled_from(ind[:-1]), st.just(RDF_TYPE), st.sampled_from(cls)),
        "fact": st.tuples(st.sampled_from(ind[:-1]), st.sampled_from(prop), st.sampled_from(ind)),
        # meta level: a property of the ontology that is a sub-property of rdfs:subClassOf
        "meta": st.tuples(st.sampled_from(prop), st.just(SP), st.just(SC)),
    }
    weighted = st.sampled_from(["sc"] * 4 + ["sp"] * 2 + ["dom", "rng"] * 2 + ["type"] * 3 + ["fact"] * 4 + ["meta"])
    names = draw(st.lists(weighted, min_size=1, max_size=14))
    return {draw(kinds[n]) for n in names}


@st.composite
def ontologies(draw) -> list[set[tuple[str, str, str]]]:
    count = draw(st.integers(min_value=4, max_value=10))
    return [draw(ontology(f"http://example.org/r{i}#")) for i in range(count)]


# 2 drawn examples by default (each is 4-10 random ontologies reasoned together on Spark), 100
# under the thorough profile
@settings(max_examples=examples(2, 100), deadline=None, suppress_health_check=list(HealthCheck))
@given(ontologies())
def test_random_ontologies_match_owlrl(spark, onts):
    """Random ontologies (with cycles, sub-properties, domains/ranges on literals, meta-level sp)."""
    union = set().union(*onts)
    ours = rho_df(tables_for(spark, union)["inferred"])
    for ont in onts:  # each against owlrl alone, so a failure names the smallest input
        ns = next(iter(ont))[0].split("#")[0]
        mine = {t for t in ours if t[0].startswith(ns) or (t[0] == '"lit"')}
        assert mine == rho_df(owlrl_closure(ont)), f"ontology {sorted(ont)}"


def test_vienna_example_matches_owlrl(spark):
    """The running example's background + the hand-written schema, ρdf part."""
    graph = rdflib.Graph()
    graph.parse(ONTOLOGIES / "vienna_example.ttl")
    graph.parse(ONTOLOGIES / "vienna_schema.ttl")
    triples = graph_triples(graph)
    rdfs_only = {t for t in triples if "owl#" not in t[1] and "owl#" not in t[2]}
    assert rho_df(tables_for(spark, rdfs_only)["inferred"]) == rho_df(owlrl_closure(rdfs_only))


def _own_vocabulary(triples: set[tuple[str, str, str]], ns: str) -> set[tuple[str, str, str]]:
    """Types into, subclass pairs between, and facts of properties of the namespace ``ns``."""
    own = f"<{ns}"
    return {(s, p, o) for s, p, o in triples
            if s.startswith(own) and s != o and (p.startswith(own) or (p in (RDF_TYPE, SC) and o.startswith(own)))}


#: Every OWL extra at once, with a subClassOf cycle (prefix ``:`` = http://example.org/t#).
OWL_EXTRAS = """
    :A rdfs:subClassOf :B . :B rdfs:subClassOf :C . :C rdfs:subClassOf :A . :C rdfs:subClassOf :D .
    :E owl:equivalentClass :A . :F owl:equivalentClass :E . :x a :F . :y a :B .
    :p owl:equivalentProperty :q . :q rdfs:subPropertyOf :r . :r rdfs:domain :E .
    :s owl:inverseOf :r . :u :s :v . :anc a owl:TransitiveProperty . :sib a owl:SymmetricProperty .
    :r rdfs:subPropertyOf :anc . :a1 :p :a2 . :a2 :q :a3 . :a3 :anc :a4 . :a1 :sib :a5 .
    :sib rdfs:subPropertyOf :anc ."""


@pytest.mark.parametrize("name", ["vienna", "cycles"])
def test_owl_extras_match_owlrl_owl2rl(spark, name):
    """equivalentClass/Property, inverseOf, Symmetric/TransitiveProperty, subClassOf cycles vs OWL 2 RL."""
    if name == "vienna":
        graph = rdflib.Graph()
        graph.parse(ONTOLOGIES / "vienna_example.ttl")
        graph.parse(ONTOLOGIES / "vienna_schema.ttl")
        triples, ns = graph_triples(graph), "http://example.org/vienna#"
    else:
        triples, ns = parse_turtle(OWL_EXTRAS), "http://example.org/t#"
    ours = tables_for(spark, triples)["inferred"]
    expected = owlrl_closure(triples, owlrl.OWLRL_Semantics)
    assert _own_vocabulary(ours, ns) == _own_vocabulary(expected, ns)


def test_plant_subset_matches_owlrl(spark, shared_data):
    """A real slice of the plant taxonomy (two orders) with instances typed at every level."""
    taxa = plants.read_taxonomy(plants.taxonomy_path(shared_data))
    keep = set()
    for root in ("order:Rosales", "order:Fagales"):
        keep |= plants.descendants(taxa, root) | {root}
    chosen = [t for t in taxa if t.id in keep]
    rng = random.Random(3)
    triples = {(plants.class_iri(t.id), SC, plants.class_iri(t.parent_id)) for t in chosen if t.parent_id}
    triples |= {(f"<http://example.org/plants/instance/{i}>", RDF_TYPE, plants.class_iri(rng.choice(chosen).id))
                for i in range(300)}
    assert len(triples) > 2000
    assert rho_df(tables_for(spark, triples)["inferred"]) == rho_df(owlrl_closure(triples))
