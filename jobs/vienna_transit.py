"""Vienna transit alerts: stops with repeated subway delays not followed by an arrival, that reach the centre by subway.

    rsp-sidecar vienna-transit --stream in/ --checkpoint ckpt/ [--out answers/] [--centre Stephansplatz]
    rsp-sidecar vienna-transit --example --checkpoint ckpt/          the paper's example: :m over [10, 16]
    python -m jobs.vienna_transit ...        spark-submit jobs/vienna_transit.py ...

DESIGN.md's CQELS-CEP query (``ontologies/vienna_example_query.rq``) run continuously
(``cep.continuous.runner``, or with ``--engine keyed`` the keyed operator ``cep.continuous.keyed``, keyed
by the stop: every answer once, final when emitted, exactly once into a directory) over the
real Wiener Linien network, built from the data directory into ``--network-dir`` (default
``vienna-network``) with a synthetic fleet (``--vehicles``, ``--subways``), the centre
``--centre`` (a DIVA number or a station name). The stream — JSON Lines events ``{"s": vehicle,
"p": ":delayAt"|":arriveAt", "o": station, "t": minute}`` in ``--stream DIR`` or a Kafka topic —
can be generated first (``--generate MINUTES``: a seeded stream, ``--per-minute`` events a minute).
Bad lines and late events go to ``--rejects``; the run's summary goes to stderr as one JSON line.
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
from rdfcore.errors import SidecarError  # noqa: E402
from rdfcore.fs import is_hadoop  # noqa: E402
from rdfcore.locations import location  # noqa: E402
from scenarios import vienna_transit as vt  # noqa: E402


class TransitOptionError(SidecarError, ValueError):
    """A bad combination of options."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stream", metavar="DIR|kafka://HOST:PORT/TOPIC",
                        help="the events (JSON Lines files arriving in DIR, or a Kafka topic)")
    parser.add_argument("--checkpoint", required=True, metavar="DIR", help="state and progress (restart exactly once)")
    parser.add_argument("--out", metavar="DIR|console|kafka://HOST:PORT/TOPIC", help="answers (default: console)")
    parser.add_argument("--rejects", metavar="DIR", help="rejected lines and late events, with reasons")
    parser.add_argument("--example", action="store_true",
                        help="the paper's tiny example map (and its four events when --stream is not given)")
    parser.add_argument("--network-dir", default="vienna-network", metavar="DIR",
                        help="where the network and the fleet are written (default vienna-network)")
    parser.add_argument("--data-dir", help="data directory (default: $RSP_DATA_DIR or <repo>/../shared/data)")
    parser.add_argument("--centre", default="60201320", metavar="DIVA|NAME",
                        help="the centre station (default 60201320, Stephansplatz)")
    parser.add_argument("--vehicles", type=int, default=60, help="fleet size (default 60)")
    parser.add_argument("--subways", type=int, default=20, help="how many of them are subways (default 20)")
    parser.add_argument("--generate", type=int, metavar="MINUTES",
                        help="first write a seeded stream of MINUTES minutes into --stream DIR")
    parser.add_argument("--per-minute", type=int, default=50, help="generated events a minute (default 50)")
    parser.add_argument("--batch-minutes", type=int, default=10, help="generated minutes per file (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--trigger", default="available-now", metavar="available-now|interval:D")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="stop an interval run after this long")
    parser.add_argument("--lateness", default="0", metavar="D", help="allowed lateness in minutes (default 0)")
    parser.add_argument("--max-per-trigger", type=int, metavar="N", help="at most N files or messages per micro-batch")
    parser.add_argument("--engine", choices=("auto", "spark", "local", "keyed"), default="auto",
                        help="auto/spark/local: the per-batch runner (cep.continuous.runner); keyed: the query as one "
                             "Spark stateful operator on the executors (cep.continuous.keyed)")
    parser.add_argument("--buckets", type=int, metavar="N",
                        help="with --engine keyed: how many groups the stops are hashed into, fixed when the checkpoint "
                             "is created (default twice the session's cores)")


def run(args: argparse.Namespace) -> int:
    from cep.continuous.job import run as run_stream
    from cep.continuous.static import StaticFiles
    from jobs.query import parse_lateness
    from jobs.spark import build_session

    trigger = trigger_for(args.trigger)
    lateness = parse_lateness(args.lateness, "m")
    if args.buckets is not None and (args.engine != "keyed" or args.buckets < 1):
        raise TransitOptionError(f"--buckets {args.buckets}: expected a positive number, with --engine keyed")
    if args.stream is None and not args.example:
        raise TransitOptionError("--stream DIR (or kafka://...) is needed, unless --example runs the paper's events")
    if args.generate is not None and (args.stream is None or args.stream.startswith("kafka:")):
        raise TransitOptionError("--generate writes into --stream DIR: give a directory")
    world = vt.example_map() if args.example else vt.real_network(args.network_dir, args.data_dir, args.vehicles,
                                                                   args.subways, args.centre)
    stream = args.stream
    if stream is None:                      # the paper's four events, staged as a stream directory
        checkpoint = location(args.checkpoint, "--checkpoint")
        if is_hadoop(checkpoint):
            build_session("rsp-sidecar vienna-transit")     # written through the session's Hadoop filesystem
        staged = checkpoint.parent / (checkpoint.name + "-example-stream")
        staged.mkdir(parents=True, exist_ok=True)
        (staged / "events.jsonl").write_bytes(Path(vt.example_stream()).read_bytes())
        stream = str(staged)
    elif args.generate is not None:
        events = vt.write_stream(stream, args.generate, args.per_minute, args.batch_minutes, args.seed, world)
        print(json.dumps({"generated": {"events": events, "minutes": args.generate, "into": stream}}), file=sys.stderr)
    if not_a_directory(stream):
        raise TransitOptionError(f"{stream}: no such directory (--stream names a directory of event files "
                                 f"or kafka://HOST:PORT/TOPIC)")
    source = file_or_kafka_source(vt.STREAM, stream, args.max_per_trigger)
    sink = sink_for(args.out)
    need_kafka(source, sink)
    spark = build_session("rsp-sidecar vienna-transit")
    summary = run_stream(spark, world.query, [source], sink=sink, checkpoint=args.checkpoint,
                         static=StaticFiles(world.static), trigger=trigger, lateness=lateness, time_unit="m",
                         rejects=args.rejects, engine=args.engine, timeout=args.timeout, buckets=args.buckets)
    print(json.dumps({"vienna_transit": {**summary.to_dict(), "centre": world.centre}}), file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    return job_main("vienna_transit", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
