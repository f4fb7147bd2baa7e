"""Read RDF sources into a DataFrame of N-Triples strings ``(s, p, o)``.

Two readers:

* N-Triples (``.nt``, ``.ntriples``) is read by Spark, line-parallel: every line is matched
  against the N-Triples grammar with SQL regular expressions (no Python UDF). A bad line does
  not stop the load: it goes to the ``rejects`` DataFrame with file, line number, reason and the
  raw text, and :attr:`Loaded.rejected` counts them.
* Turtle, RDF/XML (``.rdf``, ``.owl``, ``.xml``), N3 and other formats rdflib knows are parsed by
  rdflib on the driver (files that fit in memory). A syntax error stops the load with
  :class:`RDFLoadError` naming file, line and column. RDF/XML is parsed without resolving
  external entities: a document declaring one is refused.

``owl:imports`` are not followed unless ``follow_imports=True``; then ``file:`` IRIs and paths
relative to the importing file are loaded too, and any other IRI is an error.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path

import rdflib
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from rdfcore.errors import SidecarError
from rdfcore.fs import spark_path
from rdfcore.locations import location
from rdfcore.schema import FILE, ID_COLUMNS, LINE, O, P, RAW, REASON, S
from rdfcore.terms import from_rdflib
from rdfcore.vocab import OWL_IMPORTS, XSD_STRING

TRIPLE_SCHEMA = StructType([StructField(S, StringType(), False), StructField(P, StringType(), False),
                            StructField(O, StringType(), False)])

_RDFLIB_FORMATS = {
    ".ttl": "turtle", ".turtle": "turtle", ".n3": "n3", ".rdf": "xml", ".owl": "xml", ".xml": "xml",
    ".jsonld": "json-ld", ".trig": "trig", ".nq": "nquads",
}
_NT_SUFFIXES = (".nt", ".ntriples")
FORMATS = sorted({"ntriples", *_RDFLIB_FORMATS.values()})


class RDFLoadError(SidecarError, ValueError):
    """A source cannot be read: names the file, line and column (where known) and the problem."""

    def __init__(self, file: str, problem: str, line: int | None = None, column: int | None = None):
        self.file, self.problem, self.line, self.column = file, problem, line, column
        where = file if line is None else f"{file}:{line}" + ("" if column is None else f":{column}")
        super().__init__(f"{where}: {problem}")


@dataclasses.dataclass(frozen=True)
class Source:
    """One input file as recorded in a manifest."""

    path: str
    format: str
    sha256: str
    bytes: int


@dataclasses.dataclass
class Loaded:
    triples: DataFrame  # (s, p, o) N-Triples strings, duplicates possible
    rejects: DataFrame  # (file, line, reason, raw)
    sources: list[Source]
    _read: Callable[[str | Path | None], tuple[DataFrame, DataFrame]] | None = None
    #: path → (SHA-256, lines, ends a line) of its first ``marks[path]`` bytes (see :func:`load`)
    prefixes: dict[str, tuple[str, int, bool]] = dataclasses.field(default_factory=dict)

    def staged(self, directory: str | Path) -> "Loaded":
        """The same, with the N-Triples parsed once into Parquet under ``directory`` (see
        :func:`read_ntriples`): for a pipeline that reads the triples and the rejects several times."""
        if self._read is None:
            return self
        triples, rejects = self._read(directory)
        return Loaded(triples, rejects, self.sources, prefixes=self.prefixes)

    @property
    def rejected(self) -> int:
        return self.rejects.count()


def hash_file(path: Path, mark: int | None = None,
              chunk: int = 1 << 22) -> tuple[str, tuple[str, int, bool] | None]:
    """SHA-256 of the file and, with ``mark``, of its first ``mark`` bytes in the same pass: (their
    SHA-256, their line count, whether they end a line) — what incremental refresh checks an
    appended file against (None when the file is shorter)."""
    digest, prefix, lines, done, previous_last = hashlib.sha256(), None, 0, 0, b"\n"
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            if mark is not None and prefix is None and done + len(block) >= mark:
                head = block[:mark - done]
                digest.update(head)
                lines += head.count(b"\n")
                last = head[-1:] if head else previous_last
                prefix = (digest.copy().hexdigest(), lines, last in (b"\n", b"\r"))
                digest.update(block[mark - done:])
            else:
                digest.update(block)
                if mark is not None and prefix is None:
                    lines += block.count(b"\n")
            previous_last = block[-1:]
            done += len(block)
    if mark == 0 and prefix is None:                        # an empty file
        prefix = (hashlib.sha256().hexdigest(), 0, True)
    return digest.hexdigest(), prefix


def detect_format(path: Path, explicit: str | None = None) -> str:
    if explicit:
        if explicit not in FORMATS:
            raise RDFLoadError(str(path), f"unknown format {explicit!r}; expected one of {', '.join(FORMATS)}")
        return explicit
    suffix = path.suffix.lower()
    if suffix in _NT_SUFFIXES:
        return "ntriples"
    if suffix in _RDFLIB_FORMATS:
        return _RDFLIB_FORMATS[suffix]
    raise RDFLoadError(str(path), f"cannot tell the RDF format from the extension {suffix!r}; expected one of "
                                  f"{', '.join(sorted(set(_NT_SUFFIXES) | set(_RDFLIB_FORMATS)))}")


# --- N-Triples on Spark -------------------------------------------------------------------
# RDF 1.1 N-Triples grammar [2]-[18], as Java regular expressions (Spark's regex engine).
_UCHAR = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}"
NT_IRI = r"<(?:[^<>\"{}|^`\\\x00-\x20]++|" + _UCHAR + r")*+>"
NT_BNODE = r"_:[^\s<>\"]*[^\s<>\".]"
NT_LITERAL = (r"\"(?:[^\"\\\n\r]++|\\[tbnrf\"'\\]|" + _UCHAR + r")*+\""
            r"(?:@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*|\^\^" + NT_IRI + r")?")
NT_WS = r"[ \t]*"
_SUBJECT = rf"^{NT_WS}({NT_IRI}|{NT_BNODE})"
_PREDICATE = rf"{_SUBJECT}{NT_WS}({NT_IRI})"
NT_OBJECT = rf"{_PREDICATE}{NT_WS}({NT_IRI}|{NT_BNODE}|{NT_LITERAL})"
_STATEMENT = rf"{NT_OBJECT}{NT_WS}\."
_LINE = rf"{_STATEMENT}{NT_WS}(?:#.*)?$"
NT_BLANK_OR_COMMENT = rf"^{NT_WS}(?:#.*)?$"


def column_after(prefix_regex: str, line: Column) -> Column:
    """1-based column just after what ``prefix_regex`` matched, skipping blanks."""
    return F.length(F.regexp_extract(line, prefix_regex + NT_WS, 0)) + 1


def invalid_utf8(line: Column) -> Column:
    """Whether a line read by Spark's text reader is not UTF-8: the reader keeps a file's bytes as
    they are, so bad bytes stay in the string; U+FFFD (what a decoder puts for them, and what the
    driver-side reader sees) counts as bad too, so both readers refuse the same lines."""
    return ~F.is_valid_utf8(line) | (F.instr(line, "\ufffd") > 0)


def reject_reason(line: Column) -> Column:
    """Why a line is not an N-Triples statement, with the column where parsing stopped."""
    def at(column: Column, text: str) -> Column:
        return F.concat(F.lit(text + " at column "), column.cast("string"))

    return (
        F.when(invalid_utf8(line), F.lit("invalid UTF-8 byte sequence"))
        .when(~line.rlike(_SUBJECT), at(column_after("^", line), "expected a subject (IRI <...> or blank node _:x)"))
        .when(~line.rlike(_PREDICATE), at(column_after(_SUBJECT, line), "expected a predicate IRI <...>"))
        .when(~line.rlike(NT_OBJECT), at(column_after(_PREDICATE, line),
                                       "expected an object (IRI, blank node or literal \"...\")"))
        .when(~line.rlike(_STATEMENT), at(column_after(NT_OBJECT, line), "expected '.' to end the statement"))
        .otherwise(at(column_after(_STATEMENT, line), "unexpected text after '.'"))
    )


def canonical_term(term: Column) -> Column:
    """Lower-case language tags, drop ``^^xsd:string`` (RDF 1.1 simple literals)."""
    tagged = r'^(".*")@([a-zA-Z0-9-]+)$'
    lang = F.regexp_extract(term, tagged, 2)
    with_lang = F.concat(F.regexp_extract(term, tagged, 1), F.lit("@"), F.lower(lang))
    plain = F.regexp_replace(term, "\\^\\^" + re.escape(XSD_STRING) + "$", "")
    return F.when(lang != "", with_lang).otherwise(plain)


def scope_bnode(term: Column, scope: Column) -> Column:
    """Blank-node labels are local to a file: ``_:x`` in file k becomes ``_:fk.x``."""
    return F.when(term.startswith("_:"), F.concat(F.lit("_:f"), scope, F.lit("."), F.substring(term, 3, 1 << 30))).otherwise(term)


def local_path_of(uri: Column) -> Column:
    """A Spark file URI (``_metadata.file_path``: ``file:/…`` or ``file:///…``, percent-encoded) as
    the local path (a Hadoop URL stays one: ``HadoopPath.resolve()`` qualifies it the way Spark does)."""
    return F.url_decode(F.regexp_replace(uri, "^file:(//)?", ""))


def read_lines(spark: SparkSession, paths: Sequence[Path], *, decoded: bool = True) -> DataFrame:
    """Every line of ``paths`` as ``(raw, file, _block, _row)``, read by Spark line-parallel.

    ``file`` is the local path (the URL of a Hadoop path; with ``decoded=False`` Spark's URI of
    it, to be turned into the path by :func:`local_path_of` where it is needed: a regex and a
    percent-decoding a line otherwise); ``_block``/``_row`` locate the line for
    :func:`with_line_numbers`.
    """
    locals_ = [str(p.resolve()) for p in paths]
    uri = F.col("_metadata.file_path")
    return spark.read.text([spark_path(p) for p in locals_]).select(
        F.col("value").alias(RAW),
        (local_path_of(uri) if decoded else uri).alias(FILE),
        F.col("_metadata.file_block_start").alias("_block"),
        F.monotonically_increasing_id().alias("_row"),
    )


def with_line_numbers(rows: DataFrame, lines: DataFrame) -> DataFrame:
    """``rows`` (a subset of :func:`read_lines`' ``lines``, any extra columns) with a 1-based
    ``line`` column instead of ``_block``/``_row``.

    The rows of one file block come out in order, so a row's line is the number of lines in the
    file's earlier blocks plus its offset inside its block: one small aggregation over ``lines``,
    broadcast back; no collect.
    """
    blocks = lines.groupBy(FILE, "_block").agg(F.count(F.lit(1)).alias("_n"), F.min("_row").alias("_first"))
    earlier = Window.partitionBy(FILE).orderBy("_block").rowsBetween(Window.unboundedPreceding, -1)
    blocks = blocks.withColumn("_before", F.coalesce(F.sum("_n").over(earlier), F.lit(0)))
    numbered = rows.join(F.broadcast(blocks), [FILE, "_block"])
    return numbered.withColumn(LINE, F.col("_before") + F.col("_row") - F.col("_first") + 1).drop(
        "_block", "_row", "_n", "_first", "_before")


#: An ASCII IRI without escapes (``NT_IRI`` less ``\\u`` escapes and non-ASCII characters).
_ASCII_IRI = r"<[!#-;=?-\[\]_a-z~]*>"
#: The bulk of instance data: ``<s> <p> <o> .`` in ASCII, one space between the parts, nothing
#: after the dot (``\z``: Java's ``$`` would also match before a final U+0085, U+2028 or
#: U+2029, which ``_LINE`` leaves in the object). Such a line is one ``_LINE`` accepts, with
#: these three IRIs as its terms (no literal to canonicalise, no blank node to scope, no byte
#: that could be invalid UTF-8), so :func:`read_ntriples` splits it at its spaces instead of
#: running the full grammar's regex.
_PLAIN_LINE = rf"^{_ASCII_IRI} {_ASCII_IRI} {_ASCII_IRI} \.\z"


def read_ntriples(spark: SparkSession, paths: Sequence[Path], scopes: Sequence[int],
                  stage: str | Path | None = None) -> tuple[DataFrame, DataFrame]:
    """Line-parallel N-Triples reader: ``(triples, rejects)``; rejects carry 1-based line numbers.

    With ``stage`` (a directory that does not exist yet), every line is parsed once into a
    Parquet table there — terms and their ids (``ID_COLUMNS``) of good lines, raw text of bad
    ones, positions of all — and both results read it, instead of parsing the text again for
    each (the bulk path of ``reasoner.publish``: dictionary, encoding and rejects then cost a
    columnar scan each); the triples then carry ``ID_COLUMNS`` too."""
    locals_ = [str(p.resolve()) for p in paths]
    scope_of = F.create_map(*[x for path, k in zip(locals_, scopes) for x in (F.lit(path), F.lit(str(k)))])
    raw = read_lines(spark, paths, decoded=False)
    line, term, is_plain, is_good = F.col(RAW), F.col("_t"), F.col("_plain"), F.col("_good")
    # Other lines: one regex evaluation, the three groups joined by LF (which no line contains).
    # Each step is a projection of its own and reads the previous one's columns: within one
    # projection, Spark's common-subexpression elimination would compute the regex for the plain
    # lines too, since it appears in several expressions.
    parts = F.split(F.regexp_replace(line, _LINE, "$1\n$2\n$3"), "\n")
    # a plain line splits into its three terms and the dot; a good other line into three terms
    good = is_plain | ((F.size(term) == 3) & ~invalid_utf8(line))
    bad = ~is_good & ~line.rlike(NT_BLANK_OR_COMMENT)
    # a blank node's scope, looked up for the lines that are not plain only (CASE is lazy)
    scope = F.coalesce(scope_of[local_path_of(F.col(FILE))], F.lit("x"))

    def full(value: Column) -> Column:
        return F.when(is_plain, value).when(is_good, scope_bnode(value, scope))

    positions = (RAW, FILE, "_block", "_row")
    parsed = (raw.select(line.rlike(_PLAIN_LINE).alias("_plain"), *positions)
              .select(F.when(is_plain, F.split(line, " ", 4)).otherwise(parts).alias("_t"), "_plain", *positions)
              .select("_t", "_plain", good.alias("_good"), *positions)
              .select(full(term[0]).alias(S),
                      F.when(is_good, term[1]).alias(P),
                      # only literals change under canonical_term: IRIs and blank nodes skip its regexes
                      full(F.when(~is_plain & term[2].startswith('"'), canonical_term(term[2]))
                           .otherwise(term[2])).alias(O),
                      F.when(bad, F.make_valid_utf8(RAW)).alias(RAW), FILE, "_block", "_row"))
    columns, good_line = [S, P, O], F.col(S).isNotNull()
    if stage is not None:
        # null for the other lines, so that the good lines are found without reading a string
        parsed = parsed.select("*", *[F.when(good_line, F.xxhash64(c)).alias(i) for c, i in zip(columns, ID_COLUMNS)])
        parsed.write.mode("error").parquet(str(stage))
        parsed = spark.read.parquet(spark_path(stage))
        columns, good_line = columns + list(ID_COLUMNS), F.col(ID_COLUMNS[0]).isNotNull()
    triples = parsed.filter(good_line).select(*columns)
    rejects = with_line_numbers(parsed.filter(F.col(RAW).isNotNull()), parsed.select(FILE, "_block", "_row")).select(
        local_path_of(F.col(FILE)).alias(FILE), F.col(LINE), reject_reason(F.col(RAW)).alias(REASON), F.col(RAW))
    return triples, rejects


# --- N-Triples on the driver (the small-input path, ``reasoner.local``) ---------------------
# The same grammar and the same answers as the Spark reader above, line for line: the patterns
# are translated to Python's ``re`` (3.11 has possessive quantifiers) with Java's meaning of
# ``.`` and ``$`` (they stop at Java's line terminators) and of ``\s`` (ASCII blanks only).
_JAVA_DOT = "[^\n\r\u0085\u2028\u2029]"
_JAVA_END = "(?=[\u0085\u2028\u2029]?\\Z)"


def python_regex(java: str) -> re.Pattern:
    """One of this module's Java regular expressions as a Python pattern that matches the same."""
    out, i, in_class = [], 0, False
    while i < len(java):
        c = java[i]
        if c == "\\":
            pair = java[i:i + 2]
            out.append(" \t\n\x0b\x0c\r" if pair == r"\s" and in_class else pair)
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == ".":
            c = _JAVA_DOT
        elif c == "$":
            c = _JAVA_END
        out.append(c)
        i += 1
    return re.compile("".join(out))


_PY = {name: python_regex(java) for name, java in (
    ("line", _LINE), ("blank", NT_BLANK_OR_COMMENT), ("subject", _SUBJECT), ("predicate", _PREDICATE),
    ("object", NT_OBJECT), ("statement", _STATEMENT), ("ws", NT_WS),
    ("tagged", r'^(".*")@([a-zA-Z0-9-]+)$'), ("xsd_string", "\\^\\^" + re.escape(XSD_STRING) + "$"))}
_TERMINATOR = re.compile("\r\n|\r|\n")


def split_lines(data: bytes) -> list[str]:
    """A file's lines as Spark's text reader gives them: UTF-8 with U+FFFD for bad bytes, split
    at ``\\n``, ``\\r\\n`` or ``\\r``, no empty line after a final terminator."""
    lines = _TERMINATOR.split(data.decode("utf-8", errors="replace"))
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _python_reason(line: str) -> str:
    """:func:`reject_reason` on the driver."""
    def after(prefix: re.Pattern) -> int:   # column_after
        match = re.search(prefix.pattern + _PY["ws"].pattern, line)
        return (len(match.group(0)) if match else 0) + 1

    if "\ufffd" in line:
        return "invalid UTF-8 byte sequence"
    steps = (("subject", None, "expected a subject (IRI <...> or blank node _:x)"),
             ("predicate", "subject", "expected a predicate IRI <...>"),
             ("object", "predicate", "expected an object (IRI, blank node or literal \"...\")"),
             ("statement", "object", "expected '.' to end the statement"))
    for name, before, text in steps:
        if not _PY[name].search(line):
            column = 1 + len(_PY["ws"].match(line).group(0)) if before is None else after(_PY[before])
            return f"{text} at column {column}"
    return f"unexpected text after '.' at column {after(_PY['statement'])}"


def _python_canonical(term: str) -> str:
    """:func:`canonical_term` on the driver."""
    tagged = _PY["tagged"].search(term)
    if tagged:
        return f"{tagged.group(1)}@{tagged.group(2).lower()}"
    return _PY["xsd_string"].sub("", term, count=1)


def parse_ntriples_local(path: Path, scope: int) -> tuple[list[tuple[str, str, str]], list[tuple]]:
    """:func:`read_ntriples` for one file on the driver: ``(triples, rejects)``, rejects as
    ``(file, line, reason, raw)`` with the same file name, line numbers and reasons."""
    file = str(path.resolve())
    tag = f"_:f{scope}."
    triples, rejects = [], []
    line_re, blank_re = _PY["line"], _PY["blank"]
    for number, line in enumerate(split_lines(path.read_bytes()), start=1):
        match = line_re.search(line)
        if match is None or "\ufffd" in line:
            if not blank_re.search(line):
                rejects.append((file, number, _python_reason(line), line))
            continue
        # Spark replaces the match by the three groups: text after it (``$`` matches before a
        # final Java line terminator) stays on the object
        s, p, o = match.group(1), match.group(2), _python_canonical(match.group(3) + line[match.end():])
        if s.startswith("_:"):
            s = tag + s[2:]
        if o.startswith("_:"):
            o = tag + o[2:]
        triples.append((s, p, o))
    return triples, rejects


# --- rdflib formats -----------------------------------------------------------------------
_EXTERNAL_ENTITY = re.compile(rb"<!ENTITY\s+%?\s*[^\s>]+\s+(SYSTEM|PUBLIC)\b")


def _refuse_external_entities(path: Path, data: bytes) -> None:
    match = _EXTERNAL_ENTITY.search(data)
    if match:
        line = data.count(b"\n", 0, match.start()) + 1
        column = match.start() - (data.rfind(b"\n", 0, match.start()) + 1) + 1
        raise RDFLoadError(str(path), "the document declares an external entity; external entities are not "
                                      "resolved (inline the content or declare an internal entity)", line, column)


def parse_with_rdflib(path: Path, fmt: str, scope: int) -> rdflib.Graph:
    """Parse one file with rdflib, turning its exceptions into a located :class:`RDFLoadError`."""
    data = path.read_bytes()
    if fmt == "xml":
        _refuse_external_entities(path, data)
    graph = rdflib.Graph()
    try:
        graph.parse(data=data, format=fmt, publicID=path.resolve().as_uri())
    except SyntaxError as exc:  # rdflib's Turtle/N3 BadSyntax
        text, offset = getattr(exc, "_str", b""), getattr(exc, "_i", None)
        line = getattr(exc, "lines", None)
        column = None
        if isinstance(text, bytes) and offset is not None:
            column = offset - (text.rfind(b"\n", 0, offset) + 1) + 1
        why = getattr(exc, "_why", None) or str(exc)
        raise RDFLoadError(str(path), f"bad {fmt} syntax: {why}", None if line is None else line + 1, column) from None
    except Exception as exc:  # noqa: BLE001 - every parser error becomes a located load error
        line = exc.getLineNumber() if hasattr(exc, "getLineNumber") else None
        column = exc.getColumnNumber() if hasattr(exc, "getColumnNumber") else None
        message = exc.getMessage() if hasattr(exc, "getMessage") else str(exc)
        raise RDFLoadError(str(path), f"bad {fmt} document: {message}", line, column) from None
    return graph


def _import_target(importer: Path, iri: str) -> Path:
    if iri.startswith("file:"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(iri).path))
    raise RDFLoadError(str(importer), f"owl:imports <{iri}> cannot be followed: only file: IRIs are loaded; "
                                      f"pass the imported ontology as another source instead")


def _walk(paths: Sequence[str | Path], formats: dict[str, str], follow_imports: bool,
          on_ntriples, marks: dict[str, int] | None = None,
          prefixes: dict | None = None) -> tuple[list[Source], list[tuple[str, str, str]]]:
    """Visit the sources (and, with ``follow_imports``, what they import) once each: N-Triples
    files go to ``on_ntriples(path, scope)``, which returns their ``owl:imports`` IRIs when asked
    to follow them; other formats are parsed by rdflib here. Returns the sources and rdflib's
    triples."""
    queue = [location(p, "source") for p in paths]
    seen: set[Path] = set()
    sources: list[Source] = []
    rows: list[tuple[str, str, str]] = []
    while queue:
        path = queue.pop(0)
        resolved = path.resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        if not path.is_file():
            raise RDFLoadError(str(path), "no such file")
        fmt = detect_format(path, formats.get(str(path)))
        scope = len(sources)
        size = path.stat().st_size
        mark = (marks or {}).get(str(path))
        sha, prefix = hash_file(path, mark if mark is not None and mark <= size else None)
        if prefix is not None and prefixes is not None:
            prefixes[str(path)] = prefix
        sources.append(Source(str(path), fmt, sha, size))
        imports: list[str] = []
        if fmt == "ntriples":
            imports = on_ntriples(path, scope)
        else:
            graph = parse_with_rdflib(path, fmt, scope)
            tag = f"f{scope}."
            rows.extend((from_rdflib(s, tag), from_rdflib(p, tag), from_rdflib(o, tag)) for s, p, o in graph)
            if follow_imports:
                imports = [str(o) for o in graph.objects(None, rdflib.OWL.imports)]
        for iri in imports if follow_imports else ():
            target = _import_target(path, iri) if ":" in iri.split("/")[0] else (path.parent / iri)
            queue.append(target)
    return sources, rows


def load(spark: SparkSession, paths: Sequence[str | Path], *, formats: dict[str, str] | None = None,
         follow_imports: bool = False, marks: dict[str, int] | None = None) -> Loaded:
    """Load RDF files (see module doc). ``formats`` maps a path to an explicit format name.
    ``marks`` (path → bytes): also hash those files' first bytes, in the same pass as the whole
    file (``Loaded.prefixes``; incremental refresh checks that a file only grew)."""
    nt_paths: list[Path] = []
    nt_scopes: list[int] = []

    def on_ntriples(path: Path, scope: int) -> list[str]:
        nt_paths.append(path)
        nt_scopes.append(scope)
        if not follow_imports:
            return []
        lines = [r[0] for r in spark.read.text(spark_path(path)).filter(F.col("value").contains(OWL_IMPORTS))
                 .limit(10_000).collect()]
        return [m.group(1) for line in lines if (m := re.search(r"<([^>]*)>\s*\.\s*$", line))]

    prefixes: dict[str, tuple[str, int, bool]] = {}
    sources, rows = _walk(paths, formats or {}, follow_imports, on_ntriples, marks or {}, prefixes)

    def read(stage: str | Path | None) -> tuple[DataFrame, DataFrame]:
        parts: list[DataFrame] = []
        rejects = spark.createDataFrame([], f"{FILE} string, {LINE} long, {REASON} string, {RAW} string")
        if nt_paths:
            triples, rejects = read_ntriples(spark, nt_paths, nt_scopes, stage)
            parts.append(triples)
        if rows or not parts:
            part = spark.createDataFrame(rows, TRIPLE_SCHEMA)
            if stage is not None and nt_paths:    # the staged N-Triples carry their ids: so do these
                part = part.select("*", *[F.xxhash64(c).alias(i) for c, i in zip((S, P, O), ID_COLUMNS)])
            parts.append(part)
        triples = parts[0]
        for part in parts[1:]:
            triples = triples.unionByName(part)
        return triples, rejects

    return Loaded(*read(None), sources, read, prefixes)


@dataclasses.dataclass
class LoadedLocal:
    """What :func:`load_local` read: Python lists instead of DataFrames."""

    triples: list[tuple[str, str, str]]  # N-Triples strings, duplicates possible
    rejects: list[tuple[str, int, str, str]]  # (file, line, reason, raw)
    sources: list[Source]


def load_local(paths: Sequence[str | Path], *, formats: dict[str, str] | None = None,
               follow_imports: bool = False) -> LoadedLocal:
    """:func:`load` on the driver, without Spark: the same triples, rejects and sources."""
    triples: list[tuple[str, str, str]] = []
    rejects: list[tuple[str, int, str, str]] = []

    def on_ntriples(path: Path, scope: int) -> list[str]:
        found, bad = parse_ntriples_local(path, scope)
        triples.extend(found)
        rejects.extend(bad)
        return [o[1:-1] for _s, p, o in found if p == OWL_IMPORTS and o.startswith("<")] if follow_imports else []

    sources, rows = _walk(paths, formats or {}, follow_imports, on_ntriples)
    return LoadedLocal(triples + rows, rejects, sources)


def total_bytes(paths: Sequence[str | Path]) -> int:
    """The size of the named files (imports not followed): what ``engine="auto"`` decides on."""
    files = [location(p, "source") for p in paths]
    return sum(p.stat().st_size for p in files if p.is_file())
