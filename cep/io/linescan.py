"""The plain lines of a micro-batch, read in one compiled pass (numba) into item columns: JSON
Lines (below) and timestamped N-Triples (``scan_tsnt``: the lines of ``cep.io.tsnt.STRICT``,
read by ``cep.io.tsntscan``'s recogniser instead of Spark's parser; benchmarks:
``docs/benchmarks.md``).

The continuous runtime's driver path (``cep.continuous.runner``) reads most events as lines like
``{"s": ":tram7", "p": ":delayAt", "o": ":stop12", "t": 42}``. ``cep.io.lineparse.parse_jsonl`` parses
one such line in Python (~4 µs: ``json`` plus the term conversion), the largest part of a
100,000-event batch read that way. This module reads a whole batch's Arrow string buffer at once:

* ``_lines`` (compiled) recognises the commonest shape exactly: one JSON object whose keys are
  ``s``, ``p``, ``o``, ``t`` and optionally ``t_end``, each once, in any order, with JSON
  whitespace anywhere JSON allows it; ``s``/``p``/``o`` strings of printable ASCII without
  escapes; ``t``/``t_end`` JSON integers of at most 18 digits. It gives each such line the byte
  spans of its three strings and its two times. Every other line is *slow*: it goes to
  ``parse_jsonl`` (which in turn hands what it cannot parse to Spark), so this module decides
  nothing ``parse_jsonl`` would decide differently — it is a faster road to the same answers
  (``tests/test_cep_linescan.py`` compares them on random and adversarial lines).
* The strings are hashed (with their position, and a blank node with its file, whose scope it
  is); each distinct one is converted once, in Python, by ``parse_jsonl``'s own term function, and
  every span is checked byte for byte against the one converted for its hash, so two strings that
  only hash alike make their line slow instead of sharing a term.
* Item ids are Spark's ``xxhash64(file, line)`` (``cep.io.lineparse.item_id``), computed here.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cep.io.lineparse import cached_term, file_seed, bnode_scope
from cep.io.tsntscan import line_spans
from rdfcore.bytekernels import hash_bytes, jit, same_bytes, xxh64_long
from rdfcore.hashing import term_id

__all__ = ["BLANK", "PLAIN", "SLOW", "INVALID_UTF8", "scan", "scan_tsnt", "item_ids", "with_valid_utf8", "Plain"]

#: what a line is
BLANK, PLAIN, SLOW = 0, 1, 2
_POSITIONS = ("s", "p", "o")
_MAX_DIGITS = 18                  # a JSON integer of at most 18 digits fits an int64
#: the reason a line holding invalid UTF-8 (or U+FFFD, what decoders put for it) is rejected with
#: (``rdfcore.loading.invalid_utf8``, the first check of every format's parser)
INVALID_UTF8 = "invalid UTF-8 byte sequence"


@jit
def _space(d, p, e):
    """The first position at or after ``p`` that is not JSON whitespace (space, tab, LF, CR)."""
    while p < e:
        c = d[p]
        if c != 32 and c != 9 and c != 10 and c != 13:
            return p
        p += 1
    return p


@jit
def _key(d, p, e):
    """The key at ``d[p]`` (after its opening quote) → (which: 0 s, 1 p, 2 o, 3 t, 4 t_end, or
    -1 for any other key, -2 for a malformed one, position after the closing quote)."""
    q = p
    while q < e and d[q] != 34:
        if d[q] == 92:            # a backslash: an escaped key, slow
            return -2, q
        q += 1
    if q >= e:
        return -2, q
    n = q - p
    if n == 1:
        c = d[p]
        if c == 115:
            return 0, q + 1
        if c == 112:
            return 1, q + 1
        if c == 111:
            return 2, q + 1
        if c == 116:
            return 3, q + 1
    elif n == 5 and d[p] == 116 and d[p + 1] == 95 and d[p + 2] == 101 and d[p + 3] == 110 and d[p + 4] == 100:
        return 4, q + 1
    return -1, q + 1


@jit
def _string(d, p, e):
    """The end (the closing quote) of a string of printable ASCII without escapes starting at
    ``d[p]`` (after its opening quote), or -1."""
    while p < e:
        c = d[p]
        if c == 34:
            return p
        if c == 92 or c < 32 or c >= 127:
            return -1
        p += 1
    return -1


@jit
def _line(d, a, e, spans, i, times):
    """One line ``d[a:e]``: its kind; for a plain line its spans and times are filled in."""
    p = _space(d, a, e)
    if p == e:
        return BLANK
    if d[p] != 123:                               # {
        return SLOW
    p = _space(d, p + 1, e)
    seen = 0
    t1 = np.int64(0)
    t2 = np.int64(0)
    while True:
        if p >= e or d[p] != 34:
            return SLOW
        which, p = _key(d, p + 1, e)
        if which < 0 or seen & (1 << which):
            return SLOW
        seen |= 1 << which
        p = _space(d, p, e)
        if p >= e or d[p] != 58:                  # :
            return SLOW
        p = _space(d, p + 1, e)
        if p >= e:
            return SLOW
        if which < 3:
            if d[p] != 34:
                return SLOW
            end = _string(d, p + 1, e)
            if end < 0:
                return SLOW
            spans[i, 2 * which] = p + 1
            spans[i, 2 * which + 1] = end
            p = end + 1
        else:
            negative = d[p] == 45                 # -
            if negative:
                p += 1
            q = p
            value = np.int64(0)
            while q < e and 48 <= d[q] <= 57:
                value = value * 10 + (d[q] - 48)
                q += 1
            digits = q - p
            if digits == 0 or digits > _MAX_DIGITS or (digits > 1 and d[p] == 48):
                return SLOW
            if q < e and (d[q] == 46 or d[q] == 101 or d[q] == 69):     # . e E: not an integer
                return SLOW
            if negative:
                value = -value
            if which == 3:
                t1 = value
            else:
                t2 = value
            p = q
        p = _space(d, p, e)
        if p >= e:
            return SLOW
        if d[p] == 44:                            # ,
            p = _space(d, p + 1, e)
            continue
        if d[p] == 125:                           # }
            p += 1
            break
        return SLOW
    if _space(d, p, e) != e or seen & 15 != 15:
        return SLOW
    if not seen & 16:
        t2 = t1
    elif t2 < t1:
        return SLOW
    times[i, 0] = t1
    times[i, 1] = t2
    return PLAIN


@jit
def _lines(d, offsets):
    """Every JSON line: (kind, spans [n, 6], times [n, 2])."""
    n = len(offsets) - 1
    kind = np.empty(n, np.uint8)
    spans = np.zeros((n, 6), np.int64)
    times = np.zeros((n, 2), np.int64)
    for i in range(n):
        kind[i] = _line(d, offsets[i], offsets[i + 1], spans, i, times)
    return kind, spans, times


@jit
def _hashes(d, spans, files, blank_code):
    """Each span's hash (rows of 3 spans: s, p, o), its position mixed in and, for a blank node
    (``_:``), its line's file code: the same text in two positions or scopes hashes apart."""
    n = len(spans)
    out = np.zeros((n, 3), np.uint64)
    for i in range(n):
        for k in range(3):
            s, t = spans[i, 2 * k], spans[i, 2 * k + 1]
            h = hash_bytes(d, s, t) ^ (np.uint64(k + 1) * np.uint64(0x9E3779B97F4A7C15))
            if t - s >= 2 and d[s] == 95 and d[s + 1] == 58:
                h ^= (np.uint64(files[i]) + np.uint64(1)) * blank_code
            out[i, k] = h
    return out


@jit
def _numbers(d, starts, ends):
    """The decimal numbers ``d[starts[i]:ends[i]]`` (at most 18 digits each)."""
    out = np.zeros(len(starts), np.int64)
    for i in range(len(starts)):
        value = np.int64(0)
        for q in range(starts[i], ends[i]):
            value = value * 10 + (d[q] - 48)
        out[i] = value
    return out


@jit
def _verify(d, starts, ends, files, first, inverse):
    """Whether each span's bytes equal those of its hash's first span (and, for a blank node, its
    file: its scope)."""
    out = np.ones(len(starts), np.bool_)
    for j in range(len(starts)):
        r = first[inverse[j]]
        s, n = starts[j], ends[j] - starts[j]
        if ends[r] - starts[r] != n or not same_bytes(d, s, d, starts[r], n):
            out[j] = False
        elif n >= 2 and d[s] == 95 and d[s + 1] == 58 and files[j] != files[r]:
            out[j] = False
    return out


@jit
def _item_ids(lines, seeds):
    out = np.empty(len(lines), np.int64)
    for i in range(len(lines)):
        out[i] = xxh64_long(lines[i], seeds[i])
    return out


def item_ids(files: pa.Array, lines: np.ndarray) -> np.ndarray:
    """``cep.io.lineparse.item_id`` of every (file, line), as int64."""
    encoded = files.dictionary_encode() if not pa.types.is_dictionary(files.type) else files
    seeds = np.array([file_seed(f) & ((1 << 64) - 1) for f in encoded.dictionary.to_pylist()], np.uint64)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return _item_ids(np.ascontiguousarray(lines, np.int64), seeds[codes] if len(seeds) else np.zeros(0, np.uint64))


class Plain:
    """The plain lines of a scan: ``at`` (their positions among the lines), per position ``s``,
    ``p``, ``o`` the term ids (int64) and terms (Arrow strings, N-Triples), ``t1``, ``t2``."""

    def __init__(self, at, ids, terms, t1, t2):
        self.at, self.ids, self.terms, self.t1, self.t2 = at, ids, terms, t1, t2


def scan(raw: pa.Array, files: pa.Array, prefixes: Mapping[str, str], cache: dict) -> tuple[np.ndarray, Plain]:
    """JSON Lines ``raw`` (strings) of the files ``files`` (one per line): ``(kind, plain)``, kind
    per line (``BLANK``, ``PLAIN``, ``SLOW``; a null line is blank) and the plain lines' items.
    ``cache``: ``parse_jsonl``'s term cache for these ``prefixes``, shared with it."""
    raw, files = _whole(raw), _whole(files)
    offsets, data = _buffers(raw)
    kind, spans, times = _lines(data, offsets)
    return _plain(raw, files, data, kind, spans, times, prefixes, cache)


def scan_tsnt(raw: pa.Array, files: pa.Array, cache: dict) -> tuple[np.ndarray, Plain]:
    """Timestamped N-Triples lines, as ``scan``: the plain ones are those of
    ``cep.io.tsnt.STRICT`` (``cep.io.tsntscan.line_spans`` reads them), whose terms are in
    N-Triples form already; they are canonicalised as Spark's parser does (``cep.io.streams``: a
    literal's language tag in lower case, no ``^^xsd:string``, blank nodes scoped to the file),
    by the same term function as JSON terms (``tests/test_cep_linescan.py`` checks the result
    against Spark's parser). Blank and comment lines are blank; every other line is slow."""
    raw, files = _whole(raw), _whole(files)
    kind, spans8, data = line_spans(raw)
    at = np.nonzero(kind == PLAIN)[0]
    times = np.zeros((len(kind), 2), np.int64)
    ticks = _numbers(data, spans8[at, 6], spans8[at, 7])
    times[at, 0] = times[at, 1] = ticks
    return _plain(raw, files, data, kind, np.ascontiguousarray(spans8[:, :6]), times, {}, cache)


def with_valid_utf8(raw: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``raw`` as valid UTF-8 strings (one array): each invalid byte sequence of a line replaced
    by U+FFFD, as Python's decoder replaces it. Spark hands a string column to Arrow byte for
    byte, so a Kafka message of bad bytes (Spark's text reader's line too) arrives as an Arrow
    string that is not UTF-8, which Python cannot decode (``to_pylist`` raises). With U+FFFD
    instead every parser rejects the line (``INVALID_UTF8``): the compiled scanners take no U+FFFD
    in a plain line, ``cep.io.lineparse`` none at all. Cost: one validation pass over the bytes
    (Arrow's, vectorised; 0.4 ms for 20,000 lines) when every line is valid, the common case,
    which returns the lines as they are; otherwise the lines holding a byte above 0x7F are decoded
    one by one in Python."""
    raw = _whole(raw)
    try:
        raw.validate(full=True)
        return raw
    except pa.ArrowInvalid:
        pass
    offsets, data = _buffers(raw)
    high = np.flatnonzero(data[offsets[0]:offsets[-1]] >= 0x80) + offsets[0]
    rows = np.unique(np.searchsorted(offsets, high, side="right") - 1)
    binary = raw.view(pa.large_binary() if pa.types.is_large_string(raw.type) else pa.binary())
    bad, fixed = np.zeros(len(raw), np.bool_), []
    for i in rows.tolist():
        line = binary[i].as_py()
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            bad[i] = True
            fixed.append(line.decode("utf-8", errors="replace").encode("utf-8"))
    return pc.replace_with_mask(binary, pa.array(bad), pa.array(fixed, binary.type)).view(raw.type)


def _whole(array):
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def _buffers(raw: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    large = pa.types.is_large_string(raw.type)
    width, kind_ = (8, np.int64) if large else (4, np.int32)
    offsets = np.frombuffer(raw.buffers()[1], kind_, len(raw) + 1, raw.offset * width).astype(np.int64)
    buffer = raw.buffers()[2]
    data = np.frombuffer(buffer, np.uint8) if buffer is not None and buffer.size else np.zeros(1, np.uint8)
    return offsets, data


def _plain(raw, files, data, kind, spans, times, prefixes, cache) -> tuple[np.ndarray, Plain]:
    """The plain lines' items from their spans (s, p, o) and times: each distinct string
    converted once (module doc); a line with a term the conversion refuses, or with a string that
    only hashes like another, becomes slow."""
    if raw.null_count:
        kind[np.asarray(raw.is_null())] = BLANK
    encoded = files.dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    names = encoded.dictionary.to_pylist()
    at = np.nonzero(kind == PLAIN)[0]
    hashes = _hashes(data, np.ascontiguousarray(spans[at]), codes[at], np.uint64(0xC2B2AE3D27D4EB4F))
    ids, terms, ok = {}, {}, np.ones(len(at), np.bool_)
    for k, position in enumerate(_POSITIONS):
        starts, ends = spans[at, 2 * k], spans[at, 2 * k + 1]
        _unique, first, inverse = np.unique(hashes[:, k], return_index=True, return_inverse=True)
        inverse = inverse.ravel().astype(np.int64)
        ok &= _verify(data, starts, ends, codes[at], first, inverse)
        texts = [bytes(data[starts[j]:ends[j]]).decode("utf-8") for j in first.tolist()]
        converted = [cached_term(text, position, prefixes, bnode_scope(names[codes[at[j]]]), cache)
                     for text, j in zip(texts, first.tolist())]
        known = np.array([t is not None for t in converted], np.bool_)
        ok &= known[inverse]
        ids[position] = np.array([term_id(t) if t is not None else 0 for t in converted], np.int64)[inverse]
        terms[position] = (pa.array(converted, pa.string()), inverse)
    if not ok.all():        # a term parse_jsonl would not take as it is, or strings only hashing alike
        kind[at[~ok]] = SLOW
        at = at[ok]
        ids = {c: v[ok] for c, v in ids.items()}
        terms = {c: (table, inverse[ok]) for c, (table, inverse) in terms.items()}
    strings = {c: table.take(pa.array(inverse, pa.int64())) for c, (table, inverse) in terms.items()}
    return kind, Plain(at, ids, strings, times[at, 0], times[at, 1])
