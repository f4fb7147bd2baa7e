"""The path compiler: how to compute ⟦path⟧ for a binding of its ends, on any relational executor.

The semantics is exactly ``paths.reference.evaluate``; this module only chooses *how* to compute
it — which side to walk from, what to materialize, when to stop — and leaves the relational
operations to an executor (:class:`Executor`): ``paths.spark`` runs them as Spark joins on the
id-encoded graph, ``paths.local`` as array operations on an in-memory index of it. Both are
checked against the oracle on random graphs and paths (``tests/test_paths_spark.py``,
``tests/test_paths_local.py``).

Binding modes (one evaluator per mode, as Oxigraph's ``spareval`` does for paths).
``Compiler.rel(path, left, right)`` evaluates ``path`` with each end either free (``None``) or an
:class:`End`, a set of ids that the pairs must start (end) in. An end is

* *bound* — the ids are constants of the pattern ``X path Y`` (SPARQL 1.1 §18.2.2.4, §18.5): the
  zero-length path ``Identity(NODES)`` relates them to themselves even when they are not in G,
  exactly as ``paths.reference`` binds ``left``/``right``. A set of ids at an end means the union,
  over its ids c, of the pattern with c at that end (each constant only adds pairs that start
  (end) at itself, so one set-at-a-time evaluation gives that union exactly);
* a *filter* — the ids of a join variable (e.g. the nodes reached by the previous step of a
  sequence): the pairs must start there, but the variable binds nothing.

How each node is computed:

* ``Seq`` runs forwards from a set start (a frontier: the ends reached so far filter the next part,
  whose pairs are then composed), or backwards from a set end, or forwards from the first part when
  both ends are free; the first part gets the sequence's left end, the last its right end, the parts
  in between filters only (§18.2.2.4: they are joined on fresh variables).
* ``Plus`` (and the ``Plus`` half of ``Star``): with a bound start, the ALP of §18.5 forwards — each
  step is evaluated with its start nodes bound —, else with a bound end the same backwards; with
  only filters, a frontier expansion from the filter set (each step filtered, nothing bound); with
  both ends free, a semi-naive fixpoint over deltas (Δ ∘ ⟦e⟧, new pairs only). The pairs carry their
  origin; every iteration is materialized (``Executor.cut``: on Spark, cut from its lineage), which
  also gives the sizes that decide which side of the next join is broadcast. An iteration cap
  raises :class:`PathIterationLimit`, naming the path and the cap.
* Identities are never enumerated when an end is set: ``Identity(VOC)`` is the end's ids that occur
  in G, ``Identity(NODES)`` the end's ids that are subjects or objects of G, or all of them when the
  end is bound. Only a free-free identity (``self``, ``()``, a ``*`` with both ends free) enumerates
  voc(G) (nSPARQL ``self``) or nodes(G) (SPARQL ``*``/``?``).
* Nested tests (``Test``, ``axis::[e]``) are semi-joins against the set of nodes that start a pair
  of ``e`` (free ends: tests see no constant), computed backwards through ``e`` as a set of nodes,
  never as pairs.
* A closure the executor can read from a table instead (``Executor.probe``: the reasoner's closure
  tables, see ``paths.spark.PathGraph``) is read, not iterated.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Protocol

from paths.algebra import (Alt, Axis, AxisKind, Domain, Identity, NegatedSet, Path, Plus, Seq,
                           SelfTerm, Star, Test, walk, is_term)
from rdfcore.errors import SidecarError
from rdfcore.hashing import term_id

__all__ = ["START", "END", "End", "Executor", "Compiler", "PathIterationLimit",
           "DEFAULT_MAX_ITERATIONS", "constant_id"]

START, END = "start", "end"

#: Iterations of one closure (one ``+`` / ``*``) before :class:`PathIterationLimit`: the joins
#: after the first step, the last one (which finds nothing new) included, so a closure over paths
#: of length n from the seeds needs n.
DEFAULT_MAX_ITERATIONS = 1000

Pairs = Any
"""An executor's relation of (start, end) id pairs, not necessarily distinct."""
Ids = Any
"""An executor's set of ids, not necessarily distinct."""


#: The closure step at which ``Compiler._expand`` offers the executor the rest of the loop
#: (``Executor.hand_off``): the first steps from a few seeds are cheap on any executor, and a
#: closure that ends within them never pays for the whole step relation.
HAND_OFF_ITERATION = 3


def _binds(path: Path) -> bool:
    """Whether ``path`` has a zero-length path over nodes(G), the only part whose pairs depend on
    whether an end is bound (see ``Compiler._steps``)."""
    return any((isinstance(node, Identity) and node.domain is Domain.NODES)
               or (isinstance(node, Star) and node.identity is Domain.NODES) for node in walk(path))


class PathIterationLimit(SidecarError, RuntimeError):
    """A closure (``e+`` / ``e*``) did not reach its fixpoint within the iteration cap."""

    def __init__(self, path: Path, cap: int, root: Path | None = None):
        self.path, self.cap, self.root = path, cap, root
        within = "" if root is None or root == path else f" (in path {root})"
        super().__init__(f"path closure {path}{within} did not reach a fixpoint within {cap} "
                         f"iterations; raise max_iterations if the graph has longer paths")


def constant_id(value, others: str) -> int | None:
    """The id of a path end given as one constant — an N-Triples term or an int id — or None when
    ``value`` is something else (a collection of ids, which the executor reads). ``others`` names
    what else the caller accepts, for the error on a bool or a string that is not a term."""
    if isinstance(value, bool):
        raise TypeError(f"a path end is None, an N-Triples term, an int id or {others}, got {value!r}")
    if isinstance(value, str):
        if not is_term(value):
            raise TypeError(f"a path end given as a string must be an N-Triples term (<iri>, \"lit\", "
                            f"_:b), got {value!r}")
        return term_id(value)
    if isinstance(value, numbers.Integral):                # int, and numpy's integers
        return int(value)
    return None


@dataclass(frozen=True)
class End:
    """A set of distinct ids at one end of a path (see the module doc); ``small`` says whether the
    executor may broadcast it."""

    ids: Ids
    bound: bool
    small: bool


class Executor(Protocol):
    """The relational operations the compiler needs. ``column`` is :data:`START` or :data:`END`;
    ``small`` flags are hints (which side a join may broadcast), never semantics."""

    def small(self, rows: int) -> bool: ...
    # sets of ids
    def constants(self, ids: list[int]) -> Ids: ...
    def occurrences(self, domain: Domain) -> Ids: ...           # voc(G) / nodes(G), not distinct
    def members(self, ids: Ids, small: bool, domain: Domain) -> Ids: ...   # ids ∩ occurrences
    def semi_ids(self, ids: Ids, keep: Ids, keep_small: bool) -> Ids: ...
    def filter_ids(self, ids: Ids, value: int) -> Ids: ...
    def union_ids(self, a: Ids, b: Ids) -> Ids: ...
    def distinct_ids(self, ids: Ids) -> Ids: ...
    def cut_ids(self, ids: Ids) -> tuple[Ids, int]: ...
    # relations
    def axis(self, kind: AxisKind, inverse: bool, test: int | None | tuple[Ids, bool]) -> Pairs: ...
    def negated(self, excluded: list[int], inverse: bool) -> Pairs: ...
    def diag(self, ids: Ids) -> Pairs: ...
    def swap(self, pairs: Pairs) -> Pairs: ...
    def union(self, a: Pairs, b: Pairs) -> Pairs: ...
    def distinct(self, pairs: Pairs) -> Pairs: ...
    def semi(self, pairs: Pairs, column: str, ids: Ids, small: bool) -> Pairs: ...
    def filter_eq(self, pairs: Pairs, column: str, value: int) -> Pairs: ...
    def compose(self, left: Pairs, right: Pairs, right_small: bool = False,
                left_small: bool = False) -> Pairs: ...
    def column(self, pairs: Pairs, column: str) -> Ids: ...
    def minus(self, pairs: Pairs, known: Pairs, known_small: bool) -> Pairs: ...
    def cut(self, pairs: Pairs) -> tuple[Pairs, int]: ...
    def probe(self, path: Path) -> Pairs | None: ...             # ⟦path⟧+ from a closure table
    def remember(self, key: tuple, build): ...                  # a value that depends on G only
    # a closure's remaining steps elsewhere, or here over the whole step relation (see
    # Compiler._expand); gives_up: what that raises when it cannot finish (the loop then goes on
    # here, as before the hand-off)
    gives_up: type[BaseException]
    def hand_off(self, steps, reached: Pairs, delta: Pairs, total: int): ...  # None: stay
    def take_back(self, other: "Executor", pairs: Pairs) -> Pairs: ...


class Compiler:
    """Evaluates one path (``root``) with one executor; memoizes the node sets of nested tests."""

    def __init__(self, ops: Executor, root: Path, max_iterations: int = DEFAULT_MAX_ITERATIONS):
        self.ops = ops
        self.root = root
        self.max_iterations = max_iterations

    # ends -------------------------------------------------------------------------------------
    def end(self, ids: Ids, bound: bool) -> tuple[End, int]:
        """Materialize ``ids`` (made distinct) as an end; returns it and its size."""
        ids, rows = self.ops.cut_ids(self.ops.distinct_ids(ids))
        return End(ids, bound, self.ops.small(rows)), rows

    def _restrict(self, pairs: Pairs, left: End | None, right: End | None) -> Pairs:
        if left is not None:
            pairs = self.ops.semi(pairs, START, left.ids, left.small)
        if right is not None:
            pairs = self.ops.semi(pairs, END, right.ids, right.small)
        return pairs

    def _intersect(self, left: End | None, right: End | None) -> End | None:
        if left is None or right is None:
            return left or right
        if right.small or not left.small:
            ids = self.ops.semi_ids(left.ids, right.ids, right.small)
        else:
            ids = self.ops.semi_ids(right.ids, left.ids, True)
        return End(ids, left.bound or right.bound, left.small or right.small)

    # relations --------------------------------------------------------------------------------
    def rel(self, path: Path, left: End | None, right: End | None) -> Pairs:
        """⟦path⟧ with the given ends: exact on, and restricted to, the pairs that start in
        ``left`` and end in ``right`` (when set); not necessarily distinct."""
        ops = self.ops
        if isinstance(path, Axis):
            if path.test is None or isinstance(path.test, str):
                test = None if path.test is None else term_id(path.test)
            else:                                           # axis::[e]
                test = self.test_set(path.test)
            return self._restrict(ops.axis(path.kind, path.inverse, test), left, right)
        if isinstance(path, NegatedSet):
            excluded = [term_id(t) for t in sorted(path.excluded)]
            return self._restrict(ops.negated(excluded, path.inverse), left, right)
        if isinstance(path, SelfTerm):                      # self::a = {(a, a)}
            return self._restrict(ops.diag(ops.constants([term_id(path.term)])), left, right)
        if isinstance(path, Identity):
            return self.identity(path.domain, left, right)
        if isinstance(path, Test):                          # self::[e]
            ids, _ = self.test_set(path.path)
            return self._restrict(ops.diag(ids), left, right)
        if isinstance(path, Alt):
            out = None
            for part in path.parts:
                pairs = self.rel(part, left, right)
                out = pairs if out is None else ops.union(out, pairs)
            return out
        if isinstance(path, Seq):
            return self.seq(path, left, right)
        if isinstance(path, Plus):
            return self.plus(path.path, left, right)
        if isinstance(path, Star):                          # Identity(d) ∪ Plus(e)
            return ops.union(self.identity(path.identity, left, right), self.plus(path.path, left, right))
        raise TypeError(f"not a Path: {path!r}")

    def identity(self, domain: Domain, left: End | None, right: End | None) -> Pairs:
        ops = self.ops
        ends = self._intersect(left, right)
        if ends is None:                                    # free-free: enumerate
            return ops.diag(ops.distinct_ids(ops.occurrences(domain)))
        if domain is Domain.NODES and ends.bound:           # a bound constant relates to itself
            return ops.diag(ends.ids)
        return ops.diag(ops.members(ends.ids, ends.small, domain))

    def test_set(self, path: Path) -> tuple[Ids, bool]:
        """{x ∈ voc(G) | ∃y: (x, y) ∈ ⟦path⟧} (free ends: a test sees no constant), materialized
        once (``Executor.remember``: per evaluation, or per graph where the executor keeps it), and
        whether it is small. The nodes that satisfy ``self::[path]``; also the z that satisfy
        ``axis::[path]`` (z is in voc(G) anyway). It depends on the graph only."""
        def build():
            end, _ = self.end(self.ops.members(self._starts(path), False, Domain.VOC), False)
            return end.ids, end.small
        return self.ops.remember(("test", path), build)

    def _starts(self, path: Path) -> Ids:
        ops = self.ops
        if isinstance(path, Seq):                           # backwards through the parts
            reach = self._starts(path.parts[-1])
            for part in reversed(path.parts[:-1]):
                if isinstance(part, SelfTerm):
                    reach = ops.filter_ids(reach, term_id(part.term))
                    continue
                reach = ops.column(self.rel(part, None, End(reach, False, False)), START)
            return ops.distinct_ids(reach)
        if isinstance(path, Alt):
            out = None
            for part in path.parts:
                ids = self._starts(part)
                out = ids if out is None else ops.union_ids(out, ids)
            return ops.distinct_ids(out)
        if isinstance(path, Plus):
            return self._starts(path.path)
        if isinstance(path, Star):
            return ops.distinct_ids(ops.union_ids(self._starts(Identity(path.identity)),
                                                  self._starts(path.path)))
        if isinstance(path, Test):
            return self.test_set(path.path)[0]
        return ops.distinct_ids(ops.column(self.rel(path, None, None), START))

    # sequences --------------------------------------------------------------------------------
    def seq(self, path: Seq, left: End | None, right: End | None) -> Pairs:
        if left is None and right is not None:              # backwards from the set end
            return self.ops.swap(self._chain(list(reversed(path.parts)), right, left, forward=False))
        return self._chain(list(path.parts), left, right, forward=True)

    def _oriented(self, part: Path, near: End | None, far: End | None, forward: bool) -> Pairs:
        """``part`` as pairs (near end, far end) in the walking direction."""
        if forward:
            return self.rel(part, near, far)
        return self.ops.swap(self.rel(part, far, near))

    def _chain(self, parts: list[Path], first: End | None, last: End | None,
               forward: bool) -> Pairs:
        """Compose the parts in walking order (reversed parts when not ``forward``). Node filters
        (``Identity``, ``Test``, ``self::a``) restrict the ends reached so far; plain relations
        (axes, negated sets) are joined; anything else (closures, alternatives, nested sequences)
        is evaluated from the frontier of ends reached so far, as a filter (SPARQL 1.1 §18.2.2.4:
        the parts after the first are joined on fresh variables, which bind nothing)."""
        ops = self.ops
        n_last = len(parts) - 1
        acc = self._oriented(parts[0], first, None, forward)
        for n, part in enumerate(parts[1:], start=1):
            far = last if n == n_last else None
            if isinstance(part, (Identity, Test, SelfTerm)):
                acc = self._filter_end(acc, part, far)
            elif isinstance(part, (Axis, NegatedSet)):
                acc = ops.compose(acc, self._oriented(part, None, far, forward))
            else:
                acc, rows = ops.cut(ops.distinct(acc))
                small = ops.small(rows)
                frontier = End(ops.distinct_ids(ops.column(acc, END)), False, small)
                acc = ops.compose(acc, self._oriented(part, frontier, far, forward), left_small=small)
        return acc

    def _filter_end(self, acc: Pairs, part: Path, far: End | None) -> Pairs:
        """``acc ∘ part`` for a node filter ``part`` (a sub-relation of the identity)."""
        ops = self.ops
        if isinstance(part, SelfTerm):
            acc = ops.filter_eq(acc, END, term_id(part.term))
        elif isinstance(part, Test):
            ids, small = self.test_set(part.path)
            acc = ops.semi(acc, END, ids, small)
        elif part.domain is Domain.NODES and far is not None and far.bound:
            pass                                            # (nodes(G) ∪ far) ∩ far = far
        else:
            acc = ops.semi(acc, END, ops.occurrences(part.domain), False)
        return self._restrict(acc, None, far)

    # closures ---------------------------------------------------------------------------------
    def plus(self, path: Path, left: End | None, right: End | None) -> Pairs:
        probed = self.ops.probe(path)
        if probed is not None:
            return self._restrict(probed, left, right)
        if left is not None and left.bound:                 # ALP forwards (§18.5)
            return self._restrict(self._expand(path, left, forward=True), None, right)
        if right is not None and right.bound:               # ALP backwards
            return self._restrict(self._expand(path, right, forward=False), left, None)
        if left is not None:                                # frontier from a filter set
            return self._restrict(self._expand(path, left, forward=True), None, right)
        if right is not None:
            return self._expand(path, right, forward=False)
        return self._fixpoint(path)

    def _step(self, path: Path, frontier: End, forward: bool) -> Pairs:
        """One step of ``path`` from (to) the frontier, as pairs (frontier node, next node)."""
        if forward:
            return self.rel(path, frontier, None)
        return self.ops.swap(self.rel(path, None, frontier))

    def _expand(self, path: Path, seeds: End, forward: bool) -> Pairs:
        """Pairs (seed, node) of ⟦path⟧+ from the seeds (to the seeds when not ``forward``: the
        pairs are then swapped back at the end). Each step binds its frontier iff ``seeds.bound``.

        After :data:`HAND_OFF_ITERATION` steps the executor may take the rest over
        (``Executor.hand_off``) when ``path`` is a hop (no closure inside): it is given every step at once — ⟦path⟧ from any node a frontier
        can hold (:meth:`_steps`) — and continues the same loop where that is cheaper (Spark: in
        the driver, when the step relation fits its memory; no job per level)."""
        ops = self.ops
        reached, size = ops.cut(ops.distinct(self._step(path, seeds, forward)))
        # only a hop (no closure inside) is offered: ⟦(p+/q)⟧ from every node can be far larger
        # than anything a BFS from the seeds ever computes
        hop = not any(isinstance(node, (Plus, Star)) for node in walk(path))
        grown = self._grow(ops, lambda frontier: self._step(path, frontier, forward), path, seeds.bound,
                           reached, size, hand_off=(lambda: self._steps(path, seeds, forward)) if hop else None)
        return grown if forward else ops.swap(grown)

    def _grow(self, ops: Executor, step, path: Path, bound: bool, reached: Pairs, size: int,
              iteration: int = 0, hand_off=None) -> Pairs:
        """The loop of :meth:`_expand` on ``ops``: Δ ∘ step(frontier of Δ) minus what is reached,
        until nothing is new; ``reached`` (= Δ at the start) has ``size`` pairs."""
        delta, total = reached, size
        while size:
            iteration += 1
            if iteration > self.max_iterations:
                raise PathIterationLimit(Plus(path), self.max_iterations, self.root)
            if hand_off is not None and iteration == HAND_OFF_ITERATION:
                taken = ops.hand_off(hand_off, reached, delta, total)
                if taken is not None:                       # (executor, its step relation, Δ, reached)
                    other, steps, other_delta, other_reached = taken
                    done = self._grow_from(other, steps, path, bound, other_reached, other_delta,
                                           size, total, iteration - 1)
                    if done is not None:
                        return ops.take_back(other, done)
            small = ops.small(size)
            frontier = End(ops.distinct_ids(ops.column(delta, END)), bound, small)
            candidates = ops.compose(delta, step(frontier), left_small=small)
            new, size = ops.cut(ops.minus(candidates, reached, ops.small(total)))
            reached = ops.union(reached, new)  # a union of materialized pieces
            delta, total = new, total + size
        return reached

    def _grow_from(self, ops: Executor, steps: Pairs, path: Path, bound: bool, reached: Pairs,
                   delta: Pairs, size: int, total: int, iteration: int) -> Pairs | None:
        """:meth:`_grow` continued on another executor over the whole step relation ``steps``;
        None when that executor gives up (``Executor.hand_off`` documents when)."""
        try:
            while size:
                iteration += 1
                if iteration > self.max_iterations:
                    raise PathIterationLimit(Plus(path), self.max_iterations, self.root)
                candidates = ops.compose(delta, steps, left_small=ops.small(size))
                new, size = ops.cut(ops.minus(candidates, reached, ops.small(total)))
                reached = ops.union(reached, new)
                delta, total = new, total + size
        except ops.gives_up:
            return None
        return reached

    def _steps(self, path: Path, seeds: End, forward: bool) -> Pairs:
        """Every step a frontier of :meth:`_expand` can take, as pairs (frontier node, next node):
        ⟦path⟧ from any node. A frontier holds seeds and nodes reached from them (terms of G).
        Steps bind their frontier only through the zero-length path (``Identity(NODES)`` relates a
        bound node to itself even when it is no subject or object of G): without one, bound and
        filter steps are the same relation, ⟦path⟧ with free ends; with one (and bound seeds), it
        is ⟦path⟧ bound at every term of G and every seed (one set-at-a-time evaluation)."""
        ops = self.ops
        if seeds.bound and _binds(path):
            everything = ops.union_ids(ops.occurrences(Domain.VOC), seeds.ids)
            near, _ = self.end(everything, True)
            return self._step(path, near, forward)
        return self.rel(path, None, None) if forward else ops.swap(self.rel(path, None, None))

    def _fixpoint(self, path: Path) -> Pairs:
        """⟦path⟧+ with both ends free: semi-naive, Δ_{k+1} = Δ_k ∘ ⟦path⟧ minus what is known."""
        ops = self.ops
        base, rows = ops.cut(ops.distinct(self.rel(path, None, None)))
        base_small = ops.small(rows)
        closure, delta, size, total, iteration = base, base, rows, rows, 0
        while size:
            iteration += 1
            if iteration > self.max_iterations:
                raise PathIterationLimit(Plus(path), self.max_iterations, self.root)
            candidates = ops.compose(delta, base, base_small, left_small=ops.small(size))
            new, size = ops.cut(ops.minus(candidates, closure, ops.small(total)))
            closure = ops.union(closure, new)
            delta, total = new, total + size
        return closure
