"""``rsp-sidecar``: one command fronting every job.

    rsp-sidecar [--verbose] COMMAND ...            --verbose: keep Spark's/the JVM's log lines
    rsp-sidecar setup [--require-graphframes] [--require-kafka] [--kafka-broker]
                                                  fetch JVM jars (GraphFrames, Kafka) into the cache
    rsp-sidecar materialize --ontology ... --out DIR [--if-changed] [--export-ntriples F]
    rsp-sidecar demo [--data-dir D] [--out DIR]   the end-to-end demo of the README
    rsp-sidecar paths --data F ... --path EXPR [--from T] [--to T] [--format tsv|csv|json]
    rsp-sidecar query QUERY_FILE [--static [IRI=]F ...] [--stream IRI=F ...] (--at T[,T...] | --continuous ...)
                      [--lang auto|cqels|csparql|epsparql|rsepql] [--time-unit U] [--format F]
                                                  a CQELS-CEP, C-SPARQL, EP-SPARQL or RSEP-QL query
    rsp-sidecar tracheobionta --stream DIR --checkpoint DIR [--out DIR] [--class C]   plant stream reasoning
    rsp-sidecar vienna-transit --stream DIR --checkpoint DIR [--out DIR] [--example]   transit alerts
    rsp-sidecar milan-routing --stream DIR --agents F --checkpoint DIR [--out DIR] [--map PNG]   route service
    rsp-sidecar package [--out DIR] [--with-dependencies]   a zip for spark-submit --py-files
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from jobs.errors import run_cli

#: (command, its job's module, help). A job's module is imported only when it is the command:
#: ``materialize`` and ``demo`` load pyspark (and rdflib) at the top, since spark-submit runs them
#: as files, and ``query --at`` on the driver must start without them. Each module has
#: ``add_arguments(parser)`` and ``run(args)``.
COMMANDS = (
    ("setup", "jobs.jars", "fetch and cache JVM dependencies (GraphFrames, the Kafka connector) from Maven Central"),
    ("materialize", "jobs.materialize", "materialize ontologies into versioned closure tables"),
    ("demo", "jobs.demo", "run the end-to-end demo"),
    ("paths", "jobs.paths", "evaluate a property path over RDF files (SPARQL 1.1 results)"),
    ("query", "jobs.query", "evaluate a CQELS-CEP, C-SPARQL, EP-SPARQL or RSEP-QL query (detected from the text, or "
                            "--lang) at given instants (--at) or continuously (--continuous), over static graphs and "
                            "streams"),
    ("tracheobionta", "jobs.tracheobionta", "stream reasoning: streamed subjects that are instances of a plant class"),
    ("vienna-transit", "jobs.vienna_transit", "alerts: repeated subway delays without an arrival, at stops that reach "
                                              "the centre by subway (the CQELS-CEP query on the real network)"),
    ("milan-routing", "jobs.milan_routing", "delivery agents' routes on the Milan network, recomputed when traffic "
                                            "closes a connection"),
    ("package", "jobs.package", "the project as a zip for spark-submit --py-files, and a launcher"),
)


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's) and run its command (``COMMANDS``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)   # --verbose is the only option before it
    parser = argparse.ArgumentParser(prog="rsp-sidecar", description="Semantic-reasoning sidecar for Spark jobs")
    parser.add_argument("--verbose", action="store_true",
                        help="keep Spark's and the JVM's own log lines on stderr (quiet by default)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module, help_text in COMMANDS:
        command = sub.add_parser(name, help=help_text)
        if name == chosen:
            job = importlib.import_module(module)
            job.add_arguments(command)
            command.set_defaults(run=job.run)
    args = parser.parse_args(argv)
    if args.verbose:
        os.environ["RSP_VERBOSE"] = "1"  # read by jobs.spark.build_session
    return run_cli(args.run, args)


if __name__ == "__main__":
    sys.exit(main())
