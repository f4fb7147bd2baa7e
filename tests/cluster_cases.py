"""What the cluster tests (tests/test_standalone.py, tests/test_yarn.py) share for a continuous
query: the running example's stream written in two files to the cluster's directory and to a
local one, the local mode run they are compared with, and the answers and metrics a run wrote
(to local disk or HDFS alike)."""
from __future__ import annotations

import json
import os

from cep.continuous.job import run
from cep.continuous.sinks import DirectorySink
from cep.continuous.sources import FileSource
from cep.continuous.static import ClosureStore
from rdfcore import resources

STREAM = "<http://example.org/publicTransport>"
QUERY = "vienna_example_query.rq"


def write_example_stream(*directories) -> None:
    """The example's events in two files (``part0.jsonl``, ``part1.jsonl``) in each directory."""
    events = resources.data("ontologies", "vienna_example_stream.jsonl").decode().splitlines(keepends=True)
    for i, part in enumerate((events[:2], events[2:])):
        for directory in directories:
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"part{i}.jsonl").write_text("".join(part))


def local_answers(spark, tmp_path, store, max_per_trigger: int | None = None) -> list[dict]:
    """The example query over ``tmp_path / "in"`` in local mode, on the driver, with the closure
    ``store``: the answers a cluster's run must equal."""
    run(spark, resources.path("ontologies", QUERY).read_text(),
        [FileSource(STREAM, str(tmp_path / "in"), max_files_per_trigger=max_per_trigger)],
        static=ClosureStore(store), sink=DirectorySink(tmp_path / "out"), checkpoint=tmp_path / "ckpt",
        time_unit="m", metrics=open(os.devnull, "w"), engine="local")
    return answers(tmp_path / "out")


def answers(directory) -> list[dict]:
    """The answers a run wrote with ``--out directory``, in a fixed order."""
    return sorted((json.loads(line) for f in directory.glob("part-*.jsonl") for line in f.read_text().splitlines()),
                  key=json.dumps)


def metrics(checkpoint) -> list[dict]:
    """The metrics lines a run wrote under its checkpoint."""
    return [json.loads(line) for line in (checkpoint / "metrics.jsonl").read_text().splitlines()]
