"""One bucket of the keyed continuous operator: its state and one step, in numpy (no Spark).

A bucket holds the keys ``cep.continuous.keyed.keys`` hashes to it. The Spark operator
(``cep.continuous.keyed.operator``) calls :func:`step` once per micro-batch for each bucket that
has new rows or a due timer, with ``upto``: the last instant that is final, from Spark's watermark.

Time. Spark drops a row whose event time is below the watermark, and a row of the batch is never
older than what the watermark made final: every accepted item starts after ``upto``. An answer at
instant t reads only items started by t (a window holds ``t1 ≤ t``; a negated element blocks from
its start on), so the answers at instants ≤ ``upto`` are known from the items of earlier batches.
A step therefore never finds a new answer at a final instant; it finds the *future* of its keys:

1. **Due answers.** ``pending`` holds the answers computed earlier whose first instant lies after
   the ``upto`` of their evaluation, with that first instant. Those now ≤ ``upto`` are final:
   they are emitted (Istream: each (mapping, interval) once, with ``_at`` its first instant) and
   remembered in ``emitted``. This is how answers that appear with no new event are found — a
   negated head leaving its RANGE, a tail negation's deadline, a STEP close: their lifetimes were
   computed when their inputs arrived, and the bucket's timer is the earliest pending instant.
2. **Late rows.** A new row that starts at or before ``upto`` would change instants already final:
   it goes to the rejects with reason ``late``.
3. **Touched keys.** The keys of the new rows are re-evaluated: their state items and the new ones,
   by ``cep.engines.driver.columnar`` (lifetimes of every answer at every instant). The answers of
   those keys that start after ``upto`` and were not emitted replace the keys' pending answers.
   Other keys' items are not read: a step costs the new rows and their keys' live items, not what
   the windows hold.
4. **State.** An item is dropped once every window's lifetime for it ends by ``upto`` (its
   ``keep``); an emitted answer once it starts before its key's oldest kept item (no evaluation can
   find it again); the timer is the earliest pending instant, else the instant the last item
   expires.

**Dstream and Rstream** (``Program.emit``; Rstream in one bucket): ``pending`` holds each answer's lifetime spans (``first``, ``last``)
instead of its first instant; a re-evaluation replaces a touched key's spans from the first instant
not final on, keeping the spans that reach the last final one (what the state says there is
trusted: items a window no longer holds have left it). A step reports, for each instant made
final, the answers alive at the instant before and not at it (an answer's merged spans' ends + 1;
Rstream: every answer alive at an instant where one starts or stops), and keeps the spans that
reach its ``upto``; the timer is the next such instant.

**A new closure version.** The program names the background's ``version``; the state, the version
its pending answers were computed with. When they differ, the step emits the due answers (of that
older version), then re-evaluates every key of the bucket against the new background: the
instants made final after this step read the new version, each instant one version, as the
per-batch runner reads one version per batch. The pending answers are replaced; an answer emitted
before (the same mapping and interval) is not emitted again.

Rows, keys and answers are dictionary-encoded: term ids (``rdfcore.hashing.term_id``) in int64
columns, the terms beside them for the answers' output.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from cep import algebra as A
from cep.algebra.timeline import OPEN_END
from cep.engines.columns import var_column
from cep.engines.driver import columnar as COL
from cep.engines.driver import rows as L
from cep.continuous.plan import DSTREAM, ISTREAM, RSTREAM
from cep.continuous.state import OUT_AT, OUT_END, OUT_START, OUT_VERSION

__all__ = ["Program", "BucketState", "Step", "step", "new_rows", "key_columns", "ITEM_COLUMNS", "LATE"]

#: the state's item columns: key hash, stream code, the triple's ids and interval, keep-until, terms
ITEM_COLUMNS = ("key", "stream", "item", "s", "p", "o", "t1", "t2", "keep", "s_term", "p_term", "o_term")
_IDS = ("item", "s", "p", "o", "t1", "t2")
#: the reject reason of a row older than the watermark
LATE = "late"


def key_columns(n: int) -> tuple[str, ...]:
    """The columns of a new row holding its key's term ids, one per key variable."""
    return tuple(f"k{i}" for i in range(n))


@dataclass(frozen=True, eq=False)
class Program:
    """What every bucket evaluates: the query, its key, its streams (``stream`` codes index them),
    the static side (``background``: {``A.Background`` node: table} as ``cep.engines.driver.columnar``
    takes it, with ``terms`` {id: term} of its ids and of the query's constants) and the closure
    ``version`` the static side was prepared from."""

    query: A.Query
    time_unit: str
    key: tuple[str, ...]
    streams: tuple[A.Term, ...]
    background: dict = field(default_factory=dict)
    terms: dict = field(default_factory=dict)
    version: str | None = None
    emit: str = ISTREAM

    @property
    def spans(self) -> bool:
        """Whether the state keeps the answers' lifetime spans (Dstream, Rstream), not their first
        instants (Istream)."""
        return self.emit in (DSTREAM, RSTREAM)

    @property
    def construct(self) -> bool:
        return isinstance(self.query.form, A.Construct)

    @property
    def names(self) -> tuple[str, ...]:
        """The answers' columns: the SELECT's variables, or a CONSTRUCT's s, p, o."""
        return ("s", "p", "o") if self.construct else tuple(v.name for v in self.query.form.variables)


@dataclass(frozen=True, eq=False)
class BucketState:
    """A bucket's state: ``items`` (``ITEM_COLUMNS``, a row per (key, triple)), ``emitted``
    (key, answer value ids, t1, t2), ``pending`` (the same, then ``first`` and the answer's terms),
    ``first`` (the earliest item time seen), ``done`` (the last instant made final here) and
    ``version`` (the closure version ``pending`` was computed with; None: none yet)."""

    items: pd.DataFrame
    emitted: pd.DataFrame
    pending: pd.DataFrame
    first: int | None = None
    done: int | None = None
    version: str | None = None

    @staticmethod
    def empty(program: Program) -> "BucketState":
        n = len(program.names)
        values = [f"v{i}" for i in range(n)]
        items = pd.DataFrame({c: pd.Series(dtype=object if c.endswith("_term") else np.int64) for c in ITEM_COLUMNS})
        emitted = pd.DataFrame({c: pd.Series(dtype=np.int64) for c in ("key", *values, "t1", "t2")})
        spans = ("first", "last") if program.spans else ("first",)
        pending = pd.DataFrame({**{c: pd.Series(dtype=np.int64) for c in ("key", *values, "t1", "t2", *spans)},
                                **{f"x{i}": pd.Series(dtype=object) for i in range(n)}})
        return BucketState(items, emitted, pending)

    @property
    def rows(self) -> int:
        return len(self.items) + len(self.emitted) + len(self.pending)


@dataclass(frozen=True, eq=False)
class Step:
    """What a step gives: the ``answers`` (dicts: the variables' terms, ``_start``, ``_end``,
    ``_at``, ``_version``), the ``rejects`` (the late rows, with ``reason``), the new ``state`` and
    the ``timer`` (the instant this bucket must be stepped at with no new row; None: never)."""

    answers: list
    rejects: pd.DataFrame
    state: BucketState
    timer: int | None


def new_rows(rows: pd.DataFrame, key: int) -> pd.DataFrame:
    """Routed rows (``key_columns(key)``, stream, the triple's ids and interval, its terms) with
    their key hash in ``key`` (every key of one bucket is evaluated by the same kernels)."""
    ids = rows[list(key_columns(key))].to_numpy(np.int64) if key else np.zeros((len(rows), 0), np.int64)
    out = rows.copy()
    out["key"] = _mix(ids)
    return out


def _mix(ids: np.ndarray) -> np.ndarray:
    """One int64 per key (a row of term ids): equal keys, equal hashes; no key: 0."""
    if ids.shape[1] == 0:
        return np.zeros(len(ids), np.int64)
    return COL.mix(ids) if ids.shape[1] > 1 else ids[:, 0].copy()


def step(program: Program, state: BucketState, new: pd.DataFrame | None, upto: int | None) -> Step:
    """One micro-batch of a bucket (module doc): ``new`` as ``new_rows`` gives them (None: a
    timer), ``upto`` the last final instant (None: none yet)."""
    rejects = new.iloc[:0] if new is not None else None
    if new is not None and upto is not None:
        late = new["t1"].to_numpy() <= upto
        rejects, new = new[late], new[~late]
        if len(rejects):
            rejects = rejects.assign(reason=[f"{LATE}: event time {t} is not after {upto}, the last instant already "
                                             f"final (the watermark)" for t in rejects["t1"].tolist()])
    items, pending, emitted, first = state.items, state.pending, state.emitted, state.first
    if new is not None and len(new):
        low = int(new["t1"].min())
        first = low if first is None else min(first, low)
    else:
        new = None
    answers: list = []
    version = program.version if state.version is None else state.version
    if program.spans:
        if upto is not None and first is not None and (state.done is None or upto > state.done):
            lo = first if state.done is None else state.done + 1
            report = _gone if program.emit == DSTREAM else _alive_where_changed
            answers = _answers(program, report(pending, len(program.names), lo, upto), version)
            pending = pending[pending["last"].to_numpy() >= upto]
    elif upto is not None and len(pending):
        due = pending["first"].to_numpy() <= upto
        if due.any():
            answers = _answers(program, pending[due], version)
            emitted = pd.concat([emitted, pending.loc[due, emitted.columns]], ignore_index=True)
            pending = pending[~due]
    # a new closure version (module doc): every key again
    every = state.version is not None and state.version != program.version and len(items) > 0
    if new is not None or every:
        items, pending, emitted = _evaluate(program, items, pending, emitted, new, first,
                                            first if upto is None else max(first, upto + 1), every)
    done = upto if upto is not None else state.done
    if upto is not None:
        items, emitted = _prune(items, emitted, upto)
    timer = None
    if program.spans:
        report = _gone if program.emit == DSTREAM else _alive_where_changed
        ahead = report(pending, len(program.names), (upto if upto is not None else first or 0) + 1, OPEN_END - 1)
        timer = int(ahead["first"].min()) if len(ahead) else None
        if timer is None and len(items):
            last = int(items["keep"].max())
            timer = None if last == OPEN_END else last + 1
    elif len(pending):
        timer = int(pending["first"].min())
    elif len(items):
        last = int(items["keep"].max())
        timer = None if last == OPEN_END else last + 1
    return Step(answers, rejects if rejects is not None else pd.DataFrame(),
                BucketState(items, emitted, pending, first, done, program.version), timer)


def _evaluate(program: Program, items: pd.DataFrame, pending: pd.DataFrame, emitted: pd.DataFrame,
              new: pd.DataFrame | None, first: int, lo: int, every: bool = False):
    """Step 3 of the module doc: re-evaluate the keys of ``new`` (``every``: every key of the
    bucket too), keeping their answers alive from instant ``lo`` on; (items, pending, emitted)."""
    fresh = new.assign(keep=np.int64(0))[list(ITEM_COLUMNS)] if new is not None else items.iloc[:0]
    keys = fresh["key"].to_numpy(np.int64)
    touched = np.unique(np.concatenate([keys, items["key"].to_numpy(np.int64)]) if every else keys)
    mine = COL.member(items["key"].to_numpy(np.int64), touched)
    rows = pd.concat([items[mine], fresh], ignore_index=True)
    triples = rows.drop_duplicates(["stream", *_IDS])
    streams, windows = {}, {}
    codes = triples["stream"].to_numpy()
    matrix = triples[list(_IDS)].to_numpy(np.int64)
    for code, iri in enumerate(program.streams):
        streams[iri] = matrix[codes == code]
    terms = dict(program.terms)
    for part in ("s", "p", "o"):
        terms.update(zip(triples[part].tolist(), triples[f"{part}_term"].tolist()))

    def lookup(ids) -> dict:
        return {i: terms[i] for i in ids if i in terms}

    if program.construct:
        data, hashes = _constructed(program, streams, windows, lookup, terms)
    else:
        result = COL.evaluate(program.query, streams, program.background, program.time_unit, None, windows, lookup)
        data = result.data if isinstance(result, COL.Table) else _matrix(result)
        names = [var_column(n) for n in program.names]
        hashes = _mix(data[:, [names.index(var_column(k)) for k in program.key]])
    kept = COL.member(hashes, touched) & (data[:, -1] >= lo)
    future, hashes = data[kept], hashes[kept]
    n = len(program.names)
    if program.spans:
        pending = _lives(pending, future, hashes, touched, n, lo, terms)
    elif len(future):
        starts = np.maximum(future[:, -2], lo)
        order = np.lexsort((starts,))
        future, starts, hashes = future[order], starts[order], hashes[order]
        keys = pd.DataFrame(future[:, :n + 2], columns=[*(f"v{i}" for i in range(n)), "t1", "t2"])
        keys.insert(0, "key", hashes)
        keys["first"] = starts
        keys = keys.drop_duplicates(["key", *(f"v{i}" for i in range(n)), "t1", "t2"])   # the earliest start
        seen = emitted[COL.member(emitted["key"].to_numpy(np.int64), touched)]
        if len(seen):
            done_keys = set(map(tuple, seen.drop(columns="key").to_numpy(np.int64).tolist()))
            values = keys[[*(f"v{i}" for i in range(n)), "t1", "t2"]].to_numpy(np.int64).tolist()
            keys = keys[[tuple(v) not in done_keys for v in values]]
        for i in range(n):
            keys[f"x{i}"] = [None if v == COL.NULL else terms.get(v) for v in keys[f"v{i}"].tolist()]
    else:
        keys = pending.iloc[:0]
    if not program.spans:
        pending = pd.concat([pending[~COL.member(pending["key"].to_numpy(np.int64), touched)], keys],
                            ignore_index=True)
    # keep-until of each evaluated triple: the last instant a window of its stream holds it
    for sp in A.stream_patterns(program.query.pattern):
        if (sp.stream, sp.window) not in windows and sp.stream in streams:
            windows[(sp.stream, sp.window)] = COL.window(streams[sp.stream], sp.window, time_unit=program.time_unit)
    lives = [_last_lives(program.streams.index(iri), held) for (iri, _window), held in windows.items()]
    rows = rows.drop(columns="keep")
    triples = rows[["stream", *_IDS]].to_numpy(np.int64)
    rows["keep"] = _keeps(triples, np.concatenate(lives)) if lives else np.full(len(rows), _NEVER)
    rows = rows[list(ITEM_COLUMNS)]
    items = pd.concat([items[~mine], rows], ignore_index=True)
    return items, pending, emitted


def _lives(lives: pd.DataFrame, future: np.ndarray, hashes: np.ndarray, touched: np.ndarray, n: int, lo: int,
           terms: dict) -> pd.DataFrame:
    """Dstream's state after re-evaluating the keys ``touched``: their answers' lifetimes from the
    evaluation (``future``: value ids, t1, t2, lifetime from, to; ``hashes`` their keys) cut to
    instants ≥ ``lo``, the first not final; before ``lo`` only what the state held (the runner
    trusts a re-evaluation for the instants not yet final alone: items a window no longer holds are
    gone from the state) — the touched keys' spans through ``lo`` − 1, cut there."""
    mine = COL.member(lives["key"].to_numpy(np.int64), touched)
    held = lives[mine]
    held = held[(held["first"].to_numpy() < lo) & (held["last"].to_numpy() >= lo - 1)]
    held = held.assign(last=np.minimum(held["last"].to_numpy(), lo - 1))
    spans = pd.DataFrame(future[:, :n + 2], columns=[*(f"v{i}" for i in range(n)), "t1", "t2"])
    spans.insert(0, "key", hashes)
    spans["first"] = np.maximum(future[:, -2], lo)
    spans["last"] = future[:, -1]
    for i in range(n):
        spans[f"x{i}"] = [None if v == COL.NULL else terms.get(v) for v in spans[f"v{i}"].tolist()]
    return pd.concat([lives[~mine], held, spans[lives.columns]], ignore_index=True)


def _runs(lives: pd.DataFrame, n: int) -> pd.DataFrame:
    """Each answer's lifetime spans in ``lives`` merged where they overlap or touch: a row per
    merged span (the answer's columns, ``first`` its start, ``last`` its end)."""
    ids = ["key", *(f"v{i}" for i in range(n)), "t1", "t2"]
    ordered = lives.sort_values([*ids, "first"], kind="stable", ignore_index=True)
    values = ordered[ids].to_numpy(np.int64)
    same = (values[1:] == values[:-1]).all(axis=1)
    group = np.cumsum(np.r_[True, ~same])
    reach = ordered.groupby(group)["last"].cummax().to_numpy()
    starts = np.r_[True, ~same | (ordered["first"].to_numpy()[1:] > reach[:-1] + 1)]
    ends = ordered.groupby(np.cumsum(starts))["last"].max().to_numpy()
    return ordered[starts].assign(last=ends).reset_index(drop=True)


def _gone(lives: pd.DataFrame, n: int, lo: int, hi: int) -> pd.DataFrame:
    """Dstream (``cep.continuous.plan``): the answers alive at c − 1 and not at c, for each instant
    c in [lo, hi], as rows of ``lives`` with ``first`` = c (a merged span's end + 1)."""
    if not len(lives):
        return lives.iloc[:0]
    runs = _runs(lives, n)
    ends = runs["last"].to_numpy()
    keep = (ends != OPEN_END) & (ends + 1 >= lo) & (ends + 1 <= hi)
    return runs[keep].assign(first=ends[keep] + 1).reset_index(drop=True)


def _alive_where_changed(lives: pd.DataFrame, n: int, lo: int, hi: int) -> pd.DataFrame:
    """Rstream (``cep.continuous.plan``): at each instant c in [lo, hi] where an answer starts or
    stops holding, every answer alive at c, as rows of ``lives`` with ``first`` = c."""
    if not len(lives):
        return lives.iloc[:0]
    runs = _runs(lives, n)
    starts, ends = runs["first"].to_numpy(), runs["last"].to_numpy()
    changed = np.unique(np.r_[starts, ends[ends != OPEN_END] + 1])
    changed = changed[(changed >= lo) & (changed <= hi)]
    at, which = np.nonzero((starts[None, :] <= changed[:, None]) & (changed[:, None] <= ends[None, :]))
    return runs.iloc[which].assign(first=changed[at]).reset_index(drop=True)


#: the keep-until of a triple no window holds
_NEVER = np.iinfo(np.int64).min


def _last_lives(code: int, lives: np.ndarray) -> np.ndarray:
    """(stream, item, s, p, o, t1, t2, keep) of a window's lifetimes: ``keep`` the last instant the
    window holds the triple (a row per lifetime; ``_keeps`` takes the largest)."""
    return np.column_stack([np.full(len(lives), code, np.int64), lives[:, [0, 1, 2, 3, 4, 5, 7]]])


def _keeps(triples: np.ndarray, held: np.ndarray) -> np.ndarray:
    """For each row of ``triples`` (stream, item, s, p, o, t1, t2), the largest ``keep`` of the rows
    of ``held`` (the same columns, then keep) equal to it; ``_NEVER`` when none is. One sort of
    both: equal triples end up side by side, ordered by keep, so each run's last row has its
    largest keep."""
    if not len(triples):
        return np.empty(0, np.int64)
    both = np.concatenate([held[:, :-1], triples])
    keep = np.concatenate([held[:, -1], np.full(len(triples), _NEVER, np.int64)])
    order = np.lexsort((keep, *both.T[::-1]))
    ranked = both[order]
    starts = np.ones(len(ranked), bool)
    starts[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    run = np.cumsum(starts) - 1
    ends = np.flatnonzero(np.r_[starts[1:], True])
    out = np.empty(len(both), np.int64)
    out[order] = keep[order][ends][run]
    return out[len(held):]


def _constructed(program: Program, streams: dict, windows: dict, lookup, terms: dict) -> tuple[np.ndarray, np.ndarray]:
    """A CONSTRUCT's triples as ``COL.evaluate`` gives a SELECT's rows — ``(s, p, o, t1, t2, a, b)``
    ids — and beside each the key hash of the solution it comes from (a triple of two keys' solutions
    comes once per key; ``cep.continuous.keyed.keys`` keeps such a query in one bucket). Blank nodes
    are named from the whole solution, as every engine names them; ``terms`` receives theirs."""
    omega = COL.solutions(program.query, streams, program.background, program.time_unit, windows, lookup)
    at = [omega.vars.index(var_column(k)) for k in program.key]
    fresh: dict = {}
    rows, keys = [], []
    for r, spo in L.construct_triples(program.query.form.template, omega.vars, omega.rows, fresh):
        rows.append(spo + r[-4:])
        keys.append([COL.NULL if r[i] is None else r[i] for i in at])
    terms.update(fresh)
    data = np.array(rows, np.int64).reshape(-1, 7)
    return data, _mix(np.array(keys, np.int64).reshape(len(rows), len(at)))


def _matrix(rel) -> np.ndarray:
    """A ``cep.engines.driver.rows`` relation as a ``COL.Table``'s matrix (None: ``COL.NULL``)."""
    rows = [[COL.NULL if v is None else v for v in row] for row in rel.rows]
    return np.array(rows, np.int64).reshape(-1, len(rel.vars) + 4)


def _prune(items: pd.DataFrame, emitted: pd.DataFrame, upto: int):
    """Step 4 of the module doc."""
    items = items[items["keep"].to_numpy() > upto]
    if len(emitted):
        oldest = items.groupby("key")["t1"].min()
        since = emitted["key"].map(oldest)
        open_end = emitted["t2"].to_numpy() == OPEN_END
        emitted = emitted[open_end | (since.notna().to_numpy() & (emitted["t1"].to_numpy() >= since.fillna(0).to_numpy()))]
    return items, emitted


def _answers(program: Program, due: pd.DataFrame, version: str | None) -> list:
    """The output rows of due pending answers, computed with closure ``version``, in the Spark
    path's order (instant, terms, interval)."""
    names = program.names
    ordered = []
    for row in due.itertuples(index=False):
        record = row._asdict()
        values = [record[f"x{i}"] if isinstance(record[f"x{i}"], str) else None for i in range(len(names))]
        first, t1, t2 = int(record["first"]), int(record["t1"]), int(record["t2"])
        answer = dict(zip(names, values))
        answer[OUT_START] = t1
        answer[OUT_END] = first if t2 == OPEN_END else t2
        answer[OUT_AT], answer[OUT_VERSION] = first, version
        ordered.append(((first, *[(0, "") if t is None else (1, t) for t in values], t1, t2), answer))
    return [answer for _sort, answer in sorted(ordered, key=lambda pair: pair[0])]
