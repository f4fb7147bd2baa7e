"""cep.lowering (and cep.algebra.patterns): sequences per equations (3)-(8) and (10)-(15), the model
Q = (V, P, D, EC) of Example 7, the documented decisions and every semantic error. Spark-free."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cep
from cep import CepSemanticError, CepSyntaxError
from cep import algebra as A
from paths import algebra as PA
from tests.hypothesis_profiles import examples
from tests.running_example import EXAMPLE_6

EX = "http://example.org/vienna#"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
PRE = "PREFIX : <http://example.org/vienna#>\nPREFIX ex: <http://example.org/>\n"


def iri(local: str) -> str:
    return f"<{EX}{local}>"


V, S_ = A.Var("v"), A.Var("s")
STREAM = "<http://example.org/s>"


def P(i: int) -> A.BGP:
    """The i-th element pattern {?v :p<i> ?s}."""
    return A.BGP((A.TriplePattern(V, iri(f"p{i}"), S_),))


def compile_(text: str) -> A.Query:
    return cep.compile(PRE + text)


# --- equations (10)-(15): a triple sequence pattern inside one window ---------------------------
# Expected trees written out by hand from the equations (right-associated SEQ; SEQ_WO for a negated
# element inside, NO_HEAD at the head, NO_TAIL at the tail), independently of cep.algebra.patterns.sequence.

Seq, SeqWO, NoHead, NoTail = A.Sequence, A.SeqWithout, A.NoHead, A.NoTail
P1, P2, P3, P4 = P(1), P(2), P(3), P(4)

EXPECTED = {
    # (length, negated position or None): tree
    (2, None): Seq(P1, P2),                                         # eq. 11 / 4
    (3, None): Seq(P1, Seq(P2, P3)),                                # eq. 10 / 3
    (4, None): Seq(P1, Seq(P2, Seq(P3, P4))),
    (2, 0): NoHead(P1, P2),                                         # eq. 13 / 6
    (2, 1): NoTail(P1, P2),                                         # eq. 14 / 7
    (3, 0): NoHead(P1, Seq(P2, P3)),
    (3, 1): SeqWO(P1, P2, P3),                                      # eq. 12, 15 / 5, 8
    (3, 2): NoTail(Seq(P1, P2), P3),
    (4, 0): NoHead(P1, Seq(P2, Seq(P3, P4))),
    (4, 1): SeqWO(P1, P2, Seq(P3, P4)),
    (4, 2): SeqWO(Seq(P1, P2), P3, P4),
    (4, 3): NoTail(Seq(P1, Seq(P2, P3)), P4),
}


def tsp_text(n: int, negated: int | None) -> str:
    return ", ".join(("!" if i == negated else "") + f"{{?v :p{i + 1} ?s}}" for i in range(n))


@pytest.mark.parametrize("n, negated", sorted(EXPECTED, key=lambda k: (k[0], k[1] is not None,
                                                                        k[1] or 0)))
def test_triple_sequence_pattern_follows_equations_10_to_15(n, negated):
    query = compile_(f"SELECT ?v FROM NAMED WINDOW :W ON <http://example.org/s> [RANGE 10m] "
                     f"WHERE {{ WINDOW :W {{ SEQ({tsp_text(n, negated)}) }} }}")
    (clause,) = A.event_clauses(query.pattern)
    assert clause == A.StreamPattern(iri("W"), STREAM, A.Range(A.Duration(10, "m")),
                                     EXPECTED[(n, negated)])
    assert A.background_patterns(query.pattern) == ()


@pytest.mark.parametrize("n, negated", sorted(EXPECTED, key=lambda k: (k[0], k[1] is not None,
                                                                        k[1] or 0)))
def test_event_clause_follows_equations_3_to_8(n, negated):
    declarations = " ".join(f"FROM NAMED WINDOW :W{i + 1} ON <http://example.org/s> [RANGE 1m]"
                            for i in range(n))
    blocks = " ".join(f"WINDOW :W{i + 1} {{ ?v :p{i + 1} ?s }}" for i in range(n))
    seq = ", ".join(("!" if i == negated else "") + f":W{i + 1}" for i in range(n))
    query = compile_(f"SELECT ?v {declarations} WHERE {{ {blocks} SEQ({seq}) }}")
    windows = {f"<{EX}W{i}>": A.StreamPattern(iri(f"W{i}"), STREAM, A.Range(A.Duration(1, "m")),
                                              P(i)) for i in range(1, 5)}

    def as_windows(node):   # the expected tree with each P(i) replaced by window W<i>
        if isinstance(node, A.BGP):
            return windows[f"<{EX}W{node.patterns[0].p[len(EX) + 2:-1]}>"]
        return type(node)(*(as_windows(child) for child in A.children(node)))

    # the windows of the SEQ are not joined a second time on their own
    assert A.event_clauses(query.pattern) == (as_windows(EXPECTED[(n, negated)]),)


def test_sequence_constructor_matches_the_table():
    parts = {i: P(i + 1) for i in range(4)}
    for (n, negated), expected in EXPECTED.items():
        assert A.sequence(*(parts[i] for i in range(n)), negated=negated) == expected


def test_one_element_sequence_is_that_element():
    query = compile_("SELECT ?v FROM NAMED WINDOW :W ON ex:s [NOW] WHERE "
                     "{ WINDOW :W { SEQ({?v :p1 ?s}) } }")
    assert A.event_clauses(query.pattern)[0].pattern == P1
    query = compile_("SELECT ?v FROM NAMED WINDOW :W ON ex:s [NOW] WHERE "
                     "{ WINDOW :W { ?v :p1 ?s } SEQ(:W) }")
    assert A.event_clauses(query.pattern)[0].pattern == P1


# --- Example 7: Q = (V, P, D, EC) ----------------------------------------------------------------

def test_example_7_model():
    query = cep.compile(EXAMPLE_6)
    V_, P_, D_, EC = query.model()
    assert V_ == (S_,)
    path = PA.plus(PA.seq(PA.axis(PA.AxisKind.NEXT, True, iri("beg")),
                          PA.test(PA.seq(PA.axis(PA.AxisKind.NEXT, False, iri("means")),
                                         PA.self_term(iri("subway")))),
                          PA.axis(PA.AxisKind.NEXT, False, iri("end"))))
    graph = "<http://example.org/transportationMap>"
    assert D_ == (graph,)
    assert P_ == (A.Background(graph, A.BGP((A.TriplePattern(V, RDF_TYPE, iri("subway")),
                                             A.PathPattern(S_, path, iri("c"))))),)
    p1 = A.BGP((A.TriplePattern(V, iri("delayAt"), S_),))
    p2 = A.BGP((A.TriplePattern(V, iri("arriveAt"), S_),))
    # EC = {(ex:publicTransport, [RANGE 10m], SEQ(P1, P1, !P2))}; SEQ(P1, P1, !P2) by eq. (14)
    assert EC == (A.StreamPattern(iri("W"), "<http://example.org/publicTransport>",
                                  A.Range(A.Duration(10, "m")), A.NoTail(A.Sequence(p1, p1), p2)),)
    # eq. (1): π_{s} JOIN([[EC]], [[P]]_D)
    assert query.form == A.Project((S_,), False, A.Join(EC[0], P_[0]))
    assert query.prefixes[""] == EX


# --- decisions ---------------------------------------------------------------------------------

def test_query_without_window_is_background_only_over_the_default_graph():
    query = compile_("SELECT ?s WHERE { ?s :p ?o }")
    assert query.form == A.Project((S_,), False, A.Background(None, A.BGP((
        A.TriplePattern(S_, iri("p"), A.Var("o")),))))


def test_windows_only_query_has_no_background():
    query = compile_("SELECT ?v WHERE { WINDOW :W ON ex:s [RANGE 5 STEP 1] { ?v :p1 ?s } }")
    assert query.pattern == A.StreamPattern(iri("W"), STREAM,
                                            A.Range(A.Duration(5), A.Duration(1)), P1)


def test_event_clauses_are_joined_in_order_then_the_background():
    query = compile_("SELECT ?v FROM <http://g> WHERE { ?v a :C . WINDOW :A ON ex:s [NOW] "
                     "{ ?v :p1 ?s } WINDOW :B ON ex:s [ALL] { ?v :p2 ?s } "
                     "WINDOW :C ON ex:s [TRIPLES 2] { ?v :p3 ?s } SEQ(:B, :C) }")
    a = A.StreamPattern(iri("A"), STREAM, A.Now(), P1)
    b = A.StreamPattern(iri("B"), STREAM, A.All(), P2)
    c = A.StreamPattern(iri("C"), STREAM, A.Triples(2), P3)
    background = A.Background("<http://g>", A.BGP((A.TriplePattern(V, RDF_TYPE, iri("C")),)))
    assert query.pattern == A.Join(a, A.Join(A.Sequence(b, c), background))


def test_filters_apply_where_they_are_written():
    query = compile_("SELECT ?v WHERE { WINDOW :W ON ex:s [NOW] { ?v :p1 ?s FILTER(?s != :x) } "
                     "?v :q ?o FILTER(?o > 1) FILTER(BOUND(?v)) }")
    window = A.StreamPattern(iri("W"), STREAM, A.Now(),
                             A.Filter(A.Compare("!=", S_, A.Const(iri("x"))), P1))
    background = A.Background(None, A.BGP((A.TriplePattern(V, iri("q"), A.Var("o")),)))
    one = A.Const('"1"^^<http://www.w3.org/2001/XMLSchema#integer>')
    condition = A.And(A.Compare(">", A.Var("o"), one), A.Bound(V))
    assert query.pattern == A.Filter(condition, A.Join(window, background))


def test_bind_after_an_event_clause_extends_the_join():
    """SPARQL's BIND extends the group so far (§18.2.2.6): written after a WINDOW block, it reads
    the window's variables and is evaluated per answer, under the top-level FILTERs; written
    before every event clause, it is part of the background pattern."""
    window = A.StreamPattern(iri("W"), STREAM, A.Now(), P1)
    q_bgp = A.BGP((A.TriplePattern(V, iri("q"), A.Var("o")),))
    after = compile_("SELECT ?v ?z ?r WHERE { ?v :q ?o WINDOW :W ON ex:s [NOW] { ?v :p1 ?s } "
                     "BIND (STR(?s) AS ?z) BIND (RAND() AS ?r) FILTER (?r < 1) }")
    joined = A.Join(window, A.Background(None, q_bgp))
    extended = A.Extend(A.Extend(joined, A.Var("z"), A.Str(S_)), A.Var("r"), A.Builtin("RAND", ()))
    one = A.Const('"1"^^<http://www.w3.org/2001/XMLSchema#integer>')
    assert after.pattern == A.Filter(A.Compare("<", A.Var("r"), one), extended)
    before = compile_("SELECT ?v ?r WHERE { BIND (RAND() AS ?r) WINDOW :W ON ex:s [NOW] { ?v :p1 ?s } }")
    assert before.pattern == A.Join(window, A.Background(None, A.Extend(A.BGP(()), A.Var("r"),
                                                                         A.Builtin("RAND", ()))))
    with pytest.raises(CepSemanticError, match=r"follows an event clause.*uses \?z") as caught:
        compile_("SELECT ?v ?w WHERE { WINDOW :W ON ex:s [NOW] { ?v :p1 ?s } BIND (STR(?s) AS ?z) ?z :q ?w }")
    assert (caught.value.line, caught.value.column) == (3, 60)


def test_optional_union_and_nested_groups_over_the_background():
    query = compile_("SELECT * WHERE { ?s :p ?o OPTIONAL { ?o :q ?z FILTER(?z = 2) } "
                     "{ ?s :a ?b } UNION { ?s :c ?b } ?s :d ?e }")
    o, z, b, e = A.Var("o"), A.Var("z"), A.Var("b"), A.Var("e")
    two = A.Const('"2"^^<http://www.w3.org/2001/XMLSchema#integer>')
    left = A.LeftJoin(A.BGP((A.TriplePattern(S_, iri("p"), o),)),
                      A.BGP((A.TriplePattern(o, iri("q"), z),)), A.Compare("=", z, two))
    union = A.Union(A.BGP((A.TriplePattern(S_, iri("a"), b),)),
                    A.BGP((A.TriplePattern(S_, iri("c"), b),)))
    expected = A.Join(A.Join(left, union), A.BGP((A.TriplePattern(S_, iri("d"), e),)))
    assert query.pattern == A.Background(None, expected)
    assert query.form.variables == (S_, o, z, b, e)          # SELECT *: order written


def test_select_star_skips_variables_of_negated_elements():
    query = compile_("SELECT * WHERE { WINDOW :W ON ex:s [NOW] "
                     "{ SEQ({?v :p1 ?s}, !{?v :p2 ?neg}) } }")
    assert query.form.variables == (V, S_)


def test_expressions_lower_to_the_algebra():
    query = compile_('SELECT ?s WHERE { ?s :p ?o FILTER(!(?o < -1.5) && REGEX(STR(?s), "a", "i") '
                     '|| LANG(?o) = "en" || DATATYPE(?o) = :t || -?o * 2 - 1 >= 0) }')
    cond = query.pattern.condition
    o = A.Var("o")
    dec = A.Const('"-1.5"^^<http://www.w3.org/2001/XMLSchema#decimal>')
    integer = lambda n: A.Const(f'"{n}"^^<http://www.w3.org/2001/XMLSchema#integer>')  # noqa
    expected = A.Or(A.Or(A.Or(
        A.And(A.Not(A.Compare("<", o, dec)),
              A.Regex(A.Str(S_), A.Const('"a"'), A.Const('"i"'))),
        A.Compare("=", A.Lang(o), A.Const('"en"'))),
        A.Compare("=", A.Datatype(o), A.Const(iri("t")))),
        A.Compare(">=", A.Arith("-", A.Arith("*", A.Neg(o), integer(2)), integer(1)),
                  integer(0)))
    assert cond == expected


def test_construct_template():
    query = compile_("CONSTRUCT { ?v :late true } WHERE { WINDOW :W ON ex:s [RANGE 1h] "
                     "{ ?v :p1 ?s } }")
    true = '"true"^^<http://www.w3.org/2001/XMLSchema#boolean>'
    assert query.form == A.Construct((A.TriplePattern(V, iri("late"), true),),
                                     A.StreamPattern(iri("W"), STREAM,
                                                     A.Range(A.Duration(1, "h")), P1))


def test_window_forms_lower():
    for text, window in [("[RANGE 10m TUMBLING]", A.Range(A.Duration(10, "m"), None, True)),
                         ("[RANGE 1.5s STEP 500ms]",
                          A.Range(A.Duration(1.5, "s"), A.Duration(500, "ms"))),
                         ("[TRIPLES 7]", A.Triples(7)), ("[NOW]", A.Now()), ("[ALL]", A.All())]:
        query = compile_(f"SELECT ?v WHERE {{ WINDOW :W ON ex:s {text} {{ ?v :p1 ?s }} }}")
        assert query.pattern.window == window


def test_durations_in_ticks():
    assert A.Duration(10, "m").ticks("ms") == 600_000
    assert A.Duration(10, "m").ticks("s") == 600
    assert A.Duration(1.5, "s").ticks("ms") == 1500
    assert A.Duration(7).ticks("s") == 7
    assert A.Range(A.Duration(5, "m"), None, True).step_ticks("s") == 300
    assert A.Range(A.Duration(5, "m")).step_ticks("s") == 1
    with pytest.raises(ValueError):
        A.Duration(500, "ms").ticks("s")


def test_algebra_rejects_malformed_nodes():
    with pytest.raises(TypeError):
        A.TriplePattern("s", "<p>", "<o>")           # not an N-Triples term
    with pytest.raises(ValueError):
        A.Var("?x")
    with pytest.raises(ValueError):
        A.Range(A.Duration(5), A.Duration(1), True)
    with pytest.raises(ValueError):
        A.sequence(P1, negated=0)
    with pytest.raises(ValueError):
        A.Triples(0)
    assert A.path_pattern(S_, PA.axis(PA.AxisKind.NEXT, False, iri("p")), V) == \
        A.TriplePattern(S_, iri("p"), V)
    assert A.path_pattern(S_, PA.axis(PA.AxisKind.NEXT, True, iri("p")), V) == \
        A.TriplePattern(V, iri("p"), S_)                 # s ^:p o  =  o :p s
    edge = PA.axis(PA.AxisKind.EDGE, False, iri("p"))
    assert A.path_pattern(S_, edge, V) == A.PathPattern(S_, edge, V)


def test_inverse_link_is_a_triple_even_in_a_window():
    query = compile_("SELECT ?v WHERE { WINDOW :W ON ex:s [NOW] { ?s ^:p1 ?v } }")
    assert query.pattern.pattern == P1


def test_stream_path_refusal_names_the_first_path():
    first, second = (A.PathPattern(S_, PA.axis(PA.AxisKind.EDGE, False, iri(p)), V) for p in ("p", "q"))
    assert A.stream_path_refusal(P1) is None
    assert A.stream_path_refusal(A.bgp(*P1.patterns, first, second)) == (
        f"property path {first} inside a WINDOW: paths are evaluated on background graphs only")
    assert A.stream_path_refusal(A.bgp(second), "over a stream").startswith(f"property path {second} over a stream:")


def _flatten(node):
    """(elements, index of the negated one) of a sequence tree, checking right association."""
    if isinstance(node, A.Sequence):
        assert not isinstance(node.left, A.Sequence)           # right-associated (eq. 3, 10)
        right, negated = _flatten(node.right)
        assert negated is None
        return [node.left] + right, None
    if isinstance(node, A.SeqWithout):
        left, n1 = _flatten(node.left)
        right, n2 = _flatten(node.right)
        assert n1 is None and n2 is None and node.negated in PARTS
        return left + [node.negated] + right, len(left)
    if isinstance(node, A.NoHead):
        right, n = _flatten(node.right)
        assert n is None
        return [node.negated] + right, 0
    if isinstance(node, A.NoTail):
        left, n = _flatten(node.left)
        assert n is None
        return left + [node.negated], len(left)
    assert node in PARTS
    return [node], None


PARTS = [P(i) for i in range(1, 9)]


@given(st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.just(n), st.one_of(st.none(), st.integers(0, n - 1)) if n > 1 else st.none())))
@settings(max_examples=examples(80), deadline=None)
def test_any_sequence_rebuilds_its_elements(case):
    n, negated = case
    tree = A.sequence(*PARTS[:n], negated=negated)
    assert _flatten(tree) == (PARTS[:n], negated)
    text = ", ".join(("!" if i == negated else "") + f"{{?v :p{i + 1} ?s}}" for i in range(n))
    query = compile_(f"SELECT ?v WHERE {{ WINDOW :W ON ex:s [NOW] {{ SEQ({text}) }} }}")
    assert query.pattern.pattern == tree


# --- semantic errors, with line and column -----------------------------------------------------

def error_of(text: str) -> CepSemanticError:
    with pytest.raises(CepSemanticError) as info:
        cep.compile(PRE + text)
    return info.value


def at(error: CepSyntaxError) -> tuple[int, int]:
    return error.line - 2, error.column         # lines of the query after PRE's two lines


def test_undeclared_window_block():
    error = error_of("SELECT ?v WHERE {\n WINDOW :W { ?v :p1 ?s } }")
    assert at(error) == (2, 9) and "not declared" in error.reason
    assert any("FROM NAMED WINDOW" in e for e in error.expected)


def test_undeclared_window_in_seq():
    error = error_of("SELECT ?v WHERE { WINDOW :A ON ex:s [NOW] { ?v :p1 ?s }\n SEQ(:A, :B) }")
    assert at(error) == (2, 10) and "not declared" in error.reason


def test_window_in_seq_without_block():
    text = ("SELECT ?v FROM NAMED WINDOW :B ON ex:s [NOW] WHERE "
            "{ WINDOW :A ON ex:s [NOW] { ?v :p1 ?s } SEQ(:A, :B) }")
    error = error_of(text)
    assert at(error) == (1, text.index(":B)") + 1) and "no WINDOW block" in error.reason


def test_window_declared_twice():
    error = error_of("SELECT ?v FROM NAMED WINDOW :W ON ex:s [NOW]\n"
                     "FROM NAMED WINDOW :W ON ex:t [NOW] WHERE { WINDOW :W { ?v :p1 ?s } }")
    assert at(error) == (2, 19) and "declared twice" in error.reason
    error = error_of("SELECT ?v FROM NAMED WINDOW :W ON ex:s [NOW] WHERE {\n"
                     "WINDOW :W ON ex:s [NOW] { ?v :p1 ?s } }")
    assert at(error) == (2, 8) and "declared twice" in error.reason


def test_two_blocks_for_one_window():
    error = error_of("SELECT ?v FROM NAMED WINDOW :W ON ex:s [NOW] WHERE {\n"
                     "WINDOW :W { ?v :p1 ?s }\nWINDOW :W { ?v :p2 ?s } }")
    assert at(error) == (3, 1) and "two WINDOW blocks" in error.reason


def test_two_negated_elements_in_a_window():
    error = error_of("SELECT ?v WHERE { WINDOW :W ON ex:s [NOW] {\n"
                     "SEQ(!{?v :p1 ?s}, {?v :p2 ?s}, !{?v :p3 ?s}) } }")
    assert at(error) == (2, 32) and "at most one negated" in error.reason
    assert "line 4, column 5" in error.reason            # where the first one is


def test_two_negated_windows():
    error = error_of("SELECT ?v WHERE { WINDOW :A ON ex:s [NOW] { ?v :p1 ?s } "
                     "WINDOW :B ON ex:s [NOW] { ?v :p2 ?s }\nSEQ(:A, !:B, !:A) }")
    assert at(error) == (2, 14) and "at most one negated" in error.reason


def test_lone_negated_element():
    error = error_of("SELECT ?v WHERE { ?v :q ?s WINDOW :W ON ex:s [NOW] {\n SEQ(!{?v :p1 ?s}) } }")
    assert at(error) == (2, 6) and "positive element" in error.reason
    text = "SELECT ?v WHERE { ?v :q ?s WINDOW :A ON ex:s [NOW] { ?v :p1 ?s } SEQ(!:A) }"
    error = error_of(text)
    assert at(error) == (1, text.index("!:A") + 1) and "positive element" in error.reason


def test_projected_variable_not_bound():
    error = error_of("SELECT ?s\n ?nowhere WHERE { ?s :p ?o }")
    assert at(error) == (2, 2) and "no pattern" in error.reason


def test_projected_variable_only_in_a_negated_element():
    error = error_of("SELECT ?v ?x WHERE { WINDOW :W ON ex:s [NOW] "
                     "{ SEQ({?v :p1 ?s}, !{?v :p2 ?x}) } }")
    assert at(error) == (1, 11) and "negated element" in error.reason


def test_path_inside_a_window():
    error = error_of("SELECT ?v WHERE { WINDOW :W ON ex:s [NOW] { ?v :p1/:p2 ?s } }")
    assert at(error) == (1, 48) and "TrTemp" in error.reason


def test_window_inside_optional():
    error = error_of("SELECT ?v WHERE { ?v :q ?s OPTIONAL {\n WINDOW :W ON ex:s [NOW] "
                     "{ ?v :p1 ?s } } }")
    assert at(error) == (2, 2) and "top level" in error.reason


def test_window_block_without_pattern():
    error = error_of("SELECT ?v WHERE { ?v :q ?s WINDOW :W ON ex:s [NOW] { FILTER(?v) } }")
    assert at(error) == (1, 28) and "no pattern" in error.reason


def test_two_from_graphs_are_their_merge():
    query = cep.compile(PRE + "SELECT ?s FROM <http://a>\nFROM <http://b> WHERE { ?s :p ?o }")
    (bg,) = A.background_patterns(query.pattern)
    assert bg.graph == ("<http://a>", "<http://b>")


def test_blank_node_in_a_pattern_is_a_hidden_variable():
    """SPARQL 1.1 §4.1.4: a blank node in a pattern matches like a variable that no answer shows;
    its label is scoped to one basic graph pattern (a group's triples, FILTERs between them or
    not); its hidden name never clashes with a variable written in the query."""
    query = cep.compile(PRE + "SELECT * WHERE { ?s :p _:b . FILTER(?s != :x) _:b :q ?b_b }")
    (bg,) = A.background_patterns(query.pattern)
    inner = bg.pattern
    hidden = inner.patterns[0].o
    assert isinstance(hidden, A.Var) and hidden == inner.patterns[1].s and hidden.name not in ("b_b", "b")
    assert query.form.variables == (A.Var("s"), A.Var("b_b"))
    error = error_of("SELECT ?s WHERE { ?s :p _:b OPTIONAL { _:b :q ?o } }")
    assert at(error) == (1, 40) and "two basic graph patterns" in error.reason and "line 3, column 25" in error.reason


def test_blank_node_in_a_construct_template():
    """A template blank node stays a blank node term (fresh per solution when evaluated); ``[]``
    gets a label the query does not write."""
    q = cep.compile_query("PREFIX : <http://e/> CONSTRUCT { _:n :p ?o . [] :q _:anon1 } WHERE { ?s :p ?o }")
    assert [(tp.s, tp.o) for tp in q.form.template] == [("_:n", A.Var("o")), ("_:anon2", "_:anon1")]


def test_path_in_a_construct_template():
    error = error_of("CONSTRUCT { ?s :p/:q ?o } WHERE { ?s :p ?o }")
    assert at(error) == (1, 16)


def test_semantic_errors_are_syntax_errors_for_callers():
    with pytest.raises(CepSyntaxError):
        cep.compile(PRE + "SELECT ?x WHERE { ?s :p ?o }")
    with pytest.raises(TypeError):
        cep.lower("SELECT * {}")


def test_algebra_reexports_expressions_and_windows():
    """cep.algebra.patterns is the whole algebra to its users, though expressions and windows have their
    own modules."""
    from cep.algebra import expressions, windows

    for name in expressions.__all__:
        assert getattr(A, name) is getattr(expressions, name)
    for name in ("Duration", "Range", "Triples", "Now", "All", "Window", "TIME_UNITS"):
        assert getattr(A, name) is getattr(windows, name)
