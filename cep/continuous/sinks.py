"""Where a continuous query's answers go: a directory of JSON Lines files, the console, a Kafka topic
or a callback. Each sink writes a batch's rows under the batch's label, once."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from pyspark.sql import SparkSession

from cep.continuous.sources import kafka_missing
from rdfcore import fs
from rdfcore.locations import location


class DirectorySink:
    """Answers as JSON Lines files in ``directory``, one file per micro-batch (``part-<batch>.jsonl``),
    written to a temporary name and renamed: a replayed batch replaces its file (exactly once)."""

    def __init__(self, directory: str | Path):
        self.directory = location(directory, "the output directory")

    def write(self, label: str, rows) -> int:
        return self.write_lines(label, (json.dumps(row, ensure_ascii=False) for row in rows))

    def write_lines(self, label: str, lines) -> int:
        """Answers already serialised (one JSON object per string)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return fs.write_lines(self.directory / f"part-{label}.jsonl", lines)

    def write_blobs(self, label: str, blobs) -> None:
        """Answers already serialised as bytes (JSON lines, newlines included), chunk by chunk."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with fs.atomic_writer(self.directory / f"part-{label}.jsonl", binary=True) as out:
            for blob in blobs:
                out.write(blob)


class ConsoleSink:
    """Answers as JSON Lines on a text stream (stdout by default); at least once across restarts."""

    def __init__(self, out: TextIO | None = None):
        self.out = out

    def write(self, label: str, rows) -> int:
        return self.write_lines(label, (json.dumps(row, ensure_ascii=False) for row in rows))

    def write_lines(self, label: str, lines) -> int:
        out = self.out or sys.stdout
        n = 0
        for line in lines:
            out.write(line + "\n")
            n += 1
        out.flush()
        return n


class KafkaSink:
    """Answers as Kafka messages on ``topic``: the value one answer as JSON, the key
    ``<batch label>/<index>``. Kafka's producer is at-least-once: a batch replayed after a crash
    sends its answers again with the same keys, so a consumer that must see each answer once
    de-duplicates by key (or use ``DirectorySink``, which is exactly once)."""

    def __init__(self, bootstrap: str, topic: str, options: Mapping[str, str] | None = None):
        self.bootstrap, self.topic, self.options = bootstrap, topic, dict(options or {})
        self.spark: SparkSession | None = None

    def bind(self, spark: SparkSession) -> None:
        self.spark = spark

    def write(self, label: str, rows) -> int:
        return self.write_lines(label, (json.dumps(row, ensure_ascii=False) for row in rows))

    def write_lines(self, label: str, lines) -> int:
        messages = [(f"{label}/{i}", line) for i, line in enumerate(lines)]
        if not messages:
            return 0
        spark = self.spark or SparkSession.getActiveSession()
        writer = (spark.createDataFrame(messages, "key string, value string").write.format("kafka")
                  .option("kafka.bootstrap.servers", self.bootstrap).option("topic", self.topic))
        for key, value in self.options.items():
            writer = writer.option(key, value)
        try:
            writer.save()
        except Exception as exc:  # noqa: BLE001
            raise kafka_missing(exc) from None
        return len(messages)


class CallbackSink:
    """``fn(label, rows)`` per micro-batch: ``rows`` a list of answer dicts (a service's hook)."""

    def __init__(self, fn: Callable[[str, list[dict]], None]):
        self.fn = fn

    def write(self, label: str, rows) -> int:
        rows = list(rows)
        self.fn(label, rows)
        return len(rows)


def write_json_lines(sink, label: str, lines) -> int:
    """Serialised answers (JSON strings) to any sink: as they are where the sink takes text
    (``write_lines``), parsed back into dicts for the others (``CallbackSink``)."""
    if hasattr(sink, "write_lines"):
        return sink.write_lines(label, lines)
    return sink.write(label, [json.loads(line) for line in lines])


def write_jsonl(path, rows) -> int:
    return fs.write_lines(path, (json.dumps(row, ensure_ascii=False) for row in rows))
