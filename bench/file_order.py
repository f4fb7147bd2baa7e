"""Benchmark: what files with one modification time do to a continuous run (issue 59's table).

    python bench/file_order.py [--vehicles 3000] [--events 1000000] [--files 50] [--engines auto keyed]

DESIGN.md's Vienna query over the seeded stream of ``scenarios.vienna_transit`` on the real Wiener
Linien network (``--vehicles`` vehicles, a third of them subways), ``--events`` events in
``--files`` files ``events-*.jsonl`` in event-time order, read with ``--max-per-trigger 1`` and
lateness 0 (``cep.continuous.job.run``, what ``query --continuous --trigger available-now`` runs),
twice per engine:

* **in order**: each file a later modification time than the one before (the baseline: what
  every engine reads in order whatever its file source);
* **one time**: every file the same modification time (``cp -p``, ``tar x``, an object store's
  seconds), the files written last to first.

Printed per engine and case: the answers, the rows rejected as late, the seconds; then whether
both cases gave the same answers (as sets of (stop, start, end)). Spark's own file source, which
the project read with before, lost 61,646 of 66,431 answers and rejected 920,000 of 1,000,000
events as late in the "one time" case on both engines.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.file_source import SAME, local_session  # noqa: E402  (the repository on the path first)
from cep.continuous.job import run  # noqa: E402
from cep.continuous.sinks import CallbackSink  # noqa: E402
from cep.continuous.sources import FileSource  # noqa: E402
from cep.continuous.static import StaticFiles  # noqa: E402
from cep.lowering.languages import compile_query  # noqa: E402
from scenarios import vienna_transit as vt  # noqa: E402

STREAM = "<http://example.org/publicTransport>"


def write_case(source: Path, target: Path, same: bool) -> None:
    """``source``'s files copied into ``target``: with one modification time, last to first, or
    with rising ones in name order."""
    target.mkdir(parents=True)
    files = sorted(source.glob("events-*.jsonl"))
    for k, f in (reversed(list(enumerate(files))) if same else enumerate(files)):
        path = target / f.name
        path.write_bytes(f.read_bytes())
        stamp = SAME if same else SAME + k
        os.utime(path, (stamp, stamp))


def one_run(spark, query, static, directory: Path, work: Path, engine: str):
    got: set = set()
    started = time.perf_counter()
    summary = run(spark, query, [FileSource(STREAM, str(directory), max_files_per_trigger=1)],
                  sink=CallbackSink(lambda _label, rows: got.update((r["s"], r["_start"], r["_end"]) for r in rows)),
                  checkpoint=work / "ckpt", static=static, time_unit="m", rejects=work / "rejects",
                  metrics=open(os.devnull, "w"), engine=engine)
    return got, summary.rejected.get("late", 0), time.perf_counter() - started


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vehicles", type=int, default=3000)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--per-minute", type=int, default=2000)
    ap.add_argument("--engines", nargs="+", default=["auto", "keyed"])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    spark = local_session("bench file order", "ERROR")
    work = Path(tempfile.mkdtemp(prefix="bench-file-order-"))
    world = vt.real_network(work, vehicles=args.vehicles, subways=args.vehicles // 3)
    query, static = compile_query(world.query), StaticFiles(world.static)
    minutes = max(1, args.events // args.per_minute)
    events = vt.write_stream(work / "stream", minutes, args.per_minute, max(1, -(-minutes // args.files)), args.seed,
                             world)
    print(f"{len(world.vehicles)} vehicles, {events:,} events in {len(list((work / 'stream').iterdir()))} files; "
          f"one file a micro-batch, lateness 0, local[2]")
    for case in ("in order", "one time"):
        write_case(work / "stream", work / case.replace(" ", "-"), same=case == "one time")
    for engine in args.engines:
        results = {}
        for case in ("in order", "one time"):
            got, late, seconds = one_run(spark, query, static, work / case.replace(" ", "-"),
                                         work / f"{engine}-{case.replace(' ', '-')}", engine)
            results[case] = got
            print(f"  {engine:<6} {case:<9}: {len(got):,} answers, {late:,} rejected as late, {seconds:.1f} s")
        print(f"  {engine:<6} same answers in both cases: {results['in order'] == results['one time']}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
