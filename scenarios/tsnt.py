"""Timestamped N-Triples in bulk on the driver: the plain lines split by pyarrow kernels, the rest to Spark.

A streaming service that classifies a million triples a second cannot afford a regular expression
per line in Python, nor Spark's per-batch planning for what is a column scan. Most stream lines are
plain: ``<s> <p> <o> "1000" .`` with single spaces, IRIs and blank nodes without escapes, simple
literals, an integer timestamp. :data:`STRICT` matches exactly those (RE2, vectorised over a whole
chunk); for them :func:`type_hits` takes subject, predicate, object and timestamp apart with string
kernels. Every other non-blank line — escapes, tabs, comments, ISO timestamps, anything malformed —
is returned as *slow*: the caller hands it to ``cep.streams.parse_lines``, the one definition of the
format, which accepts it or rejects it with its reason. So this module never rejects a line, and
for every line it accepts it gives what ``parse_lines`` gives (``tests/test_tracheobionta.py``
compares the two on random and tricky lines).

Files are read with pyarrow's CSV reader set to one column and no quoting (multi-threaded C++,
bounded memory: one block at a time). Lines end at LF, CR or CRLF, as Spark's text reader
has them, and are numbered from 1 per file. A file the CSV reader refuses (a byte 0x01, taken as
a second column, or invalid UTF-8) is read line by line in Python instead; bad bytes become U+FFFD,
which the Spark parser rejects as invalid UTF-8.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["STRICT", "BLOCK_BYTES", "read_lines", "Hits", "type_hits"]

_IRI = r'<[^<>"{}|^`\\\x00-\x20\x{FFFD}]*>'
_BNODE = r"_:[A-Za-z0-9_\-](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?"
_LITERAL = r'"[^"\\\n\r\x{FFFD}]*"(?:@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*|\^\^' + _IRI + ")?"
# an integer timestamp that fits a long whatever its digits (at most 18), no sign, no leading zero
_STAMP = r'"(?:0|[1-9][0-9]{0,17})"(?:\^\^' + _IRI + ")?"
#: the plain lines: single spaces between the parts, an optional dot before or after the timestamp
STRICT = rf"^(?:{_IRI}|{_BNODE}) {_IRI} (?:{_IRI}|{_BNODE}|{_LITERAL}) (?:\. )?{_STAMP}(?: ?\.)?$"
_BLANK_OR_COMMENT = r"^[ \t]*(?:#.*)?$"
_TICKS = r'^(?:\. )?"(?P<t>[0-9]+)"'
#: bytes of a file per chunk (pyarrow's CSV block)
BLOCK_BYTES = 1 << 22


def read_lines(path: str | Path, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, pa.Array]]:
    """The lines of a file in chunks: ``(number of the chunk's first line, lines)`` (module doc)."""
    import pyarrow.csv as pcsv

    path = Path(path)
    if path.stat().st_size == 0:
        return
    first = 1
    try:
        reader = pcsv.open_csv(
            str(path),
            read_options=pcsv.ReadOptions(column_names=["line"], block_size=block_bytes, use_threads=True),
            parse_options=pcsv.ParseOptions(delimiter="\x01", quote_char=False, escape_char=False,
                                            newlines_in_values=False, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(column_types={"line": pa.string()}, strings_can_be_null=False,
                                                quoted_strings_can_be_null=False))
        for batch in reader:
            yield first, batch.column(0)
            first += batch.num_rows
        return
    except (pa.ArrowInvalid, UnicodeDecodeError):
        pass
    # refused at some block: the rest of the file (from the first line not yet handed out) in Python
    for start, lines in _python_lines(path):
        end = start + len(lines)
        if end > first:
            yield first, lines.slice(first - start) if first > start else lines
            first = end


def _python_lines(path: Path) -> Iterator[tuple[int, pa.Array]]:
    data = path.read_bytes()
    parts = re.split(rb"\r\n|\r|\n", data)
    if parts and parts[-1] == b"":
        parts.pop()
    step = 1 << 18
    for start in range(0, len(parts), step):
        chunk = [p.decode("utf-8", errors="replace") for p in parts[start:start + step]]
        yield start + 1, pa.array(chunk, pa.string())


@dataclass(frozen=True)
class Hits:
    """What :func:`type_hits` found in a chunk: ``index`` (positions in the chunk) of the lines whose
    triple types its subject with a class of the set, with ``subject``, ``klass`` (the streamed class)
    and ``ticks`` (digit strings); ``slow``: positions of the lines for the full parser."""

    index: pa.Array
    subject: pa.Array
    klass: pa.Array
    ticks: pa.Array        # the timestamps' digits (strings: plain, at most 18 digits, no sign)
    slow: pa.Array


def type_hits(lines: pa.Array, predicates: pa.Array, classes: pa.Array) -> Hits:
    """The plain lines of ``lines`` whose predicate is one of ``predicates`` and whose object one
    of ``classes`` (N-Triples terms), and the positions of the lines only the full parser can
    read. Blank nodes are returned as written (the caller scopes them to their file)."""
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    strict = pc.match_substring_regex(lines, STRICT)
    at = pc.indices_nonzero(strict)
    # every plain line splits into subject, predicate, object and the timestamp's part; no term
    # holds a space except a literal object, which is never a class (a pre-filter on the
    # predicate's text costs more than it saves)
    parts = pc.split_pattern(pc.take(lines, at), " ", max_splits=3)
    predicate, obj = pc.list_element(parts, 1), pc.list_element(parts, 2)
    typed = pc.equal(predicate, predicates[0]) if len(predicates) == 1 else pc.is_in(predicate, value_set=predicates)
    keep = pc.indices_nonzero(pc.and_(typed, pc.is_in(obj, value_set=classes)))
    parts = pc.take(parts, keep)
    stamps = pc.extract_regex(pc.list_element(parts, 3), _TICKS).field("t")
    loose = pc.invert(strict)
    if pc.any(loose).as_py():
        loose = pc.and_(loose, pc.invert(pc.match_substring_regex(lines, _BLANK_OR_COMMENT)))
    return Hits(index=pc.take(at, keep), subject=pc.list_element(parts, 0), klass=pc.list_element(parts, 2),
                ticks=stamps, slow=pc.indices_nonzero(loose))
