"""``cep.io.lineparse`` (plain JSON Lines parsed on the driver) against Spark's parser
(``cep.io.streams``): on random lines — plain ones and every kind of line it must leave to Spark —
each line it accepts gives exactly Spark's triples, times and item id, and Spark accepts it too.
"""
from __future__ import annotations

import json
import random
from collections import defaultdict

import pytest

from cep.io.lineparse import bnode_scope, item_id, parse_jsonl

pytestmark = pytest.mark.spark

PREFIXES = {"": "http://example.org/vienna#", "ex": "http://ex/", "xsd": "http://www.w3.org/2001/XMLSchema#"}
TERMS_S = [":a1", "ex:b", "<http://x/c>", "_:b1", "_:b.x", "<http://x/é>", "nope:x", "<a b>", "\"lit\"", "ex:a/b#c",
           "<http://x/\\u00e9>", 5, None, "a"]
TERMS_P = [":delayAt", "a", "ex:p", "<http://x/p>", "_:p", "\"p\"", "ex:", 7]
TERMS_O = [":m", "\"5\"^^xsd:integer", "\"x\"@EN-gb", "\"y\"^^<http://www.w3.org/2001/XMLSchema#string>",
           "\"plain\"", "\"esc\\\"aped\"", "\"z\"^^nope:t", "_:o", "<http://x/o>", "\"t\"^^<http://x/dt>",
           "ex:o.", "\"bad", "\"tab\there\"", "\"k\"@", ":"]
TIMES = [0, 10, -3, 2 ** 62, 2 ** 64, 1.5, "10", "2024-05-01T10:00:00Z", True, None]


def random_line(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.08:
        return rng.choice(["", "   ", "not json", "[1, 2]", "{'s': ':a'}", '{"s": ":a", "s": ":b", "p": "a", "o": ":m", "t": 1}',
                           '{"s": ":a1", "p": ":delayAt", "o": ":m", "t": 1, "extra": 2}', "{}", "null",
                           # a repeated key spelled with an escape; a key's name as a value
                           '{"s": ":a", "\\u0073": ":b", "p": "a", "o": ":m", "t": 1}',
                           '{"s": ":a1", "p": "a", "o": "\\"s\\"", "t": 2}', '{"s": ":a1", "p": "a", "o": "\\"t\\"", "t": 3}'])
    t = rng.choice(TIMES[:4]) if rng.random() < 0.8 else rng.choice(TIMES)
    obj: dict = {"t": t}
    if rng.random() < 0.2:
        obj["t_end"] = rng.choice([t if isinstance(t, int) else 0, (t + 3) if type(t) is int else 4, 0, None])
    if rng.random() < 0.25:
        size = rng.choice([0, 1, 2, 3])
        obj["triples"] = [[rng.choice(TERMS_S[:6]), rng.choice(TERMS_P[:4]), rng.choice(TERMS_O)] for _ in range(size)]
        if rng.random() < 0.1:
            obj["triples"].append(["<http://x/s>", "<http://x/p>"])
        if rng.random() < 0.05:
            obj["s"] = ":a1"
    else:
        obj["s"] = rng.choice(TERMS_S[:6]) if rng.random() < 0.8 else rng.choice(TERMS_S)
        obj["p"] = rng.choice(TERMS_P[:4]) if rng.random() < 0.85 else rng.choice(TERMS_P)
        obj["o"] = rng.choice(TERMS_O)
        if rng.random() < 0.05:
            del obj[rng.choice(["s", "p", "o"])]
    return json.dumps(obj, ensure_ascii=rng.random() < 0.5)


def test_plain_lines_parse_as_spark_parses_them(spark, tmp_path):
    from cep.io.streams import read_stream

    rng = random.Random(5)
    lines = [random_line(rng) for _ in range(1500)]
    path = tmp_path / "stream.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    stream = read_stream(spark, path, PREFIXES, "ms", plain=False)   # Spark's expressions alone
    file = str(path.resolve())
    spark_rows = defaultdict(list)
    for r in stream.terms.collect():
        spark_rows[r["item"]].append((r["s"], r["p"], r["o"], r["t_start"], r["t_end"]))
    rejected = {r["line"] for r in stream.rejects.collect()}
    accepted = blank = 0
    for number, raw in enumerate(lines, start=1):
        got = parse_jsonl(raw, file, number, PREFIXES)
        if got is None:
            continue
        if got == []:
            blank += 1
            assert item_id(file, number) not in spark_rows and number not in rejected, raw
            continue
        accepted += 1
        assert number not in rejected, raw
        assert {g[0] for g in got} == {item_id(file, number)}
        assert sorted(g[1:] for g in got) == sorted(spark_rows[item_id(file, number)]), raw
    assert accepted > 400 and blank > 0
    assert len(rejected) > 50, "the random lines must include lines Spark rejects"


def test_item_ids_and_blank_node_scopes_match_spark(spark):
    from pyspark.sql import functions as F

    from cep.io.streams import file_scope

    rows = [("/tmp/a b/é.jsonl", 1), ("kafka:events/3", 123456789), ("x", -5), ("", 0)]
    df = spark.createDataFrame(rows, "file string, line long")
    got = df.select(F.xxhash64("file", "line").alias("id"), file_scope(F.col("file")).alias("scope")).collect()
    assert [r["id"] for r in got] == [item_id(f, n) for f, n in rows]
    assert [r["scope"] for r in got] == [bnode_scope(f) for f, _ in rows]


def test_python_first_parse_gives_the_spark_parse_rows(spark, tmp_path):
    """``parse_lines`` with its plain lines parsed in Python on the executors (``plain``)
    against Spark's expressions alone: on random JSON Lines and timestamped N-Triples
    lines in three files (each its format by extension, and a file of another one), the same terms
    and the same rejects, reasons and raw text included; ``parse_lines_once`` gives both in one
    frame."""
    from cep.io.lineparse import parse_tsnt
    from cep.io.streams import parse_lines, parse_lines_once
    from rdfcore.loading import read_lines, with_line_numbers
    from rdfcore.schema import FILE, LINE, RAW, REASON
    from tests.test_cep_linescan import _nt_line

    rng = random.Random(12)
    jsonl = [random_line(rng) for _ in range(1200)]
    tsnt = [_nt_line(rng).replace("\r", " ") for _ in range(1200)]
    # an extension in capitals is its format too (Spark's and Python's lower case alike)
    paths = [tmp_path / "a.jsonl", tmp_path / "b.nt", tmp_path / "c.csv", tmp_path / "d.NDJSON"]
    for path, lines in zip(paths, (jsonl, tsnt, jsonl[:20], jsonl[-200:])):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    raw = read_lines(spark, paths)
    lines = with_line_numbers(raw, raw).select(FILE, LINE, RAW)
    got = {}
    for plain in (True, False):
        terms, rejects = parse_lines(lines, PREFIXES, "ms", plain=plain)
        got[plain] = (sorted(tuple(r) for r in terms.collect()), sorted(tuple(r) for r in rejects.collect()))
    assert got[True] == got[False]
    # the one-frame form a streaming query reads its lines once with: the same rows, split by reason
    once = parse_lines_once(lines, PREFIXES, "ms", plain=True).collect()
    assert sorted(tuple(r[:8]) for r in once if r[REASON] is None) == got[True][0]
    assert all(r[RAW] is None for r in once if r[REASON] is None)
    assert sorted((r[FILE], r[LINE], r[REASON], r[RAW]) for r in once if r[REASON] is not None) == got[True][1]
    assert all(r["item"] is None and r["s"] is None and r["t_start"] is None for r in once if r[REASON] is not None)
    terms, rejects = got[True]
    # both branches taken in both formats: lines Python parses, lines it leaves to Spark
    file_b = str(paths[1].resolve())
    python_nt = sum(bool(parse_tsnt(line, file_b, 0, {})) for line in tsnt)
    python_jsonl = sum(bool(parse_jsonl(line, str(paths[0].resolve()), 0, PREFIXES)) for line in jsonl)
    assert python_nt > 150 and python_jsonl > 300, (python_nt, python_jsonl)
    assert {r[0] for r in rejects} == {str(p.resolve()) for p in paths} and len(rejects) > 300
    assert len({r[-2] for r in terms}) == 3      # accepted lines of both formats, in the three files of one


def test_read_stream_parses_in_python_first_from_a_size_on(spark, tmp_path, monkeypatch):
    """``read_stream`` puts the Python stage into its plan for a file of ``PLAIN_MIN_BYTES`` or
    more (a process's first Python stage costs seconds, which a small file does not repay), and
    gives the same rows either way."""
    from cep.io import streams
    from cep.io.streams import read_stream

    path = tmp_path / "s.jsonl"
    path.write_text('{"s": ":a1", "p": ":delayAt", "o": ":m", "t": 1}\n{"s": ":a1", "p": "bad", "o": ":m", "t": 2}\n',
                    encoding="utf-8")
    got = {}
    for limit in (path.stat().st_size + 1, path.stat().st_size):
        monkeypatch.setattr(streams, "PLAIN_MIN_BYTES", limit)
        stream = read_stream(spark, path, PREFIXES)
        plan = stream.terms._jdf.queryExecution().executedPlan().toString()
        got[limit <= path.stat().st_size] = ("ArrowEvalPython" in plan, sorted(tuple(r) for r in stream.terms.collect()),
                                             sorted(tuple(r) for r in stream.rejects.collect()))
    assert got[True][0] and not got[False][0]
    assert got[True][1:] == got[False][1:] and len(got[True][1]) == 1 and len(got[True][2]) == 1
