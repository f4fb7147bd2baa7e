"""paths/grammar.lark + paths.parser + paths.syntax: every construct, spans, errors, round trip."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paths import PathSyntaxError, parse
from paths.syntax import (AxisStep, BlankNode, BooleanLiteral, EmptyPath, Filtered, Inverse,
                          IriRef, Modified, NegatedMember, NegatedPropertySet, NestedTest,
                          NumericLiteral, PrefixedName, Sequence, Alternative, Span, StringLiteral,
                          TestStep, TypeKeyword)
from tests.hypothesis_profiles import examples

EX = "http://example.org/vienna#"
PREFIXES = {"": EX, "ex": "http://ex.org/ns#", "next": "http://next.org/", "a": "http://a.org/",
            "selfie": "http://selfie.org/", "xsd": "http://www.w3.org/2001/XMLSchema#"}


def pn(local: str, prefix: str = "") -> PrefixedName:
    return PrefixedName(prefix, local, PREFIXES[prefix] + local.replace("\\", ""))


def p(text: str):
    return parse(text, PREFIXES)


# --- every construct ---------------------------------------------------------------------------

CONSTRUCTS = [
    # [94] iri, prefixed names, 'a'
    ("<http://x.org/p>", IriRef("http://x.org/p", "http://x.org/p")),
    (":beg", pn("beg")),
    ("ex:p", pn("p", "ex")),
    ("ex:", PrefixedName("ex", "", "http://ex.org/ns#")),
    ("a", TypeKeyword()),
    # keywords never eat the start of a prefixed name
    ("a:b", pn("b", "a")),
    ("next:x", pn("x", "next")),
    ("selfie:x", pn("x", "selfie")),
    # local names with escapes, percent-encodings, dots and colons inside
    (r"ex:a\.b", PrefixedName("ex", r"a\.b", "http://ex.org/ns#a.b")),
    ("ex:a%20b", PrefixedName("ex", "a%20b", "http://ex.org/ns#a%20b")),
    ("ex:a.b:c", PrefixedName("ex", "a.b:c", "http://ex.org/ns#a.b:c")),
    # [89] alternative, [90] sequence, [92] inverse, [93] modifiers
    (":p|:q|:r", Alternative((pn("p"), pn("q"), pn("r")))),
    (":p/:q/:r", Sequence((pn("p"), pn("q"), pn("r")))),
    (":p/:q|:r", Alternative((Sequence((pn("p"), pn("q"))), pn("r")))),
    (":p/(:q|:r)", Sequence((pn("p"), Alternative((pn("q"), pn("r")))))),
    ("(:p|:q)|:r", Alternative((Alternative((pn("p"), pn("q"))), pn("r")))),
    ("^:p", Inverse(pn("p"))),
    ("^:p/:q", Sequence((Inverse(pn("p")), pn("q")))),
    ("^(:p/:q)", Inverse(Sequence((pn("p"), pn("q"))))),
    ("^(^:p)", Inverse(Inverse(pn("p")))),
    (":p?", Modified(pn("p"), "?")),
    (":p*", Modified(pn("p"), "*")),
    (":p+", Modified(pn("p"), "+")),
    ("^:p*", Inverse(Modified(pn("p"), "*"))),
    ("(:p/:q)*", Modified(Sequence((pn("p"), pn("q"))), "*")),
    ("(:p*)+", Modified(Modified(pn("p"), "*"), "+")),
    ("((:p))", pn("p")),
    # [95], [96] negated property sets
    ("!:p", NegatedPropertySet((NegatedMember(pn("p")),))),
    ("!(:p)", NegatedPropertySet((NegatedMember(pn("p")),))),
    ("!^:p", NegatedPropertySet((NegatedMember(pn("p"), True),))),
    ("!a", NegatedPropertySet((NegatedMember(TypeKeyword()),))),
    ("!(:p|^:q|a|^a)", NegatedPropertySet((NegatedMember(pn("p")), NegatedMember(pn("q"), True),
                                           NegatedMember(TypeKeyword()),
                                           NegatedMember(TypeKeyword(), True)))),
    ("!:p*", Modified(NegatedPropertySet((NegatedMember(pn("p")),)), "*")),
    ("^!:p", Inverse(NegatedPropertySet((NegatedMember(pn("p")),)))),
    # CQELS-CEP nesting
    (":p[:q]", Filtered(pn("p"), NestedTest(pn("q")))),
    ("[:means :subway]", TestStep(NestedTest(pn("means"), pn("subway")))),
    (":p[:q][:r]", Filtered(Filtered(pn("p"), NestedTest(pn("q"))), NestedTest(pn("r")))),
    (":p*[:q]", Filtered(Modified(pn("p"), "*"), NestedTest(pn("q")))),
    ("^:p[:q]", Inverse(Filtered(pn("p"), NestedTest(pn("q"))))),
    ("[:p/:q|:r :c]", TestStep(NestedTest(Alternative((Sequence((pn("p"), pn("q"))), pn("r"))),
                                          pn("c")))),
    ("[:p a]", TestStep(NestedTest(pn("p"), TypeKeyword()))),
    ("[:p][:q]", Filtered(TestStep(NestedTest(pn("p"))), NestedTest(pn("q")))),
    ("[:p]*", Modified(TestStep(NestedTest(pn("p"))), "*")),
    ("(^:beg/[:means :subway]/:end)+",
     Modified(Sequence((Inverse(pn("beg")), TestStep(NestedTest(pn("means"), pn("subway"))),
                        pn("end"))), "+")),
    # nSPARQL axes
    ("self", AxisStep("self")),
    ("next", AxisStep("next")),
    ("next^-1", AxisStep("next", True)),
    ("edge", AxisStep("edge")),
    ("edge^-1", AxisStep("edge", True)),
    ("node", AxisStep("node")),
    ("node^-1", AxisStep("node", True)),
    ("next:::p", AxisStep("next", term=pn("p"))),
    ("next:: :p", AxisStep("next", term=pn("p"))),
    ("next::ex:p", AxisStep("next", term=pn("p", "ex"))),
    ("next^-1::<http://x.org/p>", AxisStep("next", True, term=IriRef("http://x.org/p",
                                                                     "http://x.org/p"))),
    ("self::a", AxisStep("self", term=TypeKeyword())),
    ("edge::[node]", AxisStep("edge", test=AxisStep("node"))),
    ("edge^-1::[next::a/self]", AxisStep("edge", True, test=Sequence((
        AxisStep("next", term=TypeKeyword()), AxisStep("self"))))),
    ("self::[:p]", AxisStep("self", test=pn("p"))),
    ("next*", Modified(AxisStep("next"), "*")),
    ("(next::ex:sc)*", Modified(AxisStep("next", term=pn("sc", "ex")), "*")),
    ("next^-1:::beg[next:::means/self:::subway]/next:::end",
     Sequence((Filtered(AxisStep("next", True, term=pn("beg")),
                        NestedTest(Sequence((AxisStep("next", term=pn("means")),
                                             AxisStep("self", term=pn("subway")))))),
               AxisStep("next", term=pn("end"))))),
    # our extension: the empty path
    ("()", EmptyPath()),
    ("( )", EmptyPath()),
    (":p|()", Alternative((pn("p"), EmptyPath()))),
    # constants [129]-[138]
    ('self::"x"', AxisStep("self", term=StringLiteral("x"))),
    ("self::'x'", AxisStep("self", term=StringLiteral("x"))),
    ('self::"""a"b""c"""', AxisStep("self", term=StringLiteral('a"b""c'))),
    ("self::'''a\nb'''", AxisStep("self", term=StringLiteral("a\nb"))),
    (r'self::"a\tb\"\\\u00e9"', AxisStep("self", term=StringLiteral('a\tb"\\\u00e9'))),
    ('self::"x"@en-GB', AxisStep("self", term=StringLiteral("x", language="en-GB"))),
    ('self::"1"^^xsd:integer', AxisStep("self", term=StringLiteral("1", datatype=PrefixedName(
        "xsd", "integer", "http://www.w3.org/2001/XMLSchema#integer")))),
    ("self::42", AxisStep("self", term=NumericLiteral("42"))),
    ("self::-1.5", AxisStep("self", term=NumericLiteral("-1.5"))),
    ("self::+2E10", AxisStep("self", term=NumericLiteral("+2E10"))),
    ("self::.5", AxisStep("self", term=NumericLiteral(".5"))),
    ("self::true", AxisStep("self", term=BooleanLiteral(True))),
    ("self::false", AxisStep("self", term=BooleanLiteral(False))),
    ("self::_:b1", AxisStep("self", term=BlankNode("b1"))),
    ("[:dur 3]", TestStep(NestedTest(pn("dur"), NumericLiteral("3")))),
    ("[:p+1]", TestStep(NestedTest(pn("p"), NumericLiteral("+1")))),
    ("[:p+ 1]", TestStep(NestedTest(Modified(pn("p"), "+"), NumericLiteral("1")))),
    ('[:name "Bob"@en]', TestStep(NestedTest(pn("name"), StringLiteral("Bob", language="en")))),
    # whitespace and comments
    ("  :p\n/ :q # a comment\n", Sequence((pn("p"), pn("q")))),
]


@pytest.mark.parametrize("text, expected", CONSTRUCTS, ids=[c[0] for c in CONSTRUCTS])
def test_construct(text, expected):
    tree = p(text)
    assert tree == expected
    assert p(str(tree)) == tree


def test_running_example_prints_as_written():
    text = "(^:beg/[:means :subway]/:end)+"
    assert str(p(text)) == text


def test_prefixed_names_print_as_written():
    assert str(p("ex:p/next:x/a:b/:q")) == "ex:p/next:x/a:b/:q"
    assert str(p(r"ex:a\.b")) == r"ex:a\.b"


def test_minimal_parentheses():
    assert str(p("((:p/:q))|((:r))")) == ":p/:q|:r"
    assert str(p("(:p|:q)/:r")) == "(:p|:q)/:r"
    assert str(p("^(:p)")) == "^:p"
    assert str(p("(^:p)[:q]")) == "(^:p)[:q]"
    assert str(p("(:p[:q])*")) == "(:p[:q])*"


def test_base_resolves_relative_iris():
    tree = parse("<p>/<../q#r>", base="http://x.org/a/b")
    assert tree == Sequence((IriRef("p", "http://x.org/a/p"), IriRef("../q#r", "http://x.org/q#r")))
    assert str(tree) == "<p>/<../q#r>"


def test_iri_unicode_escapes_are_decoded():
    assert parse(r"<http://x.org/\u00e9>") == IriRef(r"http://x.org/\u00e9", "http://x.org/é")


# --- spans -------------------------------------------------------------------------------------

def test_spans():
    tree = p(":p/^:q")
    assert tree.span == Span(1, 1, 1, 7, 0, 6)
    first, second = tree.steps
    assert first.span == Span(1, 1, 1, 3, 0, 2)
    assert second.span == Span(1, 4, 1, 7, 3, 6)        # the '^' is part of the inverse
    assert second.path.span == Span(1, 5, 1, 7, 4, 6)


def test_spans_over_lines_and_nesting():
    tree = p(":a\n  /next::[:b]")
    axis_step = tree.steps[1]
    assert (axis_step.span.start_line, axis_step.span.start_column) == (2, 4)
    assert (axis_step.test.span.start_line, axis_step.test.span.start_column) == (2, 11)


def test_spans_do_not_affect_equality():
    assert p(":p/:q") == p("  :p /\n :q ")
    assert hash(p(":p/:q")) == hash(p("  :p /\n :q "))


# --- errors ------------------------------------------------------------------------------------

def error_of(text: str, **kwargs) -> PathSyntaxError:
    with pytest.raises(PathSyntaxError) as info:
        parse(text, kwargs.pop("prefixes", PREFIXES), **kwargs)
    return info.value


def test_error_is_a_value_error():
    assert issubclass(PathSyntaxError, ValueError)


def test_unexpected_token():
    error = error_of(":p||:q")
    assert (error.line, error.column) == (1, 4)
    assert "a prefixed name" in error.expected and "an IRI <...>" in error.expected
    assert "'('" in error.expected and "'^'" in error.expected
    assert str(error).startswith("line 1, column 4: unexpected '|'; expected one of")
    assert str(error).endswith("\n  :p||:q\n     ^")


def test_error_on_second_line_shows_that_line():
    error = error_of(":p/\n  :q/ |:r")
    assert (error.line, error.column) == (2, 7)
    assert str(error).endswith("\n    :q/ |:r\n        ^")


def test_unexpected_end():
    error = error_of(":p/")
    assert (error.line, error.column) == (1, 4)
    assert "unexpected end of the path" in str(error)
    assert "a prefixed name" in error.expected


def test_expected_is_exact_after_a_complete_step():
    error = error_of(":p :q")
    assert (error.line, error.column) == (1, 4)
    nested = "'[' right after the path element (a nested test, no space between)"
    assert set(error.expected) == {"'/'", "'|'", nested, "a modifier (?, * or +)",
                                   "the end of the path"}
    error = error_of("(:p :q)")
    assert set(error.expected) == {"'/'", "'|'", nested, "a modifier (?, * or +)", "')'"}


def test_expected_inside_a_nested_test():
    error = error_of("[:p :q :r]")
    assert error.expected == ("']'",)
    error = error_of("next::")
    assert "a string" in error.expected and "'['" in error.expected


def test_unclosed_parenthesis():
    error = error_of("(:p/:q")
    assert (error.line, error.column) == (1, 7)
    assert "')'" in error.expected


def test_unexpected_character():
    error = error_of(":p/$q")
    assert (error.line, error.column) == (1, 4)
    assert "unexpected character '$'" in str(error)
    assert "a prefixed name" in error.expected


def test_modifier_needs_parentheses_to_repeat():
    error = error_of(":p**")
    assert (error.line, error.column) == (1, 4)


def test_empty_negated_set_is_rejected():
    error = error_of("!()")
    assert (error.line, error.column) == (1, 3)
    assert "a prefixed name" in error.expected


def test_unknown_prefix_has_a_position():
    error = error_of(":p/foo:q", prefixes={"": EX, "ex": "http://ex/"})
    assert (error.line, error.column) == (1, 4)
    assert "unknown prefix 'foo:'" in str(error)
    assert error.expected == ("':'", "'ex:'")
    assert str(error).endswith("\n  :p/foo:q\n     ^")


def test_no_prefixes_declared():
    error = error_of(":p", prefixes=None)
    assert (error.line, error.column) == (1, 1)
    assert "unknown prefix ':'" in str(error)


def test_relative_iri_needs_a_base():
    error = error_of(":p/<q>")
    assert (error.line, error.column) == (1, 4)
    assert "relative IRI <q>" in str(error)


def test_self_has_no_inverse():
    error = error_of(":p/self^-1")
    assert (error.line, error.column) == (1, 4)
    assert "self is its own inverse" in str(error)


def test_literal_is_not_a_path():
    error = error_of('"x"')
    assert (error.line, error.column) == (1, 1)


def test_empty_input():
    error = error_of("")
    assert (error.line, error.column) == (1, 1)
    assert "unexpected end" in str(error)


def test_parse_wants_a_string():
    with pytest.raises(TypeError):
        parse(b":p")  # type: ignore[arg-type]


# --- round trip with generated trees -----------------------------------------------------------

local_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_\-]{0,4}", fullmatch=True) | st.sampled_from(
    ["a", "self", "next", "true", "1x", r"p\.q", "x%20y", "b:c", "a.b"])
prefixes = st.sampled_from(sorted(PREFIXES))


@st.composite
def prefixed_names(draw):
    prefix, local = draw(prefixes), draw(local_names)
    return PrefixedName(prefix, local, PREFIXES[prefix] + local.replace("\\", ""))


iri_refs = local_names.filter(lambda local: "\\" not in local).map(
    lambda local: IriRef(f"http://x.org/{local}", f"http://x.org/{local}"))
iris = prefixed_names() | iri_refs
iris_or_a = iris | st.just(TypeKeyword())
NUMBER = (r"[+-]?([0-9]{1,3}|[0-9]{0,2}\.[0-9]{1,2}"
          r"|[0-9]{1,2}(\.[0-9]{0,2})?[eE][+-]?[0-9]{1,2})")
strings = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
terms = st.one_of(
    iris_or_a,
    st.builds(StringLiteral, strings),
    st.builds(StringLiteral, strings,
              language=st.from_regex(r"[a-zA-Z]{1,3}(-[a-zA-Z0-9]{1,3})?", fullmatch=True)),
    st.builds(StringLiteral, strings, datatype=iris),
    st.from_regex(NUMBER, fullmatch=True).map(NumericLiteral),
    st.booleans().map(BooleanLiteral),
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_]{0,3}", fullmatch=True).map(BlankNode),
)
members = st.builds(NegatedMember, iris_or_a, st.booleans())
axis_names = st.sampled_from(["self", "next", "edge", "node"])


@st.composite
def axis_steps(draw, sub=None):
    name = draw(axis_names)
    inverse = name != "self" and draw(st.booleans())
    kind = draw(st.sampled_from(["bare", "term", "test"] if sub is not None else ["bare", "term"]))
    if kind == "term":
        return AxisStep(name, inverse, term=draw(terms))
    if kind == "test":
        return AxisStep(name, inverse, test=draw(sub))
    return AxisStep(name, inverse)


leaves = st.one_of(iris_or_a, st.just(EmptyPath()),
                   st.lists(members, min_size=1, max_size=3).map(
                       lambda ms: NegatedPropertySet(tuple(ms))),
                   axis_steps())


def extend(sub):
    tests = st.builds(NestedTest, sub, st.none() | terms)
    return st.one_of(
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: Alternative(tuple(xs))),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: Sequence(tuple(xs))),
        sub.map(Inverse),
        st.builds(Modified, sub, st.sampled_from(["?", "*", "+"])),
        st.builds(Filtered, sub, tests),
        tests.map(TestStep),
        axis_steps(sub),
    )


syntax_trees = st.recursive(leaves, extend, max_leaves=10)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(syntax_trees)
def test_round_trip(tree):
    text = str(tree)
    again = parse(text, PREFIXES)
    assert again == tree, text
    assert str(again) == text


def test_syntax_errors_are_expected_failures():
    """A syntax error is a SidecarError (the CLI prints it as one line) and still a ValueError."""
    from rdfcore.errors import SidecarError

    with pytest.raises(PathSyntaxError) as caught:
        parse(":p/", {"": "http://ex/"})
    assert isinstance(caught.value, SidecarError) and isinstance(caught.value, ValueError)


def test_extension_point_builds_imported_path_rules():
    """PathTransformer.imported_as gives the path rules the names lark gives imported rules."""
    from paths.parser import PATH_RULES, PathTransformer

    imported = PathTransformer.imported_as("grammar")
    assert issubclass(imported, PathTransformer)
    for name in PATH_RULES:
        assert callable(getattr(imported, "grammar__" + name))
