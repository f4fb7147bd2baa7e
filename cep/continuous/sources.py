"""Where a continuous query's lines come from: directories of files (``FileSource``) or Kafka
topics (``KafkaSource``), read as Structured Streaming sources."""
from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cep.continuous.state import STREAM
from cep.continuous.plan import ContinuousError
from rdfcore.fs import spark_path
from rdfcore.jars import JarBuildFailed, JarUnavailable, ORDERED_FILES, kafka_connector, ordered_files_jar, spark_cache_dir
from rdfcore.locations import location
from rdfcore.schema import FILE, LINE, RAW


#: which source a line came from (its index in the run's sources)
SOURCE = "_source"


@dataclass(frozen=True)
class FileSource:
    """The files of stream ``stream`` (an IRI term) as they appear in ``directory``: each new file is
    read whole in one micro-batch (JSON Lines or timestamped N-Triples, by extension; ``fmt``
    forces one). Files are read in a deterministic order: by modification time, ties by their path
    under the directory; a file first seen after others is read after them whatever its time
    (``cep/continuous/OrderedFiles.java``; docs/continuous.md, "The order of a directory's
    files"). Lines come numbered (1-based, per file); invalid UTF-8 sequences arrive as U+FFFD and
    are rejected by the parsers."""

    stream: str
    directory: str
    fmt: str | None = None
    max_files_per_trigger: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "directory", str(location(self.directory, f"stream {self.stream}")))

    def lines(self, spark: SparkSession) -> DataFrame:
        """(RAW, FILE, LINE, STREAM): the lines of each new file, in the source's order."""
        reader = spark.readStream.format(ORDERED_FILES)
        if self.max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", str(self.max_files_per_trigger))
        try:
            frame = reader.load(spark_path(self.directory))
        except Exception as exc:  # noqa: BLE001 - Spark raises its own AnalysisException type
            if not _add_ordered_jar(spark, exc):
                raise ordered_missing(spark, exc) from None
            try:
                frame = reader.load(spark_path(self.directory))
            except Exception as again:  # noqa: BLE001
                raise ordered_missing(spark, again) from None
        return frame.select(F.col("value").alias(RAW), F.col("file").alias(FILE), F.col("line").alias(LINE),
                            F.lit(self.stream).alias(STREAM))


def _add_ordered_jar(spark: SparkSession, exc: BaseException) -> bool:
    """When the session lacks the ordered file source (a JVM started before the project could put
    the jar on its classpath: spark-submit's driver, a session built elsewhere), add the jar to
    the session (``ADD JAR``: the driver's session class loader and the executors) if it can be
    built; True when it was added."""
    if not _source_missing(exc):
        return False
    try:
        jar = ordered_files_jar(spark.version)
    except JarBuildFailed:
        try:   # PySpark from a zip without its jars (a YARN container): the JVM's own class path
            jar = ordered_files_jar(spark.version, spark.sparkContext._jvm.System.getProperty("java.class.path"))
        except JarBuildFailed:
            return False
    spark.sql(f"ADD JAR '{jar}'")
    return True


def _source_missing(exc: BaseException) -> bool:
    text = str(exc)
    return ORDERED_FILES in text and ("DATA_SOURCE_NOT_FOUND" in text or "Failed to find" in text
                                      or "ClassNotFound" in text)


def ordered_missing(spark: SparkSession, exc: BaseException) -> BaseException:
    """Spark's "data source not found" for the ordered file source as a clear error; anything else as is."""
    if _source_missing(exc):
        try:
            jar = f"the jar {ordered_files_jar(spark.version)}"
        except JarBuildFailed as failed:
            jar = f"its jar (which cannot be built here: {failed})"
        return ContinuousError(
            f"the project's file source {ORDERED_FILES} is not on this Spark session's classpath: build the "
            f"session with jobs.spark.build_session (it adds the jar), or pass {jar} to --jars / spark.jars")
    return exc


@dataclass(frozen=True)
class KafkaSource:
    """The messages of a Kafka topic as stream ``stream``: one item per message, its value one JSON
    event (``fmt="jsonl"``, the default) or one timestamped N-Triples line (``fmt="tsnt"``), in the
    formats of ``cep.io.streams``. An item's id is ``xxhash64("kafka:TOPIC/PARTITION", offset)``:
    stable on replay; rejects name the message as file ``kafka:TOPIC/PARTITION``, line = its
    offset. Blank nodes are scoped to the partition. Empty messages are skipped, as blank lines
    are. ``starting_offsets``: ``earliest`` (default) or ``latest`` for a new checkpoint (a restart
    continues from the checkpoint's offsets); ``options``: more ``kafka.*`` or source options
    (``maxOffsetsPerTrigger``, ``failOnDataLoss``, security settings)."""

    stream: str
    bootstrap: str
    topic: str
    fmt: str = "jsonl"
    starting_offsets: str = "earliest"
    options: tuple = ()     # ((key, value), ...)

    def lines(self, spark: SparkSession) -> DataFrame:
        reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
                  .option("subscribe", self.topic).option("startingOffsets", self.starting_offsets))
        for key, value in self.options:
            reader = reader.option(key, str(value))
        try:
            frame = reader.load()
        except Exception as exc:  # noqa: BLE001 - Spark raises its own AnalysisException type
            raise kafka_missing(exc) from None
        return frame.select(
            F.coalesce(F.col("value").cast("string"), F.lit("")).alias(RAW),
            F.concat(F.lit("kafka:"), F.col("topic"), F.lit("/"), F.col("partition").cast("string")).alias(FILE),
            F.col("offset").alias(LINE), F.lit(self.stream).alias(STREAM))


def parse_kafka_url(text: str) -> tuple[str, str, dict]:
    """``kafka://HOST:PORT[,HOST:PORT...]/TOPIC[?format=jsonl|tsnt]`` → (bootstrap servers, topic,
    {"format": ...}); raises ``ContinuousError`` saying what is wrong."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(text)
    topic = parts.path.lstrip("/")
    if parts.scheme != "kafka" or not parts.netloc or not topic or "/" in topic:
        raise ContinuousError(f"{text!r}: expected kafka://HOST:PORT/TOPIC (several brokers: "
                              f"kafka://H1:P1,H2:P2/TOPIC; optional ?format=jsonl|tsnt)")
    for server in parts.netloc.split(","):
        host, _, port = server.rpartition(":")
        if not host or not port.isdigit():
            raise ContinuousError(f"{text!r}: broker {server!r} is not HOST:PORT")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    unknown = sorted(set(query) - {"format"})
    if unknown:
        raise ContinuousError(f"{text!r}: unknown option(s) {', '.join(unknown)}; only ?format=jsonl|tsnt")
    if query.get("format", "jsonl") not in ("jsonl", "tsnt"):
        raise ContinuousError(f"{text!r}: format {query['format']!r}; expected jsonl or tsnt")
    return parts.netloc, topic, query


def kafka_missing(exc: BaseException) -> BaseException:
    """Spark's "data source kafka not found" as the jar cache's clear error; anything else as is."""
    text = str(exc)
    if "DATA_SOURCE_NOT_FOUND" in text or re.search(r"Failed to find (the )?data source: kafka", text):
        return JarUnavailable(kafka_connector(), "its classes are not on this Spark session's classpath", spark_cache_dir())
    return exc


def check_sources(sources) -> None:
    """Each file source's directory exists, wherever it is: a filesystem Spark lacks or an
    unreachable namenode is one clear error before the stream starts, not a failure inside the
    first batch (a local directory is also checked by the jobs before Spark starts)."""
    for source in sources:
        if isinstance(source, FileSource) and not location(source.directory).is_dir():
            raise ContinuousError(f"{source.directory}: no such directory (the files of stream {source.stream})")
