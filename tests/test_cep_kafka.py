"""``query --continuous`` over Kafka: a real single-node broker (Apache Kafka in KRaft mode,
``devcluster.kafka_broker``) on loopback, the Spark Kafka connector from the jar cache.

The running example's events as Kafka messages give the answers they give as files; the answers
go to a Kafka topic (KafkaSink) and to a directory; a bad message goes to the rejects with its
partition and offset; a restart on the same checkpoint reads only the new messages and reports
only the new answers; the CLI takes kafka:// URLs; a session without the connector says so.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rdfcore.jars import installed_spark_version

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parent.parent
STREAM = "<http://example.org/publicTransport>"
VIENNA = "http://example.org/vienna#"
EVENTS = (REPO / "ontologies" / "vienna_example_stream.jsonl").read_text().splitlines()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from devcluster.kafka_broker import KafkaBroker

    with KafkaBroker(tmp_path_factory.mktemp("kafka")) as b:
        yield b


def produce(spark, broker, topic: str, values) -> None:
    """One message per value, in order (one writing task: one partition, increasing offsets)."""
    (spark.createDataFrame([(v,) for v in values], "value string").coalesce(1).write.format("kafka")
     .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", topic).save())


def consume(spark, broker, topic: str) -> list[tuple[str, dict]]:
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load()
            .selectExpr("CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v", "offset").orderBy("offset").collect())
    return [(r["k"], json.loads(r["v"])) for r in rows]


def run_example(spark, broker, topic, tmp_path, sink, name="ckpt"):
    from cep.continuous.job import run
    from cep.continuous.sources import KafkaSource
    from cep.continuous.static import StaticFiles

    query = (REPO / "ontologies" / "vienna_example_query.rq").read_text()
    return run(spark, query, [KafkaSource(STREAM, broker.bootstrap, topic)],
               static=StaticFiles({None: [REPO / "ontologies" / "vienna_example.ttl"]}), sink=sink,
               checkpoint=tmp_path / name, time_unit="m", rejects=tmp_path / "rejects", metrics=open(os.devnull, "w"))


def test_running_example_from_kafka_to_kafka_with_a_rejected_message(spark, broker, tmp_path):
    from cep.continuous.sinks import KafkaSink

    produce(spark, broker, "events-1", EVENTS[:2] + ['{"s": ":a1", "p": ":delayAt", "o": ":m"}'] + EVENTS[2:])
    summary = run_example(spark, broker, "events-1", tmp_path, KafkaSink(broker.bootstrap, "answers-1"))
    got = consume(spark, broker, "answers-1")
    assert [(a["s"], a["_start"], a["_end"], a["_at"]) for _k, a in got] == [(f"<{VIENNA}m>", 10, 16, 16)]
    assert got[0][0].endswith("/0") and got[0][1]["_version"].startswith("files:")
    (reject,) = [json.loads(line) for f in sorted((tmp_path / "rejects").glob("*.jsonl"))
                 for line in f.read_text().splitlines()]
    assert reject["file"] == "kafka:events-1/0" and reject["line"] == 2
    assert "missing or null key 't'" in reject["reason"]
    assert summary.answers == 1 and summary.rejected == {"bad input": 1} and summary.input_rows == 4


def test_restart_reads_only_new_messages_and_reports_only_new_answers(spark, broker, tmp_path):
    """The first run sees t = 10, 12, 14 (no answer: :h is not reachable by subway, :m was
    delayed once); the second, on the same checkpoint, sees t = 16 only and reports :m on
    [10, 16] — from the first delay, kept in the state across the restart."""
    from cep.continuous.sinks import DirectorySink

    out = tmp_path / "answers"
    produce(spark, broker, "events-2", EVENTS[:3])
    first = run_example(spark, broker, "events-2", tmp_path, DirectorySink(out))
    assert first.answers == 0 and first.input_rows == 3
    produce(spark, broker, "events-2", EVENTS[3:])
    second = run_example(spark, broker, "events-2", tmp_path, DirectorySink(out))
    assert second.input_rows == 1
    rows = [json.loads(line) for f in sorted(out.glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert [(r["s"], r["_start"], r["_end"]) for r in rows] == [(f"<{VIENNA}m>", 10, 16)]


def test_cli_kafka_urls(spark, broker, tmp_path, capsys):
    from jobs import query as job

    produce(spark, broker, "events-3", EVENTS)
    code = job.main(["ontologies/vienna_example_query.rq", "--static", "ontologies/vienna_example.ttl",
                     "--stream", f"{STREAM}=kafka://{broker.bootstrap}/events-3", "--continuous",
                     "--checkpoint", str(tmp_path / "ckpt"), "--out", f"kafka://{broker.bootstrap}/answers-3",
                     "--time-unit", "m"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert [a["s"] for _k, a in consume(spark, broker, "answers-3")] == [f"<{VIENNA}m>"]


@pytest.mark.parametrize("url, expected", [
    ("kafka://127.0.0.1/t", "is not HOST:PORT"),
    ("kafka://127.0.0.1:9092/", "expected kafka://HOST:PORT/TOPIC"),
    ("kafka://127.0.0.1:9092/t?format=xml", "format 'xml'"),
    ("kafka://127.0.0.1:9092/t?fmt=tsnt", "unknown option(s) fmt"),
])
def test_kafka_url_errors(url, expected, capsys, tmp_path):
    from jobs import query as job

    code = job.main(["ontologies/vienna_example_query.rq", "--stream", f"{STREAM}={url}", "--continuous",
                     "--checkpoint", str(tmp_path / "ckpt")])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "--stream" in err


def test_without_the_connector_the_error_says_how_to_get_it(tmp_path):
    """A fresh jar cache and an unreachable Maven repository: not a stack trace, but which jar is
    missing and how to supply it (in a subprocess: its own JVM without the connector)."""
    env = dict(os.environ, RSP_JAR_CACHE=str(tmp_path / "jars"), RSP_MAVEN_REPO="http://127.0.0.1:9/maven2")
    done = subprocess.run([sys.executable, "-m", "jobs.query", "ontologies/vienna_example_query.rq",
                           "--static", "ontologies/vienna_example.ttl",
                           "--stream", f"{STREAM}=kafka://127.0.0.1:9/events", "--continuous",
                           "--checkpoint", str(tmp_path / "ckpt"), "--time-unit", "m"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert f"spark-sql-kafka-0-10_2.13:{installed_spark_version()} is not available" in done.stderr   # the running Spark's
    assert "rsp-sidecar setup" in done.stderr and "Traceback" not in done.stderr


def test_the_scenario_services_read_kafka(spark, broker, tmp_path):
    """Tracheobionta over timestamped N-Triples messages (a bad one rejected with its partition
    and offset, a blank node scoped to the partition) and Milan routing over JSON events."""
    from cep.io.lineparse import bnode_scope
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import KafkaSource
    from reasoner.publish import materialize_sources
    from scenarios.membership import run as membership

    ex = "http://example.org/k#"
    rdf_type = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
    schema = tmp_path / "schema.nt"
    schema.write_text(f"<{ex}Fern> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{ex}Plant> .\n")
    materialize_sources(spark, [schema], tmp_path / "store")
    produce(spark, broker, "plants", [f'<{ex}x> {rdf_type} <{ex}Fern> "5" .', f'_:b {rdf_type} <{ex}Plant> "6" .',
                                      f'<{ex}y> {rdf_type} <{ex}Rock> "7" .', "not a triple",
                                      f'<{ex}z> <{ex}likes> <{ex}Fern> "8" .'])
    summary = membership(spark, [KafkaSource("<urn:k>", broker.bootstrap, "plants", fmt="tsnt")],
                         store=tmp_path / "store", target=f"<{ex}Plant>", sink=DirectorySink(tmp_path / "out"),
                         checkpoint=tmp_path / "ckpt", rejects=tmp_path / "rejects", metrics=open(os.devnull, "w"))
    rows = [json.loads(x) for p in (tmp_path / "out").glob("*.jsonl") for x in p.read_text().splitlines()]
    assert sorted((r["subject"], r["t"], r["file"], r["line"]) for r in rows) == [
        (f"<{ex}x>", 5, "kafka:plants/0", 0), (f"_:f{bnode_scope('kafka:plants/0')}.b", 6, "kafka:plants/0", 1)]
    rejects = [json.loads(x) for p in (tmp_path / "rejects").glob("*.jsonl") for x in p.read_text().splitlines()]
    assert [(r["file"], r["line"]) for r in rejects] == [("kafka:plants/0", 3)] and summary.rejected == 1

    from ontologies import milan
    from scenarios.milan_routing import CLOSED, M, REQUESTS, TRAFFIC, Plans, agent_iri, run as routing

    stops = {f"stop/{i}": milan.Stop(f"stop/{i}", f"s{i}", 45.4, 9.1, "45.4", "9.1") for i in range(3)}
    conns = {("r", "stop/0", "stop/1"): milan.Connection("r", "bus", "stop/0", "stop/1", 10, 60),
             ("r", "stop/1", "stop/2"): milan.Connection("r", "bus", "stop/1", "stop/2", 10, 60),
             ("q", "stop/0", "stop/2"): milan.Connection("q", "bus", "stop/0", "stop/2", 10, 200)}
    net = milan.Network(stops, conns, {"r": "bus", "q": "bus"}, [])
    first = conns[("r", "stop/0", "stop/1")].iri
    produce(spark, broker, "traffic", [json.dumps({"s": agent_iri("a"), "p": REQUESTS, "o": f"<{M}next>", "t": 1}),
                                       json.dumps({"s": first, "p": TRAFFIC, "o": CLOSED, "t": 2})])
    plans = Plans({agent_iri("a"): (stops["stop/0"].iri, [stops["stop/2"].iri])})
    routing(spark, [KafkaSource("<urn:m>", broker.bootstrap, "traffic")], network=net, plans=plans,
            sink=DirectorySink(tmp_path / "routes"), checkpoint=tmp_path / "mckpt", metrics=open(os.devnull, "w"))
    routes = [json.loads(x) for p in sorted((tmp_path / "routes").glob("*.jsonl")) for x in p.read_text().splitlines()]
    assert [(r["cause"], r["duration_s"]) for r in routes] == [("request", 120), (f"closed {first}", 200)]
