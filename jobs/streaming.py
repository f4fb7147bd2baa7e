"""What every streaming job shares: its sources and sink from the command line, the Kafka jar, the trigger."""
from __future__ import annotations

import re

from rdfcore.errors import SidecarError
from rdfcore.fs import is_hadoop
from rdfcore.locations import location

__all__ = ["StreamOptionError", "kafka_url", "file_or_kafka_source", "sink_for", "need_kafka", "trigger_for"]


class StreamOptionError(SidecarError, ValueError):
    """A stream, output or trigger option is malformed."""


def kafka_url(url: str, option: str) -> tuple[str, str, dict]:
    """``kafka://HOST:PORT/TOPIC[?format=...]`` of option ``option`` → (bootstrap, topic, options)."""
    from cep.continuous.plan import ContinuousError
    from cep.continuous.sources import parse_kafka_url

    try:
        return parse_kafka_url(url)
    except ContinuousError as exc:
        raise StreamOptionError(f"{option} {exc}") from None


def file_or_kafka_source(iri: str, where: str, max_per_trigger: int | None = None, option: str = "--stream",
                         fmt: str | None = None):
    """A directory (``FileSource``) or ``kafka://...`` (``KafkaSource``) as stream ``iri``."""
    from cep.continuous.sources import FileSource, KafkaSource

    if where.startswith("kafka:"):
        bootstrap, topic, options = kafka_url(where, option)
        limit = (("maxOffsetsPerTrigger", max_per_trigger),) if max_per_trigger else ()
        return KafkaSource(iri, bootstrap, topic, fmt=options.get("format", fmt or "jsonl"), options=limit)
    return FileSource(iri, str(where), fmt=fmt, max_files_per_trigger=max_per_trigger)


def not_a_directory(where: str) -> bool:
    """Whether ``--stream`` names a local path that is not a directory (checked before Spark
    starts); a Kafka topic or a Hadoop path is not checked here (``cep.continuous.runner.check_sources``
    checks the latter once Spark runs)."""
    if where.startswith("kafka:"):
        return False
    path = location(where, "--stream")
    return not is_hadoop(path) and not path.is_dir()


def sink_for(out: str | None):
    """``--out``: console (None, ``console``, ``-``), ``kafka://HOST:PORT/TOPIC`` or a directory."""
    from cep.continuous.sinks import ConsoleSink, DirectorySink, KafkaSink

    if out in (None, "console", "-"):
        return ConsoleSink()
    if out.startswith("kafka:"):
        bootstrap, topic, _ = kafka_url(out, "--out")
        return KafkaSink(bootstrap, topic)
    return DirectorySink(out)


def need_kafka(*things) -> None:
    """Resolve the Kafka connector (cached after the first time) when a source or sink is Kafka:
    it must be on the classpath when the session starts."""
    from cep.continuous.sinks import KafkaSink
    from cep.continuous.sources import KafkaSource

    if any(isinstance(x, (KafkaSource, KafkaSink)) for x in things):
        from rdfcore import jars

        jars.resolve_kafka_connector()


def trigger_for(text: str) -> str:
    """``--trigger``: ``available-now`` or ``interval:SECONDS`` (``interval:5s`` too)."""
    if not (text == "available-now" or re.fullmatch(r"interval:[0-9]+(\.[0-9]+)?s?", text)):
        raise StreamOptionError(f"--trigger {text!r}: expected available-now or interval:SECONDS (e.g. interval:5)")
    return text if text == "available-now" else f"interval:{text.split(':')[1].rstrip('s')}"
