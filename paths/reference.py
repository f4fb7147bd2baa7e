"""Reference evaluator: the semantics of ``paths.algebra``, written out literally.

The oracle for randomized differential tests of the Spark compiler. Set comprehensions over a set
of (s, p, o) N-Triples strings, closures by iterating to a fixpoint; small graphs only (it is
polynomial; its only concessions to speed: a composition looks its right side up by the middle
node, and a path that ignores its ends is evaluated once). Pure Python, no Spark.

Binding of the ends (SPARQL 1.1 §18.2.2.4, §18.5), which only ``Identity(Domain.NODES)`` observes:
``evaluate(..., start=X, end=Y)`` evaluates the pattern ``X path Y``. ``_eval(path, left, right)``
is told the constant bound at each end of ``path`` (or None):

* ``Seq(e1, ..., en)``: ``X e1 ?v1 . ?v1 e2 ?v2 ... ?vn-1 en Y`` — e1 gets ``left``, en gets
  ``right``, the parts in between get nothing (they are joined on fresh variables);
* ``Alt``: every option gets both;
* ``Plus``: ALP — from a bound ``left`` walk forwards, each step evaluated with its start node
  bound; else from a bound ``right`` walk backwards likewise; else the closure of the free relation;
* ``Star(e, d)`` = ``Identity(d) ∪ Plus(e)``, both with the same ends;
* ``Identity(NODES)``: nodes(G), plus (c, c) for a bound end c;
* everything else is a plain relation; ``Test`` and ``axis::[e]`` evaluate ``e`` with free ends.

``_eval(path, left, right)`` is exact on the pairs that start at ``left`` (when bound) and end at
``right`` (when bound); ``evaluate`` keeps just those.
"""
from __future__ import annotations

from collections.abc import Iterable

from paths.algebra import (Alt, Axis, Domain, Identity, NegatedSet, Path, Plus, Seq, SelfTerm,
                           Star, Test, Term)

__all__ = ["evaluate", "Triple", "Pair"]

Triple = tuple[Term, Term, Term]
Pair = tuple[Term, Term]


def _compose(left: set[Pair], right: set[Pair]) -> set[Pair]:
    """{(x, y) | ∃z: (x, z) ∈ left, (z, y) ∈ right}: ``right`` looked up by z, so the cost is the
    size of the result, not |left|·|right|."""
    after: dict[Term, list[Term]] = {}
    for (z, y) in right:
        after.setdefault(z, []).append(y)
    return {(x, y) for (x, z) in left for y in after.get(z, ())}


# the paths whose ⟦·⟧ ignores the bound ends (everything but Identity(NODES) and the composites)
_FREE_ENDED = (Axis, SelfTerm, Test, NegatedSet)


class _Evaluator:
    def __init__(self, graph: Iterable[Triple]) -> None:
        self.graph: frozenset[Triple] = frozenset(graph)
        for triple in self.graph:
            if not (isinstance(triple, tuple) and len(triple) == 3):
                raise TypeError(f"a graph is a set of (s, p, o) string triples, got {triple!r}")
        # voc(G): every term in any position; nodes(G): subjects and objects (SPARQL 1.1 §18.5)
        self.voc = {term for triple in self.graph for term in triple}
        self.nodes = {s for (s, _, _) in self.graph} | {o for (_, _, o) in self.graph}
        self._memo: dict[tuple[Path, Term | None, Term | None], set[Pair]] = {}

    def eval(self, path: Path, left: Term | None, right: Term | None) -> set[Pair]:
        if isinstance(path, _FREE_ENDED):          # the same pairs whatever the ends are bound to
            left = right = None
        key = (path, left, right)
        if key not in self._memo:
            self._memo[key] = self._eval(path, left, right)
        return self._memo[key]

    def _eval(self, path: Path, left: Term | None, right: Term | None) -> set[Pair]:
        g = self.graph
        if isinstance(path, Axis):
            i, j, k = path.kind.positions          # x = t[i], y = t[j], z = t[k]
            if path.test is None:
                pairs = {(t[i], t[j]) for t in g}
            elif isinstance(path.test, str):       # axis::a — z = a
                pairs = {(t[i], t[j]) for t in g if t[k] == path.test}
            else:                                  # axis::[e] — ∃w: (z, w) ∈ ⟦e⟧
                starts = {x for (x, _) in self.eval(path.test, None, None)}
                pairs = {(t[i], t[j]) for t in g if t[k] in starts}
            return {(y, x) for (x, y) in pairs} if path.inverse else pairs
        if isinstance(path, SelfTerm):             # self::a = {(a, a)}
            return {(path.term, path.term)}
        if isinstance(path, Identity):
            if path.domain is Domain.VOC:          # self = {(x, x) | x ∈ voc(G)}
                return {(x, x) for x in self.voc}
            bound = {c for c in (left, right) if c is not None}
            return {(x, x) for x in self.nodes | bound}
        if isinstance(path, Test):                 # self::[e]
            starts = {x for (x, _) in self.eval(path.path, None, None)}
            return {(x, x) for x in self.voc if x in starts}
        if isinstance(path, NegatedSet):           # SPARQL 1.1 §18.4 NPS, one direction
            pairs = {(s, o) for (s, p, o) in g if p not in path.excluded}
            return {(y, x) for (x, y) in pairs} if path.inverse else pairs
        if isinstance(path, Alt):
            result: set[Pair] = set()
            for part in path.parts:
                result |= self.eval(part, left, right)
            return result
        if isinstance(path, Seq):
            last = len(path.parts) - 1
            result = self.eval(path.parts[0], left, None)
            for n, part in enumerate(path.parts[1:], start=1):
                result = _compose(result, self.eval(part, None, right if n == last else None))
            return result
        if isinstance(path, Plus):
            return self._plus(path.path, left, right)
        if isinstance(path, Star):                 # Identity(d) ∪ Plus(e)
            return (self.eval(Identity(path.identity), left, right)
                    | self._plus(path.path, left, right))
        raise TypeError(f"not a Path: {path!r}")

    def _plus(self, path: Path, left: Term | None, right: Term | None) -> set[Pair]:
        if left is not None:                       # ALP forwards from the bound start
            reached = {y for (x, y) in self.eval(path, left, None) if x == left}
            frontier = set(reached)
            while frontier:
                step = {y for x in frontier for (x2, y) in self.eval(path, x, None) if x2 == x}
                frontier = step - reached
                reached |= frontier
            return {(left, y) for y in reached}
        if right is not None:                      # ALP backwards from the bound end
            reached = {x for (x, y) in self.eval(path, None, right) if y == right}
            frontier = set(reached)
            while frontier:
                step = {x for y in frontier for (x, y2) in self.eval(path, None, y) if y2 == y}
                frontier = step - reached
                reached |= frontier
            return {(x, right) for x in reached}
        base = self.eval(path, None, None)         # free ends: fixpoint over pairs
        closure = set(base)
        while True:
            bigger = closure | _compose(closure, base)
            if bigger == closure:
                return closure
            closure = bigger


def evaluate(graph: Iterable[Triple], path: Path, start: Term | None = None,
             end: Term | None = None) -> set[Pair]:
    """⟦path⟧ over ``graph``: the pairs (x, y), restricted to x = ``start`` and y = ``end`` when
    given; ``start``/``end`` are the constants of the pattern ``start path end`` (SPARQL 1.1)."""
    pairs = _Evaluator(graph).eval(path, start, end)
    return {(x, y) for (x, y) in pairs
            if (start is None or x == start) and (end is None or y == end)}
