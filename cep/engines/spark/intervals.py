"""Operators on Spark DataFrames of mappings with intervals (CQELS-CEP §4.1-4.2).

A DataFrame of mappings with intervals has one ``long`` column per variable
(``cep.engines.columns.var_column``; the term id, ``null`` = unbound) and ``T_START``, ``T_END``
(``rdfcore.schema``). Every operator returns a new DataFrame with set semantics (``distinct``,
as the paper's set comprehensions) and its columns in canonical order: variable columns sorted by
name, then ``T_START``, ``T_END``. ``cep.engines.reference`` is the same semantics in pure Python (the
oracle of the differential tests).

Compatibility μ1 ~ μ2 (§4.2): ∀x ∈ dom(μ1) ∩ dom(μ2): μ1(x) = μ2(x). With unbound variables as
nulls, for a variable column ``x`` present on both sides this is exactly
``l.x = r.x OR l.x IS NULL OR r.x IS NULL`` (a null on either side is compatible), and the merged
value of μ1 ∪ μ2 is ``coalesce(l.x, r.x)`` (the non-null one; both equal when both bound). When
the schemas say neither side can be null (Spark's ``nullable`` flag is sound: ``False`` only when
no row can hold a null — ``cep.engines.spark.evaluate.evaluate`` marks a BGP's columns so after filtering them) the
condition is the plain ``l.x = r.x``, an equi-join key Spark can hash on; otherwise the null-aware
disjunction is a residual condition (still exact, only slower). Variables on one side only impose
nothing.

Operators (DESIGN.md "Operators"; §4.2 of the paper):

* :func:`join`    JOIN(Ω1, Ω2) = {<μ1 ∪ μ2, [max(t1,t3), min(t2,t4)]> | μ1 ~ μ2, max(t1,t3) ≤ min(t2,t4)}
* :func:`union`   OR(Ω1, Ω2) = Ω1 ∪ Ω2 (columns missing on one side are null = unbound)
* :func:`seq`     SEQ(Ω1, Ω2) = {<μ1 ∪ μ2, [t1, t4]> | μ1 ~ μ2, t2 < t3}               (eq. 4, 11)
* :func:`seq_wo`  SEQ_WO(Ω1, Ω2, Ω3) = {<μ1 ∪ μ3, [t1, t6]> | μ1 ~ μ3, t2 < t5, ∄<μ2,[t3,t4]> ∈ Ω2:
  μ2 ~ μ1 ∪ μ3 ∧ [t3,t4] ⊆ [t2,t5]} — the paper's head μ1 ∪ μ2 and μ1 ~ μ2 are typos for μ3
  (DESIGN.md); a negated event exactly at t2 or t5 is inside [t2, t5] and blocks   (eq. 8, 15)
* :func:`no_head` NO_HEAD(Ω1, Ω2) = {<μ2,[t3,t4]> ∈ Ω2 | ∄<μ1,[t1,t2]> ∈ Ω1: μ1 ~ μ2, t2 < t3}    (eq. 6, 13)
* :func:`no_tail` NO_TAIL(Ω1, Ω2, t) = {<μ1,[t1,t2]> ∈ Ω1 | ∄<μ2,[t3,t4]> ∈ Ω2: μ1 ~ μ2, t2 < t3,
  t4 ≤ t}                                                                          (eq. 7, 14)
* :func:`left_join` OPTIONAL for background patterns (SPARQL 1.1 §18.5 LeftJoin, with JOIN's
  interval intersection for the kept pairs).

EP-SPARQL (§4.2 of ../shared/papers/000_...; ``cep.engines.reference`` has the definitions): a combined
solution covers both intervals, [least(t1,t3), greatest(t2,t4)]:

* :func:`cover_join` Join(Ψ, Ψ'); :func:`eq_join` EqJoin (equal intervals); SeqJoin is :func:`seq`;
* :func:`optional_join` LeftJoin (t'ω < tω), SeqRightJoin (the optional one ends before the
  mandatory one starts), EqLeftJoin (equal intervals), each with its condition;
* :func:`occurrences` the stream at t: every item of every stream ended by t.

Negations are ``left_anti`` joins on the compatibility + interval condition. No Python UDFs.

Windows (§4.1; a stream is a DataFrame ``(item, s, p, o, t_start, t_end)``; each function returns
the window content with the items' intervals clipped):

* :func:`w_range` RANGE T (slide 1): the paper's w_RANGE, see its comment;
* :func:`w_now` NOW = w_RANGE(S, t, 0), the items valid at t;
* :func:`w_all` ALL (landmark) = w_RANGE(S, t, ∞): every item started by t, t2 clipped to t;
* :func:`w_triples` TRIPLES n: the last n *triples* started by t, most recent first by their
  own (t_start, t_end) and then by (item, s, p, o) descending to break ties deterministically,
  then clipped like ALL (ordering before clipping keeps each triple's rank the same at every t,
  which is what lets the continuous runtime give it one lifetime, ``cep.engines.spark.lifetimes``); a graph item may be cut (only its triples in the window are matched);
* :func:`w_step` RANGE T STEP s / TUMBLING (s = T): C-SPARQL's report policy "on window close".
  Windows close at the multiples of s (time origin 0); at time t the content is the last closed
  window, c = ⌊t/s⌋·s (:func:`close_instant`), evaluated as w_RANGE(S, c, T). Between two closes
  the answer therefore does not change. (CQELS/EP-SPARQL's "on content change" is the slide-1
  RANGE window evaluated at each arrival time, which callers get by choosing those t.)
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cep.algebra import windows as W
from cep.engines.columns import ITEM, STREAM_COLUMNS, T_END, T_START, scratch, var_columns
from cep.algebra.timeline import close_instant
from rdfcore.schema import O, P, S, require_columns

__all__ = [
    "canonical", "join", "union", "seq", "seq_wo", "no_head", "no_tail", "left_join",
    "w_range", "w_now", "w_all", "w_triples", "w_step", "close_instant", "STREAM_COLUMNS",
    "window", "constant", "within_item", "EXTRA", "prefixed", "compatible", "merged", "side_col",
    "cover_join", "eq_join", "optional_join", "occurrences", "RECENCY", "latest_first",
]

#: the columns a row carries besides the mapping and its interval (none; ``cep.engines.spark.lifetimes`` adds
#: the row's lifetime: the two modules offer the same functions to ``cep.engines.spark.evaluate``'s one walk)
EXTRA: tuple[str, ...] = ()

_L, _R, _N, _M = "l", "r", "n", "m"


def _check(df: DataFrame, what: str) -> None:
    require_columns(df, (T_START, T_END), what)


def canonical(df: DataFrame) -> DataFrame:
    """Variable columns sorted by name (cast to long), then T_START, T_END; other columns dropped."""
    _check(df, "mappings")
    return df.select(*[F.col(c).cast("long").alias(c) for c in sorted(var_columns(df))],
                     F.col(T_START).cast("long").alias(T_START), F.col(T_END).cast("long").alias(T_END))


def prefixed(df: DataFrame, side: str) -> DataFrame:
    """All columns renamed ``_<side>_<column>`` (so both sides of a join have distinct names)."""
    return df.select(*[F.col(c).alias(scratch(side, c)) for c in df.columns])


def _nullable(df: DataFrame, column: str) -> bool:
    return df.schema[column].nullable


def compatible(left: DataFrame, lside: str | None, right: DataFrame, rside: str | None) -> Column:
    """μ1 ~ μ2 over the variable columns of ``left`` and ``right`` (module docstring).

    ``lside``/``rside``: the prefix the side's columns carry in the joined frame (None = none).
    """
    def name(side, c):
        return c if side is None else scratch(side, c)

    cond = F.lit(True)
    for c in sorted(set(var_columns(left)) & set(var_columns(right))):
        a, b = F.col(name(lside, c)), F.col(name(rside, c))
        if _nullable(left, c) or _nullable(right, c):
            cond = cond & ((a == b) | a.isNull() | b.isNull())
        else:
            cond = cond & (a == b)
    return cond


def merged(left: DataFrame, lside: str, right: DataFrame, rside: str) -> list[Column]:
    """The variable columns of μ1 ∪ μ2 (coalesce on shared variables: the bound value)."""
    lv, rv = set(var_columns(left)), set(var_columns(right))
    out = []
    for c in sorted(lv | rv):
        if c in lv and c in rv:
            out.append(F.coalesce(F.col(scratch(lside, c)), F.col(scratch(rside, c))).alias(c))
        elif c in lv:
            out.append(F.col(scratch(lside, c)).alias(c))
        else:
            out.append(F.col(scratch(rside, c)).alias(c))
    return out


def side_col(side: str | None, column: str) -> Column:
    return F.col(column if side is None else scratch(side, column))


# ---------------------------------------------------------------------------------------------
# operators (§4.2)

def _intersecting(o1: DataFrame, o2: DataFrame, what: str) -> tuple[DataFrame, Column, Column]:
    """The compatible pairs of Ω1 × Ω2 whose intervals intersect (columns prefixed ``_l_``/``_r_``),
    and the bounds of the intersection, max(t1,t3) and min(t2,t4): the pairs JOIN keeps (§4.2)."""
    _check(o1, f"{what} left")
    _check(o2, f"{what} right")
    l, r = prefixed(o1, _L), prefixed(o2, _R)
    start = F.greatest(side_col(_L, T_START), side_col(_R, T_START))
    end = F.least(side_col(_L, T_END), side_col(_R, T_END))
    return l.join(r, compatible(o1, _L, o2, _R) & (start <= end), "inner"), start, end


def join(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """JOIN(Ω1, Ω2): compatible pairs whose intervals intersect; the intersection (§4.2, eq. 1-2)."""
    joined, start, end = _intersecting(o1, o2, "JOIN")
    return joined.select(*merged(o1, _L, o2, _R), start.alias(T_START), end.alias(T_END)).distinct()


def union(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """OR(Ω1, Ω2) = Ω1 ∪ Ω2; a variable of one side only is unbound (null) in the other's rows."""
    a, b = canonical(o1), canonical(o2)
    return canonical(a.unionByName(b, allowMissingColumns=True).distinct())


def _followed(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """The compatible pairs of Ω1 × Ω2 where the Ω1 mapping ends before the Ω2 one starts, t2 < t3
    (columns prefixed ``_l_``/``_r_``): the pairs SEQ and SEQ_WO start from (eq. 4, 8)."""
    l, r = prefixed(o1, _L), prefixed(o2, _R)
    return l.join(r, compatible(o1, _L, o2, _R) & (side_col(_L, T_END) < side_col(_R, T_START)), "inner")


def seq(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """SEQ(Ω1, Ω2) = {<μ1 ∪ μ2, [t1, t4]> | μ1 ~ μ2, t2 < t3} (eq. 4, 11)."""
    _check(o1, "SEQ left")
    _check(o2, "SEQ right")
    return _followed(o1, o2).select(*merged(o1, _L, o2, _R), side_col(_L, T_START).alias(T_START),
                                    side_col(_R, T_END).alias(T_END)).distinct()


def seq_wo(o1: DataFrame, o2: DataFrame, o3: DataFrame) -> DataFrame:
    """SEQ_WO(Ω1, Ω2, Ω3): the sequences Ω1 then Ω3 with no compatible negated Ω2 mapping whose
    interval lies within [t2, t5] (eq. 8, 15; the head's μ2 read as μ3, DESIGN.md)."""
    for df, what in ((o1, "SEQ_WO left"), (o2, "SEQ_WO negated"), (o3, "SEQ_WO right")):
        _check(df, what)
    gap_start, gap_end = scratch("gap", "start"), scratch("gap", "end")
    pairs = _followed(o1, o3).select(
        *merged(o1, _L, o3, _R), side_col(_L, T_START).alias(T_START), side_col(_R, T_END).alias(T_END),
        side_col(_L, T_END).alias(gap_start), side_col(_R, T_START).alias(gap_end))
    neg = prefixed(o2, _N)
    blocked = (compatible(pairs, None, o2, _N) & (side_col(_N, T_START) >= F.col(gap_start))
               & (side_col(_N, T_END) <= F.col(gap_end)))
    kept = pairs.join(neg, blocked, "left_anti")
    return canonical(kept).distinct()


def no_head(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """NO_HEAD(Ω1, Ω2): the mappings of Ω2 with no compatible Ω1 mapping ending before they start
    (eq. 6, 13). Ω1 is the negated head."""
    _check(o1, "NO_HEAD negated")
    _check(o2, "NO_HEAD right")
    neg = prefixed(o1, _N)
    blocked = compatible(o2, None, o1, _N) & (side_col(_N, T_END) < F.col(T_START))
    return canonical(o2.join(neg, blocked, "left_anti")).distinct()


def no_tail(o1: DataFrame, o2: DataFrame, t) -> DataFrame:
    """NO_TAIL(Ω1, Ω2, t): the mappings of Ω1 with no compatible Ω2 mapping that starts after they
    end and has ended by the evaluation time t (eq. 7, 14). Ω2 is the negated tail. ``t``: a
    number, or a column of Ω1 (its rows' instants, ``cep.engines.spark.keyed``)."""
    _check(o1, "NO_TAIL left")
    _check(o2, "NO_TAIL negated")
    neg = prefixed(o2, _N)
    blocked = (compatible(o1, None, o2, _N) & (F.col(T_END) < side_col(_N, T_START))
               & (side_col(_N, T_END) <= (t if isinstance(t, Column) else F.lit(int(t)))))
    return canonical(o1.join(neg, blocked, "left_anti")).distinct()


def left_join(o1: DataFrame, o2: DataFrame, keep=None) -> DataFrame:
    """OPTIONAL: LeftJoin(Ω1, Ω2, expr) (SPARQL 1.1 §18.5) on mappings with intervals.

    The compatible pairs with intersecting intervals that satisfy ``keep`` (a function from a
    DataFrame of merged mappings to its rows satisfying the OPTIONAL's condition; None = all),
    with JOIN's intersection, plus every Ω1 mapping that has no such pair, as it is.
    """
    if keep is None:
        start = F.greatest(side_col(_L, T_START), side_col(_R, T_START))
        end = F.least(side_col(_L, T_END), side_col(_R, T_END))
        return _outer_join(o1, o2, start <= end, start, end, "OPTIONAL")
    joined, start, end = _intersecting(o1, o2, "OPTIONAL")
    left_cols = [scratch(_L, c) for c in o1.columns]
    pairs = joined.select(*left_cols, *merged(o1, _L, o2, _R), start.alias(T_START), end.alias(T_END))
    if keep is not None:
        pairs = keep(pairs)
    return _with_unmatched(o1, pairs)


# ---------------------------------------------------------------------------------------------
# EP-SPARQL (§4.2)

def _covered(o1: DataFrame, o2: DataFrame, condition: Column) -> DataFrame:
    """The compatible pairs of Ω1 × Ω2 satisfying ``condition`` (over ``_l_``/``_r_`` columns), as
    merged mappings over the interval covering both, with Ω1's own columns kept as ``_l_*``."""
    l, r = prefixed(o1, _L), prefixed(o2, _R)
    joined = l.join(r, compatible(o1, _L, o2, _R) & condition, "inner")
    start = F.least(side_col(_L, T_START), side_col(_R, T_START))
    end = F.greatest(side_col(_L, T_END), side_col(_R, T_END))
    return joined.select(*[F.col(scratch(_L, c)) for c in o1.columns], *merged(o1, _L, o2, _R),
                         start.alias(T_START), end.alias(T_END))


def cover_join(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """EP-SPARQL Join(Ψ, Ψ'): every compatible pair, over the interval covering both."""
    _check(o1, "Join left")
    _check(o2, "Join right")
    return canonical(_covered(o1, o2, F.lit(True))).distinct()


def eq_join(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """EqJoin(Ψ, Ψ'): compatible pairs with equal intervals."""
    _check(o1, "EQUALS left")
    _check(o2, "EQUALS right")
    same = ((side_col(_L, T_START) == side_col(_R, T_START)) & (side_col(_L, T_END) == side_col(_R, T_END)))
    return canonical(_covered(o1, o2, same)).distinct()


def _optional_order(order: str) -> Column:
    """When an optional solution (``_r_``) may join a mandatory one (``_l_``)."""
    if order == "left":                                     # LeftJoin: t'ω < tω
        return side_col(_R, T_END) < side_col(_L, T_END)
    if order == "seq":                                      # SeqRightJoin: the optional one first
        return side_col(_R, T_END) < side_col(_L, T_START)
    if order == "equal":                                    # EqLeftJoin
        return (side_col(_R, T_START) == side_col(_L, T_START)) & (side_col(_R, T_END) == side_col(_L, T_END))
    raise ValueError(f"unknown optional order {order!r}")


def optional_join(mandatory: DataFrame, optional: DataFrame, order: str, keep=None) -> DataFrame:
    """EP-SPARQL's LeftJoin / SeqRightJoin / EqLeftJoin (``order`` "left" / "seq" / "equal"): the
    covered compatible pairs in that order that satisfy ``keep`` (a function from a DataFrame of
    merged solutions to those satisfying the condition; None = all), plus every mandatory solution
    with no such pair, as it is."""
    if keep is None:
        start = F.least(side_col(_L, T_START), side_col(_R, T_START))
        end = F.greatest(side_col(_L, T_END), side_col(_R, T_END))
        return _outer_join(mandatory, optional, _optional_order(order), start, end, "OPTIONAL")
    _check(mandatory, "OPTIONAL mandatory side")
    _check(optional, "OPTIONAL optional side")
    pairs = _covered(mandatory, optional, _optional_order(order))
    if keep is not None:
        pairs = keep(pairs)
    return _with_unmatched(mandatory, pairs)


def _outer_join(o1: DataFrame, o2: DataFrame, condition: Column, start: Column, end: Column,
                what: str) -> DataFrame:
    """An OPTIONAL with no condition as one left outer join: each Ω1 row with every compatible Ω2
    row satisfying ``condition`` (over ``_l_``/``_r_`` columns), merged, over [``start``, ``end``];
    an Ω1 row with none, as it is. The same rows as the pairs plus ``_with_unmatched``, with each
    operand read once (a plan that used Ω1 twice copied Ω1's plan, and nested OPTIONALs doubled
    it at each level)."""
    _check(o1, f"{what} left")
    _check(o2, f"{what} right")
    hit = scratch(_R, "hit")
    l, r = prefixed(o1, _L), prefixed(o2, _R).withColumn(hit, F.lit(True))
    joined = l.join(r, compatible(o1, _L, o2, _R) & condition, "left")
    matched = F.col(hit).isNotNull()
    # an unmatched row's Ω2 columns are null: merged() reads its own values
    return canonical(joined.select(*merged(o1, _L, o2, _R),
                                   F.when(matched, start).otherwise(side_col(_L, T_START)).alias(T_START),
                                   F.when(matched, end).otherwise(side_col(_L, T_END)).alias(T_END))).distinct()


def _with_unmatched(o1: DataFrame, pairs: DataFrame) -> DataFrame:
    """``pairs`` (merged solutions carrying Ω1's columns as ``_l_*``) plus the Ω1 rows that no pair
    came from."""
    matched = pairs.select(*[F.col(scratch(_L, c)).alias(scratch(_M, c)) for c in o1.columns]).distinct()
    same = F.lit(True)
    for c in o1.columns:
        same = same & F.col(scratch(_L, c)).eqNullSafe(F.col(scratch(_M, c)))
    unmatched = (prefixed(o1, _L).join(matched, same, "left_anti")
                 .select(*[F.col(scratch(_L, c)).alias(c) for c in o1.columns]))
    return union(canonical(pairs), canonical(unmatched))


def occurrences(streams, t: int) -> DataFrame:
    """EP-SPARQL's stream at t: the items of every stream in ``streams`` ended by t (t_end ≤ t)."""
    out = None
    for stream in streams:
        _check_stream(stream)
        part = stream.select(ITEM, S, P, O, T_START, T_END).filter(F.col(T_END) <= F.lit(int(t)))
        out = part if out is None else out.unionByName(part)
    return out


# ---------------------------------------------------------------------------------------------
# windows (§4.1)

def _check_stream(stream: DataFrame) -> None:
    require_columns(stream, STREAM_COLUMNS, "stream")


def w_range(stream: DataFrame, t: int, T: int) -> DataFrame:
    """The time-based window with slide 1 at time t over the last T time units:

    w_RANGE(S, t, T) = { <g, [max(t1, t−T), min(t2, t)]> | <g, [t1, t2]> ∈ S, t1 ≤ t, t2 ≥ t−T }
    (the clipping of t1 is our reading of a garbled formula — DESIGN.md "Window")
    """
    _check_stream(stream)
    lo, hi = int(t) - int(T), int(t)
    return (stream.filter((F.col(T_START) <= F.lit(hi)) & (F.col(T_END) >= F.lit(lo)))
            .select(ITEM, S, P, O, F.greatest(F.col(T_START), F.lit(lo)).alias(T_START),
                    F.least(F.col(T_END), F.lit(hi)).alias(T_END)))


def w_now(stream: DataFrame, t: int) -> DataFrame:
    """NOW = w_RANGE(S, t, 0): the items valid at t, each with interval [t, t]."""
    return w_range(stream, t, 0)


def w_all(stream: DataFrame, t: int) -> DataFrame:
    """ALL (landmark) = w_RANGE(S, t, ∞): every item started by t, its end clipped to t."""
    _check_stream(stream)
    return (stream.filter(F.col(T_START) <= F.lit(int(t)))
            .select(ITEM, S, P, O, T_START, F.least(F.col(T_END), F.lit(int(t))).alias(T_END)))


#: the order TRIPLES n ranks a stream's triples by (module docstring): the most recent is the
#: greatest; the columns break ties so that every engine picks the same n
RECENCY = (T_START, T_END, ITEM, S, P, O)


def latest_first() -> list[Column]:
    """The sort columns of ``RECENCY``, the most recent triple first."""
    return [F.col(c).desc() for c in RECENCY]


def w_triples(stream: DataFrame, t: int, n: int) -> DataFrame:
    """TRIPLES n: the n most recent triples started by t (``RECENCY``), clipped like ALL.
    ``orderBy(...).limit(n)`` runs as one top-n (no global sort)."""
    _check_stream(stream)
    latest = stream.filter(F.col(T_START) <= F.lit(int(t))).orderBy(*latest_first()).limit(int(n))
    return latest.select(ITEM, S, P, O, T_START, F.least(F.col(T_END), F.lit(int(t))).alias(T_END))


def w_step(stream: DataFrame, t: int, T: int, step: int) -> DataFrame:
    """RANGE T STEP s (TUMBLING: s = T), reported on window close (C-SPARQL): the last closed
    window at t, i.e. w_RANGE(S, close_instant(t, s), T)."""
    return w_range(stream, close_instant(t, step), T)


_WINDOWS = W.WindowFunctions(sliding=w_range, stepped=w_step, count=w_triples, landmark=w_all)


def window(stream: DataFrame, spec, t: int, time_unit: str = "ms") -> DataFrame:
    """The content of window ``spec`` (a ``cep.algebra.windows`` window) over ``stream`` at time t."""
    return W.apply_window(spec, time_unit, _WINDOWS, stream, t)


def constant(df: DataFrame, lo: int, hi: int) -> DataFrame:
    """Mappings of a background pattern (eq. 17): every one with the interval [lo, hi]."""
    return canonical(df.select(*var_columns(df), F.lit(int(lo)).cast("long").alias(T_START),
                               F.lit(int(hi)).cast("long").alias(T_END)))


def within_item(left: DataFrame, right: DataFrame, on: list[str]) -> DataFrame:
    """Two triple patterns' matches in the same item (eq. 16): joined on ``on``."""
    return left.join(right, on, "inner")
