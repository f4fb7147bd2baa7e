"""paths.spark: the compiler on the Spark executor (``engine="spark"``) against the pure-Python
oracle (paths.reference), the running example, the iteration cap, closure-table probing, and the
engine choice of ``engine="auto"``.

Cheap by construction: the graphs are tiny, each hypothesis example evaluates several paths and
binding modes over one graph and brings all answers back in ONE collect (tagged by case id).
"""
from __future__ import annotations

from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from paths import PathGraph, lower, parse
from paths import compiler
from paths import spark as spark_paths
from paths.algebra import AxisKind, Domain, axis, inverse, plus, star
from paths.named import SC_PLUS, SC_STAR, SP_PLUS, SP_STAR, TYPE
from paths.spark import END, START, PathIterationLimit
from rdfcore.dictionary import encode_triples
from rdfcore.hashing import term_id
from rdfcore.vocab import RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF
from tests.hypothesis_profiles import examples
from tests.path_cases import ABSENT, EX, TERMS, decode, e, ends, expected, graphs, paths, set_ends

CASE = "_case"


def evaluate(*args, **kwargs):
    """``paths.evaluate`` on the Spark executor: these graphs are small enough that ``auto`` would
    evaluate them in memory."""
    return spark_paths.evaluate(*args, engine=kwargs.pop("engine", "spark"), **kwargs)


def encoded(spark, triples):
    return encode_triples(spark.createDataFrame(sorted(triples), "s string, p string, o string"))


def ids(spark, terms):
    return spark.createDataFrame([(term_id(t),) for t in terms], "node long")


def run(spark, graph, cases):
    """Evaluate ``cases`` [(path, start, end)] over ``graph`` (a PathGraph or string triples) in
    one collect; returns one set of (start term, end term) per case."""
    if not isinstance(graph, PathGraph):
        graph = PathGraph(encoded(spark, graph))
    names = {term_id(t): t for t in TERMS}
    frames = []
    for n, (path, start, end) in enumerate(cases):
        for value in (start, end):
            for term in (value if isinstance(value, (set, frozenset)) else [value]):
                if isinstance(term, str):
                    names[term_id(term)] = term
        s = ids(spark, start) if isinstance(start, (set, frozenset)) else start
        o = ids(spark, end) if isinstance(end, (set, frozenset)) else end
        frames.append(evaluate(graph, path, s, o).withColumn(CASE, F.lit(n)))
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionAll(frame)
    rows = union.collect()
    return [{(r[START], r[END]) for r in rows if r[CASE] == n} for n in range(len(cases))], names


# --- randomized differential tests against paths.reference ------------------------------------

# Every example runs Spark jobs: few examples, and no shrinking (a failure is reported as drawn).
CHEAP = settings(max_examples=examples(15), deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@contextmanager
def hand_off(at: int | None, where: str = "driver"):
    """Closures handed off at their step ``at`` (every closure of a path from a set end when 1),
    or never (None): to the driver, or (``where="spark"``: nothing fits the driver) kept on Spark
    over the materialized step relation."""
    saved = spark_paths.HAND_OFF, compiler.HAND_OFF_ITERATION, spark_paths.LOCAL_MAX_PAIRS
    spark_paths.HAND_OFF, compiler.HAND_OFF_ITERATION = at is not None, at or 1
    if where == "spark":
        spark_paths.LOCAL_MAX_PAIRS = 0
    try:
        yield
    finally:
        spark_paths.HAND_OFF, compiler.HAND_OFF_ITERATION, spark_paths.LOCAL_MAX_PAIRS = saved


HAND_OFFS = [(1, "driver"), (1, "spark"), (None, "-")]


# 6 drawn examples by default, 120 under the thorough profile: the compiler these share with the
# in-memory executor meets 400 examples in tests/test_paths_local.py; here the Spark operators do
@settings(CHEAP, max_examples=examples(6, 120))
@given(graph=graphs, path=paths, start=ends, end=ends, start_set=set_ends, end_set=set_ends,
       mode=st.sampled_from(HAND_OFFS))
def test_against_reference(spark, graph, path, start, end, start_set, end_set, mode):
    """One random path in five binding modes: free, both constants drawn (each may be None),
    a DataFrame of starts, a DataFrame of ends, and a DataFrame start with a constant end; with
    closures from a set end handed off at their first step (to the driver; on Spark over the step
    relation) or never, drawn per example (each example costs a few Spark jobs)."""
    cases = [(path, None, None), (path, start, end), (path, start_set, None), (path, None, end_set),
             (path, start_set, end)]
    at, where = mode
    with hand_off(at, where):
        got, names = run(spark, graph, cases)
    names.update({term_id(t): t for triple in graph for t in triple})
    for (p, s, o), pairs in zip(cases, got):
        assert decode(pairs, names) == expected(graph, p, s, o), (str(p), s, o, at, where)


KEY = "_k"


@settings(CHEAP, max_examples=examples(5, 100))
@given(family=st.lists(graphs, min_size=1, max_size=2), path=paths, start=ends, end=ends, end_set=set_ends)
def test_keyed_graph_is_each_keys_graph(spark, family, path, start, end, end_set):
    """A keyed graph (``PathGraph(keys=)``: one graph per key, evaluated at once) gives each key
    the pairs its own graph gives, in three binding modes (free, constants drawn, a DataFrame of
    ends per key); a key with no triple is the empty graph, where a bound end still relates to
    itself. One collect for all (each key's graph is the oracle's)."""
    keys = list(range(len(family) + 1))                      # the last key holds no triple
    rows = [(k, *(term_id(t) for t in triple)) for k, graph in enumerate(family) for triple in graph]
    triples = spark.createDataFrame(rows, f"{KEY} long, s long, p long, o long")
    graph = PathGraph(triples, keys=spark.createDataFrame([(k,) for k in keys], f"{KEY} long"))
    ends_per_key = spark.createDataFrame([(k, term_id(t)) for k in keys for t in sorted(end_set)],
                                         f"{KEY} long, node long")
    cases = [(None, None), (start, end), (None, ends_per_key)]
    union = None
    for n, (s, o) in enumerate(cases):
        frame = spark_paths.evaluate(graph, path, s, o).withColumn(CASE, F.lit(n))
        union = frame if union is None else union.unionAll(frame)
    got = union.collect()
    names = {term_id(t): t for t in TERMS}
    names.update({term_id(t): t for graph_k in family for triple in graph_k for t in triple})
    for n, (s, o) in enumerate(cases):
        o = end_set if n == 2 else o
        for k in keys:
            pairs = {(r[START], r[END]) for r in got if r[CASE] == n and r[KEY] == k}
            own = family[k] if k < len(family) else set()
            assert decode(pairs, names) == expected(own, path, s, o), (str(path), k, s, o)


def test_keyed_graph_arguments_are_checked(spark):
    triples = spark.createDataFrame([(1, term_id(e("a")), term_id(e("p")), term_id(e("b")))],
                                    f"{KEY} long, s long, p long, o long")
    graph = PathGraph(triples, keys=spark.createDataFrame([(1,)], f"{KEY} long"))
    path = axis(AxisKind.NEXT)
    with pytest.raises(ValueError, match="key columns _k and exactly one column"):
        spark_paths.evaluate(graph, path, ids(spark, [e("a")]))   # the ends of no key
    with pytest.raises(ValueError, match="evaluated on Spark"):
        spark_paths.evaluate(graph, path, engine="local")
    with pytest.raises(ValueError, match="cannot be named"):
        PathGraph(triples.withColumnRenamed(KEY, "start"), keys=spark.createDataFrame([(1,)], "start long"))
    assert spark_paths.evaluate(graph, path, e("a")).collect() == [(1, term_id(e("a")), term_id(e("b")))]


# --- targeted cases ----------------------------------------------------------------------------

# DESIGN.md's background D and its namespace: the fixture of the reference evaluator's tests.
from tests.test_paths_reference import V, background_d, v  # noqa: E402


def test_running_example(spark):
    path = lower(parse("(^:beg/[:means :subway]/:end)+", {"": V}))
    graph = background_d()
    (to_c, h_to_c, free), names = run(spark, graph, [(path, None, v("c")), (path, v("h"), v("c")),
                                                     (path, None, None)])
    names.update({term_id(t): t for triple in graph for t in triple})
    assert {s for (s, _) in decode(to_c, names)} == {v("m"), v("b")}
    assert h_to_c == set()                                   # h reaches c only by tram
    assert decode(free, names) == {(v("m"), v("b")), (v("b"), v("c")), (v("m"), v("c")),
                                   (v("h"), v("g"))}


def test_zero_length_constants_follow_sparql(spark):
    """§18.5: a constant end relates to itself through ``?``/``*`` even when it is not in G, and
    only at the end it is bound to (``:k (:p?)+ ?y`` gives :k, ``:k :p?/(:p?)* ?y`` does not)."""
    graph = {(e("a"), e("p"), e("b"))}
    k = ABSENT
    cases = [(lower(parse("(:p?)+", {"": EX})), k, None),
             (lower(parse(":p?/(:p?)*", {"": EX})), k, None),
             (lower(parse(":p*", {"": EX})), k, k),
             (lower(parse("(next)*", {"": EX})), None, k),
             (lower(parse("self", {"": EX})), k, None)]
    got, names = run(spark, graph, cases)
    assert [decode(pairs, names) for pairs in got] == [{(k, k)}, set(), {(k, k)}, set(), set()]


@pytest.mark.parametrize("at,where", [(None, "-"), (1, "driver"), (3, "driver"), (1, "spark")])
def test_iteration_cap_names_path_and_cap(spark, at, where):
    """The cap holds on Spark and in a closure handed off (at its first, third step)."""
    chain = {(e(f"n{i}"), e("p"), e(f"n{i + 1}")) for i in range(6)}
    path = plus(axis(AxisKind.NEXT, False, e("p")))
    graph = PathGraph(encoded(spark, chain))
    with hand_off(at, where):
        for start in (None, e("n0")):
            with pytest.raises(PathIterationLimit) as caught:
                evaluate(graph, path, start, max_iterations=4)
            assert "4 iterations" in str(caught.value) and str(path) in str(caught.value)
        assert evaluate(graph, path, e("n0"), max_iterations=6).count() == 6   # the 6th finds nothing new


def test_closure_handed_off_gives_up_and_goes_on_in_spark(spark, monkeypatch):
    """A driver loop that outgrows its pair budget (``LocalTooLarge``) leaves the closure to Spark
    from the step it was handed at: same answer. Steps that do not fit are never collected (the
    loop stays on Spark, over them)."""
    chain = {(e(f"n{i}"), e("p"), e(f"n{i + 1}")) for i in range(12)}
    path = plus(axis(AxisKind.NEXT, False, e("p")))
    graph = PathGraph(encoded(spark, chain))
    seeds = ids(spark, [e(f"n{i}") for i in range(13)])
    collected = []
    real = spark_paths._arrays
    monkeypatch.setattr(spark_paths, "_arrays", lambda pairs: collected.append(1) or real(pairs))
    with hand_off(2):           # at step 2: 23 pairs reached, 12 steps; 78 pairs in the end
        monkeypatch.setattr(spark_paths, "LOCAL_MAX_PAIRS", 40)
        assert evaluate(graph, path, seeds).count() == 78
        assert collected
        collected.clear()
        monkeypatch.setattr(spark_paths, "LOCAL_MAX_PAIRS", 30)
        assert evaluate(graph, path, seeds).count() == 78
        assert not collected


def test_end_arguments_are_checked(spark):
    graph = PathGraph(encoded(spark, {(e("a"), e("p"), e("b"))}))
    path = axis(AxisKind.NEXT)
    with pytest.raises(TypeError):
        evaluate(graph, path, "a")                           # not an N-Triples term
    with pytest.raises(ValueError):
        evaluate(graph, path, spark.createDataFrame([(1, 2)], "x long, y long"))
    with pytest.raises(TypeError):
        evaluate(graph, "next")
    assert evaluate(graph, path, term_id(e("a"))).count() == 1


# --- closure tables ----------------------------------------------------------------------------

ONTOLOGY = f"""
@prefix : <{EX}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
:A rdfs:subClassOf :B . :B rdfs:subClassOf :C . :C rdfs:subClassOf :D . :D rdfs:subClassOf :B .
:E rdfs:subClassOf :A .
:p rdfs:subPropertyOf :q . :q rdfs:subPropertyOf :r . :r rdfs:domain :A . :s rdfs:range :E .
:part a owl:TransitiveProperty . :x1 :part :x2 . :x2 :part :x3 . :x3 :part :x4 .
:x1 :p :x2 . :x3 :s :x4 . :x4 a :E . :y :t :z .
"""


@pytest.fixture(scope="module")
def store(spark, tmp_path_factory):
    from reasoner.publish import materialize_sources
    from reasoner.store import open_version

    folder = tmp_path_factory.mktemp("paths-store")
    source = folder / "ontology.ttl"
    source.write_text(ONTOLOGY, encoding="utf-8")
    materialize_sources(spark, [source], folder / "out")
    return open_version(spark, folder / "out")


def test_closure_probes_equal_iteration(spark, store):
    """Paths answered by probing the store's closure tables give what iterating the steps gives."""
    from rdfcore.schema import INFERRED

    probing = PathGraph.from_store(store)
    plain = PathGraph(store.table(INFERRED))
    assert probing.probes_closures and not plain.probes_closures
    assert PathGraph(store.table(INFERRED), closures=store).probes_closures
    part = axis(AxisKind.NEXT, False, e("part"))
    paths = [SC_STAR, SP_PLUS, inverse(SC_PLUS), plus(part),
             star(axis(AxisKind.NEXT, False, RDFS_SUBCLASSOF), Domain.NODES),
             star(axis(AxisKind.NEXT, False, RDFS_SUBPROPERTYOF), Domain.NODES), TYPE]
    bindings = ((None, None), (e("A"), None), (None, e("B")), (e("p"), e("p")), (ABSENT, None))
    cases = [(p, s, o) for p in paths for (s, o) in bindings]
    probed, names = run(spark, probing, cases)
    # what iterating gives: the reference evaluator over the same inferred triples (the Spark
    # iteration equals it: test_against_reference)
    inferred = {(r["s"], r["p"], r["o"]) for r in store.table(INFERRED, decoded=True).collect()}
    names.update({term_id(t): t for triple in inferred for t in triple})
    for (p, s, o), got in zip(cases, probed):
        assert decode(got, names) == expected(inferred, p, s, o), (str(p), s, o)
    assert len(probed[0]) > 0 and len(probed[3 * len(bindings)]) > 0   # sc* and part+ not vacuous
    # the probe really replaces the iteration: no iteration budget needed
    for p in (SC_PLUS, SP_STAR, plus(part)):
        evaluate(probing, p, max_iterations=0).count()
        with pytest.raises(PathIterationLimit):
            evaluate(plain, p, max_iterations=0).count()


def test_closures_of_another_graph_are_not_probed(spark, store):
    other = encoded(spark, {(e("A"), RDFS_SUBCLASSOF, e("Z"))})
    graph = PathGraph(other, closures=store)
    assert not graph.probes_closures
    got, _ = run(spark, graph, [(SC_PLUS, e("A"), None)])
    assert got == [{(term_id(e("A")), term_id(e("Z")))}]


def test_transitive_probe_needs_the_declaration(spark, store):
    """``:p`` is not declared transitive: ``:p+`` is iterated even over the store."""
    probing = PathGraph.from_store(store)
    with pytest.raises(PathIterationLimit):
        evaluate(probing, plus(axis(AxisKind.NEXT, False, e("p"))), max_iterations=0).count()


# --- engine choice -----------------------------------------------------------------------------

def test_auto_engine_evaluates_small_graphs_in_memory(spark, monkeypatch):
    from paths.local import LocalTooLarge

    path = lower(parse("(^:beg/[:means :subway]/:end)+", {"": V}))
    graph = PathGraph(encoded(spark, background_d()))
    to_c = ids(spark, {v("c")})

    def answer(engine, start=None, end=None, on=graph):
        return sorted(map(tuple, evaluate(on, path, start, end, engine=engine).collect()))

    assert not graph.indexed
    for start, end in [(None, v("c")), (None, to_c), (v("m"), None), (None, None)]:
        assert answer("auto", start, end) == answer("spark", start, end) != []
    assert graph.indexed                                     # auto indexed the small graph
    # a large in-memory answer is handed over as an RDD of Arrow batches, not embedded in the plan
    monkeypatch.setattr(spark_paths, "LOCAL_RELATION_BYTES", 0)
    assert answer("local") == answer("spark")
    assert "LocalRelation" not in evaluate(graph, path, engine="local")._jdf.queryExecution().optimizedPlan().toString()
    # an intermediate relation over the in-memory budget: auto falls back to Spark, local refuses
    monkeypatch.setattr(spark_paths, "LOCAL_MAX_PAIRS", 1)
    assert answer("auto") == answer("spark")
    with pytest.raises(LocalTooLarge, match="engine='spark'"):
        answer("local")
    # a graph over the size threshold is not indexed at all
    monkeypatch.setattr(spark_paths, "LOCAL_MAX_TRIPLES", 3)
    big = PathGraph(encoded(spark, background_d()))
    assert answer("auto", None, v("c"), on=big) == answer("spark", None, v("c"), on=big)
    assert not big.indexed
    with pytest.raises(ValueError, match="engine must be one of"):
        evaluate(graph, path, engine="gpu")
