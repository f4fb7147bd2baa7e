"""RSEP-QL event patterns on Spark (Dell'Aglio et al., EKAW 2016, ../shared/papers/001_... §4.2-4.4):
the event mappings of ``MATCH E`` at one instant, with the stream triples each one used.

``cep.engines.reference`` defines the semantics (its module docstring: active windows, the substitution
μ2(E1), FIRST/LAST by ≺ = (t2, t1), the four selection policies, consumption); this module
evaluates the same set-at-a-time. An event pattern is evaluated under a *context* relation
(``CTX``, ``HI`` and the bound variables): one row per place the pattern is evaluated in, with the
upper bound of its active window (the lower one is never tightened) and the bindings it is
substituted with. The whole MATCH is one context; ``E1 SEQ E2`` evaluates E2 in its contexts, then
E1 once per E2 event, in a context keyed by that event (a struct of the event's row): its window
cut at t3 − 1, its bindings the outer ones plus μ2. FIRST and LAST keep, per context, the
events with the least / greatest (t2, t1). The chronological and recent policies drop an E2
event when an earlier / later E2 event of the same context is compatible with the chosen E1 event
and after it (a left anti join).

Every row carries ``USED``: the (window, item, s, p, o) of the stream triples it was matched in,
so a consuming policy (chronological, recent) can take them out of the next evaluation's input
(``cep.engines.spark.evaluate.evaluate_sequence``). No Python UDFs.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from cep import algebra as A
from cep.engines.columns import ITEM, T_END, T_START, scratch, var_column, var_columns
from cep.engines.spark.intervals import compatible, merged, prefixed, side_col
from cep.engines.spark.keyed import INSTANT, Instants
from cep.engines.spark.triples import triple_match
from cep.algebra.timeline import close_instant
from rdfcore.schema import O, P, S
from cep.engines.errors import MissingInputError

__all__ = ["CTX", "HI", "USED", "WINDOW_NAME", "USED_COLUMNS", "match_events", "rsep_window", "used_triples"]

CTX, HI, USED = "_ctx", "_hi", "_used"
WINDOW_NAME = "window"
#: the columns of a used (consumed) stream triple
USED_COLUMNS = (WINDOW_NAME, ITEM, S, P, O)
_MAX = (1 << 63) - 1
_L, _R, _N = "l", "r", "n"


def rsep_window(stream: DataFrame, spec, t, time_unit: str = "ms") -> DataFrame:
    """RSEP-QL's window functions (``cep.engines.reference.rsep_window``): the items whose start time is
    in W^τ(α, β) = (t' − α, t'], t' = ⌊t/β⌋·β; ``All``: ≤ t; ``Now``: = t. ``t`` an ``Instants``
    (``cep.engines.spark.keyed``): the items of each instant's window, each with its ``INSTANT``."""
    ts = F.col(T_START)
    keyed = isinstance(t, Instants)
    now = F.col(INSTANT) if keyed else F.lit(int(t))
    if keyed:
        stream = stream.crossJoin(t.frame)
    match spec:
        case A.All():
            return stream.filter(ts <= now)
        case A.Now():
            return stream.filter(ts == now)
        case A.Range():
            alpha, beta = spec.range.ticks(time_unit), spec.step_ticks(time_unit)
            top = t.of(lambda x: close_instant(x, beta)) if keyed else F.lit(close_instant(t, beta))
            return stream.filter((ts > top - F.lit(alpha)) & (ts <= top))
    raise ValueError(f"RSEP-QL has no {spec} window")


def match_events(node: A.Match, streams, at, time_unit: str, consumed: DataFrame | None) -> DataFrame:
    """The event mappings of ``MATCH E`` at ``at``: the variable columns, ``T_START``, ``T_END`` and
    ``USED``. ``streams``: {stream IRI: DataFrame (item, s, p, o, t_start, t_end)}; ``consumed``:
    DataFrame of ``USED_COLUMNS`` taken out of the input (None: nothing). ``at`` an ``Instants``:
    at each of them at once, each row with its ``INSTANT`` (one root context per instant)."""
    if isinstance(at, Instants):
        root = at.frame.select(F.struct(F.col(INSTANT).alias("root")).alias(CTX), F.lit(_MAX).cast("long").alias(HI),
                               INSTANT)
    else:
        first = next(iter(streams.values()))
        root = first.sparkSession.range(1).select(F.struct(F.lit(0).alias("root")).alias(CTX),
                                                  F.lit(_MAX).cast("long").alias(HI))
    out = _Events(streams, at, time_unit, consumed).eval(node.inner, root)
    return out.select(*sorted(var_columns(out)), T_START, T_END, USED)


def used_triples(events: DataFrame) -> DataFrame:
    """The (window, item, s, p, o) rows of ``events``' ``USED`` arrays."""
    return (events.select(F.explode(USED).alias("_u"))
            .select(*[F.col(f"_u.{c}").alias(c) for c in USED_COLUMNS]).distinct())


class _Events:
    def __init__(self, streams, at, time_unit, consumed):
        self.streams, self.unit, self.consumed = streams, time_unit, consumed
        self.at = at if isinstance(at, Instants) else int(at)

    def eval(self, node, ctx: DataFrame) -> DataFrame:
        """Rows ``CTX``, the event's own variables, ``T_START``, ``T_END``, ``USED``."""
        match node:
            case A.EventPattern():
                return self.basic(node, ctx)
            case A.FirstEvent(inner=inner):
                return _extreme(self.eval(inner, ctx), first=True)
            case A.LastEvent(inner=inner):
                return _extreme(self.eval(inner, ctx), first=False)
            case A.EventSeq(left=left, right=right, policy=policy):
                return self.seq(left, right, policy, ctx)
        raise TypeError(f"not an event pattern: {node!r}")

    def basic(self, node: A.EventPattern, ctx: DataFrame) -> DataFrame:
        if node.stream not in self.streams:
            raise MissingInputError(f"no stream {node.stream} was given; streams: {sorted(self.streams)}")
        items = rsep_window(self.streams[node.stream], node.window, self.at, self.unit)
        if self.consumed is not None:
            gone = self.consumed.filter(F.col(WINDOW_NAME) == node.name).select(ITEM, S, P, O)
            items = items.join(gone, [ITEM, S, P, O], "left_anti")
        matches = _bgp_with_triples(node, items)
        c = prefixed(ctx, _R)
        m = prefixed(matches, _L)
        cond = compatible(matches, _L, ctx, _R) & (side_col(_L, T_START) <= side_col(_R, HI))
        own = [F.col(scratch(_L, v)).alias(v) for v in sorted(var_columns(matches))]
        return (m.join(c, cond, "inner")
                .select(side_col(_R, CTX).alias(CTX), *own, side_col(_L, T_START).alias(T_START),
                        side_col(_L, T_START).alias(T_END), side_col(_L, USED).alias(USED))
                .distinct())

    def seq(self, left, right, policy: str, ctx: DataFrame) -> DataFrame:
        seconds = self.eval(right, ctx)
        if policy == "naive":                                               # eq. 9
            firsts = _extreme(self.eval(left, ctx), first=False)
            lasts = _extreme(seconds, first=False)
            l, r = prefixed(firsts, _L), prefixed(lasts, _R)
            cond = ((side_col(_L, CTX) == side_col(_R, CTX)) & compatible(firsts, _L, lasts, _R)
                    & (side_col(_L, T_END) < side_col(_R, T_START)))
            return _combined(l.join(r, cond, "inner"), firsts, lasts)
        key = scratch("key")
        keyed = seconds.withColumn(key, F.struct(*[F.col(c) for c in seconds.columns]))
        # E1's contexts: one per E2 event, the window cut at t3 - 1, bindings = outer ∪ μ2 (eq. 7)
        outer = prefixed(ctx, _N)
        inner_ctx = keyed.join(outer, F.col(CTX) == side_col(_N, CTX), "inner").select(
            F.col(key).alias(CTX), F.least(side_col(_N, HI), F.col(T_START) - 1).alias(HI),
            *_union_columns(seconds, ctx))
        firsts = self.eval(left, inner_ctx)
        if policy == "chronological":                                       # eq. 10
            firsts = _extreme(firsts, first=True)
        elif policy == "recent":                                            # eq. 11
            firsts = _extreme(firsts, first=False)
        l, r = prefixed(firsts, _L), prefixed(keyed, _R)
        pairs = l.join(r, side_col(_L, CTX) == side_col(_R, key), "inner")
        if policy in ("chronological", "recent"):
            n = prefixed(seconds, _N)
            later = _before(_N, _R) if policy == "chronological" else _before(_R, _N)
            blocked = ((side_col(_N, CTX) == side_col(_R, CTX)) & compatible(firsts, _L, seconds, _N)
                       & (side_col(_L, T_END) < side_col(_N, T_START)) & later)
            pairs = pairs.join(n, blocked, "left_anti")
        return _combined(pairs, firsts, seconds)


def _before(a: str, b: str) -> Column:
    """Event ``a`` precedes event ``b`` by ≺: (t2, t1) lexicographic."""
    return ((side_col(a, T_END) < side_col(b, T_END))
            | ((side_col(a, T_END) == side_col(b, T_END)) & (side_col(a, T_START) < side_col(b, T_START))))


def _combined(pairs: DataFrame, firsts: DataFrame, seconds: DataFrame) -> DataFrame:
    """(μ1 ∪ μ2, t1, t4) of joined ``_l_`` (E1) / ``_r_`` (E2) rows, in E2's context."""
    return pairs.select(side_col(_R, CTX).alias(CTX), *merged(firsts, _L, seconds, _R),
                        side_col(_L, T_START).alias(T_START), side_col(_R, T_END).alias(T_END),
                        F.concat(side_col(_L, USED), side_col(_R, USED)).alias(USED)).distinct()


def _union_columns(a: DataFrame, b: DataFrame) -> list[Column]:
    """The variable columns of μa ∪ μb for a row holding a's columns and b's prefixed ``_n_``."""
    av, bv = set(var_columns(a)), set(var_columns(b))
    out = []
    for c in sorted(av | bv):
        if c in av and c in bv:
            out.append(F.coalesce(F.col(c), side_col(_N, c)).alias(c))
        elif c in av:
            out.append(F.col(c))
        else:
            out.append(side_col(_N, c).alias(c))
    return out


def _extreme(events: DataFrame, first: bool) -> DataFrame:
    """Per context, the events no other precedes (``first``) / follows, by ≺ = (t2, t1)."""
    w = Window.partitionBy(CTX)
    pick = F.min if first else F.max
    end, start = scratch("end"), scratch("start")
    out = events.withColumn(end, pick(T_END).over(w)).filter(F.col(T_END) == F.col(end))
    out = out.withColumn(start, pick(T_START).over(w)).filter(F.col(T_START) == F.col(start))
    return out.drop(end, start)


def _bgp_with_triples(node: A.EventPattern, items: DataFrame) -> DataFrame:
    """eq. (6) of §4.2 per item: the BGP's matches inside one item, each with its time and the
    (window, item, s, p, o) of the triples it matched (``USED``)."""
    parts = []
    for i, tp in enumerate(node.pattern.patterns):
        cond, first = triple_match(tp)
        triple = F.struct(F.lit(node.name).alias(WINDOW_NAME), F.col(ITEM).alias(ITEM), F.col(S).alias(S),
                          F.col(P).alias(P), F.col(O).alias(O))
        parts.append(items.filter(cond).select(
            ITEM, T_START, *[c for c in (INSTANT,) if c in items.columns], triple.alias(scratch("t", str(i))),
            *[F.coalesce(F.col(c), F.lit(0).cast("long")).alias(var_column(v)) for v, c in first.items()]))
    out = parts[0]
    for part in parts[1:]:
        shared = sorted(set(var_columns(out)) & set(var_columns(part)))
        out = out.join(part, [ITEM, T_START, *shared], "inner")
    used = F.array(*[F.col(scratch("t", str(i))) for i in range(len(parts))])
    return out.select(*sorted(var_columns(out)), T_START, used.alias(USED)).distinct()
