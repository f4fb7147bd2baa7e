"""Benchmark: the stream parser on Spark (``cep.io.streams.parse_lines``), its plain lines parsed
in Python on the executors first (``plain``, the default) against Spark's expressions alone.

    python bench/parse.py [--lines 200000] [--files 10] [--formats jsonl tsnt] [--repeat 3] [--network real|example]

Lines of DESIGN.md's Vienna stream (``scenarios.vienna_transit``: delays and arrivals of a fleet
of 3,000 vehicles, prefixed names, on the real network when the data directory is there), as
JSON Lines and as timestamped N-Triples (the same events, full IRIs), in ``--files`` files. Each
run reads the files, numbers their lines, parses them and counts the items, in one warm local[2]
session; both ways on the same files in the same run, the best of ``--repeat``, and the ratio.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cep.io.streams import parse_lines  # noqa: E402  (the repository on the path first)
from cep.lowering.languages import compile_query  # noqa: E402
from jobs.spark import build_session  # noqa: E402
from rdfcore.loading import read_lines, with_line_numbers  # noqa: E402
from rdfcore.schema import FILE, LINE, RAW  # noqa: E402
from scenarios import vienna_transit as vt  # noqa: E402


def streams(work: Path, lines: int, files: int, network: str | None) -> tuple[dict, dict]:
    """{format: [files]} of ``lines`` events each, and the prefixes of the JSON Lines."""
    if network == "example":
        world = vt.example_map()
    else:
        world = vt.real_network(work, vehicles=3000, subways=1000)
    prefixes = dict(compile_query(world.query).prefixes)
    per_minute = 2000
    minutes = max(1, lines // per_minute)
    vt.write_stream(work / "jsonl", minutes, per_minute, max(1, -(-minutes // files)), 1, world)
    jsonl = sorted((work / "jsonl").iterdir())
    (work / "tsnt").mkdir()
    tsnt = []
    for f in jsonl:
        target = work / "tsnt" / (f.stem + ".nt")
        with open(f, encoding="utf-8") as inp, open(target, "w", encoding="utf-8") as out:
            for line in inp:
                row = json.loads(line)
                terms = []
                for k in ("s", "p", "o"):
                    prefix, local = row[k].split(":", 1)
                    terms.append(f"<{prefixes[prefix]}{local}>")
                out.write(f'{" ".join(terms)} "{row["t"]}" .\n')
        tsnt.append(target)
    return {"jsonl": jsonl, "tsnt": tsnt}, prefixes


def timed(spark, files: list[Path], prefixes: dict, fmt: str, plain: bool) -> tuple[float, int]:
    raw = read_lines(spark, files)
    lines = with_line_numbers(raw, raw).select(FILE, LINE, RAW)
    started = time.perf_counter()
    terms, rejects = parse_lines(lines, prefixes, "m", fmt, plain=plain)
    count = terms.count()
    return time.perf_counter() - started, count


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--formats", nargs="+", choices=("jsonl", "tsnt"), default=["jsonl", "tsnt"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--network", choices=("real", "example"), default=None)
    args = ap.parse_args(argv)
    spark = build_session("bench parse", {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
                                          "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="bench-parse-"))
    files, prefixes = streams(work, args.lines, args.files, args.network)
    for fmt in args.formats:
        timed(spark, files[fmt][:1], prefixes, fmt, True)      # warm-up: the first job, the Python workers
        timed(spark, files[fmt][:1], prefixes, fmt, False)
        best = {}
        for plain in (True, False):
            runs = [timed(spark, files[fmt], prefixes, fmt, plain) for _ in range(args.repeat)]
            best[plain] = (min(t for t, _n in runs), runs[0][1])
        (ours, n_ours), (base, n_base) = best[True], best[False]
        print(f"{fmt}: {n_ours:,} items in {len(files[fmt])} files; Python first {ours:.2f} s ({n_ours / ours:,.0f} lines/s), "
              f"Spark's expressions alone {base:.2f} s ({n_base / base:,.0f} lines/s); ratio {base / ours:.1f}x; "
              f"items {'equal' if n_ours == n_base else 'DIFFER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
