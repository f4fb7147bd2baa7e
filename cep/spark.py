"""Evaluation of a CQELS-CEP query at a time t on Spark (CQELS-CEP §4.3, equations (1)-(17)).

``evaluate(query, background, streams, at=t)`` walks the algebra (``cep.algebra``) and builds one
Spark plan of the operators of ``cep.intervals``; ``cep.reference.evaluate`` is the same walk in
pure Python (the oracle).

* ``Project`` / ``Construct`` (eq. 1): the result mappings restricted to the projected variables.
  Results are sets, as the paper's eq. (1) (``{<μ|V, [t1,t2]> | ...}``): ``SELECT`` and
  ``SELECT DISTINCT`` both return distinct (mapping, interval) rows.
* ``Join`` / ``Union`` / ``Sequence`` / ``SeqWithout`` / ``NoHead`` / ``NoTail``: the operators
  JOIN, OR, SEQ, SEQ_WO, NO_HEAD, NO_TAIL(·, ·, t) of §4.2 (eq. 2-8, 10-15). Sequences arrive
  already right-associated and with the negated element placed by ``cep.algebra.sequence``.
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
* ``Filter``: SPARQL 1.1 §17 on ids — see ``_Filter`` below: equality of a
  variable with an IRI/blank constant compares ids; everything else decodes the needed columns
  through the dictionary (a join), compares numerically when both sides are numeric literals
  (xsd:integer, decimal, double, float and the derived integer types; the lexical form parsed as a
  double), as strings when both are simple/xsd:string literals, else by term (= / != only);
  REGEX / STR / LANG / DATATYPE / BOUND, arithmetic with errors as nulls. No Python UDFs.
* Background graphs are looked up by the IRI of ``Background.graph`` (``FROM <g>``); when that IRI
  was not given but a default graph (key ``None``) was, the default graph is used (a caller that
  loads the FROM file passes it as the default graph).

Time: ``at`` and the stream's ``t_start``/``t_end`` are integers in ``time_unit`` ticks; window
durations are converted with ``Duration.ticks(time_unit)``.
"""
from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cep import algebra as A
from cep import intervals as I
from cep.columns import ITEM, T_END, T_START, scratch, var_column, var_columns
from reasoner.hashing import term_id
from reasoner.schema import DICTIONARY, ID, INFERRED, O, P, S, TERM, require_columns

__all__ = ["evaluate", "window", "MIN_TIME"]

MIN_TIME = I.MIN_TIME

_XSD = "http://www.w3.org/2001/XMLSchema#"
_NUMERIC = tuple(f"{_XSD}{n}" for n in (
    "integer", "decimal", "double", "float", "int", "long", "short", "byte", "nonNegativeInteger",
    "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedLong", "unsignedInt",
    "unsignedShort", "unsignedByte"))
_XSD_STRING = _XSD + "string"
_XSD_BOOLEAN = _XSD + "boolean"
_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
# an N-Triples literal: lexical form (escaped), then @lang or ^^<datatype> (Java regex)
_LITERAL_RE = r'(?s)^"(.*)"(?:@([A-Za-z0-9-]+)|\^\^<([^>]*)>)?$'


def evaluate(query, background, streams: Mapping, at: int, time_unit: str = "ms", *,
             dictionary: DataFrame | None = None, since=None, prefixes=None) -> DataFrame:
    """⟦Q, t⟧ (eq. 1) as a DataFrame.

    ``query``: query text (compiled with ``cep.compile_query``) or a ``cep.algebra.Query``.
    ``background``: {graph IRI term or None (default graph): DataFrame (s, p, o) of ids}, or a
    ``reasoner.store.Materialized`` (the default graph = its ``inferred`` table; paths may probe
    its closure tables; its dictionary decodes FILTER values).
    ``streams``: {stream IRI term: DataFrame (item, s, p, o, t_start, t_end) of ids}.
    ``dictionary``: a DataFrame (id, term) covering the terms FILTER expressions look at (needed
    only by filters that inspect values; unioned with a store's dictionary).
    ``since``: the time since which the background is unchanged (int, or {graph: int});
    default ``MIN_TIME``.

    Returns one long column per projected variable (``cep.columns.var_column(name)``) plus
    ``T_START``, ``T_END``; a CONSTRUCT returns (s, p, o, t_start, t_end).
    """
    if isinstance(query, str):
        from cep.lower import compile_query
        query = compile_query(query, prefixes)
    if not isinstance(query, A.Query):
        raise TypeError(f"evaluate() needs query text or a cep.algebra.Query, got {type(query).__name__}")
    return _Runtime(background, streams, int(at), time_unit, dictionary, since).query(query)


def window(stream: DataFrame, spec, t: int, time_unit: str = "ms") -> DataFrame:
    """The content of window ``spec`` (a ``cep.algebra`` window) over ``stream`` at time t
    (report policies: see ``cep.intervals``)."""
    if isinstance(spec, A.Now):
        return I.w_now(stream, t)
    if isinstance(spec, A.All):
        return I.w_all(stream, t)
    if isinstance(spec, A.Triples):
        return I.w_triples(stream, t, spec.n)
    if isinstance(spec, A.Range):
        T = spec.range.ticks(time_unit)
        if spec.step is None and not spec.tumbling:
            return I.w_range(stream, t, T)
        return I.w_step(stream, t, T, spec.step_ticks(time_unit))
    raise TypeError(f"unknown window {spec!r}")


class _Runtime:
    def __init__(self, background, streams, at, time_unit, dictionary, since):
        from reasoner.store import Materialized

        self.store = None
        dictionaries = [dictionary] if dictionary is not None else []
        if isinstance(background, Materialized):
            self.store = background
            dictionaries.append(background.table(DICTIONARY))
            background = {None: background.table(INFERRED)}
        self.background = dict(background or {})
        self.streams = dict(streams or {})
        self.at, self.unit = at, time_unit
        self.since = since
        self.dictionaries = dictionaries
        frames = list(self.background.values()) + list(self.streams.values()) + dictionaries
        if not frames:
            raise ValueError("evaluate() needs at least one background graph or stream (a DataFrame)")
        self.spark = frames[0].sparkSession

    # --- query forms (eq. 1) -------------------------------------------------------------------
    def query(self, query: A.Query) -> DataFrame:
        form = query.form
        omega = self.eval(form.inner, None)
        if isinstance(form, A.Project):
            present = set(var_columns(omega))
            cols = []
            for v in form.variables:
                c = var_column(v.name)
                cols.append(F.col(c) if c in present else F.lit(None).cast("long").alias(c))
            return omega.select(*cols, T_START, T_END).distinct()
        if isinstance(form, A.Construct):
            parts = []
            for tp in form.template:
                cols = []
                for part, name in ((tp.s, S), (tp.p, P), (tp.o, O)):
                    if isinstance(part, A.Var):
                        c = var_column(part.name)
                        col = F.col(c) if c in omega.columns else F.lit(None).cast("long")
                    elif part.startswith("_:"):
                        raise NotImplementedError(
                            f"CONSTRUCT template blank node {part}: fresh blank nodes per solution "
                            f"are not supported (their terms would be missing from the dictionary)")
                    else:
                        col = F.lit(term_id(part))
                    cols.append(col.alias(name))
                parts.append(omega.select(*cols, T_START, T_END).dropna(subset=[S, P, O]))
            out = parts[0]
            for part in parts[1:]:
                out = out.unionByName(part)
            return out.distinct()
        raise TypeError(f"not a query form: {form!r}")

    # --- patterns ------------------------------------------------------------------------------
    def eval(self, node, items: DataFrame | None) -> DataFrame:
        """⟦node, t⟧; ``items`` is the window content while inside a StreamPattern."""
        if isinstance(node, A.StreamPattern):                                      # eq. 9, 16
            if node.stream not in self.streams:
                raise KeyError(f"no stream {node.stream} was given; streams: {sorted(self.streams)}")
            stream = self.streams[node.stream]
            require_columns(stream, I.STREAM_COLUMNS, f"stream {node.stream}")
            return self.eval(node.pattern, window(stream, node.window, self.at, self.unit))
        if isinstance(node, A.Background):                                         # eq. 17
            return self.background_pattern(node)
        if isinstance(node, A.BGP):
            if items is None:
                raise ValueError(f"basic graph pattern {node} is neither in a WINDOW nor in the background")
            return _bgp_in_items(node, items)
        if isinstance(node, A.Join):
            return I.join(self.eval(node.left, items), self.eval(node.right, items))
        if isinstance(node, A.Union):
            return I.union(self.eval(node.left, items), self.eval(node.right, items))
        if isinstance(node, A.Sequence):
            return I.seq(self.eval(node.left, items), self.eval(node.right, items))
        if isinstance(node, A.SeqWithout):
            return I.seq_wo(self.eval(node.left, items), self.eval(node.negated, items),
                            self.eval(node.right, items))
        if isinstance(node, A.NoHead):
            return I.no_head(self.eval(node.negated, items), self.eval(node.right, items))
        if isinstance(node, A.NoTail):
            return I.no_tail(self.eval(node.left, items), self.eval(node.negated, items), self.at)
        if isinstance(node, A.Filter):
            return self.filter(node.condition, self.eval(node.inner, items))
        if isinstance(node, A.LeftJoin):
            keep = None if node.condition is None else (lambda df, c=node.condition: self.filter(c, df))
            return I.left_join(self.eval(node.left, items), self.eval(node.right, items), keep)
        raise TypeError(f"cannot evaluate {type(node).__name__}")

    def filter(self, condition, omega: DataFrame) -> DataFrame:
        return _Filter(self, condition).apply(omega)

    # --- background (eq. 17) -------------------------------------------------------------------
    def graph(self, name) -> DataFrame:
        if name not in self.background and name is not None and None in self.background:
            name = None  # FROM <g> names the default graph's source; the caller loaded it as default
        if name not in self.background:
            shown = ", ".join("default" if g is None else g for g in self.background) or "none"
            raise KeyError(f"no background graph {'default' if name is None else name} was given; graphs: {shown}")
        g = self.background[name]
        require_columns(g, (S, P, O), f"background graph {name}")
        return g

    def since_for(self, name) -> int:
        if self.since is None:
            return MIN_TIME
        if isinstance(self.since, Mapping):
            return int(self.since.get(name, MIN_TIME))
        return int(self.since)

    def background_pattern(self, node: A.Background) -> DataFrame:
        triples = self.graph(node.graph)
        interval = (self.since_for(node.graph), self.at)
        return self.static(node.pattern, node.graph, triples, interval)

    def static(self, node, name, triples: DataFrame, interval) -> DataFrame:
        """SPARQL over the static graph; every mapping gets the same interval, so the interval
        operators reduce to the plain SPARQL ones."""
        if isinstance(node, A.BGP):
            return self.static_bgp(node, name, triples, interval)
        if isinstance(node, A.Join):
            return I.join(self.static(node.left, name, triples, interval),
                          self.static(node.right, name, triples, interval))
        if isinstance(node, A.Union):
            return I.union(self.static(node.left, name, triples, interval),
                           self.static(node.right, name, triples, interval))
        if isinstance(node, A.LeftJoin):
            keep = None if node.condition is None else (lambda df, c=node.condition: self.filter(c, df))
            return I.left_join(self.static(node.left, name, triples, interval),
                               self.static(node.right, name, triples, interval), keep)
        if isinstance(node, A.Filter):
            return self.filter(node.condition, self.static(node.inner, name, triples, interval))
        raise TypeError(f"{type(node).__name__} cannot occur in a background pattern")

    def static_bgp(self, node: A.BGP, name, triples: DataFrame, interval) -> DataFrame:
        parts = []
        for tp in node.patterns:
            if isinstance(tp, A.PathPattern):
                parts.append(self.path_part(tp, name, triples))
            else:
                parts.append(_triple_part(tp, triples, ()))
        lo, hi = interval
        if not parts:
            out = self.spark.range(1).select()
        else:
            out = parts[0]
            for part in parts[1:]:
                shared = sorted(set(var_columns(out)) & set(var_columns(part)))
                out = out.join(part, shared, "inner") if shared else out.crossJoin(part)
        return I.canonical(out.select(*var_columns(out), F.lit(lo).cast("long").alias(T_START),
                                      F.lit(hi).cast("long").alias(T_END))).distinct()

    def path_part(self, tp: A.PathPattern, name, triples: DataFrame) -> DataFrame:
        from paths.spark import END, START, PathGraph
        from paths.spark import evaluate as path_evaluate

        if self.store is not None and name is None:
            graph = PathGraph(triples, closures=self.store)
        else:
            graph = PathGraph(triples)
        s_var, o_var = isinstance(tp.s, A.Var), isinstance(tp.o, A.Var)
        pairs = path_evaluate(graph, tp.path, start=None if s_var else tp.s, end=None if o_var else tp.o)
        cols = []
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
        return out.select(*[_non_null(c).alias(c) for c in var_columns(out)]).distinct()


def _all_not_null(columns) -> Column:
    cond = F.lit(True)
    for c in columns:
        cond = cond & F.col(c).isNotNull()
    return cond


def _triple_part(tp: A.TriplePattern, triples: DataFrame, keep: tuple[str, ...]) -> DataFrame:
    """The matches of one triple pattern: constants compared by id, a repeated variable compared
    within the triple, one column per variable (filtered not null and marked non-nullable, see
    ``_non_null``, so later joins on it are plain equi-joins); ``keep``: extra columns kept."""
    cond = F.lit(True)
    first: dict[str, str] = {}
    for part, column in ((tp.s, S), (tp.p, P), (tp.o, O)):
        if isinstance(part, A.Var):
            if part.name in first:
                cond = cond & (F.col(column) == F.col(first[part.name]))
            else:
                first[part.name] = column
                cond = cond & F.col(column).isNotNull()
        else:
            cond = cond & (F.col(column) == F.lit(term_id(part)))
    cols = [_non_null(column).alias(var_column(name)) for name, column in first.items()]
    return triples.filter(cond).select(*keep, *cols)


def _non_null(column: str) -> Column:
    """``column`` after a ``isNotNull`` filter, marked non-nullable in the DataFrame's schema.

    Spark clears the nullable flag of a filtered column only in the physical plan; the coalesce
    (whose default is never taken: the rows with a null are gone) clears it in the schema, which
    is what ``cep.intervals`` reads to join on plain equality (a hash/sort-merge key) instead of
    the null-aware compatibility test.
    """
    return F.coalesce(F.col(column), F.lit(0).cast("long"))


def _bgp_in_items(node: A.BGP, items: DataFrame) -> DataFrame:
    """eq. 16: {<μ, [t1,t2]> | dom(μ) = var(P), μ(P) ⊆ g, <g, [t1,t2]> in the window}: the triple
    patterns are joined on the stream item (and its interval) and their shared variables."""
    key = (ITEM, T_START, T_END)
    if not node.patterns:
        return items.select(T_START, T_END).distinct()
    out = None
    for tp in node.patterns:
        if isinstance(tp, A.PathPattern):
            raise NotImplementedError(
                f"property path {tp} inside a WINDOW: paths are evaluated on background graphs only")
        part = _triple_part(tp, items, key)
        if out is None:
            out = part
        else:
            shared = sorted(set(var_columns(out)) & set(var_columns(part)))
            out = out.join(part, list(key) + shared, "inner")
    return I.canonical(out).distinct()


# ---------------------------------------------------------------------------------------------
# FILTER expressions (SPARQL 1.1 §17) compiled to Spark columns

class _Val:
    """A compiled expression value: ``kind`` is "term" (an N-Triples string column), "num" (a
    double column, from arithmetic) or "bool"; null = unbound or a type error (SPARQL's error)."""

    def __init__(self, kind: str, col: Column):
        self.kind, self.col = kind, col


def _lexical_raw(term: Column) -> Column:
    return F.regexp_extract(term, _LITERAL_RE, 1)


def _unescape(raw: Column) -> Column:
    """N-Triples escapes \\" \\\\ \\n \\r \\t \\b \\f \\' undone (\\uXXXX kept as written)."""
    out = F.regexp_replace(raw, r"\\\\", "\u0000")
    for esc, char in (('"', '"'), ("n", "\n"), ("r", "\r"), ("t", "\t"), ("b", "\b"), ("f", "\f"), ("'", "'")):
        out = F.regexp_replace(out, r"\\" + esc, char.replace("\\", "\\\\").replace("$", "\\$"))
    return F.regexp_replace(out, "\u0000", r"\\")


def _is_literal(term: Column) -> Column:
    return term.rlike(_LITERAL_RE)


def _lexical(term: Column) -> Column:
    return F.when(_is_literal(term), _unescape(_lexical_raw(term)))


def _lang(term: Column) -> Column:
    return F.when(_is_literal(term), F.regexp_extract(term, _LITERAL_RE, 2))


def _datatype(term: Column) -> Column:
    lang = F.regexp_extract(term, _LITERAL_RE, 2)
    dt = F.regexp_extract(term, _LITERAL_RE, 3)
    return (F.when(~_is_literal(term), F.lit(None).cast("string"))
            .when(lang != "", F.lit(_LANGSTRING)).when(dt != "", dt).otherwise(F.lit(_XSD_STRING)))


def _num_of(v: _Val) -> Column:
    if v.kind == "num":
        return v.col
    if v.kind == "bool":
        return F.lit(None).cast("double")
    return F.when(_datatype(v.col).isin(*_NUMERIC), _lexical(v.col).try_cast("double"))


def _term_of(v: _Val) -> Column:
    if v.kind == "term":
        return v.col
    if v.kind == "bool":
        return (F.when(v.col, F.lit(f'"true"^^<{_XSD_BOOLEAN}>'))
                .when(~v.col, F.lit(f'"false"^^<{_XSD_BOOLEAN}>')))
    return F.lit(None).cast("string")  # a computed number has no canonical term (compared numerically)


def _simple_string(term: Column) -> Column:
    return F.when(_datatype(term) == _XSD_STRING, _lexical(term))


def _ebv(v: _Val) -> Column:
    """Effective boolean value (§17.2.2); null = error."""
    if v.kind == "bool":
        return v.col
    if v.kind == "num":
        return (v.col != 0) & ~F.isnan(v.col)
    dt, lex = _datatype(v.col), _lexical(v.col)
    num = lex.try_cast("double")
    return (F.when(dt == _XSD_BOOLEAN, lex.isin("true", "1"))
            .when(dt.isin(*_NUMERIC), F.coalesce((num != 0) & ~F.isnan(num), F.lit(False)))
            .when(dt == _XSD_STRING, lex != ""))


def _cmp(op: str, a: Column, b: Column) -> Column:
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


class _Filter:
    """One FILTER condition over a DataFrame of mappings (extra columns are kept)."""

    def __init__(self, runtime: _Runtime, condition):
        self.runtime, self.condition = runtime, condition
        self.decoded: dict[str, str] = {}  # variable column -> scratch column of its term

    def apply(self, omega: DataFrame) -> DataFrame:
        needed = sorted(self._needs_terms(self.condition))
        df = omega
        if needed:
            dictionary = self._dictionary()
            for c in needed:
                term_col = scratch("term", c)
                self.decoded[c] = term_col
                if c not in omega.columns:
                    df = df.withColumn(term_col, F.lit(None).cast("string"))
                    continue
                lookup = dictionary.select(F.col(ID).alias(scratch("id", c)), F.col(TERM).alias(term_col))
                df = df.join(lookup, df[c] == lookup[scratch("id", c)], "left").drop(scratch("id", c))
        keep = _ebv(self.compile(self.condition, df.columns))
        return df.filter(keep).select(*omega.columns)

    def _dictionary(self) -> DataFrame:
        dicts = self.runtime.dictionaries
        if not dicts:
            raise ValueError(f"FILTER {self.condition} needs term values but evaluate() got no dictionary "
                             f"(pass dictionary=DataFrame(id, term) or a reasoner store as background)")
        out = dicts[0].select(ID, TERM)
        for d in dicts[1:]:
            out = out.unionByName(d.select(ID, TERM))
        return out.distinct()

    @staticmethod
    def _id_compare(e) -> tuple | None:
        """(variable, constant) when ``e`` is ?v = / != an IRI or blank constant: compared by id."""
        if isinstance(e, A.Compare) and e.op in ("=", "!="):
            for v, c in ((e.left, e.right), (e.right, e.left)):
                if isinstance(v, A.Var) and isinstance(c, A.Const) and not c.term.startswith('"'):
                    return v, c
        return None

    def _needs_terms(self, e) -> set[str]:
        if isinstance(e, A.Var):
            return {var_column(e.name)}
        if isinstance(e, (A.Const, A.Bound)):
            return set()
        if self._id_compare(e) is not None:
            return set()
        out: set[str] = set()
        for child in (getattr(e, f, None) for f in ("left", "right", "expr", "text", "pattern", "flags")):
            if child is not None:
                out |= self._needs_terms(child)
        return out

    def compile(self, e, columns) -> _Val:
        if isinstance(e, A.Var):
            return _Val("term", F.col(self.decoded[var_column(e.name)]))
        if isinstance(e, A.Const):
            return _Val("term", F.lit(e.term))
        if isinstance(e, A.Bound):
            c = var_column(e.var.name)
            return _Val("bool", F.col(c).isNotNull() if c in columns else F.lit(False))
        pair = self._id_compare(e)
        if pair is not None:
            v, c = pair
            col = var_column(v.name)
            ids = F.col(col) if col in columns else F.lit(None).cast("long")
            same = ids == F.lit(term_id(c.term))
            return _Val("bool", same if e.op == "=" else ~same)
        if isinstance(e, A.Not):
            return _Val("bool", ~_ebv(self.compile(e.expr, columns)))
        if isinstance(e, A.And):
            return _Val("bool", _ebv(self.compile(e.left, columns)) & _ebv(self.compile(e.right, columns)))
        if isinstance(e, A.Or):
            return _Val("bool", _ebv(self.compile(e.left, columns)) | _ebv(self.compile(e.right, columns)))
        if isinstance(e, A.Neg):
            return _Val("num", -_num_of(self.compile(e.expr, columns)))
        if isinstance(e, A.Arith):
            a, b = _num_of(self.compile(e.left, columns)), _num_of(self.compile(e.right, columns))
            fn = {"+": F.try_add, "-": F.try_subtract, "*": F.try_multiply, "/": F.try_divide}[e.op]
            return _Val("num", fn(a, b))
        if isinstance(e, A.Compare):
            a, b = self.compile(e.left, columns), self.compile(e.right, columns)
            na, nb = _num_of(a), _num_of(b)
            ta, tb = _term_of(a), _term_of(b)
            sa, sb = _simple_string(ta), _simple_string(tb)
            if e.op in ("=", "!="):
                fallback = _cmp(e.op, ta, tb)
            else:
                fallback = F.lit(None).cast("boolean")
            return _Val("bool", F.when(na.isNotNull() & nb.isNotNull(), _cmp(e.op, na, nb))
                        .when(sa.isNotNull() & sb.isNotNull(), _cmp(e.op, sa, sb))
                        .otherwise(fallback))
        if isinstance(e, A.Str):
            t = _term_of(self.compile(e.expr, columns))
            inner = F.regexp_replace(F.regexp_replace(F.regexp_extract(t, r"^<(.*)>$", 1), r"\\", r"\\\\"),
                                     '"', r'\\"')
            return _Val("term", F.when(t.startswith("<"), F.concat(F.lit('"'), inner, F.lit('"')))
                        .when(_is_literal(t), F.concat(F.lit('"'), _lexical_raw(t), F.lit('"'))))
        if isinstance(e, A.Lang):
            t = _term_of(self.compile(e.expr, columns))
            return _Val("term", F.when(_is_literal(t), F.concat(F.lit('"'), _lang(t), F.lit('"'))))
        if isinstance(e, A.Datatype):
            t = _term_of(self.compile(e.expr, columns))
            return _Val("term", F.when(_is_literal(t), F.concat(F.lit("<"), _datatype(t), F.lit(">"))))
        if isinstance(e, A.Regex):
            text = _lexical(_term_of(self.compile(e.text, columns)))
            pattern = self._constant_string(e.pattern, "pattern")
            flags = self._constant_string(e.flags, "flags") if e.flags is not None else ""
            prefix = "".join(f"(?{f})" for f in flags if f in "imsx")
            return _Val("bool", text.rlike(prefix + pattern))
        raise TypeError(f"unknown expression {e!r}")

    def _constant_string(self, e, what: str) -> str:
        from cep.reference import parse_literal

        lit = parse_literal(e.term) if isinstance(e, A.Const) else None
        if lit is None:
            raise NotImplementedError(f"REGEX {what} must be a constant string literal, got {e}")
        return lit[0]
