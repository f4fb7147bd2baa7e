"""A continuous query as a job: its sources, its static side, its runner (``cep.continuous.runner``
for answers with lifetimes, ``cep.continuous.instants`` for the per-instant languages), its sinks
and its checkpoint."""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from cep.continuous.instants import InstantsRunner
from cep.continuous.keyed.job import run_keyed
from cep.continuous.runner import ENGINES, Runner, RunSummary, run_micro_batches
from rdfcore.sparkutil import union_all
from cep.continuous.sinks import DirectorySink
from cep.continuous.sources import FileSource, KafkaSource, SOURCE, check_sources
from cep.continuous.static import NoStatic
from cep.continuous.plan import ISTREAM, LIFETIMES, ContinuousError, plan as make_plan
from cep.continuous.record import PER_BATCH, claim, query_record
from cep.engines.driver.walk import supports
from cep.lowering.languages import compile_query
from rdfcore.locations import location


#: the engine that runs the query as one Spark stateful operator (``cep.continuous.keyed``)
KEYED = "keyed"


def run(spark: SparkSession, query, sources: Sequence[FileSource | KafkaSource], *, sink, checkpoint: str | Path,
        static=None, trigger: str = "available-now", lateness: int = 0, emit: str = ISTREAM,
        time_unit: str = "ms", rejects: str | Path | None = None, on_answers: Callable | None = None,
        metrics: TextIO | None = None, prefixes: Mapping[str, str] | None = None,
        timeout: float | None = None, engine: str = "auto", horizon: int | None = None,
        rules=(), every: int | None = None, window_convention=None, buckets: int | None = None) -> RunSummary:
    """Run ``query`` continuously over ``sources`` (see the module doc).

    ``query``: text or a ``cep.algebra.patterns.Query``. ``sources``: one ``FileSource`` or ``KafkaSource`` per
    stream the query reads. ``static``: ``StaticFiles``, ``ClosureStore`` or None
    (no background). ``sink``: ``DirectorySink``/``ConsoleSink``/``CallbackSink``; ``on_answers``:
    also call ``fn(label, rows)`` per batch. ``trigger``: ``available-now`` (process what is there,
    close the input up to its largest event time, stop) or ``interval:SECONDS`` (run until stopped
    or ``timeout`` seconds). ``lateness`` in ticks of ``time_unit``. ``rejects``: a directory for
    rejected rows (JSON Lines per batch). ``metrics``: where the per-batch metric lines go (stderr
    by default; they are also appended to ``CHECKPOINT/metrics.jsonl``). ``engine``: where a batch
    evaluates the query — ``auto`` (default: on the driver, ``cep.engines.driver.rows``, while the state and the
    static side are small and the query allows it; on Spark otherwise), ``spark`` or ``local``; or
    ``keyed``: the whole query as one Spark stateful operator on the executors
    (``cep.continuous.keyed.job``: CQELS-CEP, Istream, ``cep.continuous.keyed.keys.refusal``).
    ``horizon`` (EP-SPARQL, ticks): each instant sees the events started in its last ``horizon``
    (an EP-SPARQL query has no window; ``cep.continuous.instants``). ``rules``: EP-SPARQL CONSTRUCT rules
    (compiled queries, ``cep.engines.rules``): each instant reads the Q-closure of its events. ``every``
    (ticks; C-SPARQL, RSEP-QL, EP-SPARQL): evaluate at its multiples (the report policy), not at
    each content change. ``window_convention`` (C-SPARQL): the C-SPARQL engine's window
    conventions (``cep.algebra.WindowConvention``; None: RSEP-QL's). ``buckets`` (``keyed`` only):
    how many groups the keys are hashed into, fixed when the checkpoint is created (None: the
    checkpoint's, or twice the session's parallelism for a new one; ``cep.continuous.keyed.job``). A landmark ([ALL]) window's warning (``ContinuousPlan.warnings``) is
    printed to ``metrics`` (stderr by default) before the first batch.

    The checkpoint records the engine and the options it was created with (``CHECKPOINT/checkpoint.json``,
    ``cep.continuous.record``): a restart that asks for another engine (``auto``, ``spark`` and ``local``
    share one state; ``keyed`` keeps its own) or other options that shape the state is refused with a
    ``CheckpointError`` before Spark streams.
    """
    if isinstance(query, str):
        query = compile_query(query, prefixes)
    cplan = make_plan(query, time_unit, lateness, emit=emit, horizon=horizon, streams=[s.stream for s in sources],
                      rules=rules, every=every, window_convention=window_convention)
    if engine == KEYED:
        return run_keyed(spark, query, sources, sink=sink, checkpoint=checkpoint, static=static, trigger=trigger,
                         lateness=lateness, time_unit=time_unit, rejects=rejects, on_answers=on_answers,
                         metrics=metrics, prefixes=prefixes, timeout=timeout, buckets=buckets, emit=emit)
    if buckets is not None:
        raise ContinuousError(f"buckets={buckets}: only the keyed engine hashes keys into buckets (engine={engine!r})")
    if engine not in ENGINES:
        raise ContinuousError(f"unknown engine {engine!r}; expected one of {', '.join((*ENGINES, KEYED))}")
    if engine == "local" and cplan.mode == LIFETIMES:
        why = supports(query) or (None if emit == ISTREAM else f"--emit {emit}")
        if why:
            raise ContinuousError(f"the driver-side engine cannot run this query ({why}); use engine auto or spark")
    read = set(cplan.streams)
    given = {s.stream for s in sources}
    missing = [s for s in cplan.streams if s not in given]
    if missing:
        raise ContinuousError(f"the query reads stream(s) {', '.join(missing)} but no source was given for them "
                              f"(sources: {', '.join(sorted(given)) or 'none'})")
    used = [s for s in sources if s.stream in read]
    checkpoint = location(checkpoint, "the checkpoint")
    check_sources(used)
    # what the checkpoint was created with, before anything streams (cep.continuous.record)
    claim(checkpoint, query_record(PER_BATCH, cplan, used))
    if isinstance(sink, DirectorySink):
        sink.directory.mkdir(parents=True, exist_ok=True)
    if cplan.mode == LIFETIMES:
        runner_class = Runner
    else:   # C-SPARQL, RSEP-QL: one evaluation per evaluation instant
        runner_class = InstantsRunner
    runner = runner_class(spark, cplan, static or NoStatic(), sink, checkpoint, rejects, on_answers, metrics,
                          dict(query.prefixes) if prefixes is None else dict(prefixes), engine)
    if hasattr(sink, "bind"):
        sink.bind(spark)
    runner.sources = used
    for warning in cplan.warnings:
        print(f"warning: {warning}", file=metrics or sys.stderr, flush=True)
    lines = union_all([source.lines(spark).withColumn(SOURCE, F.lit(i)) for i, source in enumerate(used)],
                   allow_missing=True)
    run_micro_batches(lines, runner.batch, checkpoint, trigger, timeout, lambda: runner.error)
    if trigger == "available-now":
        runner.close()
    return runner.summary
