"""The project's streaming file source (``cep/continuous/OrderedFiles.java``, read by
``cep.continuous.sources.FileSource``): files in the order (modification time, path), a file first
seen later read later, each file exactly once across restarts, lines numbered and split as Spark's
line reader splits them, invalid UTF-8 delivered as U+FFFD; and the driver's reading of its log
(``scenarios.batches.batch_files``) naming the same files per batch."""
from __future__ import annotations

import gzip
import os

import pytest

from scenarios.batches import batch_files, ordered_entries

STREAM = "<http://example.org/s>"
SAME = 1_767_225_600          # one modification time for every file: a tie everywhere


def _write(directory, name: str, data: bytes, mtime: int = SAME):
    path = directory / name
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))
    return path


def _run(spark, directory, checkpoint, *, max_files: int | None = 1, segments: int | None = None):
    """One available-now run of the source: [(batch, file name, line, value)]."""
    rows = []

    def collect(frame, batch_id):
        rows.extend((batch_id, r["file"].rsplit("/", 1)[-1], r["line"], r["value"]) for r in frame.collect())

    reader = spark.readStream.format("rspsidecar.OrderedFiles")
    if max_files:
        reader = reader.option("maxFilesPerTrigger", str(max_files))
    if segments is not None:
        reader = reader.option("logSegments", str(segments))
    query = (reader.load(str(directory)).writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    return sorted(rows)


@pytest.mark.spark
def test_ties_are_read_by_name_a_later_file_later_and_each_file_once(spark, tmp_path):
    src, ckpt = tmp_path / "in", tmp_path / "ckpt"
    src.mkdir()
    for i in reversed(range(4)):              # written last to first, every time equal
        _write(src, f"part-{i:05d}.jsonl", f"x{i}\n".encode())
    _write(src, ".hidden.jsonl", b"no\n")
    _write(src, "_SUCCESS", b"no\n")
    _write(src, "part-9.jsonl._COPYING_", b"no\n")
    first = _run(spark, src, ckpt)
    assert [(b, f) for b, f, _n, _v in first] == [(0, "part-00000.jsonl"), (1, "part-00001.jsonl"),
                                                   (2, "part-00002.jsonl"), (3, "part-00003.jsonl")]
    # a restart reads only what is new: a file older than all the others comes after them
    _write(src, "part-00000-late.jsonl", b"late\n", mtime=SAME - 3600)
    _write(src, "part-00004.jsonl", b"x4\n", mtime=SAME - 3600)
    again = _run(spark, src, ckpt)
    assert [(f, v) for _b, f, _n, v in again] == [("part-00000-late.jsonl", "late"), ("part-00004.jsonl", "x4")]
    assert [b for b, *_ in again] == [4, 5]
    assert _run(spark, src, ckpt) == []
    # the driver reads the same files per batch from the checkpoint
    for batch, name, *_ in first + again:
        assert [p.name for p in batch_files(ckpt, batch)] == [name]


@pytest.mark.spark
def test_without_a_limit_one_batch_holds_every_file_in_order(spark, tmp_path):
    src, ckpt = tmp_path / "in", tmp_path / "ckpt"
    src.mkdir()
    (src / "sub").mkdir()
    _write(src, "b.jsonl", b"b\n", mtime=SAME + 1)
    _write(src / "sub", "a.jsonl", b"a\n")
    _write(src, "z.jsonl", b"z\n")
    rows = _run(spark, f"file://{src}", ckpt, max_files=None)     # a file: URL names the same directory
    assert {b for b, *_ in rows} == {0}
    assert [str(p).rsplit("/in/", 1)[1] for p in batch_files(ckpt, 0)] == ["sub/a.jsonl", "z.jsonl", "b.jsonl"]


@pytest.mark.spark
def test_lines_are_split_numbered_and_decodable(spark, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    long_line = b"y" * (3 * 1024 * 1024)
    _write(src, "a.jsonl", b"one\r\ntwo\rthree\n\n\xff\xfebad\x00nul\n" + long_line + b"\nlast")
    with gzip.open(src / "b.jsonl.gz", "wb") as out:
        out.write(b"g1\ng2\n")
    os.utime(src / "b.jsonl.gz", (SAME + 1, SAME + 1))
    rows = _run(spark, src, tmp_path / "ckpt", max_files=None)
    assert [(f, n, v) for _b, f, n, v in rows if len(v) < 100] == [
        ("a.jsonl", 1, "one"), ("a.jsonl", 2, "two"), ("a.jsonl", 3, "three"), ("a.jsonl", 4, ""),
        ("a.jsonl", 5, "\ufffd\ufffdbad\x00nul"), ("a.jsonl", 7, "last"), ("b.jsonl.gz", 1, "g1"), ("b.jsonl.gz", 2, "g2")]
    assert [(n, len(v)) for _b, f, n, v in rows if len(v) >= 100] == [(6, len(long_line))]


@pytest.mark.spark
def test_the_log_is_merged_and_a_restart_reads_it(spark, tmp_path):
    """Three runs of one new file each, segments merged after two: the log holds one merged
    segment and one after it, and both readers (the source on restart, the driver) follow it."""
    src, ckpt = tmp_path / "in", tmp_path / "ckpt"
    src.mkdir()
    for i in range(3):
        _write(src, f"f{i}.jsonl", f"{i}\n".encode(), mtime=SAME + i)
        assert [v for *_x, v in _run(spark, src, ckpt, segments=2)] == [str(i)]
    log = ckpt / "sources" / "0" / "ordered"
    assert sorted(p.name for p in log.iterdir() if not p.name.startswith(".")) == [
        f"{0:020d}-{2:020d}.files", f"{2:020d}.files"]
    assert [u.rsplit("/", 1)[1] for u in ordered_entries(log, 3)] == ["f0.jsonl", "f1.jsonl", "f2.jsonl"]
    assert ordered_entries(log, 4) is None
    _write(src, "f3.jsonl", b"3\n", mtime=SAME - 10)
    assert [(b, v) for b, _f, _n, v in _run(spark, src, ckpt, segments=2)] == [(3, "3")]


@pytest.mark.spark
def test_a_bad_option_is_a_clear_error(spark, tmp_path):
    (tmp_path / "in").mkdir()
    with pytest.raises(Exception, match="maxFilesPerTrigger is -1; expected a positive whole number"):
        spark.readStream.format("rspsidecar.OrderedFiles").option("maxFilesPerTrigger", "-1").load(str(tmp_path / "in"))
