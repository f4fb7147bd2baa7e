"""The protocol of an engine's operator set: the operators a walk of the algebra calls
(CQELS-CEP §4.1-4.2), whatever its relations are, and ``supports``, whether the engine can
evaluate a query at all.

An operator set is a module (PEP 544: a module can implement a protocol): ``cep.engines.driver.rows``
(Python rows) and ``cep.engines.driver.columnar`` (numpy columns), every instant at once, walked by
``cep.engines.driver.walk``; ``cep.engines.spark.intervals`` (⟦Q, t⟧ at one instant t) and
``cep.engines.spark.lifetimes`` (every instant at once), walked by ``cep.engines.spark.evaluate``.
An operator set that evaluates every instant at once takes ``t`` and does not read it. The driver's
operator sets conform in full. The Spark ones have the operators but no ``supports``: the Spark
walk refuses what it cannot evaluate as it meets it (``UnsupportedQueryError``), and Spark is the
engine the others leave a query to. ``tests/test_cep_protocol.py`` checks each module.

Each walk needs more than this from its operator set: ``cep.engines.spark.evaluate`` the Spark
plan's columns (``EXTRA``, ``canonical``, ``constant``, ``within_item``), ``cep.engines.driver.walk``
a window's BGP, FILTER and narrowing (``cep.engines.driver.walk.DriverOperators``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from cep import algebra as A

__all__ = ["Operators"]

#: a relation of the operator set: mappings with intervals (and, every instant at once, lifetimes)
R = TypeVar("R")


@runtime_checkable
class Operators(Protocol[R]):
    """The operators on sets of mappings with intervals (DESIGN.md "Operators"; CQELS-CEP §4.2),
    the window function (§4.1) and ``supports``."""

    def supports(self, query: A.Query, /) -> str | None:
        """Why this engine cannot evaluate ``query`` (its caller then takes another), or None."""

    def window(self, stream: Any, spec: A.Window, t: int | None, time_unit: str = "ms", /) -> Any:
        """The content of window ``spec`` over ``stream`` at t, or at every instant with lifetimes
        (``cep.algebra.windows.apply_window`` picks the engine's function for the kind of
        window): what a BGP inside the window is matched in."""

    def join(self, left: R, right: R, /) -> R:
        """JOIN(Ω1, Ω2): compatible pairs, the intersection of their intervals (eq. 2)."""

    def union(self, left: R, right: R, /) -> R:
        """OR(Ω1, Ω2) = Ω1 ∪ Ω2."""

    def seq(self, left: R, right: R, /) -> R:
        """SEQ(Ω1, Ω2): compatible pairs where Ω1's ends before Ω2's starts, interval [t1, t4] (eq. 4)."""

    def seq_wo(self, left: R, negated: R, right: R, /) -> R:
        """SEQ_WO(Ω1, Ω2, Ω3): SEQ(Ω1, Ω3) without a compatible Ω2 row inside [t2, t5] (eq. 8)."""

    def no_head(self, negated: R, right: R, /) -> R:
        """NO_HEAD(Ω1, Ω2): the Ω2 rows no compatible Ω1 row ended before (eq. 6)."""

    def no_tail(self, left: R, negated: R, t: int | None, /) -> R:
        """NO_TAIL(Ω1, Ω2, t): the Ω1 rows no compatible later Ω2 row has ended by t (eq. 7)."""

    def left_join(self, left: R, right: R, keep: Callable[[R], Any] | None = None, /) -> R:
        """OPTIONAL: JOIN's pairs that ``keep`` keeps (the condition; it returns the kept pairs,
        or a row mask where the operator set says so), and each left row without one."""
