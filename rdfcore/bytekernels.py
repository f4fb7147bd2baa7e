"""Compiled (numba) primitives over raw bytes, shared by the line scanners.

``cep.io.tsntscan`` (timestamped N-Triples) and ``cep.io.linescan`` (JSON Lines, N-Triples) read Arrow
string buffers byte by byte; both hash and compare byte ranges, and the JSON scanner computes item
ids. The functions here are ``nogil`` and cached beside this file (numba's own cache; from a zip,
numba's zip locator puts the cache in the user's cache directory).
"""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["jit", "word", "hash_bytes", "same_bytes", "xxh64_long"]

jit = numba.njit(nogil=True, cache=True)

_PRIME = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
# XXH64's primes (rdfcore.hashing)
_P1, _P2 = np.uint64(11400714785074694791), np.uint64(14029467366897019727)
_P3, _P4 = np.uint64(1609587929392839161), np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)


@intrinsic
def word(typingctx, array, at):
    """The 8 bytes of a uint8 array from ``at`` as one little-endian uint64 (an unaligned load;
    the caller keeps ``at + 8`` within the array)."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.load(builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(64).as_pointer()), align=1)
    return types.uint64(array, at), codegen


@jit
def hash_bytes(d, s, e):
    """A hash of ``d[s:e]`` by 8-byte words (the last word overlapping the one before it),
    finished with MurmurHash3's mixer so that the low bits (the slot) depend on every byte.
    Reads nothing outside ``d[s:e]``."""
    n = e - s
    h = np.uint64(n) * _PRIME
    if n < 8:
        for i in range(s, e):
            h = (h ^ np.uint64(d[i])) * _PRIME
    else:
        p = s
        while p + 8 < e:
            h = (h ^ word(d, p)) * _PRIME
            p += 8
        h = (h ^ word(d, e - 8)) * _PRIME
    h ^= h >> np.uint64(33)
    h *= _MIX1
    h ^= h >> np.uint64(33)
    h *= _MIX2
    return h ^ (h >> np.uint64(33))


@jit
def same_bytes(a, s, b, t, n):
    """``a[s:s + n] == b[t:t + n]``, by 8-byte words where there are 8 bytes."""
    if n < 8:
        for i in range(n):
            if a[s + i] != b[t + i]:
                return False
        return True
    i = 0
    while i + 8 < n:
        if word(a, s + i) != word(b, t + i):
            return False
        i += 8
    return word(a, s + n - 8) == word(b, t + n - 8)


@jit
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@jit
def xxh64_long(value, seed):
    """XXH64 of one int64's 8 little-endian bytes with ``seed`` (a uint64), as int64: Spark's
    ``xxhash64`` of a long column with that seed (``rdfcore.hashing.xxh64``, 8-byte input)."""
    h = seed + _P5 + np.uint64(8)
    k = np.uint64(value) * _P2
    h ^= _rotl(k, 31) * _P1
    h = _rotl(h, 27) * _P1 + _P4
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return np.int64(h)
