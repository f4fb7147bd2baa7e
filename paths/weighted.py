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

    def is_closed(self, key) -> bool:
        return self.index[key] in self.closed

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
