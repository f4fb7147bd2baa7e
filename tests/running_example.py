"""DESIGN.md's running example (CQELS-CEP Example 6): the query is the file the product ships,
``ontologies/vienna_example_query.rq`` (the demo's and README's), read here — the tests keep no copy
of its text."""
from __future__ import annotations

from pathlib import Path

#: The shipped query file.
EXAMPLE_6_PATH = Path(__file__).resolve().parent.parent / "ontologies" / "vienna_example_query.rq"
#: Its namespaces: ``:`` (stops, connections, :delayAt, ...) and ``ex:`` (the map and the stream).
VIENNA = "http://example.org/vienna#"
EXAMPLE_ORG = "http://example.org/"
TRANSPORTATION_MAP = f"<{EXAMPLE_ORG}transportationMap>"
PUBLIC_TRANSPORT = f"<{EXAMPLE_ORG}publicTransport>"


def example_6_query() -> str:
    """The text of CQELS-CEP Example 6 with the prefixes the paper leaves out."""
    return EXAMPLE_6_PATH.read_text(encoding="utf-8")


EXAMPLE_6 = example_6_query()


# --- malformed stream lines (issue 59) -----------------------------------------------------------

#: the reason of a line that is not UTF-8 (or holds U+FFFD), whatever its format
INVALID_UTF8 = "invalid UTF-8 byte sequence"
_A1, _DELAY, _M = f"<{VIENNA}a1>".encode(), f"<{VIENNA}delayAt>".encode(), f"<{VIENNA}m>".encode()


def _event(s: bytes = _A1, p: bytes = _DELAY, o: bytes = _M, t: bytes = b"11", rest: bytes = b"}") -> bytes:
    return b'{"s": "' + s + b'", "p": "' + p + b'", "o": "' + o + b'", "t": ' + t + rest


#: Lines no engine may load, as a producer might send them, each with (the start of) the reason
#: the stream parser gives for it in a JSON Lines stream: invalid UTF-8 inside a term and alone,
#: U+FFFD (what a decoder put for bad bytes), a NUL byte, broken JSON, timestamps that are no
#: integer, a blank node as predicate, ``t_end`` before ``t``, and a 5 MB line whose one bad byte
#: is at its end. Their terms are the example's IRIs (no prefix needed): loaded, they would change
#: its answer.
MALFORMED_LINES = [
    (_event(s=_A1[:-1] + b"\xff\xfe>"), INVALID_UTF8),
    (b"\xc3", INVALID_UTF8),
    (_event(o=_M[:-1] + "\ufffd>".encode()), INVALID_UTF8),
    (_event(o=_M[:-1] + b"\x00>"), "bad JSON"),
    (_event(rest=b""), "bad JSON"),
    (_event(t=b'"ten"'), "bad timestamp in 't'"),
    (_event(t=b"1e400"), "bad timestamp in 't'"),
    (_event(t=b"12.5"), "bad timestamp in 't'"),
    (_event(t=b"true"), "bad timestamp in 't'"),
    (_event(p=b"_:b"), "p: expected an IRI"),
    (_event(t=b"13", rest=b', "t_end": 12}'), "t_end (12) is before t (13)"),
    (_event(o=b'\\"' + b"x" * (5 << 20) + b'\xff\\"'), INVALID_UTF8),
]


def with_malformed_lines(good: list[str], malformed=MALFORMED_LINES) -> tuple[bytes, dict[int, str]]:
    """A stream file's bytes: the lines ``good`` with the ``malformed`` ones spread between them
    (after each good line its share, in order; all of them when there is no good line), and
    ``{line number: reason}`` of the malformed."""
    lines, reasons = [], {}
    shares = [malformed[i::len(good)] for i in range(len(good))] if good else [malformed]
    for line, share in zip([*good] or [None], shares):
        if line is not None:
            lines.append(line.encode("utf-8"))
        for bad, reason in share:
            lines.append(bad)
            reasons[len(lines)] = reason
    return b"\n".join(lines) + b"\n", reasons


def raw_bytes_source(stream: str, directory, data: bytes):
    """A source that hands the engines each line of ``data`` as Kafka does a message: a Spark
    string holding its bytes as they are (invalid UTF-8 included), numbered by the source (its
    "offset" is its line number in ``data``; its "file" ``kafka:raw/0``). A ``KafkaSource`` (the
    engines treat it as one) over a directory whose one file holds ``NNNNNNNNNN raw bytes`` lines."""
    from dataclasses import dataclass
    from pathlib import Path

    from pyspark.sql import functions as F

    from cep.continuous.sources import KafkaSource
    from cep.continuous.state import STREAM
    from rdfcore.schema import FILE, LINE, RAW

    @dataclass(frozen=True)
    class RawBytes(KafkaSource):
        directory: str = ""

        def lines(self, spark):
            value = F.col("value")
            return spark.readStream.format("text").load(self.directory).select(
                F.expr("substr(value, 12)").alias(RAW), F.lit("kafka:raw/0").alias(FILE),
                F.substring(value, 1, 10).cast("long").alias(LINE), F.lit(self.stream).alias(STREAM))

    Path(directory).mkdir(parents=True, exist_ok=True)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    (Path(directory) / "messages.txt").write_bytes(b"".join(b"%010d " % n + line + b"\n"
                                                            for n, line in enumerate(lines, 1)))
    return RawBytes(stream, "none:0", "raw", directory=str(directory))
