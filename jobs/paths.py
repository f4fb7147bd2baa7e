"""Evaluate a property path (SPARQL 1.1 / nSPARQL nested regular expression) over RDF files.

    python -m jobs.paths --data FILE [FILE ...] --path 'EXPR' [--prefix p=IRI ...]
                         [--from TERM] [--to TERM] [--format tsv|csv|json] [--out FILE]
    spark-submit jobs/paths.py ...            (same arguments)
    rsp-sidecar paths ...                     (same arguments)

Prints the pairs of the pattern ``FROM EXPR TO`` (SPARQL 1.1 §18.5; a missing ``--from`` / ``--to``
is a variable) as SPARQL 1.1 query results with the variables ``start`` and ``end`` (W3C TSV, CSV
or JSON, see ``jobs/results.py``), sorted by their N-Triples form. The pairs are distinct (as
``SELECT DISTINCT``): SPARQL 1.1 evaluates ``/`` and ``|`` with bag semantics, and no ``--bag``
is offered because both executors deduplicate every intermediate relation (README, paths).

* ``--data``: N-Triples (read by Spark, line-parallel; bad lines are rejected, counted and
  reported on stderr with their file and line), Turtle, RDF/XML, N3, ... (parsed by rdflib) —
  ``rdfcore.loading``.
* Prefixes: those declared in Turtle / N3 / TriG inputs (as rdflib's parser reads them; a later
  file overrides an earlier one), then ``--prefix p=IRI`` (overrides). ``--prefix =IRI`` sets
  the empty prefix ``:``. Turtle inputs are parsed a second time, with no default bindings, to
  read exactly the prefixes they declare.
* ``--from`` / ``--to``: one RDF term — a prefixed name, an ``<IRI>``, a literal (``"x"``,
  ``"x"@en``, ``"5"^^xsd:integer``, ``5``, ``true``) or ``a`` — in the path's own syntax
  (SPARQL 1.1 GraphTerm [109]). Blank nodes are refused: their labels are local to each file.

Expected failures (path syntax errors with line, column and what was expected, an unknown
prefix, a missing or malformed file, a closure that does not converge) print one ``error:``
line and exit with code 2.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

if __package__ in (None, ""):  # run as a file by spark-submit: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.errors import job_main  # noqa: E402
from jobs.results import FORMATS, write_results  # noqa: E402
from rdfcore.errors import RDFLoadError, SidecarError  # noqa: E402
from rdfcore.fs import is_hadoop  # noqa: E402
from rdfcore.hashing import term_id  # noqa: E402
from rdfcore.locations import location  # noqa: E402
from rdfcore.schema import FILE, ID, LINE, REASON, TERM  # noqa: E402
from rdfcore.sources import detect_format, parse_with_rdflib  # noqa: E402

VARIABLES = ("start", "end")
_PREFIX_FORMATS = ("turtle", "n3", "trig")


class PathsError(SidecarError, ValueError):
    """An expected failure of the paths job, with a one-line message."""


@dataclass(frozen=True)
class Query:
    """What the command line asks for, checked before any Spark work."""

    files: tuple[Path, ...]
    path: object          # paths.algebra.Path
    start: str | None     # N-Triples term or None (a variable)
    end: str | None
    prefixes: dict[str, str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", nargs="+", required=True, metavar="FILE",
                        help="RDF files: .nt (read by Spark), .ttl, .rdf/.owl/.xml, .n3, ...")
    parser.add_argument("--path", required=True, metavar="EXPR",
                        help="property path / nested regular expression, e.g. '(^:beg/[:means :subway]/:end)+'")
    parser.add_argument("--prefix", action="append", default=[], metavar="P=IRI",
                        help="declare a prefix (repeatable; overrides the data files' prefixes); '=IRI' is ':'")
    parser.add_argument("--from", dest="start", metavar="TERM", help="the start term (default: a variable)")
    parser.add_argument("--to", dest="end", metavar="TERM", help="the end term (default: a variable)")
    parser.add_argument("--format", choices=FORMATS, default="tsv", help="SPARQL 1.1 results format (default tsv)")
    parser.add_argument("--out", metavar="FILE", help="write the results here instead of stdout")
    parser.add_argument("--base", metavar="IRI", help="base IRI for relative <iri> references in the path")
    parser.add_argument("--engine", choices=("auto", "spark", "local"), default="auto",
                        help="executor: Spark joins, or in memory in the driver; auto (default) runs graphs "
                             "whose index fits a quarter of the available memory (RSP_PATHS_MEMORY_BUDGET bytes "
                             "overrides) in memory. local (and auto on non-N-Triples files up to "
                             "16 MB) answers without starting Spark")
    parser.epilog = ("Results are distinct (start, end) pairs, as SELECT DISTINCT: SPARQL 1.1 gives sequence "
                     "(/) and alternative (|) paths bag semantics (one solution per intermediate node or "
                     "branch); there is no --bag, as both executors deduplicate every intermediate relation.")


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split("\n")[0].split())


def _cli_prefixes(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, namespace = item.partition("=")
        name = name.strip().rstrip(":")
        namespace = namespace.strip()
        if namespace.startswith("<") and namespace.endswith(">"):
            namespace = namespace[1:-1]
        if not sep or not namespace:
            raise PathsError(f"--prefix {item!r}: expected NAME=IRI (e.g. ex=http://example.org/), or =IRI for ':'")
        out[name] = namespace
    return out


def declared_prefixes(files: Sequence[Path]) -> dict[str, str]:
    """Prefixes declared in the Turtle / N3 / TriG files, as rdflib's parser reads them.

    A graph without rdflib's default bindings is used, so the result is exactly what the files
    declare (rdflib's defaults would shadow e.g. a file's own ``geo:``). A file that does not parse
    raises the loader's located :class:`rdfcore.errors.RDFLoadError`.
    """
    import rdflib


    prefixes: dict[str, str] = {}
    for path in files:
        try:
            fmt = detect_format(path)
        except RDFLoadError:
            continue
        if fmt not in _PREFIX_FORMATS:
            continue
        graph = rdflib.Graph(bind_namespaces="none")
        try:
            graph.parse(data=path.read_bytes(), format=fmt, publicID=path.resolve().as_uri())
        except Exception:  # noqa: BLE001 - let the loader's parser report it with file, line and column
            parse_with_rdflib(path, fmt, 0)
            raise
        prefixes.update((str(p), str(ns)) for p, ns in graph.namespace_manager.namespaces())
    return prefixes


def _term(option: str, text: str | None, prefixes: dict[str, str], base: str | None) -> str | None:
    """One RDF term in the path syntax (GraphTerm [109]), as an N-Triples string."""
    if text is None:
        return None
    from paths import PathSyntaxError, lower, parse
    from paths.algebra import SelfTerm

    head = "self::"  # nSPARQL self::t relates exactly t to itself: the parser reads t as a GraphTerm
    try:
        node = lower(parse(head + text, prefixes, base))
    except PathSyntaxError as error:
        column = max(1, error.column - len(head)) if error.line == 1 else error.column
        where = f"line {error.line}, column {column}: {error.reason}"
        expected = f"; expected {', '.join(error.expected)}" if error.expected else ""
        raise PathsError(f"{option} {text!r}: {where}{expected}") from None
    if not isinstance(node, SelfTerm):
        raise PathsError(f"{option} {text!r}: expected one RDF term (a prefixed name, <IRI> or literal), "
                         f"got a path")
    if node.term.startswith("_:"):
        raise PathsError(f"{option} {text!r}: blank nodes cannot be named here (their labels are local to "
                         f"each data file); use an IRI or a literal")
    return node.term


def prepare(args: argparse.Namespace) -> Query:
    """Everything that needs no Spark: files exist, prefixes, the path and the end terms parse."""
    from paths import PathSyntaxError, lower, parse

    files = tuple(location(f, "--data") for f in args.data)
    for path in files:
        if not path.is_file():
            raise PathsError(f"{path}: no such file")
    prefixes = declared_prefixes(files)
    prefixes.update(_cli_prefixes(args.prefix))
    try:
        path = lower(parse(args.path, prefixes, args.base))
    except PathSyntaxError as error:
        raise PathsError(f"--path {args.path!r}: {_one_line(error)}") from None
    start = _term("--from", args.start, prefixes, args.base)
    end = _term("--to", args.end, prefixes, args.base)
    return Query(files, path, start, end, prefixes)


def evaluate_query(spark, query: Query, out: TextIO, fmt: str, err: TextIO | None = None,
                   engine: str = "auto") -> int:
    """Load, encode, evaluate, decode and write; returns the number of result rows."""
    err = err if err is not None else sys.stderr
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from paths import evaluate
    from paths.local import LocalTooLarge
    from paths.spark import END, START, PathGraph, PathIterationLimit
    from rdfcore.dictionary import build_dictionary, decode, encode_triples, merge_dictionaries
    from rdfcore.loading import load

    loaded = load(spark, [str(f) for f in query.files])
    if any(s.format == "ntriples" for s in loaded.sources):
        rejected = loaded.rejected
        if rejected:
            first = loaded.rejects.orderBy(FILE, LINE).limit(3).collect()
            shown = "; ".join(f"{r[FILE]}:{r[LINE]}: {r[REASON]}" for r in first)
            print(f"warning: {rejected} line(s) of the N-Triples input rejected and ignored, e.g. {shown}", file=err)
    triples = loaded.triples.persist(StorageLevel.MEMORY_AND_DISK)
    encoded = encode_triples(triples).persist(StorageLevel.MEMORY_AND_DISK)
    dictionary = build_dictionary(triples)
    constants = [t for t in (query.start, query.end) if t is not None]
    if constants:  # a bound end relates to itself even when it is not in the data (§18.5)
        extra = spark.createDataFrame([(term_id(t), t) for t in constants], f"{ID} long, {TERM} string")
        dictionary = merge_dictionaries([dictionary, extra])
    try:
        pairs = evaluate(PathGraph(encoded), query.path, start=query.start, end=query.end, engine=engine)
        decoded = decode(pairs, dictionary, (START, END)).orderBy(F.col(START), F.col(END))
        rows = ({VARIABLES[0]: r[START], VARIABLES[1]: r[END]} for r in decoded.toLocalIterator())
        return write_results(rows, VARIABLES, fmt, out)
    except (PathIterationLimit, LocalTooLarge) as error:
        raise PathsError(str(error)) from None
    finally:
        encoded.unpersist()
        triples.unpersist()


def run(args: argparse.Namespace, spark=None, out: TextIO | None = None) -> int:

    try:
        return _run(args, spark, out)
    except RDFLoadError as error:  # rdflib's messages may span lines: keep the first
        raise PathsError(_one_line(error)) from None


#: ``--engine auto`` answers without starting Spark when the inputs (none of them N-Triples, which
#: Spark reads line-parallel with per-line rejects) add up to at most this many bytes.
LOCAL_FILE_BYTES = 16 * 1024 * 1024


def _without_spark(query: Query, engine: str) -> bool:
    if engine == "local":
        return True
    if engine != "auto":
        return False

    return (all(detect_format(f) != "ntriples" for f in query.files)
            and sum(f.stat().st_size for f in query.files) <= LOCAL_FILE_BYTES)


def evaluate_query_local(query: Query, out: TextIO, fmt: str) -> int:
    """The in-memory executor straight from the files: rdflib parses them (N-Triples too: a bad line
    is a located load error here, not a reject), ``paths.local`` evaluates, no JVM is started.
    Same terms (blank nodes scoped per file, as ``rdfcore.loading.load``), same sorted output."""
    from paths import local
    from paths.compiler import PathIterationLimit
    from rdfcore.terms import from_rdflib

    triples: set[tuple[str, str, str]] = set()
    for scope, path in enumerate(query.files):
        graph = parse_with_rdflib(path, detect_format(path), scope)
        tag = f"f{scope}."
        triples.update((from_rdflib(s, tag), from_rdflib(p, tag), from_rdflib(o, tag)) for s, p, o in graph)
    terms = {term_id(t): t for triple in triples for t in triple}
    terms.update((term_id(t), t) for t in (query.start, query.end) if t is not None)
    graph = local.LocalGraph.from_terms(sorted(triples))
    try:
        starts, ends = local.evaluate(graph, query.path, query.start, query.end)
    except PathIterationLimit as error:  # LocalTooLarge propagates: --engine auto then runs on Spark
        raise PathsError(str(error)) from None
    pairs = sorted((terms[int(a)], terms[int(b)]) for a, b in zip(starts, ends))
    rows = ({VARIABLES[0]: a, VARIABLES[1]: b} for a, b in pairs)
    return write_results(rows, VARIABLES, fmt, out)


def _write(query: Query, args: argparse.Namespace, out: TextIO | None, answer) -> None:
    if out is not None:
        answer(out)
    elif args.out:
        with location(args.out, "--out").open("w", encoding="utf-8", newline="") as handle:
            answer(handle)
    else:
        answer(sys.stdout)
        sys.stdout.flush()


def _run(args: argparse.Namespace, spark, out: TextIO | None) -> int:
    named = [location(f, "--data") for f in args.data] + ([location(args.out, "--out")] if args.out else [])
    if spark is None and any(map(is_hadoop, named)):     # reached through the session's JVM
        from jobs.spark import build_session

        spark = build_session("rsp-sidecar paths")
    query = prepare(args)
    if _without_spark(query, args.engine):
        from paths.local import LocalTooLarge

        try:
            _write(query, args, out, lambda handle: evaluate_query_local(query, handle, args.format))
            return 0
        except LocalTooLarge:
            if args.engine == "local":
                raise
    if spark is None:
        from jobs.spark import build_session

        spark = build_session("rsp-sidecar paths")
    _write(query, args, out, lambda handle: evaluate_query(spark, query, handle, args.format, engine=args.engine))
    return 0


def main(argv: list[str] | None = None, *, spark=None, out: TextIO | None = None) -> int:
    """CLI entry point. ``spark`` / ``out`` let tests reuse a session and capture the results."""
    return job_main("paths", __doc__, add_arguments, lambda args: run(args, spark, out), argv)


if __name__ == "__main__":
    sys.exit(main())
