"""Helpers for reasoner tests: Turtle text in, sets of N-Triples strings out."""
from __future__ import annotations

import rdflib
from pyspark.sql import SparkSession

from reasoner.api import closure_tables
from rdfcore.loading import TRIPLE_SCHEMA
from rdfcore.terms import from_rdflib

PREFIXES = """
@prefix : <http://example.org/t#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""


def parse_turtle(text: str) -> set[tuple[str, str, str]]:
    graph = rdflib.Graph().parse(data=PREFIXES + text, format="turtle")
    return {(from_rdflib(s), from_rdflib(p), from_rdflib(o)) for s, p, o in graph}


def graph_triples(graph: rdflib.Graph) -> set[tuple[str, str, str]]:
    return {(from_rdflib(s), from_rdflib(p), from_rdflib(o)) for s, p, o in graph}


def tables_for(spark: SparkSession, triples: set[tuple[str, str, str]], strategy: str = "dataframe") -> dict[str, set]:
    df = spark.createDataFrame(sorted(triples), TRIPLE_SCHEMA)
    return {name: {tuple(row) for row in table.collect()} for name, table in closure_tables(df, strategy).items()}


def t(local: str) -> str:
    """``:x`` → ``<http://example.org/t#x>``; ``rdf:type`` etc. for the standard prefixes."""
    prefix, name = local.split(":", 1)
    namespaces = {"": "http://example.org/t#", "rdf": str(rdflib.RDF), "rdfs": str(rdflib.RDFS), "owl": str(rdflib.OWL)}
    return f"<{namespaces[prefix]}{name}>"
