"""Benchmark: the Milan route-recomputation service for 1, 10 and 100 delivery agents.

    python bench/milan.py [--agents 1 10 100] [--locations 20] [--file-seconds 1800] [--seed 1]

EP-SPARQL's Test 3 on the real Milan network: each agent visits ``--locations`` stops; traffic
closes 60 % of the connections on the agents' routes over the day (more than half, as in the
paper), half of the closures ending after 5-60 minutes (``scenarios.milan_stream``). The day's
events are files of ``--file-seconds`` of event time, one per micro-batch; the service
(``scenarios.milan_routing``) runs them with trigger available-now in a warm local[2] session.

Printed per agent count: events, route events (of which caused by a closure), unreachable
events; **recomputation latency** (one route search, p50/p99); **traffic event in → route event
out** (a closure-caused route event's micro-batch, from the batch handed to the service to its
outputs written: p50/p99); total time; the driver process's peak RSS (the JVM apart); and the
cost per agent, to show how it grows. Baseline, side by side: the same day where every traffic
event recomputes every agent's route (what a service must do that does not track which routes
use a connection), timed on the same network and closures, and the ratio.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import resource
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def naive_seconds(network, plans, stream: Path, cap: float) -> tuple[float, int, bool]:
    """Replay the day recomputing every agent's route at every traffic event (and on requests);
    stopped after ``cap`` seconds and extrapolated by events (``True`` when it was)."""
    from scenarios.milan_routing import ARRIVED, CLOSED, OPEN, REQUESTS, TRAFFIC, router_for

    router, _ = router_for(network)
    events = []
    for f in sorted(stream.glob("*.jsonl")):
        events += [json.loads(x) for x in f.read_text().splitlines()]
    events.sort(key=lambda e: e["t"])
    at = {a: start for a, (start, _l) in plans.agents.items()}
    todo = {a: list(locs) for a, (_s, locs) in plans.agents.items()}
    searches = 0
    started = time.perf_counter()
    for done, e in enumerate(events):
        if time.perf_counter() - started > cap:
            spent = time.perf_counter() - started
            return spent * len(events) / done, int(searches * len(events) / done), True
        if e["p"] == TRAFFIC:
            router.close(e["s"]) if e["o"] == CLOSED else router.reopen(e["s"]) if e["o"] == OPEN else None
            for a in at:
                if todo[a]:
                    router.route(at[a], todo[a][0])
                    searches += 1
        elif e["p"] == REQUESTS and todo[e["s"]]:
            router.route(at[e["s"]], todo[e["s"]][0])
            searches += 1
        elif e["p"] == ARRIVED:
            at[e["s"]] = e["o"]
            if todo[e["s"]] and todo[e["s"]][0] == e["o"]:
                todo[e["s"]].pop(0)
    return time.perf_counter() - started, searches, False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--locations", type=int, default=20)
    parser.add_argument("--file-seconds", type=int, default=1800)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--naive-seconds", type=float, default=30.0, help="cap on the baseline (extrapolated past it)")
    parser.add_argument("--data-dir")
    args = parser.parse_args(argv)

    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from jobs.spark import build_session
    from ontologies import milan
    from ontologies.data import data_dir
    from scenarios.milan_routing import Plans, agent_iri, router_for, run
    from scenarios.milan_stream import plan_agents, write_stream

    work = Path(tempfile.mkdtemp(prefix="bench-milan-"))
    network = milan.build(data_dir(args.data_dir))
    spark = build_session("bench milan", {"spark.master": "local[2]", "spark.ui.enabled": "false"})
    print(f"network: {len(network.stops):,} stops, {len(network.connections):,} connections (Milan, real)")

    def day(n: int, name: str):
        router, _ = router_for(network)
        doc = plan_agents(router, n, args.locations, args.seed)
        counts = write_stream(router, doc, work / name / "in", seed=args.seed, file_seconds=args.file_seconds)
        plans = Plans({agent_iri(a["id"]): (a["start"], a["locations"]) for a in doc["agents"]})
        return plans, counts

    plans, _ = day(1, "warm")                 # warm-up: the JVM's first streaming query
    run(spark, [FileSource("<urn:m>", str(work / "warm" / "in"), max_files_per_trigger=1)], network=network,
        plans=plans, sink=DirectorySink(work / "warm" / "out"), checkpoint=work / "warm" / "ckpt",
        metrics=open("/dev/null", "w"))
    rows = []
    for n in args.agents:
        name = f"agents-{n}"
        plans, counts = day(n, name)
        outputs: list[dict] = []

        def collect(label, rows_, outputs=outputs):
            outputs.extend(rows_)

        started = time.perf_counter()
        summary = run(spark, [FileSource("<urn:m>", str(work / name / "in"), max_files_per_trigger=1)],
                      network=network, plans=plans, sink=DirectorySink(work / name / "out"),
                      checkpoint=work / name / "ckpt", metrics=open("/dev/null", "w"), on_outputs=collect)
        total = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        metrics = [json.loads(x) for x in (work / name / "ckpt" / "metrics.jsonl").read_text().splitlines()]
        # a closure-caused route event waits for its whole batch: the batch's seconds
        per_batch = {m["batch"]: m["seconds"] for m in metrics}
        closure_latency = []
        for part in sorted((work / name / "out").glob("part-*.jsonl")):
            batch = int(part.stem.split("-")[1])
            for line in part.read_text().splitlines():
                if json.loads(line)["cause"].startswith("closed"):
                    closure_latency.append(per_batch[batch])
        compute = [o["compute_ms"] for o in outputs if "compute_ms" in o]
        naive, searches, extrapolated = naive_seconds(network, plans, work / name / "in", args.naive_seconds)
        ours_search = sum(compute) / 1000
        row = {"agents": n, "events": counts["events"], "closures": counts["closures"],
               "route_events": summary.routes, "caused_by_closure": len(closure_latency),
               "unreachable": summary.unreachable, "batches": summary.batches, "total_s": round(total, 2),
               "compute_ms_p50": percentile(compute, 0.5), "compute_ms_p99": percentile(compute, 0.99),
               "event_to_route_s_p50": percentile(closure_latency, 0.5),
               "event_to_route_s_p99": percentile(closure_latency, 0.99),
               "peak_rss_mib": round(peak / 2 ** 20, 1), "naive_search_s": round(naive, 2), "naive_searches": searches,
               "ours_search_s": round(ours_search, 2), "ours_searches": len(compute)}
        rows.append(row)
        print(f"\n== {n} agents x {args.locations} locations: {counts['events']:,} events "
              f"({counts['closures']:,} closures of {counts['connections_on_routes']:,} connections on routes), "
              f"{summary.batches} micro-batches")
        print(f"  route events {summary.routes:,} ({len(closure_latency):,} caused by a closure), unreachable "
              f"{summary.unreachable:,}")
        print(f"  recomputation (one route search): p50 {row['compute_ms_p50']:.1f} ms  p99 {row['compute_ms_p99']:.1f} ms")
        print(f"  traffic event in -> route event out (its micro-batch): p50 {row['event_to_route_s_p50']:.2f} s  "
              f"p99 {row['event_to_route_s_p99']:.2f} s")
        print(f"  total {total:.1f} s ({total / n:.2f} s per agent); driver process peak RSS so far {row['peak_rss_mib']} MiB")
        print(f"  route searches: ours {len(compute):,} in {ours_search:.2f} s; baseline (every agent at every "
              f"traffic event) {searches:,} in {naive:.2f} s{' (extrapolated)' if extrapolated else ''}: "
              f"{naive / ours_search if ours_search else float('nan'):.1f}x")
    if len(rows) > 1:
        print("\ngrowth with agents (per agent): " + ", ".join(
            f"{r['agents']}: {r['total_s'] / r['agents']:.2f} s, {r['ours_searches'] / r['agents']:.0f} searches"
            for r in rows))
        print(f"compute p99 at the largest: {rows[-1]['compute_ms_p99']:.1f} ms (goal < 1000 ms); "
              f"median per-search time: " + ", ".join(f"{r['agents']}: {r['compute_ms_p50']:.1f} ms" for r in rows))
    print(json.dumps(rows))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
