"""Read RDF sources into a DataFrame of N-Triples strings ``(s, p, o)``, with Spark.

* N-Triples (``.nt``, ``.ntriples``) is read by Spark, line-parallel: every line is matched
  against the N-Triples grammar (``rdfcore.sources``) with SQL regular expressions (no Python
  UDF). A bad line does not stop the load: it goes to the ``rejects`` DataFrame with file, line
  number, reason and the raw text, and :attr:`Loaded.rejected` counts them.
* Turtle, RDF/XML, N3 and the other formats rdflib knows are parsed by rdflib on the driver
  (``rdfcore.sources.parse_with_rdflib``; files that fit in memory).

``owl:imports`` are not followed unless ``follow_imports=True``; then ``file:`` IRIs and paths
relative to the importing file are loaded too, and any other IRI is an error. The sources are
walked by ``rdfcore.sources.walk_sources``, which ``rdfcore.sources.load_local`` (the same
load on the driver, with no Spark) shares.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from rdfcore.fs import spark_path
from rdfcore.schema import FILE, ID_COLUMNS, LINE, O, P, RAW, REASON, S
from rdfcore.sources import (NT_BLANK_OR_COMMENT, NT_LINE, NT_OBJECT, NT_PREDICATE, NT_STATEMENT, NT_SUBJECT,
                             NT_WS, Source, walk_sources)
from rdfcore.vocab import OWL_IMPORTS, XSD_STRING

TRIPLE_SCHEMA = StructType([StructField(S, StringType(), False), StructField(P, StringType(), False),
                            StructField(O, StringType(), False)])

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


# --- N-Triples on Spark -------------------------------------------------------------------
# RDF 1.1 N-Triples grammar [2]-[18], as Java regular expressions (Spark's regex engine).
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
        .when(~line.rlike(NT_SUBJECT), at(column_after("^", line), "expected a subject (IRI <...> or blank node _:x)"))
        .when(~line.rlike(NT_PREDICATE), at(column_after(NT_SUBJECT, line), "expected a predicate IRI <...>"))
        .when(~line.rlike(NT_OBJECT), at(column_after(NT_PREDICATE, line),
                                       "expected an object (IRI, blank node or literal \"...\")"))
        .when(~line.rlike(NT_STATEMENT), at(column_after(NT_OBJECT, line), "expected '.' to end the statement"))
        .otherwise(at(column_after(NT_STATEMENT, line), "unexpected text after '.'"))
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
#: U+2029, which ``NT_LINE`` leaves in the object). Such a line is one ``NT_LINE`` accepts, with
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
    parts = F.split(F.regexp_replace(line, NT_LINE, "$1\n$2\n$3"), "\n")
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
    sources, rows = walk_sources(paths, formats or {}, follow_imports, on_ntriples, marks or {}, prefixes)

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


