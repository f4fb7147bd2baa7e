"""Windows of CQELS-CEP queries (CQELS-CEP §4.1; C-SPARQL; CQL): frozen dataclasses.

Part of the algebra (``cep.algebra.patterns`` re-exports every name here). ``Range`` is the paper's
time-based window ``w_RANGE`` (slide 1) or C-SPARQL's ``RANGE .. STEP`` / ``TUMBLING``;
``Triples`` the count-based ``TRIPLES n``; ``Now`` and ``All`` CQL's NOW and UNBOUNDED windows.
Every engine evaluates them through ``apply_window``: which kind a window is and its parameters in
ticks are decided there, once; each engine brings its own functions (``WindowFunctions``).
"""
from __future__ import annotations

import typing as _t
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["TIME_UNITS", "Duration", "Range", "Triples", "Now", "All", "Window", "WINDOW_TYPES",
           "WindowFunctions", "apply_window"]

# --- windows (§4.1; C-SPARQL) ------------------------------------------------------------------

TIME_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
"""Duration units, in milliseconds."""


@dataclass(frozen=True)
class Duration:
    """``amount`` of ``unit`` (``"ms"``, ``"s"``, ``"m"``, ``"h"``, ``"d"``), or of the stream's own
    time units when ``unit`` is None (a plain number in the query, ``[RANGE 10]``)."""

    amount: int | float
    unit: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.amount, bool) or not isinstance(self.amount, (int, float)):
            raise TypeError(f"Duration.amount must be a number, got {self.amount!r}")
        if self.amount < 0:
            raise ValueError(f"Duration.amount must not be negative, got {self.amount!r}")
        if self.unit is not None and self.unit not in TIME_UNITS:
            raise ValueError(f"Duration.unit must be one of {tuple(TIME_UNITS)} or None, "
                             f"got {self.unit!r}")

    def ticks(self, time_unit: str = "ms") -> int:
        """This duration as a whole number of ``time_unit`` ticks (the unit of the stream's
        timestamps). A unit-less duration is already in ticks. Raises ValueError when the duration
        is not a whole number of ticks (``500ms`` in seconds)."""
        if time_unit not in TIME_UNITS:
            raise ValueError(f"time_unit must be one of {tuple(TIME_UNITS)}, got {time_unit!r}")
        amount = Fraction(str(self.amount)) if isinstance(self.amount, float) \
            else Fraction(self.amount)
        if self.unit is not None:
            amount = amount * TIME_UNITS[self.unit] / TIME_UNITS[time_unit]
        if amount.denominator != 1:
            raise ValueError(f"duration {self} is not a whole number of {time_unit} "
                             f"(it is {float(amount)} {time_unit})")
        return int(amount)

    def __str__(self) -> str:
        amount = self.amount
        text = str(int(amount)) if isinstance(amount, float) and amount.is_integer() else str(amount)
        return text + (self.unit or "")


@dataclass(frozen=True)
class Range:
    """``[RANGE d]`` (sliding by 1 tick, §4.1 w_RANGE), ``[RANGE d STEP s]`` (C-SPARQL: slides by
    s, reports when a window closes) or ``[RANGE d TUMBLING]`` (= ``STEP d``)."""

    range: Duration
    step: Duration | None = None
    tumbling: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.range, Duration):
            raise TypeError(f"Range.range must be a Duration, got {self.range!r}")
        if self.step is not None and not isinstance(self.step, Duration):
            raise TypeError(f"Range.step must be a Duration or None, got {self.step!r}")
        if self.tumbling and self.step is not None:
            raise ValueError("a TUMBLING window has no separate STEP (its step is its range)")

    def step_ticks(self, time_unit: str = "ms") -> int:
        """The slide in ticks: ``step``, the range when tumbling, else 1 (§4.1, slide 1)."""
        if self.tumbling:
            return self.range.ticks(time_unit)
        return 1 if self.step is None else self.step.ticks(time_unit)

    def __str__(self) -> str:
        if self.tumbling:
            return f"[RANGE {self.range} TUMBLING]"
        if self.step is not None:
            return f"[RANGE {self.range} STEP {self.step}]"
        return f"[RANGE {self.range}]"


@dataclass(frozen=True)
class Triples:
    """``[TRIPLES n]``: the last n stream *triples* by time (a count-based window, C-SPARQL /
    CQL); ``cep.engines.spark.intervals`` documents the order used to break ties."""

    n: int

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"Triples.n must be a positive int, got {self.n!r}")

    def __str__(self) -> str:
        return f"[TRIPLES {self.n}]"


@dataclass(frozen=True)
class Now:
    """``[NOW]``: the items valid at the evaluation time t (CQL's NOW window)."""

    def __str__(self) -> str:
        return "[NOW]"


@dataclass(frozen=True)
class All:
    """``[ALL]``: the landmark window, every item up to t (CQL's UNBOUNDED window)."""

    def __str__(self) -> str:
        return "[ALL]"


Window = _t.Union[Range, Triples, Now, All]
WINDOW_TYPES = (Range, Triples, Now, All)
"""Every window type."""


class WindowFunctions(_t.NamedTuple):
    """An engine's function for each kind of window. Each is called with the engine's own leading
    arguments (``apply_window``'s ``args``: its stream, and the instant where it has one), then
    the window's parameters in ticks."""

    #: ``(*args, T)``: RANGE T sliding by one tick (§4.1 w_RANGE); NOW is RANGE 0
    sliding: Callable
    #: ``(*args, T, s)``: RANGE T STEP s, reported when a window closes; TUMBLING is STEP T
    stepped: Callable
    #: ``(*args, n)``: TRIPLES n
    count: Callable
    #: ``(*args)``: ALL
    landmark: Callable


def apply_window(spec: Window, time_unit: str, functions: WindowFunctions, *args):
    """Window ``spec`` as an engine evaluates it: the function of ``functions`` for the kind of
    ``spec``, called with ``args`` and the window's parameters in ``time_unit`` ticks
    (``WindowFunctions``). The one place that maps a window to a kind and its parameters."""
    match spec:
        case Now():
            return functions.sliding(*args, 0)
        case All():
            return functions.landmark(*args)
        case Triples(n=n):
            return functions.count(*args, n)
        case Range(step=None, tumbling=False):
            return functions.sliding(*args, spec.range.ticks(time_unit))
        case Range():
            return functions.stepped(*args, spec.range.ticks(time_unit), spec.step_ticks(time_unit))
    raise TypeError(f"unknown window {spec!r}")
