"""Milan route recomputation: delivery agents' fastest routes, recomputed when traffic closes a connection.

    rsp-sidecar milan-routing --stream in/ --agents plans.json --checkpoint ckpt/ [--out routes/] [--map map.png]
    rsp-sidecar milan-routing --generate 10 --stream in/ --agents plans.json --checkpoint ckpt/ ...
    python -m jobs.milan_routing ...         spark-submit jobs/milan_routing.py ...

The real Milan network (``../shared/data/milan``, ``ontologies.milan``; written as RDF to
``--network-out`` when given) and the agents' plans (``--agents``: ``{"agents": [{"id", "start",
"locations"}]}``). Events — ``m:traffic m:closed|m:open`` on a connection, ``m:requestsRoute`` and
``m:arrivedAt`` of an agent, time in seconds — arrive as JSON Lines files in ``--stream DIR`` or
on a Kafka topic; route, unreachable and finished events go to ``--out`` (``scenarios.milan_routing``
says exactly when). ``--generate N`` first writes plans for N agents (``--locations`` each) and a
seeded day of events. ``--map`` keeps a PNG of the network, the closed connections and the
agents' current routes up to date after every micro-batch.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.errors import job_main  # noqa: E402
from jobs.streaming import file_or_kafka_source, need_kafka, not_a_directory, sink_for, trigger_for  # noqa: E402
from ontologies.data import data_dir  # noqa: E402
from rdfcore.errors import SidecarError  # noqa: E402
from rdfcore.fs import is_hadoop  # noqa: E402
from rdfcore.locations import location  # noqa: E402


class MilanOptionError(SidecarError, ValueError):
    """A bad combination of options."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stream", required=True, metavar="DIR|kafka://HOST:PORT/TOPIC", help="the events")
    parser.add_argument("--agents", required=True, metavar="FILE", help="the agents' plans (JSON)")
    parser.add_argument("--checkpoint", required=True, metavar="DIR", help="agent state and progress")
    parser.add_argument("--out", metavar="DIR|console|kafka://HOST:PORT/TOPIC", help="route events (default console)")
    parser.add_argument("--rejects", metavar="DIR", help="rejected lines and late or unknown events, with reasons")
    parser.add_argument("--map", metavar="PNG", help="a map of the network, closures and routes, after each batch")
    parser.add_argument("--network-out", metavar="FILE", help="also write the network as N-Triples")
    parser.add_argument("--data-dir", help="data directory (default: $RSP_DATA_DIR or <repo>/../shared/data)")
    parser.add_argument("--generate", type=int, metavar="AGENTS",
                        help="first write plans for AGENTS agents to --agents and a day of events into --stream DIR")
    parser.add_argument("--locations", type=int, default=20, help="locations per generated agent (default 20)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--file-seconds", type=int, default=1800, help="event time per generated file (default 1800)")
    parser.add_argument("--trigger", default="available-now", metavar="available-now|interval:D")
    parser.add_argument("--timeout", type=float, metavar="SECONDS")
    parser.add_argument("--max-per-trigger", type=int, metavar="N", help="at most N files or messages per micro-batch")
    parser.add_argument("--time-unit", default="s", choices=("ms", "s", "m"), help="unit of the event times (default s)")
    parser.add_argument("--engine", choices=("local", "spark"), default="local",
                        help="route search on the driver (default; milliseconds on a city) or on Spark (a job per "
                             "round, for networks beyond the driver)")


def run(args: argparse.Namespace) -> int:
    from jobs.spark import build_session
    from rdfcore.terms import write_ntriples
    from ontologies import milan
    from scenarios import milan_routing as mr

    trigger = trigger_for(args.trigger)
    network = milan.build(data_dir(args.data_dir))
    if args.network_out:
        write_ntriples(args.network_out, milan.triples(network), milan.HEADER)
    if args.generate is not None:
        from scenarios.milan_stream import plan_agents, write_stream

        if args.stream.startswith("kafka:"):
            raise MilanOptionError("--generate writes into --stream DIR: give a directory")
        router, _ = mr.router_for(network)
        plans = plan_agents(router, args.generate, args.locations, args.seed)
        Path(args.agents).parent.mkdir(parents=True, exist_ok=True)
        Path(args.agents).write_text(json.dumps(plans, indent=1), encoding="utf-8")
        counts = write_stream(router, plans, args.stream, seed=args.seed, file_seconds=args.file_seconds)
        print(json.dumps({"generated": counts}), file=sys.stderr)
    if not_a_directory(args.stream):
        raise MilanOptionError(f"{args.stream}: no such directory (--stream names a directory of event files "
                               f"or kafka://HOST:PORT/TOPIC)")
    if is_hadoop(location(args.agents, "--agents")):
        build_session("rsp-sidecar milan-routing")     # read through the session's Hadoop filesystem
    plans = mr.read_plans(args.agents, {st.iri for st in network.stops.values()})
    source = file_or_kafka_source("<http://example.org/milan/events>", args.stream, args.max_per_trigger)
    sink = sink_for(args.out)
    need_kafka(source, sink)
    spark = build_session("rsp-sidecar milan-routing")
    summary = mr.run(spark, [source], network=network, plans=plans, sink=sink, checkpoint=args.checkpoint,
                     trigger=trigger, rejects=args.rejects, time_unit=args.time_unit, timeout=args.timeout,
                     map_png=args.map, engine=args.engine)
    print(json.dumps({"milan_routing": summary.to_dict(), **({"map": args.map} if args.map else {})}), file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    return job_main("milan_routing", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
