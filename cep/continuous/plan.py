"""The plan phase of continuous evaluation: what a continuous answer is, what to keep (pure Python).

Continuous evaluation answers a query as its streams arrive (``cep.continuous.runner.run``). A CQELS-CEP
query's answers are *defined* by the one-instant semantics ``cep.evaluate(query, ..., at=t)``: this module
checks that a query can run continuously and describes its windows; ``cep.engines.spark.lifetimes`` computes
every instant's answer in one plan; ``cep.continuous.runner`` runs that plan per micro-batch.

Semantics (README "Continuous queries")
---------------------------------------

* **Instants.** The answers are those of ⟦Q, t⟧ at every integer instant t (ticks of the time
  unit) from the first event time on. Nothing enumerates instants: each row of
  ``cep.engines.spark.lifetimes`` carries its *lifetime* [LIFE_FROM, LIFE_TO], the instants at which it is in
  ⟦Q, t⟧, so the instants where the result changes — an arrival, an item leaving a window (a
  negated head's expiry makes NO_HEAD answers appear with no arrival), a STEP/TUMBLING close —
  are where lifetimes begin and end. A micro-batch costs one plan however many instants it spans.

* **Watermark and finality.** M is the largest event time seen; the watermark is W = M − lateness
  (``--lateness D``, default 0). An item only affects instants at or after its start, so an instant
  t < W is *final*: everything still to come starts at ≥ W. A batch evaluates the instants
  (done, W − 1] — with lateness 0 the instant M itself waits, since more items of time M may come.
  An arriving item that starts at or before ``done`` (an instant already evaluated) is *late*: it
  goes to the rejects with reason ``late`` and is counted, never used. Under C-SPARQL's left-closed
  windows an item stamped τ first counts at τ + 1, so one stamped ``done`` is not late
  (``ContinuousPlan.last_late``). Out-of-order input within
  the lateness therefore gives exactly the in-order answers. End of input (trigger
  ``available-now``) closes the stream: the instants up to ``end_instant`` are evaluated — M, or
  under C-SPARQL's left-closed windows [c − ρ, c) the first close after M of every window (the
  items stamped M are in no window closing at or before M) — and W becomes that instant + 1.

* **Output = Istream.** Each answer is emitted once, at the first instant at which it holds
  (output key ``_at``). Its key is the mapping plus its interval [t1, t2]:

  - *point events*: the interval is made of the events' times, the same at every instant;
  - *interval events*: a window clips an item to [max(t1, t − T), min(t2, t)], which moves with t
    while the item is growing (t < t2) or shrinking out of a RANGE (t > t1 + T). Each clipped
    interval is a different answer of ⟦Q, t⟧, so each is reported once, at the instant it appears
    (``cep.engines.spark.lifetimes`` gives such an item one row per instant of the moving part). That is what the
    one-instant semantics says, and it is why a long interval event costs rows per tick;
  - *background-only answers* (eq. 17: interval [since, t] at t, ``since`` = MIN_TIME unless the
    background's change time is given) would be a new answer at every instant; the key is the mapping plus ``since``
    with an open end (``cep.algebra.timeline.OPEN_END``), reported once, with ``_end`` = ``_at``.

  Rstream (``emit="rstream"``) reports all of ⟦Q, t⟧ at each instant t where it differs from
  ⟦Q, t − 1⟧; Dstream (``emit="dstream"``) reports ⟦Q, t − 1⟧ − ⟦Q, t⟧ at t. NO_TAIL answers are
  provisional by definition (a later blocker removes them): Istream reports them when they first
  hold, Dstream when they stop holding.

* **State.** To evaluate the instants after ``done`` the runtime needs the items some window can
  still hold there: an item whose lifetime in every window of its stream ends by ``done`` is
  dropped (RANGE T: t2 + T; STEP s: the last close holding it + s − 1; TRIPLES n: until n later
  triples arrived). So the items kept are bounded by the horizon (largest RANGE + STEP, plus the
  lateness for items still in flight) or by n, however long the stream runs. An ``[ALL]``
  (landmark) window keeps every item for good: its state grows with the stream, as a landmark
  window's does in any engine (Esper's keep-all, RSEP-QL's W^λ); the plan says so in
  ``ContinuousPlan.warnings``, the run prints it, and ``state_items`` in the metrics shows it.
  Two small sets go with the items: the emitted answer keys
  (Istream's "once": a key is dropped when its interval starts before the oldest kept item, as it
  can no longer be found; an open-ended background key stays) and, for Rstream/Dstream, the
  answers alive at ``done`` (the previous instant of the next batch's first one).

Evaluation instants (C-SPARQL, RSEP-QL, EP-SPARQL; ``mode == INSTANTS``)
-----------------------------------------------------------------------
These languages define their answers at evaluation instants, not at every instant: C-SPARQL at its
windows' closes (or COMPUTED EVERY), RSEP-QL at a sequence of instants whose consuming policies make
each evaluation depend on the earlier ones. Such a plan is run by ``cep.continuous.instants``, one evaluation
per instant of ``evaluation_instants`` (every close of a STEP / TUMBLING window; for a window that
slides by one tick, the instants its content changes). EP-SPARQL names no window: a continuous run
needs a ``horizon`` D, and each instant t then sees the occurrences started in [t − D, t]. The
watermark, lateness, rejects and finality are the same as above; the state kept is given by
``keep_from``. A report policy can replace the instants: ``every`` P (``--every``) evaluates at the
multiples of P, as C-SPARQL's COMPUTED EVERY does (RSEP-QL, 001 §3.4: ET "can be expressed through
report policies"; the default, each content change, is its content-change policy).
``cep.continuous.instants``' module doc has the rest (output streams, the state).
A C-SPARQL plan may carry the C-SPARQL engine's window conventions (``ContinuousPlan.convention``,
``cep.algebra.WindowConvention``): closes at t0 + kσ (and COMPUTED EVERY / ``every`` at t0 + kp),
left-closed windows, whose content changes one tick after an item's time (``WindowConvention.lag``),
and no rows at an instant whose windows are all empty (the engines decide that per evaluation).

CQELS-CEP at evaluation instants (``cqels``)
--------------------------------------------
Some CQELS-CEP answers are defined at an instant and not as rows with lifetimes: ORDER BY / LIMIT /
OFFSET (the top n at t), NOW() (t itself), GROUP BY / aggregates over event clauses (a group's values
and cover change with its members). Such a query is evaluated at its windows' *content changes*,
CQELS's own report policy ("evaluations occur every time a new item appears", RSEP-QL 001 §3.4),
by ``cep.continuous.instants`` as the other languages are: each instant at which some item's content in some
window changes — its arrival, each tick an interval item grows or is clipped, its departure
(``_content_changes``, from ``cep.engines.spark.lifetimes``' windows). Between two of them the windows hold the
same, so ⟦Q, t⟧ differs only by what reads t itself (NOW(), and a background-only answer's [since, t]),
which is reported at the next change. ``--every D`` sets another report policy. The state is the
items a window can still hold (``keep_bounds``: by their end, the CQELS window being closed below).

Why rows of an evaluated instant are cut, not trusted: after pruning, the state no longer holds
the items that blocked an old candidate, so a lifetime computed now may look alive at an instant
≤ ``done`` where it was not. A batch only looks at [done + 1, W − 1] and learns "already emitted"
from the stored keys, never from recomputed history.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from cep import algebra as A
from cep.algebra import windows as W
from cep.algebra.windows import RSEPQL_WINDOWS, WindowConvention
from cep.algebra.timeline import MIN_TIME, close_instant
from rdfcore.errors import SidecarError
from cep.engines.rules import RulesError, check_rules
from cep.planner import rewrite

__all__ = ["ContinuousError", "WindowRule", "ContinuousPlan", "plan", "EMITS", "ISTREAM", "RSTREAM", "DSTREAM",
           "LIFETIMES", "INSTANTS", "evaluation_instants", "end_instant", "keep_from", "keep_bounds", "LANDMARK",
           "COUNT", "background_only"]

ISTREAM, RSTREAM, DSTREAM = "istream", "rstream", "dstream"
EMITS = (ISTREAM, RSTREAM, DSTREAM)

#: window kinds of a WindowRule
SLIDING, STEP, COUNT, LANDMARK = "sliding", "step", "count", "landmark"

#: how a plan is evaluated: every instant at once (CQELS-CEP, ``cep.engines.spark.lifetimes``), or one evaluation
#: per evaluation instant (C-SPARQL, RSEP-QL, EP-SPARQL; module doc, "Evaluation instants")
LIFETIMES, INSTANTS = "lifetimes", "instants"


class ContinuousError(SidecarError, ValueError):
    """A query or option that continuous evaluation cannot run (says why and what to do)."""


@dataclass(frozen=True)
class WindowRule:
    """One window of the query as the continuous runtime sees it (ticks of the plan's time unit).

    ``kind``: ``sliding`` (RANGE T / NOW, slide 1), ``step`` (RANGE T STEP s / TUMBLING),
    ``count`` (TRIPLES n) or ``landmark`` ([ALL]: every item from the start, for good).
    """

    stream: A.Term
    kind: str
    range: int | None = None   # T (sliding, step)
    step: int | None = None    # s (step)
    count: int | None = None   # n (count)

    def reach(self) -> int | None:
        """How long after its end an item may still be in this window (None: by count, or for good)."""
        return self.range if self.kind in (SLIDING, STEP) else None


@dataclass(frozen=True)
class ContinuousPlan:
    """A query ready to run continuously: its windows as rules, the options, the streams read."""

    query: A.Query
    time_unit: str
    lateness: int
    windows: tuple[WindowRule, ...]
    emit: str = ISTREAM
    mode: str = LIFETIMES
    #: C-SPARQL's COMPUTED EVERY (ticks): the evaluation instants are its multiples
    every: tuple[int, ...] = ()
    #: an RSEP-QL MATCH consumes what its answers use (chronological, recent)
    consuming: bool = False
    #: EP-SPARQL (``--horizon D``): each instant sees the occurrences started in its last D ticks
    lookback: int | None = None
    #: EP-SPARQL's CONSTRUCT rules (``cep.engines.rules``): each instant reads the Q-closure of what it sees
    rules: tuple = ()
    #: a CQELS-CEP query evaluated at its windows' content changes (module doc, "CQELS-CEP at
    #: evaluation instants"): CQELS-CEP's windows (closed lower bound, interval items)
    cqels: bool = False
    #: C-SPARQL: how the windows are bounded, when they close and whether empty ones report
    #: (``cep.algebra.WindowConvention``; checked against the query by ``plan``)
    convention: WindowConvention = RSEPQL_WINDOWS
    #: the query as written, when ``query`` is the planner's rewrite of it (``cep.planner.logical``;
    #: the checkpoint records the query as written); None: ``query`` is as written
    written: A.Query | None = field(default=None, compare=False)
    #: the planner's steps (``cep.planner.logical.Step``): what it rewrote, and why
    planning: tuple = field(default=(), compare=False)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a run tells its user before it starts: the landmark windows, whose state grows."""
        return tuple(f"the window on {w.stream} is [ALL] (landmark): every item of that stream stays in the state "
                     f"for good, so the state grows with the stream (state_items in the metrics); a RANGE window "
                     f"bounds it" for w in dict.fromkeys(self.windows) if w.kind == LANDMARK)

    @property
    def streams(self) -> tuple[A.Term, ...]:
        """The streams the query reads, in order of first use."""
        return tuple(dict.fromkeys(w.stream for w in self.windows))

    def rules_for(self, stream: A.Term) -> tuple[WindowRule, ...]:
        return tuple(w for w in self.windows if w.stream == stream)

    def last_late(self, done: int) -> int:
        """The latest event time of a *late* item once the instants up to ``done`` are evaluated
        (module doc, Watermark): an item counts from its time + the windows' lag on (one tick later
        under left-closed windows), so it is late when that instant is already evaluated."""
        return done - self.convention.lag

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


#: a window's rule, by kind (``cep.algebra.windows.apply_window``)
_RULES = W.WindowFunctions(sliding=lambda stream, T: WindowRule(stream, SLIDING, range=T),
                           stepped=lambda stream, T, step: WindowRule(stream, STEP, range=T, step=step),
                           count=lambda stream, n: WindowRule(stream, COUNT, count=n),
                           landmark=lambda stream: WindowRule(stream, LANDMARK))


def _rule(stream: A.Term, w: A.Window, where: str, time_unit: str) -> WindowRule:
    try:
        rule = W.apply_window(w, time_unit, _RULES, stream)
    except ValueError as exc:
        raise ContinuousError(f"{where}: {exc}") from None
    if rule.kind == STEP and rule.step <= 0:
        raise ContinuousError(f"{where}: a window step must be positive, got {w}")
    return rule


def plan(query: A.Query, time_unit: str = "ms", lateness: int = 0, emit: str = ISTREAM, *,
         horizon: int | None = None, streams=(), rules=(), every: int | None = None,
         window_convention: WindowConvention | None = None) -> ContinuousPlan:
    """Check that ``query`` can run continuously and describe its windows.

    ``lateness``: allowed lateness in ticks (≥ 0); ``emit``: istream, rstream or dstream.
    ``horizon`` (EP-SPARQL only, ticks): each instant sees the occurrences started in the last
    ``horizon`` ticks of ``streams`` (the stream IRIs an EP-SPARQL query reads: it names none).
    ``every`` (ticks; C-SPARQL, RSEP-QL, EP-SPARQL, and CQELS-CEP queries evaluated per instant):
    the report policy, evaluations at the multiples of ``every`` instead of each content change
    (module doc, "Evaluation instants"). ``window_convention`` (C-SPARQL only): the C-SPARQL engine's
    window conventions (``cep.algebra.WindowConvention``; None: RSEP-QL's); any other query refuses a
    convention other than the default (``WindowConventionError``).
    """
    if not isinstance(query, A.Query):
        raise TypeError(f"plan() needs a cep.algebra.patterns.Query, got {type(query).__name__}")
    convention = A.check_window_convention(query, window_convention)
    if isinstance(lateness, bool) or not isinstance(lateness, int) or lateness < 0:
        raise ContinuousError(f"the allowed lateness must be a non-negative number of {time_unit}, got {lateness!r}")
    if emit not in EMITS:
        raise ContinuousError(f"unknown output stream {emit!r}; expected one of {', '.join(EMITS)}")
    if rules:
        try:
            rules = check_rules(query, rules)
        except RulesError as exc:
            raise ContinuousError(str(exc)) from None
    if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every <= 0):
        raise ContinuousError(f"the report period (--every) must be a positive number of {time_unit}, got {every!r}")
    if A.is_epsparql(query):
        return _report_every(replace(_epsparql_plan(query, time_unit, lateness, emit, horizon, tuple(streams)),
                                     rules=tuple(rules)), every)
    if horizon is not None:
        raise ContinuousError("--horizon bounds what an EP-SPARQL query sees (it has no window); this query's "
                              "windows bound it already")
    if A.is_rsepql(query) or A.is_csparql(query):
        return _report_every(replace(_instants_plan(query, time_unit, lateness, emit), convention=convention), every)
    why = A.per_instant_only(query)
    if why is None and every is not None:
        raise ContinuousError("--every sets when C-SPARQL, RSEP-QL and EP-SPARQL queries are evaluated, and CQELS-CEP "
                              "queries whose answers are defined per instant (ORDER BY / LIMIT, NOW(), GROUP BY over "
                              "events); this query's answers hold at every instant, each reported when it first holds "
                              "(--emit rstream reports the whole answer wherever it changes)")
    if isinstance(query.form, A.Construct) and any(x.startswith("_:") for tp in query.form.template
                                                   for x in (tp.s, tp.p, tp.o) if isinstance(x, str)) \
            and background_only(query.pattern):
        raise ContinuousError("a CONSTRUCT template's blank nodes are named from their solution and its interval, "
                              "and an answer from the background alone has the interval [MIN_TIME, t], which "
                              "changes at every instant t; give that part of the pattern a stream, use an IRI or a "
                              "variable in the template, or evaluate at given instants with --at T")
    patterns = A.stream_patterns(query.pattern)
    if not patterns:
        raise ContinuousError("the query has no WINDOW over a stream, so there is nothing to follow continuously; "
                              "evaluate it once (--at T) instead")
    windows = tuple(dict.fromkeys(_rule(p.stream, p.window, f"window {p.name} on {p.stream}", time_unit)
                                  for p in patterns))
    logical = rewrite(query)       # the engines evaluate the planner's rewrite; the record keeps the query
    planned = dict(written=query if logical.changed else None, planning=logical.steps)
    if why is not None:     # one evaluation per content change (module doc)
        return _report_every(ContinuousPlan(logical.query, time_unit, lateness, windows, emit, INSTANTS, cqels=True,
                                            **planned), every)
    return ContinuousPlan(logical.query, time_unit, lateness, windows, emit, **planned)


def _report_every(cplan: ContinuousPlan, every: int | None) -> ContinuousPlan:
    """The plan with the report policy ``every`` (module doc, "Evaluation instants"); C-SPARQL's own
    COMPUTED EVERY is the query's, which a second period would contradict."""
    if every is None:
        return cplan
    if cplan.every:
        raise ContinuousError(f"the query gives COMPUTED EVERY already (every {', '.join(map(str, cplan.every))} "
                              f"{cplan.time_unit}); leave out --every")
    return replace(cplan, every=(every,))


def background_only(node) -> bool:
    """Whether ``node`` can give a mapping from the background alone (interval [MIN_TIME, t]: no
    stream pattern took part in it): a pattern without streams, a UNION with such a side, an
    OPTIONAL / MINUS whose left side is such; an event operator always binds its stream's times."""
    if not A.stream_patterns(node):
        return True
    match node:
        case A.Join(left=left, right=right):
            return background_only(left) and background_only(right)
        case A.Union(left=left, right=right):
            return background_only(left) or background_only(right)
        case A.LeftJoin(left=inner) | A.Minus(left=inner) | A.Filter(inner=inner) | A.Extend(inner=inner):
            return background_only(inner)
        case A.Sequence() | A.SeqWithout() | A.NoHead() | A.NoTail() | A.StreamPattern():
            return False
    return any(background_only(child) for child in A.children(node))     # to be safe: any part


def _instants_plan(query: A.Query, time_unit: str, lateness: int, emit: str) -> ContinuousPlan:
    """C-SPARQL (its snapshots' FROM STREAM windows) and RSEP-QL (its EVENT patterns' windows)."""
    windows, every = [], []
    for snap in A.snapshots(query):
        for stream, w in snap.windows:
            windows.append(_rule(stream, w, f"FROM STREAM {stream} {w}", time_unit))
        if snap.every is not None:
            ticks = snap.every.ticks(time_unit)
            if ticks <= 0:
                raise ContinuousError(f"COMPUTED EVERY {snap.every}: the period must be positive")
            every.append(ticks)
    for e in A.rsep_windows(query):
        windows.append(_rule(e.stream, e.window, f"window {e.name} on {e.stream}", time_unit))
    if not windows:
        raise ContinuousError("the query reads no stream window, so there is nothing to follow continuously; "
                              "evaluate it once (--at T) instead")
    snaps = A.snapshots(query)
    periods = tuple(sorted(set(every))) if snaps and all(s.every is not None for s in snaps) else ()
    consuming = any(isinstance(n, A.Match) and n.policy in A.CONSUMING_POLICIES for n in A.walk(query.form))
    return ContinuousPlan(query, time_unit, lateness, tuple(dict.fromkeys(windows)), emit, INSTANTS, periods,
                          consuming)


def _epsparql_plan(query, time_unit, lateness, emit, horizon, streams) -> ContinuousPlan:
    """EP-SPARQL names no window: each instant c sees every occurrence of every stream ended by c
    (000 §4.2), which a continuous run cannot keep. With ``horizon`` D it sees those started at or
    after c − D: a RANGE D + 1 window over each stream (module doc of ``cep.continuous.instants``)."""
    if horizon is None:
        raise ContinuousError("an EP-SPARQL query has no window: every instant sees every event since the start, "
                              "so its state would grow without bound; give --horizon D (each instant then sees "
                              "the events that started in its last D), or evaluate at one instant with --at T")
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 0:
        raise ContinuousError(f"the horizon must be a non-negative number of {time_unit}, got {horizon!r}")
    if not streams:
        raise ContinuousError("an EP-SPARQL query reads the streams it is given; none was given")
    windows = tuple(WindowRule(s, SLIDING, range=horizon + 1) for s in dict.fromkeys(streams))
    return ContinuousPlan(query, time_unit, lateness, windows, emit, INSTANTS, lookback=horizon)


def _multiples(step: int, lo: int, hi: int, start: int = 0) -> range:
    """start + k·step in [lo, hi]."""
    first = start + -(-(lo - start) // step) * step
    return range(first, hi + 1, step)


def _content_changes(w: WindowRule, t1: int, t2: int) -> Iterable[int]:
    """The instants at which the part of item [t1, t2] that CQELS-CEP window ``w`` holds changes
    (where its lifetimes in ``cep.engines.spark.lifetimes`` begin, and end + 1; a superset is harmless): it
    arrives and grows (t1..t2), then a RANGE T clips and drops it (t1+T+1..t2+T+1), a STEP window
    shows it at its closes and drops it at the close after, TRIPLES drops it at a later arrival."""
    if w.kind in (COUNT, LANDMARK):
        return range(t1, t2 + 1)
    if w.kind == SLIDING:
        return (*range(t1, t2 + 1), *range(t1 + w.range + 1, t2 + w.range + 2))
    first = -(-t1 // w.step) * w.step
    return range(first, close_instant(t2 + w.range, w.step) + w.step + 1, w.step)


def evaluation_instants(cplan: ContinuousPlan, starts: Mapping[A.Term, Iterable[int]], lo: int, hi: int,
                        ends: Mapping[A.Term, Iterable[int]] | None = None) -> list[int]:
    """The evaluation instants of an INSTANTS plan in [lo, hi], in order (module doc, "Evaluation
    instants"): the multiples of COMPUTED EVERY (or of ``--every``) when given; else every close of a
    STEP / TUMBLING window (σ > 1), and, for a window that slides by one tick (RANGE without STEP
    or with STEP 1, NOW, TRIPLES, ALL), each instant its content changes — an item arrives (``starts``: the start
    times of each stream's items), or leaves a RANGE α (α ticks later) or NOW (one tick later).
    EP-SPARQL (``lookback`` D): an occurrence counts once it has ended (``ends``, the end times in
    the order of ``starts``) and leaves D + 1 ticks after its start. CQELS-CEP (``cqels``): each
    instant an item's content in a window changes (``_content_changes``)."""
    if hi < lo:
        return []
    start, lag = cplan.convention.start, cplan.convention.lag
    if cplan.every:
        return sorted({c for e in cplan.every for c in _multiples(e, lo, hi, start)})
    out: set[int] = set()
    if cplan.cqels:
        for w in cplan.windows:
            mine = starts.get(w.stream, ())
            for t1, t2 in zip(mine, (ends or starts).get(w.stream, mine)):
                out.update(_content_changes(w, t1, t2))
        return sorted(c for c in out if lo <= c <= hi)
    if cplan.lookback is not None:
        for stream, mine in starts.items():
            out.update(t + cplan.lookback + 1 for t in mine)
            out.update((ends or starts).get(stream, ()))
        return sorted(c for c in out if lo <= c <= hi)
    for w in cplan.windows:   # C-SPARQL's windows close at t0 + kσ; a left-closed one counts τ from τ + 1
        if w.kind == STEP and w.step > 1:
            out.update(_multiples(w.step, lo, hi, start))
            continue
        leave = None if w.kind in (COUNT, LANDMARK) else max(w.range, 1)
        for t in starts.get(w.stream, ()):
            out.add(t + lag)
            if leave is not None:
                out.add(t + leave + lag)
    return sorted(c for c in out if lo <= c <= hi)


def end_instant(cplan: ContinuousPlan, max_time: int) -> int:
    """The last instant the end-of-input close evaluates, M = ``max_time`` the largest event time
    (module doc, "Watermark and finality"). Right-closed windows: M (a window closing every tick holds the
    items stamped M at M). Left-closed windows [c − ρ, c) hold them only at a close c > M: each
    window's first close after M — M + 1 for one closing every tick (RANGE without STEP, STEP 1,
    TRIPLES, ALL), t0 + (⌊(M − t0)/σ⌋ + 1)σ for a STEP σ one — and the latest of those, moved on
    to the next report instant with COMPUTED EVERY / ``--every``: the first evaluation instant at
    which every window has closed over the items stamped M, the instant ``query --at`` reads them at."""
    convention = cplan.convention
    if not convention.lag:
        return max_time
    target = max_time + 1
    for w in cplan.windows:
        if w.kind == STEP and w.step > 1:
            target = max(target, convention.close(max_time, w.step) + w.step)
    if cplan.every:
        target = min(_multiples(e, target, target + e, convention.start)[0] for e in cplan.every)
    return target


def keep_bounds(cplan: ContinuousPlan, stream: A.Term, upto: int,
                latest: Iterable[tuple[int, int]] = ()) -> tuple[int, int | None]:
    """(S, E): an item of ``stream`` [t1, t2] is kept once every instant up to ``upto`` is evaluated
    iff t1 ≥ S or (E is not None and t2 ≥ E). C-SPARQL, RSEP-QL, EP-SPARQL: S = ``keep_from``, no E
    (their items are points). CQELS-CEP (``cqels``): a window holds an item at c while its end is
    in reach, t2 ≥ c − T (closed: cep.engines.spark.lifetimes) for the last close c at or before upto + 1 (NOW:
    T = 0; a RANGE slides by 1), so E = that close − T; TRIPLES by count (``keep_from``) and while
    the item grows; ALL for good."""
    if not cplan.cqels:
        return keep_from(cplan, stream, upto, latest), None
    start, end = upto + 1, upto + 1
    for w in cplan.rules_for(stream):
        if w.kind == LANDMARK:
            return MIN_TIME, MIN_TIME
        if w.kind == COUNT:
            start = min(start, keep_from(replace(cplan, windows=(w,)), stream, upto, latest))
        else:
            end = min(end, close_instant(upto + 1, w.step if w.kind == STEP else 1) - w.range)
    return start, end


def keep_from(cplan: ContinuousPlan, stream: A.Term, upto: int, latest: Iterable[tuple[int, int]] = ()) -> int:
    """The earliest start time an item of ``stream`` needs to be kept from once every instant up to
    ``upto`` is evaluated (an INSTANTS plan; module doc, "State"): a RANGE α window (slide σ) can
    hold at a later instant c only items after ⌊(upto+1)/σ⌋σ − α, NOW only items after upto, and
    a window sliding by one tick also keeps the items leaving it at upto + 1 (their leaving is an
    evaluation instant); TRIPLES n the latest n triples (``latest``: (start, triples) per start time ≤ upto, newest
    first; ties at the boundary are kept), ALL every item. Items started after ``upto`` are always kept."""
    low = upto + 1
    for w in cplan.rules_for(stream):
        if w.kind == LANDMARK:
            return MIN_TIME
        if w.kind == COUNT:
            seen, boundary = 0, None
            for t, n in latest:
                if seen >= w.count:
                    break
                seen, boundary = seen + n, t
            low = min(low, boundary if boundary is not None and seen >= w.count else MIN_TIME)
        else:   # the window closing at c' ≥ close(upto + 1) holds τ ≥ c' − ρ + 1 (left-closed: c' − ρ)
            step = w.step if w.kind == STEP else 1
            convention = cplan.convention
            if w.range:      # NOW holds no item before upto + 1
                low = min(low, convention.close(upto + 1, step) - w.range + 1 - convention.lag)
            if step == 1 and not cplan.every:
                # a window sliding by one tick is evaluated when an item leaves it (τ + max(ρ, 1), one
                # tick later left-closed: evaluation_instants): the item that leaves at upto + 1 is
                # in no window after upto but stays until then, or that instant would be missed
                low = min(low, upto + 1 - max(w.range, 1) - convention.lag)
    return low
