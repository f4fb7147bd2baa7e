"""One test per entailment rule, named by the rule (the rule is in each docstring)."""
from __future__ import annotations

import pytest

from tests.rdfhelpers import parse_turtle, t, tables_for

pytestmark = pytest.mark.spark


def inferred(spark, turtle: str) -> set[tuple[str, str, str]]:
    return tables_for(spark, parse_turtle(turtle))["inferred"]


def test_rdfs2(spark):
    """rdfs2: (p rdfs:domain c), (x p y) ⟹ (x rdf:type c)."""
    out = inferred(spark, ":p rdfs:domain :C . :x :p :y .")
    assert (t(":x"), t("rdf:type"), t(":C")) in out
    assert (t(":y"), t("rdf:type"), t(":C")) not in out


def test_rdfs3(spark):
    """rdfs3: (p rdfs:range c), (x p y) ⟹ (y rdf:type c) — never for a literal y."""
    out = inferred(spark, ':p rdfs:range :C . :x :p :y . :x :p "lit" .')
    assert (t(":y"), t("rdf:type"), t(":C")) in out
    assert (t(":x"), t("rdf:type"), t(":C")) not in out
    assert not any(s.startswith('"') for s, _, _ in out)


def test_rdfs5(spark):
    """rdfs5: (p rdfs:subPropertyOf q), (q rdfs:subPropertyOf r) ⟹ (p rdfs:subPropertyOf r)."""
    out = inferred(spark, ":p rdfs:subPropertyOf :q . :q rdfs:subPropertyOf :r . :r rdfs:subPropertyOf :s .")
    for a, b in [(":p", ":r"), (":p", ":s"), (":q", ":s")]:
        assert (t(a), t("rdfs:subPropertyOf"), t(b)) in out
    assert (t(":p"), t("rdfs:subPropertyOf"), t(":p")) not in out  # reflexivity is rdfs6, not ρdf


def test_rdfs7(spark):
    """rdfs7: (p rdfs:subPropertyOf q), (x p y) ⟹ (x q y)."""
    out = inferred(spark, ":p rdfs:subPropertyOf :q . :q rdfs:subPropertyOf :r . :x :p :y .")
    assert (t(":x"), t(":q"), t(":y")) in out
    assert (t(":x"), t(":r"), t(":y")) in out


def test_rdfs9(spark):
    """rdfs9: (c rdfs:subClassOf d), (x rdf:type c) ⟹ (x rdf:type d)."""
    out = inferred(spark, ":C rdfs:subClassOf :D . :D rdfs:subClassOf :E . :x a :C .")
    assert {(t(":x"), t("rdf:type"), t(c)) for c in (":C", ":D", ":E")} <= out


def test_rdfs11(spark):
    """rdfs11: (c rdfs:subClassOf d), (d rdfs:subClassOf e) ⟹ (c rdfs:subClassOf e)."""
    out = inferred(spark, ":A rdfs:subClassOf :B . :B rdfs:subClassOf :C . :C rdfs:subClassOf :D .")
    for a, b in [(":A", ":C"), (":A", ":D"), (":B", ":D")]:
        assert (t(a), t("rdfs:subClassOf"), t(b)) in out


def test_scm_eqc1(spark):
    """scm-eqc1: (c owl:equivalentClass d) ⟹ (c rdfs:subClassOf d), (d rdfs:subClassOf c)."""
    tables = tables_for(spark, parse_turtle(":C owl:equivalentClass :D . :x a :D ."))
    assert {(t(":C"), t(":D")), (t(":D"), t(":C"))} <= tables["subclass"]
    assert (t(":x"), t(":C")) in tables["types"]


def test_scm_eqp1(spark):
    """scm-eqp1: (p owl:equivalentProperty q) ⟹ (p rdfs:subPropertyOf q), (q rdfs:subPropertyOf p)."""
    out = inferred(spark, ":p owl:equivalentProperty :q . :x :q :y .")
    assert (t(":p"), t("rdfs:subPropertyOf"), t(":q")) in out
    assert (t(":q"), t("rdfs:subPropertyOf"), t(":p")) in out
    assert (t(":x"), t(":p"), t(":y")) in out


def test_prp_inv(spark):
    """prp-inv1/prp-inv2: (p owl:inverseOf q), (x p y) ⟹ (y q x); (x q y) ⟹ (y p x)."""
    out = inferred(spark, ":p owl:inverseOf :q . :a :p :b . :c :q :d .")
    assert (t(":b"), t(":q"), t(":a")) in out
    assert (t(":d"), t(":p"), t(":c")) in out


def test_prp_symp(spark):
    """prp-symp: (p rdf:type owl:SymmetricProperty), (x p y) ⟹ (y p x)."""
    out = inferred(spark, ":p a owl:SymmetricProperty . :a :p :b .")
    assert (t(":b"), t(":p"), t(":a")) in out


def test_prp_trp(spark):
    """prp-trp: (p rdf:type owl:TransitiveProperty), (x p y), (y p z) ⟹ (x p z)."""
    tables = tables_for(spark, parse_turtle(":p a owl:TransitiveProperty . :a :p :b . :b :p :c . :c :p :d . :a :q :b . :b :q :c ."))
    assert {(t(":p"), t(a), t(b)) for a, b in [(":a", ":c"), (":a", ":d"), (":b", ":d")]} <= tables["transitive"]
    assert (t(":a"), t(":q"), t(":c")) not in tables["inferred"]  # :q is not transitive


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
    with pytest.raises(GraphFramesUnavailable, match=r"(?s)io\.graphframes:graphframes-spark4_2\.13:0\.10\.0.*--packages"):
        tables_for(spark, parse_turtle(":A rdfs:subClassOf :B ."), "graphframes")
