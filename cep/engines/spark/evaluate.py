"""Evaluation of a CQELS-CEP query at a time t on Spark (CQELS-CEP §4.3, equations (1)-(17)).

``evaluate(query, background, streams, at=t)`` walks the algebra (``cep.algebra.patterns``) and builds one
Spark plan of the operators of ``cep.engines.spark.intervals``; ``cep.engines.reference.evaluate`` is the same walk in
pure Python (the oracle).

* ``Project`` / ``Construct`` (eq. 1): the result mappings restricted to the projected variables.
  Results are sets, as the paper's eq. (1) (``{<μ|V, [t1,t2]> | ...}``): ``SELECT`` and
  ``SELECT DISTINCT`` both return distinct (mapping, interval) rows.
* ``Join`` / ``Union`` / ``Sequence`` / ``SeqWithout`` / ``NoHead`` / ``NoTail``: the operators
  JOIN, OR, SEQ, SEQ_WO, NO_HEAD, NO_TAIL(·, ·, t) of §4.2 (eq. 2-8, 10-15). Sequences arrive
  already right-associated and with the negated element placed by ``cep.algebra.patterns.sequence``.
* ``StreamPattern`` (eq. 9, 16): the stream is windowed at t (``window``) and the pattern's BGPs
  are matched inside ONE stream item each: the triple patterns of a BGP are joined on the item
  (and its interval), so μ(P) ⊆ g for one <g, [t1, t2]> of the window; the mapping gets that
  item's (clipped) interval.
* ``Background`` (eq. 17): the pattern is evaluated on the static graph with ordinary SPARQL
  semantics (BGP joins on ids, property paths by ``paths.spark.evaluate``, OPTIONAL, UNION,
  FILTER) and every mapping gets the interval [t1, t], t1 = the time since which the background
  has not changed. A static file or a published store version carries no such time, so by default
  t1 = ``MIN_TIME`` (the smallest 64-bit time: "unchanged since ever"); JOIN with the event
  clauses then keeps the events' intervals — the running example's [10, 16] at t=16. Pass
  ``since=`` (one time, or a dict per graph) when the background's change time is known (e.g. a
  refresh that publishes a new version).
* ``Filter``: SPARQL 1.1 §17 compiled to Spark columns by ``cep.engines.spark.filters`` (ids compared directly
  where a constant IRI is compared with a variable, else the terms decoded through the dictionary).
* One walk for the whole algebra: what a ``BGP`` means depends on where it stands (``_Scope``):
  inside a window (eq. 16), inside a background graph (eq. 17), or nowhere (an error). The other
  operators are the same everywhere; on a background every mapping carries the same interval, so
  JOIN / OR / OPTIONAL / FILTER reduce to SPARQL's Join / Union / LeftJoin / Filter.
* ``Occurrences`` (EP-SPARQL §4.2): the pattern over every item of every stream given that has
  ended by t (``cep.engines.spark.intervals.occurrences``); a BGP there matches each triple pattern in any item
  and covers their intervals (``cep.engines.spark.intervals.cover_join``), and the EP-SPARQL operators are those
  of ``cep.engines.spark.intervals``. Continuously, EP-SPARQL runs one such evaluation per evaluation instant
  (``cep.continuous.plan``'s INSTANTS mode, over a ``--horizon``); the lifetimes runtime
  (``Ops`` other than ``cep.engines.spark.intervals``) refuses its operators.
* Background graphs are looked up by the IRI of ``Background.graph`` (``FROM <g>``); when that IRI
  was not given but a default graph (key ``None``) was, the default graph is used (a caller that
  loads the FROM file passes it as the default graph).

Time: ``at`` and the stream's ``t_start``/``t_end`` are integers in ``time_unit`` ticks; window
durations are converted with ``Duration.ticks(time_unit)``.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from cep import algebra as A
from cep.algebra.timeline import MIN_TIME
from cep.engines.columns import ITEM, STREAM_COLUMNS, T_END, T_START, column_var, scratch, var_column, var_columns
from cep.engines.errors import CepInputError, DictionaryRequiredError, MissingInputError, UnsupportedQueryError
from cep.engines.rules import DERIVED, MAX_ROUNDS, check_rules, no_fixpoint
from cep.engines.spark import graphpatterns as sparql
from cep.engines.spark import intervals as I
from cep.engines.spark import keyed as K
from cep.engines.spark import lifetimes as L
from cep.engines.spark import ordered
from cep.engines.spark.arrow import evaluate_rows, solution_seed
from cep.algebra.windows import RSEPQL_WINDOWS, SKIP, WindowConvention
from cep.engines.spark.csparql import IN_DEFAULT, aggregate, snapshot_graph, stream_graph, timed_filter, windows_content
from cep.engines.spark.filters import ORDER, filter_mappings, order_answers, order_solutions
from cep.engines.spark.graphpatterns import correlate, group_cover, minus, values_rows
from cep.engines.spark.rsepql import USED_COLUMNS, match_events, rsep_window, used_triples
from cep.engines.spark.triples import non_null, triple_part
from cep.lowering.languages import compile_query
from cep.terms.values import term_value
from paths.spark import END, PathGraph, START, evaluate as path_evaluate
from rdfcore.dictionary import merge_dictionaries
from rdfcore.hashing import term_id
from rdfcore.schema import DICTIONARY, ID, INFERRED, O, P, S, TERM, require_columns
from reasoner.store import Materialized

__all__ = ["evaluate", "evaluate_at_instants", "evaluate_each", "evaluate_sequence", "close_rules_at_instants",
           "one_pass_refusal",
           "keyed_refusal", "AT",
           "evaluate_lifetimes", "Prepared", "window", "MIN_TIME"]


def evaluate(query, background, streams: Mapping, at: int, time_unit: str = "ms", *,
             dictionary: DataFrame | None = None, since=None, prefixes=None,
             terms: list | None = None, rules=(), window_convention: WindowConvention | None = None) -> DataFrame:
    """⟦Q, t⟧ (eq. 1) as a DataFrame.

    ``query``: query text (compiled with ``cep.compile_query``) or a ``cep.algebra.patterns.Query``.
    ``background``: {graph IRI term or None (default graph): DataFrame (s, p, o) of ids}, or a
    ``reasoner.store.Materialized`` (the default graph = its ``inferred`` table; paths may probe
    its closure tables; its dictionary decodes FILTER values).
    ``streams``: {stream IRI term: DataFrame (item, s, p, o, t_start, t_end) of ids}.
    ``dictionary``: a DataFrame (id, term) covering the terms FILTER expressions look at (needed
    only by filters that inspect values; unioned with a store's dictionary).
    ``since``: the time since which the background is unchanged (int, or {graph: int});
    default ``MIN_TIME``.
    ``terms``: a list the (id, term) DataFrames of the terms the query computes are appended to
    (aggregates: counts, sums, ...); decode the result with them too. They are cached:
    ``unpersist()`` them when done.
    ``rules``: EP-SPARQL CONSTRUCT rules (compiled queries): the query reads the streams' Q-closure
    (``close_rules``; the terms the rules compute go to ``terms`` too).
    ``window_convention``: how a C-SPARQL query's windows are bounded and reported
    (``cep.algebra.WindowConvention``; None: RSEP-QL's (c − ρ, c], closes at multiples of the step,
    empty windows answered); one the query cannot take raises ``WindowConventionError``.

    Returns one long column per projected variable (``cep.engines.columns.var_column(name)``) plus
    ``T_START``, ``T_END`` (and ``cep.engines.spark.filters.ORDER``, each answer's position, for a query with
    ORDER BY / LIMIT / OFFSET); a CONSTRUCT returns (s, p, o, t_start, t_end).

    Expected failures (``cep.engines.errors``, all ``SidecarError``s) are raised while the plan is built:
    ``MissingInputError`` (a stream or graph the query reads was not given; also a KeyError),
    ``CepInputError`` (no input at all), ``DictionaryRequiredError`` (a FILTER inspects values and
    no dictionary was given), ``UnsupportedQueryError`` (a path inside a WINDOW, a CONSTRUCT blank
    node, a REGEX with a non-constant pattern).
    """
    if isinstance(query, str):
        query = compile_query(query, prefixes)
    if not isinstance(query, A.Query):
        raise TypeError(f"evaluate() needs query text or a cep.algebra.patterns.Query, got {type(query).__name__}")
    convention = A.check_window_convention(query, window_convention)
    computed: list = []
    if rules:
        streams = close_rules(check_rules(query, rules), background, streams, int(at), time_unit,
                              dictionary=dictionary, terms=computed)
        if terms is not None:
            terms.extend(computed)
    runtime = _Runtime(background, streams, int(at), time_unit, [dictionary, *computed], since,
                       convention=convention)
    return _answers(runtime, query, terms)


def _answers(runtime: "_Runtime", query: A.Query, terms: list | None) -> DataFrame:
    """``runtime``'s answers to ``query``; the terms it computed appended to ``terms`` (cached for
    the caller; None: not asked for)."""
    runtime.keep_terms = terms is not None
    result = runtime.query(query)
    if terms is not None:
        terms.extend(runtime.terms)
    return result


#: the instant column of :func:`evaluate_at_instants`' result (``query --at T1,T2,...``'s ``_at``)
AT = "_at"


def evaluate_at_instants(query, background, streams: Mapping, times, time_unit: str = "ms", *,
                         dictionary: DataFrame | None = None, since=None, prefixes=None,
                         terms: list | None = None, rules=(), column: str = AT,
                         window_convention: WindowConvention | None = None) -> DataFrame:
    """⟦Q, t⟧ at each of the instants ``times`` (increasing), as ONE DataFrame: for each t, the rows
    :func:`evaluate` returns at t (the same columns), with t in the long column ``column``.
    Arguments as :func:`evaluate`'s.

    A query whose answers are rows with lifetimes (a CQELS-CEP query; :func:`one_pass_refusal`
    says which are not) is evaluated once, for every instant at once (:func:`evaluate_lifetimes`' plan):
    its mappings alive at each t are read off the lifetimes by one range join with the instants
    (``cep.engines.spark.lifetimes.alive_at_instants``), and the query form (projection, CONSTRUCT
    template) is applied to them as :func:`evaluate` applies it at t. The cost is one plan however
    many instants are asked.

    A query whose answers are defined per instant (C-SPARQL, EP-SPARQL, RSEP-QL, CQELS-CEP with
    ORDER BY / LIMIT or GROUP BY over events; :func:`keyed_refusal` says which not) is evaluated
    once too, keyed by the instant (``cep.engines.spark.keyed``): every instant's windows,
    snapshots, occurrences or MATCH contexts at once, each row carrying its instant, so that
    joins, groups, ORDER BY and LIMIT work per instant.

    Any other query (an RSEP-QL consuming policy makes each evaluation depend on the earlier ones;
    ``rules`` close the stream at each instant) is evaluated in one Spark task, the driver engine's
    ordered pass over the instants (``cep.engines.spark.ordered``), unless ``ordered.refusal`` says
    why not or the dictionary lacks some input term. Then what carries from instant to instant is
    computed apart — a consuming MATCH's events in that one task (what a MATCH consumes depends on
    its events only; in a task per core when they split by a key, ``ordered.match_split``, which
    is then preferred to the whole query's one task), each instant's closure under ``rules`` (it
    depends on the stream and the rules only) in that task too, or where the driver engine
    refuses the rules, keyed by the instant (:func:`close_rules_at_instants`) — and the rest of the
    query in the plan keyed by the instant, over them. No query is evaluated instant by instant: that is :func:`evaluate_each`,
    for the continuous runtime's consuming policies (their state carried between batches)."""
    if isinstance(query, str):
        query = compile_query(query, prefixes)
    convention = A.check_window_convention(query, window_convention)
    rules = check_rules(query, rules) if rules else ()
    times = _increasing(times)
    if not times:
        raise ValueError("evaluate_at_instants() needs at least one instant")
    if not rules and one_pass_refusal(query) is not None and keyed_refusal(query) is None:
        runtime = _Runtime(background, streams, None, time_unit, [dictionary], since, convention=convention,
                           instants=K.Instants.of_times(_session(background, streams, dictionary), times))
        return _answers(runtime, query, terms).withColumnRenamed(K.INSTANT, column)
    if rules or one_pass_refusal(query) is not None:
        spark = _session(background, streams, dictionary)
        consuming = A.contains(query, lambda x: isinstance(x, A.Match) and x.policy in A.CONSUMING_POLICIES)
        tasks = spark.sparkContext.defaultParallelism
        # a consuming MATCH whose events split by a key: its events in a task per core, the rest keyed
        split = consuming and not rules and tasks > 1 and ordered.match_split(query) is not None
        if not split and ordered.refusal(query, background, dictionary, since, convention, rules) is None:
            out = ordered.evaluate_in_one_task(query, background, streams, times, time_unit, dictionary, terms=terms,
                                               rules=rules, column=column, window_convention=convention)
            if out is not None:
                return out
        instants = K.Instants.of_times(spark, times)
        made: list = []
        derived = None
        if rules:
            if dictionary is not None and ordered.rules_refusal(rules) is None:
                derived = ordered.derive_in_one_task(rules, streams, times, time_unit, dictionary)
            if derived is not None:
                derived, made = derived[0], [derived[1]]
            else:
                derived = close_rules_at_instants(rules, background, streams, instants, time_unit,
                                                  dictionary=dictionary, terms=made)
        runtime = _Runtime(background, streams, None, time_unit, [dictionary, *made], since,
                           convention=convention, instants=instants)
        runtime.check_streams(query)
        if consuming:
            runtime.matched = ordered.match_in_one_task(query, streams, times, time_unit, tasks=tasks)
        runtime.derived = derived
        if terms is not None:
            terms.extend(made)
        return _answers(runtime, query, terms).withColumnRenamed(K.INSTANT, column)
    runtime = _Runtime(background, streams, None, time_unit, [dictionary], since, ops=L)
    runtime.keep_terms = terms is not None
    instants = runtime.spark.createDataFrame([(t,) for t in times], f"{column} long")
    alive = L.alive_at_instants(runtime.eval(query.form.inner, None), instants, column)
    result = runtime.answers(query, alive, (column,))
    if terms is not None:
        terms.extend(runtime.terms)
    return result


def one_pass_refusal(query: A.Query) -> str | None:
    """Why :func:`evaluate_at_instants` cannot read ``query``'s answers at every instant off their
    lifetimes (:func:`evaluate_lifetimes`' plan) and keys it by the instant instead, or None.
    C-SPARQL, RSEP-QL and EP-SPARQL define their answers at evaluation instants; a CQELS-CEP query
    may be defined per instant (``cep.algebra.patterns.per_instant_only``); and an expression that
    reads a solution's interval (getDURATION() ...) or draws from its hash (RAND(), UUID(), BNODE())
    would read the open end of a background or VALUES mapping's lifetime ([t1, OPEN_END]) where one
    evaluation at t reads [t1, t]."""
    if A.is_csparql(query):
        return "C-SPARQL answers at its windows' evaluation instants"
    if A.is_rsepql(query):
        return "RSEP-QL evaluates at a sequence of instants (its consuming policies carry from one to the next)"
    if A.is_epsparql(query):
        return "EP-SPARQL evaluates at each instant"
    why = A.per_instant_only(query)
    if why is not None:
        return f"{why}: defined per instant"
    reads = A.contains(query, lambda x: isinstance(x, A.IntervalFn)
                       or (isinstance(x, A.Builtin) and x.name in A.SOLUTION_BUILTINS))
    if reads and A.contains(query, lambda x: isinstance(x, (A.Background, A.Values))):
        return "an expression reads the interval or the hash of a mapping whose interval ends at t"
    return None


def keyed_refusal(query: A.Query, matches_apart: bool = False) -> str | None:
    """Why :func:`evaluate_at_instants` cannot evaluate ``query``, whose answers are defined per
    evaluation instant, at all its instants in one plan keyed by the instant
    (``cep.engines.spark.keyed``), or None. That plan covers C-SPARQL's snapshots, EP-SPARQL's
    occurrences, CQELS-CEP's windows and RSEP-QL's MATCH and window graphs, with the operators over
    them (GROUP BY over events, ORDER BY / LIMIT per instant), property paths over a window's or a
    snapshot's graph included (each instant's graph apart: ``paths.spark.PathGraph(keys=)``); not a
    MATCH whose policy consumes (what it used carries from one instant to the next). What draws from a
    solution's hash (RAND(), UUID(), STRUUID(), BNODE(), a CONSTRUCT template's blank nodes) leaves
    the instant out of the hash, and NOW() reads each row's instant, so they are keyed too.
    ``matches_apart``: the MATCHes' events are computed apart (``cep.engines.spark.ordered.match_in_one_task``),
    so a consuming policy does not stop the rest being keyed."""
    if not matches_apart and A.contains(query, lambda x: isinstance(x, A.Match) and x.policy in A.CONSUMING_POLICIES):
        return "an RSEP-QL MATCH with a consuming policy carries what it used from one instant to the next"
    return None


def _session(background, streams, dictionary):
    """The Spark session of the first DataFrame among the inputs."""
    if isinstance(background, Materialized):
        return background.table(INFERRED).sparkSession
    for frame in [*(background or {}).values(), *(streams or {}).values(), dictionary]:
        if frame is not None:
            return frame.sparkSession
    raise CepInputError("evaluate() needs at least one background graph or stream (a DataFrame)")


def evaluate_each(query, background, streams: Mapping, times, time_unit: str = "ms", *,
                  dictionary: DataFrame | None = None, since=None, prefixes=None, terms: list | None = None,
                  rules=(), consumed: DataFrame | None = None, consumed_out: list | None = None,
                  window_convention: WindowConvention | None = None) -> Iterator[DataFrame]:
    """:func:`evaluate` at each of the instants ``times`` (increasing), in order, one answer
    DataFrame per instant as it is evaluated. Each is materialised (``localCheckpoint``: its rows
    stored, its plan dropped) before the next instant is evaluated, and what the evaluation cached
    is released, so that n instants hold n answer sets but no plan of an earlier evaluation: a plan
    per instant (a C-SPARQL snapshot's joins and aggregates) and the cached frames reading it,
    all alive until the last instant, are what n evaluations would otherwise keep on the driver.

    An RSEP-QL MATCH with a consuming policy (chronological, recent; RSEP-QL §4.4) no longer sees,
    at later instants, the stream triples its answers used. ``consumed``: what earlier evaluations
    consumed (``cep.engines.spark.rsepql.USED_COLUMNS``; the continuous runtime's state); the
    consumed set after the last instant is appended to ``consumed_out`` (None when no consuming
    MATCH was evaluated and none was given).
    ``terms`` receives the (id, term) frames of the terms each evaluation computed (materialised
    too); ``rules``: EP-SPARQL CONSTRUCT rules, closed at each instant; ``window_convention``: as
    :func:`evaluate`'s."""
    if isinstance(query, str):
        query = compile_query(query, prefixes)
    convention = A.check_window_convention(query, window_convention)
    checked = check_rules(query, rules) if rules else ()
    for at in _increasing(times):
        computed: list = []
        at_streams = streams
        if checked:
            at_streams = close_rules(checked, background, streams, at, time_unit, dictionary=dictionary,
                                     terms=computed)
        runtime = _Runtime(background, at_streams, at, time_unit, [dictionary, *computed], since,
                           convention=convention)
        runtime.keep_terms = True   # what the answers and the terms share is computed once
        runtime.consumed = consumed
        result = runtime.query(query).localCheckpoint()
        made = computed + runtime.terms
        kept = [t.localCheckpoint() for t in made] if terms is not None else []
        if runtime.used:
            used = runtime.used[0]
            for more in runtime.used[1:]:
                used = used.unionByName(more)
            new = used.select(*USED_COLUMNS).distinct()
            consumed = (new if consumed is None else consumed.unionByName(new).distinct()).localCheckpoint()
        for frame in made + runtime.cached:
            frame.unpersist()
        if terms is not None:
            terms.extend(kept)
        yield result
    if consumed_out is not None:
        consumed_out.append(consumed)


def evaluate_sequence(query, background, streams: Mapping, times, time_unit: str = "ms", *,
                      dictionary: DataFrame | None = None, since=None, prefixes=None,
                      terms: list | None = None, consumed: DataFrame | None = None,
                      consumed_out: list | None = None,
                      window_convention: WindowConvention | None = None) -> list[DataFrame]:
    """:func:`evaluate_each` as a list: one materialised DataFrame per instant, in order."""
    return list(evaluate_each(query, background, streams, times, time_unit, dictionary=dictionary, since=since,
                              prefixes=prefixes, terms=terms, consumed=consumed, consumed_out=consumed_out,
                              window_convention=window_convention))


def _increasing(times) -> list[int]:
    """The evaluation instants as ints; ValueError unless they increase."""
    out: list[int] = []
    for at in times:
        if out and int(at) <= out[-1]:
            raise ValueError(f"evaluation instants must increase, got {at} after {out[-1]}")
        out.append(int(at))
    return out


#: The content of a window at time t (``cep.engines.spark.intervals.window``).
window = I.window


class Prepared:
    """A query with its static side prepared once (the continuous runtime's "tables the stream
    probes"): each background pattern (eq. 17) — its BGPs and property paths over the published
    graph or closure — is evaluated the first time it is needed and kept (persisted) for every
    later :func:`evaluate_lifetimes` call. Build a new one when the background changes (a new
    closure version) and ``unpersist()`` the old one."""

    def __init__(self, query, background, time_unit: str = "ms", *, dictionary: DataFrame | None = None,
                 since=None, prefixes=None):
        if isinstance(query, str):
            query = compile_query(query, prefixes)
        if not isinstance(query, A.Query):
            raise TypeError(f"Prepared needs query text or a cep.algebra.patterns.Query, got {type(query).__name__}")
        self.query, self.background, self.time_unit = query, background, time_unit
        self.dictionary, self.since = dictionary, since
        self.cache: dict = {}
        #: (id, term) DataFrames of the terms the background computes (a sub-query's aggregates),
        #: cached: decode answers with them too
        self.terms: list[DataFrame] = []

    def unpersist(self) -> None:
        for df in list(self.cache.values()) + self.terms:
            df.unpersist()
        self.cache.clear()
        self.terms.clear()

    def runtime(self, streams: Mapping, dictionaries: Sequence[DataFrame | None] = ()) -> "_Runtime":
        """A lifetimes runtime over the prepared background (its results and computed terms kept)."""
        runtime = _Runtime(self.background, streams, None, self.time_unit, dictionaries, self.since, ops=L,
                           cache=self.cache)
        runtime.keep_terms = True
        runtime.terms = self.terms   # what a first evaluation of a background computes stays here
        runtime.dictionaries.extend(self.terms)
        return runtime

    def background_lifetimes(self) -> dict:
        """{``A.Background`` node of the query: its mappings with lifetimes (``cep.engines.spark.lifetimes``
        columns)}, evaluated once and kept (what ``cep.engines.driver.rows`` joins the stream with)."""
        runtime = self.runtime({}, [self.dictionary])
        nodes = dict.fromkeys(n for n in A.walk(self.query.form) if isinstance(n, A.Background))
        return {node: runtime.background_pattern(node) for node in nodes}


def evaluate_lifetimes(prepared: Prepared, streams: Mapping, *, dictionary: DataFrame | None = None,
                       computed: list | None = None) -> DataFrame:
    """⟦Q, t⟧ at every instant t at once (``cep.engines.spark.lifetimes``): the rows of :func:`evaluate`'s
    result, each with the instants ``LIFE_FROM`` ≤ t ≤ ``LIFE_TO`` at which it is an answer; an
    interval end ``cep.algebra.timeline.OPEN_END`` reads "t" (a background-only answer, eq. 17).
    ``dictionary`` adds terms for FILTERs (e.g. the streams' terms) to the prepared one;
    ``computed`` receives (id, term) frames of the terms the evaluation made (a CONSTRUCT
    template's blank nodes), to decode the result with."""
    runtime = prepared.runtime(streams, [prepared.dictionary, dictionary])
    runtime.template_terms = computed if computed is not None else []
    return runtime.query(prepared.query)


@dataclass(frozen=True)
class _Window:
    """Inside a ``StreamPattern``: a BGP matches inside one item of the window content (eq. 16)."""

    items: DataFrame


@dataclass(frozen=True)
class _Graph:
    """Inside a ``Background``: a BGP matches the static graph ``triples`` (named ``name``) and its
    mappings carry ``interval`` = [t1, t] (eq. 17)."""

    name: object
    triples: DataFrame
    #: numbers, or columns of the instant when evaluating at many (``cep.engines.spark.keyed``)
    interval: tuple
    #: C-SPARQL's snapshot: the triples with their latest window times (``cep.engines.spark.csparql.TAU`` ...)
    times: DataFrame | None = None
    #: ... and with the triples only FROM NAMED STREAM windows hold (what GRAPH reads; None: ``times``)
    named: DataFrame | None = None


@dataclass(frozen=True)
class _Occurrences:
    """Inside EP-SPARQL's ``Occurrences``: each triple pattern matches in any item (§4.2)."""

    items: DataFrame


#: where a pattern stands: in a window, in a background graph, on EP-SPARQL's stream, or neither
#: (None: no BGP allowed)
_Scope = _Window | _Graph | _Occurrences | None


class _Runtime:
    """One walk of the algebra, building a plan from an operator family: ``cep.engines.spark.intervals`` (⟦Q, t⟧
    at one instant ``at``), ``cep.engines.spark.lifetimes`` (every instant at once; ``at`` unused) or
    ``cep.engines.spark.keyed`` (given ``instants``: at each of them, each row with its own).
    ``dictionaries``: the (id, term) DataFrames given (None: none given), with a store's, merged where terms
    are looked up (``rdfcore.dictionary.merge_dictionaries``). ``cache``: background pattern results kept
    across runtimes (``Prepared``)."""

    def __init__(self, background, streams, at, time_unit, dictionaries: Sequence[DataFrame | None], since, *,
                 ops=I, cache: dict | None = None, convention: WindowConvention = RSEPQL_WINDOWS,
                 instants: "K.Instants | None" = None):
        self.store = None
        #: evaluating at many instants at once (``cep.engines.spark.keyed``; ``at`` unused), or None
        self.instants = instants
        if instants is not None:
            ops = K.Ops(instants)
        self.convention = convention   # C-SPARQL's windows (cep.algebra.windows.WindowConvention)
        dictionaries = [d for d in dictionaries if d is not None]
        if isinstance(background, Materialized):
            self.store = background
            dictionaries.append(background.table(DICTIONARY))
            background = {None: background.table(INFERRED)}
        self.background = dict(background or {})
        self.streams = dict(streams or {})
        self.at, self.unit = at, time_unit
        self.since = since
        self.ops, self.cache = ops, cache
        self.dictionaries = dictionaries
        self.consumed: DataFrame | None = None   # RSEP-QL: stream triples earlier answers used
        self.matched: dict = {}                  # RSEP-QL: {MATCH: its events, computed apart (keyed)}
        self.derived: DataFrame | None = None    # EP-SPARQL: what rules derive at each instant (keyed)
        self.used: list[DataFrame] = []          # ... and those this evaluation's answers use
        self.terms: list[DataFrame] = []         # (id, term) of the terms C-SPARQL's aggregates computed
        self.cached: list[DataFrame] = []        # other frames this evaluation cached (to release after it)
        self.keep_terms = False                  # cache them (the caller asked for them)
        #: where a CONSTRUCT template's fresh blank nodes go (None: ``terms``); the lifetimes runtime
        #: keeps them apart from the prepared background's terms, which outlive one evaluation
        self.template_terms: list | None = None
        self.correlation = None                  # inside EXISTS: its seed (cep.engines.spark.graphpatterns)
        self.depth = 0                           # ... and how deeply EXISTS are nested
        frames = list(self.background.values()) + list(self.streams.values()) + dictionaries
        if not frames:
            raise CepInputError("evaluate() needs at least one background graph or stream (a DataFrame)")
        self.spark = frames[0].sparkSession

    # --- query forms (eq. 1) -------------------------------------------------------------------
    def query(self, query: "A.Query | A.SubSelect", scope: "_Scope" = None) -> DataFrame:
        out = self.answers(query, self.eval(query.form.inner, scope), self.ops.EXTRA)
        if isinstance(query, A.Query) and self.convention.empty == SKIP:
            out = self.skip_empty(query, out)
        return out

    def skip_empty(self, query: A.Query, out: DataFrame) -> DataFrame:
        """``out`` when some window of the query holds a stream triple at this instant, else no
        rows (``WindowConvention.empty`` "skip"): a semi join with ``windows_content``'s one row."""
        if self.ops is L:
            raise UnsupportedQueryError("empty windows 'skip' is decided per evaluation instant; not for every "
                                        "instant at once")
        keyed = self.instants is not None
        gates = [g for node in A.snapshots(query)
                 if (g := windows_content(node, self.streams,
                                          self.instants if keyed else node.instant(self.at, self.unit, self.convention),
                                          self.unit, self.convention)) is not None]
        if not gates:
            return out
        gate = gates[0]
        for more in gates[1:]:
            gate = gate.unionByName(more)
        if keyed:   # the instants at which some window holds a triple
            return out.join(gate.distinct().withColumnRenamed(K.INSTANT, scratch("gate")),
                            F.col(K.INSTANT) == F.col(scratch("gate")), "left_semi")
        return out.join(gate.limit(1), how="left_semi")

    def answers(self, query: "A.Query | A.SubSelect", omega: DataFrame, extra: Sequence[str]) -> DataFrame:
        """The query form (eq. 1) over the mappings ``omega`` of its pattern: the projection or the
        CONSTRUCT template, each row keeping the columns ``extra`` (the lifetimes' ``ops.EXTRA``;
        :func:`evaluate_at_instants`' instant)."""
        form = query.form
        match form:
            case A.Project(variables=variables):
                present = set(var_columns(omega))
                cols = []
                for v in variables:
                    c = var_column(v.name)
                    cols.append(F.col(c) if c in present else F.lit(None).cast("long").alias(c))
                if query.modifiers is not None and self.ops is L:
                    raise UnsupportedQueryError("ORDER BY / LIMIT / OFFSET are applied per evaluation instant "
                                                "(query --at T1,T2,...); not in continuous evaluation")
                per = (K.INSTANT,) if self.instants is not None else ()   # sorted and sliced per instant
                if query.modifiers is not None and not query.modifiers.reads_only([v.name for v in variables]):
                    return order_solutions(omega, query.modifiers, variables, self.dictionaries, time_unit=self.unit,
                                           partition=per)
                answers = omega.select(*cols, T_START, T_END, *extra).distinct()
                if query.modifiers is None:
                    return answers
                return order_answers(answers, query.modifiers, variables, self.dictionaries, time_unit=self.unit,
                                     partition=per)
            case A.Construct(template=template):
                for terms in _template_terms(template, omega):   # fresh blank nodes: decoded with these
                    if self.template_terms is not None:
                        self.template_terms.append(terms)
                    else:
                        self.terms.append(terms.persist() if self.keep_terms else terms)
                parts = [omega.select(*_template_columns(tp, omega.columns), T_START, T_END, *extra)
                         .dropna(subset=[S, P, O]) for tp in template]
                out = parts[0]
                for part in parts[1:]:
                    out = out.unionByName(part)
                return out.distinct()
        raise TypeError(f"not a query form: {form!r}")

    # --- patterns ------------------------------------------------------------------------------
    def eval(self, node, scope: _Scope) -> DataFrame:
        """⟦node, t⟧ where ``node`` stands in ``scope`` (module docstring)."""
        match node:
            case A.BGP():
                return self.bgp(node, scope)
            case A.Join(left=left, right=right):                                   # eq. 2
                return self.ops.join(self.eval(left, scope), self.eval(right, scope))
            case A.Union(left=left, right=right):
                return self.ops.union(self.eval(left, scope), self.eval(right, scope))
            case A.LeftJoin(left=left, right=right, condition=condition):
                keep = None if condition is None else (lambda df: self.filter(condition, df, scope=scope))
                return self.ops.left_join(self.eval(left, scope), self.eval(right, scope), keep)
            case A.Filter(condition=condition, inner=inner) if (isinstance(scope, _Graph) and scope.times is not None
                                                                and A.uses_timestamp(condition)):
                return timed_filter(self, condition, inner, scope)                 # C-SPARQL §3.3
            case A.Filter(condition=condition, inner=inner):
                return self.filter(condition, self.eval(inner, scope), scope=scope)
            case A.GraphPattern(graph=A.Var(name=g), pattern=pattern, streams=streams) if (
                    isinstance(scope, _Graph) and scope.times is not None):        # GRAPH ?g, SPARQL 1.1 §18.6
                c, out = var_column(g), None
                for stream in streams:
                    part, gid = self.eval(A.GraphPattern(stream, pattern), scope), F.lit(term_id(stream)).cast("long")
                    if c in part.columns:
                        part = part.filter(F.col(c).isNull() | (F.col(c) == gid))
                    part = part.withColumn(c, gid)
                    out = part if out is None else self.ops.union(out, part)
                return out if out is not None else self.nothing(A.variables(node), scope)
            case A.GraphPattern(graph=name, pattern=pattern) if isinstance(scope, _Graph) and scope.times is not None:
                times = stream_graph(scope.named if scope.named is not None else scope.times, name)   # C-SPARQL §2.3
                triples = [c for c in (S, P, O, *K.EXTRA) if c in times.columns]
                return self.eval(pattern, _Graph(name, times.select(*triples), scope.interval, times))
            case A.Minus(left=left, right=right):                                  # SPARQL 1.1 §18.5
                keys = self.correlation.keys if self.correlation is not None else None
                return minus(self.eval(left, scope), self.eval(right, scope), keys)
            case A.Extend(inner=inner, var=var, expr=expr):                        # SPARQL 1.1 §18.5
                return self.extend(self.eval(inner, scope), var, expr)
            case A.NamedGraph() if isinstance(scope, _Graph):                      # SPARQL 1.1 §13.3
                return self.named_graph(node, scope)
            case A.Values() if scope is None or isinstance(scope, _Graph):
                return self.values(node, scope)
            case A.SubSelect():
                out = self.query(node, scope)
                return out.drop(ORDER) if ORDER in out.columns else out
            case _ if isinstance(scope, _Graph) and not isinstance(node, A.Aggregate):
                raise TypeError(f"{type(node).__name__} cannot occur in a background pattern")
            case A.StreamPattern():                                                # eq. 9, 16
                return self.eval(node.pattern, _Window(self.window_content(node)))
            case A.WindowGraph(name=name, stream=stream, window=spec, pattern=pattern):   # RSEP-QL eq. 3
                if self.ops is L:
                    raise UnsupportedQueryError("RSEP-QL's WINDOW graph pattern is evaluated at evaluation instants "
                                                "(evaluate_sequence; continuously: cep.continuous.instants)")
                if stream not in self.streams:
                    raise MissingInputError(f"no stream {stream}; streams are {sorted(self.streams)}")
                keyed = self.instants is not None
                merged = rsep_window(self.streams[stream], spec, self.instants if keyed else self.at, self.unit)
                merged = merged.select(S, P, O, *([K.INSTANT] if keyed else [])).distinct()
                return self.eval(pattern, _Graph(name, merged, (MIN_TIME, self.now())))
            case A.Background():                                                   # eq. 17
                return self.background_pattern(node)
            case A.Sequence(left=left, right=right):                               # eq. 4, 11
                return self.ops.seq(self.eval(left, scope), self.eval(right, scope))
            case A.SeqWithout(left=left, negated=negated, right=right):            # eq. 8, 15
                return self.ops.seq_wo(self.eval(left, scope), self.eval(negated, scope), self.eval(right, scope))
            case A.NoHead(negated=negated, right=right):                           # eq. 6, 13
                return self.ops.no_head(self.eval(negated, scope), self.eval(right, scope))
            case A.NoTail(left=left, negated=negated):                             # eq. 7, 14
                return self.ops.no_tail(self.eval(left, scope), self.eval(negated, scope), self.at)
            case A.Match():                                                        # RSEP-QL §4.2
                return self.match(node)
            case A.Snapshot():                                                     # C-SPARQL §3.2
                return self.eval(node.pattern, self.snapshot(node))
            case A.Aggregate(inner=inner, specs=specs):                            # C-SPARQL §3.1
                interval = scope.interval if isinstance(scope, _Graph) else self.empty_interval(inner)
                omega, terms = aggregate(self.eval(inner, scope), specs, self.dictionaries, interval, self.instants)
                if terms is not None:
                    if self.keep_terms:   # the caller decodes with them too: computed once
                        terms = terms.cache()
                    self.dictionaries.append(terms)
                    self.terms.append(terms)
                return omega
            case A.GroupCover(inner=inner):                                        # GROUP BY over events
                if self.ops is L:
                    raise UnsupportedQueryError("GROUP BY / aggregates over event clauses are evaluated per instant "
                                                "(at=t; a continuous run evaluates them at its windows' content "
                                                "changes), not for every instant at once")
                omega, terms = group_cover(self.eval(inner, scope), node, self.dictionaries, self.now(),
                                           self.instants)
                if terms is not None:
                    if self.keep_terms:
                        terms = terms.cache()
                    self.dictionaries.append(terms)
                    self.terms.append(terms)
                return omega
            case A.Occurrences(pattern=pattern):                                   # EP-SPARQL §4.2
                return self.eval(pattern, _Occurrences(self.occurrences()))
            case A.CoverJoin(left=left, right=right):
                return self.ep().cover_join(self.eval(left, scope), self.eval(right, scope))
            case A.EqJoin(left=left, right=right):
                return self.ep().eq_join(self.eval(left, scope), self.eval(right, scope))
            case A.CoverLeftJoin(left=left, optional=optional, condition=condition):
                return self.optional(left, optional, "left", condition, scope)
            case A.EqLeftJoin(left=left, optional=optional, condition=condition):
                return self.optional(left, optional, "equal", condition, scope)
            case A.SeqRightJoin(optional=optional, right=right, condition=condition):
                return self.optional(right, optional, "seq", condition, scope)
        raise TypeError(f"cannot evaluate {type(node).__name__}")

    def check_streams(self, node) -> None:
        """Every stream ``node``'s event patterns read was given, with the stream columns."""
        for pattern in A.event_patterns(node):
            if pattern.stream not in self.streams:
                raise MissingInputError(f"no stream {pattern.stream} was given; streams: {sorted(self.streams)}")
            require_columns(self.streams[pattern.stream], STREAM_COLUMNS, f"stream {pattern.stream}")

    def match(self, node: A.Match) -> DataFrame:
        if self.ops is L:
            raise UnsupportedQueryError("RSEP-QL's MATCH is evaluated at evaluation instants (evaluate_sequence; "
                                        "continuously: cep.continuous.instants), not for every instant at once")
        if node in self.matched:
            return I.canonical(self.matched[node]).distinct()
        self.check_streams(node)
        events = match_events(node, self.streams, self.instants if self.instants is not None else self.at, self.unit,
                              self.consumed)
        if node.policy in A.CONSUMING_POLICIES:
            events = events.cache()
            self.cached.append(events)
            self.used.append(used_triples(events))
        return I.canonical(events).distinct()

    def ep(self):
        """The EP-SPARQL operators (``cep.engines.spark.intervals``): at one instant, or at many keyed by
        the instant (the instant is a variable column those operators join on)."""
        if self.ops is L:
            raise UnsupportedQueryError("EP-SPARQL patterns are evaluated per instant (query --at T, or "
                                        "continuously one evaluation per instant), not as lifetimes")
        return I

    def optional(self, mandatory, optional, order, condition, scope) -> DataFrame:
        keep = None if condition is None else (lambda df: self.filter(condition, df))
        return self.ep().optional_join(self.eval(mandatory, scope), self.eval(optional, scope), order, keep)

    def occurrences(self) -> DataFrame:
        self.ep()
        if not self.streams:
            raise MissingInputError("an EP-SPARQL query reads the streams given (--stream); none was given")
        for iri, stream in self.streams.items():
            require_columns(stream, STREAM_COLUMNS, f"stream {iri}")
        if self.instants is not None:   # at each instant, the items ended by it
            out = None
            for stream in self.streams.values():
                part = stream.select(*STREAM_COLUMNS).crossJoin(self.instants.frame).filter(
                    F.col(T_END) <= F.col(K.INSTANT))
                out = part if out is None else out.unionByName(part)
            if self.derived is not None:   # the rules' closure at each instant (its own rows)
                out = out.unionByName(self.derived.select(*STREAM_COLUMNS, K.INSTANT))
            return out
        return I.occurrences(self.streams.values(), self.at)

    def bgp(self, node: A.BGP, scope: _Scope) -> DataFrame:
        match scope:
            case _Window(items=items):
                return _bgp_in_items(node, items, self.ops)
            case _Graph():
                return self.static_bgp(node, scope)
            case _Occurrences(items=items):
                return _bgp_over_occurrences(node, items)
        raise ValueError(f"basic graph pattern {node} is neither in a WINDOW nor in the background")

    def filter(self, condition, omega: DataFrame, stamps: dict | None = None, scope: "_Scope" = None) -> DataFrame:
        found = list(dict.fromkeys(e for e in A.subexpressions(condition) if isinstance(e, A.Exists)))
        if not found:
            return filter_mappings(condition, omega, self.dictionaries, time_unit=self.unit, stamps=stamps,
                                   instant=self.now_instant())
        flags = {}
        flagged = omega
        for i, e in enumerate(found):
            flags[e] = scratch("exists", str(self.depth), str(i))
            flagged = self.exists(e.pattern, flagged, scope, flags[e])
        kept = filter_mappings(condition, flagged, self.dictionaries, time_unit=self.unit, stamps=stamps,
                               exists=flags, instant=self.now_instant())
        return kept.select(*omega.columns)

    def exists(self, pattern, omega: DataFrame, scope: "_Scope", flag: str) -> DataFrame:
        """``omega`` with ``flag``: whether EXISTS { pattern } holds for each row (``cep.engines.spark.graphpatterns``)."""
        corr = sparql.seed(omega, pattern, self.depth)
        saved = self.correlation
        self.correlation, self.depth = corr, self.depth + 1
        try:
            solutions = self.eval(pattern, scope)
        finally:
            self.correlation, self.depth = saved, self.depth - 1
        return sparql.exists_flags(omega, corr, solutions, flag)

    def named_graph(self, node: A.NamedGraph, scope: _Graph) -> DataFrame:
        """GRAPH <g> / ?g { P } (``cep.algebra.patterns.NamedGraph``); the graphs' IRIs are handed to the
        caller as computed terms (``terms=``), so that ?g decodes."""
        name, graphs = node.name, node.graphs

        def over(g) -> DataFrame:
            if g not in self.background:
                raise MissingInputError(f"no named graph {g} was given; graphs: "
                                        + (", ".join("default" if k is None else k for k in self.background) or "none"))
            triples = self.background[g]
            require_columns(triples, (S, P, O), f"named graph {g}")
            return self.eval(node.pattern, _Graph(g, triples.select(S, P, O), scope.interval))

        if not isinstance(name, A.Var):
            if (graphs is not None and name not in graphs) or (graphs is None and name not in self.background):
                return self.nothing(A.variables(node), scope)   # not a named graph of the dataset
            return over(name)
        candidates = list(graphs) if graphs is not None else [g for g in self.background if g is not None]
        if not candidates:
            return self.nothing(A.variables(node), scope)
        terms = self.spark.createDataFrame([(term_id(g), g) for g in candidates], f"{ID} long, {TERM} string")
        if self.keep_terms:
            terms = terms.cache()
        self.dictionaries.append(terms)
        self.terms.append(terms)
        c = var_column(name.name)
        out = None
        for g in candidates:
            part, gid = over(g), F.lit(term_id(g)).cast("long")
            if c in part.columns:   # the pattern binds ?g too, or EXISTS substituted it
                part = part.filter(F.col(c).isNull() | (F.col(c) == gid))
            part = part.withColumn(c, gid)
            out = part if out is None else self.ops.union(out, part)
        return out

    def extend(self, omega: DataFrame, var: A.Var, expr) -> DataFrame:
        """BIND: ``var`` bound to the term of ``expr`` per row (``cep.terms.numbers.term_value``, the very
        function the reference uses, run over Arrow batches of the decoded terms by
        ``cep.engines.spark.arrow.evaluate_rows``: exact typed arithmetic that Spark SQL's decimals
        cannot give). The terms computed are handed to the caller (``terms=``) and to later FILTERs."""
        from pyspark.sql.types import StringType, StructField

        needed = sorted(c for c in {var_column(v.name) for v in A.expr_variables(expr)} if c in omega.columns)
        df = omega
        if needed:
            if not self.dictionaries:
                raise DictionaryRequiredError(f"BIND {expr} needs term values but evaluate() got no dictionary "
                                              "(pass dictionary=DataFrame(id, term))")
            dictionary = merge_dictionaries(self.dictionaries)
            for c in needed:
                lookup = dictionary.select(F.col(ID).alias(scratch("id", c)), F.col(TERM).alias(scratch("term", c)))
                df = df.join(lookup, F.col(c) == F.col(scratch("id", c)), "left").drop(scratch("id", c))
        names = {scratch("term", c): column_var(c) for c in needed}
        value, unit = scratch("bound"), self.unit

        def row(mu, interval) -> tuple:
            return (term_value(expr, mu, interval, unit),)

        extended = evaluate_rows(df, [expr], names, row, [StructField(value, StringType(), True)],
                                 instant=self.now_instant())
        if self.keep_terms:   # the terms and the rows read it: computed once (the terms are cached too)
            extended = extended.persist()
            self.cached.append(extended)
        ident = F.when(F.col(value).isNotNull(), F.xxhash64(F.col(value)))
        terms = extended.select(ident.alias(ID), F.col(value).alias(TERM)).filter(F.col(TERM).isNotNull()).distinct()
        if self.keep_terms:
            terms = terms.cache()
        self.dictionaries.append(terms)
        self.terms.append(terms)
        return extended.select(*[c for c in omega.columns if c != var_column(var.name)],
                               ident.alias(var_column(var.name)))

    def nothing(self, variables, scope: _Graph) -> DataFrame:
        """No mapping, with the columns of ``variables`` and the scope's interval columns."""
        columns = sorted(var_column(v.name) for v in variables)
        empty = self.spark.createDataFrame([], ", ".join([f"{c} long" for c in columns] or ["_none long"]))
        out = self.ops.constant(empty.select(*columns), *scope.interval)
        if self.correlation is not None:
            out = correlate(out, self.correlation, nullable=False)
        return out

    def values(self, node: A.Values, scope: "_Scope") -> DataFrame:
        """VALUES: one mapping per row, with the scope's interval (``cep.algebra.patterns.Values``)."""
        columns, rows = values_rows(node)
        schema = StructType([StructField(c, LongType(), True) for c in columns])
        if columns:
            df = self.spark.createDataFrame(rows, schema)
        else:
            df = self.spark.range(len(rows)).select()
        lo, hi = scope.interval if isinstance(scope, _Graph) else (self.since_for(None), self.now())
        out = self.ops.constant(df, MIN_TIME if not isinstance(scope, _Graph) else lo, hi)
        if self.correlation is not None:
            out = correlate(out, self.correlation, nullable=True)
        return out

    def empty_interval(self, inner) -> tuple[int, int]:
        """The interval an answer of ``inner`` has at this evaluation (``cep.engines.reference``)."""
        found = A.snapshots(inner)
        if found:
            c = self.close(found[0])
            return (c, c)
        graphs = [b.graph for b in A.walk(inner) if isinstance(b, A.Background)]
        return (self.since_for(graphs[0] if graphs else None), self.now())

    def now(self):
        """This evaluation's instant: a number, or the row's instant (a column) at many at once."""
        return F.col(K.INSTANT) if self.instants is not None else self.at

    def now_instant(self) -> "int | tuple[int, ...] | None":
        """What NOW() reads (``cep.engines.spark.filters.filter_mappings``' ``instant``): this
        evaluation's instant, or at many at once, their tuple (each row reads its own)."""
        return self.instants.times if self.instants is not None else self.at

    def close(self, node: A.Snapshot):
        """The close instant of snapshot ``node`` at this evaluation (a column at many instants)."""
        if self.instants is not None:
            return self.instants.of(lambda t: node.instant(t, self.unit, self.convention))
        return node.instant(self.at, self.unit, self.convention)

    def snapshot(self, node: A.Snapshot) -> _Graph:
        """C-SPARQL's merged graph at this evaluation's instant (``cep.engines.spark.csparql``)."""
        if self.ops is L:
            raise UnsupportedQueryError("C-SPARQL queries are evaluated at evaluation instants (evaluate_sequence; "
                                        "continuously: cep.continuous.instants), not for every instant at once")
        c = self.close(node)
        static = self.graph(node.graph) if (node.graph is not None or None in self.background) else None
        times = snapshot_graph(node, static, self.streams, self.instants if self.instants is not None else c,
                               self.unit, self.spark, self.convention)
        triples = [S, P, O] + ([K.INSTANT] if self.instants is not None else [])
        if not node.named:
            return _Graph(node.graph, times.select(*triples), (c, c), times)
        everything = times.drop(IN_DEFAULT)                 # what GRAPH <s> / GRAPH ?g read
        default = times.filter(F.col(IN_DEFAULT) == 1).drop(IN_DEFAULT)
        return _Graph(node.graph, default.select(*triples), (c, c), default, everything)

    def window_content(self, node: A.StreamPattern) -> DataFrame:
        if node.stream not in self.streams:
            raise MissingInputError(f"no stream {node.stream} was given; streams: {sorted(self.streams)}")
        stream = self.streams[node.stream]
        require_columns(stream, STREAM_COLUMNS, f"stream {node.stream}")
        return self.ops.window(stream, node.window, self.at, self.unit)

    # --- background (eq. 17) -------------------------------------------------------------------
    def graph(self, name) -> DataFrame:
        if isinstance(name, tuple):   # several FROMs: their merge (none: the empty graph)
            if not name:
                return self.spark.createDataFrame([], f"{S} long, {P} long, {O} long")
            out = self.graph(name[0]).select(S, P, O)
            for g in name[1:]:
                out = out.unionByName(self.graph(g).select(S, P, O))
            return out.distinct()
        if name not in self.background and name is not None and None in self.background:
            name = None  # FROM <g> names the default graph's source; the caller loaded it as default
        if name not in self.background:
            shown = ", ".join("default" if g is None else g for g in self.background) or "none"
            raise MissingInputError(
                f"no background graph {'default' if name is None else name} was given; graphs: {shown}")
        g = self.background[name]
        require_columns(g, (S, P, O), f"background graph {name}")
        return g

    def since_for(self, name) -> int:
        if self.since is None:
            return MIN_TIME
        if isinstance(name, tuple):   # a merge changed when one of its graphs did
            return max((self.since_for(g) for g in name), default=MIN_TIME)
        if isinstance(self.since, Mapping):
            return int(self.since.get(name, MIN_TIME))
        return int(self.since)

    def background_pattern(self, node: A.Background) -> DataFrame:
        if self.cache is None or self.correlation is not None:
            return self.eval(node.pattern, self.background_scope(node))
        if node not in self.cache:
            self.cache[node] = self.eval(node.pattern, self.background_scope(node)).persist()
        return self.cache[node]

    def background_scope(self, node: A.Background) -> _Graph:
        return _Graph(node.graph, self.graph(node.graph), (self.since_for(node.graph), self.now()))

    def static_bgp(self, node: A.BGP, scope: _Graph) -> DataFrame:
        """The BGP's SPARQL solutions over the static graph, each with the scope's interval."""
        parts = []
        for tp in node.patterns:
            if isinstance(tp, A.PathPattern):
                parts.append(self.path_part(tp, scope.name, scope.triples))
            else:   # (at many instants: a snapshot's triples carry theirs)
                parts.append(triple_part(tp, scope.triples, tuple(c for c in K.EXTRA if c in scope.triples.columns)))
        lo, hi = scope.interval
        if not parts:
            out = self.spark.range(1).select()
        else:
            out = parts[0]
            for part in parts[1:]:
                shared = sorted(set(var_columns(out)) & set(var_columns(part)))
                out = out.join(part, shared, "inner") if shared else out.crossJoin(part)
        out = self.ops.constant(out, lo, hi).distinct()
        if self.correlation is not None:                                       # inside EXISTS
            out = correlate(out, self.correlation, nullable=False)
        return out

    def path_part(self, tp: A.PathPattern, name, triples: DataFrame) -> DataFrame:
        """The matches of a property path over ``triples``; at many instants, when the triples carry
        theirs (a snapshot's or a window's graph), each instant's graph apart (a keyed ``PathGraph``)."""
        keyed = self.instants is not None and K.INSTANT in triples.columns
        if keyed:
            graph = PathGraph(triples, keys=self.instants.frame)
        elif self.store is not None and name is None:
            graph = PathGraph(triples, closures=self.store)
        else:
            graph = PathGraph(triples)
        s_var, o_var = isinstance(tp.s, A.Var), isinstance(tp.o, A.Var)
        pairs = path_evaluate(graph, tp.path, start=None if s_var else tp.s, end=None if o_var else tp.o)
        cols = [F.col(K.INSTANT)] if keyed else []
        if s_var and o_var and tp.s == tp.o:
            pairs = pairs.filter(F.col(START) == F.col(END))
            cols.append(F.col(START).alias(var_column(tp.s.name)))
        else:
            if s_var:
                cols.append(F.col(START).alias(var_column(tp.s.name)))
            if o_var:
                cols.append(F.col(END).alias(var_column(tp.o.name)))
        out = pairs.select(*cols)
        out = out.filter(_all_not_null(var_columns(out)))
        return out.select(*[non_null(c).alias(c) for c in var_columns(out)]).distinct()


def _template_columns(tp: A.TriplePattern, columns) -> list[Column]:
    """The (s, p, o) columns of one CONSTRUCT template triple over mappings with ``columns``
    (an unbound variable gives null: the triple is not produced, SPARQL 1.1 §16.2); a template
    blank node is its fresh term's id (``_fresh_blank``)."""
    cols = []
    for part, name in ((tp.s, S), (tp.p, P), (tp.o, O)):
        match part:
            case A.Var(name=var):
                c = var_column(var)
                col = F.col(c) if c in columns else F.lit(None).cast("long")
            case str() if part.startswith("_:"):
                col = F.xxhash64(_fresh_blank(part[2:], columns))
            case _:
                col = F.lit(term_id(part))
        cols.append(col.alias(name))
    return cols


def _fresh_blank(label: str, columns) -> Column:
    """The blank node a CONSTRUCT template's ``_:label`` stands for in one solution (SPARQL 1.1
    §16.2: a fresh one per solution): ``cep.terms.values.fresh_blank``'s term — the solution's hash
    (``cep.engines.spark.arrow.solution_seed``: its variables by name, nulls skipped, and its interval), as
    that function computes it — so both runtimes name it alike."""
    return F.concat(F.lit(f"_:{label}_"), F.lpad(F.lower(F.hex(solution_seed(columns))), 16, "0"))


def _template_terms(template, omega: DataFrame) -> list[DataFrame]:
    """(id, term) of the fresh blank nodes ``template`` gives over ``omega`` (to decode with)."""
    out = []
    for label in sorted({x[2:] for tp in template for x in (tp.s, tp.p, tp.o) if isinstance(x, str)
                         and x.startswith("_:")}):
        term = _fresh_blank(label, omega.columns)
        out.append(omega.select(F.xxhash64(term).alias(ID), term.alias(TERM)).distinct())
    return out


def _all_not_null(columns) -> Column:
    cond = F.lit(True)
    for c in columns:
        cond = cond & F.col(c).isNotNull()
    return cond


def _bgp_in_items(node: A.BGP, items: DataFrame, ops) -> DataFrame:
    """eq. 16: {<μ, [t1,t2]> | dom(μ) = var(P), μ(P) ⊆ g, <g, [t1,t2]> in the window}: the triple
    patterns are joined on the stream item (and its interval) and their shared variables
    (``ops.within_item``)."""
    key = (ITEM, T_START, T_END)
    if not node.patterns:
        return items.select(T_START, T_END, *ops.EXTRA).distinct()
    refusal = A.stream_path_refusal(node)
    if refusal:
        raise UnsupportedQueryError(refusal)
    out = None
    for tp in node.patterns:
        part = triple_part(tp, items, key + ops.EXTRA)
        if out is None:
            out = part
        else:
            shared = sorted(set(var_columns(out)) & set(var_columns(part)))
            out = ops.within_item(out, part, list(key) + shared)
    return ops.canonical(out).distinct()


def _bgp_over_occurrences(node: A.BGP, items: DataFrame) -> DataFrame:
    """EP-SPARQL §4.2 "BGP(list of triples)": each triple pattern matches in any occurrence; the
    solution covers the occurrences' intervals (``cep.engines.spark.intervals.cover_join`` of the parts)."""
    if not node.patterns:
        raise UnsupportedQueryError("an empty group over the stream has no interval (EP-SPARQL §4.2)")
    refusal = A.stream_path_refusal(node, "over a stream")
    if refusal:
        raise UnsupportedQueryError(refusal)
    out = None
    keep = (T_START, T_END, *[c for c in K.EXTRA if c in items.columns])   # (at many instants: each item's)
    for tp in node.patterns:
        part = I.canonical(triple_part(tp, items, keep)).distinct()
        out = part if out is None else I.cover_join(out, part)
    return out


def _round_terms(found: list, terms: list, known: DataFrame | None) -> DataFrame | None:
    """After a round of the rules' closure: the terms it computed (BIND, a sub-query's expr AS ?v,
    blank nodes), merged and cut from their plan, appended to ``terms``; returns the dictionary
    the next round reads (``known`` plus them). Cut, because a term computed by BIND reads the
    dictionary, which holds the earlier rounds' terms, so their plans would nest round into round."""
    if not found:
        return known
    extra = merge_dictionaries(found).localCheckpoint()
    for more in found:
        more.unpersist()
    terms.append(extra)
    return extra if known is None else known.unionByName(extra)


def close_rules_at_instants(rules: Sequence[A.Query], background, streams: Mapping, instants: "K.Instants",
                            time_unit: str = "ms", *, dictionary=None, terms: list | None = None,
                            max_rounds: int = MAX_ROUNDS) -> DataFrame:
    """:func:`close_rules` at each of the ``instants`` at once: the occurrences the rules derive at
    each instant, as rows (``INSTANT``, item, s, p, o, t_start, t_end), for the plan keyed by the
    instant (``_Runtime.derived``). Each round evaluates every rule at every instant in one plan,
    over the streams and what earlier rounds derived at that instant, and counts once; an instant
    whose closure is complete derives nothing new in later rounds (its input is the same), so the
    rounds end when no instant grows, and each instant's rows are :func:`close_rules`' there. The
    item of a derived occurrence is named as :func:`close_rules` names it; the (id, term) rows of
    the terms the rules compute are appended to ``terms``."""
    terms = [] if terms is None else terms
    schema = StructType([StructField(c, LongType(), False) for c in (K.INSTANT, *STREAM_COLUMNS)])
    derived = instants.frame.sparkSession.createDataFrame([], schema)
    count, known = 0, dictionary
    for _round in range(max_rounds):
        found_terms: list = []
        found = None
        for rule in rules:
            runtime = _Runtime(background, streams, None, time_unit, [known], None, instants=instants)
            runtime.derived = derived
            part = _answers(runtime, rule, found_terms).select(K.INSTANT, S, P, O, T_START, T_END)
            found = part if found is None else found.unionByName(part)
        grown = (found.select(K.INSTANT, F.xxhash64(S, P, O, T_START, T_END).alias(ITEM), S, P, O, T_START, T_END)
                 .unionByName(derived).distinct().localCheckpoint())
        n = grown.count()
        known = _round_terms(found_terms, terms, known)
        if n == count:
            return derived
        derived, previous, count = grown, derived, n
    growing = grown.join(previous, list(grown.columns), "left_anti").agg(F.min(K.INSTANT)).first()[0]
    raise no_fixpoint(rules, growing, max_rounds)


def close_rules(rules: Sequence[A.Query], background, streams: Mapping, at: int, time_unit: str = "ms", *,
                dictionary=None, terms: list | None = None, max_rounds: int = MAX_ROUNDS) -> dict:
    """``cep.engines.reference.close_rules`` on Spark: {stream: DataFrame (item, s, p, o, t_start, t_end)} plus ``DERIVED``. One
    plan per rule and round, one count per round. The (id, term) rows of the terms the rules
    compute (blank nodes, aggregates) are appended to ``terms``: decode with them."""
    from pyspark.sql import functions as F

    terms = [] if terms is None else terms
    first = next(iter(streams.values()), None)
    spark = first.sparkSession if first is not None else dictionary.sparkSession
    derived = spark.createDataFrame([], f"{ITEM} long, {S} long, {P} long, {O} long, {T_START} long, {T_END} long")
    count = 0
    known = dictionary
    for _round in range(max_rounds):
        current = {**streams, DERIVED: derived}
        found_terms: list = []
        parts = [evaluate(rule, background, current, at, time_unit, dictionary=known, terms=found_terms)
                 .select(S, P, O, T_START, T_END) for rule in rules]
        found = parts[0]
        for part in parts[1:]:
            found = found.unionByName(part)
        grown = (found.select(F.xxhash64(S, P, O, T_START, T_END).alias(ITEM), S, P, O, T_START, T_END)
                 .unionByName(derived).distinct().localCheckpoint())
        n = grown.count()
        known = _round_terms(found_terms, terms, known)
        if n == count:
            return current
        derived, count = grown, n
    raise no_fixpoint(rules, at, max_rounds)
