"""The path compiler's in-memory executor: ``paths.compiler`` run on array operations in the driver.

A Spark job costs ~0.1 s however small its input, and a closure needs one per step: a path over a
small graph (a background ontology, a city's transit network) spends nearly all its time starting
jobs. :class:`LocalGraph` is an in-memory index of an id-encoded graph — numpy arrays, built once
per graph (from a DataFrame through Arrow, or from terms) — and :class:`LocalExecutor` implements
``paths.compiler.Executor`` on it, so the *same* compiler (binding modes, frontiers, semi-naive
fixpoints, nested tests as node sets) runs without Spark. ``paths.spark.evaluate`` chooses it for
graphs whose index fits its memory budget (``paths.spark.local_max_triples``); ``tests/test_paths_local.py`` checks it
against the oracle (``paths.reference``) like the Spark executor.

Representation. Terms are renumbered densely: the graph's terms (voc(G)) are ``0..n-1`` in
ascending id order, so ``Identity(VOC)`` membership is ``x < n``; a constant of the query that is
not in G (``self::c``, a bound end) gets a number ``≥ n`` for the duration of one evaluation. A
relation is a pair of dense arrays (start, end); a pair is also one int64 key ``start << 32 | end``
for ``distinct``/``minus``. Per position (s, p, o) the graph keeps a CSR index (rows sorted by that
column plus offsets), so ``axis::a`` reads exactly the rows with a in that position; a relation
used as the right side of a join, or filtered by a set of ids, is indexed by that column once
(and the graph's axis relations keep their indexes across evaluations).

Memory is bounded: an intermediate relation of more than ``max_pairs`` pairs raises
:class:`LocalTooLarge` (``paths.spark.evaluate`` then runs the query on Spark instead).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from paths.algebra import AxisKind, Domain, Path
from paths.compiler import START, Compiler, DEFAULT_MAX_ITERATIONS, constant_id
from rdfcore.errors import SidecarError
from rdfcore.hashing import term_id
from rdfcore.schema import O, P, S

__all__ = ["LocalGraph", "LocalExecutor", "LocalTooLarge", "evaluate", "DEFAULT_MAX_PAIRS"]

#: Pairs one intermediate relation may hold (16 bytes each, plus sorting space) before
#: :class:`LocalTooLarge`.
DEFAULT_MAX_PAIRS = 50_000_000

_DENSE_LIMIT = 1 << 31          # dense numbers must fit the 32-bit halves of a pair key
_LOW = np.int64((1 << 32) - 1)
_EMPTY = np.zeros(0, dtype=np.int64)


class LocalTooLarge(SidecarError, MemoryError):
    """An intermediate relation of an in-memory evaluation exceeded its pair budget."""

    def __init__(self, rows: int, budget: int):
        self.rows, self.budget = rows, budget
        super().__init__(f"in-memory path evaluation needs a relation of {rows:,} pairs, over its "
                         f"budget of {budget:,}; evaluate it on Spark (engine='spark')")


def _unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` (ascending, distinct) of int64 values: by a bitmap over their range when it
    is dense (at most 16 slots per value: a BFS from one seed makes pair keys of one start, whose
    ends are dense numbers), else by sorting. numpy 2's ``np.unique`` hashes first, which took
    ~100 s for 30M random ids that a sort orders in ~4 s."""
    if len(values) < 4096:
        return np.unique(values)
    low, high = int(values.min()), int(values.max())
    span = high - low + 1
    if span <= 16 * len(values):
        mask = np.zeros(span, dtype=bool)
        mask[values - low] = True
        return np.flatnonzero(mask).astype(np.int64) + low
    ordered = np.sort(values)
    fresh = np.empty(len(ordered), dtype=bool)
    fresh[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=fresh[1:])
    return ordered[fresh]


def _renumber(columns: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct values of the columns ascending, and each column as positions in them (one
    stable argsort of all values: searching 10M random ids in the sorted terms one by one costs
    a cache miss each, several times the sort)."""
    values = np.concatenate(columns)
    if not len(values):
        return values, [c.copy() for c in columns]
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    fresh = np.empty(len(ordered), dtype=bool)
    fresh[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=fresh[1:])
    dense = np.empty(len(values), dtype=np.int64)
    dense[order] = np.cumsum(fresh) - 1
    bounds = np.cumsum([len(c) for c in columns])[:-1]
    return ordered[fresh], np.split(dense, bounds)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + l)`` over (s, l), vectorized."""
    total = int(lengths.sum())
    if total == 0:
        return _EMPTY
    begin = np.cumsum(lengths) - lengths
    return np.repeat(starts - begin, lengths) + np.arange(total, dtype=np.int64)


class _Index:
    """Rows of one column grouped by value: ``order`` sorts the rows, ``keys`` is the sorted column."""

    __slots__ = ("order", "keys")

    def __init__(self, column: np.ndarray):
        self.order = np.argsort(column, kind="stable")
        self.keys = column[self.order]

    def rows(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows whose value is in ``values`` (distinct), and for each value its row count."""
        lo = np.searchsorted(self.keys, values, "left")
        counts = np.searchsorted(self.keys, values, "right") - lo
        return self.order[_ranges(lo, counts)], counts


class _Rel:
    """A relation of dense pairs, with lazily built per-column indexes (shared with its swap: an
    index belongs to an array) and, once known, its pair keys in ascending order."""

    __slots__ = ("start", "end", "_index", "_sorted")

    def __init__(self, start: np.ndarray, end: np.ndarray, index: dict | None = None,
                 sorted_keys: np.ndarray | None = None):
        self.start, self.end = start, end
        self._index = index if index is not None else {}
        self._sorted = sorted_keys

    def __len__(self) -> int:
        return len(self.start)

    def col(self, column: str) -> np.ndarray:
        return self.start if column == START else self.end

    def indexed(self, column: str) -> bool:
        return id(self.col(column)) in self._index

    def index(self, column: str) -> _Index:
        array = self.col(column)
        if id(array) not in self._index:
            self._index[id(array)] = (_Index(array), array)   # the array is kept: its id stays unique
        return self._index[id(array)][0]

    def keys(self) -> np.ndarray:
        return (self.start << 32) | self.end

    def sorted_keys(self) -> np.ndarray:
        """The pair keys, ascending and distinct (the relation must be distinct)."""
        if self._sorted is None:
            self._sorted = np.sort(self.keys())
        return self._sorted


def _from_keys(keys: np.ndarray) -> _Rel:
    """The relation of ascending distinct keys."""
    return _Rel(keys >> 32, keys & _LOW, sorted_keys=keys)


class LocalGraph:
    """An in-memory, densely renumbered index of an id-encoded graph (s, p, o)."""

    def __init__(self, s: np.ndarray, p: np.ndarray, o: np.ndarray):
        raw = [np.ascontiguousarray(c, dtype=np.int64) for c in (s, p, o)]
        if not len(raw[0]) == len(raw[1]) == len(raw[2]):
            raise ValueError("the s, p and o arrays of a graph must have the same length")
        self.terms, columns = _renumber(raw)                    # voc(G), ascending ids
        self.n = len(self.terms)
        if self.n >= _DENSE_LIMIT:
            raise LocalTooLarge(self.n, _DENSE_LIMIT - 1)
        self.columns = tuple(columns)
        self.triples = len(raw[0])
        is_node = np.zeros(self.n, dtype=bool)
        is_node[self.columns[0]] = True
        is_node[self.columns[2]] = True
        self.is_node = is_node
        self.nodes = np.flatnonzero(is_node)
        self._by_position: dict[int, _Index] = {}
        self._relations: dict[tuple, object] = {}
        self._numbers: dict[int, int | None] = {}

    @classmethod
    def from_terms(cls, triples: Iterable[tuple[str, str, str]]) -> "LocalGraph":
        """From (s, p, o) N-Triples strings (ids by ``rdfcore.hashing.term_id``)."""
        rows = [(term_id(s), term_id(p), term_id(o)) for (s, p, o) in triples]
        array = np.array(rows, dtype=np.int64).reshape(-1, 3)
        return cls(array[:, 0], array[:, 1], array[:, 2])

    @classmethod
    def from_dataframe(cls, triples) -> "LocalGraph":
        """From a Spark DataFrame with long columns s, p, o (collected through Arrow)."""
        table = triples.select(S, P, O).toArrow()
        return cls(*(table.column(c).to_numpy() for c in (S, P, O)))

    def dense(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Dense numbers of raw ids, and a mask of those that are terms of G."""
        ids = np.asarray(ids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.terms, ids), max(self.n - 1, 0))
        found = (self.terms[at] == ids) if self.n else np.zeros(len(ids), dtype=bool)
        return at, found

    def number(self, value: int) -> int | None:
        """The dense number of one raw id of G, or None (memoized: queries repeat their constants)."""
        if value not in self._numbers:
            dense, found = self.dense(np.array([value], dtype=np.int64))
            self._numbers[value] = int(dense[0]) if found[0] else None
        return self._numbers[value]

    def position(self, k: int) -> _Index:
        if k not in self._by_position:
            self._by_position[k] = _Index(self.columns[k])
        return self._by_position[k]

    def relation(self, key: tuple, build):
        """A value derived from the graph alone (an axis relation with its indexes, a negated set,
        a nested test's node set), built once and kept."""
        if key not in self._relations:
            self._relations[key] = build()
        return self._relations[key]


class LocalExecutor:
    """``paths.compiler.Executor`` over a :class:`LocalGraph`, for one evaluation."""

    gives_up = LocalTooLarge

    def __init__(self, graph: LocalGraph, max_pairs: int = DEFAULT_MAX_PAIRS):
        self.graph = graph
        self.max_pairs = max_pairs
        self._extra: dict[int, int] = {}                        # raw id → dense number ≥ n
        self._extra_ids: list[int] = []

    @classmethod
    def over_pairs(cls, start: np.ndarray, end: np.ndarray,
                   max_pairs: int = DEFAULT_MAX_PAIRS) -> "LocalExecutor":
        """An executor numbering the terms of a relation (raw id pairs), for relations handed in
        with :meth:`pairs` (another executor's closure finished here: ``Executor.hand_off``)."""
        return cls(LocalGraph(start, start, end), max_pairs)

    def pairs(self, start, end) -> _Rel:
        """A relation of raw id pairs in this executor's numbering."""
        self._checked(len(start))
        return _Rel(self.encode(start), self.encode(end))

    def ids(self, pairs: _Rel) -> tuple[np.ndarray, np.ndarray]:
        """Raw ids of a relation's pairs."""
        return self.decode(pairs.start), self.decode(pairs.end)

    def hand_off(self, steps, reached, delta, total: int):
        return None                                         # already in memory

    def take_back(self, other, pairs):
        return pairs

    # numbering --------------------------------------------------------------------------------
    def encode(self, ids) -> np.ndarray:
        """Dense numbers of raw ids; ids not in G are numbered ``n, n+1, ...`` as they come."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        dense, found = self.graph.dense(ids)
        dense = dense.astype(np.int64)
        for n in np.flatnonzero(~found):
            raw = int(ids[n])
            if raw not in self._extra:
                self._extra[raw] = self.graph.n + len(self._extra_ids)
                self._extra_ids.append(raw)
            dense[n] = self._extra[raw]
        return dense

    def decode(self, dense: np.ndarray) -> np.ndarray:
        """Raw ids of dense numbers."""
        n = self.graph.n
        inside = dense < n
        out = np.empty(len(dense), dtype=np.int64)
        out[inside] = self.graph.terms[dense[inside]]
        if not inside.all():
            extra = np.array(self._extra_ids, dtype=np.int64)
            out[~inside] = extra[dense[~inside] - n]
        return out

    def _number(self, value: int) -> int | None:
        """The dense number of one raw id, or None when it is neither in G nor numbered yet."""
        number = self.graph.number(value)
        return number if number is not None else self._extra.get(int(value))

    def _checked(self, rows: int) -> None:
        if rows > self.max_pairs:
            raise LocalTooLarge(rows, self.max_pairs)

    # Executor: sets of ids --------------------------------------------------------------------
    def small(self, rows: int) -> bool:
        return True

    def constants(self, ids: list[int]) -> np.ndarray:
        return self.encode(ids)

    def occurrences(self, domain: Domain) -> np.ndarray:
        return np.arange(self.graph.n, dtype=np.int64) if domain is Domain.VOC else self.graph.nodes

    def members(self, ids: np.ndarray, small: bool, domain: Domain) -> np.ndarray:
        ids = ids[ids < self.graph.n]
        return ids if domain is Domain.VOC else ids[self.graph.is_node[ids]]

    def semi_ids(self, ids: np.ndarray, keep: np.ndarray, keep_small: bool) -> np.ndarray:
        return ids[np.isin(ids, keep)]

    def filter_ids(self, ids: np.ndarray, value: int) -> np.ndarray:
        number = self._number(value)
        return _EMPTY if number is None else ids[ids == number]

    def union_ids(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([a, b])

    def distinct_ids(self, ids: np.ndarray) -> np.ndarray:
        return _unique(ids)

    def cut_ids(self, ids: np.ndarray) -> tuple[np.ndarray, int]:
        return ids, len(ids)

    # Executor: relations ----------------------------------------------------------------------
    def axis(self, kind: AxisKind, inverse: bool, test) -> _Rel:
        i, j, k = kind.positions
        g = self.graph
        if test is None:
            rel = g.relation(("axis", kind, None), lambda: _Rel(g.columns[i], g.columns[j]))
        elif isinstance(test, int):
            number = self._number(test)
            if number is None or number >= g.n:
                return _Rel(_EMPTY, _EMPTY)

            def build():
                rows, _ = g.position(k).rows(np.array([number], dtype=np.int64))
                return _Rel(g.columns[i][rows], g.columns[j][rows])
            rel = g.relation(("axis", kind, number), build)
        else:                                                   # axis::[e]: z in a node set
            ids, _ = test
            rows, _ = g.position(k).rows(ids[ids < g.n])
            rel = _Rel(g.columns[i][rows], g.columns[j][rows])
        return self.swap(rel) if inverse else rel

    def negated(self, excluded: list[int], inverse: bool) -> _Rel:
        g = self.graph
        numbers = [n for n in (self._number(x) for x in excluded) if n is not None and n < g.n]

        def build():
            keep = ~np.isin(g.columns[1], np.array(numbers, dtype=np.int64))
            return _Rel(g.columns[0][keep], g.columns[2][keep])
        rel = g.relation(("negated", tuple(sorted(numbers))), build)
        return self.swap(rel) if inverse else rel

    def diag(self, ids: np.ndarray) -> _Rel:
        return _Rel(ids, ids)

    def swap(self, pairs: _Rel) -> _Rel:
        return _Rel(pairs.end, pairs.start, pairs._index)

    def union(self, a: _Rel, b: _Rel) -> _Rel:
        if not len(a):
            return b
        if not len(b):
            return a
        self._checked(len(a) + len(b))
        merged = None
        if a._sorted is not None and b._sorted is not None:   # closure ∪ Δ: merge two sorted runs
            merged = np.sort(np.concatenate([a._sorted, b._sorted]), kind="stable")
        return _Rel(np.concatenate([a.start, b.start]), np.concatenate([a.end, b.end]), sorted_keys=merged)

    def distinct(self, pairs: _Rel) -> _Rel:
        return _from_keys(_unique(pairs.keys())) if len(pairs) > 1 else pairs

    def semi(self, pairs: _Rel, column: str, ids: np.ndarray, small: bool) -> _Rel:
        if pairs.indexed(column) or len(pairs) > 16 * len(ids):
            rows, _ = pairs.index(column).rows(_unique(ids))
            rows.sort()
        else:
            rows = np.flatnonzero(np.isin(pairs.col(column), ids))
        return _Rel(pairs.start[rows], pairs.end[rows])

    def filter_eq(self, pairs: _Rel, column: str, value: int) -> _Rel:
        number = self._number(value)
        if number is None:
            return _Rel(_EMPTY, _EMPTY)
        keep = pairs.col(column) == number
        return _Rel(pairs.start[keep], pairs.end[keep])

    def compose(self, left: _Rel, right: _Rel, right_small: bool = False,
                left_small: bool = False) -> _Rel:
        index = right.index(START)
        lo = np.searchsorted(index.keys, left.end, "left")
        counts = np.searchsorted(index.keys, left.end, "right") - lo
        self._checked(int(counts.sum()))
        rows = index.order[_ranges(lo, counts)]
        return self.distinct(_Rel(np.repeat(left.start, counts), right.end[rows]))

    def column(self, pairs: _Rel, column: str) -> np.ndarray:
        return pairs.col(column)

    def minus(self, pairs: _Rel, known: _Rel, known_small: bool) -> _Rel:
        """``pairs`` (distinct) minus ``known`` (distinct), by binary search in known's sorted keys."""
        keys = pairs.sorted_keys()
        known_keys = known.sorted_keys()
        at = np.minimum(np.searchsorted(known_keys, keys), max(len(known_keys) - 1, 0))
        fresh = keys if not len(known_keys) else keys[known_keys[at] != keys]
        return _from_keys(fresh)

    def cut(self, pairs: _Rel) -> tuple[_Rel, int]:
        self._checked(len(pairs))
        return pairs, len(pairs)

    def probe(self, path: Path):
        return None

    def remember(self, key: tuple, build):
        """Kept with the graph, for later evaluations too: the compiler remembers node sets of G
        (``members(..., VOC)``), so they hold no per-evaluation number (≥ n)."""
        return self.graph.relation(key, build)


def evaluate(graph: LocalGraph, path: Path, start=None, end=None, *,
             max_iterations: int = DEFAULT_MAX_ITERATIONS,
             max_pairs: int = DEFAULT_MAX_PAIRS) -> tuple[np.ndarray, np.ndarray]:
    """⟦path⟧ over ``graph`` for the pattern ``start path end``, as two arrays of raw ids (the
    distinct pairs). ``start``/``end``: None (a variable), an N-Triples term, an int id, or an
    iterable of ids (the union over them). Raises :class:`LocalTooLarge` past ``max_pairs``."""
    ops = LocalExecutor(graph, max_pairs)
    compiler = Compiler(ops, path, max_iterations)
    left, right = (None if value is None else compiler.end(ops.encode(_ids(value)), True)[0]
                   for value in (start, end))
    pairs = ops.distinct(compiler.rel(path, left, right))
    return ops.decode(pairs.start), ops.decode(pairs.end)


def _ids(value) -> list[int] | np.ndarray:
    constant = constant_id(value, "ids")
    if constant is not None:
        return [constant]
    return np.asarray(list(value) if not isinstance(value, np.ndarray) else value, dtype=np.int64)
