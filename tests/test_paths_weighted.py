"""``paths.weighted``: fastest routes over open connections, against brute force and the path executor.

Oracles: every simple path enumerated on small random networks (the least ``(duration, hops,
keys)``), and the in-memory property-path executor's ``(^:beg/:end)+`` over the open connections
for reachability.
"""
from __future__ import annotations

import random

import pytest

from paths.local import LocalGraph, evaluate
from paths.parser import parse
from paths.lowering import lower
from paths.weighted import Network
from rdfcore.hashing import term_id

V = "http://example.org/vienna#"


def random_network(rng: random.Random, nodes: int, edges: int):
    conns = []
    for k in range(edges):
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        conns.append((f"c{k:02d}", f"n{a}", f"n{b}", rng.choice([0, 1, 2, 3, 5])))
    return conns


def closed_network(rng: random.Random, nodes: int, edges: int, closed: int):
    """A random network with ``closed`` of its connections closed: (connections, Network, closed keys)."""
    conns = random_network(rng, nodes, edges)
    net = Network(conns)
    keys = set(rng.sample([c[0] for c in conns], closed))
    for key in keys:
        assert net.close(key)
    return conns, net, keys


def brute_force(conns, closed, source, target):
    out = {}
    for key, a, b, s in conns:
        if key not in closed:
            out.setdefault(a, []).append((key, b, s))
    best = None

    def walk(node, seen, seconds, path):
        nonlocal best
        if node == target:
            key = (seconds, len(path), tuple(path))
            if best is None or key < best:
                best = key
            return
        for key, nxt, s in out.get(node, ()):
            if nxt not in seen:
                walk(nxt, seen | {nxt}, seconds + s, path + [key])

    walk(source, {source}, 0, [])
    return best


@pytest.mark.parametrize("seed", range(40))
def test_routes_are_the_least_duration_then_hops_then_keys(seed):
    rng = random.Random(seed)
    conns = random_network(rng, rng.randrange(2, 7), rng.randrange(1, 14))
    rng.shuffle(conns)
    net = Network(conns)
    closed = set(rng.sample([c[0] for c in conns], rng.randrange(0, len(conns) + 1)))
    for key in closed:
        assert net.close(key)
    for source in sorted(net.nodes()):
        for target in sorted(net.nodes()):
            route = net.route(source, target)
            if source == target:
                assert route.hops == 0 and route.seconds == 0
                continue
            want = brute_force(conns, closed, source, target)
            if want is None:
                assert route is None
            else:
                assert (route.seconds, route.hops, route.connections) == want
                assert route.stops[0] == source and route.stops[-1] == target


@pytest.mark.parametrize("seed", range(15))
def test_reachability_is_the_path_executors_closure_over_open_connections(seed):
    conns, net, closed = closed_network(random.Random(100 + seed), 8, 16, 6)
    net.reopen(sorted(closed)[0])
    closed.discard(sorted(closed)[0])
    triples = set()
    for key, a, b, _s in conns:
        if key not in closed:
            triples |= {(f"<{V}{key}>", f"<{V}beg>", f"<{V}{a}>"), (f"<{V}{key}>", f"<{V}end>", f"<{V}{b}>")}
    graph = LocalGraph.from_terms(triples)
    path = lower(parse("(^:beg/:end)+", {"": V}))
    for source in sorted(net.nodes()):
        starts, ends = evaluate(graph, path, f"<{V}{source}>") if triples else ([], [])
        names = {term_id(f"<{V}{n}>"): n for n in net.nodes()}
        got = {names[int(x)] for x in ends}
        assert net.reachable(source) == got
        for target in net.nodes():
            if target != source:
                assert (net.route(source, target) is not None) == (target in got)


def test_errors():
    net = Network([("a", "x", "y", 1)])
    with pytest.raises(KeyError, match="unknown node"):
        net.route("x", "zz")
    with pytest.raises(ValueError, match="given twice"):
        Network([("a", "x", "y", 1), ("a", "y", "x", 1)])
    with pytest.raises(ValueError, match="negative"):
        Network([("a", "x", "y", -1)])
    assert net.close("a") and not net.close("a") and net.route("x", "y") is None
    assert net.reopen("a") and net.route("x", "y").seconds == 1


@pytest.mark.spark
def test_the_spark_search_finds_the_same_routes(spark):
    from paths.weighted import spark_route

    for seed in range(2):
        conns, net, closed = closed_network(random.Random(200 + seed), 6, 12, 3)
        frame = spark.createDataFrame(conns, "key string, beg string, end string, seconds long")
        nodes = sorted(net.nodes())
        for source, target in [(nodes[0], nodes[-1]), (nodes[1], nodes[0]), (nodes[0], nodes[0])]:
            assert spark_route(frame, source, target, closed) == net.route(source, target), (seed, source, target)
    with pytest.raises(KeyError, match="unknown node"):
        spark_route(frame, "nowhere", nodes[0])
