"""Timestamped N-Triples in bulk on the driver: the plain lines read by a compiled scanner, the rest to Spark.

A streaming service that classifies a million triples a second cannot afford a regular expression
per line in Python, nor Spark's per-batch planning for what is a column scan. Most stream lines are
plain: ``<s> <p> <o> "1000" .`` with single spaces, IRIs and blank nodes without escapes, simple
literals, an integer timestamp. :data:`STRICT` defines exactly those (an RE2 expression); the
compiled scanner of :mod:`cep.io.tsntscan` recognises the same language byte by byte, in one
pass that also looks up predicate and object and cuts subject and timestamp out of the lines' own
bytes (``tests/test_tracheobionta.py`` runs it against the expression). Every other non-blank line
— escapes, tabs, comments, ISO timestamps, anything malformed — is returned as *slow*: the caller
hands it to ``cep.io.streams.parse_lines``, the one definition of the format, which accepts it or
rejects it with its reason. So this module never rejects a line, and for every line it accepts it
gives what ``parse_lines`` gives (the tests compare the two on random and tricky lines).

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

from cep.io.lineparse import TSNT_STRICT as STRICT
from cep.io.tsntscan import SLOW, TermSet, scan

__all__ = ["STRICT", "BLOCK_BYTES", "read_lines", "read_terminated", "Hits", "TermSet", "type_hits"]

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


def type_hits(lines: pa.Array, predicates: pa.Array | TermSet, classes: pa.Array | TermSet) -> Hits:
    """The plain lines of ``lines`` whose predicate is one of ``predicates`` and whose object one
    of ``classes`` (N-Triples terms; pass :class:`~cep.io.tsntscan.TermSet` s to build their
    hash tables once), and the positions of the lines only the full parser can read. Blank nodes
    are returned as written (the caller scopes them to their file). A line may end with its LF
    (:func:`read_terminated`). One compiled pass over the lines' bytes (:mod:`cep.io.tsntscan`)."""
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    predicates = predicates if isinstance(predicates, TermSet) else TermSet(predicates)
    classes = classes if isinstance(classes, TermSet) else TermSet(classes)
    kind, (at, subject, klass, ticks) = scan(lines, predicates, classes)
    return Hits(index=pa.array(at), subject=subject, klass=klass, ticks=ticks,
                slow=pa.array(np.flatnonzero(kind == SLOW)))
