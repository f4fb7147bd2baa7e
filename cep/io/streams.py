"""Read an RDF stream file into Spark: timestamped stream items as id-encoded rows.

    from cep.io.streams import read_stream
    stream = read_stream(spark, "events.jsonl", prefixes={"ex": "http://example.org/"}, time_unit="s")
    stream.triples     # (item, s, p, o, t_start, t_end) long ids  — what cep.engines.spark.evaluate.evaluate takes
    stream.terms       # the same rows with N-Triples strings instead of ids
    stream.dictionary  # (id, term)
    stream.rejects     # (file, line, reason, raw);  stream.rejected -> int

A stream is a set of items ⟨g, [t1, t2]⟩ (CQELS-CEP §4.1): a graph g with an interval. Every line
of a stream file is one item; all the triples of an item share its ``item`` id and interval
(DESIGN.md "Data model"). Files are read by Spark line-parallel; the data is never collected.

Formats (``fmt``, or by extension):

* ``jsonl`` (``.jsonl``, ``.ndjson``, ``.json``) — JSON Lines, one JSON object per line:

  - a triple item ``{"s": S, "p": P, "o": O, "t": T}``, optional ``"t_end": T2``;
  - a graph item ``{"t": T, "triples": [[S, P, O], ...]}``, optional ``"t_end"`` — one item, one
    graph; an empty ``triples`` array is a reject (an item must carry a graph).

  Terms are JSON strings holding an N-Triples term (``"<http://x/a>"``, ``"_:b1"``,
  ``"\\"5\\"^^<http://www.w3.org/2001/XMLSchema#integer>"``, ``"\\"hi\\"@en"``) or a prefixed
  name resolved with ``prefixes`` (``"ex:a"`` → ``<http://example.org/a>``; also the datatype of a
  literal, ``"\\"5\\"^^xsd:integer"``). In the predicate position, ``"a"`` stands for
  ``rdf:type`` (as in SPARQL and Turtle); anywhere else ``a`` is a malformed term. No prefix is
  predefined: pass every prefix the file uses. Keys other than s, p, o, t, t_end, triples are
  rejected (a misspelt ``t_end`` must not be ignored silently). Blank lines are skipped.
* ``tsnt`` (``.nt``, ``.ntriples``, ``.tsnt``, ``.tnt``) — timestamped N-Triples as in RDF stream
  benchmarks: an N-Triples statement with a quoted timestamp after the object, ``<s> <p> <o>
  "1000" .``; the final dot may be left out, or written before the timestamp
  (``<s> <p> <o> . "1000"``); the timestamp may carry a datatype (``"..."^^<...#dateTime>``), which
  is ignored. Each line is its own item with ``t_start == t_end``. Blank lines and ``#``
  comments are skipped. Terms are checked with the N-Triples grammar of ``rdfcore.loading``.

Timestamps: an integer — a number *in* ``time_unit`` (``ms``, ``s``, ``m``, ``h``, also ``d``;
default ``ms``), kept as it is — or an ISO-8601 date-time (``2024-05-01T10:00:00Z``, with an
offset, fractional seconds, or a date alone), converted to whole ``time_unit`` ticks since the
Unix epoch, rounded down; a date-time without an offset is read in the session time zone (UTC in
sessions built by ``jobs.spark``). ``t_start``/``t_end`` hold those ticks as longs; without
``t_end`` the item is an atomic event, ``t_end == t_start``. Numbers with a fraction or an
exponent are rejected (choose a finer ``time_unit``).

Rejects: a bad line — invalid UTF-8 (or U+FFFD, what a decoder puts for bad bytes), not a JSON
object, an unknown or missing key, an unknown prefix, a malformed term, a bad timestamp, ``t_end``
before ``t``, a malformed N-Triples statement — is not loaded: it goes to ``rejects`` with the
file, its 1-based line number, the reason and the raw text (bad bytes shown as U+FFFD), and
``rejected`` counts it. A graph item with one bad triple is rejected whole.

Ids: terms are encoded as ``rdfcore.dictionary`` does (``xxhash64`` of the N-Triples form, the
same id as in the static closure tables); literals are canonicalised (lower-case language tag,
no ``^^xsd:string``) and blank nodes are scoped to the file (``_:x`` becomes ``_:fs<hash>.x``,
the hash of the file's path), as ``rdfcore.loading`` does. The ``item`` id is ``xxhash64(file,
line)``: unique per line of a file. ``dictionary`` is built without a collision check (that
would run a Spark job here); ``jobs.query`` checks the union of all dictionaries it decodes with.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, LongType, StringType, StructField, StructType

from cep.algebra.patterns import TIME_UNITS
# the stream-item column (a long id shared by the triples of one item) and the stream's columns
from cep.engines.columns import ITEM, STREAM_COLUMNS
from cep.io.formats import EXTENSIONS, FORMATS, JSONL, TSNT, detect_stream_format
from cep.io.lineparse import parse_jsonl, parse_tsnt
from cep.io import linescan
# The N-Triples grammar pieces and term normalisation of the static loader, reused as they are.
from rdfcore.loading import (canonical_term, column_after, invalid_utf8, read_lines, reject_reason, scope_bnode,
                             with_line_numbers)
from rdfcore.errors import RDFLoadError
from rdfcore.sources import NT_BLANK_OR_COMMENT, NT_BNODE, NT_IRI, NT_LITERAL, NT_OBJECT, NT_WS
from rdfcore.dictionary import build_dictionary, encode_column
from rdfcore.locations import location
from rdfcore.schema import FILE, LINE, O, P, RAW, REASON, S, T_END, T_START
from rdfcore.vocab import RDF_TYPE

__all__ = ["ITEM", "STREAM_COLUMNS", "Stream", "read_stream", "resolve_term", "parse_lines", "parse_lines_once", "PLAIN_MIN_BYTES"]


# JSON keys of an item
_K_S, _K_P, _K_O, _K_T, _K_T_END, _K_TRIPLES = "s", "p", "o", "t", "t_end", "triples"
_KEYS = (_K_S, _K_P, _K_O, _K_T, _K_T_END, _K_TRIPLES)
# every value as its JSON text, and the line itself in _CORRUPT when Spark's JSON reader cannot
# parse it (its keys may still be listed: json_object_keys skips over a string holding a NUL)
_CORRUPT = "_corrupt_record"
_JSON_SCHEMA = ", ".join(f"{k} string" for k in (*_KEYS, _CORRUPT))

# Prefixed names, SPARQL 1.1 [139] PNAME_NS / [140] PNAME_LN (local part: any IRI characters).
_PN_PREFIX = r"(?:\p{L}(?:[\p{L}\p{N}_.\-]*[\p{L}\p{N}_\-])?)?"
_PN_LOCAL = r"[^\s<>\"{}|^`\\]*"
_PNAME = rf"^({_PN_PREFIX}):({_PN_LOCAL})$"
_TYPED_PNAME = rf"^(\".*\")\^\^({_PN_PREFIX}):({_PN_LOCAL})$"
_AS_SUBJECT = rf"^(?:{NT_IRI}|{NT_BNODE})$"
_AS_PREDICATE = rf"^{NT_IRI}$"
_AS_OBJECT = rf"^(?:{NT_IRI}|{NT_BNODE}|{NT_LITERAL})$"
_IS_IRI = rf"^{NT_IRI}$"
_IS_LITERAL = rf"^{NT_LITERAL}$"
_EXPECTED = {
    S: "an IRI <...>, a blank node _:x or a prefixed name",
    P: "an IRI <...>, a prefixed name or 'a'",
    O: "an IRI <...>, a blank node _:x, a literal \"...\" or a prefixed name",
}

# Timestamps
_INTEGER = r"^[+-]?[0-9]+$"
_ISO = r"^[+-]?[0-9]{4,}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?)?(?:Z|[+-][0-9]{2}(?::?[0-9]{2})?)?$"
_NO_SECONDS = r"^([+-]?[0-9]{4,}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2})(?=$|Z|[+-])"

# Timestamped N-Triples: statement, optional '.', quoted timestamp (optional datatype), optional '.'
_TS = rf"\"([^\"\\\n\r]*)\"(?:\^\^{NT_IRI})?"
_BEFORE_TS = rf"{NT_OBJECT}{NT_WS}\.?{NT_WS}"
_UP_TO_TS = rf"{_BEFORE_TS}{_TS}"
_TSNT_LINE = rf"{_UP_TO_TS}{NT_WS}\.?{NT_WS}(?:#.*)?$"

_BLANK = r"^\s*$"


@dataclasses.dataclass
class Stream:
    """A stream read from one file (see the module doc)."""

    triples: DataFrame     # (item, s, p, o, t_start, t_end) long ids
    terms: DataFrame       # (item, s, p, o, t_start, t_end) with N-Triples strings
    dictionary: DataFrame  # (id, term)
    rejects: DataFrame     # (file, line, reason, raw)
    path: str
    format: str
    time_unit: str

    @property
    def rejected(self) -> int:
        """How many lines were rejected (runs a Spark job)."""
        return self.rejects.count()


def read_stream(spark: SparkSession, path: str | Path, prefixes: Mapping[str, str] | None = None,
                time_unit: str = "ms", fmt: str | None = None, *, plain: bool | None = None) -> Stream:
    """Read one stream file (module doc). Raises :class:`RDFLoadError` for a missing file or an
    unknown format, ``ValueError`` for an unknown time unit; bad lines become rejects. ``plain``:
    :func:`parse_lines` (None: for a file of at least :data:`PLAIN_MIN_BYTES`)."""
    check_time_unit(time_unit)
    path = location(path, "stream file")
    if not path.is_file():
        raise RDFLoadError(str(path), "no such file")
    fmt = detect_stream_format(path, fmt)
    if plain is None:
        plain = path.stat().st_size >= PLAIN_MIN_BYTES
    raw = read_lines(spark, [path])
    lines = with_line_numbers(raw, raw).select(FILE, LINE, RAW)
    terms, rejects = parse_lines(lines, prefixes, time_unit, fmt, plain=plain)
    terms = terms.select(*STREAM_COLUMNS)
    triples = encode_items(terms)
    dictionary = build_dictionary(terms.select(S, P, O), check=False)
    return Stream(triples, terms, dictionary, rejects, str(path), fmt, time_unit)


#: the file size from which ``read_stream`` parses the plain lines in Python first (``parse_lines``):
#: ~100,000 lines, where the Spark expressions' ~4 s outweigh a process's first Python stage
PLAIN_MIN_BYTES = 8 << 20


def check_time_unit(time_unit: str) -> None:
    if time_unit not in TIME_UNITS:
        raise ValueError(f"unknown time unit {time_unit!r}; expected one of {', '.join(TIME_UNITS)}")


def file_scope(file: Column) -> Column:
    """The blank-node scope of a stream file: ``s`` + the first 12 hex digits of the SHA-256 of
    its local path (as ``rdfcore.loading`` scopes the static files)."""
    return F.concat(F.lit("s"), F.substring(F.sha2(file, 256), 1, 12))


def parse_lines(lines: DataFrame, prefixes: Mapping[str, str] | None, time_unit: str,
                fmt: str | None = None, *, plain: bool = False) -> tuple[DataFrame, DataFrame]:
    """Stream lines ``(file, line, raw)`` → ``(terms, rejects)`` (module doc).

    ``terms`` is ``(item, s, p, o, t_start, t_end, file, line)`` with N-Triples strings, ``rejects`` is
    ``(file, line, reason, raw)``. ``fmt`` None picks each file's format by its extension (a file
    with another extension is rejected line by line, with the reason). Both the file reader and the
    continuous runtime (``cep.continuous.runner``) read lines through here: one parser, one item id
    ``xxhash64(file, line)`` (stable when a file is read again).

    ``plain``: parse the plain lines in Python on the executors first (``cep.io.lineparse``, a
    pandas UDF, ~15x cheaper a line than the Spark expressions, which are interpreted where they
    hold lambdas), and every other line with the Spark expressions; the same rows either way
    (``tests/test_cep_lineparse.py``). It pays where there are many lines: a Python stage costs
    ~0.2 s a job, and a process's first one ~5 s (its Python workers start). False (default):
    Spark's expressions alone, also for lines already known not to be plain, and where the
    executors cannot import the project (no ``--py-files``).
    """
    checked = _checked(lines, prefixes, time_unit, fmt, plain)
    rejects = checked.filter(F.col(REASON).isNotNull()).select(FILE, LINE, REASON, _shown(F.col(RAW)).alias(RAW))
    item = F.xxhash64(F.col(FILE), F.col(LINE)).alias(ITEM)
    terms = (checked.filter(F.col(REASON).isNull())
             .select(item, F.explode("_triples").alias("_t"), F.col("_t1").alias(T_START), F.col("_t2").alias(T_END),
                     FILE, LINE)
             .select(ITEM, F.col("_t")[S].alias(S), F.col("_t")[P].alias(P), F.col("_t")[O].alias(O), T_START, T_END,
                     FILE, LINE))
    return terms, rejects


def parse_lines_once(lines: DataFrame, prefixes: Mapping[str, str] | None, time_unit: str,
                     fmt: str | None = None, *, plain: bool = False) -> DataFrame:
    """``parse_lines``' terms and rejects as one DataFrame, for a consumer that reads its input
    once (a streaming query): ``(item, s, p, o, t_start, t_end, file, line, reason, raw)``, a row
    per triple of an accepted line (``reason`` and ``raw`` null) and one per rejected line
    (``reason`` and ``raw`` set; ``item``, the terms and the times null)."""
    checked = _checked(lines, prefixes, time_unit, fmt, plain)
    good = F.col(REASON).isNull()
    rows = checked.select(F.when(good, F.xxhash64(F.col(FILE), F.col(LINE))).alias(ITEM),
                          F.explode_outer(F.when(good, F.col("_triples"))).alias("_t"),
                          F.when(good, F.col("_t1")).alias(T_START), F.when(good, F.col("_t2")).alias(T_END),
                          FILE, LINE, REASON, F.when(~good, _shown(F.col(RAW))).alias(RAW))
    # an accepted line has a graph (an empty one is a reject): only a rejected line has no triple
    rows = rows.filter(F.col("_t").isNotNull() | F.col(REASON).isNotNull())
    rows = rows.select(ITEM, F.col("_t")[S].alias(S), F.col("_t")[P].alias(P), F.col("_t")[O].alias(O), T_START,
                       T_END, FILE, LINE, REASON, RAW)
    return rows


def _shown(raw: Column) -> Column:
    """A rejected line's text as valid UTF-8 (bad bytes as U+FFFD): whoever reads the rejects
    through Arrow (a pandas operator, ``toArrow``) can decode it."""
    return F.make_valid_utf8(raw)


def _checked(lines: DataFrame, prefixes: Mapping[str, str] | None, time_unit: str, fmt: str | None,
             plain: bool) -> DataFrame:
    """Each line with its triples, interval and reject reason (null when it is accepted): parsed
    as ``fmt``, or (``fmt`` None) as the format of its file's extension, a line of a file with none
    of them rejected with the reason. One projection of every line whatever the formats (a CASE
    WHEN on the file's extension), and with ``plain`` one Python UDF for all of them: a branch per
    format, filtered and unioned, planned and ran the parser once per format in every micro-batch."""
    check_time_unit(time_unit)
    scope = file_scope(F.col(FILE))
    prefixes = dict(prefixes or {})
    parsers = {JSONL: lambda: _jsonl(prefixes, time_unit, scope), TSNT: lambda: _tsnt(time_unit, scope)}
    if fmt is not None:
        parsed = parsers[fmt]()
    else:
        parsed = None
        for kind in FORMATS:
            mine = _extension_in(kind)
            parsed = F.when(mine, parsers[kind]()) if parsed is None else parsed.when(mine, parsers[kind]())
        reason = (f"unknown stream format: the file's extension is none of {', '.join(sorted(EXTENSIONS))}")
        parsed = parsed.otherwise(_rejected(reason))
    rows, reason = _parsed_rows(lines, parsed, _plain_lines(fmt, prefixes) if plain else None)
    return rows.select(FILE, LINE, RAW, "_triples", "_t1", "_t2", reason.alias(REASON))


def encode_items(terms: DataFrame) -> DataFrame:
    """Stream items of N-Triples strings → the same rows of term ids (``rdfcore.dictionary``)."""
    return terms.select(ITEM, encode_column(S).alias(S), encode_column(P).alias(P), encode_column(O).alias(O),
                        T_START, T_END)


def _extension_in(*kinds: str) -> Column:
    """Whether the row's file has an extension of one of the stream formats ``kinds``."""
    suffixes = [ext for ext, kind in EXTENSIONS.items() if kind in kinds]
    return F.lower(F.regexp_extract(F.col(FILE), r"(\.[^./]*)$", 1)).isin(*suffixes)


# --- timestamps -----------------------------------------------------------------------------

def _ticks(text: Column, time_unit: str) -> Column:
    """A timestamp's ticks of ``time_unit`` (long), or null when ``text`` is not a timestamp."""
    iso = F.regexp_replace(text, _NO_SECONDS, "$1:00")  # Spark's parser wants seconds before an offset
    micros = F.unix_micros(F.try_to_timestamp(iso))
    per_tick = TIME_UNITS[time_unit] * 1000
    from_iso = F.floor(micros.cast("decimal(20,0)") / F.lit(per_tick)).cast("long")
    return (F.when(text.rlike(_INTEGER), text.try_cast("long"))
            .when(text.rlike(_ISO), from_iso))


def _bad_timestamp(key: str, text: Column, time_unit: str) -> Column:
    return F.concat(F.lit(f"bad timestamp in '{key}': "), _quoted(text),
                    F.lit(f"; expected an integer number of {time_unit} or an ISO-8601 date-time"))


def _quoted(text: Column) -> Column:
    return F.concat(F.lit("'"), text, F.lit("'"))


# --- terms ----------------------------------------------------------------------------------

def bound(value: Column, body) -> Column:
    """``body(v)`` with ``v`` standing for ``value`` computed once: ``transform([value], body)[0]``.

    A Column used twice in an expression is two copies of its tree, and Catalyst merges them
    neither in a lambda nor in a projection it collapses; higher-order functions are interpreted,
    so each copy is evaluated too. A streaming query optimises its plan again in every micro-batch,
    so the parser keeps its plan small: bound once, each use is a reference to a lambda variable."""
    return F.transform(F.array(value), body)[0]


def once(value: Column) -> Column:
    """``value`` as a generated column (one row in, one row out: ``explode_outer([value])``), for a
    large expression that filters read: Catalyst pushes a filter through a projection by copying
    the projected expression into the condition (and infers more filters from an explode, each one
    another copy), but it cannot push a condition on a generated column below its generator."""
    return F.explode_outer(F.array(value))


def resolve_term(term: Column, position: str, label: Column, prefixes: Column | None, scope: Column) -> Column:
    """``struct(v, e)``: the N-Triples form of a JSON term (null on error) and why it is bad.

    ``position`` is S, P or O (what the term may be); ``label`` names it in the reason. Computed in
    stages, each bound once (:func:`bound`): the term's parts, then the prefixes' namespaces, then
    the expanded forms, the value and the error, then the normal form."""
    allowed = {S: _AS_SUBJECT, P: _AS_PREDICATE, O: _AS_OBJECT}[position]

    def namespace_of(prefix: Column) -> Column:
        return F.try_element_at(prefixes, prefix) if prefixes is not None else F.lit(None).cast("string")

    def parts(t: Column) -> Column:
        is_nt = t.rlike(allowed)
        is_pname = ~is_nt & t.rlike(_PNAME)
        return F.struct(
            t.alias("term"), is_nt.alias("is_nt"), is_pname.alias("is_pname"),
            (F.lit(position == O) & ~is_nt & ~is_pname & t.rlike(_TYPED_PNAME)).alias("is_typed"),
            F.regexp_extract(t, _PNAME, 1).alias("prefix"), F.regexp_extract(t, _PNAME, 2).alias("local"),
            F.regexp_extract(t, _TYPED_PNAME, 1).alias("lexical"), F.regexp_extract(t, _TYPED_PNAME, 2).alias("dt_prefix"),
            F.regexp_extract(t, _TYPED_PNAME, 3).alias("dt_local"))

    def expanded(x: Column) -> Column:
        namespace, dt_namespace = namespace_of(x["prefix"]), namespace_of(x["dt_prefix"])
        return F.struct(
            x.alias("x"), namespace.alias("namespace"), dt_namespace.alias("dt_namespace"),
            F.concat(F.lit("<"), namespace, x["local"], F.lit(">")).alias("expanded"),
            F.concat(x["lexical"], F.lit("^^<"), dt_namespace, x["dt_local"], F.lit(">")).alias("typed"))

    def named(text: str) -> Column:
        return F.concat(label, F.lit(": " + text))

    def checked(y: Column) -> Column:
        x = y["x"]
        t, is_nt, is_pname, is_typed = x["term"], x["is_nt"], x["is_pname"], x["is_typed"]
        is_a = F.lit(position == P) & (t == F.lit("a"))
        good_iri, good_literal = y["expanded"].rlike(_IS_IRI), y["typed"].rlike(_IS_LITERAL)
        value = (F.when(t.isNull(), None)
                 .when(is_a, F.lit(RDF_TYPE))
                 .when(is_nt, t)
                 .when(is_pname & good_iri, y["expanded"])
                 .when(is_typed & good_literal, y["typed"]))
        error = (F.when(t.isNull(), named("missing term (null)"))
                 .when(is_a | is_nt, None)
                 .when(is_pname & y["namespace"].isNull(),
                       F.concat(named("unknown prefix "), _quoted(F.concat(x["prefix"], F.lit(":")))))
                 .when(is_pname & ~good_iri, F.concat(named(""), _quoted(t), F.lit(" expands to an invalid IRI")))
                 .when(is_pname, None)
                 .when(is_typed & y["dt_namespace"].isNull(),
                       F.concat(named("unknown prefix "), _quoted(F.concat(x["dt_prefix"], F.lit(":")))))
                 .when(is_typed & ~good_literal, F.concat(named("malformed literal "), _quoted(t)))
                 .when(is_typed, None)
                 .otherwise(F.concat(named(f"expected {_EXPECTED[position]}, got "), _quoted(t))))
        return F.struct(value.alias("v"), error.alias("e"))

    def normal(z: Column) -> Column:
        value = (bound(canonical_term(z["v"]), lambda c: scope_bnode(c, scope)) if position == O
                 else scope_bnode(z["v"], scope))
        return F.struct(value.alias("v"), z["e"].alias("e"))

    return bound(bound(bound(bound(term, parts), expanded), checked), normal)


def _triple_struct(s: Column, p: Column, o: Column) -> Column:
    return F.struct(s.alias(S), p.alias(P), o.alias(O))


# --- JSON Lines -----------------------------------------------------------------------------

def _jsonl(prefixes: dict[str, str], time_unit: str, scope: Column) -> Column:
    """A JSON Lines line (``raw``) parsed: a struct of ``triples`` (array of (s, p, o) structs),
    ``t1``, ``t2`` and the reject reason (no triple and no reason for a blank line).

    The line is parsed in stages, each bound once (:func:`bound`): the JSON object; its graph and
    timestamps; its terms resolved; the reason."""
    prefix_map = (F.create_map(*[F.lit(x) for k, v in prefixes.items() for x in (k, v)]) if prefixes else None)
    line = F.struct(F.col(RAW).alias("raw"), F.json_object_keys(F.col(RAW)).alias("keys"),
                    F.from_json(F.col(RAW), _JSON_SCHEMA).alias("j"))

    def parsed(x: Column) -> Column:
        j = x["j"]
        t1, t2 = _ticks(j[_K_T], time_unit), _ticks(j[_K_T_END], time_unit)
        # a graph item: triples -> array of JSON texts -> arrays of 3 strings
        elements = F.from_json(j[_K_TRIPLES], "array<string>")
        return F.struct(x.alias("x"), elements.alias("elements"), t1.alias("t1"), t2.alias("t_end"),
                        F.transform(elements, lambda e: F.from_json(e, "array<string>")).alias("graph"))

    def resolved(triple: Column, index: Column, is_graph: Column) -> Column:
        where = F.when(is_graph, F.concat(F.lit("triples["), index.cast("string"), F.lit("]."))).otherwise(F.lit(""))
        parts = [resolve_term(F.try_element_at(triple, F.lit(k + 1)), pos, F.concat(where, F.lit(pos)), prefix_map, scope)
                 for k, pos in enumerate((S, P, O))]
        return F.struct(_triple_struct(*(x["v"] for x in parts)).alias("t"),
                        F.coalesce(*(x["e"] for x in parts)).alias("e"))

    def terms(y: Column) -> Column:
        j = y["x"]["j"]
        is_graph = j[_K_TRIPLES].isNotNull()
        listed = F.when(is_graph, y["graph"]).otherwise(F.array(F.array(j[_K_S], j[_K_P], j[_K_O])))
        triples = F.transform(listed, lambda t, i: resolved(t, i, is_graph))
        return F.struct(y.alias("y"), triples.alias("resolved"),
                        F.array_position(F.transform(y["graph"], lambda g: g.isNull() | (F.size(g) != 3)),
                                         F.lit(True)).alias("bad_shape"))

    def checked(z: Column) -> Column:
        y = z["y"]
        x = y["x"]
        j, keys, raw = x["j"], x["keys"], x["raw"]
        present = {k: j[k].isNotNull() for k in _KEYS}
        is_graph = present[_K_TRIPLES]
        t1, t_end, elements, bad_shape = y["t1"], y["t_end"], y["elements"], z["bad_shape"]
        t2 = F.coalesce(t_end, t1)
        term_error = F.try_element_at(F.filter(F.transform(z["resolved"], lambda r: r["e"]), lambda e: e.isNotNull()),
                                      F.lit(1))
        unknown = F.array_except(keys, F.array(*[F.lit(k) for k in _KEYS]))
        missing_spo = F.concat_ws(", ", *[F.when(~present[k], F.lit(k)) for k in (_K_S, _K_P, _K_O)])
        any_spo = present[_K_S] | present[_K_P] | present[_K_O]
        reason = (
            F.when(keys.isNull() | ~raw.rlike(r"^\s*\{.*\}\s*$")
                  | (j[_CORRUPT].isNotNull() & ~F.array_contains(keys, _CORRUPT)),
                  F.when(raw.rlike(r"^\s*\{"), F.lit("bad JSON: not a well-formed JSON object"))
                  .otherwise(F.lit("bad JSON: expected one JSON object {...} per line")))
            .when(F.size(unknown) > 0, F.concat(F.lit("unknown key(s) "), F.array_join(unknown, ", "),
                                                F.lit(f"; expected {', '.join(_KEYS)}")))
            .when(is_graph & any_spo, F.lit("a graph item has 'triples' and no 's', 'p', 'o' keys"))
            .when(~is_graph & (missing_spo != ""), F.concat(F.lit("missing or null key(s) "), missing_spo,
                                                             F.lit(" (or 'triples' for a graph item)")))
            .when(~present[_K_T], F.lit("missing or null key 't' (the timestamp)"))
            .when(t1.isNull(), _bad_timestamp(_K_T, j[_K_T], time_unit))
            .when(present[_K_T_END] & t_end.isNull(), _bad_timestamp(_K_T_END, j[_K_T_END], time_unit))
            .when(t2 < t1, F.concat(F.lit("t_end ("), t2.cast("string"), F.lit(") is before t ("), t1.cast("string"),
                                    F.lit(")")))
            .when(is_graph & elements.isNull(), F.lit("'triples' must be a JSON array of [s, p, o] arrays"))
            .when(is_graph & (F.size(elements) == 0), F.lit("a graph item with no triples ('triples' is empty)"))
            .when(is_graph & (bad_shape > 0),
                  F.concat(F.lit("triples["), (bad_shape - 1).cast("string"),
                           F.lit("] must be an array of three terms [s, p, o]")))
            .when(term_error.isNotNull(), term_error)
        )
        return F.struct(F.transform(z["resolved"], lambda r: r["t"]).alias("triples"), t1.alias("t1"), t2.alias("t2"),
                        reason.alias("reason"))

    return (F.when(F.col(RAW).rlike(_BLANK), _nothing()).when(invalid_utf8(F.col(RAW)), _rejected(linescan.INVALID_UTF8))
            .otherwise(bound(bound(bound(line, parsed), terms), checked)))


#: an item's graph: its triples
_TRIPLES_TYPE = ArrayType(StructType([StructField(c, StringType()) for c in (S, P, O)]))
#: what the plain-line parser gives a line: whether it is plain, and then its triples and times
_PLAIN_TYPE = StructType([StructField("plain", BooleanType()), StructField("triples", _TRIPLES_TYPE),
                          StructField("t1", LongType()), StructField("t2", LongType())])


def _rejected(reason: str) -> Column:
    """What a line rejected before it is parsed parses to: no triple, no times, ``reason``. A line
    that is not UTF-8 is (its bytes give the reason, the first of every format's): no regular
    expression of the parse runs over it, however long it is."""
    return F.struct(F.lit(None).cast(_TRIPLES_TYPE).alias("triples"), F.lit(None).cast("long").alias("t1"),
                    F.lit(None).cast("long").alias("t2"), F.lit(reason).alias("reason"))


def _nothing() -> Column:
    """What a line that holds no item (blank, or a comment) parses to: no triple, no reject."""
    return F.struct(F.array().cast(_TRIPLES_TYPE).alias("triples"), F.lit(None).cast("long").alias("t1"),
                    F.lit(None).cast("long").alias("t2"), F.lit(None).cast("string").alias("reason"))


def _plain_lines(kind: str | None, prefixes: Mapping[str, str]):
    """A pandas UDF of ``(raw, file)``: each line parsed by ``cep.io.lineparse`` (``kind``'s
    parser; None: the parser of its file's extension, :func:`_extension_in`), ``plain`` false
    where it leaves the line to Spark's expressions (a blank line among them: the expressions
    skip it; a file of another extension, or one not in ASCII: they decide)."""
    prefixes = dict(prefixes)
    suffix = re.compile(r"(\.[^./]*)\Z")

    def kind_of(name: str) -> str | None:
        if kind is not None:
            return kind
        found = suffix.search(name)
        return EXTENSIONS.get(found.group(1).lower()) if found and found.group(1).isascii() else None

    def parse(raw: pd.Series, file: pd.Series) -> pd.DataFrame:
        texts, names = raw.tolist(), file.tolist()
        n = len(texts)
        plain, triples, t1, t2 = [False] * n, [None] * n, [None] * n, [None] * n
        kinds: dict = {}
        mine: dict = {JSONL: [], TSNT: []}
        for i, (text, name) in enumerate(zip(texts, names)):
            if isinstance(text, str) and isinstance(name, str):
                known = kinds.get(name, False)
                if known is False:
                    known = kinds[name] = kind_of(name)
                if known is not None:
                    mine[known].append(i)
        for fmt, rows in mine.items():
            if not rows:
                continue
            cache: dict = {}        # each parser's terms (a prefix resolves in JSON Lines only)
            lines = pa.array([texts[i] for i in rows], pa.string())
            files = pa.array([names[i] for i in rows], pa.string())
            # the common lines in one compiled pass (cep.io.linescan), the others one by one; a
            # line that neither takes as it is stays for Spark's expressions
            kind, found = (linescan.scan(lines, files, prefixes, cache) if fmt == JSONL
                           else linescan.scan_tsnt(lines, files, cache))
            for j, s_, p_, o_, a, b in zip(found.at.tolist(), *(found.terms[c].to_pylist() for c in (S, P, O)),
                                          found.t1.tolist(), found.t2.tolist()):
                i = rows[j]
                plain[i], triples[i], t1[i], t2[i] = True, [{S: s_, P: p_, O: o_}], a, b
            for j in np.nonzero(kind == linescan.SLOW)[0].tolist():
                i = rows[j]
                got = (parse_jsonl(texts[i], names[i], 0, prefixes, cache) if fmt == JSONL
                       else parse_tsnt(texts[i], names[i], 0, cache))
                if got:
                    plain[i], triples[i] = True, [{S: g[1], P: g[2], O: g[3]} for g in got]
                    t1[i], t2[i] = got[0][4], got[0][5]
        return pd.DataFrame({"plain": plain, "triples": triples, "t1": pd.array(t1, dtype="Int64"),
                             "t2": pd.array(t2, dtype="Int64")})

    return F.pandas_udf(parse, _PLAIN_TYPE)


def _parsed_rows(content: DataFrame, parsed: Column, fast=None) -> tuple[DataFrame, Column]:
    """``content``'s lines with the columns of ``parsed`` (a struct of ``triples``, ``t1``, ``t2``,
    ``reason``), and the reason. ``fast``: :func:`_plain_lines`' UDF, whose plain lines skip
    ``parsed`` (a CASE WHEN evaluates the branch it takes only)."""
    if fast is not None:
        # a line that is not UTF-8 stays with the expressions (which reject it): Arrow cannot hand
        # its bytes to pandas as a string, and one such line failed the whole batch's task
        valid = F.when(F.is_valid_utf8(F.col(RAW)), F.col(RAW))
        content = content.select("*", fast(valid, F.col(FILE)).alias("_plain"))
        quick = F.col("_plain")
        parsed = F.when(quick["plain"], F.struct(quick["triples"].alias("triples"), quick["t1"].alias("t1"),
                                                 quick["t2"].alias("t2"), F.lit(None).cast("string").alias("reason"))
                        ).otherwise(parsed)
    rows = content.select(FILE, LINE, RAW, once(parsed).alias("_parsed"))
    rows = rows.select(FILE, LINE, RAW, F.col("_parsed")["triples"].alias("_triples"),
                       F.col("_parsed")["t1"].alias("_t1"), F.col("_parsed")["t2"].alias("_t2"), "_parsed")
    return rows, F.col("_parsed")["reason"]


# --- timestamped N-Triples ------------------------------------------------------------------

def _tsnt(time_unit: str, scope: Column) -> Column:
    """A timestamped N-Triples line (``raw``) parsed as :func:`_jsonl` parses its lines (one
    (s, p, o) struct; no triple and no reason for a blank line or a comment), in stages, each
    bound once."""

    def split(raw: Column) -> Column:
        # One regex evaluation per line: the four groups joined by LF (which no line contains).
        parts = F.split(F.regexp_replace(raw, _TSNT_LINE, "$1\n$2\n$3\n$4"), "\n")
        return F.struct(raw.alias("raw"), parts.alias("parts"), (F.size(parts) == 4).alias("good"))

    def stamped(x: Column) -> Column:
        stamp = F.when(x["good"], x["parts"][3])
        return F.struct(x.alias("x"), stamp.alias("stamp"), _ticks(stamp, time_unit).alias("ticks"),
                        F.when(x["good"], canonical_term(x["parts"][2])).alias("object"))

    def at(column: Column, text: str) -> Column:
        return F.concat(F.lit(text + " at column "), column.cast("string"))

    def checked(y: Column) -> Column:
        x = y["x"]
        raw, parts, good = x["raw"], x["parts"], x["good"]
        triple = _triple_struct(scope_bnode(parts[0], scope), parts[1],
                                bound(y["object"], lambda o: scope_bnode(o, scope)))
        reason = (
            F.when(~raw.rlike(NT_OBJECT), reject_reason(raw))  # subject / predicate / object, from the loader
            .when(~raw.rlike(_BEFORE_TS + "\""),
                  at(column_after(rf"{NT_OBJECT}{NT_WS}\.?", raw), "expected a quoted timestamp \"...\" after the object"))
            .when(~raw.rlike(_UP_TO_TS), at(column_after(_BEFORE_TS, raw), "malformed timestamp literal"))
            .when(~good, at(column_after(_UP_TO_TS + rf"{NT_WS}\.?", raw), "unexpected text after the timestamp"))
            .when(y["ticks"].isNull(), _bad_timestamp("timestamp", y["stamp"], time_unit))
        )
        return F.struct(F.when(good, F.array(triple)).alias("triples"), y["ticks"].alias("t1"),
                        y["ticks"].alias("t2"), reason.alias("reason"))

    return F.when(F.col(RAW).rlike(NT_BLANK_OR_COMMENT), _nothing()).when(
        invalid_utf8(F.col(RAW)), _rejected(linescan.INVALID_UTF8)).otherwise(
        bound(bound(bound(F.col(RAW), split), stamped), checked))
