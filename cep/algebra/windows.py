"""Windows of CQELS-CEP queries (CQELS-CEP §4.1; C-SPARQL; CQL): frozen dataclasses.

Part of the algebra (``cep.algebra.patterns`` re-exports every name here). ``Range`` is the paper's
time-based window ``w_RANGE`` (slide 1) or C-SPARQL's ``RANGE .. STEP`` / ``TUMBLING``;
``Triples`` the count-based ``TRIPLES n``; ``Now`` and ``All`` CQL's NOW and UNBOUNDED windows.
Every engine evaluates them through ``apply_window``: which kind a window is and its parameters in
ticks are decided there, once; each engine brings its own functions (``WindowFunctions``).

C-SPARQL's windows (``FROM STREAM``) follow RSEP-QL's definition by default: the window closing at
c holds the items stamped τ with c − ρ < τ ≤ c, closes fall on the multiples of the step, and an
evaluation instant whose windows are empty is answered. ``WindowConvention`` offers the C-SPARQL
0.9 engine's conventions instead (left-closed [c − ρ, c), closes at t0 + kσ, no report for empty
windows); ``WindowConvention.content`` is the one place that turns a window, an evaluation
instant and a convention into the τ a window holds, for every engine.
"""
from __future__ import annotations

import typing as _t
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from rdfcore.errors import SidecarError

__all__ = ["TIME_UNITS", "Duration", "Range", "Triples", "Now", "All", "Window", "WINDOW_TYPES",
           "WindowFunctions", "apply_window", "WindowConvention", "WindowConventionError", "RIGHT_CLOSED",
           "LEFT_CLOSED", "BOUNDS", "REPORT", "SKIP", "EMPTY_WINDOWS", "RSEPQL_WINDOWS", "CSPARQL_ENGINE_WINDOWS"]

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


# --- C-SPARQL's window conventions ---------------------------------------------------------------

RIGHT_CLOSED, LEFT_CLOSED = "right-closed", "left-closed"
#: ``WindowConvention.bounds``: (c − ρ, c] (RSEP-QL, the default) or [c − ρ, c) (the C-SPARQL engine)
BOUNDS = (RIGHT_CLOSED, LEFT_CLOSED)
REPORT, SKIP = "report", "skip"
#: ``WindowConvention.empty``: answer an instant whose windows are all empty (default), or give no rows
EMPTY_WINDOWS = (REPORT, SKIP)


class WindowConventionError(SidecarError, ValueError):
    """A window convention that is malformed, or that a query or an engine cannot apply (says which
    and what was expected)."""


@dataclass(frozen=True)
class WindowConvention:
    """How the windows of a C-SPARQL query (``FROM [NAMED] STREAM``) are bounded and reported.

    The default is RSEP-QL's definition, which the project follows (``RSEPQL_WINDOWS``);
    ``CSPARQL_ENGINE_WINDOWS`` is the C-SPARQL 0.9 engine's (left-closed, empty windows skipped).

    * ``bounds``: ``right-closed`` — the window closing at c holds c − ρ < τ ≤ c (RSEP-QL's
      W^τ(α, β)); ``left-closed`` — it holds c − ρ ≤ τ < c (the engine's [o, c)). Over integer
      ticks the left-closed window at c holds what the right-closed one holds at c − 1, reported
      at c. ``TRIPLES n`` and ``ALL`` follow: the last n triples / every triple with τ ≤ c, or τ < c.
      ``NOW`` (τ = c) has no left-closed form (it would always be empty) and is refused.
    * ``start``: t0, the phase of the closes: a STEP σ / TUMBLING window (σ = ρ) closes at
      t0 + kσ for every integer k, COMPUTED EVERY p reports at t0 + kp; only t0 mod σ matters.
      A window that slides by one tick, ``TRIPLES`` and ``ALL`` close at every instant, whatever t0.
    * ``empty``: ``report`` — an evaluation instant is answered even when its windows hold nothing
      (an AGGREGATE over nothing gives its value over nothing, ``COUNT`` 0); ``skip`` — an
      evaluation instant at which EVERY window of the query (FROM STREAM and FROM NAMED STREAM
      alike) holds no stream triple gives no rows at all, background answers included. As soon as
      one window holds a triple the instant is answered as usual, even when WHERE matches nothing
      in it: the engine reports nothing when its window has no triple, and with several streams we
      read "its window" as the union of the windows (one stream: exactly the engine's rule).
    """

    bounds: str = RIGHT_CLOSED
    start: int = 0
    empty: str = REPORT

    def __post_init__(self) -> None:
        if self.bounds not in BOUNDS:
            raise WindowConventionError(f"window bounds must be one of {', '.join(BOUNDS)}, got {self.bounds!r}")
        if isinstance(self.start, bool) or not isinstance(self.start, int):
            raise WindowConventionError(f"the window start must be an integer number of ticks, got {self.start!r}")
        if self.empty not in EMPTY_WINDOWS:
            raise WindowConventionError(f"empty windows must be one of {', '.join(EMPTY_WINDOWS)}, got {self.empty!r}")

    @property
    def is_default(self) -> bool:
        """Whether this is RSEP-QL's convention (what the engines do without one)."""
        return self == RSEPQL_WINDOWS

    @property
    def lag(self) -> int:
        """How many ticks after its time τ an item first counts in a window closing every tick
        (0 right-closed, 1 left-closed): content changes happen this much later."""
        return 1 if self.bounds == LEFT_CLOSED else 0

    def close(self, t: int, step: int) -> int:
        """The last close at or before t of a window closing every ``step`` ticks: t0 + ⌊(t − t0)/σ⌋σ."""
        if step <= 0:
            raise ValueError(f"a window step must be positive, got {step}")
        t, step, t0 = int(t), int(step), int(self.start)
        return t0 + ((t - t0) // step) * step

    def content(self, spec: "Window", c: int, time_unit: str = "ms") -> tuple[int | None, int, int | None]:
        """What window ``spec`` holds at evaluation instant c: (lo, hi, n) — the items whose time τ
        has lo ≤ τ ≤ hi (lo None: no lower bound), and of those only the n latest triples when n
        is not None (``TRIPLES n``). The one definition every engine filters with (class doc)."""
        lag = self.lag
        match spec:
            case Now():
                if lag:
                    raise WindowConventionError("[NOW] holds the items stamped at the evaluation instant c; a "
                                                "left-closed window [c, c) holds none. Use [RANGE 1] (the items "
                                                "of c - 1), or right-closed windows")
                return int(c), int(c), None
            case All():
                return None, int(c) - lag, None
            case Triples(n=n):
                return None, int(c) - lag, n
            case Range():
                alpha = spec.range.ticks(time_unit)
                top = self.close(c, spec.step_ticks(time_unit))
                return top - alpha + 1 - lag, top - lag, None
        raise TypeError(f"unknown window {spec!r}")

    def __str__(self) -> str:
        return f"windows {self.bounds}, start {self.start}, empty windows {self.empty}"


#: RSEP-QL's windows (c − ρ, c], closes at the multiples of the step, empty windows answered: the default
RSEPQL_WINDOWS = WindowConvention()
#: the C-SPARQL 0.9 engine's: [c − ρ, c), no report for an instant whose windows are all empty (t0 = 0)
CSPARQL_ENGINE_WINDOWS = WindowConvention(LEFT_CLOSED, 0, SKIP)
