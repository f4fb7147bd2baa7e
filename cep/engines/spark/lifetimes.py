"""The operators of ``cep.engines.spark.intervals`` over *lifetimes*: every instant's answer in one plan.

Continuous evaluation needs ⟦Q, t⟧ at every instant t, and reports each answer at the first t at
which it holds (``cep.continuous.plan``). Evaluating one plan per instant costs a Spark plan per event
time; evaluating one plan over (rows × instants) multiplies the window content by the instants it
spans. This module does neither: a row of a DataFrame of mappings with intervals also carries its
**lifetime** ``[LIFE_FROM, LIFE_TO]``, the integer instants t at which the row is in ⟦node, t⟧.
A row whose lifetime has gaps is several rows (one per maximal run of instants). So

    ⟦node, t⟧ = { <μ, [t1, t2]> | <μ, [t1, t2], [a, b]> ∈ lifetimes(node), a ≤ t ≤ b }

for every t, and each operator is the one of ``cep.engines.spark.intervals`` applied pointwise in t:

* windows (§4.1): an item's lifetime in a window is the set of t at which the window holds it
  (``window``); where the clipped interval [max(t1, t−T), min(t2, t)] moves with t (interval
  events), one row per instant of the moving part, so (mapping, interval) stays a function of t;
* JOIN, SEQ: the pairs of the one-instant operator, alive where both are: the intersection;
* OR: the union of the rows;
* NO_HEAD, NO_TAIL, SEQ_WO, OPTIONAL's unmatched side: a candidate row minus the union of the
  lifetimes of the rows that block it (``_subtract``). NO_TAIL's ``t4 ≤ t`` makes a blocker
  block only from t4 on: its lifetime is cut to [max(a, t4), b];
* FILTER, projection: per row, the lifetime unchanged;
* a background mapping (eq. 17) has the interval [t1, t] at t: it is written [t1, OPEN_END] with
  lifetime [t1, OPEN_END] (``constant``). JOIN with a window mapping, whose end is ≤ t, gives
  min(t2, OPEN_END) = t2, as min(t2, t) does; where OPEN_END survives to the result it reads "t",
  the instant the answer is reported at.

Nothing here depends on how many instants there are: the cost is that of the one-instant plan plus
the subtraction joins. ``tests/test_cep_continuous.py`` checks the whole continuous runtime against
the reference evaluator at every instant.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cep.algebra import windows as W
from cep.algebra.timeline import OPEN_END
from cep.engines.columns import ITEM, LIFE_FROM, LIFE_TO, STREAM_COLUMNS, T_END, T_START, scratch, var_columns
from cep.engines.spark.intervals import RECENCY, compatible, merged, prefixed, side_col
from rdfcore.schema import O, P, S, require_columns

__all__ = ["EXTRA", "canonical", "constant", "join", "union", "seq", "seq_wo", "no_head",
           "no_tail", "left_join", "window", "within_item", "alive_at", "alive_at_instants"]

#: the columns a row carries besides the mapping and its interval
EXTRA = (LIFE_FROM, LIFE_TO)

_L, _R, _N = "l", "r", "n"
_B_FROM, _B_TO = scratch("block", "from"), scratch("block", "to")


def canonical(df: DataFrame) -> DataFrame:
    """Variable columns sorted, then T_START, T_END, LIFE_FROM, LIFE_TO (all long); others dropped."""
    require_columns(df, (T_START, T_END, LIFE_FROM, LIFE_TO), "mappings with lifetimes")
    return df.select(*[F.col(c).cast("long").alias(c) for c in sorted(var_columns(df))],
                     *[F.col(c).cast("long").alias(c) for c in (T_START, T_END, LIFE_FROM, LIFE_TO)])


def constant(df: DataFrame, lo: int, hi) -> DataFrame:
    """Background mappings (eq. 17): interval [lo, t] at every instant t ≥ lo, i.e. interval
    [lo, OPEN_END] and lifetime [lo, OPEN_END] (``hi``, the one-instant end, is not used)."""
    lo_col = F.lit(int(lo)).cast("long")
    end = F.lit(OPEN_END).cast("long")
    return canonical(df.select(*var_columns(df), lo_col.alias(T_START), end.alias(T_END),
                               lo_col.alias(LIFE_FROM), end.alias(LIFE_TO)))


def alive_at(df: DataFrame, t: int) -> DataFrame:
    """⟦node, t⟧ from the lifetimes of ``df``: the rows alive at t, with their intervals (an open
    end reads t)."""
    rows = df.filter((F.col(LIFE_FROM) <= F.lit(int(t))) & (F.col(LIFE_TO) >= F.lit(int(t))))
    end = F.when(F.col(T_END) == F.lit(OPEN_END), F.lit(int(t)).cast("long")).otherwise(F.col(T_END))
    return rows.select(*sorted(var_columns(df)), T_START, end.alias(T_END)).distinct()


def alive_at_instants(df: DataFrame, instants: DataFrame, column: str) -> DataFrame:
    """``alive_at`` at every instant of ``instants`` (one long column, ``column``) at once: the
    rows alive at t, with their intervals (an open end reads t) and t in ``column``. One range join
    of the lifetimes with the (few) instants, not a filter per instant."""
    t = F.col(column)
    rows = df.join(F.broadcast(instants), (F.col(LIFE_FROM) <= t) & (F.col(LIFE_TO) >= t), "inner")
    end = F.when(F.col(T_END) == F.lit(OPEN_END), t).otherwise(F.col(T_END))
    return rows.select(*sorted(var_columns(df)), T_START, end.alias(T_END), t).distinct()


def _both_alive(lside: str, rside: str) -> tuple[Column, Column]:
    lo = F.greatest(side_col(lside, LIFE_FROM), side_col(rside, LIFE_FROM))
    hi = F.least(side_col(lside, LIFE_TO), side_col(rside, LIFE_TO))
    return lo, hi


def _check(df: DataFrame, what: str) -> None:
    require_columns(df, (T_START, T_END, LIFE_FROM, LIFE_TO), what)


# ---------------------------------------------------------------------------------------------
# positive operators: the one-instant pairs, alive where both sides are

def _pairs(o1: DataFrame, o2: DataFrame, interval_condition) -> tuple[DataFrame, Column, Column]:
    l, r = prefixed(o1, _L), prefixed(o2, _R)
    lo, hi = _both_alive(_L, _R)
    cond = compatible(o1, _L, o2, _R) & interval_condition & (lo <= hi)
    return l.join(r, cond, "inner"), lo, hi


def _intersection() -> tuple[Column, Column]:
    return (F.greatest(side_col(_L, T_START), side_col(_R, T_START)),
            F.least(side_col(_L, T_END), side_col(_R, T_END)))


def join(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """JOIN (``cep.engines.spark.intervals.join``) at every instant both mappings are alive."""
    _check(o1, "JOIN left")
    _check(o2, "JOIN right")
    start, end = _intersection()
    joined, lo, hi = _pairs(o1, o2, start <= end)
    return joined.select(*merged(o1, _L, o2, _R), start.alias(T_START), end.alias(T_END),
                         lo.alias(LIFE_FROM), hi.alias(LIFE_TO)).distinct()


def union(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """OR: the rows of both (a variable of one side only is unbound in the other's rows)."""
    a, b = canonical(o1), canonical(o2)
    return canonical(a.unionByName(b, allowMissingColumns=True).distinct())


def seq(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """SEQ (``cep.engines.spark.intervals.seq``) at every instant both mappings are alive."""
    _check(o1, "SEQ left")
    _check(o2, "SEQ right")
    joined, lo, hi = _pairs(o1, o2, side_col(_L, T_END) < side_col(_R, T_START))
    return joined.select(*merged(o1, _L, o2, _R), side_col(_L, T_START).alias(T_START),
                         side_col(_R, T_END).alias(T_END), lo.alias(LIFE_FROM), hi.alias(LIFE_TO)).distinct()


# ---------------------------------------------------------------------------------------------
# negations: a candidate minus the lifetimes of its blockers

def _subtract(rows: DataFrame, blockers: DataFrame, condition: Column, b_from: Column, b_to: Column) -> DataFrame:
    """Each row of ``rows`` (columns unprefixed, with LIFE_FROM/LIFE_TO; distinct) alive at the
    instants of its lifetime that no matching blocker covers: one row per maximal run of such
    instants. ``blockers``: a DataFrame whose columns do not clash with ``rows``'; ``condition``:
    when a blocker row blocks a candidate row; [``b_from``, ``b_to``]: the instants it blocks at.

    One left join of the rows with their blockers, then :func:`_free_runs`. Each input appears
    once in the plan, so nested negations do not copy their operands' plans.
    """
    cols = rows.columns
    hit = scratch("block", "hit")
    overlap = condition & (b_from <= F.col(LIFE_TO)) & (b_to >= F.col(LIFE_FROM))
    matched = F.col(hit).isNotNull()
    spans = (rows.join(blockers.withColumn(hit, F.lit(True)), overlap, "left")
             .select(*cols, F.when(matched, F.greatest(b_from, F.col(LIFE_FROM))).alias(_B_FROM),
                     F.when(matched, F.least(b_to, F.col(LIFE_TO))).alias(_B_TO))
             .distinct())
    keep = [c for c in cols if c not in (LIFE_FROM, LIFE_TO)]
    spans, head, gap = _free_runs(spans, cols, LIFE_FROM, LIFE_TO, [F.col(c).alias(c) for c in keep])
    return _rows_of(spans, [head, gap])


def _free_runs(spans: DataFrame, row: list[str], life_from: str, life_to: str,
               fields: list[Column]) -> tuple[DataFrame, Column, Column]:
    """The free runs of each row's lifetime: ``spans`` holds a row (its columns ``row``, its
    lifetime in ``life_from``/``life_to``) once per stretch of instants [_B_FROM, _B_TO] blocked
    in it, or once with null stretch when nothing blocks it. Per row, its stretches in order (a
    window over the row's columns): a free run starts at its lifetime's start before the first
    stretch (or spans the whole lifetime), and right after each point where the stretches so far
    end before the next one starts. Returns ``spans`` with the window's columns, and two columns:
    the run before the first stretch and the run after this row's stretch, each a struct of
    ``fields``, LIFE_FROM and LIFE_TO, null where there is none."""
    lf, lt = F.col(life_from), F.col(life_to)
    over = Window.partitionBy(*row)
    ordered = over.orderBy(F.col(_B_FROM).asc_nulls_first(), F.col(_B_TO).asc_nulls_first())
    first, covered, following, rank = (scratch("block", n) for n in ("first", "covered", "following", "rank"))
    spans = spans.select(
        "*",
        F.min(_B_FROM).over(over).alias(first),                         # null: nothing blocks the row
        F.max(_B_TO).over(ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias(covered),
        F.lead(_B_FROM).over(ordered).alias(following),
        F.row_number().over(ordered).alias(rank))
    before = (F.col(rank) == 1) & (F.col(first).isNull() | (F.col(first) > lf))
    # the free instant after the stretches so far, only where one is left: OPEN_END + 1 overflows
    after = F.when(F.col(covered) < lt, F.col(covered) + 1)
    gap = (F.col(_B_FROM).isNotNull() & after.isNotNull()
           & (F.col(following).isNull() | (F.col(following) > after)))

    def run(start: Column, end: Column) -> Column:
        return F.struct(*fields, start.cast("long").alias(LIFE_FROM), end.cast("long").alias(LIFE_TO))

    head = F.when(before, run(lf, F.when(F.col(first).isNull(), lt).otherwise(F.col(first) - 1)))
    tail = F.when(gap, run(after, F.when(F.col(following).isNull(), lt).otherwise(F.col(following) - 1)))
    return spans, head, tail


def _rows_of(df: DataFrame, structs: list[Column]) -> DataFrame:
    """The non-null structs of ``structs``, one row each, their fields as columns."""
    one = scratch("block", "run")
    return df.select(F.explode(F.array(*structs)).alias(one)).filter(F.col(one).isNotNull()).select(f"{one}.*")


def no_head(o1: DataFrame, o2: DataFrame) -> DataFrame:
    """NO_HEAD(Ω1, Ω2): an Ω2 row at the instants no compatible earlier Ω1 row is alive."""
    _check(o1, "NO_HEAD negated")
    _check(o2, "NO_HEAD right")
    rows = canonical(o2).distinct()
    neg = prefixed(o1, _N + "h")
    cond = compatible(rows, None, o1, _N + "h") & (side_col(_N + "h", T_END) < F.col(T_START))
    return canonical(_subtract(rows, neg, cond, side_col(_N + "h", LIFE_FROM), side_col(_N + "h", LIFE_TO)))


def no_tail(o1: DataFrame, o2: DataFrame, t=None) -> DataFrame:
    """NO_TAIL(Ω1, Ω2, t): an Ω1 row at the instants t no compatible later Ω2 row alive at t has
    ended by t (t4 ≤ t): a blocker blocks from max(its LIFE_FROM, t4). ``t`` is not used (every
    instant at once)."""
    _check(o1, "NO_TAIL left")
    _check(o2, "NO_TAIL negated")
    rows = canonical(o1).distinct()
    side = _N + "t"
    neg = prefixed(o2, side)
    cond = compatible(rows, None, o2, side) & (F.col(T_END) < side_col(side, T_START))
    b_from = F.greatest(side_col(side, LIFE_FROM), side_col(side, T_END))
    return canonical(_subtract(rows, neg, cond, b_from, side_col(side, LIFE_TO)))


def seq_wo(o1: DataFrame, o2: DataFrame, o3: DataFrame) -> DataFrame:
    """SEQ_WO(Ω1, Ω2, Ω3): the Ω1-then-Ω3 pairs, alive where both are and no compatible Ω2 row
    within [t2, t5] is."""
    for df, what in ((o1, "SEQ_WO left"), (o2, "SEQ_WO negated"), (o3, "SEQ_WO right")):
        _check(df, what)
    gap_start, gap_end = scratch("gap", "start"), scratch("gap", "end")
    joined, lo, hi = _pairs(o1, o3, side_col(_L, T_END) < side_col(_R, T_START))
    rows = joined.select(*merged(o1, _L, o3, _R), side_col(_L, T_START).alias(T_START),
                         side_col(_R, T_END).alias(T_END), side_col(_L, T_END).alias(gap_start),
                         side_col(_R, T_START).alias(gap_end), lo.alias(LIFE_FROM), hi.alias(LIFE_TO)).distinct()
    side = _N + "w"
    neg = prefixed(o2, side)
    cond = (compatible(rows, None, o2, side) & (side_col(side, T_START) >= F.col(gap_start))
            & (side_col(side, T_END) <= F.col(gap_end)))
    return canonical(_subtract(rows, neg, cond, side_col(side, LIFE_FROM), side_col(side, LIFE_TO))).distinct()


def left_join(o1: DataFrame, o2: DataFrame, keep=None) -> DataFrame:
    """OPTIONAL (``cep.engines.spark.intervals.left_join``): the kept pairs where both are alive, and each Ω1 row
    at the instants where it has no kept pair."""
    _check(o1, "OPTIONAL left")
    _check(o2, "OPTIONAL right")
    rows = canonical(o1).distinct()
    if keep is None:
        return _left_join_all(rows, o2)
    start, end = _intersection()
    joined, lo, hi = _pairs(rows, o2, start <= end)
    left_cols = [scratch(_L, c) for c in rows.columns]
    pairs = joined.select(*left_cols, *merged(rows, _L, o2, _R), start.alias(T_START), end.alias(T_END),
                          lo.alias(LIFE_FROM), hi.alias(LIFE_TO))
    pairs = keep(pairs)
    side = _N + "o"
    matched = pairs.select(*[F.col(scratch(_L, c)).alias(scratch(side, c)) for c in rows.columns],
                           F.col(LIFE_FROM).alias(scratch(side, "alive_from")),
                           F.col(LIFE_TO).alias(scratch(side, "alive_to")))
    same = F.lit(True)
    for c in rows.columns:
        same = same & F.col(c).eqNullSafe(side_col(side, c))
    unmatched = _subtract(rows, matched, same, side_col(side, "alive_from"), side_col(side, "alive_to"))
    return union(canonical(pairs), canonical(unmatched))


def _left_join_all(rows: DataFrame, o2: DataFrame) -> DataFrame:
    """OPTIONAL with no condition, each operand read once: one left join of the rows with their
    pairs; a pair is an answer where both are alive, and a row's lifetime minus its pairs'
    (``_free_runs``) is where it is an answer alone."""
    hit = scratch(_R, "hit")
    start, end = _intersection()
    lo, hi = _both_alive(_L, _R)
    l, r = prefixed(rows, _L), prefixed(o2, _R).withColumn(hit, F.lit(True))
    joined = l.join(r, compatible(rows, _L, o2, _R) & (start <= end) & (lo <= hi), "left")
    matched = F.col(hit).isNotNull()
    mine = set(var_columns(rows))
    # an Ω2-only variable is unbound in a row alone: a null of the pair's type, so the structs agree
    alone = [(side_col(_L, c) if c in mine else F.lit(None).cast("long")).alias(c)
             for c in sorted(mine | set(var_columns(o2)))]
    pair = F.when(matched, F.struct(*merged(rows, _L, o2, _R), start.alias(T_START), end.alias(T_END),
                                    lo.alias(LIFE_FROM), hi.alias(LIFE_TO)))
    alone += [side_col(_L, T_START).alias(T_START), side_col(_L, T_END).alias(T_END)]
    spans = joined.select("*", F.when(matched, lo).alias(_B_FROM), F.when(matched, hi).alias(_B_TO))
    spans, head, gap = _free_runs(spans, [scratch(_L, c) for c in rows.columns], scratch(_L, LIFE_FROM),
                                  scratch(_L, LIFE_TO), alone)
    return canonical(_rows_of(spans, [pair, head, gap])).distinct()


# ---------------------------------------------------------------------------------------------
# windows (§4.1): an item's lifetime in a window

def _per_instant(stream: DataFrame, instants: Column, lo: Column, hi: Column) -> DataFrame:
    """One row per instant t of the array ``instants``: interval [lo(t), hi(t)], lifetime [t, t]
    (``lo``/``hi`` written over the column ``_t``)."""
    t = scratch("t")
    exploded = stream.select(*STREAM_COLUMNS, F.explode(instants).alias(t))
    return exploded.select(ITEM, S, P, O, lo.alias(T_START), hi.alias(T_END), F.col(t).alias(LIFE_FROM),
                           F.col(t).alias(LIFE_TO))


def _seq(a: Column, b: Column) -> Column:
    """The instants a..b as an array (empty when a > b)."""
    return F.when(a <= b, F.sequence(a, b)).otherwise(F.array().cast("array<long>"))


def w_range(stream: DataFrame, T: int) -> DataFrame:
    """w_RANGE (``cep.engines.spark.intervals.w_range``) at every t: an item <g, [t1, t2]> is in the window for
    t1 ≤ t ≤ t2 + T with interval [max(t1, t−T), min(t2, t)], which is [t1, t2] for t2 ≤ t ≤ t1 + T
    (one row) and moves with t elsewhere (one row per instant: t1 ≤ t < t2, and t > t1 + T)."""
    require_columns(stream, STREAM_COLUMNS, "stream")
    T_ = F.lit(int(T)).cast("long")
    t1, t2 = F.col(T_START), F.col(T_END)
    steady = (stream.filter(t2 - t1 <= T_)
              .select(ITEM, S, P, O, T_START, T_END, t2.alias(LIFE_FROM), (t1 + T_).alias(LIFE_TO)))
    moving = stream.filter(t2 > t1)
    t = F.col(scratch("t"))
    growing = _per_instant(moving, _seq(t1, t2 - 1), F.greatest(t1, t - T_), t)
    shrinking = _per_instant(moving, _seq(F.greatest(t2, t1 + T_ + 1), t2 + T_), t - T_, t2)
    return steady.unionByName(growing).unionByName(shrinking)


def w_all(stream: DataFrame) -> DataFrame:
    """ALL at every t: from t1 on, interval [t1, min(t2, t)]."""
    require_columns(stream, STREAM_COLUMNS, "stream")
    t1, t2 = F.col(T_START), F.col(T_END)
    steady = stream.select(ITEM, S, P, O, T_START, T_END, t2.alias(LIFE_FROM),
                           F.lit(OPEN_END).cast("long").alias(LIFE_TO))
    t = F.col(scratch("t"))
    growing = _per_instant(stream.filter(t2 > t1), _seq(t1, t2 - 1), t1, t)
    return steady.unionByName(growing)


def w_triples(stream: DataFrame, n: int) -> DataFrame:
    """TRIPLES n at every t (``cep.engines.spark.intervals.w_triples``): a triple is among the last n from its
    start until the n-th triple after it in the order (t_start, t_end, item, s, p, o) starts, its
    interval clipped like ALL. The lead over the whole stream is one sort of the (bounded) state."""
    require_columns(stream, STREAM_COLUMNS, "stream")
    order = Window.orderBy(*[F.col(c).asc() for c in RECENCY])
    gone = scratch("gone")
    ranked = stream.select(*STREAM_COLUMNS, F.lead(T_START, int(n)).over(order).alias(gone))
    last = F.coalesce(F.col(gone) - 1, F.lit(OPEN_END).cast("long"))
    t1, t2 = F.col(T_START), F.col(T_END)
    steady = (ranked.select(ITEM, S, P, O, T_START, T_END, F.greatest(t1, t2).alias(LIFE_FROM), last.alias(LIFE_TO))
              .filter(F.col(LIFE_FROM) <= F.col(LIFE_TO)))
    t = F.col(scratch("t"))
    growing = _per_instant(ranked.filter(t2 > t1).withColumn(scratch("last"), last),
                           _seq(t1, F.least(t2 - 1, F.col(scratch("last")))), t1, t)
    return steady.unionByName(growing)


def w_step(stream: DataFrame, T: int, step: int) -> DataFrame:
    """RANGE T STEP s at every t: the content of the last close c = ⌊t/s⌋·s, i.e. the item's
    w_RANGE at c, alive on [c, c + s − 1]. A point event is in the windows of the closes c with
    t1 ≤ c ≤ t1 + T (one run of instants); an interval event gets one row per close (its clipped
    interval differs per close), merged where equal."""
    require_columns(stream, STREAM_COLUMNS, "stream")
    s_, T_ = F.lit(int(step)).cast("long"), F.lit(int(T)).cast("long")
    t1, t2 = F.col(T_START), F.col(T_END)

    def first_close(x: Column) -> Column:   # the first multiple of s at or after x
        return x + F.pmod(-x, s_)

    def last_close(x: Column) -> Column:    # the last multiple of s at or before x
        return x - F.pmod(x, s_)

    points = stream.filter(t1 == t2)
    c1, c2 = first_close(t1), last_close(t1 + T_)
    steady = (points.filter(c1 <= c2)
              .select(ITEM, S, P, O, T_START, T_END, c1.alias(LIFE_FROM), (c2 + s_ - 1).alias(LIFE_TO)))
    c = F.col(scratch("t"))
    closes = F.when(first_close(t1) <= last_close(t2 + T_),
                    F.sequence(first_close(t1), last_close(t2 + T_), s_)).otherwise(F.array().cast("array<long>"))
    per_close = _per_instant(stream.filter(t2 > t1), closes, F.greatest(t1, c - T_), F.least(t2, c))
    merged_closes = (per_close.groupBy(ITEM, S, P, O, T_START, T_END)
                     .agg(F.min(LIFE_FROM).alias(LIFE_FROM), (F.max(LIFE_TO) + s_ - 1).alias(LIFE_TO)))
    return steady.unionByName(merged_closes)


_WINDOWS = W.WindowFunctions(sliding=w_range, stepped=w_step, count=w_triples, landmark=w_all)


def window(stream: DataFrame, spec, t=None, time_unit: str = "ms") -> DataFrame:
    """The lifetimes of the items of ``stream`` in window ``spec`` (a ``cep.algebra.windows`` window);
    ``t`` is not used (every instant at once)."""
    return W.apply_window(spec, time_unit, _WINDOWS, stream)


def within_item(left: DataFrame, right: DataFrame, on: list[str]) -> DataFrame:
    """Two triple patterns' matches in the same item (eq. 16), alive where both are."""
    r = right.select(*[F.col(c) for c in right.columns if c not in EXTRA],
                     F.col(LIFE_FROM).alias(_B_FROM), F.col(LIFE_TO).alias(_B_TO))
    out = left.join(r, on, "inner")
    lo, hi = F.greatest(F.col(LIFE_FROM), F.col(_B_FROM)), F.least(F.col(LIFE_TO), F.col(_B_TO))
    out = out.filter(lo <= hi)
    return out.select(*[c for c in out.columns if c not in EXTRA + (_B_FROM, _B_TO)],
                      lo.alias(LIFE_FROM), hi.alias(LIFE_TO))
