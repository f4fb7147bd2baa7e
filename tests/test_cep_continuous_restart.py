"""Exactly once across crashes: ``query --continuous`` killed with SIGKILL in the middle of its
micro-batches, twice, then restarted on the same checkpoint, writes exactly the answers of an
uninterrupted run — none lost, none twice (``--out DIR``: one file per batch, atomic renames; the
state of a batch is read from the previous batch's directory, so a replayed batch recomputes the
same answers).
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


def command(stream_dir: Path, ckpt: Path, out: Path, engine: str) -> list[str]:
    return [sys.executable, "-m", "jobs.query", str(QUERY), "--static", str(STATIC),
            "--stream", f"{STREAM}={stream_dir}", "--continuous", "--checkpoint", str(ckpt), "--out", str(out),
            "--time-unit", "m", "--max-per-trigger", "1", "--engine", engine]


def run_and_kill(cmd: list[str], ckpt: Path, after_batches: int, rng: random.Random, delay: float) -> None:
    """Start the job, wait until it has finished ``after_batches`` more batches, then SIGKILL its
    whole process group (Python driver and JVM) at a random moment of the next one."""
    metrics = ckpt / "metrics.jsonl"
    before = len(metrics.read_text().splitlines()) if metrics.exists() else 0
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            done = len(metrics.read_text().splitlines()) if metrics.exists() else 0
            if done >= before + after_batches:
                break
            time.sleep(0.2)
        time.sleep(rng.uniform(0.0, delay))
        assert proc.poll() is None, "the job ended before it could be killed: the stream is too short"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# (engine, files, the longest wait after a batch before the kill): a Spark batch takes seconds, a
# driver-side one a fraction of a second, so the driver-side run gets more, quicker batches
ENGINES = [("spark", 4, 3.0), ("local", 80, 0.5)]


@pytest.mark.parametrize("engine, files, delay", ENGINES, ids=[e[0] for e in ENGINES])
def test_sigkill_twice_then_restart_gives_exactly_the_uninterrupted_answers(spark, tmp_path, engine, files, delay):
    from cep.stream import DirectorySink, FileSource, StaticFiles, run

    stream_dir = tmp_path / "in"
    write_stream(stream_dir, files=files, per_file=14, seed=7)
    # the uninterrupted run (in this process: same code, same batches)
    run(spark, QUERY.read_text(), [FileSource(STREAM, str(stream_dir), max_files_per_trigger=1)],
        static=StaticFiles({None: [STATIC]}), sink=DirectorySink(tmp_path / "expected"),
        checkpoint=tmp_path / "ckpt-expected", time_unit="m", metrics=open(os.devnull, "w"), engine=engine)
    expected = answers(tmp_path / "expected")
    assert len(expected) >= 5, "the stream must have answers, or the test proves nothing"

    ckpt, out = tmp_path / "ckpt", tmp_path / "out"
    rng = random.Random(11)
    cmd = command(stream_dir, ckpt, out, engine)
    run_and_kill(cmd, ckpt, after_batches=1, rng=rng, delay=delay)
    run_and_kill(cmd, ckpt, after_batches=1, rng=rng, delay=delay)
    metrics = [json.loads(line) for line in (ckpt / "metrics.jsonl").read_text().splitlines()]
    assert not any(str(m["batch"]).endswith("closed") for m in metrics), "a kill came after the end of the run"
    assert {m["engine"] for m in metrics} == {engine}
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    got = answers(out)
    assert len(got) == len(set(got)), "an answer was written twice"
    assert got == expected
