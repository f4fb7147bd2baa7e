"""paths.algebra: desugaring (lower), smart constructors, printing, and that both keep meaning."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paths import lower, parse
from paths.lowering import to_algebra
from paths.algebra import (Alt, Axis, AxisKind, Domain, Identity, NegatedSet, Plus, Seq, SelfTerm,
                           Star, Test, alt, axis, children, identity, inverse, literal_term,
                           negated_set, opt, plus, self_term, seq, star, test, walk)
from paths.named import SC_STAR, SP_STAR, TYPE, property_pairs
from paths.reference import evaluate
from paths import syntax as S
from rdfcore.vocab import RDF_TYPE, RDFS_SUBCLASSOF, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER
from tests.hypothesis_profiles import examples
from tests.path_cases import domains, kinds, recursive_paths

EX = "http://example.org/vienna#"
PREFIXES = {"": EX, "xsd": "http://www.w3.org/2001/XMLSchema#"}
NODES, VOC = Domain.NODES, Domain.VOC


def t(local: str) -> str:
    return f"<{EX}{local}>"


def low(text: str, **kwargs):
    return lower(parse(text, PREFIXES), **kwargs)


def nxt(local: str, inv: bool = False) -> Axis:
    return Axis(AxisKind.NEXT, inv, t(local))


# --- desugaring --------------------------------------------------------------------------------

DESUGARED = [
    (":p", nxt("p")),
    ("<http://x.org/p>", Axis(AxisKind.NEXT, False, "<http://x.org/p>")),
    ("a", Axis(AxisKind.NEXT, False, RDF_TYPE)),
    ("^:p", nxt("p", True)),
    ("^^:p".replace("^^", "^(^") + ")", nxt("p")),
    ("^(:p/:q)", Seq((nxt("q", True), nxt("p", True)))),
    ("^(:p|:q)", Alt((nxt("p", True), nxt("q", True)))),
    ("^(:p/:q)*", Star(Seq((nxt("q", True), nxt("p", True))), NODES)),
    (":p/:q/:r", Seq((nxt("p"), nxt("q"), nxt("r")))),
    ("(:p/:q)/:r", Seq((nxt("p"), nxt("q"), nxt("r")))),
    ("(:p|:q)|:p", Alt((nxt("p"), nxt("q")))),
    (":p+", Plus(nxt("p"))),
    (":p*", Star(nxt("p"), NODES)),
    (":p?", Alt((nxt("p"), Identity(NODES)))),
    ("(next:::p)*", Star(nxt("p"), VOC)),
    ("(next:::p)?", Alt((nxt("p"), Identity(VOC)))),
    ("(:p/next)*", Star(Seq((nxt("p"), Axis(AxisKind.NEXT))), VOC)),
    ("(:p*)*", Star(nxt("p"), NODES)),
    ("(:p+)*", Star(nxt("p"), NODES)),
    ("(:p*)+", Star(nxt("p"), NODES)),
    ("(:p?)*", Star(nxt("p"), NODES)),
    ("(:p?)+", Star(nxt("p"), NODES)),
    ("(:p+)?", Star(nxt("p"), NODES)),
    ("(:p|())*", Star(nxt("p"), NODES)),
    ("()|:p+", Star(nxt("p"), NODES)),
    ("self|(next:::p)+", Star(nxt("p"), VOC)),
    ("()", Identity(NODES)),
    ("self", Identity(VOC)),
    ("()*", Identity(NODES)),
    ("self|()", Alt((Identity(VOC), Identity(NODES)))),
    ("self:::c", SelfTerm(t("c"))),
    ("self::a", SelfTerm(RDF_TYPE)),
    ("self::[:p]", Test(nxt("p"))),
    ("self::[self::[:p]]", Test(nxt("p"))),
    ("self::[self]", Identity(VOC)),
    ("[:p]", Test(nxt("p"))),
    ("[:p :c]", Test(Seq((nxt("p"), SelfTerm(t("c")))))),
    (":r[:p :c]", Seq((nxt("r"), Test(Seq((nxt("p"), SelfTerm(t("c")))))))),
    ("^(:r[:p])", Seq((Test(nxt("p")), nxt("r", True)))),
    ("next", Axis(AxisKind.NEXT)),
    ("next^-1", Axis(AxisKind.NEXT, True)),
    ("edge", Axis(AxisKind.EDGE)),
    ("edge^-1:::c", Axis(AxisKind.EDGE, True, t("c"))),
    ("node^-1::[:p]", Axis(AxisKind.NODE, True, nxt("p"))),
    ("node::[self:::c]", Axis(AxisKind.NODE, False, t("c"))),
    ("node::[self::[:p]]", Axis(AxisKind.NODE, False, nxt("p"))),
    ("^edge::[:p]", Axis(AxisKind.EDGE, True, nxt("p"))),
    # negated property sets, SPARQL 1.1 §18.2.2.4
    ("!:p", NegatedSet(frozenset({t("p")}))),
    ("!(:p|a)", NegatedSet(frozenset({t("p"), RDF_TYPE}))),
    ("!^:p", NegatedSet(frozenset({t("p")}), True)),
    ("!(^:p|^:q)", NegatedSet(frozenset({t("p"), t("q")}), True)),
    ("!(:p|^:q|:r)", Alt((NegatedSet(frozenset({t("p"), t("r")})),
                          NegatedSet(frozenset({t("q")}), True)))),
    ("^!(:p|^:q)", Alt((NegatedSet(frozenset({t("p")}), True),
                        NegatedSet(frozenset({t("q")}))))),
]


@pytest.mark.parametrize("text, expected", DESUGARED, ids=[d[0] for d in DESUGARED])
def test_lower(text, expected):
    assert low(text) == expected
    assert lower(parse(str(expected))) == expected


def test_running_example_sparql_and_native_spellings_agree():
    sparql = low("(^:beg/[:means :subway]/:end)+")
    native = low("(next^-1:::beg[next:::means/self:::subway]/next:::end)+")
    expected = Plus(Seq((nxt("beg", True), Test(Seq((nxt("means"), SelfTerm(t("subway"))))),
                         nxt("end"))))
    assert sparql == native == expected


def test_constants():
    def term(text):
        return low(f"self::{text}").term
    assert term('"x"') == '"x"'
    assert term('"x"^^xsd:string') == '"x"'
    assert term('"x"@EN-gb') == '"x"@en-gb'
    assert term('"1"^^xsd:integer') == f'"1"^^{XSD_INTEGER}'
    assert term("42") == f'"42"^^{XSD_INTEGER}'
    assert term("-4.5") == f'"-4.5"^^{XSD_DECIMAL}'
    assert term("1e3") == f'"1e3"^^{XSD_DOUBLE}'
    assert term("true") == '"true"^^<http://www.w3.org/2001/XMLSchema#boolean>'
    assert term("_:b") == "_:b"
    assert term(r'"a\"b\\c\nd\te"') == r'"a\"b\\c\nd\te"'
    assert term('"\u0001"') == r'"\u0001"'


def test_literal_term():
    assert literal_term("x") == '"x"'
    assert literal_term("x", "EN") == '"x"@en'
    assert literal_term("1", None, XSD_INTEGER) == f'"1"^^{XSD_INTEGER}'


def test_zero_length_can_be_forced():
    assert low(":p*", zero_length=VOC) == Star(nxt("p"), VOC)
    assert low("(next:::p)?", zero_length=NODES) == Alt((nxt("p"), Identity(NODES)))
    with pytest.raises(TypeError):
        low(":p*", zero_length="voc")


def test_to_algebra_is_lower():
    assert to_algebra is lower


# --- smart constructors ------------------------------------------------------------------------

P, Q, R = nxt("p"), nxt("q"), nxt("r")


def test_seq():
    assert seq(P) == P
    assert seq(seq(P, Q), R) == seq(P, seq(Q, R)) == Seq((P, Q, R))
    with pytest.raises(ValueError):
        seq()


def test_alt():
    assert alt(P) == P
    assert alt(alt(P, Q), R) == alt(P, alt(Q, R)) == Alt((P, Q, R))
    assert alt(P, Q, P) == Alt((P, Q))
    assert alt(P, P) == P
    with pytest.raises(ValueError):
        alt()


def test_alt_absorbs_identities():
    assert alt(Identity(NODES), Plus(P)) == Star(P, NODES)
    assert alt(Plus(P), Q, Identity(VOC)) == Alt((Star(P, VOC), Q))
    assert alt(Identity(NODES), Star(P, NODES)) == Star(P, NODES)
    assert alt(Star(P, NODES), Plus(P)) == Star(P, NODES)
    assert alt(Identity(VOC), Star(P, NODES)) == Alt((Identity(VOC), Star(P, NODES)))
    assert alt(Identity(VOC), Identity(NODES)) == Alt((Identity(VOC), Identity(NODES)))


def test_plus_and_star():
    assert plus(P) == Plus(P)
    assert plus(plus(P)) == Plus(P)
    assert plus(star(P, NODES)) == Star(P, NODES)
    assert star(P, VOC) == Star(P, VOC)
    assert star(star(P, VOC), VOC) == Star(P, VOC)
    assert star(plus(P), NODES) == Star(P, NODES)
    assert star(opt(P, NODES), NODES) == Star(P, NODES)
    assert plus(opt(P, VOC)) == Star(P, VOC)
    assert star(star(P, NODES), VOC) == Alt((Identity(VOC), Star(P, NODES)))
    for fixed in (Identity(VOC), Identity(NODES), SelfTerm(t("c")), Test(P)):
        assert plus(fixed) == fixed
    assert star(Test(P), VOC) == Alt((Identity(VOC), Test(P)))
    assert star(Identity(NODES), NODES) == Identity(NODES)
    with pytest.raises(TypeError):
        star(P, "nodes")


def test_opt():
    assert opt(P, NODES) == Alt((P, Identity(NODES)))
    assert opt(opt(P, NODES), NODES) == Alt((P, Identity(NODES)))
    assert opt(plus(P), NODES) == Star(P, NODES)


def test_inverse():
    assert inverse(P) == nxt("p", True)
    assert inverse(seq(P, Q)) == Seq((nxt("q", True), nxt("p", True)))
    assert inverse(alt(P, Q)) == Alt((nxt("p", True), nxt("q", True)))
    assert inverse(star(P, VOC)) == Star(nxt("p", True), VOC)
    assert inverse(plus(P)) == Plus(nxt("p", True))
    assert inverse(NegatedSet(frozenset({t("p")}))) == NegatedSet(frozenset({t("p")}), True)
    for fixed in (Identity(VOC), SelfTerm(t("c")), Test(P)):
        assert inverse(fixed) == fixed
    assert inverse(Axis(AxisKind.EDGE, False, P)) == Axis(AxisKind.EDGE, True, P)


def test_axis_test_and_negated_set():
    assert axis(AxisKind.NODE, False, self_term(t("c"))) == Axis(AxisKind.NODE, False, t("c"))
    assert axis(AxisKind.NODE, True, test(P)) == Axis(AxisKind.NODE, True, P)
    assert axis(AxisKind.EDGE, False, test(self_term(t("c")))) == Axis(AxisKind.EDGE, False, t("c"))
    assert test(test(P)) == Test(P)
    assert test(identity(VOC)) == Identity(VOC)
    assert test(identity(NODES)) == Test(Identity(NODES))
    assert negated_set([]) == Axis(AxisKind.NEXT)
    assert negated_set([], True) == Axis(AxisKind.NEXT, True)
    assert negated_set([t("p")], True) == NegatedSet(frozenset({t("p")}), True)


def test_nodes_validate():
    with pytest.raises(ValueError):
        Seq((P,))
    with pytest.raises(ValueError):
        Seq((P, Seq((P, Q))))
    with pytest.raises(ValueError):
        Alt((P, Alt((P, Q))))
    with pytest.raises(TypeError):
        Axis(AxisKind.NEXT, False, "p")            # not an N-Triples term
    with pytest.raises(TypeError):
        Axis("next")
    with pytest.raises(ValueError):
        NegatedSet(frozenset())
    with pytest.raises(TypeError):
        SelfTerm("c")
    with pytest.raises(TypeError):
        Star(P, "voc")
    with pytest.raises(TypeError):
        Plus("p")
    with pytest.raises(TypeError):
        seq(P, "q")


def test_nodes_are_hashable_values():
    assert {low(":p/:q"), low(":p/:q")} == {Seq((P, Q))}
    with pytest.raises(Exception):
        P.inverse = True  # frozen


def test_children_and_walk():
    path = low("(:p/node::[:q])*")
    assert [type(node).__name__ for node in walk(path)] == ["Star", "Seq", "Axis", "Axis", "Axis"]
    assert children(Axis(AxisKind.NEXT, False, t("c"))) == ()
    assert children(Test(P)) == (P,)


def test_axis_positions():
    assert AxisKind.NEXT.positions == (0, 2, 1)
    assert AxisKind.EDGE.positions == (0, 1, 2)
    assert AxisKind.NODE.positions == (1, 2, 0)


# --- printing ----------------------------------------------------------------------------------

def test_str_is_native_syntax_with_full_iris():
    assert str(low("^:p/:q")) == f"next^-1::{t('p')}/next::{t('q')}"
    assert str(low("(next:::p)*")) == f"next::{t('p')}*"
    assert str(low(":p*")) == f"(()|next::{t('p')}+)"          # SPARQL's identity, spelled out
    assert str(low(":p?")) == f"next::{t('p')}|()"
    assert str(Star(NegatedSet(frozenset({t("p")})), NODES)) == f"!{t('p')}*"
    assert str(Star(NegatedSet(frozenset({t("p")})), VOC)) == f"(self|!{t('p')}+)"
    assert str(low("[:p :c]")) == f"self::[next::{t('p')}/self::{t('c')}]"
    assert str(low("!(:p|^:q)")) == f"!{t('p')}|!^{t('q')}"
    assert str(low("(:p|:q)/:r")) == f"(next::{t('p')}|next::{t('q')})/next::{t('r')}"
    assert str(SC_STAR) == f"next::{RDFS_SUBCLASSOF}*"


def test_named_expressions_reparse():
    for path in (SC_STAR, SP_STAR, TYPE, property_pairs(t("p"))):
        assert lower(parse(str(path))) == path


# --- generated paths ---------------------------------------------------------------------------

IRIS = [t("p"), t("q"), t("r")]
CONSTANTS = IRIS + [t("c"), '"x"', '"x"@en', f'"1"^^{XSD_INTEGER}', "_:b"]
terms = st.sampled_from(CONSTANTS)

algebra_leaves = st.one_of(
    st.builds(axis, kinds, st.booleans(), st.none() | terms),
    st.builds(self_term, terms),
    st.builds(identity, domains),
    st.builds(negated_set, st.sets(st.sampled_from(IRIS), max_size=2), st.booleans()),
)


algebra = recursive_paths(algebra_leaves, min_parts=1, max_leaves=8)

# syntax trees: SPARQL forms, nSPARQL axes and nesting, with full IRIs and the prefix ":"
s_iris = st.sampled_from(["p", "q", "r"]).map(lambda local: S.PrefixedName("", local, EX + local))
s_terms = s_iris | st.just(S.TypeKeyword()) | st.just(S.StringLiteral("x", "en"))
s_leaves = st.one_of(
    s_iris, st.just(S.TypeKeyword()), st.just(S.EmptyPath()),
    st.lists(st.builds(S.NegatedMember, s_iris, st.booleans()), min_size=1, max_size=3).map(
        lambda ms: S.NegatedPropertySet(tuple(ms))),
    st.builds(S.AxisStep, st.sampled_from(["next", "edge", "node"]), st.booleans(),
              st.none() | s_terms),
    st.builds(S.AxisStep, st.just("self"), st.just(False), st.none() | s_terms),
)


def s_extend(sub):
    nested = st.builds(S.NestedTest, sub, st.none() | s_terms)
    return st.one_of(
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: S.Alternative(tuple(xs))),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: S.Sequence(tuple(xs))),
        sub.map(S.Inverse),
        st.builds(S.Modified, sub, st.sampled_from(["?", "*", "+"])),
        st.builds(S.Filtered, sub, nested),
        nested.map(S.TestStep),
        st.builds(S.AxisStep, st.sampled_from(["next", "edge", "node"]), st.booleans(),
                  test=sub),
    )


syntax_trees = st.recursive(s_leaves, s_extend, max_leaves=8)

FAST = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(syntax_trees)
def test_lowered_algebra_reparses_to_itself(tree):
    path = lower(tree)
    assert lower(parse(str(path))) == path, str(path)
    forced = lower(tree, zero_length=VOC)
    assert lower(parse(str(forced))) == forced


@FAST
@given(algebra)
def test_constructed_algebra_reparses_to_itself(path):
    assert lower(parse(str(path))) == path, str(path)


@FAST
@given(algebra)
def test_constructors_are_idempotent(path):
    for node in walk(path):
        if isinstance(node, Seq):
            assert seq(*node.parts) == node
        if isinstance(node, Alt):
            assert alt(*node.parts) == node
        if isinstance(node, Plus):
            assert plus(node.path) == node
        if isinstance(node, Star):
            assert star(node.path, node.identity) == node
    assert inverse(inverse(path)) == path


# --- the constructors keep meaning (checked with the reference evaluator) ----------------------

G_NODES = [t("n0"), t("n1"), t("n2"), t("c")]
graphs = st.sets(st.tuples(st.sampled_from(G_NODES), st.sampled_from(IRIS),
                           st.sampled_from(G_NODES + ['"x"'])), max_size=8)
ends = st.none() | st.sampled_from(G_NODES + [t("p"), t("absent"), '"x"'])


def raw(recipe):
    """Build a recipe with the plain dataclasses, simplifying as little as the node types allow."""
    op, *args = recipe
    if op == "leaf":
        return args[0]
    parts = [raw(arg) for arg in args[0]] if op in ("seq", "alt") else None
    if op == "seq":
        flat = [x for part in parts for x in (part.parts if isinstance(part, Seq) else (part,))]
        return flat[0] if len(flat) == 1 else Seq(tuple(flat))
    if op == "alt":
        flat = [x for part in parts for x in (part.parts if isinstance(part, Alt) else (part,))]
        flat = list(dict.fromkeys(flat))
        return flat[0] if len(flat) == 1 else Alt(tuple(flat))
    inner = raw(args[0])
    if op == "plus":
        return Plus(inner)
    if op == "star":
        return Star(inner, args[1])
    if op == "opt":
        return raw(("alt", [("leaf", inner), ("leaf", Identity(args[1]))]))
    if op == "test":
        return Test(inner)
    if op == "axis":
        return Axis(args[1], args[2], inner)
    raise AssertionError(op)


def smart(recipe):
    op, *args = recipe
    if op == "leaf":
        return args[0]
    if op in ("seq", "alt"):
        return (seq if op == "seq" else alt)(*(smart(arg) for arg in args[0]))
    inner = smart(args[0])
    return {"plus": lambda: plus(inner), "star": lambda: star(inner, args[1]),
            "opt": lambda: opt(inner, args[1]), "test": lambda: test(inner),
            "axis": lambda: axis(args[1], args[2], inner)}[op]()


recipe_leaves = algebra_leaves.map(lambda leaf: ("leaf", leaf))


def recipe_extend(sub):
    return st.one_of(
        st.lists(sub, min_size=1, max_size=3).map(lambda xs: ("seq", xs)),
        st.lists(sub, min_size=1, max_size=3).map(lambda xs: ("alt", xs)),
        sub.map(lambda x: ("plus", x)),
        st.tuples(st.just("star"), sub, domains),
        st.tuples(st.just("opt"), sub, domains),
        sub.map(lambda x: ("test", x)),
        st.tuples(st.just("axis"), sub, kinds, st.booleans()),
    )


recipes = st.recursive(recipe_leaves, recipe_extend, max_leaves=6)


@FAST
@given(graphs, recipes, ends, ends)
def test_simplifications_keep_meaning(graph, recipe, start, end):
    assert evaluate(graph, smart(recipe), start, end) == evaluate(graph, raw(recipe), start, end)


@FAST
@given(graphs, algebra)
def test_inverse_swaps_pairs(graph, path):
    assert evaluate(graph, inverse(path)) == {(y, x) for (x, y) in evaluate(graph, path)}


@FAST
@given(graphs, algebra)
def test_plus_is_e_then_star(graph, path):
    """DESIGN.md: exp+ = exp/exp* (nSPARQL's star), as relations; Plus is kept as its own node."""
    assert evaluate(graph, Plus(path)) == evaluate(graph, seq(path, Star(path, VOC)))

