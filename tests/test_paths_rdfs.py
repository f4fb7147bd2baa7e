"""The nSPARQL RDFS ``type`` expression (paths.named.TYPE) evaluated by paths.spark over a RAW graph
equals the reasoner's ``types`` table for that graph (DESIGN.md, "Nested regular expressions").

The comparison is on the ρdf vocabulary (rdf:type, rdfs:subClassOf, rdfs:subPropertyOf,
rdfs:domain, rdfs:range), for two principled reasons:

* OWL: the reasoner also applies OWL 2 RL extras (scm-eqc1, scm-eqp1, prp-inv, prp-symp, prp-trp)
  that change types (``:Station owl:equivalentClass :Stop`` types :m as a :Station); nSPARQL's
  ``type`` is the ρdf expression and knows nothing of them. So every triple with an OWL predicate
  or object is dropped from the input.
* literals: the reasoner does not type literals (rdfs3 on a literal object would give a literal
  subject, which RDF does not allow), while ``node⁻¹/(next::sp)*/next::range/…`` relates a literal
  object to the range. So literal instances are dropped from the path's answer.

Also, ``type`` reads rdf:type, rdfs:subClassOf, … only as predicates (the nSPARQL setting): the
graphs here never make them sub-properties of something else.
"""
from __future__ import annotations

import random
from pathlib import Path

import rdflib

from paths import PathGraph, evaluate
from paths.named import TYPE
from paths.spark import END, START
from reasoner.api import closure_tables
from rdfcore.dictionary import encode_triples
from rdfcore.hashing import term_id
from rdfcore.loading import TRIPLE_SCHEMA
from rdfcore.schema import CLASS, INSTANCE, TYPES
from rdfcore.vocab import (OWL_NS, RDF_TYPE, RDFS_DOMAIN, RDFS_RANGE, RDFS_SUBCLASSOF,
                            RDFS_SUBPROPERTYOF)
from tests.rdfhelpers import graph_triples

ONTOLOGIES = Path(__file__).resolve().parent.parent / "ontologies"


def rho_df(triples):
    """Drop the triples that use the OWL vocabulary (see the module doc)."""
    owl = "<" + OWL_NS
    return {t for t in triples if not (t[1].startswith(owl) or t[2].startswith(owl))}


def type_pairs_vs_types_table(spark, triples):
    frame = spark.createDataFrame(sorted(triples), TRIPLE_SCHEMA)
    names = {term_id(t): t for triple in triples for t in triple}
    pairs = evaluate(PathGraph(encode_triples(frame)), TYPE)
    ours = {(names[r[START]], names[r[END]]) for r in pairs.collect()}
    ours = {(x, c) for (x, c) in ours if not x.startswith('"')}        # no literal instances
    table = closure_tables(frame)[TYPES].select(INSTANCE, CLASS)
    theirs = {(r[INSTANCE], r[CLASS]) for r in table.collect()}
    return ours, theirs


def test_type_over_the_vienna_example(spark):
    graph = rdflib.Graph()
    for name in ("vienna_example.ttl", "vienna_schema.ttl"):
        graph.parse(ONTOLOGIES / name, format="turtle")
    triples = rho_df(graph_triples(graph))
    ours, theirs = type_pairs_vs_types_table(spark, triples)
    assert ("<http://example.org/vienna#m>", "<http://example.org/vienna#Place>") in ours  # rdfs7+rdfs3
    assert ours == theirs


def random_ontology(seed: int):
    """Class and property hierarchies (with a cycle), domains, ranges, typed instances and
    property assertions (some with literal objects), over a small vocabulary."""
    rng = random.Random(seed)
    ex = "http://example.org/r#"
    classes = [f"<{ex}C{i}>" for i in range(7)]
    props = [f"<{ex}p{i}>" for i in range(5)]
    things = [f"<{ex}x{i}>" for i in range(8)]
    literals = ['"v"', '"1"^^<http://www.w3.org/2001/XMLSchema#integer>']
    triples = {(classes[i], RDFS_SUBCLASSOF, classes[rng.randrange(i)]) for i in range(1, 7)}
    triples.add((classes[0], RDFS_SUBCLASSOF, classes[3]))                  # a cycle
    triples |= {(props[i], RDFS_SUBPROPERTYOF, props[rng.randrange(i)]) for i in range(1, 5)}
    triples |= {(rng.choice(props), rng.choice([RDFS_DOMAIN, RDFS_RANGE]), rng.choice(classes))
                for _ in range(5)}
    triples |= {(rng.choice(things), RDF_TYPE, rng.choice(classes)) for _ in range(4)}
    triples |= {(rng.choice(things), rng.choice(props), rng.choice(things + literals)) for _ in range(12)}
    return triples


def test_type_over_a_random_ontology(spark):
    triples = random_ontology(7)
    ours, theirs = type_pairs_vs_types_table(spark, triples)
    assert len(theirs) > 10
    assert ours == theirs
