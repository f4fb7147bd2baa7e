"""Benchmark: the planner (issue 61) on the paper's Vienna query over real fleets, beside Esper.

    python bench/planner.py [--vehicles 3000 100000] [--events 1000000] [--files 50]
                            [--engines auto keyed] [--written-up-to 3000] [--seed 1]

DESIGN.md's Vienna query (``ontologies/vienna_example_query.rq``: two delays of a subway at a stop
and no arrival after, in a 10-minute window, at stops from which the centre reaches by subway)
over the seeded stream of ``scenarios.vienna_transit`` on the real Wiener Linien network, a fleet
of ``--vehicles`` vehicles (a third of them subways), ``--events`` events in ``--files`` files in
event-time order, one file a micro-batch, lateness 0 (what ``query --continuous --trigger
available-now --max-per-trigger 1`` runs). Per fleet, in one run, one local[2] session:

* **the static side**: the rows of the background patterns the engines hold, as written (one
  relation: the cross product of ``?v rdf:type :subway`` and ``?s (...)+ :c``) and as planned (each
  part apart);
* **ours, planned**: each engine of ``--engines`` twice (the answers of both runs must be equal):
  the whole run, its first micro-batch (static side included) and the p50 of the others, from the
  checkpoint's metrics;
* **ours, as written** (fleets up to ``--written-up-to`` vehicles; larger ones took minutes a
  batch, issue 61's table): the default engine with the planner switched off, once — the before;
* **baseline: Esper 8.9**, ``every a -> every b`` over the same files
  (``bench/esper/ViennaDelays.java``), the static side handed to it as two constant sets; its
  answers must equal ours. Its time excludes the JVM start and the EPL compile.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import esper_vienna  # noqa: E402  (the repository on the path first)
from bench.file_source import local_session  # noqa: E402
from cep import algebra as A  # noqa: E402
from cep.continuous.job import run  # noqa: E402
from cep.continuous.sinks import CallbackSink  # noqa: E402
from cep.continuous.sources import FileSource  # noqa: E402
from cep.continuous.static import StaticFiles  # noqa: E402
from cep.engines.spark.evaluate import Prepared  # noqa: E402
from cep.lowering.languages import compile_query  # noqa: E402
from cep.planner import Logical, rewrite  # noqa: E402
from scenarios import vienna_transit as vt  # noqa: E402

STREAM = "<http://example.org/publicTransport>"
#: the module whose ``plan`` calls the planner (switched off for the "as written" run)
continuous_plan = importlib.import_module("cep.continuous.plan")


def background_rows(spark, query, side) -> list[int]:
    """The rows of each background pattern of ``query`` (``Prepared.background_lifetimes``)."""
    frames = Prepared(query, side.background, "m", dictionary=side.dictionary).background_lifetimes()
    return [frame.count() for frame in frames.values()]


def one_run(spark, query, static, directory: Path, checkpoint: Path, engine: str) -> dict:
    got: set = set()
    started = time.perf_counter()
    summary = run(spark, query, [FileSource(STREAM, str(directory), max_files_per_trigger=1)],
                  sink=CallbackSink(lambda _label, rows: got.update((r["s"], r["_start"], r["_end"]) for r in rows)),
                  checkpoint=checkpoint, static=static, time_unit="m", rejects=checkpoint.parent / "rejects",
                  metrics=open(os.devnull, "w"), engine=engine)
    seconds = time.perf_counter() - started
    batches = [json.loads(line)["seconds"] for line in (checkpoint / "metrics.jsonl").read_text().splitlines()]
    return {"answers": got, "seconds": seconds, "first": batches[0] if batches else 0.0,
            "p50": statistics.median(batches[1:]) if len(batches) > 1 else 0.0, "batches": len(batches),
            "late": summary.rejected.get("late", 0)}


def as_written(query: A.Query) -> Logical:
    """The planner switched off: the query as the lowering wrote it (the before)."""
    return Logical(query, query)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vehicles", type=int, nargs="+", default=[3000, 100_000])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--per-minute", type=int, default=2000)
    ap.add_argument("--engines", nargs="+", default=["auto", "keyed"])
    ap.add_argument("--written-up-to", type=int, default=3000,
                    help="run the query as written (the planner off) for fleets up to this many vehicles")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    spark = local_session("bench planner", "ERROR")
    work = Path(tempfile.mkdtemp(prefix="bench-planner-"))
    summary = []
    for vehicles in args.vehicles:
        world = vt.real_network(work / f"fleet-{vehicles}", vehicles=vehicles, subways=vehicles // 3)
        query, static = compile_query(world.query), StaticFiles(world.static)
        planned = rewrite(query).query
        minutes = max(1, args.events // args.per_minute)
        stream = work / f"fleet-{vehicles}" / "stream"
        events = vt.write_stream(stream, minutes, args.per_minute, max(1, -(-minutes // args.files)), args.seed, world)
        side = static.current(spark)
        written_rows, planned_rows = background_rows(spark, query, side), background_rows(spark, planned, side)
        print(f"{vehicles:,} vehicles ({vehicles // 3:,} subways), {events:,} events in "
              f"{len(list(stream.iterdir()))} files, one a micro-batch; lateness 0, local[2]")
        print(f"  static side: as written {' + '.join(f'{n:,}' for n in written_rows)} rows; planned "
              f"{' + '.join(f'{n:,}' for n in planned_rows)} rows")
        row = {"vehicles": vehicles, "events": events, "written_rows": sum(written_rows),
               "planned_rows": sum(planned_rows)}
        answers = None
        for engine in args.engines:
            runs = [one_run(spark, query, static, stream, work / f"{vehicles}-{engine}-{k}" / "ckpt", engine)
                    for k in (1, 2)]
            same = runs[0]["answers"] == runs[1]["answers"]
            for k, r in enumerate(runs, 1):
                print(f"  ours planned, {engine:<5} run {k}: {r['seconds']:.1f} s, first batch {r['first']:.2f} s, "
                      f"p50 of the others {r['p50']:.2f} s, {r['batches']} batches, {len(r['answers']):,} answers, "
                      f"{r['late']} late")
            print(f"  ours planned, {engine:<5}: the two runs gave the same answers: {same}")
            if not same:
                print("  ERROR: answers differ between runs")
            if answers is not None and runs[0]["answers"] != answers:
                print(f"  ERROR: {engine} gave other answers than {args.engines[0]}")
            answers = runs[0]["answers"] if answers is None else answers
            row[engine] = min(r["seconds"] for r in runs)
            row[f"{engine}_first"] = min(r["first"] for r in runs)
        if vehicles <= args.written_up_to:
            kept = continuous_plan.rewrite
            continuous_plan.rewrite = as_written
            try:
                before = one_run(spark, query, static, stream, work / f"{vehicles}-written" / "ckpt", "auto")
            finally:
                continuous_plan.rewrite = kept
            print(f"  ours as written, auto: {before['seconds']:.1f} s, first batch {before['first']:.2f} s, p50 of the "
                  f"others {before['p50']:.2f} s, {len(before['answers']):,} answers"
                  + ("" if answers is None or before["answers"] == answers else " — ERROR: not the planned answers"))
            row["written"], row["written_first"] = before["seconds"], before["first"]
        result, why = esper_vienna.run("all", esper_vienna.static_sets(planned, side), stream.iterdir(), stream.parent)
        if result is None:
            print(f"  Esper: {why}")
        else:
            check = "equal to ours" if answers is not None and result["answers"] == len(answers) else \
                f"ERROR: ours {len(answers or ()):,}"
            print(f"  baseline Esper 8.9, every a -> every b: {result['seconds']:.2f} s, {result['answers']:,} answers "
                  f"({check}; EPL compile {result['compile_seconds']:.2f} s apart)")
            row["esper"] = result["seconds"]
            for engine in args.engines:
                print(f"  ratio {engine}: ours {row[engine]:.1f} s / Esper {result['seconds']:.2f} s = "
                      f"{row[engine] / result['seconds']:.1f}x")
        summary.append(row)
    if len(summary) > 1:
        small, large = summary[0], summary[-1]
        for key in [*args.engines, "esper"]:
            if key in small and key in large:
                print(f"growth {small['vehicles']:,} -> {large['vehicles']:,} vehicles, {key}: "
                      f"{large[key] / small[key]:.2f}x")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
