"""Every asked instant of a query whose evaluations depend on each other, in ONE Spark task: the
driver engine's ordered pass (``cep.engines.driver.answers``) run on an executor (issue 37).

Most queries are evaluated at n instants in one plan (``cep.engines.spark.evaluate.evaluate_at_instants``:
from their answers' lifetimes, or keyed by the instant). Two kinds cannot be keyed by the instant,
because what an instant sees depends on the evaluations before it:

* an RSEP-QL MATCH whose policy consumes (chronological, recent; RSEP-QL §4.4): an instant does
  not see the stream triples earlier instants' answers used;
* EP-SPARQL CONSTRUCT rules (``cep.engines.rules``), closed over the stream at each instant.

Evaluating them instant by instant costs n Spark evaluations (seconds each). Here the inputs —
every background graph's triples, every stream's items and the dictionary, all as ids — are
shuffled into one partition, and one ``mapInPandas`` task runs the driver engine's single ordered pass over the
instants (the consumed set carried from each instant to the next, as the reference defines it),
then writes the answers back as id rows. The driver holds none of the inputs or answers.

Parallelism is one task, like Flink CEP's parallelism 1 for an unkeyed pattern: a consuming MATCH's
FIRST / LAST and its chronological / recent choices may range over every event of the window, so the
consumed set is one sequential state. Unless the MATCHes split by a key (:func:`match_split`: every
event's triple patterns hold the key, no FIRST / LAST or naive SEQ, no triple that could belong to
two keys), as Flink CEP's ``keyBy``: then the stream triples are shuffled by their key into a task
per core, each running the same ordered pass over its keys (:func:`match_in_one_task`). The task's
memory bounds the inputs: the stream's items as an int64 matrix, the background as id triples, the
dictionary's terms.

Three tasks, one mechanism (``_run``: the inputs in, the rows out, an error raised as its class):

* :func:`evaluate_in_one_task`: the whole query (``cep.engines.driver.answers``), when the driver
  engine takes it (:func:`refusal`: it refuses the query, a ``since`` time, no dictionary, or a
  dictionary lacking an input's term, the task says);
* :func:`match_in_one_task`: only the MATCHes' events at each instant
  (``cep.engines.driver.rsepql.match_rows``), when the driver refuses what is around a consuming
  MATCH: what a MATCH consumes depends on its events alone, so the rest of the query is then
  evaluated in the plan keyed by the instant over them;
* :func:`derive_in_one_task`: only each instant's closure under EP-SPARQL rules
  (``cep.engines.driver.epsparql.derived_rows``), when the driver refuses the query but not the
  rules: the closure depends on the stream and the rules alone, and the query is keyed by the
  instant over the stream plus it.

``cep.engines.spark.evaluate.evaluate_at_instants`` picks among them; what none takes is keyed by
the instant (rules it cannot close: ``cep.engines.spark.evaluate.close_rules_at_instants``). Errors the driver engine raises for the inputs
(``cep.engines.errors``, the rules' ``RulesError``: a missing stream, rules with no fixpoint) are
raised on the caller's side with their class and message; any other failure is the task's, as
Spark reports it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cep import algebra as A
from cep.algebra.windows import WindowConvention
from cep.engines import errors as E
from cep.engines.columns import INSTANT, ITEM, T_END, T_START, var_column
from cep.engines.driver import answers as D
from cep.engines.driver import epsparql as EP
from cep.engines.driver import rsepql as RQ
from cep.engines.driver.static import StaticGraph
from cep.engines.rules import RulesError
from cep.engines.spark.filters import ORDER
from rdfcore.hashing import term_id
from rdfcore.schema import ID, O, P, S, TERM

__all__ = ["refusal", "rules_refusal", "evaluate_in_one_task", "match_in_one_task", "derive_in_one_task",
           "match_split"]

#: the input rows' kinds: a background triple (key = the graph's position), a stream item's triple
#: (key = the stream's position), a dictionary term
_TRIPLE, _ITEM, _TERM = 0, 1, 2
#: the output rows' kinds: an answer, a term an answer computed (not in the dictionary), an error
#: — or the dictionary's missing the terms of some input ids (it need only cover what FILTERs read)
_ANSWER, _COMPUTED, _ERROR, _UNCOVERED = 0, 1, 2, 3
_KIND, _KEY, _TEXT = "_kind", "_key", "_text"
#: the input's id and time columns; never null (a null turns a pandas column into float64, which
#: cannot hold a 64-bit id)
_LONGS = ("_a", "_b", "_c", "_d", "_e", "_f")


def rules_refusal(rules) -> str | None:
    """Why :func:`derive_in_one_task` does not close a stream under the EP-SPARQL ``rules``, or None."""
    return EP.rules_refusal(rules)


def refusal(query: A.Query, background, dictionary: DataFrame | None, since, window_convention, rules) -> str | None:
    """Why :func:`evaluate_in_one_task` does not evaluate ``query`` with these inputs, or None."""
    if since is not None:
        return "a background 'since' time (the driver engine's background mappings start at MIN_TIME)"
    if dictionary is None:
        return "no dictionary (the driver engine decodes the terms its FILTERs and answers read)"
    if background is not None and not isinstance(background, Mapping):
        return "a background that is not {graph: DataFrame} (a published store: evaluated on Spark)"
    return D.refusal(query, window_convention, rules)


def evaluate_in_one_task(query: A.Query, background: Mapping | None, streams: Mapping, times: Sequence[int],
                         time_unit: str, dictionary: DataFrame, *, terms: list | None, rules=(), column: str,
                         window_convention: WindowConvention) -> DataFrame | None:
    """⟦query, t⟧ at each of ``times`` (increasing) as ``evaluate_at_instants`` returns them (the
    projected variables' id columns or a CONSTRUCT's s, p, o; ``T_START``, ``T_END``; the instant in
    ``column``; ``ORDER`` when the query has ORDER BY / LIMIT / OFFSET), computed in one Spark task
    (module doc). The caller checked :func:`refusal`. ``terms`` receives the (id, term) frame of the
    terms the answers computed (aggregates, blank nodes). None when ``dictionary`` does not cover
    every id of the inputs (the driver engine decodes the answers; Spark's evaluation needs only the
    terms its FILTERs read): the caller keys the query by the instant then."""
    form = query.form
    variables = [S, P, O] if isinstance(form, A.Construct) else [var_column(v.name) for v in form.variables]
    names = (_KIND, column, ORDER, *variables, T_START, T_END, ID, TERM)
    out = _run(_Answers(query, tuple(background or {}), tuple(streams), tuple(times), time_unit, tuple(rules),
                        window_convention, names), dictionary, background, streams)
    if out is None:
        return None
    if terms is not None:
        terms.append(out.filter(F.col(_KIND) == _COMPUTED).select(ID, TERM))
    keep = [*variables, T_START, T_END, column] + ([ORDER] if query.modifiers is not None else [])
    return out.filter(F.col(_KIND) == _ANSWER).select(*keep)


def match_in_one_task(query: A.Query, streams: Mapping, times: Sequence[int], time_unit: str,
                      tasks: int = 1) -> dict:
    """The events of every MATCH of ``query`` at each of ``times``, what earlier instants consumed
    taken out (``cep.engines.driver.rsepql.match_rows``), computed in one Spark task over the
    streams' items (ids only: no dictionary): {MATCH node: DataFrame of its variable columns,
    ``INSTANT``, ``T_START``, ``T_END``}, the relation the plan keyed by the instant
    (``cep.engines.spark.keyed``) evaluates a MATCH to. The rest of the query is then evaluated in
    that plan: a consuming policy's state is the MATCH's alone.

    ``tasks`` > 1: when the MATCHes split by a key (:func:`match_split`), the stream triples are
    shuffled by their key into that many tasks, each running the same ordered pass over its keys'
    triples; else one task."""
    matches = [n for n in A.walk(query.form) if isinstance(n, A.Match)]
    variables = sorted({var_column(v.name) for m in matches for v in A.variables(m)})
    names = (_KIND, _KEY, INSTANT, *variables, T_START, T_END, ID, TERM)
    split = match_split(query) if tasks > 1 else None
    out = _run(_Matches(query, (), tuple(streams), tuple(times), time_unit, (), None, names), None, None, streams,
               tasks=tasks if split is not None else 1, split=split)
    frames = {}
    for k, node in enumerate(matches):
        own = sorted(var_column(v.name) for v in A.variables(node))
        frames[node] = out.filter((F.col(_KIND) == _ANSWER) & (F.col(_KEY) == k)).select(*own, INSTANT, T_START,
                                                                                         T_END)
    return frames


def derive_in_one_task(rules, streams: Mapping, times: Sequence[int], time_unit: str, dictionary: DataFrame,
                       ) -> tuple[DataFrame, DataFrame] | None:
    """The occurrences the EP-SPARQL ``rules`` derive at each of ``times`` from the streams
    (``cep.engines.driver.epsparql.derived_rows``: each instant's closure, round after round),
    computed in one Spark task: (a DataFrame of ``INSTANT`` and the stream columns, each row a
    derived occurrence of that instant, its item the hash of the triple and interval as
    ``cep.engines.spark.evaluate.close_rules`` names it; the (id, term) frame of the terms the
    rules made). The plan keyed by the instant then evaluates the query over the stream plus them.
    None when ``dictionary`` lacks an input's term (the rules' FILTERs read terms)."""
    names = (_KIND, INSTANT, S, P, O, T_START, T_END, ID, TERM)
    out = _run(_Derived(None, (), tuple(streams), tuple(times), time_unit, tuple(rules), None, names), dictionary,
               None, streams)
    if out is None:
        return None
    derived = out.filter(F.col(_KIND) == _ANSWER).select(
        INSTANT, F.xxhash64(S, P, O, T_START, T_END).alias(ITEM), S, P, O, T_START, T_END)
    return derived, out.filter(F.col(_KIND) == _COMPUTED).select(ID, TERM)


def match_split(query: A.Query) -> "tuple[tuple[A.Term, A.TriplePattern, int], ...] | None":
    """How the stream triples of ``query``'s MATCHes split by a key into independent parts, or None.

    The MATCHes' choices and what they consume stay inside one key when, in each MATCH, one
    variable (the key) is in every triple pattern of every event: two events are compatible only
    with the same key, so a SEQ pairs, and a chronological or recent policy picks and keeps, events
    of one key (RSEP-QL eq. 7, 10, 11), and an answer uses, so consumes, triples of its key only.
    Not split: FIRST / LAST, and naive SEQ (its LAST E1, LAST E2 range over every key).

    A stream triple's key is then the value at the key's position of the pattern it matches. The
    split is refused when one triple could match two patterns of one stream with the key at
    different positions (their constants do not tell them apart): it would belong to two keys,
    and what one consumed the other would still see. Returns (stream, pattern, position of the
    key) for every event's triple pattern."""
    routes = []
    for match in (n for n in A.walk(query.form) if isinstance(n, A.Match)):
        if match.policy == "naive" or A.contains(match, lambda x: isinstance(x, (A.FirstEvent, A.LastEvent)) or (
                isinstance(x, A.EventSeq) and x.policy == "naive")):
            return None
        events = [e for e in A.walk(match) if isinstance(e, A.EventPattern)]
        patterns = [(e.stream, tp) for e in events for tp in e.pattern.patterns]
        if not patterns or any(not isinstance(tp, A.TriplePattern) for _stream, tp in patterns):
            return None
        shared = set.intersection(*({x for x in (tp.s, tp.p, tp.o) if isinstance(x, A.Var)} for _s, tp in patterns))
        if not shared:
            return None
        key = min(shared, key=lambda v: v.name)
        routes += [(stream, tp, (tp.s, tp.p, tp.o).index(key)) for stream, tp in patterns]
    if not routes:
        return None
    for n, (stream, a, i) in enumerate(routes):
        for other, b, j in routes[n + 1:]:
            if other == stream and i != j and _may_overlap(a, b):
                return None
    return tuple(routes)


def _may_overlap(a: A.TriplePattern, b: A.TriplePattern) -> bool:
    """Whether some triple could match both patterns (no position holds two different constants)."""
    return not any(not isinstance(x, A.Var) and not isinstance(y, A.Var) and x != y
                   for x, y in zip((a.s, a.p, a.o), (b.s, b.p, b.o)))


def _split_key(split, stream_names) -> F.Column:
    """A stream triple's key under ``match_split``'s routes (the subject when it matches none)."""
    positions = _LONGS[1:4]                                 # an item row's s, p, o
    cases = []
    for stream, tp, at in split:
        if stream not in stream_names:
            continue
        matches = (F.col(_KIND) == _ITEM) & (F.col(_KEY) == stream_names.index(stream))
        for column, x in zip(positions, (tp.s, tp.p, tp.o)):
            if not isinstance(x, A.Var):
                matches = matches & (F.col(column) == F.lit(term_id(x)).cast("long"))
        cases.append(F.when(matches, F.col(positions[at])))
    return F.coalesce(*cases, F.col(positions[0]))


def _run(task: "_Task", dictionary: DataFrame | None, background: Mapping | None, streams: Mapping, *,
         tasks: int = 1, split=None) -> DataFrame | None:
    """``task`` over the inputs, in one partition (or ``tasks`` partitions by ``split``'s key:
    :func:`match_in_one_task`), its output stored (``localCheckpoint``); None when it found the
    dictionary lacking an input's term; raises the error it reported."""
    background = dict(background or {})
    parts = []
    if dictionary is not None:
        parts.append(dictionary.select(F.lit(_TERM).alias(_KIND), F.lit(0).alias(_KEY), F.col(ID).alias(_LONGS[0]),
                                       *[F.lit(0).cast("long").alias(c) for c in _LONGS[1:]],
                                       F.col(TERM).alias(_TEXT)))
    for k, name in enumerate(task.graph_names):
        parts.append(background[name].select(F.lit(_TRIPLE).alias(_KIND), F.lit(k).alias(_KEY),
                                             *[F.col(c).alias(x) for c, x in zip((S, P, O), _LONGS)],
                                             *[F.lit(0).cast("long").alias(c) for c in _LONGS[3:]],
                                             F.lit(None).cast("string").alias(_TEXT)))
    for k, name in enumerate(task.stream_names):
        parts.append(streams[name].select(F.lit(_ITEM).alias(_KIND), F.lit(k).alias(_KEY),
                                          *[F.col(c).alias(x) for c, x in zip((ITEM, S, P, O, T_START, T_END), _LONGS)],
                                          F.lit(None).cast("string").alias(_TEXT)))
    inputs = parts[0]
    for part in parts[1:]:
        inputs = inputs.unionByName(part)
    schema = ", ".join(f"`{c}` {'int' if c == _KIND else 'string' if c == TERM else 'long'}" for c in task.names)
    parted = inputs.repartition(tasks, _split_key(split, list(task.stream_names))) if tasks > 1 else \
        inputs.repartition(1)
    out = parted.mapInPandas(task, schema).localCheckpoint()
    failed = out.filter(F.col(_KIND).isin(_ERROR, _UNCOVERED)).select(_KIND, TERM).limit(1).collect()
    if failed and failed[0][_KIND] == _UNCOVERED:
        return None
    if failed:
        raise _error(failed[0][TERM])
    return out


class _Task:
    """The function ``mapInPandas`` runs in the one task: read every input batch, run the driver
    engine's ordered pass (:meth:`rows`), write its rows (picklable: the query and plain values).
    ``names``: the output columns, the kind first, an id and a term last."""

    def __init__(self, query, graph_names, stream_names, times, time_unit, rules, convention, names):
        self.query, self.graph_names, self.stream_names = query, graph_names, stream_names
        self.times, self.time_unit, self.rules, self.convention = times, time_unit, rules, convention
        self.names = names

    def __call__(self, batches):
        triples = {k: [] for k in range(len(self.graph_names))}
        items = {k: [] for k in range(len(self.stream_names))}
        terms: dict = {}
        for batch in batches:
            kinds, keys = batch[_KIND].to_numpy(), batch[_KEY].to_numpy()
            is_term = kinds == _TERM
            if is_term.any():
                terms.update(zip(batch[_LONGS[0]].to_numpy()[is_term].tolist(), batch[_TEXT][is_term].tolist()))
            for kind, store, width in ((_TRIPLE, triples, 3), (_ITEM, items, 6)):
                rows = kinds == kind
                if not rows.any():
                    continue
                matrix = batch.loc[rows, list(_LONGS[:width])].to_numpy(dtype=np.int64)
                for k in np.unique(keys[rows]).tolist():
                    store[k].append(matrix[keys[rows] == k])
        graphs = {name: StaticGraph(frozenset(map(tuple, _stacked(triples[k], 3).tolist())))
                  for k, name in enumerate(self.graph_names)}
        streams = {name: _stacked(items[k], 6) for k, name in enumerate(self.stream_names)}
        blank = [None] * (len(self.names) - 2)
        try:
            rows = self.rows(graphs, streams, terms)
        except _RAISED as error:
            rows = [(_ERROR, *blank, f"{type(error).__name__}\n{error}")]
        yield _frame([(_UNCOVERED, *blank, None)] if rows is None else rows, self.names)

    def rows(self, graphs: dict, streams: dict, terms: dict) -> list | None:
        raise NotImplementedError


def _covered(graphs: dict, streams: dict, terms: dict) -> bool:
    """Whether ``terms`` holds every id of the background graphs' triples and the streams' items."""
    used = np.unique(np.concatenate([np.fromiter((x for tr in g.triples for x in tr), np.int64)
                                     for g in graphs.values()]
                                    + [m[:, 1:4].ravel() for m in streams.values()] + [np.empty(0, np.int64)]))
    return not len(used) or bool(np.isin(used, np.fromiter(terms, np.int64, len(terms))).all())


def _computed_rows(known: dict, terms: dict, width: int) -> list:
    """``_COMPUTED`` rows of the terms in ``known`` that ``terms`` (the dictionary's) lacks."""
    return [(_COMPUTED, *([None] * width), i, t) for i, t in known.items() if i not in terms]


class _Answers(_Task):
    """The whole query's answers (``cep.engines.driver.answers.answers_at``), re-encoded as ids; the
    terms an answer computed as ``_COMPUTED`` rows; None when ``terms`` misses an input id."""

    def rows(self, graphs, streams, terms):
        if not _covered(graphs, streams, terms):
            return None
        graphs.setdefault(None, StaticGraph(frozenset()))
        answers = D.answers_at(self.query, graphs, streams, list(self.times), self.time_unit, terms,
                               window_convention=self.convention, rules=list(self.rules))
        ids = {t: i for i, t in terms.items()}
        computed: dict = {}
        rows, position, last = [], 0, None
        for at, *values, t1, t2 in answers.rows:
            position = position + 1 if at == last else 0
            last = at
            encoded = []
            for v in values:
                if v is None:
                    encoded.append(None)
                    continue
                i = ids.get(v)
                if i is None:
                    i = computed.get(v)
                    if i is None:
                        i = computed[v] = term_id(v)
                encoded.append(i)
            rows.append((_ANSWER, at, position, *encoded, t1, t2, None, None))
        width = len(self.names) - 3
        rows.extend((_COMPUTED, *([None] * width), i, t) for t, i in computed.items())
        return rows


class _Derived(_Task):
    """Each instant's closure under the rules (``cep.engines.driver.epsparql.derived_rows``): rows
    ``(_ANSWER, t, s, p, o, t1, t2)``, and the terms the rules made as ``_COMPUTED`` rows; None
    when ``terms`` misses an input id."""

    def rows(self, graphs, streams, terms):
        if not _covered(graphs, streams, terms):
            return None
        known = dict(terms)
        for rule in self.rules:
            known.update((term_id(t), t) for t in A.constants(rule.form))
        rows = [(_ANSWER, *row, None, None) for row in EP.derived_rows(list(self.rules), streams, list(self.times),
                                                                       self.time_unit, known)]
        return rows + _computed_rows(known, terms, len(self.names) - 3)


class _Matches(_Task):
    """Every MATCH's events at each instant (``cep.engines.driver.rsepql.match_rows``): rows
    ``(_ANSWER, k, t, ids..., t1, t2)``."""

    def rows(self, graphs, streams, terms):
        _matches, _names, rows = RQ.match_rows(self.query, streams, list(self.times), self.time_unit)
        return [(_ANSWER, *row, None, None) for row in rows]


def _stacked(chunks: list, width: int) -> np.ndarray:
    return np.concatenate(chunks) if chunks else np.empty((0, width), dtype=np.int64)


def _frame(rows: list, names: tuple) -> pd.DataFrame:
    """The task's output rows under the output columns ``names`` (nullable numbers; the last, a term)."""
    columns = list(zip(*rows)) if rows else [()] * len(names)
    # each column straight from its Python values: through a float64 frame, a 64-bit id would round
    types = ["Int32", *["Int64"] * (len(names) - 2)]
    data = {name: pd.array(list(values), dtype=kind) for name, values, kind in zip(names, columns, types)}
    data[names[-1]] = pd.Series(list(columns[-1]), dtype=object)
    return pd.DataFrame(data)


#: the errors the driver engine raises for the inputs (reported by the task, raised by the caller)
_RAISED = (E.CepEvaluationError, RulesError)


def _error(text: str) -> Exception:
    """The driver engine's error, raised in the task, as its class (``cep.engines.errors``, or the
    rules' ``RulesError``)."""
    name, _, message = text.partition("\n")
    kind = RulesError if name == RulesError.__name__ else getattr(E, name, None)
    if not (isinstance(kind, type) and issubclass(kind, _RAISED)):
        kind = E.CepEvaluationError
    return kind(message)
