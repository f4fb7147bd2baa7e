"""⟦Q, t⟧ at many evaluation instants in ONE plan, for queries whose answers are defined per
instant (C-SPARQL's snapshots): the operators of ``cep.engines.spark.intervals`` over rows that
each carry the instant they belong to.

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
* the snapshot of each instant (``cep.engines.spark.csparql.snapshot_graph_at``).

:meth:`Instants.of` maps each instant to a number computed in Python (the close instant of a
snapshot, a window's bounds), as a map literal looked up by the row's instant: the same Python
definition the per-instant evaluation uses, so the two cannot drift.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from cep.engines.columns import T_END, T_START, var_column, var_columns
from cep.engines.spark.intervals import canonical, join, left_join, union, within_item

__all__ = ["INSTANT", "EXTRA", "Instants", "Ops", "constant", "time_column"]

#: the evaluation instant a row belongs to: a variable column no query can name
INSTANT = var_column("·at")
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
    are, :func:`constant` copying per instant. The event operators (windows over a stream, SEQ and
    its negations) read one instant's t and are not offered."""

    EXTRA = EXTRA
    canonical = staticmethod(canonical)
    join = staticmethod(join)
    union = staticmethod(union)
    left_join = staticmethod(left_join)
    within_item = staticmethod(within_item)

    def __init__(self, instants: Instants):
        self.instants = instants

    def constant(self, df: DataFrame, lo, hi) -> DataFrame:
        return constant(df, lo, hi, self.instants)
