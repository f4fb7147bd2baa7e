"""Exactly once across crashes: ``query --continuous`` running as a live service, killed with
SIGKILL at a random moment after a batch (twice on the driver-side engine), then restarted on the same checkpoint, writes exactly the answers of an
uninterrupted run — none lost, none twice (``--out DIR``: one file per batch, atomic renames; the
state of a batch is read from the previous batch's directory, so a replayed batch recomputes the
same answers). On the keyed operator (``--engine keyed``) the state is Spark's own (RocksDB, its
commit log), and a replayed batch rewrites its file under the same label.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parent.parent
STREAM = "<http://example.org/publicTransport>"
QUERY = REPO / "ontologies" / "vienna_example_query.rq"
STATIC = REPO / "ontologies" / "vienna_example.ttl"


def write_stream(directory: Path, files: int, per_file: int, seed: int) -> None:
    """Delays and arrivals of the example's vehicles at its stops, one minute apart per event
    group, in ``files`` files (read one per micro-batch, oldest first)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True)
    t = 0
    for i in range(files):
        path = directory / f"part{i:03d}.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            for _ in range(per_file):
                t += rng.choice((0, 1, 1, 2))
                p = ":delayAt" if rng.random() < 0.75 else ":arriveAt"
                out.write(json.dumps({"s": rng.choice([":a1", ":d1", ":x1"]), "p": p,
                                      "o": rng.choice([":m", ":b", ":h"]), "t": t}) + "\n")
        os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))


def answers(directory: Path) -> list[str]:
    return sorted(line for f in directory.glob("part-*.jsonl") for line in f.read_text().splitlines())


def command(stream_dir: Path, closure: Path, ckpt: Path, out: Path, engine: str, trigger: str) -> list[str]:
    return [sys.executable, "-m", "jobs.query", str(QUERY), "--closure", str(closure),
            "--stream", f"{STREAM}={stream_dir}", "--continuous", "--checkpoint", str(ckpt), "--out", str(out),
            "--time-unit", "m", "--max-per-trigger", "1", "--engine", engine, "--trigger", trigger]


def run_and_kill(cmd: list[str], ckpt: Path, after_batches: int, rng: random.Random, pause: float) -> None:
    """Start the job as a live service (an interval trigger: it never stops by itself), wait until
    it has finished ``after_batches`` more batches, pause a random moment, then SIGKILL its whole
    process group (Python driver and JVM): mid-batch, or idle if the input ran out."""
    metrics = ckpt / "metrics.jsonl"
    before = len(metrics.read_text().splitlines()) if metrics.exists() else 0
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        for _ in range(3000):  # polls, not a timer: the job's speed decides nothing here
            if proc.poll() is not None:
                break
            done = len(metrics.read_text().splitlines()) if metrics.exists() else 0
            if done >= before + after_batches:
                break
            time.sleep(0.1)
        time.sleep(rng.uniform(0.0, pause))
        assert proc.poll() is None, f"the job died by itself (exit code {proc.returncode})"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# (engine, files, kills, the longest pause after a batch before a kill): a Spark batch takes
# seconds in a fresh JVM, a driver-side one a fraction of a second, so the driver-side run gets
# more, quicker batches and two kills (a restart that is itself killed); the Spark run one kill.
# The keyed operator (its own checkpoint: Spark's state store and commit log) one kill too: each
# fresh process's first batch costs it ~12 s here (tests/test_keyed_job.py has the kill between a
# commit and its metrics line). The Spark run only under the thorough profile: the per-batch
# runner's restart (its state directory, the answers' atomic renames) is the driver-side run's,
# only the evaluation differs, and Spark's evaluation reading the runner's state is checked by the
# mixed-engine runs of tests/test_cep_continuous.py
ENGINES = [pytest.param("spark", 2, 1, 3.0, id="spark", marks=pytest.mark.thorough),
           pytest.param("local", 12, 2, 0.5, id="local"), pytest.param("keyed", 4, 1, 2.0, id="keyed")]


@pytest.mark.parametrize("engine, files, kills, pause", ENGINES)
def test_sigkill_then_restart_gives_exactly_the_uninterrupted_answers(spark, tmp_path, engine, files, kills, pause):
    from cep.continuous.job import run
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from cep.continuous.static import ClosureStore
    from reasoner.publish import materialize_sources

    stream_dir = tmp_path / "in"
    write_stream(stream_dir, files=files, per_file=14, seed=7)
    # the background published once (the service's usual setup): each fresh JVM only reads it
    closure = tmp_path / "closure"
    materialize_sources(spark, [STATIC], closure, engine="local")
    # the uninterrupted run (in this process, same batches; on the driver-side engine, whose
    # answers are the Spark engine's: both equal the reference, tests/test_cep_continuous.py)
    run(spark, QUERY.read_text(), [FileSource(STREAM, str(stream_dir), max_files_per_trigger=1)],
        static=ClosureStore(closure), sink=DirectorySink(tmp_path / "expected"),
        checkpoint=tmp_path / "ckpt-expected", time_unit="m", metrics=open(os.devnull, "w"), engine="local")
    expected = answers(tmp_path / "expected")
    assert len(expected) >= 5, "the stream must have answers, or the test proves nothing"

    ckpt, out = tmp_path / "ckpt", tmp_path / "out"
    rng = random.Random(11)
    live = command(stream_dir, closure, ckpt, out, engine, "interval:0.1")
    for _ in range(kills):
        run_and_kill(live, ckpt, after_batches=1, rng=rng, pause=pause)
    metrics = [json.loads(line) for line in (ckpt / "metrics.jsonl").read_text().splitlines()]
    assert {m["engine"] for m in metrics} == {engine}
    # the restart that finishes: process what is left, close the input, stop
    done = subprocess.run(command(stream_dir, closure, ckpt, out, engine, "available-now"), cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    got = answers(out)
    assert len(got) == len(set(got)), "an answer was written twice"
    assert got == expected


# --- a restart with another engine or other options (cep.continuous.record) -----------------------

def vienna(stream_dir: Path, ckpt: Path, out: Path, *more: str) -> list[str]:
    """``query --continuous`` on the running example (in-process: the session's Spark)."""
    return [str(QUERY), "--static", str(STATIC), "--stream", f"{STREAM}={stream_dir}", "--continuous",
            "--checkpoint", str(ckpt), "--out", str(out), "--time-unit", "m", *more]


def written(directory: Path) -> dict[str, str]:
    return {f.name: f.read_text() for f in sorted(directory.glob("*"))}


ENGINE_SWITCHES = [("auto", "keyed", "the per-batch engine (--engine auto, local or spark)", "the keyed engine"),
                   ("keyed", "auto", "the keyed engine (--engine keyed)", "the per-batch engine")]


@pytest.mark.parametrize("first, then, owner, asked", ENGINE_SWITCHES, ids=[f"{a}-then-{b}" for a, b, *_ in ENGINE_SWITCHES])
def test_a_restart_with_another_engine_is_refused_before_it_writes_an_answer(spark, tmp_path, capsys, first, then,
                                                                             owner, asked):
    """The running example on one engine, then the same command on the other with the same
    checkpoint and output: one ``error:`` line naming both engines and how to go on (exit 2, before
    any Spark work), and the output directory as the first run left it (no answer twice)."""
    from jobs import query as job

    stream_dir, ckpt, out = tmp_path / "in", tmp_path / "ckpt", tmp_path / "out"
    stream_dir.mkdir()
    shutil.copy(REPO / "ontologies" / "vienna_example_stream.jsonl", stream_dir)
    assert job.main(vienna(stream_dir, ckpt, out, "--engine", first)) == 0
    assert [json.loads(a)["s"] for a in answers(out)] == ["<http://example.org/vienna#m>"]
    before = written(out)
    capsys.readouterr()
    (stream_dir / "later.jsonl").write_text(json.dumps({"s": ":a2", "p": ":delayAt", "o": ":m", "t": 30}) + "\n")
    assert job.main(vienna(stream_dir, ckpt, out, "--engine", then)) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"error: the checkpoint {ckpt} belongs to {owner} and this run asks for {asked}"), err
    assert "or give this run a new checkpoint" in err[0]
    assert written(out) == before


def test_a_restart_goes_on_with_other_sinks_and_triggers_but_not_other_state_options(spark, tmp_path, capsys):
    """What shapes the state is refused on a restart (the lateness, the time unit, the query, a
    stream's directory), before any Spark work; another per-batch engine, trigger, files per
    trigger, output and rejects directory go on from the checkpoint: only the new file is read,
    and the answer it completes comes out once."""
    from jobs import query as job

    stream_dir, ckpt, out = tmp_path / "in", tmp_path / "ckpt", tmp_path / "out"
    stream_dir.mkdir()
    (tmp_path / "elsewhere").mkdir()
    events = (REPO / "ontologies" / "vienna_example_stream.jsonl").read_text().splitlines(keepends=True)
    (stream_dir / "a.jsonl").write_text("".join(events[:3]))                 # the answer needs the 4th
    assert job.main(vienna(stream_dir, ckpt, out, "--engine", "local")) == 0
    assert answers(out) == []
    (stream_dir / "b.jsonl").write_text(events[3])
    wider = vienna(stream_dir, ckpt, out)
    wider[0] = str(tmp_path / "wider.rq")
    (tmp_path / "wider.rq").write_text(QUERY.read_text().replace("10m", "12m"))
    capsys.readouterr()
    for args, why in ((vienna(stream_dir, ckpt, out, "--lateness", "2"),
                       "written with --lateness 0; this run asks for --lateness 2"),
                      (vienna(stream_dir, ckpt, out, "--time-unit", "s"),
                       "written with --time-unit m; this run asks for --time-unit s"),
                      (vienna(tmp_path / "elsewhere", ckpt, out),
                       f"from files in {stream_dir}; this run asks for stream {STREAM} from files in {tmp_path / 'elsewhere'}"),
                      (wider, f"written with the query in {ckpt / 'checkpoint.json'}; this run asks for another query")):
        assert job.main(args) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("error: the checkpoint") and why in err[0], err
    assert answers(out) == []
    metrics = len((ckpt / "metrics.jsonl").read_text().splitlines())
    assert job.main(vienna(stream_dir, ckpt, tmp_path / "out2", "--engine", "spark", "--max-per-trigger", "1",
                           "--trigger", "available-now", "--rejects", str(tmp_path / "rejects"))) == 0
    read = [json.loads(line) for line in (ckpt / "metrics.jsonl").read_text().splitlines()[metrics:]]
    assert sum(m["input_items"] for m in read) == 1 and {m["engine"] for m in read} == {"spark"}
    assert answers(out) == []
    assert [(a["s"], a["_start"], a["_end"]) for a in map(json.loads, answers(tmp_path / "out2"))] == \
        [("<http://example.org/vienna#m>", 10, 16)]
