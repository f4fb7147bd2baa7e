"""One test per entailment rule, named by the rule id, on the rule functions of ``reasoner.rules`` themselves
(owlrl style); then a few tests of the materializer that combines them (cycles, rounds, strategies)."""
from __future__ import annotations

import re

import pytest

from pyspark.sql import DataFrame

from reasoner import rules, schema_rules
from rdfcore.hashing import term_id
from rdfcore.jars import graphframes
from rdfcore.schema import CLASS, ID, INSTANCE, O, P, S, SUB, SUP
from tests.rdfhelpers import parse_turtle, t, tables_for

pytestmark = pytest.mark.spark


def inferred(spark, turtle: str) -> set[tuple[str, str, str]]:
    return tables_for(spark, parse_turtle(turtle))["inferred"]


def i(local: str) -> int:
    """The id of a prefixed name (``:x``, ``rdf:type``)."""
    return term_id(t(local))


def triples(spark, *rows: tuple[str, str, str]) -> DataFrame:
    return spark.createDataFrame([tuple(i(x) for x in row) for row in rows], f"{S} long, {P} long, {O} long")


def edges(spark, *rows: tuple[str, str]) -> DataFrame:
    return spark.createDataFrame([(i(a), i(b)) for a, b in rows], f"{SUB} long, {SUP} long")


def props(spark, *names: str) -> DataFrame:
    return spark.createDataFrame([(i(n),) for n in names], f"{SUB} long")


def rows(df: DataFrame) -> set[tuple[int, ...]]:
    return {tuple(r) for r in df.collect()}


def ids(*rows_: tuple[str, ...]) -> set[tuple[int, ...]]:
    return {tuple(i(x) for x in row) for row in rows_}


def test_rdfs2(spark):
    """rdfs2: (p rdfs:domain c), (x p y) ⟹ (x rdf:type c)."""
    out = rules.rdfs2(triples(spark, (":x", ":p", ":y"), (":x", ":q", ":y")), edges(spark, (":p", ":C")))
    assert out.columns == [INSTANCE, CLASS]
    assert rows(out) == ids((":x", ":C"))


def test_rdfs3(spark):
    """rdfs3: (p rdfs:range c), (x p y) ⟹ (y rdf:type c) — never for a literal y."""
    lit = '"lit"'
    data = spark.createDataFrame([(i(":x"), i(":p"), i(":y")), (i(":x"), i(":p"), term_id(lit))],
                                 f"{S} long, {P} long, {O} long")
    literals = spark.createDataFrame([(term_id(lit),)], f"{ID} long")
    out = rules.rdfs3(data, edges(spark, (":p", ":C")), literals)
    assert out.columns == [INSTANCE, CLASS]
    assert rows(out) == ids((":y", ":C"))


def test_rdfs5():
    """rdfs5: (p rdfs:subPropertyOf q), (q rdfs:subPropertyOf r) ⟹ (p rdfs:subPropertyOf r); no reflexivity."""
    out = schema_rules.rdfs5(ids((":p", ":q"), (":q", ":r"), (":r", ":s")))
    assert out == ids((":p", ":q"), (":q", ":r"), (":r", ":s"), (":p", ":r"), (":p", ":s"), (":q", ":s"))
    assert schema_rules.rdfs5(ids((":a", ":b"), (":b", ":a"))) == ids((":a", ":b"), (":b", ":a"), (":a", ":a"), (":b", ":b"))


def test_rdfs7(spark):
    """rdfs7: (p rdfs:subPropertyOf q), (x p y) ⟹ (x q y)."""
    out = rules.rdfs7(triples(spark, (":x", ":p", ":y"), (":x", ":r", ":y")), edges(spark, (":p", ":q")))
    assert out.columns == [S, P, O]
    assert rows(out) == ids((":x", ":q", ":y"))


def test_rdfs9(spark):
    """rdfs9: (c rdfs:subClassOf d), (x rdf:type c) ⟹ (x rdf:type d)."""
    types = spark.createDataFrame([(i(":x"), i(":C")), (i(":z"), i(":E"))], f"{INSTANCE} long, {CLASS} long")
    out = rules.rdfs9(types, edges(spark, (":C", ":D")))
    assert out.columns == [INSTANCE, CLASS]
    assert rows(out) == ids((":x", ":D"))


def test_rdfs11(spark):
    """rdfs11: (c rdfs:subClassOf d), (d rdfs:subClassOf e) ⟹ (c rdfs:subClassOf e)."""
    out = rows(rules.rdfs11(edges(spark, (":A", ":B"), (":B", ":C"), (":C", ":D"))))
    assert ids((":A", ":C"), (":A", ":D"), (":B", ":D"), (":A", ":B")) <= out
    assert (i(":D"), i(":A")) not in out


def test_scm_eqc1(spark):
    """scm-eqc1: (c owl:equivalentClass d) ⟹ (c rdfs:subClassOf d), (d rdfs:subClassOf c)."""
    out = rules.scm_eqc1(triples(spark, (":C", "owl:equivalentClass", ":D"), (":C", "rdfs:subClassOf", ":E")))
    assert out.columns == [SUB, SUP]
    assert rows(out) == ids((":C", ":D"), (":D", ":C"))


def test_scm_eqp1():
    """scm-eqp1: (p owl:equivalentProperty q) ⟹ (p rdfs:subPropertyOf q), (q rdfs:subPropertyOf p)."""
    assert schema_rules.scm_eqp1(ids((":p", ":q"))) == ids((":p", ":q"), (":q", ":p"))


def test_prp_inv(spark):
    """prp-inv1/prp-inv2: (p owl:inverseOf q), (x p y) ⟹ (y q x); (x q y) ⟹ (y p x)."""
    inverse = rules.both_ways(edges(spark, (":p", ":q")))
    out = rules.prp_inv(triples(spark, (":a", ":p", ":b"), (":c", ":q", ":d"), (":e", ":r", ":f")), inverse)
    assert out.columns == [S, P, O]
    assert rows(out) == ids((":b", ":q", ":a"), (":d", ":p", ":c"))


def test_prp_symp(spark):
    """prp-symp: (p rdf:type owl:SymmetricProperty), (x p y) ⟹ (y p x)."""
    out = rules.prp_symp(triples(spark, (":a", ":p", ":b"), (":a", ":q", ":b")), props(spark, ":p"))
    assert rows(out) == ids((":b", ":p", ":a"))


def test_prp_trp(spark):
    """prp-trp: (p rdf:type owl:TransitiveProperty), (x p y), (y p z) ⟹ (x p z), semi-naive in both orders."""
    known = triples(spark, (":a", ":p", ":b"), (":b", ":p", ":c"), (":c", ":p", ":d"), (":a", ":q", ":b"),
                    (":b", ":q", ":c"))
    delta = triples(spark, (":b", ":p", ":c"), (":b", ":q", ":c"))
    out = rows(rules.prp_trp(delta, known, props(spark, ":p")))
    assert out == ids((":b", ":p", ":d"), (":a", ":p", ":c"))  # :q is not transitive


def test_every_rule_id_has_a_test():
    """RULES lists the rule ids; each has its test function here (prp-inv1/2 share one)."""
    names = {n.replace("-", "_").rstrip("12") if n.startswith("prp-inv") else n.replace("-", "_") for n in rules.RULES}
    assert all(f"test_{n}" in globals() for n in names), names


def test_subclass_table_is_reflexive_transitive_with_cycles(spark):
    """The subclass table: reflexive-transitive closure; a cycle makes its members mutual subclasses."""
    tables = tables_for(spark, parse_turtle(":A rdfs:subClassOf :B . :B rdfs:subClassOf :C . :C rdfs:subClassOf :A . :D rdfs:subClassOf :A ."))
    members = [t(x) for x in (":A", ":B", ":C")]
    assert {(a, b) for a in members for b in members} <= tables["subclass"]
    assert {(t(":D"), m) for m in members} | {(t(":D"), t(":D"))} <= tables["subclass"]
    assert (t(":A"), t(":D")) not in tables["subclass"]
    # rdfs11 itself derives (A sc A) through the cycle
    assert (t(":A"), t("rdfs:subClassOf"), t(":A")) in tables["inferred"]


def test_rules_interact_across_rounds(spark):
    """A sub-property of rdfs:subClassOf creates schema that rdfs9 must then use (a second round)."""
    out = inferred(spark, ":narrower rdfs:subPropertyOf rdfs:subClassOf . :C :narrower :D . :x a :C . "
                          ":kind rdfs:subClassOf owl:TransitiveProperty . :r a :kind . :a :r :b . :b :r :c .")
    assert (t(":C"), t("rdfs:subClassOf"), t(":D")) in out
    assert (t(":x"), t("rdf:type"), t(":D")) in out
    assert (t(":a"), t(":r"), t(":c")) in out


def test_graphframes_strategy_gives_identical_tables(spark):
    """Both closure strategies (DataFrame semi-naive, GraphFrames SCC + aggregateMessages) agree."""
    from reasoner.closure import graphframes_available

    if not graphframes_available(spark):
        pytest.skip("GraphFrames' JVM jar is not on the classpath: the Maven repository reachable here does not "
                    "serve io.graphframes (rsp-sidecar setup reports the exact failure)")
    turtle = (":A rdfs:subClassOf :B . :B rdfs:subClassOf :C . :C rdfs:subClassOf :A . :C rdfs:subClassOf :D . "
              ":E rdfs:subClassOf :D . :x a :A . :p rdfs:subPropertyOf :q .")
    triples = parse_turtle(turtle)
    assert tables_for(spark, triples, "graphframes") == tables_for(spark, triples, "dataframe")


def test_graphframes_strategy_without_jar_says_how_to_supply_it(spark):
    """Asking for GraphFrames without its jar fails with the artifact and the remedy, not a stack trace."""
    from reasoner.closure import GraphFramesUnavailable, graphframes_available

    if graphframes_available(spark):
        pytest.skip("GraphFrames is on the classpath here; the missing-jar message cannot be provoked")
    artifact = re.escape(graphframes(spark.version).coordinate)   # the release for the running Spark's line
    with pytest.raises(GraphFramesUnavailable, match=rf"(?s){artifact}.*--packages"):
        tables_for(spark, parse_turtle(":A rdfs:subClassOf :B ."), "graphframes")
