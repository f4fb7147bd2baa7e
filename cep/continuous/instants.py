"""Continuous C-SPARQL and RSEP-QL: one evaluation per evaluation instant, as their papers define.

CQELS-CEP's answers exist at every instant, so ``cep.continuous.runner`` computes every instant at once
(``cep.engines.spark.lifetimes``). C-SPARQL and RSEP-QL define their answers at *evaluation instants* instead:
C-SPARQL reports at its windows' closes (003 §2.3: "the query result does not change during the
slide interval"; ``A.Snapshot.instant``), RSEP-QL evaluates a query at a sequence of instants and
its consuming policies (chronological, recent; 001 §4.4) make each evaluation depend on what the
earlier ones used. So a continuous run of these languages evaluates the query at each evaluation
instant in turn — on the driver while the state and the background are small, by the engines of
``query --at`` (``cep.engines.driver.answers.answers_at``: ``cep.engines.driver.csparql`` under the
plan's window convention, ``cep.engines.driver.rsepql`` given the triples earlier batches
consumed, returning the new ones; ``cep.engines.driver.epsparql`` over the occurrences of the
horizon, closed under the rules), ``cep.engines.spark.evaluate.evaluate_sequence`` on Spark
otherwise or where they refuse the query (:func:`driver_refusal`) —
and carries what the next batch needs in its state. Everything else (sources, rejects, watermark and lateness, the
state store, sinks, exactly-once, the end-of-input close) is ``cep.continuous.runner``'s. CQELS-CEP queries
whose answers are defined per instant (ORDER BY / LIMIT, NOW(), GROUP BY over events) run here
too, at their windows' content changes (``cep.continuous.plan``, "CQELS-CEP at evaluation instants").

Semantics (``cep.continuous.plan``, "Evaluation instants"; README "Continuous C-SPARQL and RSEP-QL"):

* **Evaluation instants** (``cep.continuous.plan.evaluation_instants``; a C-SPARQL plan's window
  convention, ``cep.algebra.WindowConvention``, shifts them and goes to both engines): the multiples of C-SPARQL's
  COMPUTED EVERY when given; else every close of a STEP / TUMBLING window (σ > 1), and for a window
  sliding by one tick (RANGE without STEP or STEP 1, NOW, TRIPLES) each instant its content
  changes. Between two of those instants such a window, and so the answer, stays the same (a
  C-SPARQL answer's interval [c, c] apart): reporting it at every tick would repeat it per
  millisecond. Only instants ≥ the first event time and ≤ the watermark − 1 are evaluated (every
  one is final, as in ``cep.continuous.plan``); the end of input evaluates up to the largest event time,
  or with left-closed windows to the first close after it of every window (``cep.continuous.plan.end_instant``).
* **Output.** A ``REGISTER STREAM ... CONSTRUCT`` query's answers form a new stream (003 §2.5):
  each triple is written as a stream item ``{"s", "p", "o", "t": c}``, so that its output
  directory is the stream directory of another continuous query. ``rstream`` reports the whole answer at each evaluation instant (C-SPARQL's way);
  ``istream`` each (mapping, interval) once, at the first evaluation instant that has it (for
  C-SPARQL, whose answers carry [c, c], the same rows as ``rstream``); ``dstream`` at each instant
  the answers of the previous evaluation it no longer has. ORDER BY / LIMIT / OFFSET apply per
  evaluation (rows of one instant come in the query's order).
* **State**: the items some window can still hold at a later instant
  (``cep.continuous.plan.keep_from``), the consumed stream triples of those items (RSEP-QL), the
  answers of the last evaluation (dstream) and the emitted keys (istream) that can still recur.
  An ``[ALL]`` window keeps all its stream's items (and their consumed triples) for good.

The equivalence, tested on random streams (``tests/test_continuous_instants.py``): the output is
``cep.engines.reference.evaluate_sequence`` at the evaluation instants of the whole stream.
"""
from __future__ import annotations

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cep import algebra as A
from cep.engines.columns import ITEM, T_END, T_START
from cep.continuous.plan import (COUNT, DSTREAM, ISTREAM, RSTREAM, ContinuousError, evaluation_instants,
                                 keep_bounds)
from cep.engines.driver.answers import answers_at, refusal
from cep.engines.driver.static import StaticGraph
from cep.engines.spark.evaluate import (AT, evaluate as spark_evaluate, evaluate_at_instants, evaluate_sequence,
                                        keyed_refusal)
from cep.engines.spark.filters import ORDER
from cep.engines.spark.rsepql import USED_COLUMNS, WINDOW_NAME
from cep.continuous.runner import Runner
from cep.continuous.state import (EMITTED, ITEMS, ITEM_COLUMNS, LAST, OUT_AT, OUT_END, OUT_START, OUT_VERSION, STREAM,
                                  TERM_COLUMNS, Meta, rows_table, table_rows)
from cep.continuous.static import dictionary_terms
from rdfcore.dictionary import decode
from rdfcore.schema import DICTIONARY, INFERRED, O, P, S
from reasoner.store import Materialized

__all__ = ["InstantsRunner", "LOCAL_MAX_SNAPSHOT"]

#: the state table of the consumed stream triples (``cep.engines.spark.rsepql.USED_COLUMNS``, ids)
_CONSUMED = "consumed"
#: the driver engines take a background of at most this many triples; a larger one goes to Spark
LOCAL_MAX_SNAPSHOT = 20_000


def driver_refusal(cplan) -> str | None:
    """Why the driver engines do not evaluate ``cplan``'s query at its evaluation instants (then
    Spark does), or None: ``cep.engines.driver.answers.refusal`` (C-SPARQL under the plan's window
    convention, RSEP-QL, EP-SPARQL under the plan's rules, CQELS-CEP)."""
    return refusal(cplan.query, cplan.convention, cplan.rules)


class InstantsRunner(Runner):
    """``cep.continuous.runner``'s runner with one evaluation per evaluation instant (module doc)."""

    too_large = f"the background has more than {LOCAL_MAX_SNAPSHOT} triples"
    #: the driver engines evaluate instant by instant over Python rows: a smaller state than
    #: cep.engines.driver.columnar's
    local_max_rows = 200_000

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        why = driver_refusal(self.plan)
        if self.engine == "local" and why is not None:
            raise ContinuousError(f"the driver-side engine cannot run this query ({why}); use engine auto or spark")
        self.local_ok = self.engine != "spark" and why is None
        self.background_ref = None     # (version, (graphs, terms) or None when too large)
        self.csparql = A.is_csparql(self.plan.query)
        registration = self.plan.query.registration
        #: REGISTER STREAM ... CONSTRUCT (C-SPARQL §2.5): the answers are a new stream, written as
        #: stream items ({"s", "p", "o", "t": the evaluation instant}) that another query reads
        self.stream_out = self.construct and registration is not None and registration[0] == "STREAM"
        self.pending = None            # the Spark path's new state: (emitted, last, consumed DataFrame)

    # -- the driver engines (cep.engines.driver.answers) ----------------------------------------------
    def _background_local(self):
        """The background graphs on the driver, collected once per closure version: ({graph:
        ``cep.engines.driver.static.StaticGraph`` of id triples}, {id: term}); None when larger than
        LOCAL_MAX_SNAPSHOT triples."""
        version, _prepared, side = self._static()
        if self.background_ref is not None and self.background_ref[0] == version:
            return self.background_ref[1]
        graphs = side.background
        dictionary = side.dictionary
        if isinstance(graphs, Materialized):
            dictionary = graphs.table(DICTIONARY)
            graphs = {None: graphs.table(INFERRED)}
        out, ids, total = {}, set(), 0
        for graph, frame in graphs.items():
            rows = frame.select(S, P, O).limit(LOCAL_MAX_SNAPSHOT + 1 - total).collect()
            total += len(rows)
            if total > LOCAL_MAX_SNAPSHOT:
                self.background_ref = (version, None)
                return None
            out[graph] = StaticGraph(frozenset((r[S], r[P], r[O]) for r in rows))
            ids.update(x for r in rows for x in r)
        out.setdefault(None, StaticGraph(frozenset()))
        self.background_ref = (version, (out, dictionary_terms(self.spark, dictionary, ids)))
        return self.background_ref[1]

    def _advance_local(self, state, previous: str | None, meta: Meta, upto: int | None, label: str,
                       max_time, closed: bool):
        """The instants up to ``upto`` by the driver engines (``cep.engines.driver.answers.answers_at``:
        C-SPARQL under the plan's window convention, RSEP-QL continuing from the consumed triples
        of the state) over the ``state`` items (a pyarrow table, as ``cep.continuous.runner`` hands it)."""
        self.used = "local"
        rows = table_rows(state, ITEM_COLUMNS)
        at = {c: i for i, c in enumerate(ITEM_COLUMNS)}
        terms: dict = {}
        triples: dict = {s: [] for s in self.plan.streams}
        times: dict = {}          # (stream, item) → (t1, t2)
        for r in rows:
            for c in (S, P, O):
                terms[r[at[c]]] = r[at[TERM_COLUMNS[c]]]
            stream, item, t1, t2 = r[at[STREAM]], r[at[ITEM]], r[at[T_START]], r[at[T_END]]
            times[(stream, item)] = (t1, t2)
            triples.setdefault(stream, []).append((item, r[at[S]], r[at[P]], r[at[O]], t1, t2))
        streams = {s: np.array(mine, dtype=np.int64).reshape(-1, 6) for s, mine in triples.items()}
        known = {item for (_stream, item) in times}
        consumed = frozenset((w, item, (s, p, o))
                             for (w, item, s, p, o) in table_rows(self.state.table(previous, _CONSUMED), USED_COLUMNS)
                             if item in known)
        starts: dict = {s: [] for s in streams}
        ends: dict = {s: [] for s in streams}
        for (stream, _item), (t1, t2) in times.items():
            starts[stream].append(t1)
            ends[stream].append(t2)
        instants = self._instants(starts, meta, upto, ends)
        results = []
        if instants:
            graphs, background_terms = self._background_local()
            answers = answers_at(self.plan.query, graphs, streams, instants, self.plan.time_unit,
                                 {**background_terms, **terms}, window_convention=self.plan.convention,
                                 consumed=consumed, rules=self.plan.rules, lookback=self.plan.lookback)
            consumed = answers.consumed
            per: dict = {c: [] for c in instants}
            for (c, *values, t1, t2) in answers.rows:   # distinct; ORDER BY: in the query's order
                per[c].append((tuple(values), t1, t2))
            ordered = self.plan.query.modifiers is not None
            results = [(c, per[c] if ordered else sorted(per[c], key=_order)) for c in instants]
        version = self._static()[0]
        n, emitted, last = self._emit(label, results, previous, version)
        kept = rows
        if upto is not None:
            lows = {}
            for stream in self.plan.streams:
                counts: dict = {}
                for r in rows:
                    if r[at[STREAM]] == stream and r[at[T_START]] <= upto:
                        counts[r[at[T_START]]] = counts.get(r[at[T_START]], 0) + 1
                lows[stream] = keep_bounds(self.plan, stream, upto, sorted(counts.items(), reverse=True))
            kept = [r for r in rows if r[at[STREAM]] in lows and _kept(lows[r[at[STREAM]]], r[at[T_START]], r[at[T_END]])]
        kept_items = {r[at[ITEM]] for r in kept}
        oldest = min((r[at[T_START]] for r in kept), default=None)
        self.state_rows = len(kept)
        item_schema = _schema([(c, "string" if c in (STREAM, *TERM_COLUMNS.values()) else "long") for c in ITEM_COLUMNS])
        consumed_rows = sorted({(w, item, s, p, o) for (w, item, (s, p, o)) in consumed if item in kept_items})
        tables = {ITEMS: rows_table(kept, item_schema), _CONSUMED: rows_table(consumed_rows, _consumed_schema()),
                  **self._answer_tables(emitted, last, oldest, upto)}
        self.state.write(label, tables, Meta(max_time=max_time, first=meta.first, done=upto, version=version,
                                              closed=closed, state_rows=len(kept)))
        return None, n, None, None

    # -- the Spark engine (cep.engines.spark.evaluate.evaluate_sequence) -------------------------------------------
    def _evaluate(self, items: DataFrame | None, previous: str | None, meta: Meta, upto: int | None, label: str):
        self.pending = None
        if items is None or upto is None or meta.first is None or (meta.done is not None and upto <= meta.done):
            return None
        starts, ends = {}, {}
        for r in items.select(STREAM, T_START, T_END).distinct().collect():
            starts.setdefault(r[STREAM], []).append(r[T_START])
            ends.setdefault(r[STREAM], []).append(r[T_END])
        instants = self._instants(starts, meta, upto, ends)
        version, _prepared, side = self._static()
        streams = {s: items.filter(F.col(STREAM) == s).select(ITEM, S, P, O, T_START, T_END)
                   for s in self.plan.streams}
        dictionary = self._dictionary(items, side)
        computed, consumed_out = [], []
        D = self.plan.lookback
        keyed = None
        if D is None and keyed_refusal(self.plan.query) is None:   # C-SPARQL: the batch's instants in one plan
            keyed = evaluate_at_instants(self.plan.query, side.background, streams, instants, self.plan.time_unit,
                                         dictionary=dictionary, terms=computed,
                                         window_convention=self.plan.convention).localCheckpoint()
            # stored once, as the answers are: decoding then plans over small leaves, not the whole
            # evaluation (Spark analyses the whole plan at every DataFrame call)
            stored = [terms.localCheckpoint() for terms in computed]
            for terms in computed:
                terms.unpersist()
            computed[:] = stored
            frames = []
        elif D is None:
            frames = evaluate_sequence(self.plan.query, side.background, streams, instants, self.plan.time_unit,
                                       dictionary=dictionary, terms=computed,
                                       consumed=self.state.frame(previous, _CONSUMED), consumed_out=consumed_out,
                                       window_convention=self.plan.convention)
        else:   # EP-SPARQL: each instant c sees the occurrences started at or after c - D
            frames = [spark_evaluate(self.plan.query, side.background,
                                     {s: df.filter(F.col(T_START) >= F.lit(c - D)) for s, df in streams.items()}, c,
                                     self.plan.time_unit, dictionary=dictionary, terms=computed,
                                     rules=self.plan.rules).cache()
                      for c in instants]
        dictionary = self._dictionary(items, side, computed).cache()
        results = []
        try:
            if keyed is not None:
                results = self._keyed_results(keyed, instants, dictionary)
            for c, frame in zip(instants, frames):
                ordered = ORDER in frame.columns
                decoded = decode(frame.select(*self.columns, T_START, T_END, *([ORDER] if ordered else [])),
                                 dictionary, tuple(self.columns))
                rows = decoded.orderBy(ORDER).collect() if ordered else decoded.collect()
                keys = [(tuple(r[col] for col in self.columns), r[T_START], r[T_END]) for r in rows]
                results.append((c, keys if ordered else sorted(set(keys), key=_order)))
                frame.unpersist()
        finally:
            dictionary.unpersist()
            for terms in computed:
                terms.unpersist()
        n, emitted, last = self._emit(label, results, previous, version)
        self.pending = (emitted, last, consumed_out[0] if consumed_out else None)
        return None, n, None, None

    def _keyed_results(self, frame: DataFrame, instants, dictionary: DataFrame) -> list:
        """[(instant, answers)] of ``evaluate_at_instants``' one frame (its ``AT`` column), collected
        in one job: each instant's answers in the query's order, or sorted."""
        ordered = ORDER in frame.columns
        decoded = decode(frame.select(*self.columns, T_START, T_END, AT, *([ORDER] if ordered else [])),
                         dictionary, tuple(self.columns))
        by: dict = {}
        for r in decoded.collect():
            by.setdefault(r[AT], []).append(r)
        results = []
        for c in instants:
            rows = sorted(by.get(c, []), key=lambda r: r[ORDER]) if ordered else by.get(c, [])
            keys = [(tuple(r[col] for col in self.columns), r[T_START], r[T_END]) for r in rows]
            results.append((c, keys if ordered else sorted(set(keys), key=_order)))
        return results

    def _keep(self, items: DataFrame, upto: int | None) -> DataFrame:
        if upto is None:
            return items
        condition = F.lit(False)
        for stream in self.plan.streams:
            latest = []
            counts = [w.count for w in self.plan.rules_for(stream) if w.kind == COUNT]
            if counts:
                latest = [(r[T_START], r["n"]) for r in
                          items.filter((F.col(STREAM) == stream) & (F.col(T_START) <= F.lit(upto)))
                          .groupBy(T_START).agg(F.count(F.lit(1)).alias("n"))
                          .orderBy(F.col(T_START).desc()).limit(max(counts)).collect()]
            low, end = keep_bounds(self.plan, stream, upto, latest)
            keep = F.col(T_START) >= F.lit(low)
            if end is not None:
                keep = keep | (F.col(T_END) >= F.lit(end))
            condition = condition | ((F.col(STREAM) == F.lit(stream)) & keep)
        return items.filter(condition)

    def _write_state(self, label, previous_name, kept, answers, meta: Meta, max_time, upto, closed: bool) -> None:
        oldest, self.state_rows = None, 0
        tables: dict = {}
        if kept is not None:
            kept = self.state.put(label, ITEMS, kept)
            stats = kept.agg(F.min(T_START).alias("oldest"), F.count(F.lit(1)).alias("n")).first()
            oldest, self.state_rows = stats["oldest"], stats["n"]
        if self.pending is not None:
            emitted, last, consumed = self.pending
            tables.update(self._answer_tables(emitted, last, oldest, upto))
        else:   # nothing evaluated: what the previous batch left
            emitted, last = self._answer_sets(previous_name)
            tables.update(self._answer_tables(emitted, last, oldest, upto))
            consumed = self.state.frame(previous_name, _CONSUMED)
        if consumed is not None and kept is not None:
            tables[_CONSUMED] = consumed.select(*USED_COLUMNS).join(kept.select(ITEM).distinct(), ITEM, "left_semi")
        version = self.prepared[0] if self.prepared is not None else meta.version
        self.state.write(label, tables, Meta(max_time=max_time, first=meta.first, done=upto, version=version,
                                              closed=closed, state_rows=self.state_rows))
        self.pending = None

    @staticmethod
    def _release(answers) -> None:
        return None

    # -- shared by both engines ---------------------------------------------------------------------
    def _instants(self, starts, meta: Meta, upto: int | None, ends) -> list[int]:
        if upto is None or meta.first is None:
            return []
        lo = meta.first if meta.done is None else max(meta.done + 1, meta.first)
        return evaluation_instants(self.plan, starts, lo, upto, ends)

    def _answer_sets(self, previous: str | None) -> tuple[set, list]:
        key_columns = [*self.columns, T_START, T_END]
        emitted = {(tuple(r[:-2]), r[-2], r[-1]) for r in table_rows(self.state.table(previous, EMITTED),
                                                                       key_columns)}
        last = [(tuple(r[:-2]), r[-2], r[-1]) for r in table_rows(self.state.table(previous, LAST), key_columns)]
        return emitted, last

    def _emit(self, label: str, results, previous: str | None, version) -> tuple[int, set, list]:
        """Write the rows of the evaluations ``results`` ([(instant, keys)]) to the sink (module
        doc, "Output"); returns (rows written, the emitted keys, the last evaluation's keys)."""
        emitted, last = self._answer_sets(previous)
        out = []
        for c, keys in results:
            if self.plan.emit == RSTREAM:
                rows = keys
            elif self.plan.emit == ISTREAM:
                rows = [k for k in keys if k not in emitted]
                emitted.update(rows)
            else:
                now = set(keys)
                rows = sorted((k for k in set(last) if k not in now), key=_order)
            last = keys
            for values, t1, t2 in rows:
                answer = dict(zip(self.names, values))
                if self.stream_out:   # a stream item (cep.io.streams' JSON Lines), timestamped at c
                    answer["t"] = c
                else:
                    answer[OUT_START], answer[OUT_END] = t1, t2
                    answer[OUT_AT], answer[OUT_VERSION] = c, version
                out.append(answer)
        n = 0
        if out:
            n = self.sink.write(label, out)
            if self.on_answers is not None:
                self.on_answers(label, out)
            self.summary.answers += n
        return n, emitted, last

    def _answer_tables(self, emitted, last, oldest, upto) -> dict:
        """The emitted keys that can still recur (an interval starting at or after the oldest kept
        item; a C-SPARQL answer's [c, c] never recurs after c) and the last answers, as tables."""
        def recurs(key) -> bool:
            if self.csparql:
                return upto is None or key[2] > upto
            return oldest is not None and key[1] >= oldest

        schema = _schema([(c, "string") for c in self.columns] + [(T_START, "long"), (T_END, "long")])
        flat = lambda keys: [(*values, t1, t2) for (values, t1, t2) in keys]   # noqa: E731
        tables = {LAST: rows_table(flat(last if self.plan.emit == DSTREAM else []), schema)}
        if self.plan.emit == ISTREAM:
            tables[EMITTED] = rows_table(flat(sorted((k for k in emitted if recurs(k)), key=_order)), schema)
        return tables


def _order(key) -> tuple:
    values, t1, t2 = key
    return tuple((0, "") if v is None else (1, v) for v in values) + (t1, t2)


def _schema(fields):
    import pyarrow as pa

    kinds = {"string": pa.string(), "long": pa.int64()}
    return pa.schema([(name, kinds[kind]) for name, kind in fields])


def _consumed_schema():
    return _schema([(WINDOW_NAME, "string"), (ITEM, "long"), (S, "long"), (P, "long"), (O, "long")])


def _kept(bounds: tuple, t1: int, t2: int) -> bool:
    """Whether an item [t1, t2] stays in the state (``cep.continuous.plan.keep_bounds``)."""
    low, end = bounds
    return t1 >= low or (end is not None and t2 >= end)
