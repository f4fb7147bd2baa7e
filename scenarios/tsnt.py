"""Timestamped N-Triples in bulk on the driver: the plain lines split by pyarrow kernels, the rest to Spark.

A streaming service that classifies a million triples a second cannot afford a regular expression
per line in Python, nor Spark's per-batch planning for what is a column scan. Most stream lines are
plain: ``<s> <p> <o> "1000" .`` with single spaces, IRIs and blank nodes without escapes, simple
literals, an integer timestamp. :data:`STRICT` matches exactly those (RE2, vectorised over a whole
chunk); for them :func:`type_hits` takes subject, predicate, object and timestamp apart by
offsets into the lines' own bytes (numpy finds the spaces; nothing is copied but the terms it
compares and returns). Every other non-blank line — escapes, tabs, comments, ISO timestamps, anything malformed —
is returned as *slow*: the caller hands it to ``cep.streams.parse_lines``, the one definition of the
format, which accepts it or rejects it with its reason. So this module never rejects a line, and
for every line it accepts it gives what ``parse_lines`` gives (``tests/test_tracheobionta.py``
compares the two on random and tricky lines).

Timestamped N-Triples files are mapped into memory and cut at their line feeds
(:func:`read_terminated`: no copy, no parse). Other files, and files holding a CR, are read with
pyarrow's CSV reader set to one column and no quoting (:func:`read_lines`; multi-threaded C++,
bounded memory: one block at a time). Lines end at LF, CR or CRLF, as Spark's text reader
has them, and are numbered from 1 per file. A file the CSV reader refuses (a byte 0x01, taken as
a second column, or invalid UTF-8) is read line by line in Python instead; bad bytes become U+FFFD,
which the Spark parser rejects as invalid UTF-8.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["STRICT", "BLOCK_BYTES", "read_lines", "read_terminated", "Hits", "type_hits"]

_IRI = r'<[^<>"{}|^`\\\x00-\x20\x{FFFD}]*>'
_BNODE = r"_:[A-Za-z0-9_\-](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?"
_LITERAL = r'"[^"\\\n\r\x{FFFD}]*"(?:@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*|\^\^' + _IRI + ")?"
# an integer timestamp that fits a long whatever its digits (at most 18), no sign, no leading zero
_STAMP = r'"(?:0|[1-9][0-9]{0,17})"(?:\^\^' + _IRI + ")?"
#: the plain lines: single spaces between the parts, an optional dot before or after the timestamp
STRICT = rf"^(?:{_IRI}|{_BNODE}) {_IRI} (?:{_IRI}|{_BNODE}|{_LITERAL}) (?:\. )?{_STAMP}(?: ?\.)?\n?$"
_BLANK_OR_COMMENT = r"^[ \t]*(?:#[^\n]*)?\n?$"
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


def read_terminated(path: str | Path, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, pa.Array]]:
    """The lines of a file in chunks, as :func:`read_lines` numbers them, each line but perhaps the
    file's last with its LF still on: a chunk is a slice of the file mapped into memory, with
    offsets at its line feeds (found by numpy), so no byte is copied or parsed on the way (the file
    must not shrink while it is read: a stream file is complete when the source lists it).
    :data:`STRICT` and :func:`type_hits` take a line with or without its LF alike. A chunk holding
    a CR (a line ending of its own) or invalid UTF-8 hands the file, from that chunk's first line,
    to :func:`read_lines`."""
    import mmap

    path = Path(path)
    first = 1
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if not size:
            return
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(data)
    position = 0
    while position < size:
        cut = size
        if position + block_bytes < size:
            cut = data.rfind(b"\n", position, position + block_bytes) + 1
            if cut <= position:           # a line longer than the block: to its end
                cut = data.find(b"\n", position + block_bytes) + 1 or size
        body = view[position:cut]
        lines = None
        if data.find(b"\r", position, cut) < 0:
            feeds = np.flatnonzero(np.frombuffer(body, np.uint8) == 10)
            ends = feeds + 1
            if not len(ends) or ends[-1] != len(body):      # the file's last line, with no LF
                ends = np.append(ends, len(body))
            offsets = np.concatenate(([0], ends)).astype(np.int32)
            lines = pa.StringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(body))
            try:
                lines.validate(full=True)
            except pa.ArrowInvalid:
                lines = None
        if lines is None:
            for start, chunk in read_lines(path):
                stop = start + len(chunk)
                if stop > first:
                    yield first, chunk.slice(first - start) if first > start else chunk
                    first = stop
            return
        yield first, lines
        first += len(lines)
        position = cut


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
    read. Blank nodes are returned as written (the caller scopes them to their file). A line may
    end with its LF (:func:`read_terminated`)."""
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    strict = pc.match_substring_regex(lines, STRICT)
    at = np.flatnonzero(strict.to_numpy(zero_copy_only=False))
    # every plain line splits at its first three spaces into subject, predicate, object and the
    # timestamp's part: no term holds a space except a literal object, which is never a class. The
    # parts are cut by offsets into the lines' own bytes (``_fields``), not copied out of them
    fields = _fields(lines, at)
    step = np.arange(len(at), dtype=np.int64) * _PARTS
    predicate = fields.take(pa.array(step + 2))
    typed = pc.equal(predicate, predicates[0]) if len(predicates) == 1 else pc.is_in(predicate, value_set=predicates)
    candidates = np.flatnonzero(typed.to_numpy(zero_copy_only=False))
    objects = fields.take(pa.array(step[candidates] + 4))
    keep = candidates[np.flatnonzero(pc.is_in(objects, value_set=classes).to_numpy(zero_copy_only=False))]
    rows = step[keep]
    stamps = pc.extract_regex(fields.take(pa.array(rows + 6)), _TICKS).field("t")
    slow = np.empty(0, np.int64)
    if len(at) < len(lines):
        loose = pc.invert(strict)
        loose = pc.and_(loose, pc.invert(pc.match_substring_regex(lines, _BLANK_OR_COMMENT)))
        slow = np.flatnonzero(loose.to_numpy(zero_copy_only=False))
    return Hits(index=pa.array(at[keep]), subject=fields.take(pa.array(rows)), klass=fields.take(pa.array(rows + 4)),
                ticks=stamps, slow=pa.array(slow))


#: the values ``_fields`` cuts a plain line into: subject, space, predicate, space, object, space,
#: and the rest (the timestamp's part, and what follows up to the next plain line)
_PARTS = 7


def _fields(lines: pa.Array, at: np.ndarray) -> pa.Array:
    """The plain lines ``at`` of ``lines`` cut at their first three spaces: ``_PARTS`` values a
    line, over the lines' own data buffer (new offsets, no bytes copied)."""
    large = pa.types.is_large_string(lines.type)       # Spark's Arrow batches (Kafka)
    kind, width = (np.int64, 8) if large else (np.int32, 4)
    offsets = np.frombuffer(lines.buffers()[1], kind, len(lines) + 1, lines.offset * width)
    data = lines.buffers()[2]
    if not len(at):
        return pa.array([], lines.type)
    starts = offsets[at]
    low, high = int(starts[0]), int(offsets[at[-1] + 1])
    spaces = np.flatnonzero(np.frombuffer(data, np.uint8, high - low, low) == 32).astype(kind) + low
    k = np.searchsorted(spaces, starts)
    cuts = np.empty(_PARTS * len(at) + 1, kind)
    cuts[0:-1:_PARTS] = starts
    for i in range(3):
        cuts[1 + 2 * i::_PARTS] = spaces[k + i]
        cuts[2 + 2 * i::_PARTS] = spaces[k + i] + 1
    cuts[-1] = high
    build = pa.LargeStringArray if large else pa.StringArray
    return build.from_buffers(_PARTS * len(at), pa.py_buffer(cuts), data)
