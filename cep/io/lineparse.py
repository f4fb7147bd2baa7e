"""Stream lines parsed on the driver — the plain, common ones; Spark parses everything else.

The continuous runtime's driver-side path (``cep.continuous.runner``, ``cep.engines.driver.rows``) would spend most of a
small micro-batch building and planning the Spark parse of its lines (``cep.io.streams.parse_lines``:
about 2 s of Catalyst work per batch, whatever its size). Most lines are plain: a JSON object with
``s``/``p``/``o``/``t`` (or ``t``/``triples``) whose terms are IRIs, prefixed names, simple
literals or blank nodes and whose times are JSON integers. ``parse_jsonl`` parses exactly those
and returns None for any other line — escapes, ISO timestamps, unusual characters, anything
malformed — which then goes to Spark's parser, the one definition of the formats, with its
reasons for rejects. So this module never rejects a line, and for every line it accepts it gives
what ``parse_lines`` gives (``tests/test_cep_lineparse.py`` compares the two on random and tricky
lines): the same N-Triples terms (prefixes expanded, ``a`` for ``rdf:type``, language tags
lower-cased, ``^^xsd:string`` dropped, blank nodes scoped to the file or Kafka partition) and the
same item id ``xxhash64(file, line)``.

``parse_tsnt`` does the same for timestamped N-Triples: the lines of :data:`TSNT_STRICT` (the
definition ``cep.io.tsnt`` and its compiled scanner share), for the driver's ``query --at`` on files
too small to repay loading the scanner.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping

from rdfcore.hashing import fast_xxh64
from rdfcore.vocab import RDF_TYPE, XSD_STRING

__all__ = ["parse_jsonl", "parse_tsnt", "item_id", "bnode_scope", "TSNT_STRICT", "TSNT_BLANK_OR_COMMENT"]

# Conservative subsets of the grammars of cep.io.streams / rdfcore.loading (no escapes anywhere).
_IRI = re.compile(r"<[^<>\"{}|^`\\\x00-\x20]*>")
_BNODE = re.compile(r"_:[A-Za-z0-9_\-]*[A-Za-z0-9_\-]")
_PNAME = re.compile(r"([A-Za-z](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?)?:([A-Za-z0-9_.\-/#%~:]*)")
_LITERAL = re.compile(r"(\"[^\"\\\n\r]*\")(?:@([a-zA-Z]+(?:-[a-zA-Z0-9]+)*)|\^\^(<[^<>\"{}|^`\\\x00-\x20]*>)"
                      r"|\^\^([A-Za-z](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?)?:([A-Za-z0-9_.\-/#%~:]*))?")
_JSON_SPACE = " \t\n\x0b\f\r"

# Timestamped N-Triples' plain lines (RE2 syntax; ``cep.io.tsnt`` documents them): the one definition
# of the lines the compiled scanner (``cep.io.tsntscan``) and ``parse_tsnt`` take as they are.
_NT_IRI = r'<[^<>"{}|^`\\\x00-\x20\x{FFFD}]*>'
_NT_BNODE = r"_:[A-Za-z0-9_\-](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?"
_NT_LITERAL = r'"[^"\\\n\r\x{FFFD}]*"(?:@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*|\^\^' + _NT_IRI + ")?"
# an integer timestamp that fits a long whatever its digits (at most 18), no sign, no leading zero
_NT_STAMP = r'"(0|[1-9][0-9]{0,17})"(?:\^\^' + _NT_IRI + ")?"
#: the plain lines: single spaces between the parts, an optional dot before or after the timestamp;
#: groups: subject, predicate, object, the timestamp's digits
TSNT_STRICT = (rf"^({_NT_IRI}|{_NT_BNODE}) ({_NT_IRI}) ({_NT_IRI}|{_NT_BNODE}|{_NT_LITERAL}) (?:\. )?{_NT_STAMP}"
               r"(?: ?\.)?\n?$")
#: a blank line, or a comment of ASCII bytes (Java's ``.`` in NT_BLANK_OR_COMMENT stops at U+0085,
#: U+2028 and U+2029: a comment holding other characters is left to Spark's parser)
TSNT_BLANK_OR_COMMENT = r"^[ \t]*(?:#[\x00-\x09\x0b-\x7f]*)?\n?$"
_TSNT_LINE = re.compile(TSNT_STRICT.replace(r"\x{FFFD}", r"\uFFFD"))
_TSNT_BLANK = re.compile(TSNT_BLANK_OR_COMMENT)
_LONG = (-(1 << 63), (1 << 63) - 1)
_TRIPLE_KEYS = frozenset(("s", "p", "o", "t", "t_end"))
_GRAPH_KEYS = frozenset(("t", "t_end", "triples"))
_KEYS = _TRIPLE_KEYS | _GRAPH_KEYS
_QUOTED = {k: f'"{k}"' for k in _KEYS}


def item_id(file: str, line: int) -> int:
    """Spark's ``xxhash64(file, line)``: the long hashed with the string's hash as seed."""
    return fast_xxh64(int(line).to_bytes(8, "little", signed=True), file_seed(file) & ((1 << 64) - 1))


@functools.lru_cache(maxsize=1024)
def file_seed(file: str) -> int:
    return fast_xxh64(file.encode("utf-8"))


@functools.lru_cache(maxsize=1024)
def bnode_scope(file: str) -> str:
    """``cep.io.streams.file_scope``: ``s`` + the first 12 hex digits of the SHA-256 of the path."""
    return "s" + hashlib.sha256(file.encode("utf-8")).hexdigest()[:12]


def _expand(prefix: str | None, local: str, prefixes: Mapping[str, str]) -> str | None:
    namespace = prefixes.get(prefix or "")
    if namespace is None:
        return None
    iri = f"<{namespace}{local}>"
    return iri if _IRI.fullmatch(iri) else None


def _term(text, position: str, prefixes: Mapping[str, str], scope: str) -> str | None:
    """A JSON term in N-Triples form, or None (not plain: Spark decides)."""
    if not isinstance(text, str):
        return None
    if position == "p" and text == "a":
        return RDF_TYPE
    if _IRI.fullmatch(text):
        return text
    if position != "p" and text.startswith("_:"):
        return f"_:f{scope}.{text[2:]}" if _BNODE.fullmatch(text) else None
    if position == "o" and text.startswith('"'):
        m = _LITERAL.fullmatch(text)
        if m is None:
            return None
        lexical, lang, datatype, dt_prefix, dt_local = m.groups()
        if lang is not None:
            return f"{lexical}@{lang.lower()}"
        if dt_local is not None:
            datatype = _expand(dt_prefix, dt_local, prefixes)
            if datatype is None:
                return None
        if datatype is None or datatype == XSD_STRING:
            return lexical
        return f"{lexical}^^{datatype}"
    m = _PNAME.fullmatch(text)
    return _expand(m.group(1), m.group(2), prefixes) if m else None


def cached_term(text, position: str, prefixes: Mapping[str, str], scope: str, terms: dict) -> str | None:
    if not isinstance(text, str):
        return None
    key = (text, position, scope)
    try:
        return terms[key]
    except KeyError:
        found = terms[key] = _term(text, position, prefixes, scope)
        return found


def _time(value) -> int | None:
    if type(value) is int and _LONG[0] <= value <= _LONG[1]:
        return value
    return None


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


# one decoder each (json.loads with an option builds a decoder per call)
_decode = json.JSONDecoder().decode
_decode_checked = json.JSONDecoder(object_pairs_hook=_no_duplicates).decode


def parse_jsonl(raw: str, file: str, line: int, prefixes: Mapping[str, str], terms: dict | None = None):
    """One JSON Lines line → ``[]`` (a blank line), a list of ``(item, s, p, o, t1, t2)`` with
    N-Triples terms (one per triple of the item), or None (not a plain line: Spark parses it).
    ``terms``: a cache of the terms read so far with these ``prefixes`` (a stream repeats its
    subjects, predicates and objects), filled here.

    A repeated key is not plain (JSON keeps its last value; Spark's parser rejects the line): a
    line without escapes has one only if a key's quoted name occurs twice (then Spark decides);
    a line with escapes is decoded with a check of every object's keys."""
    if not raw.strip(_JSON_SPACE):
        return []
    if "\ufffd" in raw:
        return None
    escaped = "\\" in raw
    try:
        obj = _decode_checked(raw) if escaped else _decode(raw)
    except (ValueError, RecursionError):   # Python's decoder recurses: a line nested ~1,000 deep
        return None
    if type(obj) is not dict or not obj.keys() <= _KEYS:
        return None
    if not escaped:
        for k in obj:
            if raw.count(_QUOTED[k]) != 1:
                return None
    t1 = _time(obj.get("t"))
    if t1 is None:
        return None
    end = obj.get("t_end")
    t2 = t1 if end is None else _time(end)
    if t2 is None or t2 < t1:
        return None
    listed = obj.get("triples")
    if listed is not None:
        if obj.get("s") is not None or obj.get("p") is not None or obj.get("o") is not None:
            return None
        if type(listed) is not list or not listed:
            return None
        if not all(type(tr) is list and len(tr) == 3 for tr in listed):
            return None
    else:
        listed = ((obj.get("s"), obj.get("p"), obj.get("o")),)
        if None in listed[0]:
            return None
    scope = bnode_scope(file)
    item = item_id(file, line)
    out = []
    if terms is None:
        terms = {}
    for s, p, o in listed:
        try:
            st, pt, ot = terms[s, "s", scope], terms[p, "p", scope], terms[o, "o", scope]
        except (KeyError, TypeError):     # not read yet, or not even a string
            st, pt, ot = (cached_term(s, "s", prefixes, scope, terms), cached_term(p, "p", prefixes, scope, terms),
                          cached_term(o, "o", prefixes, scope, terms))
        if st is None or pt is None or ot is None:
            return None
        out.append((item, st, pt, ot, t1, t2))
    return out


def parse_tsnt(raw: str, file: str, line: int, terms: dict):
    """One timestamped N-Triples line → ``[]`` (blank or a comment), ``[(item, s, p, o, t, t)]`` with
    the terms canonicalised as Spark's parser has them (the compiled scanner's term function, blank
    nodes scoped to the file), or None (not a line of :data:`TSNT_STRICT`: Spark parses it). The
    lines and items of ``cep.io.linescan.scan_tsnt``, in Python: for files too small to repay the
    scanner's start-up. ``terms``: a cache of the terms read so far, filled here."""
    found = _TSNT_LINE.match(raw)
    if found is None:
        return [] if _TSNT_BLANK.match(raw) else None
    scope = bnode_scope(file)
    s, p, o = (cached_term(text, position, {}, scope, terms) for text, position in zip(found.groups(), "spo"))
    if s is None or p is None or o is None:
        return None
    t = int(found.group(4))
    return [(item_id(file, line), s, p, o, t, t)]
