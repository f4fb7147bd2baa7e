"""A CQELS-CEP, C-SPARQL, RSEP-QL or EP-SPARQL query's answers at given instants, entirely on the driver: no JVM.

``query --at T1,...,Tn`` on small inputs (``jobs.query`` picks the engine). The inputs are read
on the driver: the ``--static`` files by ``rdfcore.sources.load_local`` (the same triples and
rejects as Spark's loader) and the reasoner's driver engine (``reasoner.local.materialize``); the
stream files line by line (``cep.io.lineparse``: JSON Lines, and timestamped N-Triples files of at
most :data:`PYTHON_TSNT_LINES` lines; the compiled scanner of timestamped N-Triples,
``cep.io.linescan.scan_tsnt``, for longer ones: the same items and ids as Spark's parser). A stream line
those readers do not take (an escape, an ISO timestamp, a malformed line: Spark's parser gives
its reject reason) makes :class:`NotOnDriver`, and the caller runs Spark instead.

A CQELS-CEP query's evaluation computes every instant's answers at once, as the continuous
runtime's driver engine does: the background patterns by ``cep.engines.driver.static``, the rest by the walk of
``cep.engines.driver.rows`` (Python rows; small inputs) or ``cep.engines.driver.columnar``
(numpy columns; from :data:`COLUMNAR_FROM` stream items on). Each result row carries its lifetime
[a, b], the instants at which it is an answer; the answers at an asked instant t are the rows
with a ≤ t ≤ b, their interval's open end (a background-only answer) read as t. So n instants
cost one evaluation, not n. Some answers are defined per instant: a GROUP BY over the events
(``A.GroupCover``), and top-level FILTERs and BINDs that read NOW() or the interval, or draw
(RAND() & co.: a value drawn from an answer whose interval ends at the instant). Then the pattern
below that top comes from the one evaluation, and at each asked instant the rows alive at it are
grouped (``cep.engines.driver.rows.group_cover``), filtered and extended (``_per_instant_top``).

A C-SPARQL query's answers are defined at evaluation instants (its windows' closes, COMPUTED
EVERY), not as rows with lifetimes: ``cep.engines.driver.csparql`` evaluates it instant by instant,
under the query's window convention (``cep.algebra.WindowConvention``), each stream sorted once and
each window's content a slice of it; instants with the same evaluation instant share one
evaluation. Its answers carry [c, c], c the evaluation instant, as on Spark. An RSEP-QL query is
evaluated at each asked instant in order (``cep.engines.driver.rsepql``): a chronological or recent
MATCH consumes what its answers used, so each instant depends on the ones before. An EP-SPARQL
query is evaluated at each asked instant on its own (``cep.engines.driver.epsparql``), over the
occurrences ended by it, closed first under the CONSTRUCT rules (``--rules``) when there are some;
the streams are sorted and each triple pattern matched once for all instants.

A CONSTRUCT's answers are its triples (variables :data:`TRIPLE`), each with its solution's
interval; its template is applied at each instant to the solutions read at it (a background-only
one's interval ends at the instant, which names its blank nodes, as on Spark). ``jobs.query``
prints them as the Spark path does: the distinct triples, sorted; C-SPARQL's ``REGISTER STREAM``,
the distinct triples with their evaluation instant, timestamped.

What runs here (``refusal`` says why not): CQELS-CEP queries that both driver engines support,
whose background patterns ``cep.engines.driver.static`` evaluates, with the default window
convention; C-SPARQL queries ``cep.engines.driver.csparql.refusal`` takes, under any
convention; RSEP-QL queries ``cep.engines.driver.rsepql.refusal`` takes; EP-SPARQL queries, and
their rules, ``cep.engines.driver.epsparql.refusal`` takes; SELECT and CONSTRUCT. A SELECT's
ORDER BY / LIMIT / OFFSET apply to each instant's answers on their own, after they are computed
(``cep.engines.driver.modifiers``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cep import algebra as A
from cep.algebra.timeline import OPEN_END
from cep.engines.columns import var_column
from cep.engines.driver import csparql as C
from cep.engines.driver import epsparql as E
from cep.engines.driver import modifiers as M
from cep.engines.driver import rows as L
from cep.engines.driver import rsepql as RQ
from cep.engines.driver import static
from cep.engines.driver.walk import supports
from cep.io.formats import JSONL, detect_stream_format
from cep.io.lineparse import parse_jsonl, parse_tsnt
from cep.terms.values import EVALUATION_INSTANT
from rdfcore.errors import SidecarError
from rdfcore.hashing import term_id
from rdfcore.sources import load_local, split_lines
from reasoner import local as RL

__all__ = ["NotOnDriver", "Answers", "refusal", "read_static", "read_streams", "answers_at", "sorted_rows",
           "COLUMNAR_FROM", "PYTHON_TSNT_LINES", "TRIPLE"]

#: the variables of a CONSTRUCT's answers, its triples
TRIPLE = ("s", "p", "o")
#: from this many stream items on, the numpy operators (``cep.engines.driver.columnar``) evaluate
COLUMNAR_FROM = 20_000
#: a timestamped N-Triples file of at most this many lines is read in Python
#: (``cep.io.lineparse.parse_tsnt``, ~10 µs a line), a longer one by the compiled scanner
#: (``cep.io.linescan.scan_tsnt``: ~1 s to load numba and its kernels, then ~0.1 µs a line)
PYTHON_TSNT_LINES = 100_000


class NotOnDriver(SidecarError):
    """The driver engine cannot evaluate this query on these inputs; ``reason`` says why."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def refusal(query: A.Query, window_convention: A.WindowConvention | None = None,
            rules: Sequence[A.Query] = ()) -> str | None:
    """Why ``query`` (an EP-SPARQL one under the CONSTRUCT ``rules``) is not evaluated on the
    driver (module doc), or None. A window convention (``cep.algebra.WindowConvention``) other
    than the default applies to C-SPARQL windows only."""
    why = M.refusal(query)
    if why is not None:
        return why
    if A.is_csparql(query):
        return C.refusal(query)
    if window_convention is not None and not window_convention.is_default:
        return (f"the C-SPARQL engine's window conventions ({window_convention}) apply to C-SPARQL windows, not "
                "by the driver's engine to this query")
    if A.is_rsepql(query):
        return RQ.refusal(query)
    if A.is_epsparql(query):
        return E.refusal(query, rules)
    top = _per_instant_top(query.form)
    if top is not None:   # the pattern below it here, the top at each instant
        above, cover, inner = top
        parts = [n.condition if isinstance(n, A.Filter) else n.expr for n in above] + list(cover.specs if cover else ())
        if any(A.contains(part, lambda x: isinstance(x, (A.Exists, A.Timestamp, A.PatternTimestamp))) for part in parts):
            return "EXISTS or timestamp() in a top-level FILTER, BIND or HAVING of a CQELS-CEP query (on Spark)"
        query = replace(query, form=_rows_form(inner))
    return supports(query, bind=True) or static.refusal(query)


def _per_instant_top(form) -> tuple[list, A.GroupCover | None, object] | None:
    """The top of a CQELS-CEP query form that the driver evaluates at each asked instant over the
    rows alive at it (module doc), or None when one evaluation with lifetimes does it all:
    (the FILTERs and BINDs / SELECT expressions at the top of the form, top down; the GROUP BY over
    events below them, or None; the pattern below those). It is there when a GROUP BY is, or when
    one of the FILTERs and BINDs reads NOW(), the interval or a timestamp, or draws (their values
    change along a row's lifetime)."""
    above, node = [], form.inner
    while isinstance(node, (A.Filter, A.Extend)):
        above.append(node)
        node = node.inner
    if isinstance(node, A.GroupCover):
        return above, node, node.inner
    per_instant = any(A.contains(n.condition if isinstance(n, A.Filter) else n.expr, _reads_the_instant)
                      for n in above)
    return (above, None, node) if per_instant else None


def _reads_the_instant(x) -> bool:
    return (isinstance(x, (A.IntervalFn, A.Timestamp, A.PatternTimestamp))
            or (isinstance(x, A.Builtin) and x.name in A.SOLUTION_BUILTINS))


def _rows_form(inner) -> A.Project:
    """Every variable of ``inner``, as the rows the walk computes for a per-instant top."""
    return A.Project(tuple(sorted(A.variables(inner), key=lambda v: v.name)), False, inner)


@dataclass(frozen=True)
class Answers:
    """Decoded answers: ``variables`` (the SELECT's, in order) and ``rows`` sorted as the Spark
    engine's output is: ``(t, term or None per variable..., t1, t2)``; ``consumed``: the (window
    name, item, id triple) entries an RSEP-QL query's consuming MATCH has consumed after the last
    instant (``cep.engines.driver.rsepql.answers``)."""

    variables: tuple[str, ...]
    rows: list
    consumed: frozenset = frozenset()


def read_static(graphs: Mapping[str | None, Sequence[Path]]) -> tuple[dict, dict, list]:
    """The ``--static`` graphs after the reasoner: ({graph: ``static.StaticGraph``}, {id: term},
    {graph: its rejects as ``(file, line, reason, raw)``})."""

    out, terms, rejects = {}, {}, {}
    for graph, files in graphs.items():
        loaded = load_local(files)
        rejects[graph] = sorted(loaded.rejects, key=lambda r: (r[0], r[1]))
        ids = RL.dictionary(loaded.triples)
        tables = RL.materialize(*RL.encode(loaded.triples, ids))
        s, p, o = (column.tolist() for column in tables["inferred"])
        out[graph] = static.StaticGraph(frozenset(zip(s, p, o)))
        terms.update((i, t) for t, i in ids.items())
    return out, terms, rejects


def read_streams(streams: Mapping[str, Path], prefixes: Mapping[str, str]) -> tuple[dict, dict]:
    """The stream files' items as ``(item, s, p, o, t1, t2)`` id rows: ({stream IRI: int64 matrix},
    {id: term}). Raises :class:`NotOnDriver` at the first line the driver's readers do not take."""

    out, terms = {}, {}
    for iri, path in streams.items():
        file = str(Path(path).resolve())
        lines = split_lines(Path(path).read_bytes())
        items = []
        jsonl = detect_stream_format(Path(path)) == JSONL
        if jsonl or len(lines) <= PYTHON_TSNT_LINES:
            cache: dict = {}
            ids: dict = {}
            for number, raw in enumerate(lines, start=1):
                parsed = (parse_jsonl(raw, file, number, prefixes, cache) if jsonl
                          else parse_tsnt(raw, file, number, cache))
                if parsed is None:
                    raise NotOnDriver(f"{file}, line {number}: a line the driver's reader leaves to Spark's parser")
                for item, s, p, o, t1, t2 in parsed:
                    row = [item]
                    for t in (s, p, o):
                        ident = ids.get(t)
                        if ident is None:
                            ident = ids[t] = term_id(t)
                            terms.setdefault(ident, t)
                        row.append(ident)
                    items.append((*row, t1, t2))
        else:   # the compiled scanner (numba: imported only for these files)
            import pyarrow as pa

            from cep.io import linescan

            kind, plain = linescan.scan_tsnt(pa.array(lines, pa.string()), pa.array([file] * len(lines), pa.string()), {})
            slow = np.nonzero(kind == linescan.SLOW)[0]
            if len(slow):
                raise NotOnDriver(f"{file}, line {int(slow[0]) + 1}: a line the driver's reader leaves to Spark's "
                                  f"parser")
            numbers = plain.at.astype(np.int64) + 1
            ids = linescan.item_ids(pa.array([file] * len(numbers), pa.string()), numbers)
            columns = [ids, plain.ids["s"], plain.ids["p"], plain.ids["o"], plain.t1, plain.t2]
            items = np.column_stack([np.asarray(c, dtype=np.int64) for c in columns]).tolist() if len(numbers) else []
            for part in ("s", "p", "o"):
                terms.update(zip(plain.ids[part].tolist(), plain.terms[part].to_pylist()))
        out[iri] = np.array(items, dtype=np.int64).reshape(-1, 6)
    return out, terms


def _unordered(query: A.Query, graphs: Mapping, streams: Mapping[str, np.ndarray], instants: Sequence[int],
               time_unit: str, terms: Mapping[int, str], *, window_convention: A.WindowConvention | None = None,
               rules: Sequence[A.Query] = (), consumed: frozenset = frozenset(),
               lookback: int | None = None) -> Answers:
    """``answers_at`` before the modifiers: each instant's rows in ``sorted_rows``' order."""
    known = dict(terms)
    for q in (query, *rules):
        known.update((term_id(t), t) for t in A.constants(q.form))
    form = query.form
    variables = TRIPLE if isinstance(form, A.Construct) else tuple(v.name for v in form.variables)
    if A.is_csparql(query):
        convention = A.check_window_convention(query, window_convention)
        return Answers(variables, sorted_rows(C.answers(query, graphs, streams, instants, time_unit, known,
                                                        convention)))
    if A.is_rsepql(query):
        rows, consumed = RQ.answers(query, graphs, streams, instants, time_unit, known, consumed)
        return Answers(variables, sorted_rows(rows), consumed)
    if A.is_epsparql(query):
        return Answers(variables, sorted_rows(E.answers(query, streams, instants, time_unit, known, rules,
                                                                   lookback)))

    def lookup(ids) -> dict:
        return {i: known[i] for i in ids if i in known}

    top = _per_instant_top(form)
    if top is not None:                 # the rows below the top: the top at each instant (below)
        form = _rows_form(top[2])
    elif isinstance(form, A.Construct):   # every variable: the template is applied at each instant
        form = A.Project(tuple(sorted(A.variables(form.inner), key=lambda v: v.name)), False, form.inner)
    evaluated = replace(query, form=form)
    background = static.background_relations(evaluated, graphs, lookup, time_unit)
    total = sum(len(rows) for rows in streams.values())
    if total >= COLUMNAR_FROM:
        from cep.engines.driver import columnar

        result = columnar.evaluate(evaluated, streams, background, time_unit, terms=lookup, known=known)
        rows = result.rows
    else:
        items = {iri: [tuple(r) for r in rows.tolist()] for iri, rows in streams.items()}
        rows = L.evaluate(evaluated, items, background, time_unit, terms=lookup, known=known).rows
    out = []
    if top is not None or isinstance(query.form, A.Construct):
        omega = L.Rel.of([var_column(v.name) for v in form.variables], rows)
        for at in instants:
            fresh: dict = {}
            rel = omega if top is None else _top_at(omega, *top[:2], at, known, lookup, time_unit)
            answers = L.form_at(query.form, rel, at, fresh)
            known.update(fresh)
            out.extend((at, *(None if v is None else known[v] for v in r[:-2]), r[-2], r[-1]) for r in answers)
        return Answers(variables, sorted_rows(out))
    for row in rows:
        values = tuple(None if v is None else known[v] for v in row[:-4])
        t1, t2, a, b = row[-4:]
        for at in instants:
            if a <= at <= b:
                out.append((at, *values, t1, at if t2 == OPEN_END else t2))
    return Answers(variables, sorted_rows(out))


def _top_at(omega: L.Rel, above: list, cover: A.GroupCover | None, at: int, known: dict, lookup,
            time_unit: str) -> L.Rel:
    """A per-instant top (``_per_instant_top``) at instant ``at``: the rows of ``omega`` alive at it,
    grouped when there is a GROUP BY (``cep.engines.driver.rows.group_cover``: one row per group,
    covering its members), then the FILTERs (HAVING) and BINDs (SELECT expressions) above, bottom up,
    NOW() being ``at``."""
    token = EVALUATION_INSTANT.set(at)
    try:
        rel = L.alive_at(omega, at)
        if cover is not None:
            rel = L.group_cover(rel, cover.group, cover.specs, known, at)
        for node in reversed(above):
            rel = (L.filter_rel(rel, node.condition, lookup, time_unit) if isinstance(node, A.Filter)
                   else L.extend(rel, node.var, node.expr, known, time_unit))
        return rel
    finally:
        EVALUATION_INSTANT.reset(token)


def answers_at(query: A.Query, graphs: Mapping, streams: Mapping[str, np.ndarray], instants: Sequence[int],
               time_unit: str, terms: Mapping[int, str], *, window_convention: A.WindowConvention | None = None,
               rules: Sequence[A.Query] = (), consumed: frozenset = frozenset(),
               lookback: int | None = None) -> Answers:
    """⟦query, t⟧ for each t of ``instants`` (module doc), decoded with ``terms`` ({id: term}; the
    query's constants are added). ``graphs``: ``read_static``'s; ``streams``: ``read_streams``'.
    ``window_convention``: C-SPARQL's windows (``cep.algebra.WindowConvention``; None: the default);
    ``rules``: an EP-SPARQL query's CONSTRUCT rules (``cep.engines.rules``); ``consumed``: what
    earlier evaluations of an RSEP-QL query consumed (``Answers.consumed``); ``lookback``: an
    EP-SPARQL query's instant t sees the occurrences started at or after t − lookback (None: all;
    a continuous run's horizon). A query ``refusal`` gives a reason for raises ``NotOnDriver``. A
    CONSTRUCT's answers are its triples: variables ``s``, ``p``, ``o``. ``Answers.rows`` are
    ``sorted_rows``'; with ORDER BY / LIMIT / OFFSET each instant's rows are in the query's order
    and sliced (``cep.engines.driver.modifiers``)."""
    why = refusal(query, window_convention, rules)
    if why is not None:
        raise NotOnDriver(why)
    answers = _unordered(query, graphs, streams, instants, time_unit, terms, window_convention=window_convention,
                         rules=rules, consumed=consumed, lookback=lookback)
    if query.modifiers is None:
        return answers
    return replace(answers, rows=M.apply(query.modifiers, answers.variables, answers.rows, time_unit))


def sorted_rows(rows) -> list:
    """``(t, term or None..., t1, t2)`` rows, distinct, in the Spark engine's output order: by the
    instant, each term (unbound first), t1, t2."""
    return sorted(set(rows), key=lambda r: (r[0], *[(v is not None, v or "") for v in r[1:-2]], r[-2], r[-1]))
