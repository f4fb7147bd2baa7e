"""Every front end answers any input with a result or with the project's own error (issue 37).

The shipped example queries, paths, stream lines and background files are mutated — spans
deleted, grammar characters and keywords inserted, text truncated, parts nested thousands deep,
odd Unicode, huge numbers — and each front end must either accept the text or raise a
:class:`rdfcore.errors.SidecarError`; a syntax error names a line and a column inside the text.
A stream reader never raises: every line is an item or a reject with its reason.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paths
from cep import compile_query
from cep.lowering.languages import LANGUAGES
from paths.parser import PathSyntaxError
from rdfcore.errors import SidecarError
from tests.hypothesis_profiles import examples

EXAMPLES = Path(__file__).resolve().parents[1] / "ontologies"
QUERIES = sorted(p.read_text(encoding="utf-8") for p in EXAMPLES.glob("*.rq"))
PATHS = ["(^:beg/[:means :subway]/:end)+", ":p*/(:q|^:r)?", "next::[edge:::a]/self::<http://x/b>+",
         "!(:p|^:q|rdf:type)", "(:a/:b){2}", "edge::(:p/node)*", "^(:p/:q)/:r+"]
PATH_PREFIXES = {"": "http://example.org/", "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#"}

PIECES = ["{", "}", "(", ")", "[", "]", "<", ">", '"', "'", '"""', "?", "$", ":", ".", ";", ",", "!", "^", "^^",
          "|", "/", "*", "+", "-", "#", "@", "\\", "\n", " ", "_:", "a", "=", "&&", "||", "SEQ", "WINDOW",
          "FILTER", "RANGE", "STEP", "TUMBLING", "AGGREGATE", "UNION", "OPTIONAL", "PREFIX", "SELECT",
          "FROM STREAM", "MATCH", "EVERY", "WITHOUT", "<http://[x>", "<http://ex/a b>", "\\u00", "10m", "0s"]
ODD = ["\x00", "\x7f", "\u00e9", "\u200b", "\ufeff", "\u2028", "\U0001f600", "\ud800", "\uffff", "\r"]
HUGE = ["9" * 400, "1e999999", "-" + "9" * 60, "0x1F", "1.7976931348623157e309", "1" * 30 + "m",
        "99999999999999999999s"]


class _Draw:
    """Choices from hypothesis' ``draw`` (shrinkable), or from a ``random.Random``."""

    def __init__(self, draw=None, rng=None):
        self.draw, self.rng = draw, rng

    def integer(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high)) if self.draw else self.rng.randint(low, high)

    def choice(self, items):
        return self.draw(st.sampled_from(items)) if self.draw else self.rng.choice(items)


def mutate(text: str, pick: _Draw) -> str:
    """``text`` with one to four mutations."""
    for _ in range(pick.integer(1, 4)):
        kind = pick.choice(["delete", "insert", "truncate", "nest", "odd", "huge", "repeat"])
        at = pick.integer(0, len(text))
        if kind == "delete":
            text = text[:at] + text[at + pick.integer(1, 30):]
        elif kind == "insert":
            text = text[:at] + pick.choice(PIECES) + text[at:]
        elif kind == "truncate":
            text = text[:at]
        elif kind == "nest":
            end = pick.integer(at, len(text))
            opening, closing = pick.choice([("(", ")"), ("{", "}"), ("[", "]"), ("SEQ (", ")")])
            depth = pick.choice([3, 60, 400, 4000])
            unbalanced = pick.choice([0, 1])
            text = text[:at] + opening * depth + text[at:end] + closing * (depth - unbalanced) + text[end:]
        elif kind == "odd":
            text = text[:at] + pick.choice(ODD) + text[at:]
        elif kind == "huge":
            text = text[:at] + pick.choice(HUGE) + text[at:]
        else:
            end = pick.integer(at, min(len(text), at + 40))
            text = text[:end] + text[at:end] * pick.integer(2, 50) + text[end:]
    return text


@st.composite
def mutated(draw, seeds: list[str]) -> str:
    """A seed with one to four mutations (``mutate``)."""
    return mutate(draw(st.sampled_from(seeds)), _Draw(draw=draw))


def as_read(text: str) -> str:
    """``text`` as a reader of UTF-8 bytes gets it: a lone surrogate cannot be encoded, and a bad
    byte is read as U+FFFD."""
    return text.encode("utf-8", errors="replace").decode("utf-8")


def answers_or_refuses(call, text: str) -> None:
    """``call(text)`` returns, or raises the project's error; a syntax error is located inside
    ``text`` and renders."""
    try:
        call(text)
    except SidecarError as error:
        str(error)
        if isinstance(error, PathSyntaxError):
            lines = text.split("\n")
            assert 1 <= error.line <= len(lines) + 1, (error.line, len(lines))
            assert error.column >= 1


SETTINGS = settings(max_examples=examples(150, 2000), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(text=mutated(QUERIES), lang=st.sampled_from([None, *LANGUAGES]))
def test_query_front_ends(text, lang):
    answers_or_refuses(lambda t: compile_query(t, lang=lang), text)


@SETTINGS
@given(text=mutated(PATHS))
def test_path_front_end(text):
    answers_or_refuses(lambda t: paths.lower(paths.parse(t, PATH_PREFIXES)), text)


@pytest.mark.parametrize("seed", [0, 1])
def test_deep_nesting_is_refused_quickly_with_a_location(seed):
    """~3,700 nested groups or an unclosed expression nested as deep: a located error (the
    parse is linear; ``bench/query_at.py`` times it)."""
    from cep import CepSyntaxError

    query = QUERIES[seed]
    at = query.rindex("}")
    for text in (query[:at] + "{" * 3700 + " ?a ?b ?c " + "}" * 3700 + query[at:],
                 query[:at] + "FILTER (" + "(" * 3700 + "1" + ")" * 3699 + query[at:]):
        with pytest.raises(CepSyntaxError) as caught:
            compile_query(text)
        assert caught.value.line >= 1 and caught.value.column >= 1


def test_a_query_file_that_is_not_utf8_is_located(tmp_path):
    from rdfcore.locations import TextFileError, read_utf8

    path = tmp_path / "q.rq"
    path.write_bytes("SELECT ?s\nWHERE { ?s ?p \"é".encode() + b"\xff\" }")
    with pytest.raises(TextFileError, match=r"q.rq: line 2, column 17: .* not UTF-8"):
        read_utf8(path, "the query file")
    path.write_bytes(b"\xef\xbb\xbfSELECT")
    assert read_utf8(path) == "SELECT"


# --- stream lines and background files -------------------------------------------------------

STREAM_LINES = [line for name in ("vienna_example_stream.jsonl", "rsep_fig1_stream.jsonl", "stock_example_stream.nt",
                                  "csparql_tollgates_stream.nt")
                for line in (EXAMPLES / name).read_text(encoding="utf-8").splitlines() if line.strip()]
JSONL_LINES = [line for line in STREAM_LINES if line.startswith("{")]
NT_LINES = [line for line in STREAM_LINES if not line.startswith("{")]


@SETTINGS
@given(lines=st.lists(mutated(JSONL_LINES), min_size=1, max_size=20))
def test_driver_jsonl_readers_never_raise(lines):
    """The driver's JSON Lines readers take a line or hand it to Spark's parser (None / SLOW):
    they never raise on any line."""
    import pyarrow as pa

    from cep.io.lineparse import parse_jsonl
    from cep.io.linescan import scan

    lines = [as_read(line) for line in lines]
    for number, line in enumerate(lines, start=1):
        parse_jsonl(line, "s.jsonl", number, {"": "http://example.org/vienna#"}, {})
    scan(pa.array(lines, pa.string()), pa.array(["s.jsonl"] * len(lines), pa.string()),
         {"": "http://example.org/vienna#"}, {})


@SETTINGS
@given(lines=st.lists(mutated(NT_LINES), min_size=1, max_size=20))
def test_driver_tsnt_reader_never_raises(lines):
    import pyarrow as pa

    from cep.io.linescan import scan_tsnt

    lines = [as_read(line) for line in lines]
    scan_tsnt(pa.array(lines, pa.string()), pa.array(["s.nt"] * len(lines), pa.string()), {})


BACKGROUND = {name: (EXAMPLES / name).read_text(encoding="utf-8")
              for name in ("vienna_example.ttl", "csparql_city.ttl", "vienna_schema.ttl")}
NTRIPLES = "\n".join(f"<http://ex/{i}> <http://ex/p> \"v{i}\"@en ." for i in range(5)) + "\n<http://ex/a> a <http://ex/C> .\n"


@settings(max_examples=examples(60, 600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated([*BACKGROUND.values(), NTRIPLES]), suffix=st.sampled_from([".ttl", ".nt"]))
def test_static_loading(tmp_path_factory, text, suffix):
    """``--static`` / ``--background`` files read on the driver: triples and rejects, or an
    ``RDFLoadError`` naming the file (and the line where the parser knows it)."""
    from rdfcore.errors import RDFLoadError
    from rdfcore.sources import load_local

    path = tmp_path_factory.mktemp("bg") / f"background{suffix}"
    path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
    try:
        loaded = load_local([path])
    except RDFLoadError as error:
        assert str(path) in str(error)
        return
    if suffix == ".nt":   # N-Triples: every line is a triple, a reject with its reason, or blank
        assert all(reason for _f, _l, reason, _raw in loaded.rejects)


@pytest.mark.spark
def test_spark_stream_parser_keeps_every_line(spark):
    """Spark's stream parser, the one definition of the formats: every mutated line is an item
    or a reject with its reason; none is lost and none raises."""
    import random

    from cep.io.streams import parse_lines

    rng = random.Random(5)
    rows = []
    for fmt, seeds in (("jsonl", JSONL_LINES), ("nt", NT_LINES)):
        for number in range(1, 301):
            line = mutate(rng.choice(seeds), _Draw(rng=rng))
            rows.append((f"fuzz.{fmt}", number, as_read(line)))
    lines = spark.createDataFrame(rows, "file string, line long, raw string")
    terms, rejects = parse_lines(lines, {"": "http://example.org/vienna#"}, "s")
    accepted = {(f, n) for f, n in terms.select("file", "line").distinct().collect()}
    refused = {(f, n): reason for f, n, reason, _raw in rejects.collect()}
    blank = {(f, n) for f, n, raw in rows if not raw.strip() or raw.lstrip().startswith("#")}
    assert not accepted & set(refused)
    assert all(refused.values())
    assert accepted | set(refused) | blank >= {(f, n) for f, n, _ in rows}
