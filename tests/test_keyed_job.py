"""The continuous job on the keyed operator (``engine="keyed"``, cep.continuous.keyed.job): the
project's file sources, sinks, rejects, checkpoint and metrics, with the answers of the union over
instants of the reference, closed at the end of the input by a heartbeat."""
from __future__ import annotations

import json
import os
import random
import re
import zlib
from pathlib import Path

import pytest

from tests.test_cep_continuous import relabeled, runtime_ids, write_stream
from tests.test_keyed_bucket import QUERIES, as_answers, query, random_items, reference_union
from tests.stream_terms import OBJECTS, PREDICATES, STREAM_IRI, SUBJECTS


def _items_with_answers(label: str, q, n=24, span=14):
    for attempt in range(20):     # the first seed that gives answers (else the test proves nothing)
        items = random_items(random.Random(zlib.crc32(label.encode()) + attempt), n, span)
        if reference_union(q, items, max(t for _i, _g, t, _t2 in items)):
            return items
    raise AssertionError(f"no seed gives {label} answers")


def _chunks(items, k):
    """``items`` (sorted by time) in about k chunks, each ending where the time strictly grows: a
    chunk's times all later than the earlier chunks' (a restart after a closed input sees no item
    at a closed instant)."""
    size = max(1, -(-len(items) // k))
    out, current = [], []
    for i, item in enumerate(items):
        if len(current) >= size and item[2] > items[i - 1][2]:
            out.append(current)
            current = []
        current.append(item)
    return out + [current]


def test_a_keyed_checkpoint_keeps_the_bucket_count_it_was_created_with(tmp_path):
    from cep.continuous.keyed.job import checkpoint_buckets
    from cep.continuous.plan import ContinuousError

    fresh = tmp_path / "fresh"
    assert checkpoint_buckets(fresh, None, 2) == (4, True)          # twice the parallelism
    assert checkpoint_buckets(fresh, 7, 2) == (7, True)
    recorded = tmp_path / "recorded"
    recorded.mkdir()
    (recorded / "keyed.json").write_text('{"buckets": 5}')
    assert checkpoint_buckets(recorded, None, 8) == (5, False)
    assert checkpoint_buckets(recorded, 5, 8) == (5, False)
    with pytest.raises(ContinuousError, match="written with 5 buckets; this run asks for 6 buckets"):
        checkpoint_buckets(recorded, 6, 8)
    older = tmp_path / "older"                                        # a keyed checkpoint from before the record
    (older / "keyed").mkdir(parents=True)
    assert checkpoint_buckets(older, None, 2) == (16, False)
    (recorded / "keyed.json").write_text("[5]")
    with pytest.raises(ContinuousError, match="not a keyed checkpoint record"):
        checkpoint_buckets(recorded, None, 2)


VIENNA_QUERY = Path(__file__).resolve().parent.parent / "ontologies" / "vienna_example_query.rq"
VIENNA_STREAM = "<http://example.org/publicTransport>"


def _vienna_record(engine="per-batch", directory="in", lateness=0, time_unit="m", query=None, buckets=None, **source):
    """The record a run of the running example would write (``cep.continuous.record.query_record``)."""
    from cep import compile_query
    from cep.continuous.plan import plan
    from cep.continuous.record import query_record
    from cep.continuous.sources import FileSource

    cplan = plan(compile_query(query or VIENNA_QUERY.read_text()), time_unit, lateness, streams=[VIENNA_STREAM])
    return query_record(engine, cplan, [FileSource(VIENNA_STREAM, str(directory), **source)], buckets)


def test_a_checkpoint_refuses_another_engine_and_options_that_shape_its_state(tmp_path):
    """``cep.continuous.record`` without Spark: the record written when the checkpoint is created,
    each engine refused on the other's checkpoint (saying both and how to go on), each option that
    shapes the state refused, the options a restart may change accepted; a checkpoint with no
    state yet takes the record of the run that starts it."""
    from cep.continuous.record import RECORD, CheckpointError, check, claim

    ckpt = tmp_path / "ckpt"
    per_batch = _vienna_record(directory=tmp_path / "in")
    assert check(ckpt, per_batch) is None                                    # a new checkpoint
    assert claim(ckpt, per_batch) == per_batch
    written = json.loads((ckpt / RECORD).read_text())
    assert written["engine"] == "per-batch" and written["lateness"] == 0 and written["time_unit"] == "m"
    assert written["streams"] == {VIENNA_STREAM: f"files in {tmp_path / 'in'}"}
    # no state yet (the run was refused before it streamed): the next run's record replaces it
    keyed = _vienna_record("keyed", directory=tmp_path / "in", buckets=4)
    assert claim(ckpt, keyed)["engine"] == "keyed"
    assert claim(ckpt, per_batch)["engine"] == "per-batch"
    (ckpt / "spark").mkdir()                                                  # now it holds the runner's progress
    with pytest.raises(CheckpointError) as refused:
        claim(ckpt, keyed)
    assert str(refused.value).startswith(f"the checkpoint {ckpt} belongs to the per-batch engine (--engine auto, "
                                         f"local or spark) and this run asks for the keyed engine (--engine keyed)")
    assert "Restart with --engine auto, local or spark, or give this run a new checkpoint" in str(refused.value)
    changed = [(dict(lateness=2), "written with --lateness 0; this run asks for --lateness 2"),
               (dict(time_unit="s"), "written with --time-unit m; this run asks for --time-unit s"),
               (dict(query=VIENNA_QUERY.read_text().replace("10m", "12m")),
                f"written with the query in {ckpt / RECORD}; this run asks for another query"),
               (dict(directory=tmp_path / "elsewhere"),
                f"written with stream {VIENNA_STREAM} from files in {tmp_path / 'in'}; this run asks for stream "
                f"{VIENNA_STREAM} from files in {tmp_path / 'elsewhere'}"),
               (dict(fmt="tsnt"), "this run asks for stream " + VIENNA_STREAM + f" from files in {tmp_path / 'in'} (tsnt)"),
               (dict(lateness=1, time_unit="s"), "written with --time-unit m and --lateness 0; this run asks for "
                                                 "--time-unit s and --lateness 1. Its state follows what it was written "
                                                 "with: restart with that (--time-unit, --lateness)")]
    for options, why in changed:
        with pytest.raises(CheckpointError, match=re.escape(why)):
            claim(ckpt, _vienna_record(**{"directory": tmp_path / "in", **options}))
    # what a restart may change: the per-batch engines among themselves (one record), the files per
    # trigger; the directory named another way
    assert claim(ckpt, _vienna_record(directory=tmp_path / "in", max_files_per_trigger=1)) == written
    assert claim(ckpt, _vienna_record(directory=f"file://{tmp_path / 'in'}")) == written
    assert json.loads((ckpt / RECORD).read_text()) == written
    (ckpt / RECORD).write_text("[]")
    with pytest.raises(CheckpointError, match="not a checkpoint record"):
        check(ckpt, per_batch)


def test_a_checkpoint_from_before_the_record_is_read_from_its_layout(tmp_path):
    """A checkpoint created before ``checkpoint.json``: the per-batch runner's by its batch states
    (their window convention), the keyed engine's by its query or ``keyed.json`` (its buckets);
    one that says neither takes the record of its restart; one that holds both is refused."""
    from cep.continuous.record import RECORD, CheckpointError, claim

    runner = tmp_path / "runner"
    (runner / "state" / "0000000003").mkdir(parents=True)
    convention = {"bounds": "right-closed", "start": 0, "empty": "report"}
    (runner / "state" / "0000000003" / "meta.json").write_text(json.dumps({"done": 4, "convention": convention}))
    with pytest.raises(CheckpointError, match="belongs to the per-batch engine"):
        claim(runner, _vienna_record("keyed", buckets=2))
    assert claim(runner, _vienna_record(lateness=3))["lateness"] == 3         # accepted, and recorded
    assert json.loads((runner / RECORD).read_text())["windows"] == convention
    with pytest.raises(CheckpointError, match="--lateness 3; this run asks for --lateness 0"):
        claim(runner, _vienna_record())
    keyed = tmp_path / "keyed"
    (keyed / "keyed").mkdir(parents=True)
    with pytest.raises(CheckpointError, match="belongs to the keyed engine .--engine keyed. and this run asks for "
                                              "the per-batch engine"):
        claim(keyed, _vienna_record())
    with pytest.raises(CheckpointError, match="written with 16 buckets; this run asks for 4 buckets"):
        claim(keyed, _vienna_record("keyed", buckets=4))
    assert claim(keyed, _vienna_record("keyed"))["buckets"] == 16
    unknown = tmp_path / "unknown"                                            # Spark's progress, no state yet
    (unknown / "spark").mkdir(parents=True)
    assert claim(unknown, _vienna_record("keyed", buckets=2))["engine"] == "keyed"
    both = tmp_path / "both"
    (both / "keyed").mkdir(parents=True)
    (both / "spark").mkdir()
    with pytest.raises(CheckpointError, match="holds the state of more than one engine"):
        claim(both, _vienna_record())


def test_the_closing_heartbeat_knows_a_batch_whose_metrics_line_a_kill_lost(tmp_path):
    """A run killed after Spark committed a batch and before its metrics line was written: the
    commit log's watermark still gives that batch's largest event time (in minutes, lateness 2)."""
    from cep.continuous.keyed.job import _largest_event_time, write_heartbeat
    from cep.continuous.plan import ContinuousError

    ckpt, unit, delay = tmp_path / "ckpt", 60_000, 2 * 60_000
    assert _largest_event_time(ckpt, delay, unit) is None
    commits = ckpt / "keyed" / "commits"
    commits.mkdir(parents=True)
    (ckpt / "metrics.jsonl").write_text(json.dumps({"batch": 0, "max_event_time": 10}) + "\n")
    (commits / "0").write_text('v1\n{"nextBatchWatermarkMs":480000}')          # 10 - 2 minutes
    assert _largest_event_time(ckpt, delay, unit) == 10
    (commits / "1").write_text('v1\n{"nextBatchWatermarkMs":1560000}')         # batch 1: 28, no metrics line
    assert _largest_event_time(ckpt, delay, unit) == 28
    (commits / "1").write_text('v1\n{"nextBatchWatermarkMs":0}')               # no event time yet
    assert _largest_event_time(ckpt, delay, unit) == 10
    write_heartbeat(ckpt, 31)                                                    # a heartbeat is no item
    (commits / "2").write_text('v1\n{"nextBatchWatermarkMs":1740000}')
    assert _largest_event_time(ckpt, delay, unit) == 10
    (commits / "3").write_text("v1\n")
    with pytest.raises(ContinuousError, match="not a Spark commit record"):
        _largest_event_time(ckpt, delay, unit)


def test_the_query_job_refuses_what_the_keyed_operator_cannot_run(tmp_path, capsys):
    """Before any JVM starts: --engine keyed with --at, with RSEP-QL; --buckets
    without the keyed engine, or not positive."""
    from jobs import query as job

    def vienna(stream):
        return ["ontologies/vienna_example_query.rq", "--static", "ontologies/vienna_example.ttl", "--stream",
                f"<http://example.org/publicTransport>={stream}", "--time-unit", "m"]

    cases = [(vienna("ontologies/vienna_example_stream.jsonl") + ["--at", "16"], "--engine keyed runs continuous"),
             (vienna(tmp_path) + ["--continuous", "--checkpoint", str(tmp_path / "c"), "--buckets", "0"],
              "--buckets 0: expected a positive number"),
             (["ontologies/rsep_fig1_query.rq", "--stream", f":S={tmp_path}", "--continuous", "--checkpoint",
               str(tmp_path / "c")], "evaluation instants")]
    for args, why in cases:
        assert job.main(args + ["--engine", "keyed"]) == 2
        err = capsys.readouterr().err
        assert "error:" in err and why in err, err
    for args in (vienna(tmp_path) + ["--continuous", "--checkpoint", str(tmp_path / "c"), "--buckets", "4"],
                 vienna("ontologies/vienna_example_stream.jsonl") + ["--at", "16", "--buckets", "4"]):
        assert job.main(args) == 2
        assert "--buckets: only" in capsys.readouterr().err


@pytest.mark.spark
def test_keyed_job_equals_union_of_instants_across_a_restart_with_rejects(spark, tmp_path):
    """Every answer of every instant up to the last event time, once, from files read over two
    runs of one checkpoint (the second reads only the new files); the tail
    negation's answers at the last instants come from the end-of-input heartbeat (no row arrives
    after them). A bad line and a late row go to the rejects with their reasons, counted."""
    from cep.continuous.job import run
    from cep.continuous.sinks import CallbackSink
    from cep.continuous.sources import FileSource

    label, window, pattern, shown = QUERIES[0]
    q = query(window, pattern, shown)
    names = [v.name for v in q.form.variables]
    items = _items_with_answers(label, q, n=30, span=18)
    first, *rest = _chunks(items, 3)
    directory, ckpt, rejects = tmp_path / "in", tmp_path / "ckpt", tmp_path / "rejects"
    got: list = []

    def once(buckets=None):
        return run(spark, q, [FileSource(STREAM_IRI, str(directory))],   # the new files in one micro-batch
                   sink=CallbackSink(lambda _label, rows: got.extend(rows)), checkpoint=ckpt, rejects=rejects,
                   metrics=open(os.devnull, "w"), engine="keyed", buckets=buckets)

    placed = write_stream(directory, [first])
    assert once(buckets=3).rejected == {}
    # the checkpoint keeps its bucket count: the restart below asks for none and runs with 3
    record = json.loads((ckpt / "checkpoint.json").read_text())
    assert (record["engine"], record["buckets"]) == ("keyed", 3)
    # then: the rest (new files in the same directory), a line that is no JSON, and an item at an
    # instant the first run closed (its input ended there)
    staged = write_stream(tmp_path / "staged", rest)
    for item, (path, line) in staged.items():
        target = directory / f"later-{Path(path).name}"
        placed[item] = (str(target.resolve()), line)
    for path in (tmp_path / "staged").glob("*.jsonl"):
        (directory / f"later-{path.name}").write_text(path.read_text())
    late = json.dumps({"t": first[0][2], "triples": [[SUBJECTS[0], PREDICATES[0], OBJECTS[0]]]})
    (directory / "zz-bad.jsonl").write_text("{not json\n" + late + "\n")
    summary = once()
    assert summary.rejected == {"bad input": 1, "late": 1}, summary.rejected
    metrics = [json.loads(line) for line in (ckpt / "metrics.jsonl").read_text().splitlines()]
    assert {m["engine"] for m in metrics} == {"keyed"}
    lines = sum(len(f.read_bytes().splitlines()) for f in directory.iterdir())
    assert sum(m["source_rows"] for m in metrics) == lines + 2      # each line a row, and two heartbeats
    assert metrics[-1]["watermark"] == max(t for _i, _g, t, _t2 in items) + 1
    rows = [json.loads(line) for f in sorted(rejects.glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert sorted(r["reason"].startswith("late") for r in rows) == [False, True]
    bad = [r for r in rows if "line" in r]
    assert [(Path(r["file"]).name, r["line"]) for r in bad] == [("zz-bad.jsonl", 1)]
    ids = runtime_ids(spark, placed)
    expected = reference_union(q, relabeled(items, ids), max(t for _i, _g, t, _t2 in items))
    answers = as_answers(got, names)
    assert len(answers) == len(set(answers)), "an answer was reported twice"
    assert set(answers) == expected


@pytest.mark.spark
def test_keyed_job_reads_the_closure_version_current_when_it_starts(spark, tmp_path):
    """The runner's hot-swap case (tests/test_cep_continuous.py) on the keyed job, across a
    restart: a version published between two runs is read from the second run's first batch on,
    by the buckets that hold the first run's state too; each answer names its version."""
    from cep.continuous.job import run
    from cep.continuous.sinks import CallbackSink
    from cep.continuous.sources import FileSource
    from cep.continuous.static import ClosureStore
    from tests.test_cep_continuous import ClosureSwap

    case = ClosureSwap(spark, tmp_path)
    got: list[dict] = []
    for i in range(2):
        case.write(i)
        run(spark, case.QUERY, [FileSource(case.STREAM, str(case.stream_dir))], static=ClosureStore(case.store),
            sink=CallbackSink(lambda label, rows: got.extend(rows)), checkpoint=tmp_path / "ckpt", time_unit="m",
            metrics=open(os.devnull, "w"), engine="keyed", buckets=2)
        if i == 0:
            v2 = case.publish()
    case.check(got, v2)


def test_a_running_job_writes_a_new_version_for_the_next_batch_at_most_once_a_second(tmp_path, monkeypatch):
    """``_Refresh`` (the live job's check between polls): a version other than the known one is
    shipped (here: a stand-in for ``Keyed.refreshed``) and written into ``CHECKPOINT/published``
    as the operator's control row; the store is asked at most once a second."""
    from types import SimpleNamespace

    from cep.continuous.keyed import job
    from cep.continuous.keyed.operator import Shipped

    store = {"version": "v1"}
    asked = []

    def refreshed(_spark, known):
        asked.append(known)
        return None if store["version"] == known else Shipped(f"static-{store['version']}.pkl", store["version"], len(asked))

    clock = [100.0]
    monkeypatch.setattr(job.time, "monotonic", lambda: clock[0])
    keyed = SimpleNamespace(program=SimpleNamespace(version="v1"), refreshed=refreshed)
    (tmp_path / job.PUBLISHED).mkdir()
    refresh = job._Refresh(None, keyed, tmp_path)
    clock[0] += 0.5
    refresh()
    assert asked == []                                   # not a second yet
    clock[0] += 0.6
    refresh()
    store["version"] = "v2"
    clock[0] += 1.0
    refresh()
    clock[0] += 1.0
    refresh()                                            # v2 is known now: nothing more to ship
    assert asked == ["v1", "v1", "v2"]
    (written,) = sorted((tmp_path / job.PUBLISHED).iterdir())
    assert Shipped.parse(written.read_text()) == Shipped("static-v2.pkl", "v2", 2)


def test_static_files_read_once_are_not_shipped_again_when_they_change():
    """``StaticFiles`` closes its files once (as ``query --at`` does): a later edit changes its
    version but not what it serves, so ``Keyed.refreshed`` ships nothing (it would otherwise ship
    the old background under the new name)."""
    from types import SimpleNamespace

    from cep.continuous.keyed.operator import Keyed

    class ReadOnce:
        def __init__(self):
            self.served = 0

        def version(self):
            return "files:edited"

        def current(self, _spark):
            self.served += 1
            return SimpleNamespace(version="files:first")

    source = ReadOnce()
    keyed = Keyed(program=None, part=None, buckets=1, lateness=0, static=None, source=source)
    assert keyed.refreshed(None, "files:first") is None and source.served == 1
    assert keyed.refreshed(None, "files:edited") is None and source.served == 1     # nothing new: not read
