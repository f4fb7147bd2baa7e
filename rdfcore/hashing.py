"""Term ids: XXH64 (seed 42) of the term's UTF-8 N-Triples form, as a signed 64-bit long.

This is exactly Spark's built-in ``xxhash64(col)``, so Spark encodes whole tables with a
projection (no join, no UDF) and Python computes the id of a single constant (a vocabulary term,
a bound path end) without asking Spark. ``tests/test_loading_store.py`` checks both agree.
"""
from __future__ import annotations

import functools

SEED = 42
_M = (1 << 64) - 1
_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P3 = 1609587929392839161
_P4 = 9650029242287828579
_P5 = 2870177450012600261


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M, 31) * _P1) & _M


def _merge(acc: int, value: int) -> int:
    return ((acc ^ _round(0, value)) * _P1 + _P4) & _M


def xxh64(data: bytes, seed: int = SEED) -> int:
    """XXH64 of ``data`` as a signed 64-bit integer (Spark's representation)."""
    n, i = len(data), 0
    if n >= 32:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M
        while i + 32 <= n:
            v1 = _round(v1, int.from_bytes(data[i:i + 8], "little"))
            v2 = _round(v2, int.from_bytes(data[i + 8:i + 16], "little"))
            v3 = _round(v3, int.from_bytes(data[i + 16:i + 24], "little"))
            v4 = _round(v4, int.from_bytes(data[i + 24:i + 32], "little"))
            i += 32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
        for v in (v1, v2, v3, v4):
            h = _merge(h, v)
    else:
        h = (seed + _P5) & _M
    h = (h + n) & _M
    while i + 8 <= n:
        h ^= _round(0, int.from_bytes(data[i:i + 8], "little"))
        h = (_rotl(h, 27) * _P1 + _P4) & _M
        i += 8
    if i + 4 <= n:
        h ^= (int.from_bytes(data[i:i + 4], "little") * _P1) & _M
        h = (_rotl(h, 23) * _P2 + _P3) & _M
        i += 4
    while i < n:
        h ^= (data[i] * _P5) & _M
        h = (_rotl(h, 11) * _P1) & _M
        i += 1
    h ^= h >> 33
    h = (h * _P2) & _M
    h ^= h >> 29
    h = (h * _P3) & _M
    h ^= h >> 32
    return h - (1 << 64) if h >= 1 << 63 else h


try:     # the C implementation (a dependency; the pure-Python one above stays as the fallback)
    from xxhash import xxh64_intdigest as _c_xxh64
except ImportError:  # pragma: no cover - xxhash is installed with the project
    _c_xxh64 = None


def fast_xxh64(data: bytes, seed: int = SEED) -> int:
    """:func:`xxh64`, by the ``xxhash`` C library when it is installed."""
    if _c_xxh64 is None:
        return xxh64(data, seed)
    h = _c_xxh64(data, seed)
    return h - (1 << 64) if h >= 1 << 63 else h


@functools.lru_cache(maxsize=1 << 16)
def term_id(term: str) -> int:
    """The dictionary id of a term given in N-Triples form (memoized: compilers ask for the same
    vocabulary terms on every evaluation)."""
    return fast_xxh64(term.encode("utf-8"))


def hash_longs(*values: int | None) -> int:
    """Spark's ``xxhash64(c1, c2, ...)`` over long columns: XXH64 of each value's 8 little-endian
    bytes, the previous hash as seed (42 first); a null (None) leaves the hash as it is."""
    h = SEED
    for v in values:
        if v is not None:
            h = xxh64(int(v).to_bytes(8, "little", signed=True), h)
    return h
