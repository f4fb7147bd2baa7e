"""``rsp-sidecar setup``: fetch the JVM jars into the cache (the jar knowledge is ``rdfcore.jars``):
GraphFrames' core (optional), the Spark Kafka connector (for ``query --continuous`` over Kafka), the
project's own file source (compiled against the installed Spark) and,
with ``--kafka-broker``, Apache Kafka's broker for local tests and demos; then compile the
stream scanners' numba kernels into their cache (``cep.io.kernels``), so that no first
micro-batch pays for it."""
from __future__ import annotations

import argparse
import sys

from rdfcore import jars


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--require-graphframes", action="store_true", help="fail when GraphFrames cannot be fetched")
    parser.add_argument("--require-kafka", action="store_true",
                        help="fail when the Spark Kafka connector cannot be fetched")
    parser.add_argument("--kafka-broker", action="store_true",
                        help="also fetch Apache Kafka's broker (a local broker for tests and demos)")


def run(args: argparse.Namespace) -> int:
    try:
        paths = jars.resolve()
    except jars.JarUnavailable as exc:
        if args.require_graphframes:
            raise
        print(f"warning: {exc}\nContinuing without GraphFrames: the default 'dataframe' strategy does not need it.",
              file=sys.stderr)
    else:
        print("GraphFrames jars cached:\n  " + "\n  ".join(str(p) for p in paths))
    try:
        paths = jars.resolve_kafka_connector()
    except jars.JarUnavailable as exc:
        if args.require_kafka:
            raise
        print(f"warning: {exc}\nContinuing without it: only --stream/--out kafka://... need it.", file=sys.stderr)
    else:
        print("Kafka connector jars cached:\n  " + "\n  ".join(str(p) for p in paths))
    try:
        print(f"The project's file source, built for this Spark:\n  {jars.ordered_files_jar(jars.installed_spark_version())}")
    except jars.JarBuildFailed as exc:
        print(f"warning: {exc}\nContinuing without it: only stream directories (--stream IRI=DIR) need it.",
              file=sys.stderr)
    if args.kafka_broker:
        paths = jars.resolve_kafka_broker()
        print(f"Kafka broker cached: {len(paths)} jars in {paths[0].parent}")
    print(cluster_packages())
    # here, not at the top: jobs.package imports this module for cluster_packages, and numba,
    # numpy and the query front end stay off its start-up
    from cep.io.kernels import compile_all

    print(f"The stream scanners' compiled kernels cached ({compile_all():.1f} s)")
    return 0


def cluster_packages() -> str:
    """What to pass to spark-submit on a cluster, where the jar cache is not on the classpath."""
    return ("On a cluster, pass the JVM dependencies to spark-submit as Maven coordinates (for the cluster's "
            "Spark version; these are this PySpark's):\n"
            f"  --packages {jars.kafka_connector().coordinate}    (Kafka sources and sinks)\n"
            f"  --packages {jars.graphframes().coordinate}    (optional: --strategy graphframes; "
            "not on the Maven Central reachable here)")
