"""The lifetimes operators (``cep.engines.spark.lifetimes``) on the driver, over Python rows: the definition of
the continuous runtime's driver engine, which runs them over numpy columns (``cep.engines.driver.columnar``,
tested against this module and the reference).

A micro-batch of ``cep.continuous.runner`` evaluates the query over the items some window can still hold —
usually a few hundred or thousand rows. On Spark that costs a fixed handful of jobs (seconds on
2 cores) whatever the size; here it costs milliseconds. ``cep.continuous.runner`` uses this module when the
state and the static side are small enough and the query is supported (``supports``), and
Spark otherwise; both give the same rows (``tests/test_cep_local.py`` checks this module against
the reference evaluator at every instant, ``tests/test_cep_continuous.py`` runs both runtimes).

Same definitions as ``cep.engines.spark.lifetimes`` (read its module doc): a row is a mapping with an interval
[t1, t2] and a lifetime [a, b], the instants at which it is in ⟦node, t⟧; each operator is the
one-instant operator applied pointwise in t; a negation subtracts the lifetimes of the rows that
block a candidate. Only the data structures differ:

* a relation (``Rel``) is a tuple of variable names (sorted) and a set of rows
  ``(value per variable..., t1, t2, a, b)``; values are term ids (ints), ``None`` = unbound;
* JOIN/SEQ/negations hash the right side on the variables both sides bind (a row with an unbound
  shared variable is compared with every row: it is compatible with any value);
* a negation collects, per candidate, the blocking lifetimes clipped to its own and emits the
  free runs (sorted sweep) — the same runs ``cep.engines.spark.lifetimes._subtract`` builds with joins.

The static side (background patterns, eq. 17) is evaluated by Spark once per closure version and
handed in as relations (``background``); paths stay on Spark. A FILTER and an OPTIONAL's
condition keep a row (a pair) when the condition holds for its mapping and interval: that is
the one-instant FILTER applied at every instant of its lifetime, since the mapping and interval
do not change with the instant. Conditions are evaluated by the reference's expression code
(``cep.terms.values.eval_expr``) over the terms (``terms``: ids → N-Triples terms), once per
distinct combination of the values they read; a condition with EXISTS, timestamp() or NOW() is
left to Spark (``supports``).

EP-SPARQL's operators (``cover_join``, ``eq_join``, ``optional_join``; §4.2, as
``cep.engines.spark.intervals``) and BIND (``extend``) are here too, defined alike, pointwise in t:
``cep.engines.driver.epsparql`` evaluates them at one instant at a time, every row alive at it.

The walk of the algebra is ``cep.engines.driver.walk``'s, shared with ``cep.engines.driver.columnar``:
this module is the operator set it calls (``cep.engines.driver.walk.DriverOperators``), which
does not narrow (``narrow``).
"""
from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from cep import algebra as A
from cep.algebra import windows as W
from cep.engines.columns import column_var, var_column
from cep.terms.aggregates import aggregate_value
from cep.terms.values import ebv, eval_expr, fresh_blank_of_ids, term_value
from cep.algebra.timeline import OPEN_END
from rdfcore.hashing import term_id
from cep.engines.driver.walk import supports, walk

__all__ = ["Rel", "Item", "supports", "evaluate", "answer_form", "form_at", "window", "join", "union", "seq", "seq_wo",
           "no_head", "no_tail", "left_join", "cover_join", "eq_join", "optional_join", "extend", "aggregate",
           "group_cover", "filter_rel", "keeper", "narrow", "bgp_in_window", "alive_at", "minus"]

#: a stream triple: (item, s, p, o, t1, t2), ids
Item = tuple


@dataclass(frozen=True)
class Rel:
    """Mappings with intervals and lifetimes: ``vars`` (variable column names, sorted) and rows
    ``(*values, t1, t2, a, b)``."""

    vars: tuple[str, ...]
    rows: frozenset

    @staticmethod
    def of(vars_: Iterable[str], rows: Iterable[tuple]) -> "Rel":
        vars_ = tuple(vars_)
        order = sorted(range(len(vars_)), key=lambda i: vars_[i])
        if order == list(range(len(vars_))):
            return Rel(vars_, frozenset(rows))
        n = len(vars_)
        return Rel(tuple(vars_[i] for i in order),
                   frozenset(tuple(r[i] for i in order) + tuple(r[n:]) for r in rows))


# --- the shared machinery ------------------------------------------------------------------------

def _plan_merge(left: Rel, right: Rel):
    """The output variables of a pair, and how to read each from (left row, right row)."""
    out = tuple(sorted(set(left.vars) | set(right.vars)))
    li = {v: i for i, v in enumerate(left.vars)}
    ri = {v: i for i, v in enumerate(right.vars)}
    shared = [v for v in left.vars if v in ri]
    return out, li, ri, shared


def _merged(out, li, ri, lrow, rrow) -> tuple:
    values = []
    for v in out:
        a = lrow[li[v]] if v in li else None
        values.append(a if a is not None else (rrow[ri[v]] if v in ri else None))
    return tuple(values)


def _pairs(left: Rel, right: Rel):
    """Every (left row, right row) whose mappings are compatible (equal where both bind)."""
    out, li, ri, shared = _plan_merge(left, right)
    lidx = [li[v] for v in shared]
    ridx = [ri[v] for v in shared]
    index: dict = defaultdict(list)
    wild = []
    for r in right.rows:
        key = tuple(r[i] for i in ridx)
        (wild if None in key else index[key]).append(r)
    for l in left.rows:
        key = tuple(l[i] for i in lidx)
        if None in key:
            candidates = [r for r in right.rows if all(a is None or b is None or a == b
                                                       for a, b in zip(key, (r[i] for i in ridx)))]
        else:
            candidates = index.get(key, [])
            if wild:
                candidates = candidates + [r for r in wild if all(b is None or a == b
                                                                  for a, b in zip(key, (r[i] for i in ridx)))]
        for r in candidates:
            yield l, r
    return


def _alive_both(l, r):
    return max(l[-2], r[-2]), min(l[-1], r[-1])


def _combined(left: Rel, right: Rel, interval) -> tuple[tuple, list]:
    """The compatible pairs alive together whose intervals ``interval(l, r)`` combines ((start, end),
    or None: no pair): (output variables, [(left row, merged row with that interval and the
    lifetime both are alive in)])."""
    out, li, ri, _ = _plan_merge(left, right)
    found = []
    for l, r in _pairs(left, right):
        lo, hi = _alive_both(l, r)
        span = interval(l, r) if lo <= hi else None
        if span is not None:
            found.append((l, _merged(out, li, ri, l, r) + span + (lo, hi)))
    return out, found


def _paired(left: Rel, right: Rel, interval) -> Rel:
    out, found = _combined(left, right, interval)
    return Rel(out, frozenset(row for _l, row in found))


def _intersection(l, r):
    start, end = max(l[-4], r[-4]), min(l[-3], r[-3])
    return (start, end) if start <= end else None


def _cover(l, r):
    return min(l[-4], r[-4]), max(l[-3], r[-3])


def join(left: Rel, right: Rel) -> Rel:
    """JOIN: the intersection of the intervals, where both rows are alive."""
    return _paired(left, right, _intersection)


def minus(left: Rel, right: Rel) -> Rel:
    """MINUS (SPARQL 1.1 §18.5, ``A.Minus``): the rows of ``left`` with no row of ``right`` that is
    compatible with it, binds a variable it binds too, and whose interval intersects its own.
    For rows alive at every instant (the static side, ``cep.engines.driver.static``): a row's
    lifetime is not narrowed."""
    _out, li, ri, shared = _plan_merge(left, right)
    dropped = {l for l, r in _pairs(left, right)
               if any(l[li[v]] is not None and r[ri[v]] is not None for v in shared) and _intersection(l, r)}
    return Rel(left.vars, left.rows - dropped)


def seq(left: Rel, right: Rel) -> Rel:
    """SEQ: the left ends before the right starts; interval [t1, t4]."""
    return _paired(left, right, lambda l, r: (l[-4], r[-3]) if l[-3] < r[-4] else None)


def cover_join(left: Rel, right: Rel) -> Rel:
    """EP-SPARQL's Join: every compatible pair, over the interval covering both."""
    return _paired(left, right, _cover)


def eq_join(left: Rel, right: Rel) -> Rel:
    """EP-SPARQL's EqJoin (EQUALS): the compatible pairs with equal intervals."""
    return _paired(left, right, lambda l, r: (l[-4], l[-3]) if (l[-4], l[-3]) == (r[-4], r[-3]) else None)


def union(left: Rel, right: Rel) -> Rel:
    """OR: the rows of both, a variable of one side unbound in the other's rows."""
    out = tuple(sorted(set(left.vars) | set(right.vars)))

    def widen(rel: Rel):
        idx = {v: i for i, v in enumerate(rel.vars)}
        for r in rel.rows:
            yield tuple(r[idx[v]] if v in idx else None for v in out) + r[-4:]

    return Rel(out, frozenset(set(widen(left)) | set(widen(right))))


def _free_runs(a: int, b: int, blocks: list[tuple[int, int]]):
    """The maximal runs of [a, b] that no block [x, y] covers."""
    at = a
    for x, y in sorted(blocks):
        if y < at:
            continue
        if x > at:
            yield at, min(x - 1, b)
        at = max(at, y + 1)
        if at > b:
            return
    if at <= b:
        yield at, b


def _subtract(rows: Iterable[tuple], blocks_of) -> set:
    """Each row at the instants of its lifetime no blocker covers (``blocks_of(row)``: the
    [from, to] lifetimes of its blockers), one row per free run."""
    out = set()
    for row in rows:
        a, b = row[-2], row[-1]
        blocks = [(max(x, a), min(y, b)) for x, y in blocks_of(row) if x <= b and y >= a and x <= y]
        for lo, hi in _free_runs(a, b, blocks):
            out.add(row[:-2] + (lo, hi))
    return out


def _blockers(rows: Rel, negated: Rel):
    """{row: [negated rows compatible with it]}."""
    found: dict = defaultdict(list)
    for r, n in _pairs(rows, negated):
        found[r].append(n)
    return found


def no_head(negated: Rel, right: Rel) -> Rel:
    """NO_HEAD(Ω1, Ω2): an Ω2 row where no compatible Ω1 row that ended before it started is alive."""
    found = _blockers(right, negated)
    return Rel(right.vars, frozenset(_subtract(
        right.rows, lambda r: [(n[-2], n[-1]) for n in found.get(r, ()) if n[-3] < r[-4]])))


def no_tail(left: Rel, negated: Rel, t=None) -> Rel:
    """NO_TAIL(Ω1, Ω2, t): an Ω1 row where no compatible later Ω2 row has ended by t (a blocker
    blocks from max(its lifetime's start, its end t4)). ``t`` is not used (every instant at once)."""
    found = _blockers(left, negated)
    return Rel(left.vars, frozenset(_subtract(
        left.rows, lambda r: [(max(n[-2], n[-3]), n[-1]) for n in found.get(r, ()) if r[-3] < n[-4]])))


def seq_wo(left: Rel, negated: Rel, right: Rel) -> Rel:
    """SEQ_WO(Ω1, Ω2, Ω3): Ω1-then-Ω3 pairs where no compatible Ω2 row within [t2, t5] is alive."""
    out, li, ri, _ = _plan_merge(left, right)
    gaps: dict = {}
    for l, r in _pairs(left, right):
        lo, hi = _alive_both(l, r)
        if l[-3] < r[-4] and lo <= hi:
            row = _merged(out, li, ri, l, r) + (l[-4], r[-3], lo, hi)
            gaps.setdefault(row, set()).add((l[-3], r[-4]))
    # a row may come from pairs with different gaps [t2, t5]: each is its own candidate, as the
    # Spark plan keeps the gap columns until the subtraction
    candidates = Rel(out + ("\0gap_start", "\0gap_end"), frozenset(
        row[:-4] + (g2, g5) + row[-4:] for row, gs in gaps.items() for g2, g5 in gs))
    found = _blockers(candidates, negated)

    def blocks(r):
        g2, g5 = r[-6], r[-5]
        return [(n[-2], n[-1]) for n in found.get(r, ()) if n[-4] >= g2 and n[-3] <= g5]

    rows = {r[:-6] + r[-4:] for r in _subtract(candidates.rows, blocks)}
    return Rel(out, frozenset(rows))


def _optional(left: Rel, right: Rel, interval, keep) -> Rel:
    """The pairs ``interval`` combines (those ``keep`` keeps: the condition), and each left row
    where no such pair is alive."""
    out, found = _combined(left, right, interval)
    pairs = Rel(out, frozenset(row for _l, row in found))
    if keep is not None:
        pairs = keep(pairs)
    matched: dict = defaultdict(list)
    for l, row in found:
        if keep is None or row in pairs.rows:
            matched[l].append(row[-2:])
    unmatched = Rel(left.vars, frozenset(_subtract(left.rows, lambda r: matched.get(r, ()))))
    return union(pairs, unmatched)


def left_join(left: Rel, right: Rel, keep=None) -> Rel:
    """OPTIONAL: the JOIN pairs (those ``keep`` keeps: the condition), and each left row where no
    such pair is alive."""
    return _optional(left, right, _intersection, keep)


#: when an optional row (r) may join a mandatory one (l) in EP-SPARQL's optional joins
_OPTIONAL_ORDER = {
    "left": lambda l, r: r[-3] < l[-3],                               # LeftJoin: t'ω < tω
    "seq": lambda l, r: r[-3] < l[-4],                                # SeqRightJoin: the optional one first
    "equal": lambda l, r: (l[-4], l[-3]) == (r[-4], r[-3]),           # EqLeftJoin
}


def optional_join(mandatory: Rel, optional: Rel, order: str, keep=None) -> Rel:
    """EP-SPARQL's LeftJoin / SeqRightJoin / EqLeftJoin (``order`` "left" / "seq" / "equal"): the
    covered compatible pairs in that order (those ``keep`` keeps), and each mandatory row where
    no such pair is alive."""
    fits = _OPTIONAL_ORDER[order]
    return _optional(mandatory, optional, lambda l, r: _cover(l, r) if fits(l, r) else None, keep)


def extend(rel: Rel, var: A.Var, expr, known: dict, time_unit: str, interval: tuple | None = None) -> Rel:
    """BIND / SELECT (expr AS ?v): each row with the term ``expr`` gives for its mapping and
    interval (``interval``: the one every row reads instead, C-SPARQL's [c, c]), unbound on an
    error. ``known``: {id: term}, which decodes the values and receives the terms computed."""
    names = [column_var(v) for v in rel.vars]
    n = len(rel.vars)
    out = []
    for r in rel.rows:
        mu = {name: known[v] for name, v in zip(names, r) if v is not None}
        term = term_value(expr, mu, (r[-4], r[-3]) if interval is None else interval, time_unit)
        ident = None
        if term is not None:
            ident = term_id(term)
            known.setdefault(ident, term)
        out.append(r[:n] + (ident,) + r[n:])
    return Rel.of(list(rel.vars) + [var_column(var.name)], out)


def aggregate(rel: Rel, specs, known: dict, empty: bool = False) -> Rel:
    """[[P AGG A_1..A_n]] (C-SPARQL §3.1, ``A.Aggregate``; SPARQL's aggregates): each row extended
    with each spec's value over its group (an unbound group variable a value of its own), unbound
    where that is an error. ``empty``: ``rel`` is the one row standing for no solution (the
    implicit group of nothing): the aggregates of nothing. ``known``: {id: term}, which decodes
    the arguments and receives the terms computed."""
    where = {column_var(v): i for i, v in enumerate(rel.vars)}
    rows = list(rel.rows)
    columns = []
    for spec in specs:
        keys = [where.get(v.name) for v in spec.group]
        argument = None if spec.argument is None else where.get(spec.argument.name)
        groups: dict = defaultdict(list)
        for r in rows:
            groups[tuple(None if k is None else r[k] for k in keys)].append(r)
        results = {}
        for key, members in groups.items():
            size = 0 if empty else len(members)
            if spec.argument is None:
                results[key] = aggregate_value(spec.function, False, None, size)
                continue
            values = [known[r[argument]] for r in members if argument is not None and r[argument] is not None]
            strict_error = spec.strict and not empty and len(values) < len(members)   # the argument expression failed
            results[key] = None if strict_error else aggregate_value(spec.function, spec.distinct, values, size)
        column = []
        for r in rows:
            term = results[tuple(None if k is None else r[k] for k in keys)]
            ident = None
            if term is not None:
                ident = term_id(term)
                known.setdefault(ident, term)
            column.append(ident)
        columns.append(column)
    n = len(rel.vars)
    out = [r[:n] + tuple(column[j] for column in columns) + r[n:] for j, r in enumerate(rows)]
    return Rel.of(list(rel.vars) + [var_column(spec.var.name) for spec in specs], out)


def group_cover(rel: Rel, group, specs, known: dict, t: int) -> Rel:
    """SPARQL's GROUP BY over mappings with intervals (``A.GroupCover``) at instant t, every row
    alive at it: one row per group of the rows on ``group`` (an unbound variable a value of its
    own), with the group's values, the aggregates ``specs`` (``aggregate``) and [min t1, max t2]
    of its members; over no row the implicit group (no ``group``) is one row of the aggregates of
    nothing over [t, t]. ``known``: as ``aggregate``'s."""
    empty = not rel.rows and not group
    if empty:
        rel = Rel((), frozenset({(t, t, t, t)}))
    extended = aggregate(rel, specs, known, empty) if specs else rel
    keep = sorted({var_column(v.name) for v in group} | {var_column(spec.var.name) for spec in specs})
    where = {c: i for i, c in enumerate(extended.vars)}
    covers: dict = {}
    for r in extended.rows:
        key = tuple(r[where[c]] if c in where else None for c in keep)
        lo, hi = covers.get(key, (r[-4], r[-3]))
        covers[key] = (min(lo, r[-4]), max(hi, r[-3]))
    return Rel(tuple(keep), frozenset(key + (lo, hi, t, t) for key, (lo, hi) in covers.items()))


def condition_keys(condition, vars_: tuple[str, ...]) -> tuple[list[int], bool]:
    """What a condition reads of a row of ``vars_``: the positions of its variables (all of them
    for RAND/UUID/STRUUID/BNODE, which draw from the whole solution, and for EXISTS, whose pattern
    reads what the solution binds) and whether the interval."""
    whole = any((isinstance(e, A.Builtin) and e.name in A.SOLUTION_BUILTINS) or isinstance(e, A.Exists)
                for e in A.subexpressions(condition))
    names = {v.name for v in A.expr_variables(condition)}
    at = [i for i, c in enumerate(vars_) if whole or column_var(c) in names]
    return at, whole or A.uses_interval(condition)


def condition_holds(condition, vars_: Iterable[str], keys: list[tuple], terms, time_unit: str,
                    exists=None) -> list[bool]:
    """Whether ``condition`` holds for each key ``(*values, t1, t2)`` (values: ids of ``vars_``,
    None unbound): the shared expression code over the terms (``terms``: ids → {id: term};
    ``exists``: EXISTS's test, ``cep.terms.values.eval_expr``'s)."""
    if terms is None:
        raise TypeError("a condition needs the terms of its values (terms=)")
    names = [column_var(c) for c in vars_]
    decoded = terms({v for k in keys for v in k[:-2] if v is not None}) if keys else {}
    out = []
    for k in keys:
        mu = {n: decoded[v] for n, v in zip(names, k[:-2]) if v is not None}
        out.append(ebv(eval_expr(condition, mu, (k[-2], k[-1]), time_unit, exists=exists)) is True)
    return out


def filter_rel(rel: Rel, condition, terms, time_unit: str, memo: dict | None = None, exists=None) -> Rel:
    """FILTER: the rows for whose mapping and interval ``condition`` holds (module doc). ``memo``:
    where the condition's values are kept for the next calls (a caller's dict for this
    condition; not for one that reads the instant, NOW()), each computed once. ``exists``:
    EXISTS's test (``cep.engines.driver.static.exists_test``; None: EXISTS is an error)."""
    at, interval = condition_keys(condition, rel.vars)
    keys = {}
    for r in rel.rows:
        keys.setdefault(tuple(r[i] for i in at) + ((r[-4], r[-3]) if interval else (0, 0)), []).append(r)
    read = [rel.vars[i] for i in at]
    known = {} if memo is None else memo.setdefault(tuple(read), {})
    new = [k for k in keys if k not in known]
    known.update(zip(new, condition_holds(condition, read, new, terms, time_unit, exists)))
    return Rel(rel.vars, frozenset(r for k, rows in keys.items() if known[k] for r in rows))


def keeper(condition, terms, time_unit: str, memo: dict | None = None, exists=None):
    """OPTIONAL's condition as ``left_join`` reads it: the pairs for which it holds (``memo``,
    ``exists``: as ``filter_rel``'s)."""
    return lambda rel: filter_rel(rel, condition, terms, time_unit, memo, exists)


def narrow(allowed: dict, static: Rel) -> dict:
    """``allowed`` as it is: this module, the definition, evaluates every row
    (``cep.engines.driver.walk``'s narrowing is ``cep.engines.driver.columnar``'s)."""
    return allowed


# --- windows (§4.1): an item's lifetimes, as cep.engines.spark.lifetimes.window -------------------------------

def range_lives(stream: Iterable[Item], T: int):
    for (item, s, p, o, t1, t2) in stream:
        if t2 - t1 <= T:
            yield (item, s, p, o, t1, t2, t2, t1 + T)
        if t2 > t1:
            for t in range(t1, t2):                       # growing: [max(t1, t−T), t]
                yield (item, s, p, o, max(t1, t - T), t, t, t)
            for t in range(max(t2, t1 + T + 1), t2 + T + 1):   # shrinking: [t−T, t2]
                yield (item, s, p, o, t - T, t2, t, t)


def _triples(stream: Iterable[Item], n: int):
    ordered = sorted(stream, key=lambda r: (r[4], r[5], r[0], r[1], r[2], r[3]))
    for i, (item, s, p, o, t1, t2) in enumerate(ordered):
        last = ordered[i + n][4] - 1 if i + n < len(ordered) else OPEN_END
        if max(t1, t2) <= last:
            yield (item, s, p, o, t1, t2, max(t1, t2), last)
        for t in range(t1, min(t2 - 1, last) + 1):
            yield (item, s, p, o, t1, t, t, t)


def step_lives(stream: Iterable[Item], T: int, step: int):
    for (item, s, p, o, t1, t2) in stream:
        if t1 == t2:
            c1, c2 = t1 + (-t1) % step, (t1 + T) - (t1 + T) % step
            if c1 <= c2:
                yield (item, s, p, o, t1, t2, c1, c2 + step - 1)
        else:
            first, last = t1 + (-t1) % step, (t2 + T) - (t2 + T) % step
            spans: dict = {}
            for c in range(first, last + 1, step):
                key = (max(t1, c - T), min(t2, c))
                lo, hi = spans.get(key, (c, c))
                spans[key] = (min(lo, c), max(hi, c))
            for (a, b), (lo, hi) in spans.items():
                yield (item, s, p, o, a, b, lo, hi + step - 1)


def _landmark(stream: Iterable[Item]):
    """ALL: TRIPLES n with n past the last triple (no triple ever leaves)."""
    rows = list(stream)
    return _triples(rows, len(rows))


_WINDOWS = W.WindowFunctions(sliding=range_lives, stepped=step_lives, count=_triples, landmark=_landmark)


def window(stream: Iterable[Item], spec, t=None, time_unit: str = "ms") -> list[tuple]:
    """The lifetimes of the triples of ``stream`` in window ``spec``: rows
    ``(item, s, p, o, t1, t2, a, b)`` (``cep.engines.spark.lifetimes.window``); ``t`` is not used
    (every instant at once)."""
    return list(W.apply_window(spec, time_unit, _WINDOWS, stream))


# --- a window's BGP (eq. 16), and the query (cep.engines.driver.walk walks it) ---------------------

def bgp_in_window(node: A.BGP, content: list[tuple], allowed: Mapping) -> Rel:
    """eq. 16: the triple patterns matched inside one item, alive where all their triples are
    (``allowed`` is empty: ``narrow``)."""
    if not node.patterns:
        return Rel((), frozenset((r[4], r[5], r[6], r[7]) for r in content))
    acc: dict | None = None   # (item, t1, t2, mapping) -> list of (a, b)
    acc_vars: tuple = ()
    for tp in node.patterns:
        consts = {i: term_id(part) for i, part in enumerate((tp.s, tp.p, tp.o)) if not isinstance(part, A.Var)}
        names: dict[str, int] = {}
        repeats = []
        for i, part in enumerate((tp.s, tp.p, tp.o)):
            if isinstance(part, A.Var):
                if part.name in names:
                    repeats.append((names[part.name], i))
                else:
                    names[part.name] = i
        vars_ = tuple(sorted(names))
        matches: dict = defaultdict(list)
        for (item, s, p, o, t1, t2, a, b) in content:
            spo = (s, p, o)
            if any(spo[i] != c for i, c in consts.items()) or any(spo[i] != spo[j] for i, j in repeats):
                continue
            matches[(item, t1, t2, tuple(spo[names[v]] for v in vars_))].append((a, b))
        if acc is None:
            acc, acc_vars = matches, vars_
            continue
        shared = [v for v in vars_ if v in acc_vars]
        out_vars = tuple(sorted(set(acc_vars) | set(vars_)))
        ai = {v: i for i, v in enumerate(acc_vars)}
        bi = {v: i for i, v in enumerate(vars_)}
        by_key: dict = defaultdict(list)
        for (item, t1, t2, values), lives in matches.items():
            by_key[(item, t1, t2, tuple(values[bi[v]] for v in shared))].append((values, lives))
        joined: dict = defaultdict(list)
        for (item, t1, t2, values), lives in acc.items():
            for other, other_lives in by_key.get((item, t1, t2, tuple(values[ai[v]] for v in shared)), ()):
                merged = tuple(values[ai[v]] if v in ai else other[bi[v]] for v in out_vars)
                for a, b in lives:
                    for c, d in other_lives:
                        if max(a, c) <= min(b, d):
                            joined[(item, t1, t2, merged)].append((max(a, c), min(b, d)))
        acc, acc_vars = joined, out_vars
    columns = tuple(var_column(v) for v in acc_vars)
    rows = {values + (t1, t2, a, b) for (item, t1, t2, values), lives in acc.items() for a, b in lives}
    return Rel.of(columns, rows)


def evaluate(query: A.Query, streams: Mapping[str, list[Item]], background: Mapping, time_unit: str,
             fresh: dict | None = None, terms=None, known: dict | None = None) -> Rel:
    """⟦Q, t⟧ at every instant: the query's result rows (projected variable columns in the
    query's order — not sorted — then t1, t2, a, b). ``streams``: {stream IRI: items as
    ``(item, s, p, o, t1, t2)`` ids}; ``background``: {``A.Background`` node: its ``Rel``}.
    ``fresh``: receives {id: term} of the blank nodes a CONSTRUCT template names per solution
    (``cep.terms.values.fresh_blank``: the solution's term ids and interval, as the other runtimes).
    ``terms``: {id: term} of a set of ids, for FILTER and OPTIONAL conditions (module doc);
    ``known``: {id: term} of every input id, receiving the terms a BIND computes
    (``cep.engines.driver.walk.walk``)."""
    omega = walk(sys.modules[__name__], query.form.inner, streams, background, time_unit, terms, known=known)
    return answer_form(query.form, omega, fresh)


def construct_triples(template, variables: tuple, rows, fresh: dict | None = None):
    """CONSTRUCT's template over solution ``rows`` (columns ``variables``, None unbound, then the
    interval and lifetime): ``(row, (s, p, o) ids)`` per template triple and row whose parts are
    all bound; a blank node is named per solution ⟨μ, [t1, t2]⟩ (``fresh`` receives {id: term})."""
    idx = {v: i for i, v in enumerate(variables)}
    names = {column_var(c): i for i, c in enumerate(variables)}
    for tp in template:
        picks = []
        for part in (tp.s, tp.p, tp.o):
            if isinstance(part, A.Var):
                picks.append(("v", idx.get(var_column(part.name))))
            elif isinstance(part, str) and part.startswith("_:"):
                picks.append(("b", part[2:]))
            else:
                picks.append(("c", term_id(part)))
        for r in rows:
            spo = []
            for k, x in picks:
                if k == "v":
                    spo.append(r[x] if x is not None else None)
                elif k == "c":
                    spo.append(x)
                else:      # a fresh blank node of this solution ⟨μ, [t1, t2]⟩
                    node = fresh_blank_of_ids(x, {n: r[i] for n, i in names.items()}, r[-4], r[-3])
                    spo.append(term_id(node))
                    if fresh is not None:
                        fresh[spo[-1]] = node
            if None not in spo:
                yield r, tuple(spo)


def form_at(form, omega: Rel, t: int, fresh: dict | None = None) -> set:
    """The query form over the rows of ``omega`` alive at instant t, each read at t (an open
    interval end, a background-only row's, is t): SELECT's ``(value per projected variable...,
    t1, t2)``, CONSTRUCT's ``(s, p, o, t1, t2)`` (``fresh``: as in ``evaluate``)."""
    return {r[:-2] for r in answer_form(form, alive_at(omega, t), fresh).rows}


def alive_at(omega: Rel, t: int) -> Rel:
    """The rows of ``omega`` alive at instant t, each read at t: an open interval end (a
    background-only row's) is t, and the lifetime [t, t]."""
    n = len(omega.vars)
    return Rel(omega.vars, frozenset(r[:n] + (r[-4], t if r[-3] == OPEN_END else r[-3], t, t) for r in omega.rows
                                     if r[-2] <= t <= r[-1]))


def answer_form(form, omega: Rel, fresh: dict | None = None) -> Rel:
    """The query form over its pattern's rows ``omega``: SELECT's projected columns in the query's
    order, or CONSTRUCT's triples (``fresh``: as in ``evaluate``)."""
    idx = {v: i for i, v in enumerate(omega.vars)}
    match form:
        case A.Project(variables=variables):
            cols = [idx.get(var_column(v.name)) for v in variables]
            rows = {tuple(r[i] if i is not None else None for i in cols) + r[-4:] for r in omega.rows}
            return Rel(tuple(var_column(v.name) for v in variables), frozenset(rows))
        case A.Construct(template=template):
            rows = {spo + r[-4:] for r, spo in construct_triples(template, omega.vars, omega.rows, fresh)}
            return Rel(("s", "p", "o"), frozenset(rows))
    raise TypeError(f"not a query form: {form!r}")
