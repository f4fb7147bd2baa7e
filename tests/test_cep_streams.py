"""cep.io.streams.read_stream: JSON Lines and timestamped N-Triples stream files.

Spark work is batched: one JSON Lines file and one timestamped N-Triples file hold every good and
bad case, each is read once (module fixtures) and the tests look at the collected rows by line.
The JSON Lines file is read with tiny file splits, so line numbers are checked across blocks.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cep.io.formats import detect_stream_format
from cep.io.streams import ITEM, STREAM_COLUMNS, _ticks, read_stream
from rdfcore.hashing import term_id
from rdfcore.errors import RDFLoadError
from rdfcore.schema import ID, LINE, O, P, REASON, S, T_END, T_START, TERM
from rdfcore.vocab import RDF_TYPE

EX = "http://example.org/vienna#"
XSD = "http://www.w3.org/2001/XMLSchema#"
PREFIXES = {"": EX, "ex": EX, "xsd": XSD}


def ex(local: str) -> str:
    return f"<{EX}{local}>"


def j(**item) -> str:
    return json.dumps(item)


# (line content, expected) — expected is a list of (s, p, o, t_start, t_end) for a good line or
# a substring of the reject reason for a bad one; None = a blank line (skipped, still counted).
JSONL_CASES: list[tuple[str | None, object]] = [
    (j(s=":a1", p=":delayAt", o=":m", t=10), [(ex("a1"), ex("delayAt"), ex("m"), 10, 10)]),
    (j(s=f"<{EX}d1>", p="a", o=":subway", t=12, t_end=14), [(ex("d1"), RDF_TYPE, ex("subway"), 12, 14)]),
    (None, None),
    (j(s="ex:d1", p="ex:speed", o='"5"^^xsd:integer', t="1970-01-01T00:00:01Z"),
     [(ex("d1"), ex("speed"), f'"5"^^<{XSD}integer>', 1000, 1000)]),
    (j(s="ex:d1", p="ex:label", o='"Tram"@DE', t="1970-01-01T00:00:02.5+00:00", t_end="1970-01-01T01:00:00+01:00"),
     None),  # t_end (0) before t (2500): a reject, see below
    (j(t=20, triples=[[":a1", ":delayAt", ":m"], ["_:e", ":at", '"x"^^<' + XSD + 'string>']]),
     [(ex("a1"), ex("delayAt"), ex("m"), 20, 20), ("BNODE", ex("at"), '"x"', 20, 20)]),
    (j(s=":a1", p=":delayAt", o=":m", t="1970-01-01"), [(ex("a1"), ex("delayAt"), ex("m"), 0, 0)]),
    ("not json", "bad JSON: expected one JSON object"),
    ('{"s": ":a1", "p": ', "bad JSON: not a well-formed JSON object"),
    ("[1, 2]", "bad JSON: expected one JSON object"),
    ('{"s": ":a", "p": ":p", "o": ":o", "t": 1} trailing', "bad JSON"),
    (j(s=":a", p=":p", o=":o", t=1, tend=3), "unknown key(s) tend"),
    (j(s=":a", p=":p", t=1), "missing or null key(s) o"),
    (j(p=":p", t=1), "missing or null key(s) s, o"),
    (j(s=None, p=":p", o=":o", t=1), "missing or null key(s) s"),
    (j(s=":a", p=":p", o=":o"), "missing or null key 't'"),
    (j(s=":a", p=":p", o=":o", t=1.5), "bad timestamp in 't': '1.5'"),
    (j(s=":a", p=":p", o=":o", t="yesterday"), "bad timestamp in 't': 'yesterday'"),
    (j(s=":a", p=":p", o=":o", t="2024-13-01T00:00:00Z"), "bad timestamp in 't'"),
    (j(s=":a", p=":p", o=":o", t=1, t_end="soon"), "bad timestamp in 't_end': 'soon'"),
    (j(s=":a", p=":p", o=":o", t=5, t_end=4), "t_end (4) is before t (5)"),
    (j(s="foo:a", p=":p", o=":o", t=1), "s: unknown prefix 'foo:'"),
    (j(s=":a", p=":p", o='"5"^^foo:int', t=1), "o: unknown prefix 'foo:'"),
    (j(s='"lit"', p=":p", o=":o", t=1), "s: expected an IRI"),
    (j(s=":a", p="_:b", o=":o", t=1), "p: expected an IRI"),
    (j(s=":a", p=":p", o="plain words", t=1), "o: expected an IRI"),
    (j(s="a", p=":p", o=":o", t=1), "s: expected an IRI"),
    (j(s=":a", p=":p", o="<http://bad iri>", t=1), "o: expected an IRI"),
    (j(t=3, triples=[]), "a graph item with no triples"),
    (j(t=3, triples="x"), "'triples' must be a JSON array"),
    (j(t=3, triples=[[":a", ":p", ":o"], [":a", ":p"]]), "triples[1] must be an array of three terms"),
    (j(t=3, triples=[[":a", ":p", ":o"], [":a", "a", "bad term"]]), "triples[1].o: expected an IRI"),
    (j(s=":a", p=":p", o=":o", t=1, triples=[[":a", ":p", ":o"]]), "a graph item has 'triples' and no"),
    (j(s="ex:a", p="ex:p", o="ex:o", t=99), [(ex("a"), ex("p"), ex("o"), 99, 99)]),
]
# line 5 is a reject: its t_end (01:00+01:00 = epoch 0) is before its t (2.5 s)
JSONL_CASES[4] = (JSONL_CASES[4][0], "t_end (0) is before t (2500)")

TSNT_LINES: list[tuple[str, object]] = [
    ("# a comment line", None),
    (f'{ex("a1")} {ex("delayAt")} {ex("m")} "10" .', [(ex("a1"), ex("delayAt"), ex("m"), 10, 10)]),
    (f'{ex("d1")} {ex("delayAt")} {ex("h")} "12"', [(ex("d1"), ex("delayAt"), ex("h"), 12, 12)]),
    ("", None),
    (f'{ex("d1")} {ex("label")} "Tram"@DE . "14"', [(ex("d1"), ex("label"), '"Tram"@de', 14, 14)]),
    (f'_:x {ex("p")} _:y "1970-01-01T00:01:00Z"^^<{XSD}dateTime> .', [("BNODE", ex("p"), "BNODE", 60, 60)]),
    (f'{ex("a1")} {ex("delayAt")} {ex("m")} .',
     f'expected a quoted timestamp "..." after the object at column {len(ex("a1") + ex("delayAt") + ex("m")) + 5}'),
    (f'{ex("a1")} {ex("delayAt")} {ex("m")} "10" . junk', "unexpected text after the timestamp at column"),
    (f'{ex("a1")} {ex("delayAt")} {ex("m")} "ten" .', "bad timestamp in 'timestamp': 'ten'"),
    (f'{ex("a1")} {ex("delayAt")} {ex("m")} "10', "malformed timestamp literal at column"),
    (f'{ex("a1")} {ex("delayAt")}', "expected an object"),
    ('a b c "1" .', "expected a subject (IRI <...> or blank node _:x) at column 1"),
    (f'{ex("a1")} "p" {ex("m")} "1" .', "expected a predicate IRI"),
]


def _collect(stream):
    rows = stream.terms.collect()
    by_item: dict[int, list] = {}
    for row in rows:
        by_item.setdefault(row[ITEM], []).append(row)
    rejects = {r[LINE]: r for r in stream.rejects.collect()}
    return rows, by_item, rejects


@pytest.fixture(scope="module")
def jsonl(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("streams") / "events.jsonl"
    path.write_text("\n".join("" if line is None else line for line, _ in JSONL_CASES) + "\n", encoding="utf-8")
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1200")  # several blocks: line numbers across splits
    try:
        stream = read_stream(spark, path, prefixes=PREFIXES)
        rows, by_item, rejects = _collect(stream)
        partitions = spark.read.text(str(path)).rdd.getNumPartitions()
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)
    return dict(stream=stream, rows=rows, by_item=by_item, rejects=rejects, partitions=partitions)


@pytest.fixture(scope="module")
def tsnt(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("streams") / "events.nt"
    path.write_text("\n".join(line for line, _ in TSNT_LINES) + "\n", encoding="utf-8")
    stream = read_stream(spark, path, time_unit="s")
    rows, by_item, rejects = _collect(stream)
    triples = stream.triples.collect()
    dictionary = {r[ID]: r[TERM] for r in stream.dictionary.collect()}
    return dict(stream=stream, rows=rows, by_item=by_item, rejects=rejects, rejected=stream.rejected,
                triples=triples, dictionary=dictionary)


def _good_lines(cases):
    return {n: exp for n, (line, exp) in enumerate(cases, 1) if isinstance(exp, list)}


def _bad_lines(cases):
    return {n: exp for n, (line, exp) in enumerate(cases, 1) if isinstance(exp, str)}


def _check_good(result, cases):
    rows_by_line: dict[tuple, list] = {}
    for items in result["by_item"].values():
        key = tuple(sorted({(r[T_START], r[T_END]) for r in items}))
        assert len(key) == 1, f"one interval per item, got {key}"
        triples = sorted((("BNODE" if r[S].startswith("_:") else r[S]), r[P],
                          ("BNODE" if r[O].startswith("_:") else r[O]), r[T_START], r[T_END]) for r in items)
        rows_by_line[tuple(triples)] = items
    expected = {tuple(sorted(exp)) for exp in _good_lines(cases).values()}
    assert set(rows_by_line) == expected


def test_jsonl_good_items(jsonl):
    assert jsonl["partitions"] > 1  # the file really was split
    _check_good(jsonl, JSONL_CASES)
    assert len(jsonl["by_item"]) == len(_good_lines(JSONL_CASES))


def test_jsonl_graph_item_shares_item_and_interval(jsonl):
    sizes = sorted(len(v) for v in jsonl["by_item"].values())
    assert sizes.count(2) == 1 and set(sizes) == {1, 2}
    (graph,) = [v for v in jsonl["by_item"].values() if len(v) == 2]
    assert {(r[T_START], r[T_END]) for r in graph} == {(20, 20)}


def test_jsonl_every_reject_with_its_line(jsonl):
    bad = _bad_lines(JSONL_CASES)
    assert sorted(jsonl["rejects"]) == sorted(bad)
    for line, reason in bad.items():
        got = jsonl["rejects"][line]
        assert reason in got[REASON], (line, got[REASON])
        assert got["raw"] == JSONL_CASES[line - 1][0]
        assert got["file"].endswith("events.jsonl")


@pytest.mark.parametrize("plain", [False, True])
def test_malformed_lines_are_rejected_with_their_line_and_reason(spark, tmp_path, plain):
    """Issue 59's lines (``tests/running_example.py``) between the running example's events,
    read by Spark's expressions and with the Python parser first (``plain``: a line that is not
    UTF-8 is left to the expressions, Arrow cannot hand it to pandas): every malformed line a
    reject with its line, reason and text (bad bytes as U+FFFD), every event an item."""
    from tests.running_example import with_malformed_lines

    events = (Path(__file__).resolve().parent.parent / "ontologies" / "vienna_example_stream.jsonl").read_text()
    data, reasons = with_malformed_lines(events.splitlines())
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    stream = read_stream(spark, path, prefixes={"": "http://example.org/vienna#"}, time_unit="m", plain=plain)
    rejects = {r[LINE]: r for r in stream.rejects.collect()}
    assert sorted(rejects) == sorted(reasons)
    lines = data.split(b"\n")
    for line, reason in reasons.items():
        assert rejects[line][REASON].startswith(reason), (line, rejects[line][REASON])
        assert rejects[line]["raw"] == lines[line - 1].decode("utf-8", errors="replace")
    assert sorted(r[T_START] for r in stream.terms.collect()) == [10, 12, 14, 16]


def test_ids_are_the_dictionary_hashes(tsnt):
    stream = tsnt["stream"]
    assert list(stream.triples.columns) == list(STREAM_COLUMNS)
    assert all(dict(stream.triples.dtypes)[c] == "bigint" for c in STREAM_COLUMNS)
    by_item = {r[ITEM]: r for r in tsnt["rows"]}
    assert {tuple(r) for r in tsnt["triples"]} == {
        (item, term_id(r[S]), term_id(r[P]), term_id(r[O]), r[T_START], r[T_END]) for item, r in by_item.items()}
    terms = {r[c] for r in tsnt["rows"] for c in (S, P, O)}
    assert terms <= set(tsnt["dictionary"].values())
    assert all(tsnt["dictionary"][term_id(t)] == t for t in terms)


def test_jsonl_blank_nodes_scoped_to_the_file(jsonl):
    blanks = {r[S] for r in jsonl["rows"] if r[S].startswith("_:")}
    assert len(blanks) == 1
    (label,) = blanks
    assert label.startswith("_:fs") and label.endswith(".e")


def test_tsnt_good_items(tsnt):
    _check_good(tsnt, TSNT_LINES)
    assert len(tsnt["rows"]) == len(_good_lines(TSNT_LINES))


def test_tsnt_every_reject_with_its_line(tsnt):
    bad = _bad_lines(TSNT_LINES)
    assert sorted(tsnt["rejects"]) == sorted(bad)
    for line, reason in bad.items():
        assert reason in tsnt["rejects"][line][REASON], (line, tsnt["rejects"][line][REASON])
    assert tsnt["rejected"] == len(bad)


def test_item_ids_unique_per_line(jsonl, tsnt):
    assert len(jsonl["by_item"]) == len(_good_lines(JSONL_CASES))
    assert len(tsnt["by_item"]) == len(tsnt["rows"])


def test_time_units_and_iso(spark):
    """Integers are kept in the unit; ISO date-times become whole ticks since the epoch (floor)."""
    from pyspark.sql import functions as F

    values = ["7", "-3", "1970-01-01T00:00:00Z", "1970-01-01T01:30:59.999Z", "1970-01-02", "1970-01-01T02:00+01:00",
              "1969-12-31T23:59:59.5Z", "1.0", "99999999999999999999", "2024-02-30T00:00:00Z"]
    units = ["ms", "s", "m", "h"]
    df = spark.createDataFrame([(v,) for v in values], "v string")
    rows = df.select("v", *[_ticks(F.col("v"), u).alias(u) for u in units]).collect()
    got = {r["v"]: tuple(r[u] for u in units) for r in rows}
    assert got["7"] == (7, 7, 7, 7)
    assert got["-3"] == (-3, -3, -3, -3)
    assert got["1970-01-01T00:00:00Z"] == (0, 0, 0, 0)
    assert got["1970-01-01T01:30:59.999Z"] == (5_459_999, 5459, 90, 1)
    assert got["1970-01-02"] == (86_400_000, 86_400, 1440, 24)
    assert got["1970-01-01T02:00+01:00"] == (3_600_000, 3600, 60, 1)
    assert got["1969-12-31T23:59:59.5Z"] == (-500, -1, -1, -1)
    for bad in ("1.0", "99999999999999999999", "2024-02-30T00:00:00Z"):
        assert got[bad] == (None, None, None, None)


def test_format_detection_and_argument_errors(tmp_path, spark):
    assert detect_stream_format(Path("x.jsonl")) == "jsonl"
    assert detect_stream_format(Path("x.NDJSON")) == "jsonl"
    assert detect_stream_format(Path("x.nt")) == "tsnt"
    assert detect_stream_format(Path("x.txt"), "tsnt") == "tsnt"
    with pytest.raises(RDFLoadError, match="cannot tell the stream format"):
        detect_stream_format(Path("x.txt"))
    with pytest.raises(RDFLoadError, match="unknown stream format 'csv'"):
        detect_stream_format(Path("x.jsonl"), "csv")
    with pytest.raises(RDFLoadError, match="no such file"):
        read_stream(spark, tmp_path / "missing.jsonl")
    present = tmp_path / "s.jsonl"
    present.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown time unit 'min'"):
        read_stream(spark, present, time_unit="min")


@pytest.mark.parametrize("fmt", ["jsonl", "tsnt", None])
def test_the_parsers_plan_holds_each_stage_once(spark, fmt):
    """The line parser's expressions are bound once per stage (``cep.io.streams.bound``) and its
    result is a generated column (``once``), so Catalyst copies neither into the filters it pushes
    down: a streaming query plans the parser again in every micro-batch. A parser that copies
    the resolved term into its normal form, or the whole parse into each pushed filter, has
    hundreds of regexp_extract and from_json calls in its plan."""
    from cep.io.streams import parse_lines

    lines = spark.createDataFrame([("a.jsonl", 1, '{"s": ":a", "p": ":p", "o": ":o", "t": 1}'),
                                   ("a.nt", 1, '<http://x/a> <http://x/p> <http://x/o> "1" .')],
                                  "file string, line long, raw string")
    terms, rejects = parse_lines(lines, {"": "http://x/"}, "ms", fmt)
    for frame in (terms, rejects):
        plan = frame._jdf.queryExecution().optimizedPlan().toString()
        assert plan.count("from_json(") <= 8, plan[:2000]
        assert plan.count("regexp_extract(") <= 80, plan[:2000]
        assert len(plan) < (25_000 if fmt == "tsnt" else 120_000), len(plan)
    assert sorted(tuple(r) for r in terms.select(S, P, O).collect()) == [("<http://x/a>", "<http://x/p>", "<http://x/o>")] * (2 if fmt is None else 1)
