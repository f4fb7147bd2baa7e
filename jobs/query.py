"""Evaluate a CQELS-CEP, C-SPARQL, EP-SPARQL or RSEP-QL query once, at a time T, over static graphs and stream files.

    python -m jobs.query QUERY_FILE [--static FILE ...] [--static IRI=FILE ...] [--stream IRI=FILE ...]
                         --at T[,T...] [--lang auto|cqels|csparql|epsparql|rsepql] [--policy P] [--time-unit ms|s|m|h|d]
                         [--format tsv|csv|json] [--rejects FILE] [--out FILE]
    spark-submit jobs/query.py ...            (same arguments)
    rsp-sidecar query ...                     (same arguments)

Prints the answers ⟦Q, T⟧ (CQELS-CEP eq. 1) as W3C SPARQL 1.1 query results (TSV, CSV or JSON;
``jobs/results.py``), sorted (in the query's order when it has ORDER BY / LIMIT / OFFSET, applied
per instant). A query with event clauses (windows over streams) gets two more
columns, ``_start`` and ``_end``: the interval of each answer, as ``xsd:integer`` ticks of
``--time-unit``. A ``CONSTRUCT`` query prints its triples as N-Triples (distinct, sorted; the
intervals are not printed; ``--format`` does not apply).

* ``QUERY_FILE``: the query (``cep`` grammar: SPARQL 1.1 SELECT/CONSTRUCT with ``FROM NAMED WINDOW``,
  ``WINDOW`` blocks, ``SEQ`` and nested regular expressions). A syntax or meaning error prints
  ``error: FILE: line L, column C: ...`` naming what was expected.
* ``--static FILE ...``: files of the default graph (N-Triples read by Spark line-parallel, Turtle,
  RDF/XML, ... parsed by rdflib; ``rdfcore.loading``). ``--static IRI=FILE`` binds the graph a
  query names with ``FROM IRI`` (an ``<iri>``, an absolute IRI, or a prefixed name declared in the
  query); a query with ``FROM <g>`` and no ``--static <g>=...`` uses the default graph files (the
  FROM graph *is* the background D, §3.2), and an error is raised when there are none. Each
  static graph is materialized with the reasoner first (RDFS + the OWL extras of
  ``reasoner.materialize``, ``reasoner.api.encoded_closure``), so background patterns see the
  entailed triples (e.g. ``?v a :vehicle`` matches a ``:subway`` instance when ``:subway
  rdfs:subClassOf :vehicle``). Graphs are closed one by one, never merged. Several ``FROM``s
  read the merge of their (closed) graphs; ``FROM NAMED <g>`` and ``GRAPH <g> / ?g { ... }``
  read the graph ``--static <g>=FILE`` gives (``GRAPH ?g`` without FROM NAMED: every graph given
  besides the default one).
* ``--lang``: the query language: ``cqels`` (CQELS-CEP), ``epsparql`` (EP-SPARQL: SPARQL with
  SEQ, EQUALS, OPTIONALSEQ, EQUALSOPTIONAL between groups and getDURATION() etc. in FILTER; it
  names no stream and reads every ``--stream`` given, merged, as one stream of triple
  occurrences; ``--stream FILE`` needs no IRI), or ``auto`` (default: EP-SPARQL when the query
  combines groups with those operators and has no window), ``rsepql`` (RSEP-QL: ``MATCH [policy]
  ( E )`` event patterns over the declared windows; auto when the query has a MATCH), ``csparql``
  (C-SPARQL: ``REGISTER QUERY|STREAM name [COMPUTED EVERY d] AS``, ``FROM STREAM <s> [RANGE d
  STEP d]``, ``AGGREGATE`` clauses, ``timestamp()``; auto when the query has one of those). C-SPARQL
  answers at ``--at T`` are those of its evaluation at the window close c ≤ T (COMPUTED EVERY's
  last multiple, else the windows' last close), with ``_start`` = ``_end`` = c; a ``REGISTER
  STREAM`` query prints its triples as timestamped N-Triples (``s p o "c" .``), the format
  ``--stream`` reads, so another query can read them. EP-SPARQL, RSEP-QL and C-SPARQL run with
  ``--at`` only.
* C-SPARQL windows (``FROM STREAM``) are RSEP-QL's by default: the window closing at c holds the
  items stamped c − ρ < τ ≤ c, a STEP σ / TUMBLING window closes at the multiples of σ, and an
  instant whose windows are empty is answered. The C-SPARQL 0.9 engine's conventions, per job
  (``--at`` and ``--continuous``; ``cep.algebra.WindowConvention``): ``--window-bounds
  right-closed|left-closed`` (left-closed: c − ρ ≤ τ < c), ``--window-start T0`` (closes at
  T0 + kσ, COMPUTED EVERY p at T0 + kp; ticks or ISO-8601 as ``--at``), ``--empty-windows
  report|skip`` (skip: an instant at which every FROM STREAM window holds no triple gives no
  rows); ``--csparql-compat`` is ``--window-bounds left-closed --empty-windows skip``, and an
  explicit ``--window-bounds`` / ``--empty-windows`` overrides it. Other languages refuse them.
* ``--policy unrestricted|naive|chronological|recent``: the selection policy of an RSEP-QL MATCH
  that names none (default unrestricted); chronological and recent consume the stream triples an
  answer used, so later instants of ``--at T1,T2,...`` do not use them again.
* ``--stream IRI=FILE``: the file of a stream the query reads (``cep.io.streams.read_stream``: JSON
  Lines or timestamped N-Triples, by extension). Prefixed names in JSON Lines streams are resolved
  with the query's ``PREFIX`` declarations. Every stream the query reads must be bound; a bound
  stream the query does not read is reported on stderr and ignored.
* ``--at T``: the evaluation time, an integer number of ``--time-unit`` ticks or an ISO-8601
  date-time (converted to ticks since the Unix epoch, rounded down; no offset = UTC).
  ``--at T1,T2,...`` (increasing) evaluates at each instant in turn; the answers get one more
  column, ``_at``, the instant.
  ``--time-unit`` (default ``ms``) is the unit of the stream timestamps and of ``--at``.
* ``--engine auto|local|spark``: where ``--at`` evaluates. ``local`` runs on the driver and starts
  no JVM (``cep.engines.driver.answers``: CQELS-CEP queries, every asked instant from one
  evaluation; C-SPARQL queries under any window convention, instant by instant,
  ``cep.engines.driver.csparql``; RSEP-QL queries, ``cep.engines.driver.rsepql``; EP-SPARQL
  queries and their ``--rules``, each instant on its own, ``cep.engines.driver.epsparql``; SELECT
  and CONSTRUCT, printed as on Spark); ``spark`` on Spark (every asked instant in one plan: CQELS-CEP
  queries from their answers' lifetimes, C-SPARQL, EP-SPARQL, RSEP-QL and per-instant CQELS-CEP
  queries keyed by the instant, ``cep.engines.spark.keyed``; a consuming MATCH and ``--rules``
  in one Spark task running the driver's ordered pass, ``cep.engines.spark.ordered``); ``auto`` (default) on the driver when the query allows it and
  the static files and stream files are small (:data:`LOCAL_STATIC_BYTES`,
  :data:`LOCAL_STREAM_BYTES`, and every stream line one the driver's readers take), else on Spark;
  ``rsp-sidecar --verbose`` says which and why. With ``--continuous``: where a micro-batch runs,
  or ``keyed``: the whole query as one Spark stateful operator (``cep.continuous.keyed.job``).
* Rejects: bad lines of stream files and N-Triples static files are not loaded; their count is
  printed on stderr, and ``--rejects FILE`` writes them as JSON Lines ``{"file", "line",
  "reason", "raw"}``.

* ``--continuous`` (instead of ``--at``): answer as the streams arrive (``cep.continuous.runner``; README
  "query --continuous"): ``--stream IRI=DIR`` a directory of stream files or
  ``IRI=kafka://HOST:PORT/TOPIC[?format=jsonl|tsnt]`` a Kafka topic; ``--out`` console (default),
  a directory or ``kafka://HOST:PORT/TOPIC``; ``--checkpoint DIR`` (required), ``--trigger``,
  ``--lateness``, ``--closure``, ``--emit``, ``--max-per-trigger``, ``--engine``, ``--rejects DIR``.
  A restart of a checkpoint with another engine, or other options that shape its state, is
  refused before any JVM starts (``cep.continuous.record``).

Expected failures — a query error, an unknown stream or graph, a missing file, a bad ``--at`` —
print one ``error:`` line and exit with code 2.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

if __package__ in (None, ""):  # run as a file by spark-submit: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cep import CepSyntaxError, compile_query  # noqa: E402
from cep import algebra as A  # noqa: E402
from cep.algebra.patterns import (BGP, Duration, NamedGraph, Project, TIME_UNITS, Var, background_patterns, is_csparql,
                                  is_epsparql, rsep_windows, snapshots, stream_patterns, walk)  # noqa: E402
from cep.continuous.keyed.keys import partition, refusal as keyed_refusal  # noqa: E402
from cep.continuous.plan import LIFETIMES, plan as continuous_plan  # noqa: E402
from cep.continuous.record import check as check_checkpoint, engine_family, query_record  # noqa: E402
from cep.engines.columns import var_column  # noqa: E402
from cep.engines.driver.walk import supports  # noqa: E402
from cep.engines.rules import RulesError, check_rules  # noqa: E402
from cep.planner import Logical, rewrite  # noqa: E402
from cep.planner.explain import explain as explain_text  # noqa: E402
from cep.planner.limits import LOCAL_MAX_BACKGROUND, LOCAL_MAX_BATCH, LOCAL_MAX_ROWS  # noqa: E402
from jobs.errors import job_main  # noqa: E402
from jobs.results import FORMATS, write_results  # noqa: E402
from jobs.streaming import file_or_kafka_source, kafka_url, need_kafka, sink_for, trigger_for  # noqa: E402
from rdfcore.errors import SidecarError  # noqa: E402
from rdfcore.fs import is_hadoop  # noqa: E402
from rdfcore.hashing import term_id  # noqa: E402
from rdfcore.locations import local_path, location, read_utf8  # noqa: E402
from rdfcore.schema import FILE, ID, LINE, O, P, RAW, REASON, S, TERM, T_END, T_START  # noqa: E402

#: The extra result columns of a query with event clauses: the answer's interval (and, with several
#: --at instants, the instant).
START_VAR, END_VAR, AT_VAR = "_start", "_end", "_at"
XSD_INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"


class QueryError(SidecarError, ValueError):
    """An expected failure of the query job, with a one-line message."""


# --- the command line, checked before any Spark work ----------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", metavar="QUERY_FILE", help="the CQELS-CEP query")
    parser.add_argument("--static", action="extend", nargs="+", default=[], metavar="[IRI=]FILE",
                        help="background files: FILE joins the default graph, IRI=FILE the graph FROM IRI")
    parser.add_argument("--rules", action="extend", nargs="+", default=[], metavar="FILE",
                        help="EP-SPARQL CONSTRUCT rules (one query per file): their triples are added to the "
                             "stream, recursively (the Q-closure), before the query reads it")
    parser.add_argument("--stream", action="extend", nargs="+", default=[], metavar="IRI=FILE",
                        help="the file of stream IRI (.jsonl JSON Lines, .nt timestamped N-Triples); with "
                             "--continuous a directory, or IRI=kafka://HOST:PORT/TOPIC[?format=jsonl|tsnt]")
    when = parser.add_mutually_exclusive_group(required=True)
    parser.add_argument("--lang", choices=("auto", "cqels", "csparql", "epsparql", "rsepql"), default="auto",
                        help="the query language (default auto: C-SPARQL when the query has REGISTER, FROM STREAM or "
                             "AGGREGATE, RSEP-QL when it has a MATCH, EP-SPARQL when it combines groups with "
                             "SEQ/EQUALS/OPTIONALSEQ/EQUALSOPTIONAL and has no window, else CQELS-CEP)")
    parser.add_argument("--policy", choices=("unrestricted", "naive", "chronological", "recent"), default=None,
                        help="RSEP-QL: the selection policy of a MATCH that names none (default unrestricted)")
    when.add_argument("--at", metavar="T[,T...]",
                      help="evaluate once at T: integer ticks of --time-unit or an ISO-8601 date-time")
    when.add_argument("--continuous", action="store_true",
                      help="evaluate continuously as the streams arrive (each --stream IRI=DIR a directory)")
    parser.add_argument("--time-unit", choices=tuple(TIME_UNITS), default="ms",
                        help="unit of the stream timestamps and of --at (default ms)")
    wins = parser.add_argument_group("C-SPARQL windows (default: RSEP-QL's (c - range, c], closes at multiples of "
                                     "the step, empty windows answered)")
    wins.add_argument("--window-bounds", choices=A.BOUNDS, default=None,
                      help="right-closed: the window closing at c holds c - range < t <= c (default); left-closed: "
                           "c - range <= t < c, as the C-SPARQL engine")
    wins.add_argument("--window-start", metavar="T0",
                      help="STEP/TUMBLING windows close at T0 + k*step (COMPUTED EVERY at T0 + k*period); integer "
                           "ticks of --time-unit or an ISO-8601 date-time (default 0)")
    wins.add_argument("--empty-windows", choices=A.EMPTY_WINDOWS, default=None,
                      help="report: answer an instant whose windows are empty (default); skip: no rows at an instant "
                           "at which every FROM STREAM window holds no triple, as the C-SPARQL engine")
    wins.add_argument("--csparql-compat", action="store_true",
                      help="the C-SPARQL 0.9 engine's conventions: --window-bounds left-closed --empty-windows skip "
                           "(either may still be given to override; --window-start stays 0 unless given)")
    parser.add_argument("--engine", choices=("auto", "spark", "local", "keyed"), default="auto",
                        help="where the query is evaluated: auto (default: the driver, with no JVM, when the query "
                             "allows it (CQELS-CEP, C-SPARQL, RSEP-QL and EP-SPARQL queries) and the inputs are "
                             "small; else Spark), local (the driver), spark; with --continuous, where each "
                             "micro-batch is evaluated, or keyed: the whole query as one Spark stateful operator on "
                             "the executors (CQELS-CEP SELECT or CONSTRUCT; --emit rstream in one bucket)")
    parser.add_argument("--explain", action="store_true",
                        help="print the query's plan instead of evaluating it: the query as written and as the "
                             "planner rewrites it (each step with its reason), and where it runs and why")
    parser.add_argument("--buckets", type=int, metavar="N",
                        help="with --engine keyed: how many groups the keys are hashed into, fixed when the checkpoint "
                             "is created (default: the checkpoint's; for a new one twice the cores)")
    parser.add_argument("--format", choices=FORMATS, default="tsv", help="SPARQL 1.1 results format (default tsv)")
    parser.add_argument("--rejects", metavar="FILE|DIR",
                        help="write the rejected input lines here (JSON Lines; a directory with --continuous)")
    parser.add_argument("--out", metavar="FILE|DIR",
                        help="write the results here instead of stdout (with --continuous: console, a directory or "
                             "kafka://HOST:PORT/TOPIC)")
    cont = parser.add_argument_group("continuous mode (--continuous)")
    cont.add_argument("--checkpoint", metavar="DIR", help="state and progress, to restart exactly where it stopped")
    cont.add_argument("--trigger", default="available-now", metavar="available-now|interval:D",
                      help="available-now: process what is there, close the input, stop (default); "
                           "interval:D: a micro-batch every D seconds until stopped")
    cont.add_argument("--lateness", default="0", metavar="D",
                      help="allowed lateness: ticks of --time-unit, or a duration such as 30s or 2m (default 0)")
    cont.add_argument("--horizon", metavar="D",
                      help="EP-SPARQL (which has no window): each instant sees the events started in its last D "
                           "(ticks of --time-unit, or a duration such as 30s); required for a continuous EP-SPARQL "
                           "query")
    cont.add_argument("--every", metavar="D",
                      help="C-SPARQL, RSEP-QL, EP-SPARQL: evaluate at the multiples of D (ticks of --time-unit, or a "
                           "duration such as 30s), the report policy; default: wherever the windows' content changes "
                           "(C-SPARQL: its windows' closes, or COMPUTED EVERY)")
    cont.add_argument("--closure", metavar="STORE_DIR",
                      help="background = the current version of a materialize store; a newly published version "
                           "is used from the next micro-batch on")
    cont.add_argument("--max-per-trigger", type=int, metavar="N",
                      help="at most N new files (a directory) or N messages (Kafka) per stream and micro-batch")
    cont.add_argument("--emit", choices=("istream", "rstream", "dstream"), default="istream",
                      help="istream: each answer once, when it first holds (default)")


_INTEGER = re.compile(r"[+-]?[0-9]+")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def parse_instants(text: str, time_unit: str) -> list[int]:
    """``--at T1,T2,...``: one or more instants (``parse_at`` each), increasing."""
    out = [parse_at(part, time_unit) for part in text.split(",")]
    for a, b in zip(out, out[1:]):
        if b <= a:
            raise QueryError(f"--at {text!r}: the instants must increase ({b} after {a})")
    return out


def parse_at(text: str, time_unit: str) -> int:
    """``--at``: integer ticks, or an ISO-8601 date-time as ticks since the epoch (floor; naive = UTC)."""
    text = text.strip()
    if _INTEGER.fullmatch(text):
        return int(text)
    try:
        moment = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise QueryError(f"--at {text!r}: expected an integer number of {time_unit} or an ISO-8601 date-time "
                         f"(e.g. 2024-05-01T10:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    delta = moment - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros // (TIME_UNITS[time_unit] * 1000)


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split("\n")[0].split())


def _iri_term(text: str, prefixes: dict[str, str]) -> str | None:
    """``text`` as an IRI term when it names one (<iri>, a declared prefixed name, an absolute IRI)."""
    if text.startswith("<") and text.endswith(">") and len(text) > 2:
        return text
    prefix, colon, local = text.partition(":")
    if not colon:
        return None
    if prefix in prefixes and not local.startswith("//"):
        return f"<{prefixes[prefix]}{local}>"
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-]*", prefix) and not any(c in text for c in ' <>"{}|\\^`'):
        return f"<{text}>"
    return None


def _binding(item: str, prefixes: dict[str, str], option: str, iri_required: bool = True) -> tuple[str | None, Path]:
    """``IRI=FILE`` → (IRI term, path); ``FILE`` → (None, path)."""
    name, sep, file = item.partition("=")
    iri = _iri_term(name.strip(), prefixes) if sep else None
    if iri is None:
        if option == "--stream" and iri_required:
            raise QueryError(f"--stream {item!r}: expected IRI=FILE (an <iri>, an absolute IRI or a prefixed "
                             f"name the query declares, then '=' and the stream file)")
        return None, location(item, option)
    return iri, (Path(file) if file.strip().startswith("kafka:") else location(file, option))


def _local_arguments(args: argparse.Namespace) -> None:
    """The path options checked (``rdfcore.locations``) before anything uses them: each may be
    local or on a Hadoop filesystem (the output, the rejects, the closure store, the continuous
    runtime's checkpoint)."""
    for option in ("closure", "checkpoint", "rejects"):
        if getattr(args, option, None):
            setattr(args, option, str(location(getattr(args, option), f"--{option}")))
    out = getattr(args, "out", None)
    if out and out not in ("console", "-") and not out.startswith("kafka:"):
        args.out = str(location(out, "--out"))


def _existing(path, what: str):
    """``path`` when it is a file; a Hadoop path is checked when it is read (Spark is not up yet)."""
    if not is_hadoop(path) and not path.is_file():
        raise QueryError(f"{path}: no such file ({what})")
    return path


@dataclass
class Plan:
    """What the command line asks for, checked before Spark starts."""

    query: object                      # cep.algebra.patterns.Query
    at: int | None                     # None: continuous
    time_unit: str
    graphs: dict[str | None, list[Path]] = field(default_factory=dict)   # None = default graph
    streams: dict[str, Path | str] = field(default_factory=dict)   # str: a kafka:// URL (continuous)
    instants: list[int] = field(default_factory=list)   # --at T1,T2,...: more than one
    rules: tuple = ()                  # --rules: EP-SPARQL CONSTRUCT rules (cep.engines.rules)
    convention: A.WindowConvention = A.RSEPQL_WINDOWS   # --window-bounds, --window-start, --empty-windows

    def planned(self):
        """The planner's rewrite of ``query`` (``cep.planner.logical``): what ``--at`` evaluates."""
        return rewrite(self.query)


def window_convention(args: argparse.Namespace, time_unit: str) -> A.WindowConvention:
    """``--window-bounds``, ``--window-start``, ``--empty-windows`` and ``--csparql-compat`` as one
    ``cep.algebra.WindowConvention`` (an explicit option overrides ``--csparql-compat``'s)."""
    compat = A.CSPARQL_ENGINE_WINDOWS if getattr(args, "csparql_compat", False) else A.RSEPQL_WINDOWS
    bounds = getattr(args, "window_bounds", None) or compat.bounds
    empty = getattr(args, "empty_windows", None) or compat.empty
    start_text = getattr(args, "window_start", None)
    start = compat.start
    if start_text is not None:
        try:
            start = parse_at(start_text, time_unit)
        except QueryError:
            raise QueryError(f"--window-start {start_text!r}: expected an integer number of {time_unit} or an "
                             f"ISO-8601 date-time (e.g. 2024-05-01T10:00:00Z)") from None
    try:
        return A.WindowConvention(bounds, start, empty)
    except A.WindowConventionError as exc:
        raise QueryError(str(exc)) from None


def plan(args: argparse.Namespace) -> Plan:
    """Check the arguments and the query; raise :class:`QueryError` naming the problem."""
    _local_arguments(args)
    continuous = bool(getattr(args, "continuous", False))
    instants = [] if continuous else parse_instants(args.at, args.time_unit)
    at = instants[0] if instants else None
    if continuous:
        _check_continuous(args)
    elif getattr(args, "every", None) is not None:
        raise QueryError("--every sets when a --continuous run evaluates; with --at the instants are the ones given")
    elif getattr(args, "buckets", None) is not None:
        raise QueryError("--buckets: only --continuous --engine keyed hashes keys into buckets")
    query_path = _existing(local_path(args.query, "the query file"), "the query file")
    text = read_utf8(query_path, "the query file")
    lang = getattr(args, "lang", "auto")
    try:
        query = compile_query(text, lang=None if lang == "auto" else lang,
                              policy=getattr(args, "policy", None) or "unrestricted")
    except CepSyntaxError as exc:
        raise QueryError(f"{query_path}: {_one_line(exc)}") from None
    prefixes = dict(query.prefixes)
    result = Plan(query, at, args.time_unit, instants=instants if len(instants) > 1 else [])
    try:
        result.convention = A.check_window_convention(query, window_convention(args, args.time_unit))
    except A.WindowConventionError as exc:
        raise QueryError(f"{query_path}: {exc}") from None
    if getattr(args, "window_start", None) is not None and not any(
            snap.every is not None or any(isinstance(w, A.Range) and w.step_ticks(args.time_unit) > 1
                                          for _s, w in snap.windows) for snap in snapshots(query)):
        print("warning: --window-start has no effect: the query has no STEP or TUMBLING window and no COMPUTED "
              "EVERY (its windows close at every instant)", file=sys.stderr)
    ep = is_epsparql(query)
    rules = []
    for rule_file in getattr(args, "rules", None) or []:
        rule_path = _existing(local_path(rule_file, "--rules"), "the rules file")
        try:
            rules.append(compile_query(read_utf8(rule_path, "the rules file"), lang="epsparql"))
        except CepSyntaxError as exc:
            raise QueryError(f"{rule_path}: {_one_line(exc)}") from None
    if rules:
        try:
            result.rules = check_rules(query, rules)
        except RulesError as exc:
            raise QueryError(f"--rules: {exc}") from None
    if ep and continuous and getattr(args, "horizon", None) is None:
        raise QueryError(f"{query_path}: an EP-SPARQL query has no window, so a continuous run needs --horizon D "
                         f"(each instant then sees the events started in its last D; its state stays bounded)")
    if not ep and getattr(args, "horizon", None) is not None:
        raise QueryError("--horizon applies to EP-SPARQL queries (which have no window); this query's windows "
                         "bound what it sees")
    if ep and not args.stream:
        raise QueryError(f"{query_path}: an EP-SPARQL query reads the streams given with --stream FILE; none was given")
    for item in args.static:
        iri, path = _binding(item, prefixes, "--static")
        result.graphs.setdefault(iri, []).append(_existing(path, f"static graph {iri or 'default'}"))
    for item in args.stream:
        iri, path = _binding(item, prefixes, "--stream", iri_required=not ep)
        if iri is None:  # an EP-SPARQL stream file given without a name: named by its file
            iri = f"<{path.resolve().as_uri() if not is_hadoop(path) else path.as_uri()}>"
        if iri in result.streams:
            raise QueryError(f"--stream {iri} is bound twice ({result.streams[iri]} and {path})")
        kafka = item.partition("=")[2].strip()
        if kafka.startswith("kafka:"):
            if not continuous:
                raise QueryError(f"--stream {item!r}: a Kafka topic is read with --continuous only (--at reads files)")

            kafka_url(kafka, "--stream")
            result.streams[iri] = kafka
            continue
        if continuous and not is_hadoop(path) and not path.is_dir():   # a Hadoop one: when Spark reads it
            raise QueryError(f"{path}: no such directory (stream {iri}; with --continuous, --stream IRI=DIR names "
                             f"the directory its files arrive in, or IRI=kafka://HOST:PORT/TOPIC a topic)")
        result.streams[iri] = path if continuous else _existing(path, f"stream {iri}")
    read = list(result.streams) if ep else list(dict.fromkeys(
        [sp.stream for sp in stream_patterns(query.pattern)] + [e.stream for e in rsep_windows(query)]
        + [s for snap in snapshots(query) for s, _w in snap.windows]))
    for iri in read:
        if iri not in result.streams:
            bound = ", ".join(result.streams) or "none"
            raise QueryError(f"the query reads stream {iri}, which no --stream binds (bound: {bound}); "
                             f"pass --stream {iri}=FILE")
    for iri in result.streams:
        if iri not in read:
            print(f"warning: --stream {iri} is not read by the query; ignored", file=sys.stderr)
    # with --closure the store is every background graph (cep.continuous.runner.ClosureStore)
    closure = bool(getattr(args, "closure", None))
    def froms(graph) -> tuple:
        return graph if isinstance(graph, tuple) else () if graph is None else (graph,)

    # the default graphs read: CQELS-CEP's / RSEP-QL's background, C-SPARQL's snapshot (its FROMs)
    defaults = [b.graph for b in background_patterns(query.pattern)] + [s.graph for s in snapshots(query)]
    for g in [] if closure else [g for graph in defaults for g in froms(graph)]:
        if g not in result.graphs and None not in result.graphs:
            raise QueryError(f"the query's background graph FROM {g} has no file: pass --static {g}=FILE "
                             f"(or --static FILE for the default graph)")
    for b in [] if closure else background_patterns(query.pattern):
        if b.graph is None and None not in result.graphs and b.pattern != BGP(()):
            print("warning: the query has background patterns but no --static FILE gives a default graph; "
                  "it is empty", file=sys.stderr)
    named_read = []
    for node in walk(query.form):
        if not isinstance(node, NamedGraph):
            continue
        wanted = (node.graphs or ()) if isinstance(node.name, Var) else (node.name,)
        if node.graphs is None and isinstance(node.name, Var):
            named_read += [g for g in result.graphs if g is not None]   # GRAPH ?g: every graph given
        for g in wanted:
            if g not in result.graphs and not closure:
                also = " (in C-SPARQL, GRAPH <s> also names a FROM [NAMED] STREAM <s>)" if is_csparql(query) else ""
                raise QueryError(f"the query reads the named graph {g} (GRAPH / FROM NAMED), which has no file: "
                                 f"pass --static {g}=FILE{also}")
            named_read.append(g)
    graphs_read = [g for graph in defaults for g in (froms(graph) or (None,))]
    used = {g if g in result.graphs else None for g in graphs_read} | set(named_read)
    for graph in [g for g in result.graphs if g not in used]:
        print(f"warning: --static {'default graph files' if graph is None else graph} not read by the query; "
              f"not loaded", file=sys.stderr)
        del result.graphs[graph]
    if isinstance(query.form, Project) and with_intervals(query):
        clash = [f"?{v.name}" for v in query.form.variables if v.name in (START_VAR, END_VAR, AT_VAR)]
        if clash:
            raise QueryError(f"the query projects {', '.join(clash)}: with event clauses the answers carry "
                             f"?{START_VAR} and ?{END_VAR} (their interval); rename the variable")
    return result


# --- running it -----------------------------------------------------------------------------


#: ``--engine auto`` evaluates ``--at`` on the driver when the static files add up to at most this
#: many bytes — the budget of ``materialize --engine auto`` (``reasoner.publish.LOCAL_MAX_BYTES``),
#: since the driver's reasoner closes them — ...
LOCAL_STATIC_BYTES = 64 << 20
#: ... and the stream files to at most this many
LOCAL_STREAM_BYTES = 64 * 1024 * 1024


def with_intervals(query) -> bool:
    """Whether the answers carry ``_start`` / ``_end`` (a query with event clauses: windows over
    streams, in any language)."""
    return (A.is_epsparql(query) or bool(A.stream_patterns(query.pattern)) or A.is_rsepql(query)
            or A.is_csparql(query))


def _reject_line(file: str, line: int, reason: str, raw: str) -> str:
    return json.dumps({"file": file, "line": line, "reason": reason, "raw": raw}, ensure_ascii=False) + "\n"


def _not_on_driver(p: Plan, query, engine: str) -> str | None:
    """Why ``--at`` does not evaluate ``query`` (``p``'s, as planned) on the driver under ``engine``
    (auto or local), or None."""
    from cep.engines.driver import answers as D

    why = D.refusal(query, p.convention, p.rules)
    files = [f for paths in p.graphs.values() for f in paths] + list(p.streams.values())
    if why is None and any(is_hadoop(f) for f in files):
        why = "a file on a Hadoop filesystem (read through Spark)"
    if why is None and engine == "auto":
        static = sum(Path(f).stat().st_size for paths in p.graphs.values() for f in paths)
        stream = sum(Path(f).stat().st_size for f in p.streams.values())
        if static > LOCAL_STATIC_BYTES or stream > LOCAL_STREAM_BYTES:
            why = (f"the inputs are larger than the driver engine takes under --engine auto ({static:,} bytes of static "
                   f"files, at most {LOCAL_STATIC_BYTES:,}; {stream:,} bytes of stream files, at most "
                   f"{LOCAL_STREAM_BYTES:,})")
    return why


def execute_local(p: Plan, out: TextIO, fmt: str, rejects_path: str | None, engine: str) -> int:
    """``execute`` on the driver, with no JVM (``cep.engines.driver.answers``); returns the number of
    answers. Raises ``NotOnDriver`` (before writing anything) when the query or its inputs are not
    for the driver: with ``engine`` "auto", inputs larger than ``LOCAL_STATIC_BYTES`` /
    ``LOCAL_STREAM_BYTES`` too."""
    from cep.engines.driver import answers as D

    query = p.planned().query
    why = _not_on_driver(p, query, engine)
    if why is not None:
        raise D.NotOnDriver(why)
    graphs, terms, static_rejects = D.read_static(p.graphs)
    streams, stream_terms = D.read_streams(p.streams, dict(p.query.prefixes))
    terms.update(stream_terms)
    if None not in graphs:
        graphs[None] = D.static.StaticGraph(frozenset())
    instants = p.instants or [p.at]
    answers = D.answers_at(query, graphs, streams, instants, p.time_unit, terms, window_convention=p.convention,
                           rules=p.rules)
    reported = [(f"static {graph or 'default graph'}", static_rejects[graph]) for graph, paths in p.graphs.items()
                if any(str(f).lower().endswith((".nt", ".ntriples")) for f in paths)]
    reported += [(f"stream {iri} ({path})", []) for iri, path in p.streams.items()]
    handle = location(rejects_path, "--rejects").open("w", encoding="utf-8") if rejects_path else None
    try:
        for what, rows in reported:
            for row in rows if handle is not None else ():
                handle.write(_reject_line(*row))
            print(f"{what}: {len(rows)} rejected line(s)", file=sys.stderr)
    finally:
        if handle is not None:
            handle.close()
    if isinstance(p.query.form, A.Construct):
        return write_triples((row[1:5] for row in answers.rows), registered_stream(p.query), out)
    many, events = bool(p.instants), with_intervals(p.query)
    head = ([AT_VAR] if many else []) + list(answers.variables) + ([START_VAR, END_VAR] if events else [])

    def rows() -> Iterator[dict]:
        for at, *values, t1, t2 in answers.rows:
            row = {AT_VAR: f'"{at}"^^{XSD_INTEGER}'} if many else {}
            row.update(zip(answers.variables, values))
            if events:
                row[START_VAR], row[END_VAR] = f'"{t1}"^^{XSD_INTEGER}', f'"{t2}"^^{XSD_INTEGER}'
            yield row

    return write_results(rows(), head, fmt, out)


def registered_stream(query) -> bool:
    """Whether a CONSTRUCT's triples are printed as a stream: C-SPARQL's ``REGISTER STREAM``."""
    return query.registration is not None and query.registration[0] == "STREAM"


def write_triples(rows, stream_out: bool, out: TextIO) -> int:
    """A CONSTRUCT's answers ``(s, p, o, t1)`` (terms) as the Spark path prints them: the distinct
    triples sorted, or with ``stream_out`` (``registered_stream``) the distinct (t1, triple)
    sorted, each line timestamped; returns the number of lines."""
    if stream_out:
        return _print_triples(((s, p, o, t1) for t1, s, p, o in sorted({(t1, s, p, o) for s, p, o, t1 in rows})),
                              True, out)
    return _print_triples(((s, p, o, None) for s, p, o in sorted({(s, p, o) for s, p, o, _t1 in rows})), False, out)


def _print_triples(rows, stream_out: bool, out: TextIO) -> int:
    count = 0
    for s, p, o, t1 in rows:
        # REGISTER STREAM (C-SPARQL §2.5): a stream timestamped at the evaluation instant
        stamp = f' "{t1}"' if stream_out else ""
        out.write(f"{s} {p} {o}{stamp} .\n")
        count += 1
    return count


def _rejects(spark, named_frames, path: str | None) -> None:
    """Report each source's reject count on stderr; with ``path``, write them all (JSON Lines).
    One Spark job per source either way (writing counts as it goes)."""
    out = location(path, "--rejects").open("w", encoding="utf-8") if path else None
    try:
        for what, frame in named_frames:
            if out is None:
                count = frame.count()
            else:
                count = 0
                for row in frame.orderBy(FILE, LINE).toLocalIterator():
                    out.write(_reject_line(row[FILE], row[LINE], row[REASON], row[RAW]))
                    count += 1
            print(f"{what}: {count} rejected line(s)", file=sys.stderr)
    finally:
        if out is not None:
            out.close()


#: the instant column of an evaluation at several instants
AT_COLUMN = "_at"


def _select_rows(decoded, names: Sequence[str], columns: Sequence[str], events: bool,
                 instants: bool = False) -> Iterator[dict]:
    for row in decoded.toLocalIterator():
        out = {AT_VAR: f'"{row[AT_COLUMN]}"^^{XSD_INTEGER}'} if instants else {}
        out.update({name: row[column] for name, column in zip(names, columns)})
        if events:
            out[START_VAR] = f'"{row[T_START]}"^^{XSD_INTEGER}'
            out[END_VAR] = f'"{row[T_END]}"^^{XSD_INTEGER}'
        yield out


def execute(p: Plan, out: TextIO, fmt: str = "tsv", rejects_path: str | None = None) -> int:
    """Load, evaluate and print; returns the number of answers (triples for CONSTRUCT)."""
    from pyspark.sql import functions as F

    from cep import evaluate
    from cep.io.streams import read_stream
    from jobs.spark import build_session
    from reasoner.api import encoded_closure
    from rdfcore.dictionary import checked_dictionary, decode, merge_dictionaries
    from rdfcore.loading import load

    spark = build_session("rsp-sidecar query")
    query = p.planned().query
    background, dictionaries, reject_frames = {}, [], []
    for graph, files in p.graphs.items():
        loaded = load(spark, files)
        closure, dictionary = encoded_closure(loaded.triples)
        background[graph] = closure.inferred
        dictionaries.append(dictionary)
        if any(str(f).lower().endswith((".nt", ".ntriples")) for f in files):
            reject_frames.append((f"static {graph or 'default graph'}", loaded.rejects))
    if None not in background:  # no default graph given: an empty one (a FROM graph is bound, see plan())
        background[None] = spark.createDataFrame([], f"{S} long, {P} long, {O} long")
    streams = {}
    ep = A.is_epsparql(query)
    read = set(p.streams) if ep else ({sp.stream for sp in A.stream_patterns(query.pattern)}
                                      | {e.stream for e in A.rsep_windows(query)}
                                      | {s for snap in A.snapshots(query) for s, _w in snap.windows})
    for iri, path in p.streams.items():
        if iri not in read:
            continue
        stream = read_stream(spark, path, prefixes=dict(query.prefixes), time_unit=p.time_unit)
        # parsed once: an evaluation per instant, and each stream pattern of one, reads the items
        streams[iri] = stream.triples.cache()
        dictionaries.append(stream.dictionary)
        reject_frames.append((f"stream {iri} ({path})", stream.rejects))
    _rejects(spark, reject_frames, rejects_path)
    constants = spark.createDataFrame([(term_id(t), t) for t in sorted(A.constants(query.form))],
                                      f"{ID} long, {TERM} string")
    dictionary, cached = checked_dictionary([constants, *dictionaries])
    computed: list = []   # (id, term) of the terms the query computes (C-SPARQL's aggregates)
    try:
        if p.instants:   # one plan for every instant where the answers have lifetimes
            from cep.engines.spark.evaluate import evaluate_at_instants
            result = evaluate_at_instants(query, background, streams, p.instants, time_unit=p.time_unit,
                                          dictionary=dictionary, terms=computed, rules=p.rules, column=AT_COLUMN,
                                          window_convention=p.convention)
        else:
            result = evaluate(query, background, streams, at=p.at, time_unit=p.time_unit, dictionary=dictionary,
                              terms=computed, rules=p.rules, window_convention=p.convention)
        # the answers, and the terms they computed, stored once: decoding and printing then plan over
        # small leaves instead of the evaluation's whole plan (Spark analyses the whole plan at every
        # DataFrame call, ~0.5 s for a C-SPARQL aggregate's, and decoding makes three per column)
        result = result.localCheckpoint()
        if computed:
            dictionary = merge_dictionaries([dictionary, *[terms.localCheckpoint() for terms in computed]])
        if isinstance(query.form, A.Construct):
            stream_out = registered_stream(query)
            keep = (S, P, O, T_START) if stream_out else (S, P, O)
            decoded = decode(result.select(*keep).distinct(), dictionary, (S, P, O))
            decoded = decoded.orderBy(T_START, S, P, O) if stream_out else decoded.orderBy(S, P, O)
            return _print_triples(((row[S], row[P], row[O], row[T_START] if stream_out else None)
                                   for row in decoded.toLocalIterator()), stream_out, out)
        names = [v.name for v in query.form.variables]
        events = with_intervals(query)
        columns = [var_column(n) for n in names]
        kept = ([AT_COLUMN] if p.instants else []) + columns + ([T_START, T_END] if events else [])
        if query.modifiers is not None:   # ORDER BY / LIMIT / OFFSET: the query's order, per instant
            from cep.engines.spark.filters import ORDER
            decoded = decode(result.select(*kept, ORDER), dictionary, tuple(columns))
            decoded = decoded.orderBy(*([AT_COLUMN] if p.instants else []), ORDER)
        else:
            decoded = decode(result.select(*kept), dictionary, tuple(columns))
            decoded = decoded.orderBy(*[F.col(c).asc_nulls_first() for c in kept])
        head = ([AT_VAR] if p.instants else []) + names + ([START_VAR, END_VAR] if events else [])
        return write_results(_select_rows(decoded, names, columns, events, bool(p.instants)), head, fmt, out)
    finally:
        cached.unpersist()
        for frame in [*computed, *streams.values()]:
            frame.unpersist()


def parse_lateness(text: str, time_unit: str, option: str = "--lateness") -> int:
    """``--lateness`` (``--horizon``): integer ticks of ``time_unit``, or a duration with a unit
    (``30s``, ``2m``)."""
    m = re.fullmatch(r"\s*([0-9]+)\s*(ms|s|m|h|d)?\s*", text)
    if not m:
        raise QueryError(f"{option} {text!r}: expected a whole number of {time_unit}, or a duration such as 30s")
    try:
        return Duration(int(m.group(1)), m.group(2)).ticks(time_unit)
    except ValueError as exc:
        raise QueryError(f"{option} {text!r}: {exc}") from None


def _check_continuous(args: argparse.Namespace) -> None:
    if not args.checkpoint and not getattr(args, "explain", False):
        raise QueryError("--continuous needs --checkpoint DIR (where the run keeps its state and progress)")
    if args.closure and args.static:
        raise QueryError("--closure STORE_DIR and --static files both give the background; pass one of them")
    if args.closure and not is_hadoop(location(args.closure)) and not Path(args.closure).is_dir():
        raise QueryError(f"{args.closure}: no such directory (--closure names a materialize store)")

    trigger_for(args.trigger)
    parse_lateness(args.lateness, args.time_unit)
    if getattr(args, "horizon", None) is not None:
        parse_lateness(args.horizon, args.time_unit, "--horizon")
    if getattr(args, "every", None) is not None and parse_lateness(args.every, args.time_unit, "--every") <= 0:
        raise QueryError(f"--every {args.every!r}: the period must be positive")
    if args.max_per_trigger is not None and args.max_per_trigger < 1:
        raise QueryError(f"--max-per-trigger {args.max_per_trigger}: expected a positive number")
    if args.buckets is not None and args.engine != "keyed":
        raise QueryError("--buckets: only --engine keyed hashes keys into buckets")
    if args.buckets is not None and args.buckets < 1:
        raise QueryError(f"--buckets {args.buckets}: expected a positive number")


def execute_continuous(p: Plan, args: argparse.Namespace) -> int:
    """Run the query continuously (``cep.continuous.runner.run``); returns the number of answers emitted."""
    from cep.continuous.job import run as run_stream
    from cep.continuous.static import ClosureStore, StaticFiles
    from jobs.spark import build_session

    lateness = parse_lateness(args.lateness, args.time_unit)
    horizon = None if args.horizon is None else parse_lateness(args.horizon, p.time_unit, "--horizon")
    every = None if args.every is None else parse_lateness(args.every, p.time_unit, "--every")
    # the plan's refusals (ContinuousError) before any JVM starts; the run plans again, with its sources
    cplan = continuous_plan(p.query, p.time_unit, lateness, emit=args.emit, horizon=horizon, streams=list(p.streams),
                            rules=p.rules, every=every, window_convention=p.convention)
    why = keyed_refusal(cplan) if args.engine == "keyed" else None
    if why is not None:
        raise QueryError(f"--engine keyed: the keyed operator cannot run this query: {why}")
    sources = []
    for iri, where in p.streams.items():
        sources.append(file_or_kafka_source(iri, where if isinstance(where, str) else str(where), args.max_per_trigger))
    checkpoint = location(args.checkpoint, "--checkpoint")
    if not is_hadoop(checkpoint):   # another engine or other options than it was created with: refused before
        # any JVM starts (one on a Hadoop filesystem is checked by the run, before it streams)
        check_checkpoint(checkpoint, query_record(engine_family(args.engine), cplan, sources, args.buckets))
    sink = sink_for(args.out)
    need_kafka(*sources, sink)
    spark = build_session("rsp-sidecar query --continuous")
    static = ClosureStore(args.closure) if args.closure else (StaticFiles(p.graphs) if p.graphs else None)
    trigger = trigger_for(args.trigger)
    summary = run_stream(spark, p.query, sources, sink=sink, checkpoint=args.checkpoint, static=static,
                         trigger=trigger, lateness=lateness, emit=args.emit, time_unit=p.time_unit,
                         rejects=args.rejects, engine=args.engine, horizon=horizon, every=every, rules=p.rules,
                         window_convention=p.convention, buckets=args.buckets)
    print(json.dumps({"continuous": summary.to_dict()}), file=sys.stderr)
    return summary.answers


def _evaluate(p: Plan, out: TextIO, args: argparse.Namespace) -> None:
    """``--at``: on the driver when ``--engine`` and the inputs allow it, else on Spark."""
    from cep.engines.driver.answers import NotOnDriver

    if args.engine == "keyed":
        raise QueryError("--engine keyed runs continuous queries (--continuous); --at evaluates with auto, local or spark")
    if args.engine != "spark":
        try:
            execute_local(p, out, args.format, args.rejects, args.engine)
            return
        except NotOnDriver as exc:
            if args.engine == "local":
                raise QueryError(f"--engine local: the driver engine cannot evaluate this: {exc.reason}") from None
            if os.environ.get("RSP_VERBOSE", "") not in ("", "0"):   # rsp-sidecar --verbose
                print(f"query: evaluated on Spark: {exc.reason}", file=sys.stderr)
    execute(p, out, args.format, args.rejects)


def explain(p: Plan, args: argparse.Namespace) -> str:
    """``--explain``: the plan as text (``cep.planner.explain``), with the engine that would run it and why."""
    if p.at is not None:
        logical = p.planned()
        if args.engine == "keyed":
            raise QueryError("--engine keyed runs continuous queries (--continuous); --at evaluates with auto, local or spark")
        why = None if args.engine == "spark" else _not_on_driver(p, logical.query, args.engine)
        if args.engine == "spark":
            engine = ["Spark (--engine spark): one plan for every asked instant"]
        elif why is None:
            engine = ["the driver, with no JVM (cep.engines.driver): one evaluation for every asked instant"]
        elif args.engine == "local":
            raise QueryError(f"--engine local: the driver engine cannot evaluate this: {why}")
        else:
            engine = [f"Spark, because {why}"]
        return explain_text(logical, engine)
    cplan = continuous_plan(p.query, p.time_unit, parse_lateness(args.lateness, args.time_unit), emit=args.emit,
                            horizon=None if args.horizon is None else parse_lateness(args.horizon, p.time_unit, "--horizon"),
                            streams=list(p.streams), rules=p.rules,
                            every=None if args.every is None else parse_lateness(args.every, p.time_unit, "--every"),
                            window_convention=p.convention)
    logical = Logical(cplan.written or cplan.query, cplan.query, cplan.planning)
    if args.engine == "keyed":
        why = keyed_refusal(cplan)
        if why is not None:
            raise QueryError(f"--engine keyed: the keyed operator cannot run this query: {why}")
        part = partition(cplan)
        engine = ["the keyed operator: the whole query as one Spark stateful operator (cep.continuous.keyed)",
                  f"key: {', '.join('?' + k for k in part.key)}; the keys hashed into buckets" if part.key
                  else f"one bucket: {part.single}"]
    elif cplan.mode != LIFETIMES:
        engine = ["one evaluation per evaluation instant, each micro-batch (cep.continuous.instants): "
                  + ("on Spark (--engine spark)" if args.engine == "spark" else "on the driver when the query allows it")]
    else:
        why = "--engine spark" if args.engine == "spark" else (
            supports(cplan.query) or (None if cplan.emit == "istream" else f"--emit {cplan.emit}"))
        engine = [f"each micro-batch on Spark, because {why}" if why else
                  f"each micro-batch on the driver (cep.engines.driver.columnar) while the state holds at most "
                  f"{LOCAL_MAX_ROWS:,} triples, the batch at most {LOCAL_MAX_BATCH:,} lines and the background "
                  f"patterns at most {LOCAL_MAX_BACKGROUND:,} rows each; on Spark otherwise"]
    return explain_text(logical, engine)


def run(args: argparse.Namespace) -> int:
    p = plan(args)
    if getattr(args, "explain", False):
        sys.stdout.write(explain(p, args))
        sys.stdout.flush()
        return 0
    if p.at is None:
        execute_continuous(p, args)
        return 0
    if args.out:
        target = location(args.out, "--out")
        if is_hadoop(target):                  # written through the session's Hadoop filesystem
            from jobs.spark import build_session

            build_session("rsp-sidecar query")
        with target.open("w", encoding="utf-8", newline="") as out:
            _evaluate(p, out, args)
    else:
        _evaluate(p, sys.stdout, args)
        sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    return job_main("query", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
