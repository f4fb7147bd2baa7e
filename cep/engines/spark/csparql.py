"""C-SPARQL on Spark (Barbieri et al., WWW 2009, ../shared/papers/003_... §3): the merged graph a
WHERE clause is matched against, timestamp() and the AGGREGATE clauses. No Python UDFs.

``cep.engines.reference`` defines the semantics (its module docstring, "C-SPARQL"); ``cep.engines.spark.evaluate`` walks
the algebra and calls into this module for ``Snapshot`` (``snapshot``), a FILTER calling
timestamp() in one (``timed_filter``) and ``Aggregate`` (``aggregate``).

* The snapshot at evaluation instant c is one (s, p, o) graph: the background graph unioned with
  every window's triples (``csparql_window``, under the evaluation's ``WindowConvention``), grouped
  per triple with its latest time in any window (``TAU``) and, for each stream a
  ``timestamp(?v, <s>)`` names, in that one. ``windows_content``: whether any window holds a triple
  (``empty="skip"``: the answers are gated on it, in the plan, with no extra job).
* At many instants in one plan (``cep.engines.spark.keyed``): the snapshot of each instant at
  once, each triple with the ``INSTANT`` it is in (``windows_at``: the window's bounds at each
  instant, computed in Python as for one, met by one range join); what follows joins, groups and
  ranks per instant.
* ``timestamp(?v)``: the FILTER's BGP is matched keeping each pattern's triple time; ts(v) is the
  greatest over the patterns mentioning v (Spark's ``greatest`` skips nulls, as max over the
  stream triples does). ``timestamp(s p o)``: a left join of the solutions with the timed triples
  matching the pattern (a variable the solution leaves unbound matches anything), max per row.
* Aggregates are grouped with ``groupBy`` on the group variables and joined back null-safely (an
  unbound group variable is a group of its own). Values are decoded through the dictionary and
  read with ``cep.terms.literals``' lexical rules; the results are new terms (an integer count, an exact
  decimal, a double, or the MIN / MAX term itself), hashed to ids with ``xxhash64`` exactly as
  ``rdfcore.hashing.term_id`` and returned with their (id, term) rows so that FILTERs and the
  caller can decode them.
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cep import algebra as A
from cep.algebra.windows import RSEPQL_WINDOWS, WindowConvention
from cep.algebra.timeline import MIN_TIME
from cep.engines.columns import STREAM_COLUMNS, T_END, T_START, scratch, var_column, var_columns
from cep.engines.errors import DictionaryRequiredError, MissingInputError
from cep.engines.spark import intervals as I
from cep.engines.spark.keyed import INSTANT, Instants, latest, time_column
from cep.engines.spark.triples import non_null, triple_part
from cep.terms.literals import (AGGREGATE_SCALE, LITERAL_JAVA_RE, NUMBER_LEXICAL, canonical_double,
                          NUMERIC_DATATYPES, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER, XSD_STRING, RDF_LANGSTRING)
from rdfcore.dictionary import merge_dictionaries
from rdfcore.hashing import term_id
from rdfcore.schema import ID, O, P, S, TERM, require_columns

__all__ = ["TAU", "IN_DEFAULT", "csparql_window", "windows_at", "windows_content", "snapshot_graph", "stream_graph", "timed_streams", "timed_filter", "aggregate",
           "canonical_double_column"]

#: the latest time of a snapshot triple in any window (null: background only)
TAU = scratch("tau")
#: 1 when a triple of the snapshot is in its default graph (only with FROM NAMED STREAMs)
IN_DEFAULT = scratch("in_default")
_DEC = f"decimal(38,{AGGREGATE_SCALE})"


def csparql_window(stream: DataFrame, spec, c: int, time_unit: str = "ms",
                   convention: WindowConvention = RSEPQL_WINDOWS) -> DataFrame:
    """``cep.engines.reference.csparql_window`` on Spark: the items whose time τ the window holds at
    c under ``convention`` (``WindowConvention.content``: by default RSEP-QL's (c' − ρ, c'] for
    logical windows), the last n triples for ``TRIPLES n``."""
    lo, hi, n = convention.content(spec, c, time_unit)
    if n is not None:
        return I.w_triples(stream, hi, n)
    ts = F.col(T_START)
    keep = ts <= F.lit(int(hi))
    if lo is not None:
        keep = keep & (ts >= F.lit(int(lo)))
    return stream.filter(keep)


def windows_at(node: A.Snapshot, frame: DataFrame, spec, instants: Instants, time_unit: str,
               convention: WindowConvention = RSEPQL_WINDOWS) -> DataFrame:
    """:func:`csparql_window` at each of ``instants`` at once: the stream's rows with the
    ``INSTANT`` whose window holds them (a row once per such instant). Each instant's bounds are
    ``convention.content`` at the snapshot's close instant, computed in Python as for one instant;
    the rows meet them in one range join with the (small, broadcast) table of bounds."""
    lo, hi = scratch("lo"), scratch("hi")
    rows, count = [], None
    for t in instants.times:
        low, high, count = convention.content(spec, node.instant(t, time_unit, convention), time_unit)
        rows.append((t, MIN_TIME if low is None else int(low), int(high)))
    bounds = frame.sparkSession.createDataFrame(rows, f"{INSTANT} long, {lo} long, {hi} long")
    ts = F.col(T_START)
    held = frame.join(F.broadcast(bounds), (ts >= F.col(lo)) & (ts <= F.col(hi)), "inner")
    if count is not None:   # TRIPLES n: the n latest of each instant
        held = latest(held, count)
    return held.select(*frame.columns, F.coalesce(F.col(INSTANT), F.lit(0).cast("long")).alias(INSTANT))


def windows_content(node: A.Snapshot, streams, c, time_unit: str,
                    convention: WindowConvention = RSEPQL_WINDOWS) -> DataFrame | None:
    """One row (no column) when some window of ``node`` holds a stream triple at ``c``, else none;
    None when ``node`` has no window. ``c`` an ``Instants``: the distinct instants (``INSTANT``)
    at which some window holds one."""
    out = None
    for iri, spec in node.windows:
        if iri not in streams:
            raise MissingInputError(f"no stream {iri} was given; streams: {sorted(streams)}")
        if isinstance(c, Instants):
            part = windows_at(node, streams[iri], spec, c, time_unit, convention).select(INSTANT)
        else:
            part = csparql_window(streams[iri], spec, c, time_unit, convention).select(F.lit(1).alias("_in"))
        out = part if out is None else out.unionByName(part)
    if out is None:
        return None
    return out.distinct() if isinstance(c, Instants) else out.limit(1)


def _tau(stream) -> str:
    return TAU if stream is None else scratch("tau", str(term_id(stream)).replace("-", "m"))


def timed_streams(node: A.Snapshot) -> list:
    """The streams ``timestamp(?v, <s>)`` calls and ``GRAPH <s>`` patterns in ``node`` name."""
    out = []

    def visit(pattern) -> None:
        for n in A.walk(pattern):
            if isinstance(n, A.GraphPattern):
                out.extend(n.streams if isinstance(n.graph, A.Var) else [n.graph])
            for field in ("condition", "expr"):       # FILTER, OPTIONAL's condition, BIND
                expr = getattr(n, field, None)
                if expr is None or isinstance(n, A.Exists):
                    continue
                for e in A.subexpressions(expr):
                    if isinstance(e, A.Timestamp) and e.stream is not None:
                        out.append(e.stream)
                    elif isinstance(e, A.Exists):     # GRAPH inside [NOT] EXISTS reads its stream too
                        visit(e.pattern)

    visit(node.pattern)
    return list(dict.fromkeys(out))


def stream_graph(times: DataFrame, stream) -> DataFrame:
    """The snapshot restricted to the triples of ``stream``'s window (``GRAPH <s>``), their times
    those in it (the instant of a snapshot of many instants kept)."""
    column = _tau(stream)
    others = [c for c in times.columns if c not in (S, P, O, TAU, INSTANT)]
    keyed = [INSTANT] if INSTANT in times.columns else []
    return times.filter(F.col(column).isNotNull()).select(
        S, P, O, *keyed, F.col(column).alias(TAU),
        *[(F.col(c) if c == column else F.lit(None).cast("long")).alias(c) for c in others])


def snapshot_graph(node: A.Snapshot, static: DataFrame | None, streams, c, time_unit: str,
                   spark, convention: WindowConvention = RSEPQL_WINDOWS) -> DataFrame:
    """The merged graph of ``node`` at instant ``c``: (s, p, o, ``TAU``, one time column per
    stream of ``timed_streams``); ``static``: the background (s, p, o) or None; the windows'
    content under ``convention``. ``c`` an ``Instants``: the merged graph of each instant at once,
    each triple with the ``INSTANT`` it is in (the background once per instant)."""
    stream_col = scratch("stream")
    keyed = isinstance(c, Instants)
    key = [INSTANT] if keyed else []
    parts = []
    if static is not None:
        require_columns(static, (S, P, O), f"background graph {A.graph_name(node.graph)}")
        static = static.crossJoin(c.frame) if keyed else static
        parts.append(static.select(S, P, O, *key, F.lit(None).cast("string").alias(stream_col),
                                   F.lit(None).cast("long").alias(TAU)))
    for iri, spec in node.windows:
        if iri not in streams:
            raise MissingInputError(f"no stream {iri} was given; streams: {sorted(streams)}")
        frame = streams[iri]
        require_columns(frame, STREAM_COLUMNS, f"stream {iri}")
        content = (windows_at(node, frame, spec, c, time_unit, convention) if keyed
                   else csparql_window(frame, spec, c, time_unit, convention))
        parts.append(content.select(S, P, O, *key, F.lit(iri).alias(stream_col), F.col(T_START).alias(TAU)))
    if not parts:
        return spark.createDataFrame([], ", ".join(f"{x} long" for x in (S, P, O, *key, TAU)))
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.unionByName(part)
    # a FROM NAMED STREAM's triples are in its named graph only: not in the default graph (no
    # IN_DEFAULT) nor in its times (TAU), unless the background or another window holds them too
    default = (F.col(stream_col).isNull() | ~F.col(stream_col).isin(*node.named)) if node.named else F.lit(True)
    times = [F.max(F.when(default, F.col(TAU))).alias(TAU)] + [
        F.max(F.when(F.col(stream_col) == F.lit(s), F.col(TAU))).alias(_tau(s)) for s in timed_streams(node)]
    if node.named:
        times.append(F.max(default.cast("int")).alias(IN_DEFAULT))
    return merged.groupBy(S, P, O, *key).agg(*times)


def timed_filter(runtime, condition, inner, scope) -> DataFrame:
    """⟦FILTER(condition) inner⟧ in a snapshot, ``condition`` calling timestamp(): the solutions
    with one column per timestamp() call (``stamps``), filtered, then those columns dropped."""

    calls = list(dict.fromkeys(e for e in A.subexpressions(condition) if isinstance(e, (A.Timestamp, A.PatternTimestamp))))
    stamps = {e: scratch("ts", str(i)) for i, e in enumerate(calls)}
    lo, hi = scope.interval
    if isinstance(inner, A.BGP):
        out, taus = None, []
        for i, tp in enumerate(inner.patterns):
            if isinstance(tp, A.PathPattern):
                part = runtime.path_part(tp, scope.name, scope.triples)
                columns = []
            else:
                columns = [TAU] + [_tau(e.stream) for e in calls if isinstance(e, A.Timestamp) and e.stream]
                columns = list(dict.fromkeys(columns))
                keyed = (INSTANT,) if INSTANT in scope.times.columns else ()
                part = triple_part(tp, scope.times, tuple(columns) + keyed)
                part = part.select(*var_columns(part), *[F.col(c).alias(f"{c}_{i}") for c in columns])
            taus.append((tp, {c: f"{c}_{i}" for c in columns}))
            if out is None:
                out = part
            else:
                shared = sorted(set(var_columns(out)) & set(var_columns(part)))
                out = out.join(part, shared, "inner") if shared else out.crossJoin(part)
        if out is None:
            out = runtime.spark.range(1).select()
            if runtime.instants is not None:
                out = out.crossJoin(runtime.instants.frame)
        for e in calls:
            if isinstance(e, A.Timestamp):
                key = _tau(e.stream)
                cols = [named[key] for tp, named in taus if key in named and e.var in tp.variables()]
                value = (F.greatest(*[F.col(c) for c in cols]) if len(cols) > 1
                         else F.col(cols[0]) if cols else F.lit(None).cast("long"))
                out = out.withColumn(stamps[e], value)
        out = out.select(*[non_null(c).alias(c) for c in var_columns(out)],
                         *[c for c in stamps.values() if c in out.columns],
                         time_column(lo).alias(T_START), time_column(hi).alias(T_END))
    else:
        out = runtime.eval(inner, scope)
    for e in calls:
        if isinstance(e, A.PatternTimestamp):
            out = _pattern_stamp(out, e, scope.times, stamps[e])
    present = {e: c for e, c in stamps.items() if c in out.columns}
    return I.canonical(runtime.filter(condition, out, present)).distinct()


def _pattern_stamp(omega: DataFrame, e: A.PatternTimestamp, times: DataFrame, column: str) -> DataFrame:
    """``omega`` with ``column`` = the latest time of a window triple matching (s p o) under each
    row's bindings (null: none)."""
    row = scratch("row")
    rows = omega.withColumn(row, F.monotonically_increasing_id())
    names = {S: scratch("ts", S), P: scratch("ts", P), O: scratch("ts", O), TAU: scratch("ts", "t")}
    if INSTANT in times.columns:   # a snapshot of many instants: the row's own
        names[INSTANT] = scratch("ts", "at")
    stream_triples = times.filter(F.col(TAU).isNotNull()).select(*[F.col(k).alias(v) for k, v in names.items()])
    cond = F.col(INSTANT) == F.col(names[INSTANT]) if INSTANT in names else F.lit(True)
    for part, position in ((e.s, S), (e.p, P), (e.o, O)):
        if isinstance(part, A.Var):
            c = var_column(part.name)
            if c in omega.columns:
                cond = cond & (F.col(c).isNull() | (F.col(c) == F.col(names[position])))
        else:
            cond = cond & (F.col(names[position]) == F.lit(term_id(part)))
    found = rows.join(stream_triples, cond, "left").groupBy(row).agg(F.max(names[TAU]).alias(column))
    return rows.join(found, row, "left").drop(row)


# --- aggregates (§3.1) ---------------------------------------------------------------------------

def _lexical(term: Column) -> Column:
    return F.regexp_extract(term, LITERAL_JAVA_RE, 1)


def _datatype(term: Column) -> Column:
    lang = F.regexp_extract(term, LITERAL_JAVA_RE, 2)
    dt = F.regexp_extract(term, LITERAL_JAVA_RE, 3)
    return (F.when(~term.rlike(LITERAL_JAVA_RE), F.lit(None).cast("string"))
            .when(lang != "", F.lit(RDF_LANGSTRING)).when(dt != "", dt).otherwise(F.lit(XSD_STRING)))


def _kind(term: Column) -> Column:
    """0 integer, 1 decimal, 2 double (``cep.terms.literals.number_kind``), null: not a number an
    aggregate can read (wrong datatype or a lexical form outside ``NUMBER_LEXICAL``)."""
    dt, lex = _datatype(term), _lexical(term)
    integers = sorted(NUMERIC_DATATYPES - {XSD_DECIMAL, XSD_DOUBLE, XSD_DECIMAL.replace("decimal", "float")})
    return (F.when(dt.isin(*integers) & lex.rlike(NUMBER_LEXICAL["integer"]), F.lit(0))
            .when((dt == XSD_DECIMAL) & lex.rlike(NUMBER_LEXICAL["decimal"]), F.lit(1))
            .when(dt.isin(XSD_DOUBLE, XSD_DOUBLE.replace("double", "float")) & lex.rlike(NUMBER_LEXICAL["double"]),
                  F.lit(2)))


def _canonical_decimal(value: Column) -> Column:
    text = F.regexp_replace(value.cast("string"), "0+$", "")
    return F.when(text.endswith("."), F.concat(text, F.lit("0"))).otherwise(text)


def canonical_double_column(value: Column) -> Column:
    """``cep.terms.literals.canonical_double`` on a column, in Python: the fewest digits that read
    back as the double. Java 17's ``Double.toString`` (Spark's cast to string) is not that: it
    writes one or two digits more for some doubles ("5.4104879329341542E18") and 4.9E-324 for
    5.0E-324. Only aggregate results pass through it, one row per group and instant."""
    return F.udf(_canonical_double_or_null, "string", useArrow=True)(value)


def _canonical_double_or_null(value):
    return None if value is None else canonical_double(value)


def _typed(lexical: Column, datatype: str) -> Column:
    return F.concat(F.lit('"'), lexical, F.lit(f'"^^<{datatype}>'))


def _order_rank(term: Column) -> Column:
    return F.when(term.startswith("_:"), F.lit(0)).when(term.startswith("<"), F.lit(1)).otherwise(F.lit(2))


def _result(spec: A.AggregateSpec, term: str, ident: str | None) -> Column:
    """The aggregate of one group: the result term (null: an error). ``term`` / ``ident``: the
    columns of the argument's term and id (null: unbound, no value)."""
    t = F.col(term) if term is not None else F.lit(None).cast("string")
    bound = t.isNotNull()
    kind = _kind(t)
    exact_value = F.when(kind < 2, _lexical(t).try_cast(_DEC))
    as_double = F.when(kind < 2, exact_value.cast("double")).otherwise(_lexical(t).try_cast("double"))
    if spec.function == "COUNT":
        if spec.argument is None:
            counted = F.count(F.lit(1))
        else:
            counted = F.count_distinct(F.col(ident)) if spec.distinct else F.count(F.col(ident))
        return _typed(counted.cast("string"), XSD_INTEGER)
    if spec.function in ("MIN", "MAX"):
        pick = F.min_by if spec.function == "MIN" else F.max_by
        numeric = pick(t, F.when(bound, F.struct(as_double, t)))
        # not all numbers: reference._order_key (blank nodes, IRIs, literals; numbers by value first)
        ordered = pick(t, F.when(bound, F.struct(_order_rank(t), kind.isNull(),
                                                 F.when(kind.isNotNull(), as_double).otherwise(F.lit(0.0)), t)))
        all_numbers = F.min(F.when(bound, F.when(kind.isNull(), F.lit(0)).otherwise(F.lit(1)))) == 1
        return F.when(all_numbers, numeric).otherwise(ordered)
    n = F.count(t)
    bad = F.max(F.when(bound & kind.isNull(), F.lit(1)).otherwise(F.lit(0))) == 1
    widest = F.max(kind)
    exact = F.try_sum(exact_value)
    # added smallest first, as the reference does (a sum of doubles depends on the order)
    floating = F.aggregate(F.array_sort(F.collect_list(as_double)), F.lit(0.0), lambda acc, x: acc + x)
    if spec.function == "SUM":
        exact_term = F.when(widest == 0, _typed(F.regexp_replace(exact.cast("string"), r"\.0*$", ""), XSD_INTEGER)) \
            .otherwise(_typed(_canonical_decimal(exact), XSD_DECIMAL))
        double_value = floating
    else:
        mean = F.try_divide(exact, n.cast("decimal(20,0)"))
        exact_term = _typed(_canonical_decimal(mean), XSD_DECIMAL)
        double_value = F.try_divide(floating, n)
    return (F.when(n == 0, F.lit(f'"0"^^<{XSD_INTEGER}>'))
            .when(bad, F.lit(None).cast("string"))
            .when(widest == 2, _typed(canonical_double_column(double_value), XSD_DOUBLE))
            .otherwise(exact_term))


def _batches(specs) -> list[tuple[tuple, bool, list]]:
    """The specs in groupBy batches: (group, distinct input, [(index, spec)]). Specs that share a
    group share one aggregation; SUM / AVG over DISTINCT values get one of their own (their input
    is the distinct (group, value) pairs); COUNT(DISTINCT) counts distinct ids, and MIN / MAX are
    the same with or without DISTINCT."""
    batches: dict = {}
    for i, spec in enumerate(specs):
        own = spec.distinct and spec.function in ("SUM", "AVG")
        key = (spec.group, (i, spec.argument) if own else None)
        batches.setdefault(key, []).append((i, spec))
    return [(group, own is not None, members) for (group, own), members in batches.items()]


def aggregate(omega: DataFrame, specs, dictionaries, empty_interval: tuple | None = None,
              instants: Instants | None = None) -> tuple[DataFrame, DataFrame | None]:
    """[[P AGG A_1..A_n]]: ``omega`` with one id column per spec's variable (null where the
    aggregate is an error), and the (id, term) rows of the terms computed (None if none): one
    groupBy and one join back per batch (``_batches``), one dictionary lookup per argument.
    ``empty_interval``: when every spec's group is empty (SPARQL's implicit group) and ``omega``
    is, one row of the aggregates of nothing with this interval (``A.Aggregate``; its ends numbers
    or columns of the instant). ``instants``: ``omega`` holds the solutions of each of them
    (``INSTANT``): the groups are those of each instant, and each instant without a solution gets
    the implicit group's row."""
    implicit = empty_interval is not None and all(not spec.group for spec in specs)
    by = [INSTANT] if instants is not None else []
    dictionary = None
    if any(spec.argument is not None and spec.function != "COUNT" for spec in specs):
        if not dictionaries:
            raise DictionaryRequiredError("SUM/AVG/MIN/MAX aggregates need term values but evaluate() got no "
                                          "dictionary (pass dictionary=DataFrame(id, term))")
        dictionary = merge_dictionaries(dictionaries)
    present = set(omega.columns)

    def column(v: A.Var) -> Column:
        name = var_column(v.name)
        return F.col(name) if name in present else F.lit(None).cast("long")

    out, terms, singles = omega, None, []
    for b, (group, distinct, members) in enumerate(_batches(specs)):
        keys = [scratch("g", str(b), str(j)) for j in range(len(group))]
        at = [scratch("g", str(b), "at")] if by else []
        arguments = list(dict.fromkeys(spec.argument for _i, spec in members if spec.argument is not None))
        ids = {v: scratch("arg", str(b), str(k)) for k, v in enumerate(arguments)}
        grouped = omega.select(*[F.col(c).alias(a) for c, a in zip(by, at)],
                               *[column(v).alias(k) for v, k in zip(group, keys)],
                               *[column(v).alias(ids[v]) for v in arguments])
        if distinct:
            grouped = grouped.distinct()
        names = {}
        for k, v in enumerate(arguments):
            if any(spec.argument == v and spec.function != "COUNT" for _i, spec in members):
                names[v] = scratch("term", str(b), str(k))
                lookup = dictionary.select(F.col(ID).alias(ids[v]), F.col(TERM).alias(names[v]))
                grouped = grouped.join(lookup, ids[v], "left")
        size = scratch("size", str(b))
        values = {i: scratch("value", str(i)) for i, _spec in members}
        misses = {i: scratch("misses", str(i)) for i, spec in members if spec.strict}
        idents = {i: scratch("id", str(i)) for i, _spec in members}
        computed = [_result(spec, names.get(spec.argument), ids.get(spec.argument)).alias(values[i])
                    for i, spec in members]
        computed += [F.count(F.when(F.col(ids[spec.argument]).isNull(), 1)).alias(misses[i])
                     for i, spec in members if spec.strict]
        computed.append(F.count(F.lit(1)).alias(size))

        def finish(results: DataFrame, keys=keys + at) -> DataFrame:
            results = results.select(*keys, size, *[   # a strict argument unbound in a member: an error
                (F.when(F.col(misses[i]) == 0, F.col(values[i])) if i in misses else F.col(values[i])).alias(values[i])
                for i in values])
            return results.select(*keys, size, *[F.col(values[i]) for i in values],
                                  *[F.xxhash64(F.col(values[i])).alias(idents[i]) for i in values])

        results = finish(grouped.groupBy(*keys, *at).agg(*computed))
        found = results.select(F.explode(F.array(*[F.struct(F.col(idents[i]).alias(ID), F.col(values[i]).alias(TERM))
                                                     for i in values])).alias("_t")).select("_t.*")
        targets = {i: F.when(F.col(values[i]).isNotNull(), F.col(idents[i])).alias(var_column(spec.var.name))
                   for i, spec in members}
        if implicit and by:   # the aggregates of nothing: one global aggregation over no row
            nothing = finish(grouped.limit(0).groupBy().agg(*computed), [])
            found = found.unionByName(nothing.select(F.explode(F.array(*[
                F.struct(F.col(idents[i]).alias(ID), F.col(values[i]).alias(TERM)) for i in values])).alias("_t"))
                .select("_t.*"))
            singles.append(nothing.select(*targets.values(), size))
        elif implicit:
            singles.append(results.select(*targets.values(), size))
        found = found.filter(F.col(TERM).isNotNull())
        terms = found if terms is None else terms.unionByName(found)
        cond = None
        for c, a in zip(by, at):
            cond = F.col(c) == results[a]
        for v, k in zip(group, keys):
            c = column(v).eqNullSafe(results[k])
            cond = c if cond is None else cond & c
        joined = out.join(results, cond, "left")
        out = joined.select(*[c for c in out.columns], *targets.values())
    if implicit:   # no solution: one row of the aggregates of nothing (its size column says so)
        sizes = [c for c in singles[0].columns if c.startswith(scratch("size"))]
        row = singles[0]
        for more in singles[1:]:
            row = row.crossJoin(more.drop(*[c for c in more.columns if c.startswith(scratch("size"))]))
        row = row.filter(F.col(sizes[0]) == 0)
        if by:   # at each instant that has no solution
            row = row.crossJoin(instants.frame.join(omega.select(*by).distinct(), by, "left_anti"))
        lo, hi = empty_interval
        computed = [c for c in row.columns if not c.startswith(scratch("size")) and c not in by]
        others = [c for c in out.columns if c not in computed and c not in (T_START, T_END, *by)]
        extra = row.select(
            *[F.lit(None).cast("long").alias(c) for c in others], *computed, *by,
            time_column(lo).alias(T_START), time_column(hi).alias(T_END))
        out = out.unionByName(extra)
    return out, (None if terms is None else terms.distinct())
