"""FILTER expressions (SPARQL 1.1 §17) compiled to Spark columns over DataFrames of mappings with
intervals (``cep.engines.columns``).

``filter_mappings(condition, omega, dictionaries)`` keeps the rows of ``omega`` whose condition has
the effective boolean value true (§17.2.2; an error, e.g. an unbound variable or a type error,
drops the row, as FILTER does, §18.5 Filter):

* ``?v = <iri>`` / ``?v != <iri>`` (an IRI or blank constant) compares term ids: no dictionary;
  ``BOUND(?v)`` looks at the id column only;
* every other use of a variable decodes its column through the dictionary (a left join on the id)
  to its N-Triples term, parsed with the literal syntax of ``cep.terms.literals``;
* comparisons are numeric when both sides are numbers (``cep.terms.literals.NUMERIC_DATATYPES``): two
  integers or decimals exactly, as decimal(38, 18) values (``cep.terms.numbers.comparable``), anything else
  as doubles (NaN unequal to everything); by string when both are simple / xsd:string literals,
  else by term (``=`` / ``!=`` only; ``<`` etc. are errors);
* computed numbers (arithmetic, the numeric functions, and IF / COALESCE choosing among them and
  terms) that read the solution are computed by ``cep.terms.numbers.number`` — the reference's function,
  XPath's types, exact integers and decimals — over Arrow batches of the decoded terms
  (``_Filter.computed``, by ``cep.engines.spark.arrow``; a Python UDF, the module's only ones with
  IRI() under a BASE), and constant ones once on the driver; their terms, parts and values are
  columns the condition then reads. Left to Spark SQL's doubles: a number computed from EXISTS or
  timestamp(), a bare RAND(), and ORDER BY keys;
* ``STR``, ``LANG``, ``DATATYPE``, ``REGEX`` (pattern and flags constant strings; flags i, m, s, x);
* the §17.4 built-ins of ``cep.algebra.expressions.BUILTINS`` (string tests and functions, term tests,
  numeric functions, IF, COALESCE, CONCAT, SUBSTR, STRBEFORE, STRAFTER, REPLACE with a constant
  pattern (Java's regex and ``$n`` replacement syntax, as XPath's), the xsd:dateTime accessors).
  Left to Spark SQL (above), an IF / COALESCE whose branches mix a computed number with a term
  gives the term's numeric value (null when it has none) where the reference keeps the term;
* ``=`` / ``!=`` between two different literals neither of which has a language tag, one of them
  not understood (an unknown datatype, an ill-typed number or boolean) is an error, as
  RDFterm-equal (§17.4.1.7) and pyoxigraph have it;
* C-SPARQL's ``timestamp()`` reads the column ``stamps`` names for it (ticks), as a time like
  getSTARTTIME();
* EP-SPARQL's ``getDURATION()`` / ``getSTARTTIME()`` / ``getENDTIME()`` read the row's interval
  (``T_START``, ``T_END`` in ``time_unit`` ticks) as exact decimal seconds: a duration, or a time
  since 1970-01-01T00:00:00Z. They compare with xsd:duration / xsd:dayTimeDuration (days, hours,
  minutes, seconds; none with years or months) and xsd:dateTime values (no zone: UTC; to the
  microsecond), constants or terms, per ``cep.terms.literals.temporal_value``; two such literals compare
  by value too. Anything else compared with them is an error.

``cep.terms.values.eval_expr`` is the same semantics in pure Python (the oracle).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cep import algebra as A
from cep.terms.numbers import Number, numeric
from cep.terms import values as V
from cep.terms.values import (ABSOLUTE_IRI, SALTS, eval_expr,
                              term_builtin as scalar_term_builtin)
from cep.algebra.expressions import SOLUTION_BUILTINS, TERM_BUILTINS
from cep.engines.spark.arrow import evaluate_rows, solution_seed
from cep.engines.columns import INSTANT, column_var, scratch, T_END, T_START, var_column
from cep.engines.errors import DictionaryRequiredError, UnsupportedQueryError
from cep.terms.literals import (AGGREGATE_SCALE, DATETIME_PATTERN, DAY_TIME_DURATION_PATTERN, DURATION_DATATYPES,
                                ESCAPES, LITERAL_JAVA_RE, NUMBER_LEXICAL, NUMERIC_DATATYPES, RDF_LANGSTRING,
                                XSD_BOOLEAN, XSD_DATETIME, XSD_DAYTIMEDURATION, XSD_DECIMAL, XSD_STRING,
                                datetime_term, number_kind, parse_literal, temporal_value)
from cep.algebra.windows import TIME_UNITS
from rdfcore.dictionary import merge_dictionaries
from rdfcore.hashing import term_id
from rdfcore.schema import ID, TERM

__all__ = ["filter_mappings", "order_answers", "order_solutions", "ORDER"]

#: the position of an answer of a query with ORDER BY / LIMIT / OFFSET (0 = the first one kept)
ORDER = "_order"

_NUMERIC = tuple(sorted(NUMERIC_DATATYPES))
_INTEGERS = tuple(sorted(d for d in NUMERIC_DATATYPES if number_kind(d) == "integer"))
_TERM, _NUM, _BOOL = "term", "num", "bool"
_DUR, _DT = "duration", "dateTime"  # exact seconds (decimal), EP-SPARQL's interval functions
_SECONDS = "decimal(38,9)"
_EXACT = f"decimal(38,{AGGREGATE_SCALE})"
#: the nondeterministic columns the filter reads, so that Catalyst keeps the stages' columns
#: (it pushes a filter below a deterministic projection, inlining the columns' expressions again)
_BARRIERS = (scratch("parsed"), scratch("parsed2"), scratch("drawn"))


_STAGED = scratch("staged", "")


def _barrier(n: int) -> str:
    return scratch("barrier", str(n))


def filter_mappings(condition, omega: DataFrame, dictionaries: Sequence[DataFrame], *,
                    time_unit: str = "ms", stamps: dict | None = None, exists: dict | None = None,
                    instant: int | tuple[int, ...] | None = None) -> DataFrame:
    """The rows of ``omega`` (extra columns kept) whose ``condition`` (a ``cep.algebra.patterns``
    expression) is true. ``dictionaries``: DataFrames (id, term) decoding the ids the condition
    inspects; DictionaryRequiredError when it inspects some and none is given. ``time_unit``: the
    unit of the interval columns (for getDURATION() ...). ``stamps``: {timestamp() call: the
    column of ``omega`` holding its time in ticks} (C-SPARQL; a call not in it is an error).
    ``exists``: {``Exists`` node: the boolean column of ``omega`` holding its value per row
    (computed by ``cep.engines.spark.evaluate``, ``cep.engines.spark.graphpatterns``)}. ``instant``: the evaluation instant NOW() reads
    (None: NOW() is an error; a tuple, the instants of a plan keyed by the instant: each row's
    ``INSTANT``)."""
    return _Filter(condition, tuple(dictionaries), time_unit, tuple((stamps or {}).items()),
                   tuple((exists or {}).items()), instant).apply(omega)


def _drawn_calls(condition) -> list:
    """The RAND / UUID / STRUUID / BNODE calls of ``condition``, each once, in order."""
    if condition is None:
        return []
    return list(dict.fromkeys(e for e in A.subexpressions(condition)
                              if isinstance(e, A.Builtin) and e.name in SOLUTION_BUILTINS and e.name != "NOW"))


def _computed_numbers(condition) -> list:
    """The computed numbers of ``condition`` that ``_Filter.computed`` evaluates, each once,
    outermost only: numeric expressions (``cep.terms.numbers.numeric``), and IF / COALESCE whose every
    branch is one or a term, that read a variable, a drawn value or the interval. Left to Spark
    SQL's doubles: a bare RAND() (a double either way), and a number computed from EXISTS or
    timestamp() (their values are columns only Spark SQL reads)."""
    out: list = []

    def visit(e):
        if _computable(e) and not _constant_number(e):
            inner = list(A.subexpressions(e))
            if not (isinstance(e, A.Builtin) and e.name == "RAND") and \
                    not any(isinstance(x, (A.Exists, A.Timestamp, A.PatternTimestamp)) for x in inner):
                if e not in out:
                    out.append(e)
                return
        if numeric(e):
            return
        for x in _children(e):
            visit(x)

    if condition is not None:
        visit(condition)
    return out


def _computable(e) -> bool:
    """Whether ``e``'s value is a number or a term, a number at least on some branch."""
    if numeric(e):
        return True
    if isinstance(e, A.Builtin) and e.name in ("IF", "COALESCE"):
        branches = e.args[1:] if e.name == "IF" else e.args
        return all(_computable(b) or isinstance(b, (A.Var, A.Const)) for b in branches) and \
            any(_computable(b) for b in branches)
    return False


def _children(e) -> list:
    from dataclasses import fields

    out = []
    for f in fields(e):
        value = getattr(e, f.name)
        out += [x for x in (value if isinstance(value, tuple) else (value,)) if isinstance(x, A.EXPR_TYPES)]
    return out


def _constant_number(e) -> bool:
    """Whether computable ``e`` reads nothing of the solution (computed once, on the driver)."""
    return not any(isinstance(x, (A.Var, A.Bound, A.Exists, A.IntervalFn, A.Timestamp, A.PatternTimestamp))
                   or (isinstance(x, A.Builtin) and x.name in SOLUTION_BUILTINS) for x in A.subexpressions(e))


def _computed_columns(i: int) -> tuple[str, ...]:
    """A computed value's columns: its term, lexical form, language, datatype (these three null
    unless a literal), and a number's exact value and double."""
    return tuple(scratch("num", str(i), part) for part in ("term", "lex", "lang", "dtype", "exact", "double"))


def _computed_value(e, condition, columns) -> "_Val | None":
    """A computed number's value: from its columns (``_Filter.computed``), or a constant one
    evaluated here by the reference; None when neither (Spark SQL's doubles then)."""

    if numeric(e) and _constant_number(e):
        n = eval_expr(e, {})
        if not isinstance(n, Number):
            return _Val(_TERM, F.lit(None).cast("string"))
        exact = F.lit(n.value).cast(_EXACT) if n.kind in ("integer", "decimal") else F.lit(None).cast(_EXACT)
        return _Val(_TERM, F.lit(n.term()), number=(exact, F.lit(float(n.value)).cast("double")))
    exprs = _computed_numbers(condition)
    if e not in exprs:
        return None
    term, lexical, lang, datatype, exact, double = _computed_columns(exprs.index(e))
    if term not in columns:
        return None
    col = F.col(term)   # its parts known: no regular expression takes the term apart again
    vars(col)[_PARTS] = {"literal": F.col(lexical).isNotNull(), "lexical": F.col(lexical), "lang": F.col(lang),
                         "datatype": F.col(datatype)}
    return _Val(_TERM, col, number=(F.col(exact), F.col(double)))


#: expressions that read nothing compiled: a column, a constant, or Spark SQL's own value
_LEAVES = (A.Var, A.Const, A.Bound, A.Exists, A.Timestamp, A.PatternTimestamp, A.IntervalFn)
#: what a connective (And, Or, Not) reads once: its boolean children are not staged
_BOOLEANS = (A.And, A.Or, A.Not, A.Compare, A.Regex)


def _staged_exprs(condition) -> dict:
    """{sub-expression: its height}: the compound sub-expressions of ``condition`` whose value
    ``_Filter.staged`` puts in columns of its own, one stage per height, innermost first.

    A compiled value is a Spark expression, and what reads it repeats it: a comparison reads each
    side's term, number, string and seconds (~10 copies), a built-in its argument's parts. So a
    value nested n deep grew as 10^n (``IRI(CONCAT("../b#", STRAFTER(STR(?s), "#")))`` made a
    14 MB plan that took minutes to optimise and to ship with every task). Read from a column, it
    is written once. Not staged: the root, leaves and values that are columns already (drawn
    calls, computed numbers, constants), and a connective's boolean children (read once)."""
    if condition is None:
        return {}
    columns = set(_computed_numbers(condition)) | set(_drawn_calls(condition))
    out: dict = {}

    def visit(e, parent) -> int:
        if isinstance(e, _LEAVES) or e in columns or _id_compare(e) is not None \
                or (isinstance(e, A.Builtin) and e.name in SOLUTION_BUILTINS) \
                or (numeric(e) and _constant_number(e)):
            return 0
        height = 1 + max((visit(x, e) for x in _children(e)), default=0)
        if parent is not None and not (isinstance(parent, (A.And, A.Or, A.Not)) and isinstance(e, _BOOLEANS)):
            out[e] = max(out.get(e, 0), height)
        return height

    visit(condition, None)
    return out


def _staged_columns(i: int) -> tuple[str, ...]:
    """A staged value's columns: its value (a term, number, boolean or seconds); a term's parts
    (literal?, lexical form, language, datatype); its (duration, dateTime) seconds and a computed
    number's (exact, double) when the value carries them."""
    return tuple(f"{_STAGED}{i}_{part}"
                 for part in ("value", "lit", "lex", "lang", "dtype", "dur", "dt", "exact", "double"))


def _drawn_column(e, calls: list) -> str:
    return scratch("drawn", str(calls.index(e))) if e in calls else ""


def _drawn_value(name: str, col: Column) -> "_Val":
    """A drawn value read from its column, its parts known (no term is parsed again)."""
    if name == "RAND":
        return _Val(_NUM, col)
    if name == "STRUUID":
        return _string_value(col.isNotNull(), F.substring(col, 2, 36), F.lit(""))
    term = F.when(col.isNotNull(), col)
    none = F.lit(None).cast("string")
    vars(term)[_PARTS] = {"literal": F.when(col.isNotNull(), F.lit(False)), "lexical": none, "lang": none,
                          "datatype": none}
    return _Val(_TERM, term)


def _hex16(h: Column) -> Column:
    """A long's 64 bits as 16 lower-case hex digits (as ``f"{h & 0xFFFFFFFFFFFFFFFF:016x}"``)."""
    return F.lpad(F.lower(F.hex(h)), 16, "0")


def order_answers(omega: DataFrame, modifiers, variables, dictionaries: Sequence[DataFrame], *,
                  time_unit: str = "ms", partition: Sequence[str] = ()) -> DataFrame:
    """``omega``'s rows sorted and sliced per ``modifiers`` (``cep.algebra.patterns.Modifiers``; the keys'
    values ordered as ``cep.terms.values.order_key``, ties by the ``variables``' ids, unbound first,
    then the intervals), with ``ORDER`` = each kept row's position; ``partition``: the columns
    whose every value is sorted and sliced on its own (the instant of an evaluation at many)."""
    from pyspark.sql import Window

    df, keys = _sort_keys(omega, modifiers, dictionaries, time_unit)
    ties = [(F.col(var_column(v.name)) if var_column(v.name) in omega.columns else F.lit(None).cast("long")).asc_nulls_first()
            for v in variables] + [F.col(T_START).asc(), F.col(T_END).asc()]
    rank = F.row_number().over(Window.partitionBy(*partition).orderBy(*keys, *ties)) - 1
    ranked = df.select(*omega.columns, rank.alias(ORDER)).filter(F.col(ORDER) >= modifiers.offset)
    if modifiers.limit is not None:
        ranked = ranked.filter(F.col(ORDER) < modifiers.offset + modifiers.limit)
    return ranked.select(*omega.columns, (F.col(ORDER) - modifiers.offset).alias(ORDER))


def order_solutions(omega: DataFrame, modifiers, variables, dictionaries: Sequence[DataFrame], *,
                    time_unit: str = "ms", partition: Sequence[str] = ()) -> DataFrame:
    """ORDER BY keys reading variables the projection drops (``cep.engines.reference.ordered_solutions``):
    the solutions ``omega`` ranked by the keys — ties by the projected ``variables``' ids, then the
    other variables' (by column), unbound first, then the intervals — projected, each answer at
    the first position of its solutions, then sliced; ``ORDER`` = each kept answer's position;
    ``partition``: as :func:`order_answers`'."""
    from pyspark.sql import Window

    df, keys = _sort_keys(omega, modifiers, dictionaries, time_unit)
    selected = [var_column(v.name) for v in variables]
    others = sorted(c for c in omega.columns if c.startswith("v_") and c not in selected and c not in partition)
    present = set(omega.columns)

    def col(c):
        return F.col(c) if c in present else F.lit(None).cast("long")

    ties = [col(c).asc_nulls_first() for c in selected + others] + [F.col(T_START).asc(), F.col(T_END).asc()]
    first = scratch("first")
    within = Window.partitionBy(*partition)
    ranked = df.select(*[col(c).alias(c) for c in selected], T_START, T_END, *partition,
                       (F.row_number().over(within.orderBy(*keys, *ties)) - 1).alias(first))
    answers = ranked.groupBy(*selected, T_START, T_END, *partition).agg(F.min(first).alias(first))
    rank = F.row_number().over(within.orderBy(F.col(first))) - 1
    out = answers.select(*selected, T_START, T_END, *partition, rank.alias(ORDER)).filter(
        F.col(ORDER) >= modifiers.offset)
    if modifiers.limit is not None:
        out = out.filter(F.col(ORDER) < modifiers.offset + modifiers.limit)
    return out.select(*selected, T_START, T_END, *partition, (F.col(ORDER) - modifiers.offset).alias(ORDER))


def _sort_keys(omega: DataFrame, modifiers, dictionaries, time_unit: str) -> tuple[DataFrame, list[Column]]:
    """``omega`` with the terms the ORDER BY keys read decoded, and the keys' sort columns."""
    f = _Filter(None, tuple(dictionaries), time_unit)
    needed = sorted(set().union(*[_needs_terms(k.expr) for k in modifiers.order]))
    df = f.decoded(omega, needed)
    keys = []
    for k in modifiers.order:
        key = _order_struct(f.compile(k.expr, df.columns))
        keys.append(key.desc() if k.descending else key.asc())
    return df, keys


def _order_struct(v: "_Val") -> Column:
    """The ascending sort key of a compiled value: (rank, kind, number, seconds, text), as
    ``cep.terms.values.order_key``."""
    zero = F.lit(0).cast(_SECONDS)
    if v.kind in (_NUM, _BOOL, _DUR, _DT):
        bound = v.col.isNotNull()
        kind = {_NUM: 0, _BOOL: 1, _DT: 2, _DUR: 3}[v.kind]
        number = v.col.cast("double") if v.kind in (_NUM, _BOOL) else F.lit(0.0)
        seconds = v.col.cast(_SECONDS) if v.kind in (_DUR, _DT) else zero
        return F.struct(F.when(bound, F.lit(3)).otherwise(F.lit(0)).alias("rank"),
                        F.when(bound, F.lit(kind)).otherwise(F.lit(0)).alias("kind"),
                        F.coalesce(number, F.lit(0.0)).alias("number"), F.coalesce(seconds, zero).alias("seconds"),
                        F.lit("").alias("text"))
    t = v.col
    number = _num_of(v)
    duration, time = _seconds_of(v)
    boolean = _datatype(t) == XSD_BOOLEAN
    simple = _simple_string(t)
    rank = F.when(t.isNull(), F.lit(0)).when(t.startswith("_:"), F.lit(1)).when(t.startswith("<"), F.lit(2)).otherwise(F.lit(3))
    kind = (F.when(rank < 3, F.lit(0)).when(number.isNotNull(), F.lit(0)).when(boolean, F.lit(1))
            .when(time.isNotNull(), F.lit(2)).when(duration.isNotNull(), F.lit(3)).when(simple.isNotNull(), F.lit(4))
            .otherwise(F.lit(5)))
    value = (F.when((rank == 3) & number.isNotNull(), number)
             .when((rank == 3) & boolean, _lexical(t).isin("true", "1").cast("double")).otherwise(F.lit(0.0)))
    seconds = F.when((rank == 3) & (kind == 2), time).when((rank == 3) & (kind == 3), duration).otherwise(zero)
    text = F.when(rank == 0, F.lit("")).when((rank == 3) & (kind == 4), simple).otherwise(t)
    return F.struct(rank.alias("rank"), kind.alias("kind"), value.alias("number"), seconds.cast(_SECONDS).alias("seconds"),
                    text.alias("text"))


_STRING_TYPES = (XSD_STRING, RDF_LANGSTRING)


def _string_parts(v: "_Val") -> tuple[Column, Column]:
    """(lexical form, language tag or "") of a string literal value (simple, xsd:string, with a
    language), both null for anything else."""
    if v.kind != _TERM:
        none = F.lit(None).cast("string")
        return none, none
    is_string = _is_literal(v.col) & _datatype(v.col).isin(*_STRING_TYPES)
    return F.when(is_string, _lexical(v.col)), F.when(is_string, _lang(v.col))


def _integer_of(v: "_Val") -> Column:
    """An xsd:integer argument's value (SUBSTR's, §17.4.3.3), null for anything else (a computed
    number: when integral)."""
    n = _num_of(v)
    if v.kind == _NUM:
        return F.when(n == F.floor(n), n)
    return F.when(_datatype(v.col).isin(*_INTEGERS) & (n == F.floor(n)), n)


def _string_term(lex: Column, lang: Column) -> Column:
    """The string literal term of a lexical form and a language tag ("" for none)."""
    return F.concat(F.lit('"'), _escape(lex), F.lit('"'),
                    F.when(lang != "", F.concat(F.lit("@"), lang)).otherwise(F.lit("")))


def _string_value(ok: Column, lex: Column, lang: Column) -> "_Val":
    """A computed string literal (null where ``ok`` is not true), with its parts known
    (``_PARTS``): what reads it does not parse the term it builds again (a smaller plan)."""
    term = F.when(ok, _string_term(lex, lang))
    vars(term)[_PARTS] = {"literal": F.when(ok, F.lit(True)), "lexical": F.when(ok, lex), "lang": F.when(ok, lang),
                          "datatype": F.when(ok, F.when(lang != "", F.lit(RDF_LANGSTRING)).otherwise(F.lit(XSD_STRING)))}
    return _Val(_TERM, term)


def _typed_value(ok: Column, lex: Column, datatype: Column, seconds: tuple | None = None) -> "_Val":
    """A computed typed literal (null where ``ok`` is not true) with its parts known, as
    ``_string_value``'s (xsd:string written as a simple literal); ``seconds``: its (duration,
    dateTime) seconds when known."""
    term = F.when(ok, F.concat(F.lit('"'), _escape(lex), F.lit('"'), F.when(
        datatype == XSD_STRING, F.lit("")).otherwise(F.concat(F.lit("^^<"), datatype, F.lit(">")))))
    vars(term)[_PARTS] = {"literal": F.when(ok, F.lit(True)), "lexical": F.when(ok, lex), "lang": F.when(ok, F.lit("")),
                          "datatype": F.when(ok, datatype)}
    return _Val(_TERM, term, seconds)


def _escape(lex: Column) -> Column:
    """N-Triples escapes for a lexical form (the inverse of ``_unescape`` on what it produces)."""
    out = F.regexp_replace(lex, r"\\", r"\\\\")
    out = F.regexp_replace(out, '"', r'\\"')
    out = F.regexp_replace(out, "\n", r"\\n")
    return F.regexp_replace(out, "\r", r"\\r")


def _maybe_temporal(e) -> bool:
    """Whether expression ``e`` can have a duration or time value (statically)."""
    match e:
        case A.IntervalFn() | A.Var() | A.Timestamp() | A.PatternTimestamp():
            return True
        case A.Const(term=term):
            return temporal_value(term) is not None
        case A.Builtin(name=name, args=args) if name in ("IF", "COALESCE"):
            return any(_maybe_temporal(a) for a in args)
        case A.Builtin(name="TIMEZONE" | "STRDT" | "NOW"):   # a dayTimeDuration; any datatype; a dateTime
            return True
    return False


def _understood(term: Column, duration: Column, time: Column) -> Column:
    """Whether a literal's value is known (``cep.terms.values._understood``); true for IRIs."""
    dt, lex = _datatype(term), _lexical(term)
    return (~_is_literal(term) | dt.isin(*_STRING_TYPES)
            | ((dt == XSD_BOOLEAN) & lex.isin("true", "false", "1", "0"))
            | (dt.isin(*_NUMERIC) & lex.try_cast("double").isNotNull())
            | duration.isNotNull() | time.isNotNull())


def _resolver(base: str):
    """IRI(term) under the query's BASE ``base`` (an IRI term) as a Spark function: the reference's
    own code in a Python UDF (RFC 3986 §5.2 is dot segments and merges; only IRI() under a BASE
    pays for it), the term read once (a Spark expression repeating it grew past the heap)."""

    def iri(term):
        value = None if term is None else scalar_term_builtin("IRI", [term, base])
        return None if value is V.ERROR else value

    return F.udf(iri, "string")


def _term_builtin(name: str, vals, args=()) -> "_Val":
    """``cep.terms.values.term_builtin`` as columns: LANGMATCHES, STRDT, STRLANG, IRI, ENCODE_FOR_URI,
    the hash functions, TIMEZONE and TZ."""
    if name in ("TIMEZONE", "TZ"):                               # §17.4.5.8-9
        t = _term_of(vals[0])
        lex = F.when(_datatype(t) == XSD_DATETIME, _lexical(t))
        valid = lex.rlike(DATETIME_PATTERN)
        zone = F.regexp_extract(lex, DATETIME_PATTERN, 3)
        if name == "TZ":
            return _string_value(valid, zone, F.lit(""))
        hours, minutes = F.substring(zone, 2, 2).try_cast("int"), F.substring(zone, 5, 2).try_cast("int")
        body = F.concat(F.when(hours > 0, F.concat(hours.cast("string"), F.lit("H"))).otherwise(F.lit("")),
                        F.when(minutes > 0, F.concat(minutes.cast("string"), F.lit("M"))).otherwise(F.lit("")))
        sign = F.when(zone.startswith("-") & (body != ""), F.lit("-")).otherwise(F.lit(""))
        text = F.when(zone == "Z", F.lit("PT0S")).otherwise(
            F.concat(sign, F.lit("PT"), F.when(body == "", F.lit("0S")).otherwise(body)))
        ok = valid & (zone != "")
        seconds = (F.when(ok, (F.when(zone.startswith("-"), F.lit(-1)).otherwise(F.lit(1))
                               * (F.coalesce(hours, F.lit(0)) * 3600 + F.coalesce(minutes, F.lit(0)) * 60))
                   .cast(_SECONDS)), F.lit(None).cast(_SECONDS))
        return _typed_value(ok, text, F.lit(XSD_DAYTIMEDURATION), seconds)
    if name in ("IRI", "URI"):                                   # §17.4.2.8
        t = _term_of(vals[0])
        lex = _simple_string(t)
        if len(args) > 1:     # the query's BASE (cep.lowering.common adds it): a relative IRI resolves against it
            return _Val(_TERM, _resolver(args[1].term)(t))
        return _Val(_TERM, F.when(t.startswith("<"), t).when(lex.rlike(ABSOLUTE_IRI), F.concat(F.lit("<"), lex,
                                                                                             F.lit(">"))))
    lex, lang = _string_parts(vals[0])
    if name == "ENCODE_FOR_URI":                                 # §17.4.3.11: java.net.URLEncoder, then RFC 3986
        encoded = F.url_encode(lex)
        for java, rfc in (("+", "%20"), ("*", "%2A"), ("%7E", "~")):
            encoded = F.replace(encoded, F.lit(java), F.lit(rfc))
        return _string_value(lex.isNotNull(), encoded, F.lit(""))
    if name in ("MD5", "SHA1", "SHA256", "SHA384", "SHA512"):    # §17.4.6
        digest = (F.md5(lex) if name == "MD5" else F.sha1(lex) if name == "SHA1" else F.sha2(lex, int(name[3:])))
        return _string_value(lex.isNotNull() & (lang == ""), digest, F.lit(""))
    other = _simple_string(_term_of(vals[1]))
    if name == "LANGMATCHES":                                    # §17.4.3.16, RFC 4647 basic filtering
        tag, wanted = F.lower(F.when(lang == "", lex)), F.lower(other)
        return _Val(_BOOL, F.when(wanted == "*", tag != "").otherwise(
            (tag == wanted) | tag.startswith(F.concat(wanted, F.lit("-")))))
    simple = lex.isNotNull() & (lang == "")
    if name == "STRDT":                                          # §17.4.3.17
        dt = _term_of(vals[1])
        ok = simple & dt.startswith("<")
        datatype = F.regexp_extract(dt, r"^<(.*)>$", 1)
        return _typed_value(ok, lex, datatype)
    ok = simple & other.rlike(r"^[a-zA-Z]+(-[a-zA-Z0-9]+)*$")    # STRLANG, §17.4.3.18
    return _string_value(ok, lex, F.lower(other))




def _either(cond: Column, a: "_Val", b: "_Val") -> "_Val":
    """IF(cond, a, b) over compiled values (null cond: an error). Values of one kind stay of it; a
    computed number meets a term as numbers (the term's numeric value; module docstring), other
    kinds meet as terms."""
    if a.kind == b.kind:
        number = None
        if a.kind == _TERM and (a.number is not None or b.number is not None):
            ea, eb, na, nb = _exact_of(a), _exact_of(b), _num_of(a), _num_of(b)
            number = (F.when(cond, ea).when(~cond, eb), F.when(cond, na).when(~cond, nb))
        return _Val(a.kind, F.when(cond, a.col).when(~cond, b.col), number=number)
    if _NUM in (a.kind, b.kind) and {a.kind, b.kind} <= {_NUM, _TERM}:
        return _Val(_NUM, F.when(cond, _num_of(a)).when(~cond, _num_of(b)))
    ta, tb = _term_of(a), _term_of(b)
    return _Val(_TERM, F.when(cond, ta).when(~cond, tb))


def _seconds_of(v: "_Val") -> tuple[Column, Column]:
    """(duration seconds, dateTime seconds) of a value, each null when it is not one."""
    none = F.lit(None).cast(_SECONDS)
    if v.seconds is not None:
        return v.seconds
    if v.kind == _DUR:
        return v.col, none
    if v.kind == _DT:
        return none, v.col
    if v.kind != _TERM:
        return none, none
    dt, lex = _datatype(v.col), _lexical(v.col)

    def group(pattern: str, n: int) -> Column:
        return F.regexp_extract(lex, pattern, n)

    def number(pattern: str, n: int) -> Column:
        return F.coalesce(F.nullif(group(pattern, n), F.lit("")).cast(_SECONDS), F.lit(0).cast(_SECONDS))

    d = DAY_TIME_DURATION_PATTERN
    length = (number(d, 2) * 86400 + number(d, 3) * 3600 + number(d, 4) * 60 + number(d, 5)).cast(_SECONDS)
    duration = F.when(dt.isin(*sorted(DURATION_DATATYPES)) & lex.rlike(d) & ~lex.endswith("T"),
                      F.when(group(d, 1) == "-", -length).otherwise(length))
    t = DATETIME_PATTERN
    zone = F.when(group(t, 3) == "", F.lit("Z")).otherwise(group(t, 3))
    stamp = F.try_to_timestamp(F.concat(group(t, 1), zone))
    fraction = F.rpad(F.substring(group(t, 2), 1, 6), 6, "0").cast("long")
    micros = F.unix_micros(stamp) + fraction
    when = F.when((dt == XSD_DATETIME) & lex.rlike(t) & stamp.isNotNull(),
                  (micros.cast(_SECONDS) / F.lit(1_000_000)).cast(_SECONDS))
    return duration.cast(_SECONDS), when


@dataclass(frozen=True)
class _Val:
    """A compiled expression value: ``kind`` is "term" (an N-Triples string column), "num" (a
    double column, from arithmetic) or "bool"; null = unbound or a type error (SPARQL's error)."""

    kind: str
    col: Column
    #: a term's (duration, dateTime) seconds when computed already (a decoded variable's columns)
    seconds: tuple | None = None
    #: a computed number's (exact decimal(38, 18) value, null for a float or double; its double)
    number: tuple | None = None


def _lexical_raw(term: Column) -> Column:
    return F.regexp_extract(term, LITERAL_JAVA_RE, 1)


def _unescape(raw: Column) -> Column:
    """The N-Triples escapes of ``cep.terms.literals.ESCAPES`` undone (\\uXXXX kept as written)."""
    out = F.regexp_replace(raw, r"\\\\", "\u0000")
    for esc, char in ESCAPES.items():
        if esc != "\\":
            out = F.regexp_replace(out, r"\\" + esc, char.replace("\\", "\\\\").replace("$", "\\$"))
    return F.regexp_replace(out, "\u0000", r"\\")


#: the parts of a decoded variable's term, computed once per row in columns of their own (set on
#: the variable's term Column by ``_Filter.compile``): "literal", "lexical", "lang", "datatype"
_PARTS = "_rsp_parts"


def _part(term: Column, name: str) -> Column | None:
    parts = vars(term).get(_PARTS)   # not getattr: a Column reads an unknown attribute as a field
    return None if parts is None else parts[name]


def _is_literal(term: Column) -> Column:
    known = _part(term, "literal")
    return known if known is not None else term.rlike(LITERAL_JAVA_RE)


def _lexical(term: Column) -> Column:
    known = _part(term, "lexical")
    return known if known is not None else F.when(_is_literal(term), _unescape(_lexical_raw(term)))


def _lang(term: Column) -> Column:
    known = _part(term, "lang")
    return known if known is not None else F.when(_is_literal(term), F.regexp_extract(term, LITERAL_JAVA_RE, 2))


def _datatype(term: Column) -> Column:
    known = _part(term, "datatype")
    if known is not None:
        return known
    lang = F.regexp_extract(term, LITERAL_JAVA_RE, 2)
    dt = F.regexp_extract(term, LITERAL_JAVA_RE, 3)
    return (F.when(~_is_literal(term), F.lit(None).cast("string"))
            .when(lang != "", F.lit(RDF_LANGSTRING)).when(dt != "", dt).otherwise(F.lit(XSD_STRING)))


def _num_of(v: _Val) -> Column:
    if v.number is not None:
        return v.number[1]
    if v.kind == _NUM:
        return v.col
    if v.kind in (_BOOL, _DUR, _DT):
        return F.lit(None).cast("double")
    return F.when(_datatype(v.col).isin(*_NUMERIC), _lexical(v.col).try_cast("double"))


def _exact_of(v: _Val) -> Column:
    """The exact decimal(38, 18) value of an xsd:integer (or derived) / xsd:decimal value whose
    lexical form is valid and below 10^20, else null (``cep.terms.numbers.comparable``): two such values
    compare exactly, any other numbers as doubles."""
    if v.number is not None:
        return v.number[0]
    if v.kind != _TERM:
        return F.lit(None).cast(_EXACT)
    dt, lex = _datatype(v.col), _lexical(v.col)
    valid = ((dt.isin(*_INTEGERS) & lex.rlike(NUMBER_LEXICAL["integer"]))
             | ((dt == XSD_DECIMAL) & lex.rlike(NUMBER_LEXICAL["decimal"])))
    return F.when(valid, lex.try_cast(_EXACT))


def _term_of(v: _Val) -> Column:
    if v.kind == _TERM:
        return v.col
    if v.kind == _BOOL:
        return (F.when(v.col, F.lit(f'"true"^^<{XSD_BOOLEAN}>'))
                .when(~v.col, F.lit(f'"false"^^<{XSD_BOOLEAN}>')))
    return F.lit(None).cast("string")  # a computed number or time has no canonical term  # a computed number has no canonical term (compared numerically)


def _simple_string(term: Column) -> Column:
    return F.when(_datatype(term) == XSD_STRING, _lexical(term))


def _ebv(v: _Val) -> Column:
    """Effective boolean value (§17.2.2); null = error."""
    if v.kind == _BOOL:
        return v.col
    if v.kind == _NUM or v.number is not None:
        n = _num_of(v)
        return (n != 0) & ~F.isnan(n)
    if v.kind in (_DUR, _DT):
        return F.lit(None).cast("boolean")
    dt, lex = _datatype(v.col), _lexical(v.col)
    num = lex.try_cast("double")
    return (F.when(dt == XSD_BOOLEAN, lex.isin("true", "1"))
            .when(dt.isin(*_NUMERIC), F.coalesce((num != 0) & ~F.isnan(num), F.lit(False)))
            .when(dt == XSD_STRING, lex != ""))


def _cmp(op: str, a: Column, b: Column) -> Column:
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _id_compare(e) -> tuple | None:
    """(variable, constant) when ``e`` is ?v = / != an IRI or blank constant: compared by id."""
    if isinstance(e, A.Compare) and e.op in ("=", "!="):
        for v, c in ((e.left, e.right), (e.right, e.left)):
            if isinstance(v, A.Var) and isinstance(c, A.Const) and not c.term.startswith('"'):
                return v, c
    return None


def _needs_terms(e) -> set[str]:
    """The variable columns whose terms ``e`` inspects (to decode through the dictionary)."""
    match e:
        case A.Var(name=name):
            return {var_column(name)}
        case A.Const() | A.Bound() | A.Exists():
            return set()
    if _id_compare(e) is not None:
        return set()
    out: set[str] = set()
    for child in (getattr(e, f, None) for f in ("left", "right", "expr", "text", "pattern", "flags")):
        if child is not None:
            out |= _needs_terms(child)
    for child in getattr(e, "args", ()):
        out |= _needs_terms(child)
    return out


def _term_column(column: str) -> str:
    """The scratch column holding the decoded term of variable column ``column``."""
    return scratch("term", column)


def _constant_string(e, what: str) -> str:
    lit = parse_literal(e.term) if isinstance(e, A.Const) else None
    if lit is None:
        raise UnsupportedQueryError(f"REGEX {what} must be a constant string literal, got {e}")
    return lit[0]


@dataclass(frozen=True)
class _Filter:
    """One FILTER condition over a DataFrame of mappings (extra columns are kept)."""

    condition: object
    dictionaries: tuple[DataFrame, ...]
    time_unit: str = "ms"
    stamps: tuple = ()
    exists: tuple = ()
    #: the evaluation instant NOW() reads (``filter_mappings``)
    instant: int | tuple[int, ...] | None = None
    #: (sub-expression, (index, kind, has seconds, has number)): the values ``staged`` computed
    staged: tuple = ()

    def apply(self, omega: DataFrame) -> DataFrame:
        df = self.computed(self.drawn(self.decoded(omega, sorted(_needs_terms(self.condition)))))
        f, df = self.stage(df)
        keep = _ebv(f.compile(self.condition, df.columns))
        for barrier in [c for c in df.columns if c in _BARRIERS or c.startswith(_barrier(0)[:-1])]:
            keep = keep & (F.col(barrier) >= 0)   # always true; read so that the parts stay columns
        return df.filter(keep).select(*omega.columns)

    def stage(self, df: DataFrame) -> tuple["_Filter", DataFrame]:
        """``df`` with the value of each sub-expression of ``_staged_exprs`` in columns of its own
        (``_staged_columns``), a select per height, and this filter knowing them. Columns staged
        by other filters before on ``df`` are kept (their numbers are taken)."""
        heights = _staged_exprs(self.condition)
        f = self
        for height in sorted(set(heights.values())):
            columns, known = [], []
            first = sum(1 for c in df.columns if c.startswith(_STAGED) and c.endswith("_value"))
            barrier = scratch("barrier", str(sum(1 for c in df.columns if c.startswith(_barrier(0)[:-1]))))
            for e in [e for e, h in heights.items() if h == height]:
                i = first + len(known)
                v = f.compile(e, df.columns)
                names = _staged_columns(i)
                columns.append(v.col.alias(names[0]))
                if v.kind == _TERM:
                    columns += [_is_literal(v.col).alias(names[1]), _lexical(v.col).alias(names[2]),
                                _lang(v.col).alias(names[3]), _datatype(v.col).alias(names[4])]
                if v.seconds is not None:
                    columns += [v.seconds[0].alias(names[5]), v.seconds[1].alias(names[6])]
                if v.number is not None:
                    columns += [v.number[0].alias(names[7]), v.number[1].alias(names[8])]
                known.append((e, (i, v.kind, v.seconds is not None, v.number is not None)))
            df = df.select(*df.columns, *columns,
                           F.monotonically_increasing_id().alias(barrier))
            f = replace(f, staged=f.staged + tuple(known))
        return f, df

    def _staged_value(self, e, columns) -> "_Val | None":
        """``e``'s value read from its staged columns, None when ``stage`` did not compute it."""
        known = dict(self.staged).get(e)
        if known is None:
            return None
        i, kind, seconds, number = known
        names = _staged_columns(i)
        if names[0] not in columns:
            return None
        col = F.col(names[0])
        if kind == _TERM:
            vars(col)[_PARTS] = {"literal": F.col(names[1]), "lexical": F.col(names[2]), "lang": F.col(names[3]),
                                 "datatype": F.col(names[4])}
        return _Val(kind, col, (F.col(names[5]), F.col(names[6])) if seconds else None,
                    (F.col(names[7]), F.col(names[8])) if number else None)

    def decoded(self, omega: DataFrame, needed: list[str]) -> DataFrame:
        """``omega`` with the terms of the variable columns ``needed`` decoded and taken apart."""
        df = omega
        if needed:
            dictionary = self._dictionary()
            for c in needed:
                term_col = _term_column(c)
                if c not in omega.columns:
                    df = df.withColumn(term_col, F.lit(None).cast("string"))
                    continue
                lookup = dictionary.select(F.col(ID).alias(scratch("id", c)), F.col(TERM).alias(term_col))
                df = df.join(lookup, df[c] == lookup[scratch("id", c)], "left").drop(scratch("id", c))
        return self.taken_apart(df, needed)

    def taken_apart(self, df: DataFrame, needed: list[str]) -> DataFrame:
        """``df`` (with the decoded terms of the variable columns ``needed``) with each term's parts
        in columns of their own."""
        if needed:
            # each decoded term taken apart (literal?, lexical form, language, datatype) and read as a
            # duration and a time once, in columns of their own: a condition reads them many times,
            # and as one expression a var = var comparison outgrew the JVM's 64 KB method limit
            # (Spark then interprets it, several times slower). A nondeterministic column, which
            # the filter reads, keeps the optimizer from inlining the parts back into the filter.
            columns = []
            for c in needed:
                term = F.col(_term_column(c))
                columns += [_is_literal(term).alias(scratch("lit", c)), _lexical(term).alias(scratch("lex", c)),
                            _lang(term).alias(scratch("lang", c)), _datatype(term).alias(scratch("dtype", c))]
            df = df.select(*df.columns, *columns, F.monotonically_increasing_id().alias(scratch("parsed")))
            columns = []
            for c in needed:
                duration, time = _seconds_of(_Val(_TERM, self._term(c, df.columns)))
                columns += [duration.alias(scratch("dur", c)), time.alias(scratch("dt", c))]
            df = df.select(*df.columns, *columns, F.monotonically_increasing_id().alias(scratch("parsed2")))
        return df

    def drawn(self, df: DataFrame) -> DataFrame:
        """``df`` with the value of each RAND / UUID / STRUUID / BNODE call of the condition in a
        column of its own (``_drawn_column``): a UUID is a concat of hashes, and as an expression it
        was copied into every place that reads it (a comparison reads a term many times), past
        what the JVM compiles."""
        calls = _drawn_calls(self.condition)
        if not calls:
            return df
        values = [self._solution(e.name, e.args, df.columns).col.alias(_drawn_column(e, calls)) for e in calls]
        return df.select(*df.columns, *values, F.monotonically_increasing_id().alias(scratch("drawn")))

    def computed(self, df: DataFrame) -> DataFrame:
        """``df`` with the value of each computed number of the condition (``_computed_numbers``)
        in three columns of its own (``_computed_columns``: its term, exact value, double), from
        ``cep.terms.numbers.number`` — the reference's very function — run over Arrow batches of the
        decoded terms (``cep.engines.spark.arrow.evaluate_rows``). Spark SQL's decimals round a
        decimal(38, 18) product or quotient to 6 fraction digits; XPath's types and exact
        integers and decimals are kept so."""
        from pyspark.sql.types import DecimalType, DoubleType, StringType, StructField

        exprs = _computed_numbers(self.condition)
        if not exprs:
            return df
        reads = sorted({var_column(v.name) for e in exprs for v in A.expr_variables(e)})
        names = {_term_column(c): column_var(c) for c in reads if _term_column(c) in df.columns}
        fields = [StructField(c, t, True) for i in range(len(exprs))
                  for c, t in zip(_computed_columns(i), (StringType(), StringType(), StringType(), StringType(),
                                                         DecimalType(38, AGGREGATE_SCALE), DoubleType()))]
        unit = self.time_unit

        def row(mu, interval) -> list:
            out = []
            for e in exprs:
                n = eval_expr(e, mu, interval, unit)
                ok = isinstance(n, Number)
                text = n.term() if ok else n if isinstance(n, str) else None
                lit = parse_literal(text) if text is not None else None
                out += [text, *((None, None, None) if lit is None else (lit[0], lit[1] or "", lit[2])),
                        n.value if ok and n.kind in ("integer", "decimal") else None, float(n.value) if ok else None]
            return out

        return evaluate_rows(df, exprs, names, row, fields, instant=self.instant)

    @staticmethod
    def _term(c: str, columns) -> Column:
        """Variable column ``c``'s decoded term, with its parts when they are columns (``_PARTS``)."""
        term = F.col(_term_column(c))
        if scratch("lex", c) in columns:
            vars(term)[_PARTS] = ({"literal": F.col(scratch("lit", c)), "lexical": F.col(scratch("lex", c)),
                                   "lang": F.col(scratch("lang", c)), "datatype": F.col(scratch("dtype", c))})
        return term

    def _dictionary(self) -> DataFrame:
        if not self.dictionaries:
            raise DictionaryRequiredError(
                f"FILTER {self.condition} needs term values but evaluate() got no dictionary "
                f"(pass dictionary=DataFrame(id, term) or a reasoner store as background)")
        return merge_dictionaries(self.dictionaries)

    def compile(self, e, columns) -> _Val:
        staged = self._staged_value(e, columns)
        if staged is not None:
            return staged
        pair = _id_compare(e)
        if pair is not None:
            v, c = pair
            col = var_column(v.name)
            ids = F.col(col) if col in columns else F.lit(None).cast("long")
            same = ids == F.lit(term_id(c.term))
            return _Val(_BOOL, same if e.op == "=" else ~same)
        if _computable(e):
            known = _computed_value(e, self.condition, columns)
            if known is not None:
                return known
        match e:
            case A.Builtin(name=name, args=args) if name in SOLUTION_BUILTINS:
                column = _drawn_column(e, _drawn_calls(self.condition))
                if column in columns:
                    return _drawn_value(name, F.col(column))
                return self._solution(name, args, columns)
            case A.Builtin(name=name, args=args):
                return self._builtin(name, args, columns)
            case A.IntervalFn(kind=kind):
                per_tick = F.lit(TIME_UNITS[self.time_unit]).cast(_SECONDS) / F.lit(1000)
                start = F.col(T_START).cast(_SECONDS) if T_START in columns else F.lit(None).cast(_SECONDS)
                end = F.col(T_END).cast(_SECONDS) if T_END in columns else F.lit(None).cast(_SECONDS)
                if kind == "DURATION":
                    return _Val(_DUR, ((end - start) * per_tick).cast(_SECONDS))
                return _Val(_DT, ((start if kind == "STARTTIME" else end) * per_tick).cast(_SECONDS))
            case A.Exists():
                column = dict(self.exists).get(e)
                if column is None or column not in columns:
                    raise UnsupportedQueryError(f"{e} was not evaluated before its FILTER")
                return _Val(_BOOL, F.col(column))
            case A.Timestamp() | A.PatternTimestamp():
                column = dict(self.stamps).get(e)
                per_tick = F.lit(TIME_UNITS[self.time_unit]).cast(_SECONDS) / F.lit(1000)
                ticks = F.col(column).cast(_SECONDS) if column in columns else F.lit(None).cast(_SECONDS)
                return _Val(_DT, (ticks * per_tick).cast(_SECONDS))
            case A.Var(name=name):
                c = var_column(name)
                seconds = (F.col(scratch("dur", c)), F.col(scratch("dt", c))) if scratch("dur", c) in columns else None
                return _Val(_TERM, self._term(c, columns), seconds)
            case A.Const(term=term):
                return _Val(_TERM, F.lit(term))
            case A.Bound(var=var):
                c = var_column(var.name)
                return _Val(_BOOL, F.col(c).isNotNull() if c in columns else F.lit(False))
            case A.Not(expr=inner):
                return _Val(_BOOL, ~_ebv(self.compile(inner, columns)))
            case A.And(left=left, right=right):
                return _Val(_BOOL, _ebv(self.compile(left, columns)) & _ebv(self.compile(right, columns)))
            case A.Or(left=left, right=right):
                return _Val(_BOOL, _ebv(self.compile(left, columns)) | _ebv(self.compile(right, columns)))
            case A.Neg(expr=inner):
                return _Val(_NUM, -_num_of(self.compile(inner, columns)))
            case A.Arith(op=op, left=left, right=right):
                a, b = _num_of(self.compile(left, columns)), _num_of(self.compile(right, columns))
                fn = {"+": F.try_add, "-": F.try_subtract, "*": F.try_multiply, "/": F.try_divide}[op]
                return _Val(_NUM, fn(a, b))
            case A.Compare(op=op, left=left, right=right):
                return _Val(_BOOL, self._compare(op, self.compile(left, columns), self.compile(right, columns),
                                                 _maybe_temporal(left), _maybe_temporal(right)))
            case A.Str(expr=inner):
                t = _term_of(self.compile(inner, columns))
                iri = F.regexp_extract(t, r"^<(.*)>$", 1)
                escaped = F.regexp_replace(F.regexp_replace(iri, r"\\", r"\\\\"), '"', r'\\"')
                return _Val(_TERM, F.when(t.startswith("<"), F.concat(F.lit('"'), escaped, F.lit('"')))
                            .when(_is_literal(t), F.concat(F.lit('"'), _lexical_raw(t), F.lit('"'))))
            case A.Lang(expr=inner):
                t = _term_of(self.compile(inner, columns))
                return _Val(_TERM, F.when(_is_literal(t), F.concat(F.lit('"'), _lang(t), F.lit('"'))))
            case A.Datatype(expr=inner):
                t = _term_of(self.compile(inner, columns))
                return _Val(_TERM, F.when(_is_literal(t), F.concat(F.lit("<"), _datatype(t), F.lit(">"))))
            case A.Regex(text=text, pattern=pattern, flags=flags):
                lexical = _lexical(_term_of(self.compile(text, columns)))
                regex = _constant_string(pattern, "pattern")
                letters = _constant_string(flags, "flags") if flags is not None else ""
                prefix = "".join(f"(?{f})" for f in letters if f in "imsx")
                return _Val(_BOOL, lexical.rlike(prefix + regex))
        raise TypeError(f"unknown expression {e!r}")

    def _builtin(self, name: str, args, columns) -> _Val:
        """SPARQL 1.1 §17.4 built-ins, as ``cep.terms.values._builtin``."""
        if name == "IF":
            cond = _ebv(self.compile(args[0], columns))
            a, b = self.compile(args[1], columns), self.compile(args[2], columns)
            return _either(cond, a, b)
        if name == "COALESCE":
            vals = [self.compile(arg, columns) for arg in args]
            out = vals[-1]
            for v in reversed(vals[:-1]):
                out = _either(v.col.isNotNull(), v, out)
            return out
        vals = [self.compile(arg, columns) for arg in args]
        if name in ("STRSTARTS", "STRENDS", "CONTAINS"):
            (la, ga), (lb, gb) = _string_parts(vals[0]), _string_parts(vals[1])
            ok = la.isNotNull() & lb.isNotNull() & ((gb == "") | (ga == gb))
            test = {"STRSTARTS": la.startswith(lb), "STRENDS": la.endswith(lb), "CONTAINS": la.contains(lb)}[name]
            return _Val(_BOOL, F.when(ok, test))
        if name == "STRLEN":
            lex, _lang = _string_parts(vals[0])
            return _Val(_NUM, F.length(lex).cast("double"))
        if name in ("UCASE", "LCASE"):
            lex, lang = _string_parts(vals[0])
            changed = F.upper(lex) if name == "UCASE" else F.lower(lex)
            return _string_value(lex.isNotNull(), changed, lang)
        if name == "CONCAT":                                      # §17.4.3.12
            parts = [_string_parts(v) for v in vals]
            ok = F.lit(True)
            for lex, _lang in parts:
                ok = ok & lex.isNotNull()
            same = F.lit(True)
            for _lex, lang in parts[1:]:
                same = same & (lang == parts[0][1])
            lang = F.when(same, parts[0][1]).otherwise(F.lit(""))
            return _string_value(ok, F.concat(*[lex for lex, _l in parts]), lang)
        if name == "SUBSTR":                                      # §17.4.3.3, fn:substring
            lex, lang = _string_parts(vals[0])
            first = self._integer_argument(args[1], vals[1])
            start = F.greatest(first, F.lit(1))
            if len(vals) == 3:   # the characters at first <= p < first + length
                count = first + self._integer_argument(args[2], vals[2]) - start
            else:
                count = F.lit(2 ** 31 - 1)
            most = F.lit(2 ** 31 - 1)   # past any string's length: clamped before the int cast
            text = F.when(count > 0, F.substring(lex, F.least(start, most).cast("int"),
                                                 F.least(count, most).cast("int"))).otherwise(F.lit(""))
            return _string_value(lex.isNotNull() & first.isNotNull() & count.isNotNull(), text, lang)
        if name in ("STRBEFORE", "STRAFTER"):                     # §17.4.3.9-10
            (la, ga), (lb, gb) = _string_parts(vals[0]), _string_parts(vals[1])
            ok = la.isNotNull() & lb.isNotNull() & ((gb == "") | (ga == gb))
            at = F.instr(la, lb)
            if name == "STRAFTER":
                text = F.substring(la, at + F.length(lb), F.length(la) + 1)
            else:
                text = F.when(at > 1, F.substring(la, F.lit(1), at - 1)).otherwise(F.lit(""))
            return _string_value(ok, F.when(at > 0, text).otherwise(F.lit("")), F.when(at > 0, ga).otherwise(F.lit("")))
        if name == "REPLACE":                                     # §17.4.3.15, fn:replace
            lex, lang = _string_parts(vals[0])
            regex = _constant_string(args[1], "pattern")
            replacement = _constant_string(args[2], "replacement")
            letters = _constant_string(args[3], "flags") if len(args) == 4 else ""
            prefix = "".join(f"(?{f})" for f in letters if f in "imsx")
            return _string_value(lex.isNotNull(), F.regexp_replace(lex, prefix + regex, replacement), lang)
        if name in ("YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS"):   # §17.4.5
            t = _term_of(vals[0])
            lex = F.when(_datatype(t) == XSD_DATETIME, _lexical(t))
            main, fraction = F.regexp_extract(lex, DATETIME_PATTERN, 1), F.regexp_extract(lex, DATETIME_PATTERN, 2)
            parts = F.regexp_extract(main, r"^(-?[0-9]+)-([0-9]+)-([0-9]+)T([0-9]+):([0-9]+):([0-9]+)$",
                                     {"YEAR": 1, "MONTH": 2, "DAY": 3, "HOURS": 4, "MINUTES": 5, "SECONDS": 6}[name])
            value = (F.concat(parts, F.lit("."), F.when(fraction == "", F.lit("0")).otherwise(fraction))
                     if name == "SECONDS" else parts)
            return _Val(_NUM, F.when(main != "", value.try_cast("double")))
        if name in TERM_BUILTINS:
            return _term_builtin(name, vals, args)
        v = vals[0]
        if name in ("ISIRI", "ISURI", "ISBLANK", "ISLITERAL"):
            if v.kind in (_NUM, _BOOL):
                return _Val(_BOOL, F.when(v.col.isNotNull(), F.lit(name == "ISLITERAL")))
            if v.kind in (_DUR, _DT):
                return _Val(_BOOL, F.lit(None).cast("boolean"))
            start = {"ISIRI": "<", "ISURI": "<", "ISBLANK": "_:", "ISLITERAL": '"'}[name]
            return _Val(_BOOL, v.col.startswith(start))
        if name == "ISNUMERIC":
            if v.kind == _NUM:
                return _Val(_BOOL, F.when(v.col.isNotNull(), F.lit(True)))
            if v.kind != _TERM:
                return _Val(_BOOL, F.when(v.col.isNotNull(), F.lit(False)))
            return _Val(_BOOL, F.when(v.col.isNotNull(), _num_of(v).isNotNull()))
        if name == "SAMETERM":
            a, b = _term_of(vals[0]), _term_of(vals[1])
            return _Val(_BOOL, a == b)
        n = _num_of(v)
        finite = ~F.isnan(n) & (F.abs(n) != F.lit(float("inf")))
        if name == "ABS":
            return _Val(_NUM, F.abs(n))
        if name == "CEIL":
            return _Val(_NUM, F.when(finite, F.ceil(n).cast("double")).otherwise(n))
        if name == "FLOOR":
            return _Val(_NUM, F.when(finite, F.floor(n).cast("double")).otherwise(n))
        return _Val(_NUM, F.when(finite, F.floor(n + F.lit(0.5)).cast("double")).otherwise(n))

    def _solution(self, name: str, args, columns) -> _Val:
        """NOW, RAND, UUID, STRUUID, BNODE: ``cep.terms.values.solution_value``, from the row's
        ``solution_seed``; NOW, the instant's term (in a plan keyed by the instant, looked up by
        each row's ``INSTANT``)."""
        from decimal import Decimal

        if name == "NOW":
            def now(at: int) -> str | None:
                return datetime_term(Decimal(at) * Decimal(TIME_UNITS[self.time_unit]) / 1000)

            if isinstance(self.instant, tuple):
                pairs = [x for at in self.instant for x in (F.lit(at).cast("long"), F.lit(now(at)).cast("string"))]
                return _Val(_TERM, F.element_at(F.create_map(*pairs), F.col(INSTANT)))
            term = None if self.instant is None else now(self.instant)
            return _Val(_TERM, F.lit(term).cast("string"))
        seed = solution_seed(columns)

        def salted(salt: int, *more: Column) -> Column:
            return F.xxhash64(seed, F.lit(salt).cast("long"), *more)

        if name == "RAND":
            return _Val(_NUM, F.shiftrightunsigned(salted(SALTS["RAND"]), 11).cast("double") * F.lit(2.0 ** -53))
        if name in ("UUID", "STRUUID"):
            digits = F.concat(*[_hex16(salted(salt)) for salt in SALTS["UUID"]])
            variant = F.element_at(F.array(*[F.lit(c) for c in "89ab"]),
                                   (F.conv(F.substring(digits, 17, 1), 16, 10).cast("int") % 4) + 1)
            text = F.concat(F.substring(digits, 1, 8), F.lit("-"), F.substring(digits, 9, 4), F.lit("-4"),
                            F.substring(digits, 14, 3), F.lit("-"), variant, F.substring(digits, 18, 3), F.lit("-"),
                            F.substring(digits, 21, 12))
            return _Val(_TERM, F.concat(F.lit("<urn:uuid:"), text, F.lit(">")) if name == "UUID"
                        else F.concat(F.lit('"'), text, F.lit('"')))
        if not args:
            return _Val(_TERM, F.concat(F.lit("_:b"), _hex16(salted(SALTS["BNODE"]))))
        lex, lang = _string_parts(self.compile(args[0], columns))
        h = salted(SALTS["BNODE_ARG"], lex)
        return _Val(_TERM, F.when(lex.isNotNull() & (lang == ""), F.concat(F.lit("_:b"), _hex16(h))))

    @staticmethod
    def _integer_argument(arg, v: _Val) -> Column:
        """An xsd:integer argument; a constant one read here (a smaller plan)."""
        if isinstance(arg, A.Const):
            lit = parse_literal(arg.term)
            if lit is None or number_kind(lit[2]) != "integer":
                return F.lit(None).cast("long")
            try:
                return F.lit(int(lit[0])).cast("long")
            except ValueError:
                return F.lit(None).cast("long")
        return _integer_of(v)

    @staticmethod
    def _compare(op: str, a: _Val, b: _Val, temporal_a: bool = True, temporal_b: bool = True) -> Column:
        """§17.3 operator mapping: numeric if both numeric, string if both simple strings, else
        term equality for = / != and an error otherwise. ``temporal_a``/``_b``: whether a side may
        be a duration or a time at all (when not, no column parses it as one: smaller plans)."""
        none = (F.lit(None).cast(_SECONDS), F.lit(None).cast(_SECONDS))
        if temporal_a and temporal_b:
            (dur_a, dt_a), (dur_b, dt_b) = _seconds_of(a), _seconds_of(b)
        else:
            (dur_a, dt_a) = _seconds_of(a) if temporal_a else none
            (dur_b, dt_b) = _seconds_of(b) if temporal_b else none
            if a.kind in (_DUR, _DT) or b.kind in (_DUR, _DT):
                return F.lit(None).cast("boolean")   # a time or duration against what cannot be one
        temporal = (F.when(dur_a.isNotNull() & dur_b.isNotNull(), _cmp(op, dur_a, dur_b))
                    .when(dt_a.isNotNull() & dt_b.isNotNull(), _cmp(op, dt_a, dt_b)))
        if a.kind in (_DUR, _DT) or b.kind in (_DUR, _DT):
            return temporal  # null (an error) unless both are durations or both times
        both_temporal = (dur_a.isNotNull() | dt_a.isNotNull()) & (dur_b.isNotNull() | dt_b.isNotNull())
        na, nb = _num_of(a), _num_of(b)
        ta, tb = _term_of(a), _term_of(b)
        sa, sb = _simple_string(ta), _simple_string(tb)
        if op in ("=", "!="):
            # RDFterm-equal (§17.4.1.7): two different literals it cannot tell apart are an error
            opaque = (_is_literal(ta) & _is_literal(tb) & (ta != tb) & (_lang(ta) == "") & (_lang(tb) == "")
                      & ~(_understood(ta, dur_a, dt_a) & _understood(tb, dur_b, dt_b)))
            fallback = F.when(~opaque, _cmp(op, ta, tb))
        else:
            fallback = F.lit(None).cast("boolean")
        ea, eb = _exact_of(a), _exact_of(b)
        # exact when both are integers / decimals; NaN: unequal to everything (IEEE 754; Spark SQL
        # orders NaN above every double and equal to itself)
        numeric = (F.when(ea.isNotNull() & eb.isNotNull(), _cmp(op, ea, eb))
                   .when(F.isnan(na) | F.isnan(nb), F.lit(op == "!="))
                   .otherwise(_cmp(op, na, nb)))
        return (F.when(both_temporal, temporal)
                .when(na.isNotNull() & nb.isNotNull(), numeric)
                .when(sa.isNotNull() & sb.isNotNull(), _cmp(op, sa, sb))
                .otherwise(fallback))
