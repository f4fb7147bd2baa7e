"""The driver engine's operators over numpy columns: ``cep.engines.driver.rows`` at volume.

``cep.engines.driver.rows`` evaluates a micro-batch's state with Python sets of tuples; it costs ~50 µs an event
on the Vienna benchmark, most of it hashing and building tuples one pair at a time. This module
computes the same relations (same definitions, same rows: read ``cep.engines.driver.rows``'s module doc) with
whole-column operations:

* a relation (``Table``) is a tuple of variable names and one int64 matrix, a row per mapping:
  the variables' term ids, then t1, t2, a, b (interval and lifetime); ``NULL`` (the smallest
  int64) is an unbound variable. Between operators a row may occur twice (no operator counts
  rows, and a hash-based distinct per operator cost more than it saved); a window's BGP matches
  (where items of equal content meet) and the query's result are made distinct;
* compatible pairs (``pairs``) come from a sort of the right side's join keys and two binary
  searches per left key, expanded with ``repeat`` (a join key of several variables is hashed to
  one int64, then the pairs are checked column by column, so a hash collision costs nothing but
  the check);
* a negation's free runs (``free_runs``) are one compiled pass (numba) over the blockers sorted by
  row and start — the sweep of ``cep.engines.driver.rows._free_runs``, for every row at once;
* windows of point events (t1 = t2, the common case) are closed forms per column; an interval
  event's growing/shrinking lifetimes come from ``cep.engines.driver.rows``'s generators, row by row.

Rarely met inputs take ``cep.engines.driver.rows``'s exact code instead of a columnar one: an unbound shared
variable in a join key (a pair is then compatible with any value: ``cep.engines.driver.rows._pairs``), and a
term whose id happens to be ``NULL`` (the whole evaluation then runs in ``cep.engines.driver.rows``).

The walk of the algebra is ``cep.engines.driver.walk``'s, shared with ``cep.engines.driver.rows``:
this module is the operator set it calls (``cep.engines.driver.walk.DriverOperators``), and it
narrows (``narrow``: a JOIN with the static side filters the other side's window matches).

``tests/test_cep_local.py`` runs this module and ``cep.engines.driver.rows`` against the reference evaluator at
every instant; ``tests/test_cep_columnar.py`` compares the two on larger random relations.
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass

import numba
import numpy as np

from cep import algebra as A
from cep.engines.driver import rows as L
from cep.algebra import windows as W
from cep.engines.columns import var_column
from cep.algebra.timeline import OPEN_END
from rdfcore.hashing import term_id
from cep.engines.driver.walk import supports, walk

__all__ = ["NULL", "Table", "first_instants", "mix", "pairs", "join", "seq", "union", "seq_wo", "no_head", "no_tail",
           "left_join", "window", "evaluate", "background_tables", "supports", "holds", "filter_rel", "keeper", "narrow", "bgp_in_window"]

#: an unbound variable (a term whose id is this one sends the evaluation to ``cep.engines.driver.rows``)
NULL = np.iinfo(np.int64).min
_T1, _T2, _A, _B = -4, -3, -2, -1
_GAPS = ("\0gap_start", "\0gap_end")


@dataclass(frozen=True, eq=False)
class Table:
    """Mappings with intervals and lifetimes: ``vars`` and ``data``, an int64 matrix of rows
    ``(*values, t1, t2, a, b)`` (``of`` keeps one of each)."""

    vars: tuple[str, ...]
    data: np.ndarray

    @staticmethod
    def of(vars_, data: np.ndarray, distinct: bool = False) -> "Table":
        data = np.asarray(data, dtype=np.int64).reshape(-1, len(vars_) + 4)
        return Table(tuple(vars_), data if distinct else _distinct(data))

    @staticmethod
    def from_rel(rel: L.Rel) -> "Table":
        rows = [tuple(NULL if v is None else v for v in r) for r in rel.rows]
        return Table.of(rel.vars, np.array(rows, dtype=np.int64).reshape(-1, len(rel.vars) + 4), distinct=True)

    @property
    def rows(self) -> frozenset:
        """The rows as ``cep.engines.driver.rows`` has them: tuples, None for unbound."""
        k = len(self.vars)
        out = set()
        for r in self.data.tolist():
            out.add(tuple(None if v == NULL else v for v in r[:k]) + tuple(r[k:]))
        return frozenset(out)

    def to_rel(self) -> L.Rel:
        return L.Rel(self.vars, self.rows)

    def column(self, var: str) -> np.ndarray:
        return self.data[:, self.vars.index(var)]

    def __len__(self) -> int:
        return len(self.data)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted (``np.unique``'s result; numpy 2.4's ``np.unique`` without
    ``return_index`` hashes, ~10x slower than this sort on a million longs)."""
    values = np.sort(values, kind="stable")
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if len(values) else values


def member(values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """``np.isin(values, members)`` for sorted distinct ``members``: a binary search per value
    (a few times faster than ``np.isin`` when ``members`` is the small side)."""
    if not len(members):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(members, values), len(members) - 1)
    return members[at] == values


def _distinct(data: np.ndarray) -> np.ndarray:
    """The distinct rows (first occurrences, in order): grouped by a hash of the row, each row
    checked against its group's first; on a collision, by the rows' bytes."""
    if len(data) <= 1:
        return data
    _, first, group = np.unique(mix(data), return_index=True, return_inverse=True)
    if not (data[first[group.ravel()]] == data).all():
        data = np.ascontiguousarray(data)
        _, first = np.unique(data.view(np.dtype((np.void, data.dtype.itemsize * data.shape[1]))).ravel(),
                             return_index=True)
    return data[np.sort(first)]


def first_instants(table: Table, lo: int, hi: int) -> dict:
    """{answer key: the first instant in [lo, hi] at which it is alive} over the rows of
    ``table`` alive somewhere in [lo, hi]; a key is the row without its lifetime (values, None for
    unbound, then t1, t2), as ``cep.engines.driver.rows``'s rows give it."""
    data = table.data[(table.data[:, _B] >= lo) & (table.data[:, _A] <= hi)]
    if not len(data):
        return {}
    first = np.maximum(data[:, _A], lo)
    keys = data[:, :_A]
    h = mix(keys)
    order = np.lexsort((first, h))
    h = h[order]
    starts = np.flatnonzero(np.concatenate(([True], h[1:] != h[:-1])))
    heads = order[starts]
    group = np.cumsum(np.concatenate(([True], h[1:] != h[:-1]))) - 1
    if not (keys[heads[group]] == keys[order]).all():      # rows that only hash alike
        out: dict = {}
        for row, at in zip(map(tuple, keys.tolist()), first.tolist()):
            out[row] = min(at, out.get(row, at))
        return {tuple(None if v == NULL else v for v in k[:-2]) + k[-2:]: at for k, at in out.items()}
    k = keys.shape[1] - 2
    return {tuple(None if v == NULL else v for v in row[:k]) + tuple(row[k:]): at
            for row, at in zip(keys[heads].tolist(), first[heads].tolist())}


def mix(keys: np.ndarray) -> np.ndarray:
    """One int64 per row of a key matrix (several columns): equal rows, equal hashes."""
    h = np.full(len(keys), 0x9E3779B97F4A7C15, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in range(keys.shape[1]):
            h ^= keys[:, c].view(np.uint64)
            h *= np.uint64(0xFF51AFD7ED558CCD)
            h ^= h >> np.uint64(33)
    return h.view(np.int64)


def _match(lkeys: np.ndarray, rkeys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (i, j) with ``lkeys[i] == rkeys[j]`` (rows of bound key columns)."""
    nl, nr = len(lkeys), len(rkeys)
    if lkeys.shape[1] == 0:
        return np.repeat(np.arange(nl), nr), np.tile(np.arange(nr), nl)
    lh = lkeys[:, 0] if lkeys.shape[1] == 1 else mix(lkeys)
    rh = rkeys[:, 0] if rkeys.shape[1] == 1 else mix(rkeys)
    order = np.argsort(rh, kind="stable")
    ordered = rh[order]
    lo = np.searchsorted(ordered, lh, "left")
    counts = np.searchsorted(ordered, lh, "right") - lo
    li = np.repeat(np.arange(nl), counts)
    skip = np.repeat(np.cumsum(counts) - counts - lo, counts)
    ri = order[np.arange(len(li)) - skip]
    if lkeys.shape[1] > 1:
        same = (lkeys[li] == rkeys[ri]).all(axis=1)
        li, ri = li[same], ri[same]
    return li, ri


def pairs(left: Table, right: Table) -> tuple[np.ndarray, np.ndarray]:
    """The row indices of every compatible (left, right) pair (equal where both bind)."""
    shared = [v for v in left.vars if v in right.vars]
    lkeys = left.data[:, [left.vars.index(v) for v in shared]]
    rkeys = right.data[:, [right.vars.index(v) for v in shared]]
    if shared and ((lkeys == NULL).any() or (rkeys == NULL).any()):
        return _pairs_unbound(lkeys, rkeys)
    return _match(lkeys, rkeys)


def _pairs_unbound(lkeys: np.ndarray, rkeys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pairs`` when a key is unbound somewhere: ``cep.engines.driver.rows._pairs`` over the key rows."""
    index: dict = {}
    wild = []
    rlist = rkeys.tolist()
    for j, key in enumerate(rlist):
        (wild.append(j) if NULL in key else index.setdefault(tuple(key), []).append(j))
    li, ri = [], []
    for i, key in enumerate(lkeys.tolist()):
        if NULL in key:
            found = [j for j, other in enumerate(rlist)
                     if all(a == NULL or b == NULL or a == b for a, b in zip(key, other))]
        else:
            found = index.get(tuple(key), []) + [j for j in wild
                                                 if all(b == NULL or a == b for a, b in zip(key, rlist[j]))]
        li.extend([i] * len(found))
        ri.extend(found)
    return np.array(li, dtype=np.int64), np.array(ri, dtype=np.int64)


def _merged(left: Table, right: Table, li, ri) -> tuple[tuple[str, ...], list[np.ndarray]]:
    """The output variables of pairs and their columns (a side's bound value, else the other's)."""
    out = tuple(sorted(set(left.vars) | set(right.vars)))
    columns = []
    for v in out:
        a = left.data[li, left.vars.index(v)] if v in left.vars else None
        b = right.data[ri, right.vars.index(v)] if v in right.vars else None
        columns.append(b if a is None else a if b is None else np.where(a != NULL, a, b))
    return out, columns


def _stack(vars_, columns) -> Table:
    """A table of ``vars_`` from its columns (values, then t1, t2, a, b)."""
    data = np.empty((len(columns[-1]), len(columns)), np.int64)
    for k, column in enumerate(columns):
        data[:, k] = column
    return Table(tuple(vars_), data)


def _alive(left: Table, right: Table, li, ri):
    """The pairs alive together: their indices and [lo, hi], where both rows are alive."""
    lo = np.maximum(left.data[li, _A], right.data[ri, _A])
    hi = np.minimum(left.data[li, _B], right.data[ri, _B])
    keep = lo <= hi
    return li[keep], ri[keep], lo[keep], hi[keep]


def _overlapping(left: Table, right: Table):
    """JOIN's pairs: compatible, alive together, intervals intersecting; with the intersection."""
    li, ri, lo, hi = _alive(left, right, *pairs(left, right))
    start = np.maximum(left.data[li, _T1], right.data[ri, _T1])
    end = np.minimum(left.data[li, _T2], right.data[ri, _T2])
    keep = start <= end
    return li[keep], ri[keep], start[keep], end[keep], lo[keep], hi[keep]


def join(left: Table, right: Table) -> Table:
    """JOIN: the intersection of the intervals, where both rows are alive."""
    li, ri, start, end, lo, hi = _overlapping(left, right)
    out, columns = _merged(left, right, li, ri)
    return _stack(out, [*columns, start, end, lo, hi])


def _ordered(left: Table, right: Table):
    """SEQ's pairs: compatible, the left ended before the right started, alive together."""
    li, ri = pairs(left, right)
    before = left.data[li, _T2] < right.data[ri, _T1]
    return _alive(left, right, li[before], ri[before])


def seq(left: Table, right: Table) -> Table:
    """SEQ: the left ends before the right starts; interval [t1, t4]."""
    li, ri, lo, hi = _ordered(left, right)
    out, columns = _merged(left, right, li, ri)
    return _stack(out, [*columns, left.data[li, _T1], right.data[ri, _T2], lo, hi])


def _widen(table: Table, out) -> np.ndarray:
    n = len(table.data)
    columns = [table.column(v) if v in table.vars else np.full(n, NULL, np.int64) for v in out]
    return _stack(out, [*columns, *(table.data[:, k] for k in (_T1, _T2, _A, _B))]).data


def union(left: Table, right: Table) -> Table:
    """OR: the rows of both, a variable of one side unbound in the other's rows."""
    out = tuple(sorted(set(left.vars) | set(right.vars)))
    return Table(out, np.concatenate([_widen(left, out), _widen(right, out)]))


@numba.njit(nogil=True, cache=True)
def free_runs(a, b, rows, xs, ys):   # pragma: no cover - compiled; run through subtract
    """For each row i, the maximal runs of [a[i], b[i]] no block covers; blocks ``(rows, xs, ys)``
    sorted by row then start, clipped to their row's [a, b]. Returns (row, lo, hi) arrays."""
    cap = len(a) + len(rows)
    out_row = np.empty(cap, np.int64)
    out_lo = np.empty(cap, np.int64)
    out_hi = np.empty(cap, np.int64)
    k = 0
    j = 0
    for i in range(len(a)):
        at, end = a[i], b[i]
        covered = False
        while j < len(rows) and rows[j] == i:
            if not covered and ys[j] >= at:
                if xs[j] > at:
                    out_row[k], out_lo[k], out_hi[k] = i, at, xs[j] - 1
                    k += 1
                if ys[j] >= end:
                    covered = True
                else:
                    at = ys[j] + 1 if ys[j] + 1 > at else at
            j += 1
        if not covered:
            out_row[k], out_lo[k], out_hi[k] = i, at, end
            k += 1
    return out_row[:k], out_lo[:k], out_hi[:k]


def subtract(data: np.ndarray, rows: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Each row of ``data`` (lifetime [a, b] last) at the instants of its lifetime that no block
    ``[xs, ys]`` of its own (``rows``: the row each block is for) covers, one row per free run."""
    a, b = data[:, _A], data[:, _B]
    ra, rb = a[rows], b[rows]
    inside = (xs <= rb) & (ys >= ra) & (xs <= ys)
    rows, xs, ys = rows[inside], np.maximum(xs[inside], ra[inside]), np.minimum(ys[inside], rb[inside])
    order = np.lexsort((xs, rows))
    at, lo, hi = free_runs(np.ascontiguousarray(a), np.ascontiguousarray(b), rows[order], xs[order], ys[order])
    return np.column_stack([data[at, :_A], lo, hi]) if len(at) else data[:0]


def no_head(negated: Table, right: Table) -> Table:
    """NO_HEAD(Ω1, Ω2): an Ω2 row where no compatible Ω1 row that ended before it started is alive."""
    ri, ni = pairs(right, negated)
    before = negated.data[ni, _T2] < right.data[ri, _T1]
    ri, ni = ri[before], ni[before]
    return Table(right.vars, subtract(right.data, ri, negated.data[ni, _A], negated.data[ni, _B]))


def no_tail(left: Table, negated: Table, t=None) -> Table:
    """NO_TAIL(Ω1, Ω2, t): an Ω1 row where no compatible later Ω2 row has ended by t (a blocker
    blocks from max(its lifetime's start, its end t4)). ``t`` is not used (every instant at once)."""
    li, ni = pairs(left, negated)
    later = left.data[li, _T2] < negated.data[ni, _T1]
    li, ni = li[later], ni[later]
    return Table(left.vars, subtract(left.data, li, np.maximum(negated.data[ni, _A], negated.data[ni, _T2]),
                                     negated.data[ni, _B]))


def seq_wo(left: Table, negated: Table, right: Table) -> Table:
    """SEQ_WO(Ω1, Ω2, Ω3): Ω1-then-Ω3 pairs where no compatible Ω2 row within [t2, t5] is alive
    (each gap [t2, t5] a row comes from is its own candidate, as in ``cep.engines.driver.rows.seq_wo``)."""
    li, ri, lo, hi = _ordered(left, right)
    out, columns = _merged(left, right, li, ri)
    candidates = _stack(out + _GAPS, [*columns, left.data[li, _T2], right.data[ri, _T1],
                                      left.data[li, _T1], right.data[ri, _T2], lo, hi])
    ci, ni = pairs(candidates, negated)
    k = len(out)
    within = (negated.data[ni, _T1] >= candidates.data[ci, k]) & (negated.data[ni, _T2] <= candidates.data[ci, k + 1])
    ci, ni = ci[within], ni[within]
    free = subtract(candidates.data, ci, negated.data[ni, _A], negated.data[ni, _B])
    return Table(out, np.delete(free, [k, k + 1], axis=1))


def left_join(left: Table, right: Table, keep=None) -> Table:
    """OPTIONAL: the JOIN pairs (those ``keep`` keeps, a row mask: the condition), and each left
    row where no such pair is alive."""
    li, ri, start, end, lo, hi = _overlapping(left, right)
    out, columns = _merged(left, right, li, ri)
    joined = _stack(out, [*columns, start, end, lo, hi])
    if keep is not None:
        kept = keep(joined)
        joined, li, lo, hi = Table(joined.vars, joined.data[kept]), li[kept], lo[kept], hi[kept]
    return union(joined, Table(left.vars, subtract(left.data, li, lo, hi)))


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a key matrix: (index of each one's first row, each row's group)."""
    _, first, group = np.unique(mix(keys), return_index=True, return_inverse=True)
    group = group.ravel()
    if not (keys[first[group]] == keys).all():      # rows that only hash alike: by their bytes
        keys = np.ascontiguousarray(keys)
        _, first, group = np.unique(keys.view(np.dtype((np.void, keys.dtype.itemsize * keys.shape[1]))).ravel(),
                                    return_index=True, return_inverse=True)
        group = group.ravel()
    return first, group


def holds(table: Table, condition, terms, time_unit: str) -> np.ndarray:
    """The rows of ``table`` for whose mapping and interval ``condition`` holds (a mask):
    ``cep.engines.driver.rows.condition_holds`` once per distinct combination of what it reads."""
    at, interval = L.condition_keys(condition, table.vars)
    data = table.data
    if not len(data):
        return np.zeros(0, dtype=bool)
    n = len(table.vars)
    keys = data[:, at + ([n, n + 1] if interval else [])]
    if keys.shape[1] == 0:
        first, group = np.zeros(1, np.int64), np.zeros(len(data), np.int64)
    else:
        first, group = _groups(keys)
    reps = [tuple(None if v == NULL else v for v in row[:len(at)]) + (tuple(row[len(at):]) if interval else (0, 0))
            for row in keys[first].tolist()]
    ok = np.array(L.condition_holds(condition, [table.vars[i] for i in at], reps, terms, time_unit), dtype=bool)
    return ok[group]


def filter_rel(table: Table, condition, terms, time_unit: str) -> Table:
    """FILTER: the rows for whose mapping and interval ``condition`` holds (``holds``)."""
    return Table(table.vars, table.data[holds(table, condition, terms, time_unit)])


def keeper(condition, terms, time_unit: str):
    """OPTIONAL's condition as ``left_join`` reads it: a row mask of the pairs (``holds``)."""
    return lambda table: holds(table, condition, terms, time_unit)


def extend(table: Table, var: A.Var, expr, known: dict, time_unit: str) -> Table:
    """BIND: ``cep.engines.driver.rows.extend``, row by row (the expression is evaluated on terms)."""
    return Table.from_rel(L.extend(table.to_rel(), var, expr, known, time_unit))


# --- windows (§4.1): an item's lifetimes, as cep.engines.driver.rows.window -------------------------------------

def _rows(generated) -> np.ndarray:
    return np.array(list(generated), dtype=np.int64).reshape(-1, 8)


def window(stream: np.ndarray, spec, t=None, time_unit: str = "ms") -> np.ndarray:
    """The lifetimes of a stream's triples (rows ``(item, s, p, o, t1, t2)``) in window ``spec``:
    rows ``(item, s, p, o, t1, t2, a, b)`` (``cep.engines.driver.rows.window``); ``t`` is not used."""
    return W.apply_window(spec, time_unit, _WINDOWS, np.asarray(stream, dtype=np.int64).reshape(-1, 6))


def _sliding(stream: np.ndarray, size: int) -> np.ndarray:
    """RANGE ``size`` (NOW: 0): a point event's lifetime in closed form, per column; an interval
    event's, tick by tick (``cep.engines.driver.rows.range_lives``)."""
    spans = stream[:, 5] > stream[:, 4]
    any_spans = spans.any()
    point = stream[~spans] if any_spans else stream
    lives = np.empty((len(point), 8), np.int64)     # (one copy: column_stack made three)
    lives[:, :6] = point
    lives[:, 6] = point[:, 5]
    np.add(point[:, 4], size, out=lives[:, 7])
    if not any_spans:
        return lives
    return np.concatenate([lives, _rows(L.range_lives(map(tuple, stream[spans].tolist()), size))])


def _step(stream: np.ndarray, size: int, step: int) -> np.ndarray:
    point = stream[stream[:, 4] == stream[:, 5]]
    t = point[:, 4]
    c1, c2 = t + (-t) % step, (t + size) - (t + size) % step
    closes = c1 <= c2
    parts = [np.column_stack([point[closes], c1[closes], c2[closes] + step - 1])]
    spans = stream[stream[:, 5] > stream[:, 4]]
    if len(spans):
        parts.append(_rows(L.step_lives(map(tuple, spans.tolist()), size, step)))
    return np.concatenate(parts)


def _triples(stream: np.ndarray, n: int) -> np.ndarray:
    ordered = stream[np.lexsort((stream[:, 3], stream[:, 2], stream[:, 1], stream[:, 0], stream[:, 5], stream[:, 4]))]
    t1, t2 = ordered[:, 4], ordered[:, 5]
    last = np.full(len(ordered), OPEN_END, np.int64)
    last[:max(len(ordered) - n, 0)] = t1[n:] - 1
    top = np.maximum(t1, t2)
    keep = top <= last
    parts = [np.column_stack([ordered[keep], top[keep], last[keep]])]
    grows = np.nonzero(t2 > t1)[0]
    if len(grows):
        parts.append(_rows((*ordered[i, :4].tolist(), t1[i], t, t, t)
                           for i in grows.tolist() for t in range(int(t1[i]), min(int(t2[i]) - 1, int(last[i])) + 1)))
    return np.concatenate(parts)


def _landmark(stream: np.ndarray) -> np.ndarray:
    """ALL: TRIPLES n with n past the last triple (no triple ever leaves)."""
    return _triples(stream, len(stream))


_WINDOWS = W.WindowFunctions(sliding=_sliding, stepped=_step, count=_triples, landmark=_landmark)


# --- a window's BGP (eq. 16), and the query (cep.engines.driver.walk walks it) ---------------------

def bgp_in_window(node: A.BGP, content: np.ndarray, allowed: Mapping) -> Table:
    """eq. 16: the triple patterns matched inside one item, alive where all their triples are;
    only the matches whose values are ``allowed`` (``narrow``)."""
    if not node.patterns:
        return Table.of((), content[:, 4:8])
    acc, acc_vars = None, ()          # columns: item, t1, t2, *acc_vars, a, b
    for tp in node.patterns:
        mask = np.ones(len(content), dtype=bool)
        names: dict[str, int] = {}
        for i, part in enumerate((tp.s, tp.p, tp.o)):
            if not isinstance(part, A.Var):
                mask &= content[:, 1 + i] == term_id(part)
            elif part.name in names:
                mask &= content[:, 1 + i] == content[:, 1 + names[part.name]]
            else:
                names[part.name] = i
        vars_ = tuple(sorted(names))
        hit = content[mask]
        for name, i in names.items():
            if var_column(name) in allowed:
                hit = hit[member(hit[:, 1 + i], allowed[var_column(name)])]
        matches = np.column_stack([hit[:, [0, 4, 5]], hit[:, [1 + names[v] for v in vars_]], hit[:, 6:8]])
        if acc is None:
            acc, acc_vars = matches, vars_
            continue
        shared = [v for v in vars_ if v in acc_vars]
        ai = [0, 1, 2] + [3 + acc_vars.index(v) for v in shared]
        bi = [0, 1, 2] + [3 + vars_.index(v) for v in shared]
        li, ri = _match(acc[:, ai], matches[:, bi])
        l, r = acc[li], matches[ri]
        lo, hi = np.maximum(l[:, -2], r[:, -2]), np.minimum(l[:, -1], r[:, -1])
        out_vars = tuple(sorted(set(acc_vars) | set(vars_)))
        values = [l[:, 3 + acc_vars.index(v)] if v in acc_vars else r[:, 3 + vars_.index(v)] for v in out_vars]
        alive = lo <= hi
        acc = np.column_stack([l[:, :3], *values, lo, hi])[alive].reshape(-1, len(out_vars) + 5)
        acc_vars = out_vars
    columns = [var_column(v) for v in acc_vars]
    order = sorted(range(len(columns)), key=lambda i: columns[i])
    data = acc[:, [3 + i for i in order] + [1, 2, len(acc_vars) + 3, len(acc_vars) + 4]]
    return Table.of(tuple(columns[i] for i in order), data)


def narrow(allowed: dict, static: Table) -> dict:
    """``allowed`` and, for each variable every row of ``static`` binds, the values it binds
    (sorted: ``bgp_in_window`` keeps the matches whose values are among them); a variable that a
    row of ``static`` leaves unbound (``NULL``, compatible with any value) narrows nothing."""
    out = dict(allowed)
    for i, v in enumerate(static.vars):
        column = static.data[:, i]
        if (column == NULL).any():
            continue
        values = sorted_unique(column)
        out[v] = np.intersect1d(out[v], values, assume_unique=True) if v in out else values
    return out


def background_tables(rels: Mapping) -> dict:
    """Background relations (``cep.engines.driver.rows.Rel``) as :func:`evaluate` takes them best,
    converted once: each as a ``Table``, except one holding a term whose id is ``NULL`` (kept a
    ``Rel``, so that the evaluation takes ``cep.engines.driver.rows``' exact code)."""
    return {node: rel if any(v == NULL for r in rel.rows for v in r[:-4]) else Table.from_rel(rel)
            for node, rel in rels.items()}


def _has_null(streams: Mapping[str, np.ndarray], background: Mapping) -> bool:
    if any((np.asarray(s).reshape(-1, 6)[:, 1:4] == NULL).any() for s in streams.values()):
        return True
    return any(not isinstance(rel, Table) and any(v == NULL for r in rel.rows for v in r[:-4])
               for rel in background.values())


def evaluate(query: A.Query, streams: Mapping[str, np.ndarray], background: Mapping, time_unit: str,
             fresh: dict | None = None, windows: dict | None = None, terms=None,
             known: dict | None = None) -> Table | L.Rel:
    """``cep.engines.driver.rows.evaluate`` over columns: ``streams`` {stream IRI: int64 rows ``(item, s, p, o,
    t1, t2)``}; ``background`` {``A.Background`` node: its ``Table`` (or ``cep.engines.driver.rows.Rel``)}.
    A SELECT's rows come as a ``Table``; a CONSTRUCT's triples (a row at a time: each names its
    blank nodes), and every result of an input holding the id ``NULL``, as ``cep.engines.driver.rows``'s
    ``Rel``, where None and not ``NULL`` is unbound. Both have ``vars`` and ``rows``.
    ``windows``: a dict that keeps each (stream, window)'s lifetimes (``window``), computed once
    and left there for the caller. ``terms``: {id: term} of a set of ids, for FILTER and
    OPTIONAL conditions (``cep.engines.driver.rows``'s module doc); ``known``: as
    ``cep.engines.driver.rows.evaluate``'s."""
    if _has_null(streams, background) or not isinstance(query.form, A.Project):
        return L.answer_form(query.form, solutions(query, streams, background, time_unit, windows, terms, known), fresh)
    tables = {k: v if isinstance(v, Table) else Table.from_rel(v) for k, v in background.items()}
    omega = walk(sys.modules[__name__], query.form.inner, streams, tables, time_unit, terms, windows, known)
    names = tuple(var_column(v.name) for v in query.form.variables)
    n = len(omega.data)
    columns = [omega.column(c) if c in omega.vars else np.full(n, NULL, np.int64) for c in names]
    return Table.of(names, np.column_stack([*columns, omega.data[:, _T1:]]) if n else omega.data[:, :0])


def solutions(query: A.Query, streams: Mapping[str, np.ndarray], background: Mapping, time_unit: str,
              windows: dict | None = None, terms=None, known: dict | None = None) -> L.Rel:
    """The rows of ``query``'s pattern, before its form (what a CONSTRUCT template is applied to),
    as ``cep.engines.driver.rows.Rel``; the arguments are :func:`evaluate`'s."""
    if _has_null(streams, background):   # a term id equal to NULL: cep.engines.driver.rows's exact code
        rows = {k: [tuple(r) for r in np.asarray(v).reshape(-1, 6).tolist()] for k, v in streams.items()}
        rels = {k: v.to_rel() if isinstance(v, Table) else v for k, v in background.items()}
        return walk(L, query.form.inner, rows, rels, time_unit, terms, known=known)
    tables = {k: v if isinstance(v, Table) else Table.from_rel(v) for k, v in background.items()}
    return walk(sys.modules[__name__], query.form.inner, streams, tables, time_unit, terms, windows, known).to_rel()
