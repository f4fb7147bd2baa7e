"""The planner's logical rewrites (``cep.planner.logical``): what they do, and that they change no answer.

Semantics first: on random queries whose background has several connected components and FILTERs
within one component, across components, at the top level and inside a group (some reading
EXISTS, which must not move), the driver engine on the rewritten query answers exactly what the
reference (``cep.engines.reference``, which never sees a rewrite) answers on the query as written,
at every asked instant. The continuous engines plan through ``cep.continuous.plan.plan``, so the
continuous tests run the rewritten queries against the reference too (the Vienna query's
background is split: ``test_vienna_transit``).
"""
from __future__ import annotations

import random

import pytest

from cep import algebra as A
from cep import compile_query
from cep.continuous.plan import plan as continuous_plan
from cep.engines import reference as R
from cep.engines.driver import answers as D
from cep.planner import rewrite
from cep.planner.logical import components, conjuncts, movable
from tests.stream_terms import EX, STREAM_IRI
from tests.test_query_at_driver import driver_inputs, per_instant, random_background, random_stream

HEAD = f"PREFIX : <{EX}> SELECT * FROM NAMED WINDOW :W ON {STREAM_IRI} "
VIENNA = (f"PREFIX : <{EX}> SELECT ?v ?s FROM NAMED WINDOW :W ON {STREAM_IRI} [RANGE 10] WHERE {{ "
          "WINDOW :W { SEQ ({?v :p0 ?s}, {?v :p0 ?s}, !{?v :p1 ?s}) } ?v :type :Kind . ?s (^:link/:link)+ :c . }")


def test_the_vienna_background_is_split_and_joined_where_each_part_binds():
    query = compile_query(VIENNA)
    (background,) = A.background_patterns(query.pattern)
    assert len(background.pattern.patterns) == 2
    planned = rewrite(query)
    assert planned.changed and planned.written is query
    top = planned.query.pattern
    # JOIN(JOIN(events, BACKGROUND(?v)), BACKGROUND(?s)): each part meets rows that bind its variable
    assert isinstance(top, A.Join) and isinstance(top.left, A.Join)
    assert A.stream_patterns(top.left.left) and not A.stream_patterns(top.right)
    assert A.variables(top.left.right) == {A.Var("v")} and A.variables(top.right) == {A.Var("s")}
    assert [s.rule for s in planned.steps] == ["split", "order"]
    assert rewrite(planned.query).query is planned.query       # idempotent


def test_nothing_to_split_leaves_the_query_as_written():
    for text in (HEAD + "[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } ?v :type :Kind . ?v :link ?s }",
                 HEAD + "[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } }",
                 f"PREFIX : <{EX}> SELECT ?s FROM STREAM {STREAM_IRI} [RANGE 5] WHERE {{ ?s :p0 ?o . ?a :link ?b }}"):
        query = compile_query(text)
        assert rewrite(query).query is query


def test_a_condition_that_reads_more_than_the_mapping_is_not_moved():
    text = HEAD + ("[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } "
                   "{ ?v :type :Kind . ?a :link ?b FILTER (EXISTS { ?a :link ?v }) } }")
    planned = rewrite(compile_query(text))
    assert not planned.changed
    assert [s.rule for s in planned.steps] == ["kept"] and "EXISTS" in planned.steps[0].detail
    top = compile_query(HEAD + "[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } ?v :type :Kind FILTER (RAND() < 2) }")
    assert rewrite(top).query is top


def test_a_cross_product_the_query_asks_for_is_named():
    planned = rewrite(compile_query(HEAD + "[RANGE 5] WHERE { WINDOW :W { ?v :p0 ?s } ?v :type :Kind . ?a :link ?b }"))
    assert "cross-product" in [s.rule for s in planned.steps]


def test_components_conjuncts_movable():
    v, s, a, b = (A.Var(n) for n in "vsab")
    t = [A.triple(v, "<http://ex/p>", s), A.triple(a, "<http://ex/p>", b), A.triple(s, "<http://ex/q>", "<http://ex/c>"),
         A.triple("<http://ex/x>", "<http://ex/p>", "<http://ex/y>"), A.triple(b, "<http://ex/p>", v)]
    assert components(t[:4]) == [(t[0], t[2]), (t[1],), (t[3],)]
    assert components(t) == [(t[0], t[1], t[2], t[4]), (t[3],)]
    c1, c2 = A.Compare("!=", v, s), A.Compare("!=", a, A.Const("<http://ex/c>"))
    assert conjuncts(A.And(c1, A.And(c2, c1))) == [c1, c2, c1]
    assert movable(c1) and not movable(A.Compare("<", A.Builtin("RAND", ()), A.Const('"2"^^<http://www.w3.org/2001/XMLSchema#integer>')))


def test_continuous_plans_evaluate_the_rewritten_query_and_keep_the_written_one():
    query = compile_query(VIENNA)
    cplan = continuous_plan(query, "ms")
    assert cplan.written is query and cplan.query == rewrite(query).query


# --- randomized: the rewritten query answers what the written one answers ---------------------------------

STREAM_SIDES = ["{ ?v :p0 ?s }", "{ SEQ ({?v :p0 ?s}, {?v :p1 ?x}) }", "{ SEQ ({?v :p0 ?s}, !{?v :p2 ?s}) }"]
VARIABLES = ["?v", "?s", "?a", "?b", "?o", "?e", "?g"]


def _pattern(rng: random.Random, names=VARIABLES) -> str:
    x, y = rng.choice(names), rng.choice(names + [":c", ":h"])
    return rng.choice([f"{x} :link {y}", f"{x} :type :Kind", f"{x} :link+ {y}", f"{x} :link ?{rng.choice('pq')}"])


def _condition(rng: random.Random, inside: bool, names=VARIABLES) -> str:
    x, y = rng.choice(names), rng.choice(names)
    options = [f"{x} != {y}", f"{x} != :c", f"sameTerm({x}, {y}) || {x} = :a", f"BOUND({x}) && {y} != :h",
               f"!({x} = :m)", f"{x} != {y} && {y} != :c"]
    if inside:
        options.append(f"NOT EXISTS {{ {x} :link {y} }}")
    return rng.choice(options)


def random_query(rng: random.Random) -> str:
    """A window over a stream, then a background of 2-4 patterns over seven variables (often in
    several components), maybe a group of its own with FILTERs over its variables (within one
    component, across them, reading one it does not bind, or reading EXISTS), maybe a UNION, maybe
    FILTERs at the top."""
    background = " . ".join(_pattern(rng) for _ in range(rng.randint(2, 4)))
    group = ""
    if rng.random() < 0.6:
        patterns = [_pattern(rng, rng.sample(VARIABLES, 3)) for _ in range(rng.randint(1, 3))]
        used = sorted({word for p in patterns for word in p.split() if word.startswith("?")} - {"?p", "?q"})
        group = "{ " + " . ".join(patterns)
        if rng.random() < 0.25 or not used:     # a variable the group does not bind: unbound in its FILTER
            used.append(rng.choice(VARIABLES))
        group += "".join(f" FILTER ({_condition(rng, True, used)})" for _ in range(rng.randint(1, 2))) + " } "
    if rng.random() < 0.3:      # a UNION: the variables of one side only may be unbound
        group += f"{{ {_pattern(rng)} }} UNION {{ {_pattern(rng)} }} "
    top = "".join(f" FILTER ({_condition(rng, False)})" for _ in range(rng.randint(0, 2)))
    return (HEAD + f"[RANGE {rng.choice([3, 6, 9])}] WHERE {{ WINDOW :W {rng.choice(STREAM_SIDES)} "
            f"{background} . {group}{top} }}")


INSTANTS = [0, 2, 4, 5, 7, 9, 12, 15]


def same_answers(query: A.Query, rng: random.Random, draws: int = 3) -> tuple[bool, int]:
    """Checks the driver on ``query`` as planned against the reference on it as written, over
    ``draws`` random streams and backgrounds; returns (rewritten?, instants with an answer)."""
    planned = rewrite(query)
    assert D.refusal(planned.query) is None, D.refusal(planned.query)
    answered = 0
    for draw in range(draws):
        background, items = random_background(rng), random_stream(rng, 10, 12)
        graphs, streams, terms = driver_inputs(background, items)
        got = per_instant(D.answers_at(planned.query, graphs, streams, INSTANTS, "ms", terms), INSTANTS)
        for t in INSTANTS:
            expected = R.evaluate(query, {None: background}, {STREAM_IRI: items}, at=t)
            assert set(got[t]) == expected, (draw, t, str(query), str(planned.query))
            answered += bool(expected)
    return planned.changed, answered


#: written to catch what random queries rarely draw
FIXED = {
    "a FILTER on a variable one side of a UNION leaves unbound and the stream binds: not pushed": (
        "?v :type :Kind . { ?a :link ?s } UNION { ?a :type :Kind } FILTER (?s != :c)", False),
    "a group's FILTER reading a variable the group does not bind: the background kept whole": (
        "?v :type :Kind . ?a :link ?g . { ?b :link ?e FILTER (!BOUND(?a)) }", False),
    "a group's FILTER across two components: applied after the join": (
        "?v :type :Kind . { ?a :link ?b . ?e :link ?g FILTER (?b != ?e) }", True),
    "a group's FILTER reading EXISTS: kept whole": (
        "?v :type :Kind . { ?a :link ?b FILTER EXISTS { ?b :link ?v } }", False),
}


@pytest.mark.parametrize("label", list(FIXED))
def test_fixed_queries_on_the_driver_equal_the_reference(label):
    background, lifted = FIXED[label]
    query = compile_query(HEAD + f"[RANGE 6] WHERE {{ WINDOW :W {{ ?v :p0 ?s }} {background} }}")
    assert ("filter" in [s.rule for s in rewrite(query).steps]) == lifted
    answered = sum(same_answers(query, random.Random(seed * 31 + len(label)))[1] for seed in range(12))
    assert answered, "no answer: the test would prove nothing"


@pytest.mark.parametrize("seed", range(6))
def test_random_rewritten_queries_on_the_driver_equal_the_reference_on_the_written_ones(seed):
    rewritten = answered = 0
    for case in range(25):
        rng = random.Random(seed * 1_000 + case)
        changed, hits = same_answers(compile_query(random_query(rng)), rng)
        rewritten += changed
        answered += hits
    assert rewritten >= 5, "too few random queries were rewritten: the test would prove little"
    assert answered, "no random query has an answer: the test would prove nothing"


# --- query --explain --------------------------------------------------------------------------

ONTOLOGIES = __import__("pathlib").Path(__file__).resolve().parent.parent / "ontologies"


def _explain(capsys, *more: str) -> str:
    from jobs import query as job

    assert job.main([str(ONTOLOGIES / "vienna_example_query.rq"), "--static",
                     f"ex:transportationMap={ONTOLOGIES / 'vienna_example.ttl'}", "--stream",
                     f"ex:publicTransport={ONTOLOGIES if 'continuous' in ' '.join(more) else ONTOLOGIES / 'vienna_example_stream.jsonl'}",
                     "--time-unit", "m", "--explain", *more]) == 0
    return capsys.readouterr().out


def test_explain_prints_the_split_background_and_the_engine_without_evaluating(capsys):
    out = _explain(capsys, "--at", "16")
    written, rewritten = out.split("== Query, as the engines evaluate it ==")
    assert "?v rdf:type :subway . ?s" in written                       # one relation, as written
    assert "BACKGROUND(ex:transportationMap, {?v rdf:type :subway})" in rewritten
    assert "- split: " in out and "- order: joined in this order: the event clauses ⋈ [?v] ⋈ [?s]" in out
    assert "== Engine ==\nthe driver, with no JVM" in out
    assert "?s\t" not in out                                            # nothing evaluated
    keyed = _explain(capsys, "--continuous", "--engine", "keyed")
    assert "the keyed operator" in keyed and "key: ?s" in keyed and "- split: " in keyed
    runner = _explain(capsys, "--continuous")
    assert "each micro-batch on the driver" in runner
    assert "on Spark, because --emit rstream" in _explain(capsys, "--continuous", "--emit", "rstream")
