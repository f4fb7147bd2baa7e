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

Rejects: a bad line — not a JSON object, an unknown or missing key, an unknown prefix, a
malformed term, a bad timestamp, ``t_end`` before ``t``, a malformed N-Triples statement — is
not loaded: it goes to ``rejects`` with the file, its 1-based line number, the reason and the raw
text, and ``rejected`` counts it. A graph item with one bad triple is rejected whole.

Ids: terms are encoded as ``rdfcore.dictionary`` does (``xxhash64`` of the N-Triples form, the
same id as in the static closure tables); literals are canonicalised (lower-case language tag,
no ``^^xsd:string``) and blank nodes are scoped to the file (``_:x`` becomes ``_:fs<hash>.x``,
the hash of the file's path), as ``rdfcore.loading`` does. The ``item`` id is ``xxhash64(file,
line)``: unique per line of a file. ``dictionary`` is built without a collision check (that
would run a Spark job here); ``jobs.query`` checks the union of all dictionaries it decodes with.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from cep.algebra.patterns import TIME_UNITS
# the stream-item column (a long id shared by the triples of one item) and the stream's columns
from cep.engines.columns import ITEM, STREAM_COLUMNS
from cep.io.formats import EXTENSIONS, FORMATS, JSONL, detect_stream_format
# The N-Triples grammar pieces and term normalisation of the static loader, reused as they are.
from rdfcore.loading import (canonical_term, column_after, invalid_utf8, read_lines, reject_reason, scope_bnode,
                             with_line_numbers)
from rdfcore.errors import RDFLoadError
from rdfcore.sources import NT_BLANK_OR_COMMENT, NT_BNODE, NT_IRI, NT_LITERAL, NT_OBJECT, NT_WS
from rdfcore.dictionary import build_dictionary, encode_column
from rdfcore.locations import location
from rdfcore.schema import FILE, LINE, O, P, RAW, REASON, S, T_END, T_START
from rdfcore.vocab import RDF_TYPE

__all__ = ["ITEM", "STREAM_COLUMNS", "Stream", "read_stream", "resolve_term"]


# JSON keys of an item
_K_S, _K_P, _K_O, _K_T, _K_T_END, _K_TRIPLES = "s", "p", "o", "t", "t_end", "triples"
_KEYS = (_K_S, _K_P, _K_O, _K_T, _K_T_END, _K_TRIPLES)
_JSON_SCHEMA = ", ".join(f"{k} string" for k in _KEYS)  # every value as its JSON text

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
                time_unit: str = "ms", fmt: str | None = None) -> Stream:
    """Read one stream file (module doc). Raises :class:`RDFLoadError` for a missing file or an
    unknown format, ``ValueError`` for an unknown time unit; bad lines become rejects."""
    check_time_unit(time_unit)
    path = location(path, "stream file")
    if not path.is_file():
        raise RDFLoadError(str(path), "no such file")
    fmt = detect_stream_format(path, fmt)
    raw = read_lines(spark, [path])
    lines = with_line_numbers(raw, raw).select(FILE, LINE, RAW)
    terms, rejects = parse_lines(lines, prefixes, time_unit, fmt)
    terms = terms.select(*STREAM_COLUMNS)
    triples = encode_items(terms)
    dictionary = build_dictionary(terms.select(S, P, O), check=False)
    return Stream(triples, terms, dictionary, rejects, str(path), fmt, time_unit)


def check_time_unit(time_unit: str) -> None:
    if time_unit not in TIME_UNITS:
        raise ValueError(f"unknown time unit {time_unit!r}; expected one of {', '.join(TIME_UNITS)}")


def file_scope(file: Column) -> Column:
    """The blank-node scope of a stream file: ``s`` + the first 12 hex digits of the SHA-256 of
    its local path (as ``rdfcore.loading`` scopes the static files)."""
    return F.concat(F.lit("s"), F.substring(F.sha2(file, 256), 1, 12))


def parse_lines(lines: DataFrame, prefixes: Mapping[str, str] | None, time_unit: str,
                fmt: str | None = None) -> tuple[DataFrame, DataFrame]:
    """Stream lines ``(file, line, raw)`` → ``(terms, rejects)`` (module doc).

    ``terms`` is ``(item, s, p, o, t_start, t_end, file, line)`` with N-Triples strings, ``rejects`` is
    ``(file, line, reason, raw)``. ``fmt`` None picks each file's format by its extension (a file
    with another extension is rejected line by line, with the reason). Both the file reader and the
    continuous runtime (``cep.continuous.runner``) read lines through here: one parser, one item id
    ``xxhash64(file, line)`` (stable when a file is read again).
    """
    check_time_unit(time_unit)
    parts = []
    scope = file_scope(F.col(FILE))
    prefixes = dict(prefixes or {})
    for kind in FORMATS:
        if fmt is not None and fmt != kind:
            continue
        mine = lines if fmt is not None else lines.filter(_extension_in(kind))
        rows, reason = _jsonl(mine, prefixes, time_unit, scope) if kind == JSONL else _tsnt(mine, time_unit, scope)
        parts.append(rows.select(FILE, LINE, RAW, "_triples", "_t1", "_t2", reason.alias(REASON)))
    checked = parts[0]
    for part in parts[1:]:
        checked = checked.unionByName(part)
    rejects = checked.filter(F.col(REASON).isNotNull()).select(FILE, LINE, REASON, RAW)
    if fmt is None:
        unknown = (lines.filter(~_extension_in(*FORMATS))
                   .select(FILE, LINE, F.lit(f"unknown stream format: the file's extension is none of "
                                             f"{', '.join(sorted(EXTENSIONS))}").alias(REASON), RAW))
        rejects = rejects.unionByName(unknown)
    item = F.xxhash64(F.col(FILE), F.col(LINE)).alias(ITEM)
    terms = (checked.filter(F.col(REASON).isNull())
             .select(item, F.explode("_triples").alias("_t"), F.col("_t1").alias(T_START), F.col("_t2").alias(T_END),
                     FILE, LINE)
             .select(ITEM, F.col("_t")[S].alias(S), F.col("_t")[P].alias(P), F.col("_t")[O].alias(O), T_START, T_END,
                     FILE, LINE))
    return terms, rejects


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

def resolve_term(term: Column, position: str, label: Column, prefixes: Column | None, scope: Column) -> Column:
    """``struct(v, e)``: the N-Triples form of a JSON term (null on error) and why it is bad.

    ``position`` is S, P or O (what the term may be); ``label`` names it in the reason.
    """
    allowed = {S: _AS_SUBJECT, P: _AS_PREDICATE, O: _AS_OBJECT}[position]
    pname_prefix = F.regexp_extract(term, _PNAME, 1)
    namespace = F.try_element_at(prefixes, pname_prefix) if prefixes is not None else F.lit(None).cast("string")
    expanded = F.concat(F.lit("<"), namespace, F.regexp_extract(term, _PNAME, 2), F.lit(">"))
    typed_prefix = F.regexp_extract(term, _TYPED_PNAME, 2)
    typed_namespace = (F.try_element_at(prefixes, typed_prefix) if prefixes is not None
                       else F.lit(None).cast("string"))
    typed = F.concat(F.regexp_extract(term, _TYPED_PNAME, 1), F.lit("^^<"), typed_namespace,
                     F.regexp_extract(term, _TYPED_PNAME, 3), F.lit(">"))
    is_a = F.lit(position == P) & (term == F.lit("a"))
    is_nt = term.rlike(allowed)
    is_pname = ~is_nt & term.rlike(_PNAME)
    is_typed = F.lit(position == O) & ~is_nt & ~is_pname & term.rlike(_TYPED_PNAME)

    def named(text: str) -> Column:
        return F.concat(label, F.lit(": " + text))

    value = (F.when(term.isNull(), None)
             .when(is_a, F.lit(RDF_TYPE))
             .when(is_nt, term)
             .when(is_pname & expanded.rlike(_IS_IRI), expanded)
             .when(is_typed & typed.rlike(_IS_LITERAL), typed))
    error = (F.when(term.isNull(), named("missing term (null)"))
             .when(is_a | is_nt, None)
             .when(is_pname & namespace.isNull(), F.concat(named("unknown prefix "), _quoted(F.concat(pname_prefix, F.lit(":")))))
             .when(is_pname & ~expanded.rlike(_IS_IRI), F.concat(named(""), _quoted(term), F.lit(" expands to an invalid IRI")))
             .when(is_pname, None)
             .when(is_typed & typed_namespace.isNull(),
                   F.concat(named("unknown prefix "), _quoted(F.concat(typed_prefix, F.lit(":")))))
             .when(is_typed & ~typed.rlike(_IS_LITERAL), F.concat(named("malformed literal "), _quoted(term)))
             .when(is_typed, None)
             .otherwise(F.concat(named(f"expected {_EXPECTED[position]}, got "), _quoted(term))))
    normal = scope_bnode(canonical_term(value), scope) if position == O else scope_bnode(value, scope)
    return F.struct(normal.alias("v"), error.alias("e"))


def _triple_struct(s: Column, p: Column, o: Column) -> Column:
    return F.struct(s.alias(S), p.alias(P), o.alias(O))


# --- JSON Lines -----------------------------------------------------------------------------

def _jsonl(lines: DataFrame, prefixes: dict[str, str], time_unit: str, scope: Column) -> tuple[DataFrame, Column]:
    """Rows with ``_triples`` (array of (s, p, o) structs), ``_t1``, ``_t2`` and the reject reason."""
    prefix_map = (F.create_map(*[F.lit(x) for k, v in prefixes.items() for x in (k, v)]) if prefixes else None)
    content = lines.filter(~F.col(RAW).rlike(_BLANK))
    rows = content.select(FILE, LINE, RAW, F.json_object_keys(F.col(RAW)).alias("_keys"),
                          F.from_json(F.col(RAW), _JSON_SCHEMA).alias("_j"))
    j, keys_c = F.col("_j"), F.col("_keys")
    present = {k: j[k].isNotNull() for k in _KEYS}
    is_graph = present[_K_TRIPLES]
    # a graph item: triples -> array of JSON texts -> arrays of 3 strings
    elements = F.from_json(j[_K_TRIPLES], "array<string>")
    graph = F.transform(elements, lambda e: F.from_json(e, "array<string>"))
    bad_shape = F.array_position(F.transform(graph, lambda x: x.isNull() | (F.size(x) != 3)), True)
    listed = F.when(is_graph, graph).otherwise(F.array(F.array(j[_K_S], j[_K_P], j[_K_O])))

    def resolved(triple: Column, index: Column) -> Column:
        where = F.when(is_graph, F.concat(F.lit("triples["), index.cast("string"), F.lit("]."))).otherwise(F.lit(""))
        parts = [resolve_term(F.try_element_at(triple, F.lit(k + 1)), pos, F.concat(where, F.lit(pos)), prefix_map, scope)
                 for k, pos in enumerate((S, P, O))]
        return F.struct(_triple_struct(*(x["v"] for x in parts)).alias("t"),
                        F.coalesce(*(x["e"] for x in parts)).alias("e"))

    t1, t2 = _ticks(j[_K_T], time_unit), _ticks(j[_K_T_END], time_unit)
    rows = rows.select("*", elements.alias("_elements"), bad_shape.alias("_bad_shape"), t1.alias("_t1"),
                       t2.alias("_t_end"), F.coalesce(t2, t1).alias("_t2"),
                       F.transform(listed, resolved).alias("_resolved"))
    rows = rows.select("*", F.try_element_at(F.filter(F.transform("_resolved", lambda r: r["e"]), lambda e: e.isNotNull()),
                                             F.lit(1)).alias("_term_error"),
                       F.transform("_resolved", lambda r: r["t"]).alias("_triples"))
    unknown = F.array_except(keys_c, F.array(*[F.lit(k) for k in _KEYS]))
    missing_spo = F.concat_ws(", ", *[F.when(~present[k], F.lit(k)) for k in (_K_S, _K_P, _K_O)])
    any_spo = present[_K_S] | present[_K_P] | present[_K_O]
    reason = (
        F.when(invalid_utf8(F.col(RAW)), F.lit("invalid UTF-8 byte sequence"))
        .when(keys_c.isNull() | ~F.col(RAW).rlike(r"^\s*\{.*\}\s*$"),
              F.when(F.col(RAW).rlike(r"^\s*\{"), F.lit("bad JSON: not a well-formed JSON object"))
              .otherwise(F.lit("bad JSON: expected one JSON object {...} per line")))
        .when(F.size(unknown) > 0, F.concat(F.lit("unknown key(s) "), F.array_join(unknown, ", "),
                                            F.lit(f"; expected {', '.join(_KEYS)}")))
        .when(is_graph & any_spo, F.lit("a graph item has 'triples' and no 's', 'p', 'o' keys"))
        .when(~is_graph & (missing_spo != ""), F.concat(F.lit("missing or null key(s) "), missing_spo,
                                                         F.lit(" (or 'triples' for a graph item)")))
        .when(~present[_K_T], F.lit("missing or null key 't' (the timestamp)"))
        .when(F.col("_t1").isNull(), _bad_timestamp(_K_T, j[_K_T], time_unit))
        .when(present[_K_T_END] & F.col("_t_end").isNull(), _bad_timestamp(_K_T_END, j[_K_T_END], time_unit))
        .when(F.col("_t2") < F.col("_t1"), F.concat(F.lit("t_end ("), F.col("_t2").cast("string"),
                                                   F.lit(") is before t ("), F.col("_t1").cast("string"), F.lit(")")))
        .when(is_graph & F.col("_elements").isNull(), F.lit("'triples' must be a JSON array of [s, p, o] arrays"))
        .when(is_graph & (F.size("_elements") == 0), F.lit("a graph item with no triples ('triples' is empty)"))
        .when(is_graph & (F.col("_bad_shape") > 0),
              F.concat(F.lit("triples["), (F.col("_bad_shape") - 1).cast("string"),
                       F.lit("] must be an array of three terms [s, p, o]")))
        .when(F.col("_term_error").isNotNull(), F.col("_term_error"))
    )
    return rows, reason


# --- timestamped N-Triples ------------------------------------------------------------------

def _tsnt(lines: DataFrame, time_unit: str, scope: Column) -> tuple[DataFrame, Column]:
    """Rows with ``_triples`` (one (s, p, o) struct), ``_t1``, ``_t2`` and the reject reason."""
    content = lines.filter(~F.col(RAW).rlike(NT_BLANK_OR_COMMENT))
    raw = F.col(RAW)
    # One regex evaluation per line: the four groups joined by LF (which no line contains).
    parts = F.split(F.regexp_replace(raw, _TSNT_LINE, "$1\n$2\n$3\n$4"), "\n")
    good = F.size(parts) == 4
    stamp = F.when(good, parts[3])
    triple = _triple_struct(scope_bnode(parts[0], scope), parts[1], scope_bnode(canonical_term(parts[2]), scope))
    ticks = _ticks(stamp, time_unit)
    rows = content.select(FILE, LINE, RAW, good.alias("_good"), stamp.alias("_stamp"),
                          F.when(good, F.array(triple)).alias("_triples"), ticks.alias("_t1"), ticks.alias("_t2"))

    def at(column: Column, text: str) -> Column:
        return F.concat(F.lit(text + " at column "), column.cast("string"))

    raw = F.col(RAW)
    reason = (
        F.when(invalid_utf8(raw), F.lit("invalid UTF-8 byte sequence"))
        .when(~raw.rlike(NT_OBJECT), reject_reason(raw))  # subject / predicate / object, from the loader
        .when(~raw.rlike(_BEFORE_TS + "\""),
              at(column_after(rf"{NT_OBJECT}{NT_WS}\.?", raw), "expected a quoted timestamp \"...\" after the object"))
        .when(~raw.rlike(_UP_TO_TS), at(column_after(_BEFORE_TS, raw), "malformed timestamp literal"))
        .when(~F.col("_good"), at(column_after(_UP_TO_TS + rf"{NT_WS}\.?", raw), "unexpected text after the timestamp"))
        .when(F.col("_t1").isNull(), _bad_timestamp("timestamp", F.col("_stamp"), time_unit))
    )
    return rows, reason
