"""Benchmark: continuous evaluation (``query --continuous``) against evaluating at every instant
and against a classic CEP engine.

    python bench/streaming.py [--minutes 200] [--per-minute 50] [--batch-minutes 10] [--format jsonl|nt]
                              [--baseline-instants 20] [--seed 1] [--network real|example]
                              [--live-rate EVENTS_PER_S --live-seconds 60 --live-minutes-per-second M ...
                               --live-engines auto keyed]

DESIGN.md's Vienna query (``ontologies/vienna_example_query.rq``: SEQ of two delays of a subway
and a negated arrival in a RANGE 10m window, at stops from which the centre is reachable by
subway, ``(^:beg/[:means :subway]/:end)+``) over a seeded synthetic stream: ``--per-minute``
events a minute for ``--minutes`` minutes (delays 80 %, arrivals 20 %), cut into one file per
``--batch-minutes``, read one file per micro-batch. The background, ``--network``:

* ``real`` (the default when the data directory is there): the Wiener Linien network
  (``ontologies/vienna.py``, read from ``../shared/data``), the centre = Stephansplatz, and 60
  vehicles of which 20 are subways (a small static file written here); events at real stations,
  70 % of them at subway stations;
* ``example``: the running example's map (``ontologies/vienna_example.ttl``): four vehicles, two
  of them subways, at its five stops.

Measured side by side in one run, one warm local[2] Spark session:

* **ours**: ``cep.continuous.runner.run`` over the files (trigger available-now): total time, events/s,
  seconds per micro-batch (p50, max) and the state items after each batch — the run is
  ``--minutes`` / 10 times longer than the window, and the state must stay flat;
* **baseline: one evaluation per instant** — what a user without a continuous mode does:
  ``cep.engines.spark.evaluate.evaluate(query, ..., at=t)`` over the whole stream at each minute t (the background
  closed once, as ours does). Timed for the first ``--baseline-instants`` instants and
  extrapolated to all of them (said so in the output).

* **baseline: a classic CEP engine** — Esper 8.9 (``com.espertech``, from Maven Central through
  the jar cache) running the same pattern in EPL on the same files (``bench/esper/ViennaDelays.java``,
  launched as a single-file Java program), the static side (which vehicles are subways, which stops
  reach the centre by subway) handed to it as constant sets computed by our engine. Two settings:
  ``every a -> every b`` (every pair: the CQELS-CEP SEQ, so its answer count must equal ours — a
  check of both) and Esper's usual ``every a -> b`` (skip-till-next-match), which misses answers.
  Its time excludes the JVM start and the EPL compile (printed apart).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import esper_vienna  # noqa: E402  (the repository on the path first)

STREAM = "<http://example.org/publicTransport>"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=int, default=200)
    ap.add_argument("--per-minute", type=int, default=50)
    ap.add_argument("--batch-minutes", type=int, default=10)
    ap.add_argument("--baseline-instants", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--network", choices=("real", "example"), default=None,
                    help="real: the Wiener Linien network (default when the data directory is there); example")
    ap.add_argument("--format", choices=("jsonl", "nt"), default="jsonl",
                    help="the stream files' format: JSON Lines, or the same events as timestamped N-Triples")
    ap.add_argument("--live-rate", type=int, default=0, metavar="EVENTS_PER_S",
                    help="also a live run: a producer writes one file a second with this many events, the "
                         "query runs with a 1 s trigger; prints batch seconds and latency p50/p99")
    ap.add_argument("--live-seconds", type=int, default=60)
    ap.add_argument("--live-minutes-per-second", type=int, nargs="+", default=[1], metavar="M",
                    help="event-time minutes in each live file (one live run per value): the 10-minute window "
                         "then holds 10/M seconds of input")
    ap.add_argument("--live-engines", nargs="+", choices=("auto", "keyed"), default=["auto"],
                    help="the continuous engines the live runs use, one run each, one after the other: auto (the "
                         "runner's choice) and keyed (the keyed operator, cep.continuous.keyed)")
    args = ap.parse_args(argv)

    from jobs.spark import build_session
    from scenarios import vienna_transit as vt
    from cep.continuous.job import run
    from cep.continuous.sinks import CallbackSink
    from cep.continuous.sources import FileSource
    from cep.continuous.static import StaticFiles
    from cep.io.streams import read_stream
    from cep.engines.spark.evaluate import evaluate
    from cep.lowering.languages import compile_query

    spark = build_session("bench streaming", {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4",
                                              "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="bench-streaming-"))
    args.network, world = vt.network_world(args.network, work)
    query = compile_query(world.query)
    events = vt.write_stream(work / "in-json", args.minutes, args.per_minute, args.batch_minutes, args.seed, world)
    stream_dir = work / "in-json"
    if args.format == "nt":     # the same events as timestamped N-Triples (Esper keeps reading the JSON)
        stream_dir = work / "in-nt"
        as_ntriples(work / "in-json", stream_dir, dict(query.prefixes))
    print(f"network: {args.network}; stream: {events} events ({args.format}) over {args.minutes} min "
          f"({args.minutes / 10:.0f}x the 10 min window), {len(list(stream_dir.iterdir()))} files, one per micro-batch")

    static = StaticFiles(world.static)
    # warm-up: the same code on a tiny stream (JIT, first-job costs; the static side is prepared)
    vt.write_stream(work / "warm", 12, 5, 6, args.seed, world)
    run(spark, query, [FileSource(STREAM, str(work / "warm"), max_files_per_trigger=1)], sink=CallbackSink(lambda *_: None),
        checkpoint=work / "warm-ckpt", static=static, time_unit="m", metrics=open(os.devnull, "w"))

    answers: list = []
    started = time.perf_counter()
    summary = run(spark, query, [FileSource(STREAM, str(stream_dir), max_files_per_trigger=1)],
                  sink=CallbackSink(lambda _label, rows: answers.extend(rows)), checkpoint=work / "ckpt",
                  static=static, time_unit="m", rejects=work / "rejects", metrics=open(os.devnull, "w"))
    ours = time.perf_counter() - started
    metrics = [json.loads(line) for line in (work / "ckpt" / "metrics.jsonl").read_text().splitlines()]
    seconds = [m["seconds"] for m in metrics]
    state = [m["state_items"] for m in metrics]
    print(f"ours (continuous): {ours:.1f} s total, {events / ours:,.0f} events/s, {summary.batches} micro-batches, "
          f"p50 {statistics.median(seconds):.2f} s / max {max(seconds):.2f} s per batch, {summary.answers} answers")
    half = len(state) // 2
    print(f"  state items after each batch: {state}")
    print(f"  state: max {max(state[:half] or [0])} in the first half of the run, max {max(state[half:] or [0])} "
          f"in the second (flat = bounded by the window, not the run's length)")

    # baseline: one evaluation per instant over the whole stream (the background closed once)
    side = static.current(spark)
    whole = work / f"whole.{'nt' if args.format == 'nt' else 'jsonl'}"
    with open(whole, "w", encoding="utf-8") as out:
        for f in sorted(stream_dir.iterdir()):
            out.write(f.read_text(encoding="utf-8"))
    stream = read_stream(spark, whole, dict(query.prefixes), "m")
    items = stream.triples.persist()
    items.count()
    dictionary = stream.dictionary.unionByName(side.dictionary)
    instants = list(range(0, args.minutes))[: args.baseline_instants]
    started = time.perf_counter()
    per_instant_answers = 0
    for t in instants:
        per_instant_answers += evaluate(query, side.background, {STREAM: items}, at=t, time_unit="m",
                                        dictionary=dictionary).count()
    base = time.perf_counter() - started
    per = base / len(instants)
    total = per * args.minutes
    print(f"baseline (evaluate at each instant): {per:.2f} s per instant, measured on {len(instants)} instants, "
          f"extrapolated to {args.minutes}: {total:.1f} s ({events / total:,.0f} events/s)")
    print(f"ratio: ours is {total / ours:.1f}x faster than one evaluation per instant")
    esper_baseline(spark, query, side, work / "in-json", ours, summary.answers, events)
    if args.live_rate:
        for per_second in args.live_minutes_per_second:
            for engine in args.live_engines:
                live(spark, query, static, work, args.live_rate, args.live_seconds, args.seed, world, per_second,
                     engine)
    return 0


def as_ntriples(source: Path, target: Path, prefixes: dict) -> None:
    """Each JSON Lines file of ``source`` as a timestamped N-Triples file in ``target`` (``<s> <p>
    <o> "t" .``; prefixed names expanded), with the same modification time (Spark's file source
    reads files in that order)."""
    target.mkdir(parents=True)

    def iri(name: str) -> str:
        prefix, _, local = name.partition(":")
        return f"<{prefixes[prefix]}{local}>"

    for f in sorted(source.iterdir()):
        out = target / (f.stem + ".nt")
        with open(f, encoding="utf-8") as lines, open(out, "w", encoding="utf-8") as nt:
            for line in lines:
                e = json.loads(line)
                nt.write(f'{iri(e["s"])} {iri(e["p"])} {iri(e["o"])} "{e["t"]}" .\n')
        stamp = f.stat().st_mtime
        os.utime(out, (stamp, stamp))


def live(spark, query, static, work: Path, rate: int, seconds: int, seed: int, world, per_second: int = 1,
         engine: str = "auto") -> None:
    """A live run: a producer thread writes one file a second (``rate`` events over
    ``per_second`` event-time minutes: the window of 10 minutes holds ``10 / per_second`` seconds
    of input), the query runs with ``trigger="interval:1"``. An answer at instant t is final once
    an event after t has arrived (the watermark, ``cep.continuous.plan``), so two latencies are
    printed: from the arrival of the event that completed it (minute t) and from the arrival of
    the event that made it final (minute t + 1) to the answer handed to the sink. ``engine``: the
    continuous job's (``cep.continuous.job.run``); on ``keyed`` an instant is final once Spark's
    watermark passes it, which moves at the end of the batch that read the later event."""
    import threading

    from cep.continuous.job import run
    from cep.continuous.sinks import CallbackSink
    from cep.continuous.sources import FileSource

    directory, staging = work / f"live-{engine}-{per_second}", work / f"live-staging-{engine}-{per_second}"
    directory.mkdir()
    staging.mkdir()
    written: dict[int, float] = {}
    rng = random.Random(seed)

    # the files' text is drawn before the run: drawing 100,000 events a second in this process
    # would take the GIL from the query it measures
    texts = []
    for second in range(seconds):
        lines = []
        for i in range(rate):
            t = second * per_second + i * per_second // rate
            p = ":delayAt" if rng.random() < 0.8 else ":arriveAt"
            lines.append(json.dumps({"s": rng.choice(world.vehicles), "p": p, "o": world.stop(rng), "t": t}))
        texts.append(("\n".join(lines) + "\n").encode("utf-8"))

    def produce() -> None:
        start = time.time()
        for second in range(seconds):
            tmp = staging / f"part{second:05d}.jsonl"
            tmp.write_bytes(texts[second])
            os.replace(tmp, directory / tmp.name)
            arrived = time.time()
            for t in range(second * per_second, (second + 1) * per_second):
                written[t] = arrived
            time.sleep(max(0.0, start + second + 1 - time.time()))

    completed, final = [], []

    def record(_label, rows) -> None:
        now = time.time()
        for row in rows:
            t = row["_at"]
            if t in written:
                completed.append(now - written[t])
            if t + 1 in written:
                final.append(now - written[t + 1])

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    run(spark, query, [FileSource(STREAM, str(directory))], sink=CallbackSink(record),
        checkpoint=work / f"live-ckpt-{engine}-{per_second}", static=static, time_unit="m", trigger="interval:1",
        timeout=seconds + 15, metrics=open(os.devnull, "w"), engine=engine)
    producer.join()
    metrics = [json.loads(line) for line in (work / f"live-ckpt-{engine}-{per_second}" / "metrics.jsonl").read_text().splitlines()]
    durations = sorted(m["seconds"] for m in metrics)

    def pct(values, q):
        values = sorted(values)
        return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")

    print(f"live run, engine {engine}: {rate:,} events/s for {seconds} s, {per_second} event-time minute(s) a second (the window "
          f"holds {10 * rate // per_second:,} events), trigger 1 s: {len(metrics)} batches, batch seconds "
          f"p50 {pct(durations, 0.5):.2f} / p99 {pct(durations, 0.99):.2f} (kept up: "
          f"{'yes' if pct(durations, 0.5) < 1 else 'no'}); {len(completed)} answers; latency from the completing "
          f"event p50 {pct(completed, 0.5):.2f} s / p99 {pct(completed, 0.99):.2f} s, from the event that made it "
          f"final p50 {pct(final, 0.5):.2f} s / p99 {pct(final, 0.99):.2f} s")


def _ratio(ours: float, theirs: float) -> str:
    return (f"ours is {theirs / ours:.1f}x faster" if ours <= theirs else f"ours is {ours / theirs:.1f}x slower")


def esper_baseline(spark, query, side, stream_dir: Path, ours: float, our_answers: int, events: int) -> None:
    """Esper on the same files (module doc, ``bench.esper_vienna``); prints its figures and the ratio."""
    sets = esper_vienna.static_sets(query, side)
    for mode, label in (("all", "every a -> every b (all pairs)"), ("next", "every a -> b (skip-till-next-match)")):
        result, why = esper_vienna.run(mode, sets, stream_dir.iterdir(), stream_dir.parent, timeout=600)
        if result is None:
            print(f"Esper baseline ({label}): {why}")
            continue
        check = "equal to ours" if result["answers"] == our_answers else f"ours: {our_answers}"
        print(f"baseline Esper, {label}: {result['seconds']:.2f} s ({events / result['seconds']:,.0f} events/s; "
              f"EPL compile {result['compile_seconds']:.2f} s apart), {result['answers']} answers ({check})"
              + (f"; {_ratio(ours, result['seconds'])}" if mode == "all" else ""))


if __name__ == "__main__":
    sys.exit(main())
