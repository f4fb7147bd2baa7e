"""Fastest routes over a network of weighted connections, some of them closed.

A connection is an edge ``beg → end`` with a duration (whole seconds). The nodes reachable from a
source are the transitive closure of the open connections — the answer of the property path
``(^:beg/:end)+`` over them, which the search explores exactly once — and a route to a target is
the one of least total duration, ties broken by fewest hops, then by the smaller sequence of
connection keys (so the route is a function of the open network, whatever the order the
connections were given in): Dijkstra's search on the key ``(duration, hops, path)``.

:class:`Network` holds the connections in adjacency lists and a set of closed ones; closing and
reopening are O(1), so a traffic event costs nothing until a route is asked for. Built for a
city (thousands of stops, tens of thousands of connections: a route in milliseconds);
``tests/test_paths_weighted.py`` checks it against Bellman-Ford and against the in-memory path
executor's closure.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Network", "Route"]


@dataclass(frozen=True)
class Route:
    """A route: its stops (source first), the connections taken, the total duration."""

    stops: tuple
    connections: tuple
    seconds: int

    @property
    def hops(self) -> int:
        return len(self.connections)


class Network:
    """Connections ``(key, beg, end, seconds)``; keys and nodes are any hashable values."""

    def __init__(self, connections: Iterable[tuple]):
        self.keys: list = []
        self.beg: list = []
        self.end: list = []
        self.seconds: list[int] = []
        self.index: dict = {}
        self.out: dict = {}
        for key, beg, end, seconds in connections:
            if key in self.index:
                raise ValueError(f"connection {key!r} given twice")
            if seconds < 0:
                raise ValueError(f"connection {key!r} has a negative duration {seconds}")
            i = len(self.keys)
            self.index[key] = i
            self.keys.append(key)
            self.beg.append(beg)
            self.end.append(end)
            self.seconds.append(int(seconds))
            self.out.setdefault(beg, []).append(i)
            self.out.setdefault(end, [])
        self.closed: set[int] = set()

    def __contains__(self, key) -> bool:
        return key in self.index

    def nodes(self):
        return self.out.keys()

    def close(self, key) -> bool:
        """Close connection ``key``; False when it was closed already."""
        i = self.index[key]
        if i in self.closed:
            return False
        self.closed.add(i)
        return True

    def reopen(self, key) -> bool:
        """Reopen connection ``key``; False when it was open."""
        i = self.index[key]
        if i not in self.closed:
            return False
        self.closed.discard(i)
        return True

    def reachable(self, source) -> set:
        """Nodes reachable from ``source`` by one or more open connections."""
        seen: set = set()
        stack = [source]
        while stack:
            node = stack.pop()
            for i in self.out.get(node, ()):
                if i in self.closed:
                    continue
                nxt = self.end[i]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    def route(self, source, target) -> Route | None:
        """The fastest route over the open connections (module doc); None when ``target`` is not
        reachable. ``source == target`` is the empty route.

        Dijkstra on ``(duration, hops)`` with one predecessor per node; two paths that tie on
        both are compared by their connection keys (rebuilt from the predecessors, only then).
        Extending two tied paths by the same connection keeps their order, so the choice made
        at each node is the one the whole route needs."""
        if source not in self.out:
            raise KeyError(f"unknown node {source!r}")
        if target not in self.out:
            raise KeyError(f"unknown node {target!r}")
        if source == target:
            return Route((source,), (), 0)
        best: dict = {source: (0, 0)}
        pred: dict = {source: None}
        heap = [(0, 0, 0, source)]
        pushed = 1
        done: set = set()
        closed, out, end, seconds_of, keys = self.closed, self.out, self.end, self.seconds, self.keys
        while heap:
            seconds, hops, _n, node = heapq.heappop(heap)
            if node in done or best[node] != (seconds, hops):
                continue
            done.add(node)
            if node == target:
                path = self._keys_to(pred, target)
                stops = [source] + [end[self.index[k]] for k in path]
                return Route(tuple(stops), path, seconds)
            for i in out[node]:
                if i in closed:
                    continue
                nxt = end[i]
                if nxt in done:
                    continue
                key = (seconds + seconds_of[i], hops + 1)
                old = best.get(nxt)
                if old is None or key < old:
                    best[nxt] = key
                    pred[nxt] = i
                    heapq.heappush(heap, (key[0], key[1], pushed, nxt))
                    pushed += 1
                elif key == old and self._keys_to(pred, node) + (keys[i],) < self._keys_to(pred, nxt):
                    pred[nxt] = i
        return None

    def _keys_to(self, pred: dict, node) -> tuple:
        """The connection keys of the current best path to ``node``, from the predecessors."""
        path = []
        while pred[node] is not None:
            i = pred[node]
            path.append(self.keys[i])
            node = self.beg[i]
        return tuple(reversed(path))


def spark_route(connections, source, target, closed=(), max_iterations: int = 100_000) -> Route | None:
    """:meth:`Network.route` on Spark, for networks beyond what the driver holds: ``connections``
    a DataFrame ``(key, beg, end, seconds)`` (strings, strings, strings, long), ``closed`` the keys
    of closed connections. Bellman-Ford by frontiers: each round joins the nodes improved in the
    last round with the open connections and keeps, per node, the least ``(seconds, hops, keys)``
    (Spark orders structs field by field and arrays element by element, so the tie-break is the
    same as in memory). A walk through a cycle has more hops than the path without it, so the
    least walk is a simple path. One round is one Spark job (the improved frontier, counted as it
    is cut); it stops when no node improves."""
    from pyspark.sql import functions as F

    from rdfcore.sparkutil import cut_counted

    spark = connections.sparkSession
    known = connections.filter((F.col("beg") == source) | (F.col("end") == source)).limit(1).count()
    if source == target:
        if not known and not connections.filter(F.col("end") == target).limit(1).count():
            raise KeyError(f"unknown node {source!r}")
        return Route((source,), (), 0)
    if not known:
        raise KeyError(f"unknown node {source!r}")
    if not connections.filter((F.col("beg") == target) | (F.col("end") == target)).limit(1).count():
        raise KeyError(f"unknown node {target!r}")
    closed = sorted(set(closed))
    open_ = connections.filter(~F.col("key").isin(closed)) if closed else connections
    open_ = open_.select("key", "beg", "end", F.col("seconds").cast("long").alias("seconds")).cache()
    best_key = F.struct(F.col("seconds"), F.col("hops"), F.col("path")).alias("best")
    best = spark.createDataFrame([(source, 0, 0, [])], "node string, seconds long, hops long, path array<string>")
    best = best.select("node", best_key)
    frontier = best
    try:
        for _ in range(max_iterations):
            step = (frontier.join(open_, frontier["node"] == open_["beg"])
                    .select(open_["end"].alias("node"),
                            F.struct((F.col("best.seconds") + F.col("seconds")).alias("seconds"),
                                     (F.col("best.hops") + 1).alias("hops"),
                                     F.concat(F.col("best.path"), F.array(F.col("key"))).alias("path")).alias("cand"))
                    .groupBy("node").agg(F.min("cand").alias("cand")))
            improved = (step.join(best, "node", "left")
                        .filter(F.col("best").isNull() | (F.col("cand") < F.col("best")))
                        .select("node", F.col("cand").alias("best")))
            improved, n = cut_counted(improved)
            if not n:
                break
            best, _ = cut_counted(best.join(improved.select("node"), "node", "left_anti").unionByName(improved))
            frontier = improved
        else:
            raise RuntimeError(f"no fixpoint after {max_iterations} rounds")
        found = best.filter(F.col("node") == target).select("best.*").collect()
        if not found:
            return None
        seconds, _hops, path = found[0]
        ends = dict(open_.filter(F.col("key").isin(list(path))).select("key", "end").collect())
    finally:
        open_.unpersist()
    return Route(tuple([source] + [ends[k] for k in path]), tuple(path), int(seconds))
