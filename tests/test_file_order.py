"""Issue 59: a directory whose files share one modification time is read in name order on every
continuous engine, so nothing is late that would not be late in order; and the same input
through an engine gives the same answers every time.

The running example's four events in three files (``part-00000``: t=10, ``part-00001``: t=12
and 14, ``part-00002``: t=16), written last to first with one modification time, read one file a
micro-batch at lateness 0: read out of order, the earlier delays are late and the answer is lost.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cep.continuous.job import run
from cep.continuous.sinks import CallbackSink
from cep.continuous.sources import FileSource
from cep.continuous.static import StaticFiles
from tests.running_example import PUBLIC_TRANSPORT

SAME = 1_767_225_600
EXAMPLE = Path(__file__).resolve().parent.parent / "ontologies"


def _stream_files(directory) -> None:
    directory.mkdir()
    events = (EXAMPLE / "vienna_example_stream.jsonl").read_text().splitlines()
    files = [events[:1], events[1:3], events[3:]]
    for i in reversed(range(len(files))):
        path = directory / f"part-{i:05d}.jsonl"
        path.write_text("".join(e + "\n" for e in files[i]))
        os.utime(path, (SAME, SAME))


def _answers(spark, tmp_path, engine: str, name: str):
    got = []
    summary = run(spark, (EXAMPLE / "vienna_example_query.rq").read_text(),
                  [FileSource(PUBLIC_TRANSPORT, str(tmp_path / "in"), max_files_per_trigger=1)],
                  sink=CallbackSink(lambda _label, rows: got.extend(rows)), checkpoint=tmp_path / f"ckpt-{name}",
                  static=StaticFiles({None: [EXAMPLE / "vienna_example.ttl"]}),
                  time_unit="m", rejects=tmp_path / f"rejects-{name}", engine=engine,
                  metrics=open(os.devnull, "w"))
    late = [json.loads(line) for f in sorted((tmp_path / f"rejects-{name}").glob("*.jsonl"))
            for line in f.read_text().splitlines()]
    return sorted((a["s"], a["_start"], a["_end"]) for a in got), late, summary


# the Spark engine reads with the auto engine's source and runner (only a batch's evaluation
# differs, which tests/test_cep_continuous.py checks against the reference): under the thorough
# profile only
@pytest.mark.parametrize("engine", ["auto", pytest.param("spark", marks=pytest.mark.thorough), "keyed"])
def test_files_with_one_modification_time_are_read_in_name_order_on_every_engine(spark, tmp_path, engine):
    _stream_files(tmp_path / "in")
    runs = [_answers(spark, tmp_path, engine, str(k)) for k in range(2)]
    for answers, late, _summary in runs:
        assert answers == [("<http://example.org/vienna#m>", 10, 16)]
        assert late == []
    assert runs[0][0] == runs[1][0]
