"""What the scenario services share per micro-batch: which lines it holds, parsed as ``cep.io.streams`` defines.

* :func:`batch_files` — the files a file source read in a batch, from Spark's own checkpoint, so
  the driver reads them itself (no Spark job);
* :func:`numbered_lines` — otherwise, the batch's lines through Spark, numbered as
  ``cep.continuous.runner`` numbers them (a Kafka offset is the line);
* :func:`parse_slow` — lines the driver-side parsers leave alone, parsed (or rejected, with the
  reason) by Spark's parser, the one definition of the formats.
"""
from __future__ import annotations

import json
from pathlib import Path

from rdfcore.errors import SidecarError
from rdfcore.locations import local_path, location
from rdfcore.schema import FILE, LINE, O, P, RAW, REASON, S

__all__ = ["batch_files", "numbered_lines", "parse_slow", "run_batches"]


def batch_files(spark_checkpoint: str | Path, batch_id: int, source: int = 0) -> list[Path] | None:
    """The files file source ``source`` read in ``batch_id``, from Spark's checkpoint: the batch's
    offsets (``offsets/<id>``, ``offsets/<id-1>``: the source's log offsets) and the source's file
    log (``sources/<n>/<k>`` or the compacted ``<k>.compact``). None whenever that record is not
    there or not in the form Spark 3-4 write it, or names a file that is not local: the caller
    then reads the batch through Spark. The checkpoint itself may be on a Hadoop filesystem."""
    root = location(spark_checkpoint, "the checkpoint")
    try:
        end = _log_offset(root / "offsets" / str(batch_id), source)
        start = _log_offset(root / "offsets" / str(batch_id - 1), source) if batch_id > 0 else -1
        if end is None:
            return None
        start = -1 if start is None else start
        wanted = set(range(start + 1, end + 1))
        found: dict[int, list[str]] = {}
        log = root / "sources" / str(source)
        for k in sorted(wanted):
            if k in found:
                continue
            plain = log / str(k)
            if plain.exists():
                found[k] = [e["path"] for e in _log_entries(plain)]
                continue
            compact = min((p for p in log.glob("*.compact") if p.name.split(".")[0].isdigit()
                           and int(p.name.split(".")[0]) >= k), key=lambda p: int(p.name.split(".")[0]), default=None)
            if compact is None:
                return None
            for entry in _log_entries(compact):
                if entry["batchId"] in wanted:
                    found.setdefault(entry["batchId"], []).append(entry["path"])
            if k not in found:
                return None
        paths = []
        for k in sorted(wanted):
            for url in found.get(k, []):
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
    return int(json.loads(text)["logOffset"])


def _log_entries(path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != "v1":
        raise ValueError(f"unexpected file source log {path}")
    return [json.loads(line) for line in lines[1:] if line.strip()]



def numbered_lines(lines, sources):
    """The batch's lines as (FILE, LINE, RAW, _source): a Kafka offset is its line, file lines are
    numbered from their blocks (``rdfcore.loading.with_line_numbers``)."""
    from pyspark.sql import functions as F

    from rdfcore.sparkutil import union_all
    from cep.continuous.sources import KafkaSource
    from rdfcore.loading import with_line_numbers

    kinds = {isinstance(s, KafkaSource) for s in sources}
    parts = []
    if True in kinds:
        parts.append(lines.filter(F.col(LINE).isNotNull()).select(FILE, LINE, RAW, "_source"))
    if False in kinds:
        rows = lines.filter(F.col(LINE).isNull()).drop(LINE).withColumn("_row", F.monotonically_increasing_id())
        parts.append(with_line_numbers(rows, rows).select(FILE, LINE, RAW, "_source"))
    return union_all(parts)


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
    ``(raw, file, line, _block, _source)``), with the trigger, checkpoint and error handling of
    ``cep.continuous.runner.run_micro_batches``."""
    from pyspark.sql import functions as F

    from cep.continuous.runner import run_micro_batches
    from rdfcore.sparkutil import union_all
    from cep.continuous.sources import check_sources

    check_sources(sources)
    frames = []
    for i, source in enumerate(sources):
        frame = source.lines(spark).withColumn("_source", F.lit(i))
        if LINE not in frame.columns:
            frame = frame.withColumn(LINE, F.lit(None).cast("long"))
        if "_block" not in frame.columns:
            frame = frame.withColumn("_block", F.lit(None).cast("long"))
        frames.append(frame.select(RAW, FILE, LINE, "_block", "_source"))
    run_micro_batches(union_all(frames), on_batch, checkpoint, trigger, timeout, failure)
