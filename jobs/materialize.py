"""Materialize ontologies into versioned closure tables.

    spark-submit jobs/materialize.py --ontology A.ttl B.nt --out DIR [--if-changed] [--export-ntriples F]
    python -m jobs.materialize ...            (same arguments)
    rsp-sidecar materialize ...               (same arguments)

Prints one JSON line: version, row counts, rejected lines, seconds (``"skipped": true`` when
``--if-changed`` found the sources unchanged — the scheduled refresh).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.errors import job_main  # noqa: E402
from jobs.spark import build_session  # noqa: E402
from rdfcore.fs import is_hadoop  # noqa: E402
from rdfcore.locations import location  # noqa: E402
from rdfcore.progress import Progress  # noqa: E402
from reasoner.closure import STRATEGIES  # noqa: E402
from reasoner.publish import choose_engine, materialize_sources  # noqa: E402


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ontology", nargs="+", required=True, metavar="PATH",
                        help="ontology/data files: .nt (read by Spark), .ttl, .rdf/.owl/.xml, .n3, ...")
    parser.add_argument("--out", required=True, metavar="DIR", help="versioned output directory")
    parser.add_argument("--if-changed", action="store_true",
                        help="do nothing when the sources' content hashes match the current version")
    parser.add_argument("--export-ntriples", metavar="FILE", help="also write the inferred table as sorted N-Triples")
    parser.add_argument("--strategy", choices=STRATEGIES, default="dataframe",
                        help="transitive-closure strategy (graphframes needs GraphFrames' JVM jar)")
    parser.add_argument("--follow-imports", action="store_true", help="also load owl:imports of file: IRIs")
    parser.add_argument("--engine", choices=("auto", "spark", "local"), default="auto",
                        help="where to reason: local = on the driver in Python, no Spark job (the same tables); "
                             "auto (default) = local when the sources total at most RSP_LOCAL_MAX_BYTES "
                             "(64 MiB), Spark otherwise")


def run(args: argparse.Namespace) -> int:
    # bad paths fail before Spark starts; a Hadoop filesystem (hdfs://, s3a://) is reached
    # through the session's JVM, so it starts first
    named = [location(p, "--ontology") for p in args.ontology] + [location(args.out, "--out")]
    if args.export_ntriples:
        named.append(location(args.export_ntriples, "--export-ntriples"))
    spark = build_session("rsp-sidecar materialize") if any(map(is_hadoop, named)) else None
    # the driver-side engine needs no Spark session for local files (a scheduled refresh of a
    # small ontology then takes well under a second instead of a JVM start)
    local = choose_engine(args.ontology, args.engine, args.strategy) == "local"
    if spark is None and not local:
        spark = build_session("rsp-sidecar materialize")
    summary = materialize_sources(spark, args.ontology, args.out, if_changed=args.if_changed,
                                  strategy=args.strategy, follow_imports=args.follow_imports,
                                  export_ntriples=args.export_ntriples, progress=Progress("materialize"),
                                  engine="local" if local else "spark")
    print(json.dumps(summary, sort_keys=True))
    return 0


def main(argv: list[str] | None = None) -> int:
    return job_main("materialize", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
