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
import os
import sys

from jobs import jars, package
from jobs import paths as paths_job
from jobs import milan_routing, tracheobionta
from jobs import vienna_transit
from jobs import query as query_job
from jobs.errors import run_cli


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the process's) and run its command. ``materialize`` and ``demo``
    load pyspark (and rdflib) when imported: their modules are imported only when they are the
    command, so that the others (``query --at`` on the driver above all) start no faster than they
    must and load no Spark."""
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    parser = argparse.ArgumentParser(prog="rsp-sidecar", description="Semantic-reasoning sidecar for Spark jobs")
    parser.add_argument("--verbose", action="store_true",
                        help="keep Spark's and the JVM's own log lines on stderr (quiet by default)")
    sub = parser.add_subparsers(dest="command", required=True)
    setup = sub.add_parser("setup", help="fetch and cache JVM dependencies (GraphFrames, the Kafka connector) from Maven Central")
    jars.add_arguments(setup)
    setup.set_defaults(run=jars.run)
    mat = sub.add_parser("materialize", help="materialize ontologies into versioned closure tables")
    if chosen == "materialize":
        from jobs import materialize   # pyspark

        materialize.add_arguments(mat)
        mat.set_defaults(run=materialize.run)
    dem = sub.add_parser("demo", help="run the end-to-end demo")
    if chosen == "demo":
        from jobs import demo          # pyspark, rdflib

        demo.add_arguments(dem)
        dem.set_defaults(run=demo.run)
    pth = sub.add_parser("paths", help="evaluate a property path over RDF files (SPARQL 1.1 results)")
    paths_job.add_arguments(pth)
    pth.set_defaults(run=paths_job.run)
    qry = sub.add_parser("query", help="evaluate a CQELS-CEP, C-SPARQL, EP-SPARQL or RSEP-QL query (detected from "
                                       "the text, or --lang) at given instants (--at) or continuously (--continuous), "
                                       "over static graphs and streams")
    query_job.add_arguments(qry)
    qry.set_defaults(run=query_job.run)
    trb = sub.add_parser("tracheobionta", help="stream reasoning: streamed subjects that are instances of a plant class")
    tracheobionta.add_arguments(trb)
    trb.set_defaults(run=tracheobionta.run)
    vt = sub.add_parser("vienna-transit", help="alerts: repeated subway delays without an arrival, at stops that reach "
                                               "the centre by subway (the CQELS-CEP query on the real network)")
    vienna_transit.add_arguments(vt)
    vt.set_defaults(run=vienna_transit.run)
    mil = sub.add_parser("milan-routing", help="delivery agents' routes on the Milan network, recomputed when "
                                               "traffic closes a connection")
    milan_routing.add_arguments(mil)
    mil.set_defaults(run=milan_routing.run)
    pkg = sub.add_parser("package", help="the project as a zip for spark-submit --py-files, and a launcher")
    package.add_arguments(pkg)
    pkg.set_defaults(run=package.run)
    args = parser.parse_args(argv)
    if args.verbose:
        os.environ["RSP_VERBOSE"] = "1"  # read by jobs.spark.build_session
    return run_cli(args.run, args)


if __name__ == "__main__":
    sys.exit(main())
