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
# commit and its metrics line)
ENGINES = [("spark", 2, 1, 3.0), ("local", 12, 2, 0.5), ("keyed", 4, 1, 2.0)]


@pytest.mark.parametrize("engine, files, kills, pause", ENGINES, ids=[e[0] for e in ENGINES])
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
