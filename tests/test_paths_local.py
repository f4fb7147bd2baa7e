"""paths.local: the compiler on the in-memory executor against the oracle (paths.reference).

No Spark: the graphs are indexed straight from their terms (``LocalGraph.from_terms``), so these
tests afford many more random examples than the Spark executor's (``tests/test_paths_spark.py``).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paths import lower, parse
from paths.algebra import AxisKind, axis, plus
from paths.compiler import PathIterationLimit
from paths.local import LocalGraph, LocalTooLarge, evaluate
from rdfcore.hashing import term_id
from tests.hypothesis_profiles import examples
from tests.path_cases import ABSENT, EX, TERMS, decode, e, ends, expected, graphs, paths, set_ends
from tests.test_paths_reference import V, background_d, v


def answer(graph, path, start, end):
    """Evaluate in memory; a set at an end is given as ids (the union over them)."""
    local = LocalGraph.from_terms(graph)
    value = lambda x: [term_id(t) for t in x] if isinstance(x, (set, frozenset)) else x  # noqa: E731
    starts, stops = evaluate(local, path, value(start), value(end))
    names = {term_id(t): t for t in TERMS}
    names.update({term_id(t): t for triple in graph for t in triple})
    pairs = set(zip(starts.tolist(), stops.tolist()))
    assert len(pairs) == len(starts), "the pairs are distinct"
    return decode(pairs, names)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs, path=paths, start=ends, end=ends, start_set=set_ends, end_set=set_ends)
def test_against_reference(graph, path, start, end, start_set, end_set):
    for s, o in [(None, None), (start, end), (start_set, None), (None, end_set), (start_set, end)]:
        assert answer(graph, path, s, o) == expected(graph, path, s, o), (str(path), s, o)


def test_running_example():
    path = lower(parse("(^:beg/[:means :subway]/:end)+", {"": V}))
    graph = background_d()
    assert {s for (s, _) in answer(graph, path, None, v("c"))} == {v("m"), v("b")}
    assert answer(graph, path, v("h"), v("c")) == set()
    assert answer(graph, path, None, None) == {(v("m"), v("b")), (v("b"), v("c")), (v("m"), v("c")),
                                               (v("h"), v("g"))}


def test_a_nested_sequence_is_tested_from_its_end():
    """``self::[:p/:q/:r]`` holds at the nodes where a p, q, r chain starts: the nested sequence is
    walked back from its last step. Kills ``_starts`` walking the sequence forwards (C06)."""
    graph = {(e("a"), e("p"), e("b")), (e("b"), e("q"), e("c")), (e("c"), e("r"), e("d")), (e("x"), e("p"), e("a"))}
    path = lower(parse("self::[:p/:q/:r]", {"": EX}))
    assert answer(graph, path, None, None) == expected(graph, path, None, None) == {(e("a"), e("a"))}


def test_constants_outside_the_graph():
    graph = {(e("a"), e("p"), e("b"))}
    k = ABSENT
    assert answer(graph, lower(parse("(:p?)+", {"": EX})), k, None) == {(k, k)}
    assert answer(graph, lower(parse(":p?/(:p?)*", {"": EX})), k, None) == set()
    assert answer(graph, lower(parse("self::<http://ex.org/k>", {"": EX})), None, None) == {(k, k)}
    # free ends: ?'s identity is nodes(G) only, and k is not a node of G
    assert answer(graph, lower(parse("self::<http://ex.org/k>/:p?", {"": EX})), None, None) == set()
    assert answer(set(), lower(parse(":p*", {"": EX})), k, k) == {(k, k)}


def test_iteration_cap_and_pair_budget():
    chain = LocalGraph.from_terms({(e(f"n{i}"), e("p"), e(f"n{i + 1}")) for i in range(6)})
    path = plus(axis(AxisKind.NEXT, False, e("p")))
    with pytest.raises(PathIterationLimit, match="2 iterations"):
        evaluate(chain, path, e("n0"), max_iterations=2)
    assert len(evaluate(chain, path, e("n0"), max_iterations=6)[0]) == 6
    with pytest.raises(LocalTooLarge, match="budget of 10"):
        evaluate(chain, path, max_pairs=10)                 # 21 pairs in the closure
    assert len(evaluate(chain, path, max_pairs=21)[0]) == 21


def test_long_chain_both_directions():
    """Frontier expansion over a 5,000-node chain (also the cost model: one array pass per step)."""
    n = 5_000
    ids = np.arange(n, dtype=np.int64) * 7919 + 11
    graph = LocalGraph(ids[:-1], np.full(n - 1, 3, dtype=np.int64), ids[1:])
    path = plus(axis(AxisKind.NEXT, False, None))
    starts, stops = evaluate(graph, path, int(ids[0]), max_iterations=n)
    assert sorted(stops.tolist()) == sorted(ids[1:].tolist()) and set(starts.tolist()) == {int(ids[0])}
    starts, _ = evaluate(graph, path, None, int(ids[-1]), max_iterations=n)
    assert len(starts) == n - 1


def test_bound_constant_outside_the_graph_crosses_a_sequence():
    """``k P k`` for a constant k not in G: the zero-length steps relate k to itself through the
    sequence's fresh variable (SPARQL 1.1 §18.5: the part after it is evaluated with k bound at its
    end). Kills the compiler mutant (tests/MUTATION.md) that intersects a filter end and a bound
    end as unbound (``_intersect``: ``left.bound or right.bound`` -> ``and``)."""
    graph = {(e("a"), e("p"), e("b"))}
    k = ABSENT
    for text in (":p?/:p?", ":p?/(:p?)+", ":p?/(:p?)*"):
        path = lower(parse(text, {"": EX}))
        assert answer(graph, path, k, k) == expected(graph, path, k, k) == {(k, k)}, text


def test_middle_of_a_sequence_is_not_restricted_by_its_end():
    """Both ends bound: only the last part of a sequence ends in the right end. Kills the mutant
    ``_chain``: ``far = last if n == n_last else None`` -> ``far = last``."""
    chain = {(e(f"n{i}"), e("p"), e(f"n{i + 1}")) for i in range(3)}
    path = lower(parse(":p/:p/:p", {"": EX}))
    assert answer(chain, path, e("n0"), e("n3")) == {(e("n0"), e("n3"))}


def test_iteration_cap_of_the_free_fixpoint():
    """The cap counts the last (empty) iteration, as for a seeded closure: the closure of a 6-edge
    chain with both ends free needs 6. Kills ``_fixpoint``: ``iteration > cap`` -> ``>=``."""
    chain = LocalGraph.from_terms({(e(f"n{i}"), e("p"), e(f"n{i + 1}")) for i in range(6)})
    path = plus(axis(AxisKind.NEXT, False, e("p")))
    assert len(evaluate(chain, path, max_iterations=6)[0]) == 21
    with pytest.raises(PathIterationLimit, match="5 iterations"):
        evaluate(chain, path, max_iterations=5)


def test_auto_engine_budget_comes_from_memory(monkeypatch):
    """engine="auto" sizes the in-memory index by a memory budget, not a fixed triple count."""
    from paths import spark as spark_paths

    monkeypatch.delenv("RSP_PATHS_MEMORY_BUDGET", raising=False)
    expected = int(spark_paths.available_memory() * spark_paths.LOCAL_MEMORY_FRACTION) // spark_paths.LOCAL_BYTES_PER_TRIPLE
    assert abs(spark_paths.local_max_triples() - expected) <= expected // 10 + 1000   # memory moves a little
    monkeypatch.setenv("RSP_PATHS_MEMORY_BUDGET", str(10_000 * spark_paths.LOCAL_BYTES_PER_TRIPLE))
    assert spark_paths.local_max_triples() == 10_000
    monkeypatch.setattr(spark_paths, "LOCAL_MAX_TRIPLES", 3)          # an explicit count still wins
    assert spark_paths.local_max_triples() == 3


@settings(max_examples=examples(100), deadline=None)
@given(size=st.integers(0, 20_000), spread=st.integers(1, 400_000), base=st.integers(-2**40, 2**40),
       seed=st.integers(0, 2**32 - 1))
def test_unique_and_renumbering_are_numpys(size, spread, base, seed):
    """``_unique`` (a bitmap over min..max when dense, else a sort) gives ``np.unique``;
    ``_renumber`` gives the distinct values and each column's positions in them."""
    from paths.local import _renumber, _unique

    rng = np.random.default_rng(seed)
    values = rng.integers(0, spread, size).astype(np.int64) + base
    got = _unique(values)
    assert got.dtype == np.int64 and np.array_equal(got, np.unique(values))
    columns = [values, rng.permutation(values)[: size // 2], rng.integers(-2**62, 2**62, size // 3)]
    terms, dense = _renumber(columns)
    assert np.array_equal(terms, np.unique(np.concatenate(columns)))
    for column, numbers in zip(columns, dense):
        assert np.array_equal(numbers, np.searchsorted(terms, column))
