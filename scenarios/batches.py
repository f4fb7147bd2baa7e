"""What the scenario services share per micro-batch: which lines it holds, parsed as ``cep.io.streams`` defines.

* :func:`batch_files` — the files a file source read in a batch, from Spark's own checkpoint, so
  the driver reads them itself (no Spark job);
* :func:`numbered_lines` — otherwise, the batch's lines through Spark, as the sources number them
  (a file's line, a Kafka offset);
* :func:`parse_slow` — lines the driver-side parsers leave alone, parsed (or rejected, with the
  reason) by Spark's parser, the one definition of the formats.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from rdfcore.errors import SidecarError
from rdfcore.jars import ORDERED_LOG
from rdfcore.locations import local_path, location
from rdfcore.schema import FILE, LINE, O, P, RAW, REASON, S

__all__ = ["batch_files", "numbered_lines", "parse_slow", "run_batches"]


def batch_files(spark_checkpoint: str | Path, batch_id: int, source: int = 0) -> list[Path] | None:
    """The files file source ``source`` read in ``batch_id``, from Spark's checkpoint: the batch's
    offsets (``offsets/<id>``, ``offsets/<id-1>``: counts of files in the source's order) and the
    order the source logged (``sources/<n>/ordered``, as ``cep/continuous/OrderedFiles.java``
    writes it). None whenever that record is not there or not in that form, or names a file that
    is not local: the caller then reads the batch through Spark. The checkpoint itself may be on a
    Hadoop filesystem."""
    root = location(spark_checkpoint, "the checkpoint")
    try:
        end = _log_offset(root / "offsets" / str(batch_id), source)
        start = _log_offset(root / "offsets" / str(batch_id - 1), source) if batch_id > 0 else 0
        if end is None:
            return None
        start = 0 if start is None else start
        files = ordered_entries(root / "sources" / str(source) / ORDERED_LOG, end)
        if files is None:
            return None
        paths = []
        for url in files[start:end]:
            if not url.startswith("file:"):
                return None
            paths.append(local_path(url, "a stream file"))
        return paths
    except (OSError, ValueError, KeyError, TypeError, SidecarError):
        return None


def _log_offset(path, source: int) -> int | None:
    if not path.exists():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != "v1" or len(lines) < 3 + source:
        raise ValueError(f"unexpected offset log {path}")
    text = lines[2 + source]
    if text == "-":
        return None
    return int(json.loads(text)["files"])


_SEGMENT = re.compile(r"(\d{20})(?:-(\d{20}))?\.files")


def ordered_entries(log, upto: int) -> list[str] | None:
    """The first ``upto`` files (their URIs) in the order the ordered file source logged in
    directory ``log``: the last merged segment (``0…-END.files``), then the segments that follow
    it, each starting where the one before ended (``START.files``). None when the log holds fewer."""
    single, merged = {}, {}
    for path in log.iterdir():
        m = _SEGMENT.fullmatch(path.name)
        if m and m.group(2) is None:
            single[int(m.group(1))] = path
        elif m and int(m.group(1)) == 0:
            merged[int(m.group(2))] = path
    files: list[str] = []
    if merged:
        files += _segment(merged[max(merged)])
    while len(files) < upto and len(files) in single:
        files += _segment(single[len(files)])
    return files if len(files) >= upto else None


def _segment(path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != "v1":
        raise ValueError(f"unexpected file order log {path}")
    return [line.split("\t", 2)[2] for line in lines[1:] if line]


def numbered_lines(lines):
    """The batch's lines as (FILE, LINE, RAW, _source): every source numbers its lines (a file's
    per file, from 1; a Kafka message's line is its offset)."""
    return lines.select(FILE, LINE, RAW, "_source")


def parse_slow(spark, slow: list, prefixes: dict, time_unit: str) -> tuple[list, list]:
    """``slow`` lines ``(file, line, raw, fmt)`` parsed by ``cep.io.streams.parse_lines`` (one small
    job per format): ``([(s, p, o, t_start, t_end, file, line)], [(file, line, reason, raw)])``."""
    from pyspark.sql import functions as F

    from cep.io.streams import parse_lines

    if not slow:
        return [], []
    frame = spark.createDataFrame([(f, n, raw, fmt) for f, n, raw, fmt in slow],
                                  f"{FILE} string, {LINE} long, {RAW} string, _fmt string")
    terms, rejects = [], []
    for kind in sorted({fmt for *_x, fmt in slow}, key=lambda k: (k is None, k or "")):
        mine = frame.filter(F.col("_fmt") == kind if kind is not None else F.col("_fmt").isNull())
        parsed, bad = parse_lines(mine.select(FILE, LINE, RAW), prefixes, time_unit, kind)
        terms += [(r[S], r[P], r[O], r["t_start"], r["t_end"], r[FILE], r[LINE])
                  for r in parsed.select(S, P, O, "t_start", "t_end", FILE, LINE).collect()]
        rejects += [(r[FILE], r[LINE], r[REASON], r[RAW]) for r in bad.collect()]
    return terms, rejects


def run_batches(spark, sources, on_batch, checkpoint: Path, trigger: str, timeout: float | None, failure) -> None:
    """Run ``on_batch(lines, batch_id)`` on every micro-batch of ``sources`` (their lines as
    ``(raw, file, line, _source)``), with the trigger, checkpoint and error handling of
    ``cep.continuous.runner.run_micro_batches``."""
    from pyspark.sql import functions as F

    from cep.continuous.runner import run_micro_batches
    from rdfcore.sparkutil import union_all
    from cep.continuous.sources import check_sources

    check_sources(sources)
    frames = []
    for i, source in enumerate(sources):
        frames.append(source.lines(spark).withColumn("_source", F.lit(i)).select(RAW, FILE, LINE, "_source"))
    run_micro_batches(union_all(frames), on_batch, checkpoint, trigger, timeout, failure)
