"""cep/syntax/grammar.lark + cep.syntax.parser + cep.syntax.tree: the paper's query, windows, expressions, round trip,
located errors. Spark-free."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cep import CepSyntaxError, parse
from cep.syntax.tree import (AllWindow, Binary, Call, ConstructTemplate, DurationLiteral, EventElement,
                        EventSequence, FilterPattern, FromGraph, FromWindow, Group, IriRef,
                        NowWindow, NumericLiteral, OptionalPattern, PrefixedName,
                        RangeWindow, Select, StringLiteral, Triple, TriplesBlock, TriplesWindow,
                        TspElement, TspSequence, Unary, UnionPattern, Variable, WindowBlock)
from paths import syntax as PS
from tests.hypothesis_profiles import examples
from tests.running_example import EXAMPLE_6

EX = "http://example.org/vienna#"
PRE = "PREFIX : <http://example.org/vienna#>\nPREFIX ex: <http://example.org/>\n"


def pn(local: str, prefix: str = "") -> PrefixedName:
    ns = {"": EX, "ex": "http://example.org/",
          "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#"}[prefix]
    return PrefixedName(prefix, local, ns + local)


def v(name: str) -> Variable:
    return Variable(name)


def where(text: str) -> Group:
    return parse(PRE + "SELECT * WHERE { " + text + " }").where


def window_of(text: str):
    query = parse(PRE + f"SELECT * FROM NAMED WINDOW :W ON ex:s {text} WHERE {{ }}")
    return query.datasets[0].window


# --- the paper's query -------------------------------------------------------------------------

def test_example_6_parses_to_the_expected_tree():
    query = parse(EXAMPLE_6)
    assert query.form == Select(False, (v("s"),))
    assert query.datasets == (
        FromGraph(pn("transportationMap", "ex")),
        FromWindow(pn("W"), pn("publicTransport", "ex"),
                   RangeWindow(DurationLiteral(10, "m"))))
    block, triples = query.where.elements
    delay = TriplesBlock((Triple(v("v"), pn("delayAt"), v("s")),))
    arrive = TriplesBlock((Triple(v("v"), pn("arriveAt"), v("s")),))
    assert block == WindowBlock(pn("W"), None, None, (TspSequence((
        TspElement(False, delay), TspElement(False, delay), TspElement(True, arrive))),))
    path = PS.Modified(PS.Sequence((PS.Inverse(pn("beg")),
                                    PS.TestStep(PS.NestedTest(pn("means"), pn("subway"))),
                                    pn("end"))), "+")
    assert triples == TriplesBlock((Triple(v("v"), pn("type", "rdf"), pn("subway")),
                                    Triple(v("s"), path, pn("c"))))


def test_spans_point_at_the_source():
    query = parse(EXAMPLE_6)
    seq = query.where.elements[0].body[0]
    negated = seq.elements[2]
    at = EXAMPLE_6.index("!{?v :arriveAt ?s}")
    line, column = EXAMPLE_6.count("\n", 0, at) + 1, at - EXAMPLE_6.rfind("\n", 0, at)
    assert (negated.span.start_line, negated.span.start_column) == (line, column)
    assert EXAMPLE_6[negated.span.start_pos:negated.span.end_pos] == "!{?v :arriveAt ?s}"
    triple = query.where.elements[1].triples[1]
    assert EXAMPLE_6[triple.span.start_pos:triple.span.end_pos] == \
        "?s (^:beg/[:means :subway]/:end)+ :c"


# --- windows -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("[RANGE 10m]", RangeWindow(DurationLiteral(10, "m"))),
    ("[RANGE 500ms]", RangeWindow(DurationLiteral(500, "ms"))),
    ("[RANGE 30s]", RangeWindow(DurationLiteral(30, "s"))),
    ("[RANGE 2h]", RangeWindow(DurationLiteral(2, "h"))),
    ("[RANGE 1d]", RangeWindow(DurationLiteral(1, "d"))),
    ("[RANGE 1.5s]", RangeWindow(DurationLiteral(1.5, "s"))),
    ("[RANGE 10 m]", RangeWindow(DurationLiteral(10, "m"))),        # C-SPARQL: Number TimeUnit
    ("[RANGE 10]", RangeWindow(DurationLiteral(10, None))),         # stream time units
    ("[range 10m step 1m]", RangeWindow(DurationLiteral(10, "m"), DurationLiteral(1, "m"))),
    ("[RANGE 30m STEP 5m]", RangeWindow(DurationLiteral(30, "m"), DurationLiteral(5, "m"))),
    ("[RANGE 10 STEP 2]", RangeWindow(DurationLiteral(10), DurationLiteral(2))),
    ("[RANGE 10m SLIDE 1m]", RangeWindow(DurationLiteral(10, "m"), DurationLiteral(1, "m"))),
    ("[RANGE 5m TUMBLING]", RangeWindow(DurationLiteral(5, "m"), None, True)),
    ("[TRIPLES 5]", TriplesWindow(5)),
    ("[RANGE TRIPLES 5]", TriplesWindow(5)),
    ("[NOW]", NowWindow()),
    ("[ALL]", AllWindow()),
])
def test_each_window_form(text, expected):
    assert window_of(text) == expected


def test_window_declared_in_place():
    block = where("WINDOW :W ON ex:s [RANGE 5s] { ?x :p ?y }").elements[0]
    assert block.stream == pn("s", "ex")
    assert block.window == RangeWindow(DurationLiteral(5, "s"))
    assert block.body == (TriplesBlock((Triple(v("x"), pn("p"), v("y")),)),)


# --- patterns ----------------------------------------------------------------------------------

def test_event_sequence_across_windows():
    group = where("SEQ(:W1, !:W2, :W3)")
    assert group.elements == (EventSequence((EventElement(False, pn("W1")),
                                             EventElement(True, pn("W2")),
                                             EventElement(False, pn("W3")))),)


def test_property_lists_are_written_out():
    group = where("?s :p ?o , 1 ; a :C ; .")
    assert group.elements == (TriplesBlock((
        Triple(v("s"), pn("p"), v("o")), Triple(v("s"), pn("p"), NumericLiteral("1")),
        Triple(v("s"), PS.TypeKeyword(), pn("C")))),)


def test_optional_union_filter_and_nested_group():
    group = where("?s :p ?o OPTIONAL { ?o :q ?z FILTER(?z > 1) } { ?s :a ?b } UNION { ?s :c ?b } "
                  "{ ?s :d ?e } FILTER regex(?b, 'x')")
    triples, optional, union, nested, flt = group.elements
    assert isinstance(optional, OptionalPattern)
    assert optional.group.elements[1] == FilterPattern(Binary(">", v("z"), NumericLiteral("1")))
    assert isinstance(union, UnionPattern) and len(union.groups) == 2
    assert isinstance(nested, UnionPattern) and len(nested.groups) == 1
    assert flt == FilterPattern(Call("REGEX", (v("b"), StringLiteral("x"))))


def test_variable_predicates_and_literal_objects():
    group = where('?s ?p "x"@en . ?s :q "1"^^<http://www.w3.org/2001/XMLSchema#int> . '
                  '$s :r true')
    triples = group.elements[0].triples
    assert triples[0] == Triple(v("s"), v("p"), StringLiteral("x", "en"))
    assert triples[2].s == v("s")                   # $s and ?s are the same variable


def test_select_forms_and_construct():
    assert parse("SELECT DISTINCT ?a ?b WHERE { }").form == Select(True, (v("a"), v("b")))
    assert parse("select * { }").form == Select(False, None)             # WHERE is optional
    query = parse(PRE + "CONSTRUCT { ?s :late true } WHERE { ?s :p ?o }")
    assert query.form == ConstructTemplate((Triple(v("s"), pn("late"), PS.BooleanLiteral(True)),))


# --- expressions -------------------------------------------------------------------------------

def expr(text: str):
    return where(f"FILTER({text})").elements[0].expr


@pytest.mark.parametrize("text, expected", [
    ("?a || ?b && ?c", Binary("||", v("a"), Binary("&&", v("b"), v("c")))),
    ("?a && ?b || ?c", Binary("||", Binary("&&", v("a"), v("b")), v("c"))),
    ("1 + 2 * 3", Binary("+", NumericLiteral("1"), Binary("*", NumericLiteral("2"),
                                                          NumericLiteral("3")))),
    ("?x+1", Binary("+", v("x"), NumericLiteral("1"))),
    ("?x -1 >= 2", Binary(">=", Binary("-", v("x"), NumericLiteral("1")), NumericLiteral("2"))),
    ("?x<3", Binary("<", v("x"), NumericLiteral("3"))),
    ("?x != :a", Binary("!=", v("x"), pn("a"))),
    ("-?x = -1", Binary("=", Unary("-", v("x")), NumericLiteral("-1"))),
    ("!BOUND(?x)", Unary("!", Call("BOUND", (v("x"),)))),
    ("+?x = 1", Binary("=", v("x"), NumericLiteral("1"))),
    ('lang(?l) = "en"', Binary("=", Call("LANG", (v("l"),)), StringLiteral("en"))),
    ("DATATYPE(?x) = <http://t>", Binary("=", Call("DATATYPE", (v("x"),)),
                                         IriRef("http://t", "http://t"))),
    ('REGEX(STR(?s), "^a", "i")', Call("REGEX", (Call("STR", (v("s"),)), StringLiteral("^a"),
                                                 StringLiteral("i")))),
    ("(?a || ?b) && ?c", Binary("&&", Binary("||", v("a"), v("b")), v("c"))),
])
def test_expressions(text, expected):
    assert expr(text) == expected


# --- round trip --------------------------------------------------------------------------------

ROUND_TRIP = [
    EXAMPLE_6,
    PRE + "SELECT DISTINCT ?x ?y FROM NAMED WINDOW :A ON ex:s1 [RANGE 5m TUMBLING] "
          "FROM NAMED WINDOW :B ON ex:s2 [TRIPLES 3] WHERE { WINDOW :A { ?x :p ?y } "
          "WINDOW :B { SEQ(!{ ?x :q ?z }, { ?x :r ?y . ?y :s 1 }) FILTER(?y != 2) } "
          "SEQ(:A, !:B, :A) }",
    PRE + "SELECT * WHERE { ?s :p ?o ; :q 1.5e3 . OPTIONAL { ?o a :C } "
          "{ ?s :x ?y } UNION { ?s (:a|^:b)* ?y } FILTER(!BOUND(?y) || ?o >= -2 * (1 + ?y)) }",
    PRE + "CONSTRUCT { ?s :delayed ?o } WHERE { WINDOW :W ON ex:s [NOW] { ?s :p ?o } }",
    PRE + "SELECT ?s WHERE { WINDOW :W ON ex:s [ALL] { ?s :p 'a\"b' } "
          "?s next::[:means]/edge^-1/[:means :subway] ?t }",
    "BASE <http://b.org/> SELECT ?s WHERE { ?s <p> <o> }",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_round_trip(text):
    tree = parse(text)
    assert parse(str(tree)) == tree


_LEAVES = st.one_of(
    st.sampled_from("abxyz").map(Variable),
    st.sampled_from(["0", "1", "-1", "+2", "1.5", "-.5e3"]).map(NumericLiteral),
    st.sampled_from(["", "x", 'q"uote', "l\\ne\n"]).map(StringLiteral),
    st.sampled_from(["p", "q"]).map(pn),
    st.just(IriRef("http://t/", "http://t/")),
    st.booleans().map(PS.BooleanLiteral))
_EXPRESSIONS = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.builds(Binary, st.sampled_from(["||", "&&", "=", "!=", "<", ">", "<=", ">=", "+", "-",
                                       "*", "/"]), inner, inner),
    st.builds(Unary, st.sampled_from(["!", "-"]), inner),
    st.builds(lambda e: Call("STR", (e,)), inner),
    st.builds(lambda e: Call("LANG", (e,)), inner),
    st.builds(lambda e: Call("DATATYPE", (e,)), inner),
    st.builds(lambda name: Call("BOUND", (Variable(name),)), st.sampled_from("ab")),
    st.builds(lambda a, b: Call("REGEX", (a, b)), inner, inner),
    st.builds(lambda a, b, c: Call("REGEX", (a, b, c)), inner, inner, inner)), max_leaves=8)


@given(_EXPRESSIONS)
@settings(max_examples=examples(150), deadline=None)
def test_expression_round_trip(expression):
    query = parse(PRE + f"SELECT * WHERE {{ FILTER({expression}) }}")
    assert query.where.elements[0].expr == expression
    assert parse(str(query)) == query


def test_keywords_are_case_insensitive():
    lower = parse(PRE + "select ?s from named window :W on ex:s [range 1s] where "
                        "{ window :W { seq({?s :p ?o}, !{?s :q ?o}) } filter(bound(?s)) }")
    upper = parse(PRE + "SELECT ?s FROM NAMED WINDOW :W ON ex:s [RANGE 1s] WHERE "
                        "{ WINDOW :W { SEQ({?s :p ?o}, !{?s :q ?o}) } FILTER(BOUND(?s)) }")
    assert lower == upper


def test_given_prefixes_and_keywords_as_prefix_names():
    query = parse("SELECT ?s WHERE { ?s seq:p window:o }",
                  prefixes={"seq": "http://seq/", "window": "http://w/"})
    triple = query.where.elements[0].triples[0]
    assert triple.p.value == "http://seq/p" and triple.o.value == "http://w/o"


# --- errors ------------------------------------------------------------------------------------

def error_of(text: str, **kw) -> CepSyntaxError:
    with pytest.raises(CepSyntaxError) as info:
        parse(text, **kw)
    return info.value


def test_unknown_prefix():
    error = error_of("SELECT ?s WHERE {\n  ?s :p ?o }")
    assert (error.line, error.column) == (2, 6)
    assert "unknown prefix" in error.reason
    error = error_of("PREFIX a: <http://a/>\nSELECT ?s WHERE { ?s b:p ?o }")
    assert (error.line, error.column) == (2, 22)
    assert "'a:'" in error.expected


def test_relative_iri_without_base():
    error = error_of("SELECT ?s WHERE { ?s <p> ?o }")
    assert (error.line, error.column) == (1, 22)
    assert "relative IRI" in error.reason


def test_prefix_declaration_needs_a_bare_prefix():
    error = error_of("PREFIX ex:x <http://a/> SELECT * {}")
    assert (error.line, error.column) == (1, 8)


def test_missing_brace_names_what_was_expected():
    error = error_of("SELECT ?s WHERE { ?s <http://p> ?o ")
    assert error.reason == "unexpected end of the query"
    assert (error.line, error.column) == (1, 36)
    assert "'}'" in error.expected


def test_missing_object():
    error = error_of("SELECT ?s WHERE {\n ?s <http://p> }")
    assert (error.line, error.column) == (2, 16)
    assert "a variable ?name" in error.expected and "an IRI <...>" in error.expected


def test_bad_duration_unit():
    error = error_of("SELECT * FROM NAMED WINDOW <http://w> ON <http://s> [RANGE 10 minutes] {}")
    assert (error.line, error.column) == (1, 63)
    assert "'STEP'" in error.expected and "']'" in error.expected


def test_window_without_range():
    error = error_of("SELECT * FROM NAMED WINDOW <http://w> ON <http://s> [10m] {}")
    assert (error.line, error.column) == (1, 54)
    assert "'RANGE'" in error.expected and "'NOW'" in error.expected


def test_empty_triples_window_and_zero_step():
    error = error_of("SELECT * FROM NAMED WINDOW <http://w> ON <http://s> [TRIPLES 0] {}")
    assert (error.line, error.column) == (1, 62)
    error = error_of("SELECT * FROM NAMED WINDOW <http://w> ON <http://s> [RANGE 5 STEP 0] {}")
    assert (error.line, error.column) == (1, 67)


def test_seq_element_must_be_braced():
    error = error_of("SELECT * WHERE { WINDOW <http://w> { SEQ(?s <http://p> ?o) } }")
    assert (error.line, error.column) == (1, 42)
    assert "'{'" in error.expected and "'!'" in error.expected


def test_two_patterns_in_one_window_block():
    error = error_of("SELECT * WHERE { WINDOW <http://w> { ?s <http://p> ?o "
                     "SEQ({?s <http://p> ?o}) } }")
    assert (error.line, error.column) == (1, 55)


def test_unexpected_character():
    error = error_of("SELECT ?s WHERE { ?s <http://p> ?o } @")
    assert (error.line, error.column) == (1, 38)
    assert "unexpected character" in error.reason


def test_error_message_shows_a_caret():
    error = error_of("SELECT ?s WHERE {\n  ?s :p ?o }")
    assert str(error).splitlines()[-1] == "       ^"


def test_not_a_string():
    with pytest.raises(TypeError):
        parse(b"SELECT * {}")


@pytest.mark.parametrize("text", [
    "?s :p* :o",                     # '*' after a path's iri is a modifier ...
    "?s :p+ ?o . ?s next::1* ?o",
    "?s :p? ?o",
    'FILTER("1"^^:t*2 = ?x)',        # ... and after an expression's literal an operator
    "FILTER(?x<3&&?x>2)",            # '<3&&?x>' is not an IRI here
    "FILTER(?x+1 = ?y-1)",           # '+1' after an operand is '+' 1
])
def test_lexer_contexts(text):
    tree = where(text)
    assert parse(str(parse(PRE + f"SELECT * WHERE {{ {text} }}"))).where == tree


def test_operators_and_modifiers_are_told_apart():
    (block,) = where("?s :p* :o").elements
    assert block.triples[0].p == PS.Modified(pn("p"), "*")
    assert expr('"1"^^:t*2 = ?x') == Binary("=", Binary("*", StringLiteral("1", None, pn("t")),
                                                       NumericLiteral("2")), v("x"))
    assert expr("?x<3&&?x>2") == Binary("&&", Binary("<", v("x"), NumericLiteral("3")),
                                        Binary(">", v("x"), NumericLiteral("2")))


def test_cep_parser_uses_only_public_names_of_paths_parser():
    """cep.syntax.parser extends paths.parser through its public extension point, not its privates."""
    import ast
    import inspect

    import cep.syntax.parser

    tree = ast.parse(inspect.getsource(cep.syntax.parser))
    imported = [alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module == "paths.parser"
                for alias in node.names]
    assert imported and not [name for name in imported if name.startswith("_")]


def test_query_errors_are_expected_failures():
    from cep import CepSemanticError
    from rdfcore.errors import SidecarError

    assert issubclass(CepSyntaxError, SidecarError) and issubclass(CepSyntaxError, ValueError)
    assert issubclass(CepSemanticError, SidecarError) and issubclass(CepSemanticError, ValueError)


@pytest.mark.parametrize("text, line, column", [
    ("PREFIX : <http://[example.org/vienna#>\nSELECT ?x WHERE { ?x :p ?y }", 1, 1),
    ("PREFIX : <http://example.org/>\nSELECT ?x WHERE { ?x <http://[bad/p> ?y }", 2, 22),
])
def test_a_conversion_failure_inside_a_rule_is_a_located_syntax_error(text, line, column):
    """urllib raises on a malformed IRI while a rule is converted (issue 37): the caller gets the
    project's error at the rule's line and column, not lark's VisitError."""
    with pytest.raises(CepSyntaxError, match="Invalid IPv6 URL") as info:
        parse(text)
    assert (info.value.line, info.value.column) == (line, column)


def test_a_conversion_failure_in_a_path_is_a_located_syntax_error():
    from paths import PathSyntaxError
    from paths import parse as parse_path

    with pytest.raises(PathSyntaxError, match="Invalid IPv6 URL") as info:
        parse_path("<http://e/q>/<http://[x/p>")
    assert (info.value.line, info.value.column) == (1, 14)
