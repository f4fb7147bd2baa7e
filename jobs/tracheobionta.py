"""Tracheobionta stream reasoning: report every streamed subject that is an instance of a plant class.

    rsp-sidecar tracheobionta --stream in/ --out answers/ --checkpoint ckpt/ [--class subkingdom:Tracheobionta]
    python -m jobs.tracheobionta ...          spark-submit jobs/tracheobionta.py ...

The closure of the USDA plant taxonomy (``../shared/data/plants``, 42,006 subclasses of
Tracheobionta) is published once into a reasoner store (``--store``, default ``plants-closure``;
republished only when the taxonomy changed) — or an existing store is used as it is
(``--closure DIR``, e.g. one a scheduled ``rsp-sidecar materialize --if-changed`` refreshes; a new
version is picked up by the next micro-batch). The stream — a directory of timestamped N-Triples
or JSON Lines files, or ``kafka://HOST:PORT/TOPIC[?format=tsnt]`` — is read by Spark Structured
Streaming; each triple ``x rdf:type C`` (or a subproperty of rdf:type) with C the class or one of
its subclasses is one answer ``{"subject", "class", "t", "processed_at", "version", "file",
"line"}`` (``scenarios.membership``). Bad lines go to ``--rejects`` with their reason and are
counted; the run's summary goes to stderr as one JSON line.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.errors import job_main  # noqa: E402
from jobs.streaming import file_or_kafka_source, need_kafka, not_a_directory, sink_for, trigger_for  # noqa: E402
from ontologies.data import data_dir as find_data_dir  # noqa: E402
from rdfcore import fs  # noqa: E402
from rdfcore.errors import SidecarError  # noqa: E402
from rdfcore.fs import is_hadoop  # noqa: E402
from rdfcore.locations import location  # noqa: E402

STREAM_IRI = "<http://example.org/plants/stream>"
DEFAULT_CLASS = "subkingdom:Tracheobionta"
DEFAULT_STORE = "plants-closure"


class TracheobiontaError(SidecarError, ValueError):
    """A bad combination of options."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stream", required=True, metavar="DIR|kafka://HOST:PORT/TOPIC",
                        help="stream files (.nt timestamped N-Triples, .jsonl) arriving in DIR, or a Kafka topic")
    parser.add_argument("--class", dest="klass", default=DEFAULT_CLASS, metavar="CLASS",
                        help="the class of concern: a taxon id of the taxonomy (default subkingdom:Tracheobionta) "
                             "or an IRI")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--closure", metavar="STORE_DIR", help="use this published closure as it is")
    where.add_argument("--store", default=DEFAULT_STORE, metavar="DIR",
                       help=f"publish the taxonomy's closure here (default {DEFAULT_STORE}; skipped when unchanged)")
    parser.add_argument("--data-dir", help="data directory (default: $RSP_DATA_DIR or <repo>/../shared/data)")
    parser.add_argument("--species-level", action="store_true", help="the taxonomy that stops at species")
    parser.add_argument("--out", metavar="DIR|console|kafka://HOST:PORT/TOPIC",
                        help="where the answers go (default: console)")
    parser.add_argument("--checkpoint", required=True, metavar="DIR",
                        help="Spark's progress and the metrics, to restart exactly where it stopped")
    parser.add_argument("--rejects", metavar="DIR", help="rejected lines, one JSON Lines file per micro-batch")
    parser.add_argument("--trigger", default="available-now", metavar="available-now|interval:D",
                        help="available-now: process what is there and stop (default); interval:D: a micro-batch "
                             "every D seconds until stopped")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="stop an interval run after this long")
    parser.add_argument("--max-per-trigger", type=int, metavar="N", help="at most N files or messages per micro-batch")
    parser.add_argument("--time-unit", default="ms", choices=("ms", "s", "m", "h", "d"),
                        help="unit of integer timestamps (default ms)")
    parser.add_argument("--engine", choices=("auto", "spark"), default="auto",
                        help="auto (default): plain batches on the driver, no Spark job; spark: every line in Spark")


def publish_taxonomy(spark, store: str | Path, data_dir: str | None = None, species_level: bool = False) -> dict:
    """Write the taxonomy as N-Triples under ``STORE/source/`` and materialize it into ``store``
    (``--if-changed``: an unchanged taxonomy is not published again). Returns the summary."""
    from ontologies.plants import read_taxonomy, taxonomy_path, write_hierarchy
    from reasoner.publish import materialize_sources

    root = location(store, "--store")
    source = root / "source" / "plants.nt"
    source.parent.mkdir(parents=True, exist_ok=True)
    taxa = read_taxonomy(taxonomy_path(find_data_dir(data_dir), species_level))
    with tempfile.TemporaryDirectory(prefix="rsp-taxonomy-") as scratch:
        written = Path(scratch) / "plants.nt"
        write_hierarchy(taxa, written)
        data = written.read_bytes()
    if not source.exists() or source.read_bytes() != data:     # unchanged: the store is not touched
        with fs.atomic_writer(source, binary=True) as out:
            out.write(data)
    return materialize_sources(spark, [source], root, if_changed=True)


def run(args: argparse.Namespace) -> int:
    from jobs.spark import build_session
    from ontologies.plants import class_iri
    from scenarios.membership import resolve_class, run as run_service

    if args.max_per_trigger is not None and args.max_per_trigger < 1:
        raise TracheobiontaError(f"--max-per-trigger {args.max_per_trigger}: expected a positive number")
    trigger = trigger_for(args.trigger)
    target = resolve_class(args.klass, class_iri)
    if not_a_directory(args.stream):
        raise TracheobiontaError(f"{args.stream}: no such directory (--stream names a directory of stream files "
                                 f"or kafka://HOST:PORT/TOPIC)")
    source = file_or_kafka_source(STREAM_IRI, args.stream, args.max_per_trigger, fmt=None)
    sink = sink_for(args.out)
    need_kafka(source, sink)
    if args.closure and not is_hadoop(location(args.closure, "--closure")):
        from scenarios.membership import load_class_set

        load_class_set(args.closure, target)     # a wrong class or store is said before any JVM starts
    spark = build_session("rsp-sidecar tracheobionta")
    if args.closure:
        store = args.closure
    else:
        published = publish_taxonomy(spark, args.store, args.data_dir, args.species_level)
        print(json.dumps({"closure": {"store": args.store, "version": published.get("version"),
                                      "skipped": bool(published.get("skipped"))}}), file=sys.stderr)
        store = args.store
    summary = run_service(spark, [source], store=store, target=target, sink=sink, checkpoint=args.checkpoint,
                          trigger=trigger, rejects=args.rejects, time_unit=args.time_unit, engine=args.engine,
                          timeout=args.timeout)
    print(json.dumps({"tracheobionta": summary.to_dict()}), file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    return job_main("tracheobionta", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
