"""The plan phase of continuous evaluation: what a continuous answer is, what to keep (pure Python).

Continuous evaluation answers a CQELS-CEP query as its streams arrive (``cep.stream.run``). Its
answers are *defined* by the one-instant semantics ``cep.evaluate(query, ..., at=t)``: this module
checks that a query can run continuously and describes its windows; ``cep.lifetimes`` computes
every instant's answer in one plan; ``cep.stream`` runs that plan per micro-batch.

Semantics (README "Continuous queries")
---------------------------------------

* **Instants.** The answers are those of ⟦Q, t⟧ at every integer instant t (ticks of the time
  unit) from the first event time on. Nothing enumerates instants: each row of
  ``cep.lifetimes`` carries its *lifetime* [LIFE_FROM, LIFE_TO], the instants at which it is in
  ⟦Q, t⟧, so the instants where the result changes — an arrival, an item leaving a window (a
  negated head's expiry makes NO_HEAD answers appear with no arrival), a STEP/TUMBLING close —
  are where lifetimes begin and end. A micro-batch costs one plan however many instants it spans.

* **Watermark and finality.** M is the largest event time seen; the watermark is W = M − lateness
  (``--lateness D``, default 0). An item only affects instants at or after its start, so an instant
  t < W is *final*: everything still to come starts at ≥ W. A batch evaluates the instants
  (done, W − 1] — with lateness 0 the instant M itself waits, since more items of time M may come.
  An arriving item that starts at or before ``done`` (an instant already evaluated) is *late*: it
  goes to the rejects with reason ``late`` and is counted, never used. Out-of-order input within
  the lateness therefore gives exactly the in-order answers. End of input (trigger
  ``available-now``) closes the stream: the instants up to M are evaluated and W becomes M + 1.

* **Output = Istream.** Each answer is emitted once, at the first instant at which it holds
  (output key ``_at``). Its key is the mapping plus its interval [t1, t2]:

  - *point events*: the interval is made of the events' times, the same at every instant;
  - *interval events*: a window clips an item to [max(t1, t − T), min(t2, t)], which moves with t
    while the item is growing (t < t2) or shrinking out of a RANGE (t > t1 + T). Each clipped
    interval is a different answer of ⟦Q, t⟧, so each is reported once, at the instant it appears
    (``cep.lifetimes`` gives such an item one row per instant of the moving part). That is what the
    one-instant semantics says, and it is why a long interval event costs rows per tick;
  - *background-only answers* (eq. 17: interval [since, t] at t, ``since`` = MIN_TIME unless the
    background's change time is given) would be a new answer at every instant; the key is the mapping plus ``since``
    with an open end (``cep.lifetimes.OPEN_END``), reported once, with ``_end`` = ``_at``.

  Rstream (``emit="rstream"``) reports all of ⟦Q, t⟧ at each instant t where it differs from
  ⟦Q, t − 1⟧; Dstream (``emit="dstream"``) reports ⟦Q, t − 1⟧ − ⟦Q, t⟧ at t. NO_TAIL answers are
  provisional by definition (a later blocker removes them): Istream reports them when they first
  hold, Dstream when they stop holding.

* **State.** To evaluate the instants after ``done`` the runtime needs the items some window can
  still hold there: an item whose lifetime in every window of its stream ends by ``done`` is
  dropped (RANGE T: t2 + T; STEP s: the last close holding it + s − 1; TRIPLES n: until n later
  triples arrived). So the items kept are bounded by the horizon (largest RANGE + STEP, plus the
  lateness for items still in flight) or by n, however long the stream runs. ``ALL`` keeps
  everything forever and is refused. Two small sets go with the items: the emitted answer keys
  (Istream's "once": a key is dropped when its interval starts before the oldest kept item, as it
  can no longer be found; an open-ended background key stays) and, for Rstream/Dstream, the
  answers alive at ``done`` (the previous instant of the next batch's first one).

Why rows of an evaluated instant are cut, not trusted: after pruning, the state no longer holds
the items that blocked an old candidate, so a lifetime computed now may look alive at an instant
≤ ``done`` where it was not. A batch only looks at [done + 1, W − 1] and learns "already emitted"
from the stored keys, never from recomputed history.
"""
from __future__ import annotations

from dataclasses import dataclass

from cep import algebra as A
from reasoner.errors import SidecarError

__all__ = ["ContinuousError", "WindowRule", "ContinuousPlan", "plan", "EMITS", "ISTREAM", "RSTREAM", "DSTREAM"]

ISTREAM, RSTREAM, DSTREAM = "istream", "rstream", "dstream"
EMITS = (ISTREAM, RSTREAM, DSTREAM)

#: window kinds of a WindowRule
SLIDING, STEP, COUNT = "sliding", "step", "count"


class ContinuousError(SidecarError, ValueError):
    """A query or option that continuous evaluation cannot run (says why and what to do)."""


@dataclass(frozen=True)
class WindowRule:
    """One window of the query as the continuous runtime sees it (ticks of the plan's time unit).

    ``kind``: ``sliding`` (RANGE T / NOW, slide 1), ``step`` (RANGE T STEP s / TUMBLING),
    or ``count`` (TRIPLES n).
    """

    stream: A.Term
    kind: str
    range: int | None = None   # T (sliding, step)
    step: int | None = None    # s (step)
    count: int | None = None   # n (count)

    def reach(self) -> int | None:
        """How long after its end an item may still be in this window (None: by count)."""
        return self.range if self.kind in (SLIDING, STEP) else None


@dataclass(frozen=True)
class ContinuousPlan:
    """A query ready to run continuously: its windows as rules, the options, the streams read."""

    query: A.Query
    time_unit: str
    lateness: int
    windows: tuple[WindowRule, ...]
    emit: str = ISTREAM

    @property
    def streams(self) -> tuple[A.Term, ...]:
        """The streams the query reads, in order of first use."""
        return tuple(dict.fromkeys(w.stream for w in self.windows))

    def rules_for(self, stream: A.Term) -> tuple[WindowRule, ...]:
        return tuple(w for w in self.windows if w.stream == stream)

    @property
    def horizon(self) -> int | None:
        """The longest time an item stays relevant after its end: largest RANGE (+ STEP) plus the
        lateness; None when a count window decides (TRIPLES n keeps n triples however old)."""
        reaches = []
        for w in self.windows:
            r = w.reach()
            if r is None:
                return None
            reaches.append(r + (w.step or 0))
        return max(reaches) + self.lateness


def _rule(stream: A.StreamPattern, time_unit: str) -> WindowRule:
    w = stream.window
    where = f"window {stream.name} on {stream.stream}"
    try:
        if isinstance(w, A.Now):
            return WindowRule(stream.stream, SLIDING, range=0)
        if isinstance(w, A.Triples):
            return WindowRule(stream.stream, COUNT, count=w.n)
        if isinstance(w, A.All):
            raise ContinuousError(
                f"{where}: an [ALL] window keeps every item forever, which a continuous query cannot "
                f"(its state would grow without bound); use a RANGE window (RANGE d covers the last d), "
                f"or evaluate at one instant with --at T")
        if isinstance(w, A.Range):
            T = w.range.ticks(time_unit)
            if w.step is None and not w.tumbling:
                return WindowRule(stream.stream, SLIDING, range=T)
            step = w.step_ticks(time_unit)
            if step <= 0:
                raise ContinuousError(f"{where}: a window step must be positive, got {w}")
            return WindowRule(stream.stream, STEP, range=T, step=step)
    except ValueError as exc:
        if isinstance(exc, ContinuousError):
            raise
        raise ContinuousError(f"{where}: {exc}") from None
    raise TypeError(f"unknown window {w!r}")


def plan(query: A.Query, time_unit: str = "ms", lateness: int = 0, emit: str = ISTREAM) -> ContinuousPlan:
    """Check that ``query`` can run continuously and describe its windows.

    ``lateness``: allowed lateness in ticks (≥ 0); ``emit``: istream, rstream or dstream.
    """
    if not isinstance(query, A.Query):
        raise TypeError(f"plan() needs a cep.algebra.Query, got {type(query).__name__}")
    if isinstance(lateness, bool) or not isinstance(lateness, int) or lateness < 0:
        raise ContinuousError(f"the allowed lateness must be a non-negative number of {time_unit}, got {lateness!r}")
    if emit not in EMITS:
        raise ContinuousError(f"unknown output stream {emit!r}; expected one of {', '.join(EMITS)}")
    if A.is_epsparql(query):
        raise ContinuousError("an EP-SPARQL query is evaluated at one instant (query --at T, cep.evaluate); "
                              "continuous EP-SPARQL is not built yet")
    if A.is_rsepql(query):
        raise ContinuousError("an RSEP-QL query is evaluated at given instants (query --at T1,T2,...; "
                              "cep.evaluate_sequence); continuous RSEP-QL is not built yet")
    if A.is_csparql(query):
        raise ContinuousError("a C-SPARQL query is evaluated at given instants (query --at T1,T2,...); "
                              "continuous C-SPARQL is not built yet")
    if query.modifiers is not None:
        raise ContinuousError("ORDER BY / LIMIT / OFFSET are applied per evaluation instant (query --at T1,T2,...); "
                              "continuous evaluation does not apply them yet")
    if any(isinstance(n, A.SubSelect) and n.modifiers is not None for n in A.walk(query.form)):
        raise ContinuousError("a sub-query's ORDER BY / LIMIT / OFFSET are applied per evaluation instant (query --at "
                              "T1,T2,...); continuous evaluation does not apply them yet")
    patterns = A.stream_patterns(query.pattern)
    if not patterns:
        raise ContinuousError("the query has no WINDOW over a stream, so there is nothing to follow continuously; "
                              "evaluate it once (--at T) instead")
    windows = tuple(dict.fromkeys(_rule(p, time_unit) for p in patterns))
    return ContinuousPlan(query, time_unit, lateness, windows, emit)
