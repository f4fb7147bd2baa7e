"""⟦Q, t⟧ at many evaluation instants in ONE plan, for queries whose answers are defined per
instant (C-SPARQL's snapshots, EP-SPARQL's occurrences, RSEP-QL's MATCH and window graphs,
CQELS-CEP with ORDER BY / LIMIT or GROUP BY over events): the operators of ``cep.engines.spark.intervals`` over rows that each carry the
instant they belong to. Cost: a window's item is one row per instant whose window holds it.

The instant is the column ``INSTANT``, named as a variable no query can write ('·' cannot start a
SPARQL variable name, as EXISTS' key columns of ``cep.engines.spark.graphpatterns``). So every
operator of ``cep.engines.spark.intervals`` applies as it is:

* compatibility (``intervals.compatible``) requires equal instants, and since the column is never
  null that is a plain equi-join key: each instant is joined with itself only;
* a union, a ``distinct``, a projection (``EXTRA``) keep the rows of different instants apart;
* MINUS and EXISTS (``cep.engines.spark.graphpatterns``) compare rows of one instant: MINUS does
  not count the instant as a shared variable, and EXISTS' seed carries it;
* aggregates, ORDER BY and LIMIT group and rank per instant (their ``by`` / ``partition``).

What reads the instant itself is different:

* :func:`constant` (a background pattern, VALUES): one copy per instant, each with that
  instant's interval — a column of the instant (:meth:`Instants.of`), not a number;
* a window over a stream (:meth:`Ops.window`): the items every instant's window holds, each clipped
  to that window, as ``intervals``' window functions clip them at one instant; NO_TAIL's t;
* EP-SPARQL's occurrences, the items ended by each instant, and a C-SPARQL snapshot
  (``cep.engines.spark.csparql.windows_at``), built by ``cep.engines.spark.evaluate``;
* RSEP-QL's windows and MATCH (``cep.engines.spark.rsepql``): one root context per instant, so
  FIRST / LAST and the selection policies pick per instant (a consuming policy, whose input at
  one instant depends on the answers at the earlier ones, is not keyed:
  ``cep.engines.spark.ordered`` runs it in one task);
* GROUP BY over events (``cep.engines.spark.graphpatterns.group_cover``): groups per instant;
* NOW(): each row's instant's term (``cep.engines.spark.filters``, ``cep.engines.spark.arrow``).
  What RAND(), UUID(), STRUUID(), BNODE() and a CONSTRUCT template's blank nodes draw from, the
  solution's hash (``cep.engines.spark.arrow.solution_seed``), leaves the instant out: the values
  are those one evaluation at that instant draws.

:meth:`Instants.of` maps each instant to a number computed in Python (the close instant of a
snapshot, a window's bounds), as a map literal looked up by the row's instant: the same Python
definition the per-instant evaluation uses, so the two cannot drift.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from cep.algebra import windows as W
from cep.algebra.timeline import close_instant
from cep.engines.columns import INSTANT, ITEM, T_END, T_START, scratch, var_columns
from cep.engines.spark.intervals import (canonical, join, latest_first, left_join, no_head, no_tail, seq, seq_wo,
                                         union, within_item)
from rdfcore.schema import O, P, S

__all__ = ["INSTANT", "EXTRA", "Instants", "Ops", "constant", "latest", "time_column"]

#: the columns a row carries besides the mapping and its interval (the instant is one of the
#: variable columns, so the interval operators carry it; ``EXTRA`` makes projections keep it)
EXTRA: tuple[str, ...] = (INSTANT,)


@dataclass(frozen=True)
class Instants:
    """The evaluation instants (increasing) and the one-column DataFrame of them (``INSTANT``,
    never null)."""

    times: tuple[int, ...]
    frame: DataFrame

    @classmethod
    def of_times(cls, spark, times) -> "Instants":
        times = tuple(int(t) for t in times)
        schema = StructType([StructField(INSTANT, LongType(), False)])
        return cls(times, spark.createDataFrame([(t,) for t in times], schema))

    def of(self, value: Callable[[int], int]) -> Column:
        """The long column ``value(t)`` of each row's instant t (``value`` runs here, in Python)."""
        values = {t: int(value(t)) for t in self.times}
        distinct = set(values.values())
        if len(distinct) == 1:
            return F.lit(distinct.pop()).cast("long")
        pairs = [x for t, v in values.items() for x in (F.lit(t).cast("long"), F.lit(v).cast("long"))]
        return F.element_at(F.create_map(*pairs), F.col(INSTANT))


def time_column(value) -> Column:
    """A time as a long column: ``value`` itself when it is a column (of the instant), else a literal."""
    return value if isinstance(value, Column) else F.lit(int(value)).cast("long")


def latest(df: DataFrame, n: int) -> DataFrame:
    """The n most recent rows of each instant (``intervals.RECENCY``, as TRIPLES n picks them at one)."""
    rank = scratch("rank")
    order = Window.partitionBy(INSTANT).orderBy(*latest_first())
    return df.withColumn(rank, F.row_number().over(order)).filter(F.col(rank) <= int(n)).drop(rank)


def constant(df: DataFrame, lo, hi, instants: Instants) -> DataFrame:
    """Mappings every instant holds (a background pattern, VALUES): one copy per instant — unless
    ``df`` already carries one (a pattern over a snapshot) — each with the interval [lo, hi]
    (numbers, or columns of the instant)."""
    if INSTANT not in df.columns:
        df = df.crossJoin(instants.frame)
    return canonical(df.select(*var_columns(df), time_column(lo).alias(T_START), time_column(hi).alias(T_END)))


class Ops:
    """The operator family ``cep.engines.spark.evaluate``'s walk builds with (as it does with the
    modules ``intervals`` and ``lifetimes``), bound to the instants: the interval operators as they
    are (NO_TAIL's t the row's instant), :func:`constant` copying per instant, each window the
    content of every instant's window at once."""

    EXTRA = EXTRA
    canonical = staticmethod(canonical)
    join = staticmethod(join)
    union = staticmethod(union)
    left_join = staticmethod(left_join)
    within_item = staticmethod(within_item)
    seq = staticmethod(seq)
    seq_wo = staticmethod(seq_wo)
    no_head = staticmethod(no_head)

    def __init__(self, instants: Instants):
        self.instants = instants
        self._windows = W.WindowFunctions(sliding=self._range, stepped=self._step, count=self._triples,
                                          landmark=self._all)

    def constant(self, df: DataFrame, lo, hi) -> DataFrame:
        return constant(df, lo, hi, self.instants)

    def no_tail(self, o1: DataFrame, o2: DataFrame, t=None) -> DataFrame:
        return no_tail(o1, o2, F.col(INSTANT))

    def window(self, stream: DataFrame, spec, t=None, time_unit: str = "ms") -> DataFrame:
        """``intervals.window`` at each instant: the stream's items each instant's window holds,
        clipped to it, with the ``INSTANT``."""
        return W.apply_window(spec, time_unit, self._windows, stream)

    def _each(self, stream: DataFrame) -> DataFrame:
        return stream.select(ITEM, S, P, O, T_START, T_END).crossJoin(self.instants.frame)

    def _clipped(self, df: DataFrame, lo: Column | None, hi: Column) -> DataFrame:
        start = F.col(T_START) if lo is None else F.greatest(F.col(T_START), lo)
        return df.select(ITEM, S, P, O, start.alias(T_START), F.least(F.col(T_END), hi).alias(T_END), INSTANT)

    def _range(self, stream: DataFrame, T: int, at: Column | None = None) -> DataFrame:
        hi = F.col(INSTANT) if at is None else at            # intervals.w_range at each instant
        lo = hi - F.lit(int(T))
        held = self._each(stream).filter((F.col(T_START) <= hi) & (F.col(T_END) >= lo))
        return self._clipped(held, lo, hi)

    def _step(self, stream: DataFrame, T: int, step: int) -> DataFrame:
        return self._range(stream, T, self.instants.of(lambda t: close_instant(t, step)))

    def _all(self, stream: DataFrame) -> DataFrame:
        hi = F.col(INSTANT)
        return self._clipped(self._each(stream).filter(F.col(T_START) <= hi), None, hi)

    def _triples(self, stream: DataFrame, n: int) -> DataFrame:
        hi = F.col(INSTANT)
        return self._clipped(latest(self._each(stream).filter(F.col(T_START) <= hi), n), None, hi)
