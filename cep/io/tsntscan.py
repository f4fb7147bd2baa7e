"""The plain-line scanner of :mod:`cep.io.tsnt`, compiled (numba): one pass over a chunk's bytes.

A line is read once, byte by byte, by a hand-written recogniser of exactly the language of
:data:`cep.io.tsnt.STRICT` (the regular expression stays the definition, and the test oracle:
``tests/test_tracheobionta.py`` runs both on random and adversarial lines). For a plain line the
recogniser knows where its terms start and end, so the same pass looks its predicate up in the
typing predicates and, when it is one, its object in the class set (open-addressing hash tables
over the terms' bytes, built once per class set: :class:`TermSet`), and keeps the subject and the
timestamp's digits of the hits. Each line is one of: blank or comment, plain (a hit or not), or
*slow* (for the full parser). The kernels release the GIL, so the service's threads scan chunks
side by side.

Why compiled: as pyarrow kernels the same work costs ~0.6 µs a line in five passes (an RE2 match
of the whole line, ~1.8 ns a byte; numpy splitting at spaces; a hash set of the 42,007 classes
rebuilt for every chunk by ``is_in``; takes; a timestamp regex), the larger part of the service's
time per line. Numba compiles the kernels on first use and caches them beside this file
(or, read from a zip, in the user's cache directory); only the services that import this module
load numba.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from rdfcore.bytekernels import hash_bytes, jit, same_bytes, word

__all__ = ["BLANK", "PLAIN", "SLOW", "TermSet", "scan", "json_answers", "line_spans"]

#: what a line is
BLANK, PLAIN, SLOW = 0, 1, 2


def _classes(end: str, bad: str, ranges=()) -> np.ndarray:
    """A byte's class inside a term: 0 ordinary, 1 the closing byte, 2 not allowed, 3 above 0x7F:
    the first of a UTF-8 sequence, checked whole (``_utf8``: a term holds valid UTF-8 and no U+FFFD,
    which the expression excludes and which is what Spark's regular expressions see for bad bytes)."""
    out = np.zeros(256, np.uint8)
    out[0x80:] = 3
    for c in bad:
        out[ord(c)] = 2
    for lo, hi in ranges:
        out[lo:hi + 1] = 2
    out[ord(end)] = 1
    return out


def _set(chars: str = "", ranges=()) -> np.ndarray:
    out = np.zeros(256, np.bool_)
    for c in chars:
        out[ord(c)] = True
    for lo, hi in ranges:
        out[ord(lo):ord(hi) + 1] = True
    return out


_IRI = _classes(">", '<"{}|^`\\', [(0x00, 0x20)])
_LITERAL = _classes('"', "\\\n\r")
_ALPHA = _set("", [("a", "z"), ("A", "Z")])
_ALNUM = _ALPHA | _set("", [("0", "9")])
_BN_FIRST = _ALNUM | _set("_-")
_BN_REST = _BN_FIRST | _set(".")
_LONG = 0xFFFF
_AHEAD = 16        # lookups between a slot's prefetch and its use


@intrinsic
def _copy(typingctx, out, to, array, at, n):
    """``out[to:to + n] = array[at:at + n]`` as one memcpy (uint8 arrays)."""
    def codegen(context, builder, signature, args):
        target = context.make_array(signature.args[0])(context, builder, args[0]).data
        source = context.make_array(signature.args[2])(context, builder, args[2]).data
        cgutils.raw_memcpy(builder, builder.gep(target, [args[1]]), builder.gep(source, [args[3]]), args[4], 1)
        return context.get_dummy_value()
    return types.none(out, to, array, at, n), codegen


class TermSet:
    """N-Triples terms in an open-addressing hash table over their UTF-8 bytes, for the scanner:
    built once (per closure version) and shared by every chunk. A slot is one uint64: the term's
    offset in ``data`` (32 bits), its length (16 bits) and 16 bits of its hash, so a probe reads
    a term's bytes only when length and hash bits agree; a term of 65,535 bytes or more has that
    length field full and its true length in the 8 bytes before it."""

    def __init__(self, terms: pa.Array):
        terms = terms.combine_chunks() if isinstance(terms, pa.ChunkedArray) else terms
        self.terms = terms
        parts, starts, lengths, at = [], [], [], 0
        for term in terms.to_pylist():
            raw = term.encode("utf-8")
            if len(raw) >= _LONG:
                parts.append(len(raw).to_bytes(8, "little"))
                at += 8
            parts.append(raw)
            starts.append(at)
            lengths.append(len(raw))
            at += len(raw)
        if at >= 1 << 32:
            raise ValueError(f"a set of {len(terms):,} terms holds {at:,} bytes: more than the scanner's 4 GiB")
        self.data = np.frombuffer(b"".join(parts) + bytes(8), np.uint8)    # 8 bytes more: whole-word reads
        size = 8
        while size < 2 * len(starts):
            size *= 2
        self.slots = _build(self.data, np.array(starts, np.int64), np.array(lengths, np.int64), size)

    def __len__(self) -> int:
        return len(self.terms)


def scan(lines: pa.Array, predicates: TermSet, classes: TermSet):
    """``(kind, hits)``: per line its kind (``BLANK``, ``PLAIN``, ``SLOW``: uint8 array), and the
    hits (plain lines typed by a predicate of the set with a class of the set) as
    ``(positions, subjects, classes, tick digits)`` (numpy, then Arrow strings). A null
    line is blank (nothing to read)."""
    kind, at, spans, data = _scan(lines, predicates, classes)
    return kind, (at, _strings(data, spans[:, 0], spans[:, 1]), _strings(data, spans[:, 2], spans[:, 3]),
                  _strings(data, spans[:, 4], spans[:, 5]))


def json_answers(lines: pa.Array, numbers: int | np.ndarray, predicates: TermSet, classes: TermSet, head: str,
                 middle: str, tail: str, blank_prefix: str) -> tuple[np.ndarray, pa.Array]:
    """``(kind, answers)``: :func:`scan`'s kinds, and the hits written as the JSON lines of the
    Tracheobionta service (``scenarios.membership._Answers.build``'s format), one string each
    ending with LF: ``{"subject":"S","class":"C","t":T`` + ``middle`` + the line's number +
    ``tail``. ``numbers``: the first line's number, or every line's (Kafka offsets); ``head``
    (``{"subject":"``), ``middle`` (the file's part up to ``"line":``), ``tail`` (the rest);
    ``blank_prefix`` replaces a blank-node subject's ``_:`` (the file's scope). A plain line's
    terms need no JSON escape: its IRIs hold no quote, backslash or control character."""
    kind, at, spans, data = _scan(lines, predicates, classes)
    if isinstance(numbers, (int, np.integer)):
        numbers = at + int(numbers)
    else:
        numbers = np.asarray(numbers, np.int64)[at]
    pieces = [np.frombuffer(x.encode("utf-8"), np.uint8)
              for x in (head, '","class":"', '","t":', middle, tail, blank_prefix)]
    offsets, body = _json(data, spans, numbers, *pieces)
    return kind, pa.StringArray.from_buffers(len(at), pa.py_buffer(offsets), pa.py_buffer(body))


def line_spans(lines: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(kind, spans, data)``: every line's kind (``BLANK``, ``PLAIN``, ``SLOW``; a null line is
    blank) and, for a plain line, the offsets into ``data`` (the lines' bytes) of its subject,
    predicate, object (start, end each) and its timestamp's digits: rows of 8."""
    offsets, data = _buffers(lines)
    kind, spans = _all_lines(data, offsets)
    if lines.null_count:
        kind[np.asarray(lines.is_null())] = BLANK
    return kind, spans, data


def _buffers(lines: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string array's offsets (int64) and bytes."""
    large = pa.types.is_large_string(lines.type)
    kind_, width = (np.int64, 8) if large else (np.int32, 4)
    offsets = np.frombuffer(lines.buffers()[1], kind_, len(lines) + 1, lines.offset * width).astype(np.int64)
    buffer = lines.buffers()[2]
    data = np.frombuffer(buffer, np.uint8) if buffer is not None and buffer.size else np.zeros(1, np.uint8)
    return offsets, data


def _scan(lines: pa.Array, predicates: TermSet, classes: TermSet):
    offsets, data = _buffers(lines)
    kind, at, spans = _lines(data, offsets, predicates.data, predicates.slots, classes.data, classes.slots)
    if lines.null_count:
        kind[np.asarray(lines.is_null())] = BLANK
        keep = np.asarray(lines.is_valid())[at]
        at, spans = at[keep], spans[keep]
    return kind, at, spans, data


def _strings(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """The byte ranges as a new string array (the terms are copied out: a few dozen bytes a hit)."""
    offsets = np.zeros(len(starts) + 1, np.int32)
    np.cumsum(ends - starts, out=offsets[1:])
    return pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets),
                                       pa.py_buffer(_gather(data, starts, ends, int(offsets[-1]))))


@jit
def _utf8(d, p, e):
    """The length of the UTF-8 sequence starting at ``d[p]`` (a byte above 0x7F), or 0 when it is
    not one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut short)
    or is U+FFFD."""
    c = d[p]
    if c < 0xC2 or c > 0xF4:
        return 0
    n = 2 if c < 0xE0 else (3 if c < 0xF0 else 4)
    if p + n > e:
        return 0
    lo, hi = 0x80, 0xBF
    if c == 0xE0:
        lo = 0xA0
    elif c == 0xED:
        hi = 0x9F
    elif c == 0xF0:
        lo = 0x90
    elif c == 0xF4:
        hi = 0x8F
    if d[p + 1] < lo or d[p + 1] > hi:
        return 0
    for k in range(2, n):
        if d[p + k] < 0x80 or d[p + k] > 0xBF:
            return 0
    if c == 0xEF and d[p + 1] == 0xBF and d[p + 2] == 0xBD:
        return 0
    return n


@jit
def _until(d, p, e, classes):
    """From ``p`` (after a term's opening byte): the position after its closing byte, or -1."""
    while p < e:
        k = classes[d[p]]
        if k == 0:
            p += 1
        elif k == 1:
            return p + 1
        elif k == 3:
            n = _utf8(d, p, e)
            if n == 0:
                return -1
            p += n
        else:
            return -1
    return -1


@jit
def _iri(d, p, e):                # d[p] == '<'
    return _until(d, p + 1, e, _IRI)


@jit
def _bnode(d, p, e):              # d[p] == '_'
    if p + 2 >= e or d[p + 1] != 58 or not _BN_FIRST[d[p + 2]]:
        return -1
    q = p + 3
    while q < e and _BN_REST[d[q]]:
        q += 1
    return -1 if d[q - 1] == 46 else q


@jit
def _run(d, p, e, chars):
    """The position after the run of ``chars`` starting at ``p``, or -1 when the run is empty."""
    q = p
    while q < e and chars[d[q]]:
        q += 1
    return q if q > p else -1


@jit
def _literal(d, p, e):            # d[p] == '"'
    q = _until(d, p + 1, e, _LITERAL)
    if q < 0 or q >= e:
        return q
    if d[q] == 64:                                   # @lang(-sub)*
        q = _run(d, q + 1, e, _ALPHA)
        while 0 <= q < e and d[q] == 45:
            q = _run(d, q + 1, e, _ALNUM)
    elif d[q] == 94 and q + 1 < e and d[q + 1] == 94:
        return _iri(d, q + 2, e) if q + 2 < e and d[q + 2] == 60 else -1
    return q


@jit
def _term(d, p, e, literals):
    if p >= e:
        return -1
    c = d[p]
    if c == 60:
        return _iri(d, p, e)
    if c == 95:
        return _bnode(d, p, e)
    if c == 34 and literals:
        return _literal(d, p, e)
    return -1


@jit
def _mark(h):
    return np.int64(h >> np.uint64(48))


@jit
def _probe(d, s, e, h, tdata, slots, compare):
    """The slot of the term ``d[s:e]`` (hash ``h``) in the set, or -1 when it is not there.
    Without ``compare``: the first slot whose length and hash bits agree (what to prefetch)."""
    mask = np.uint64(len(slots) - 1)
    slot = h & mask
    n = e - s
    want = (_mark(h) << 48) | (min(n, _LONG) << 32)
    while True:
        entry = slots[slot]
        if entry == 0:
            return -1
        if entry & np.int64(-(1 << 32)) == want:
            if not compare:
                return np.int64(slot)
            at = entry & 0xFFFFFFFF
            if (n < _LONG or np.int64(word(tdata, at - 8)) == n) and same_bytes(tdata, at, d, s, n):
                return np.int64(slot)
        slot = (slot + np.uint64(1)) & mask


@jit
def _build(tdata, starts, lengths, size):
    slots = np.zeros(size, np.int64)
    mask = np.uint64(size - 1)
    for k in range(len(starts)):
        s, n = starts[k], lengths[k]
        h = hash_bytes(tdata, s, s + n)
        slot = h & mask
        while slots[slot] != 0:
            slot = (slot + np.uint64(1)) & mask
        slots[slot] = (_mark(h) << 48) | (min(n, _LONG) << 32) | s
    return slots


@intrinsic
def _prefetch(typingctx, array, at):
    """Ask for ``array[at]``'s cache line ahead of its use (a hint: LLVM's prefetch)."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        i32 = ir.IntType(32)
        pointer = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32]),
            "llvm.prefetch.p0i8")
        builder.call(function, [pointer, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.none(array, at), codegen


@jit
def _line(d, s, e, spans, row):
    """The kind of the line ``d[s:e]`` (without its LF); for a plain line, ``spans[row]`` gets
    its parts' offsets: subject, predicate, object (each start, end) and the timestamp's digits.
    Blank: spaces and tabs, then an ASCII comment or nothing (a comment holding other bytes is
    left to the full parser, whose comment ends at any line terminator Java knows)."""
    # the plain shape: subject predicate object [". "]"digits"[^^IRI][" ."|"."]
    s1 = _term(d, s, e, False)
    if s1 < 0 or s1 >= e or d[s1] != 32:
        q = s                        # not plain: blank, a comment, or the full parser's
        while q < e and (d[q] == 32 or d[q] == 9):
            q += 1
        if q < e and d[q] == 35:
            while q < e and d[q] != 10 and d[q] < 128:
                q += 1
        return BLANK if q == e else SLOW
    p0 = s1 + 1
    if p0 >= e or d[p0] != 60:
        return SLOW
    p1 = _iri(d, p0, e)
    if p1 < 0 or p1 >= e or d[p1] != 32:
        return SLOW
    o0 = p1 + 1
    o1 = _term(d, o0, e, True)
    if o1 < 0 or o1 >= e or d[o1] != 32:
        return SLOW
    q = o1 + 1
    if q < e and d[q] == 46:
        if q + 1 >= e or d[q + 1] != 32:
            return SLOW
        q += 2
    if q >= e or d[q] != 34:
        return SLOW
    t0 = q + 1
    t1 = t0
    while t1 < e and 48 <= d[t1] <= 57:
        t1 += 1
    digits = t1 - t0
    if digits == 0 or digits > 18 or (digits > 1 and d[t0] == 48) or t1 >= e or d[t1] != 34:
        return SLOW
    q = t1 + 1
    if q < e and d[q] == 94:
        if q + 2 >= e or d[q + 1] != 94 or d[q + 2] != 60:
            return SLOW
        q = _iri(d, q + 2, e)
        if q < 0:
            return SLOW
    rest = e - q
    if not (rest == 0 or (rest == 1 and d[q] == 46) or (rest == 2 and d[q] == 32 and d[q + 1] == 46)):
        return SLOW
    spans[row, 0] = s
    spans[row, 1] = s1
    spans[row, 2] = p0
    spans[row, 3] = p1
    spans[row, 4] = o0
    spans[row, 5] = o1
    spans[row, 6] = t0
    spans[row, 7] = t1
    return PLAIN


@jit
def _end(d, offsets, i):
    e = offsets[i + 1]
    return e - 1 if e > offsets[i] and d[e - 1] == 10 else e


@jit
def _all_lines(d, offsets):
    """Every line's kind and, for the plain ones, its spans (``_line``)."""
    n = len(offsets) - 1
    kind = np.empty(n, np.uint8)
    spans = np.zeros((n, 8), np.int64)
    for i in range(n):
        kind[i] = _line(d, offsets[i], _end(d, offsets, i), spans, i)
    return kind, spans


@jit
def _lines(d, offsets, pdata, pslots, cdata, cslots):
    """Each line's kind, and the plain lines typed by a predicate of the set (their positions,
    term spans and their object's hash); then the objects looked up in the class set, a few
    lookups ahead of each other (the set is megabytes: its slots and bytes are prefetched)."""
    n = len(offsets) - 1
    kind = np.empty(n, np.uint8)
    at = np.empty(n, np.int64)
    line = np.empty((1, 8), np.int64)
    spans = np.empty((n, 6), np.int64)
    hashes = np.empty(n, np.uint64)
    typed = 0
    for i in range(n):
        kind[i] = _line(d, offsets[i], _end(d, offsets, i), line, 0)
        if kind[i] != PLAIN:
            continue
        p0, p1 = line[0, 2], line[0, 3]
        if _probe(d, p0, p1, hash_bytes(d, p0, p1), pdata, pslots, True) < 0:
            continue
        at[typed] = i
        spans[typed, 0] = line[0, 0]
        spans[typed, 1] = line[0, 1]
        spans[typed, 2] = line[0, 4]
        spans[typed, 3] = line[0, 5]
        spans[typed, 4] = line[0, 6]
        spans[typed, 5] = line[0, 7]
        hashes[typed] = hash_bytes(d, line[0, 4], line[0, 5])
        typed += 1
    mask = np.uint64(len(cslots) - 1)
    hits = 0
    for j in range(typed):
        if j + _AHEAD < typed:
            _prefetch(cslots, hashes[j + _AHEAD] & mask)
        if j + _AHEAD // 2 < typed:
            k = j + _AHEAD // 2
            slot = _probe(d, spans[k, 2], spans[k, 3], hashes[k], cdata, cslots, False)
            if slot >= 0:
                _prefetch(cdata, cslots[slot] & 0xFFFFFFFF)
        if _probe(d, spans[j, 2], spans[j, 3], hashes[j], cdata, cslots, True) >= 0:
            at[hits] = at[j]
            spans[hits] = spans[j]
            hits += 1
    return kind, at[:hits].copy(), spans[:hits].copy()


@jit
def _gather(d, starts, ends, total):
    out = np.empty(max(total, 1), np.uint8)
    w = 0
    for i in range(len(starts)):
        for j in range(starts[i], ends[i]):
            out[w] = d[j]
            w += 1
    return out[:total]


@jit
def _put(out, w, piece, a, b):
    _copy(out, w, piece, a, b - a)
    return w + b - a


@jit
def _json(d, spans, numbers, head, klass, t, middle, tail, blank):
    n = len(numbers)
    fixed = len(head) + len(klass) + len(t) + len(middle) + len(tail)
    digits = np.empty(n, np.int64)
    total = 0
    for i in range(n):
        number, k = numbers[i], 1
        while number >= 10:
            number //= 10
            k += 1
        digits[i] = k
        total += fixed + k + (spans[i, 1] - spans[i, 0]) + (spans[i, 3] - spans[i, 2]) + (spans[i, 5] - spans[i, 4])
        if d[spans[i, 0]] == 95:
            total += len(blank) - 2
    out = np.empty(max(total, 1), np.uint8)
    offsets = np.empty(n + 1, np.int32)
    offsets[0] = 0
    w = 0
    for i in range(n):
        w = _put(out, w, head, 0, len(head))
        s = spans[i, 0]
        if d[s] == 95:                   # _:label -> the file's scope
            w = _put(out, w, blank, 0, len(blank))
            s += 2
        w = _put(out, w, d, s, spans[i, 1])
        w = _put(out, w, klass, 0, len(klass))
        w = _put(out, w, d, spans[i, 2], spans[i, 3])
        w = _put(out, w, t, 0, len(t))
        w = _put(out, w, d, spans[i, 4], spans[i, 5])
        w = _put(out, w, middle, 0, len(middle))
        number = numbers[i]
        for j in range(digits[i] - 1, -1, -1):
            out[w + j] = 48 + number % 10
            number //= 10
        w += digits[i]
        w = _put(out, w, tail, 0, len(tail))
        offsets[i + 1] = w
    return offsets, out[:total]
