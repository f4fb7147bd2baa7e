"""Reference evaluator: the CQELS-CEP semantics (§4) written out literally, in pure Python.

The oracle for the Spark runtime (``cep.intervals``, ``cep.spark.evaluate``) in differential tests;
small inputs only (every operator is a nested loop over sets).

* A *mapping* is a ``frozenset`` of ``(variable name, term)`` pairs (terms: N-Triples strings, or
  any hashable value in operator tests); an unbound variable is simply absent.
* A *mapping with interval* ``<μ, [t1, t2]>`` is the tuple ``(μ, t1, t2)``; the operators take
  and return sets of them (set semantics, as the paper).
* A stream is a list of items ``(item, g, t1, t2)``: ``g`` a frozenset of triples ``(s, p, o)``.

Operators (§4.2; DESIGN.md "Operators"), equation numbers of the paper in brackets:

* ``join``   JOIN(Ω1, Ω2) = {<μ1 ∪ μ2, [max(t1,t3), min(t2,t4)]> | μ1 ~ μ2, max(t1,t3) ≤ min(t2,t4)}
* ``union``  OR(Ω1, Ω2) = Ω1 ∪ Ω2
* ``seq``    SEQ(Ω1, Ω2) = {<μ1 ∪ μ2, [t1, t4]> | μ1 ~ μ2, t2 < t3}
* ``seq_wo`` SEQ_WO(Ω1, Ω2, Ω3) = {<μ1 ∪ μ3, [t1, t6]> | <μ1,[t1,t2]> ∈ Ω1, <μ3,[t5,t6]> ∈ Ω3,
  μ1 ~ μ3, t2 < t5, ∄<μ2,[t3,t4]> ∈ Ω2: μ2 ~ μ1 ∪ μ3, [t3,t4] ⊆ [t2,t5]} (the paper's μ1 ∪ μ2 /
  μ1 ~ μ2 in the head are typos for μ3, DESIGN.md)
* ``no_head`` NO_HEAD(Ω1, Ω2) = {<μ2,[t3,t4]> ∈ Ω2 | ∄<μ1,[t1,t2]> ∈ Ω1: μ1 ~ μ2, t2 < t3}
* ``no_tail`` NO_TAIL(Ω1, Ω2, t) = {<μ1,[t1,t2]> ∈ Ω1 | ∄<μ2,[t3,t4]> ∈ Ω2: μ1 ~ μ2, t2 < t3, t4 ≤ t}
* ``w_range`` the window function of §4.1 (see its comment); ``w_now``, ``w_all``, ``w_triples``,
  ``w_step`` the other windows (report policies documented in ``cep.intervals``).

``evaluate`` walks the cep algebra (``cep.algebra``) with these operators: equations (1)-(17).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping as TMapping
from typing import Any

from cep.literals import (LITERAL_RE, NUMERIC_DATATYPES, XSD_BOOLEAN, XSD_STRING, numeric_value,
                          parse_literal)
from cep.timeline import MIN_TIME, close_instant

__all__ = [
    "Mapping", "Element", "Item", "MIN_TIME",
    "mapping", "compatible", "merge",
    "join", "union", "seq", "seq_wo", "no_head", "no_tail",
    "w_range", "w_now", "w_all", "w_triples", "w_step", "close_instant",
    "match_bgp_in_items", "evaluate",
]

Mapping = frozenset  # of (variable, term) pairs
Element = tuple  # (Mapping, t1, t2)
Item = tuple  # (item, frozenset of triples, t1, t2)



def mapping(**bindings: Any) -> frozenset:
    """``mapping(v="a1", s="m")``; a ``None`` value leaves the variable unbound."""
    return frozenset((k, v) for k, v in bindings.items() if v is not None)


def compatible(m1: frozenset, m2: frozenset) -> bool:
    """μ1 ~ μ2: they agree on every variable bound in both (an unbound variable is compatible)."""
    d1 = dict(m1)
    return all(d1.get(k, v) == v for k, v in m2)


def merge(m1: frozenset, m2: frozenset) -> frozenset:
    """μ1 ∪ μ2 (of compatible mappings)."""
    return frozenset(m1 | m2)


# ---------------------------------------------------------------------------------------------
# operators on sets of mappings with intervals (§4.2)

def join(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """JOIN: interval intersection (not EP-SPARQL's cover)."""
    o2 = list(o2)
    return {(merge(m1, m2), max(t1, t3), min(t2, t4))
            for (m1, t1, t2) in o1 for (m2, t3, t4) in o2
            if compatible(m1, m2) and max(t1, t3) <= min(t2, t4)}


def union(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """OR."""
    return set(o1) | set(o2)


def seq(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """SEQ (eq. 4, 11)."""
    o2 = list(o2)
    return {(merge(m1, m2), t1, t4)
            for (m1, t1, t2) in o1 for (m2, t3, t4) in o2
            if compatible(m1, m2) and t2 < t3}


def seq_wo(o1: Iterable[Element], o2: Iterable[Element], o3: Iterable[Element]) -> set[Element]:
    """SEQ_WO (eq. 8, 15), the head's typos fixed (μ1 ∪ μ3; negation compatible with μ1 ∪ μ3)."""
    o2, o3 = list(o2), list(o3)
    out = set()
    for (m1, t1, t2) in o1:
        for (m3, t5, t6) in o3:
            if not (compatible(m1, m3) and t2 < t5):
                continue
            m13 = merge(m1, m3)
            if any(compatible(m2, m13) and t2 <= t3 and t4 <= t5 for (m2, t3, t4) in o2):
                continue
            out.add((m13, t1, t6))
    return out


def no_head(o1: Iterable[Element], o2: Iterable[Element]) -> set[Element]:
    """NO_HEAD(Ω1, Ω2): the elements of Ω2 with no compatible Ω1 element ending before them (eq. 6, 13)."""
    o1 = list(o1)
    return {(m2, t3, t4) for (m2, t3, t4) in o2
            if not any(compatible(m1, m2) and t2 < t3 for (m1, t1, t2) in o1)}


def no_tail(o1: Iterable[Element], o2: Iterable[Element], t: int) -> set[Element]:
    """NO_TAIL(Ω1, Ω2, t): elements of Ω1 with no compatible Ω2 element after them, ended by t (eq. 7, 14)."""
    o2 = list(o2)
    return {(m1, t1, t2) for (m1, t1, t2) in o1
            if not any(compatible(m1, m2) and t2 < t3 and t4 <= t for (m2, t3, t4) in o2)}


# ---------------------------------------------------------------------------------------------
# windows (§4.1)

def w_range(stream: Iterable[Item], t: int, T: int) -> list[Item]:
    """w_RANGE(S, t, T) = {<g, [max(t1, t−T), min(t2, t)]> | <g, [t1, t2]> ∈ S, t1 ≤ t, t2 ≥ t−T}.

    (the clipping of t1 is our reading of a garbled formula — DESIGN.md "Window")
    """
    return [(item, g, max(t1, t - T), min(t2, t)) for (item, g, t1, t2) in stream
            if t1 <= t and t2 >= t - T]


def w_now(stream: Iterable[Item], t: int) -> list[Item]:
    """NOW = w_RANGE(S, t, 0): the items valid at t, with interval [t, t]."""
    return w_range(stream, t, 0)


def w_all(stream: Iterable[Item], t: int) -> list[Item]:
    """ALL (landmark) = w_RANGE(S, t, ∞): every item started by t, t2 clipped to t."""
    return [(item, g, t1, min(t2, t)) for (item, g, t1, t2) in stream if t1 <= t]


def w_triples(stream: Iterable[Item], t: int, n: int) -> list[Item]:
    """TRIPLES n: the last n triples started by t, clipped like ALL.

    "Last" orders triples by (t1, min(t2, t), item, s, p, o) descending — the ties are broken by the
    ids in the Spark runtime; here the differential tests use distinct times or n covering ties.
    """
    rows = [(t1, min(t2, t), item, tr) for (item, g, t1, t2) in stream if t1 <= t for tr in g]
    rows.sort(key=lambda r: (r[0], r[1], r[2], r[3]), reverse=True)
    kept: dict[Any, set] = {}
    times: dict[Any, tuple[int, int]] = {}
    for (t1, t2, item, tr) in rows[:max(n, 0)]:
        kept.setdefault(item, set()).add(tr)
        times[item] = (t1, t2)
    return [(item, frozenset(g), *times[item]) for item, g in kept.items()]


def w_step(stream: Iterable[Item], t: int, T: int, step: int) -> list[Item]:
    """RANGE T STEP s (TUMBLING: s = T), C-SPARQL report policy: at t the content is the last
    closed window, w_RANGE(S, c, T) with c = close_instant(t, s)."""
    return w_range(stream, close_instant(t, step), T)


# ---------------------------------------------------------------------------------------------
# the algebra (§4.3), walked with the operators above

def match_bgp_in_items(patterns, items: Iterable[Item], is_var) -> set[Element]:
    """eq. 16: {<μ, [t1, t2]> | dom(μ) = var(P), μ(P) ⊆ g, <g, [t1, t2]> in the window}."""
    out = set()
    for (_item, g, t1, t2) in items:
        for mu in _match_triples(patterns, g, is_var):
            out.add((mu, t1, t2))
    return out


def _match_triples(patterns, graph, is_var) -> list[frozenset]:
    """Solutions of a list of triple patterns (s, p, o) over a set of triples."""
    sols: list[dict] = [{}]
    for pattern in patterns:
        nxt = []
        for sol in sols:
            for triple in graph:
                ext = dict(sol)
                ok = True
                for part, value in zip(pattern, triple):
                    if is_var(part):
                        name = part.name
                        if ext.get(name, value) != value:
                            ok = False
                            break
                        ext[name] = value
                    elif part != value:
                        ok = False
                        break
                if ok:
                    nxt.append(ext)
        sols = nxt
    return [frozenset(s.items()) for s in sols]


def evaluate(query, background: TMapping, streams: TMapping, at: int, time_unit: str = "ms") -> set:
    """The answer of a cep algebra ``Query`` at time ``at`` (eq. 1).

    ``background``: {graph IRI or None: iterable of (s, p, o) N-Triples strings};
    ``streams``: {stream IRI: list of items ``(item, frozenset of triples, t1, t2)``}.
    Returns a set of ``(mapping, t1, t2)`` for SELECT (mapping restricted to the projected
    variables) or of ``((s, p, o), t1, t2)`` for CONSTRUCT.
    """
    from cep import algebra as A  # the front end (C1); imported lazily: operators need no algebra

    evaluator = _Evaluator(A, {g: set(ts) for g, ts in background.items()}, streams, at, time_unit)
    return evaluator.query(query)


class _Evaluator:
    def __init__(self, A, background, streams, at, time_unit):
        self.A, self.background, self.streams, self.at, self.unit = A, background, streams, at, time_unit

    def is_var(self, x) -> bool:
        return isinstance(x, self.A.Var)

    def query(self, query):
        A = self.A
        form = query.form if isinstance(query, A.Query) else query
        if isinstance(form, A.Project):
            names = [v.name for v in form.variables]
            omega = self.eval(form.inner, None)
            return {(frozenset((k, v) for k, v in mu if k in names), t1, t2) for (mu, t1, t2) in omega}
        if isinstance(form, A.Construct):
            omega = self.eval(form.inner, None)
            out = set()
            for (mu, t1, t2) in omega:
                d = dict(mu)
                for tp in form.template:
                    triple = tuple(d.get(x.name) if self.is_var(x) else x for x in (tp.s, tp.p, tp.o))
                    if None not in triple:
                        out.add((triple, t1, t2))
            return out
        raise TypeError(f"not a query form: {type(form).__name__}")

    # ``items`` is None outside a window, else the window content the stream pattern matches in
    def eval(self, node, items):
        A = self.A
        if isinstance(node, A.StreamPattern):
            return self.eval(node.pattern, self.window(node))
        if isinstance(node, A.Background):
            graph = self.graph(node.graph)
            return {(mu, MIN_TIME, self.at) for mu in self.static(node.pattern, graph)}
        if isinstance(node, A.BGP):
            if items is None:
                raise ValueError("a basic graph pattern outside WINDOW and background")
            return match_bgp_in_items([(tp.s, tp.p, tp.o) for tp in node.patterns], items, self.is_var)
        if isinstance(node, A.Join):
            return join(self.eval(node.left, items), self.eval(node.right, items))
        if isinstance(node, A.Union):
            return union(self.eval(node.left, items), self.eval(node.right, items))
        if isinstance(node, A.Sequence):
            return seq(self.eval(node.left, items), self.eval(node.right, items))
        if isinstance(node, A.SeqWithout):
            return seq_wo(self.eval(node.left, items), self.eval(node.negated, items), self.eval(node.right, items))
        if isinstance(node, A.NoHead):
            return no_head(self.eval(node.negated, items), self.eval(node.right, items))
        if isinstance(node, A.NoTail):
            return no_tail(self.eval(node.left, items), self.eval(node.negated, items), self.at)
        if isinstance(node, A.Filter):
            return {(mu, t1, t2) for (mu, t1, t2) in self.eval(node.inner, items)
                    if ebv(eval_expr(A, node.condition, dict(mu))) is True}
        if isinstance(node, A.LeftJoin):
            return self.left_join(self.eval(node.left, items), self.eval(node.right, items), node.condition)
        raise TypeError(f"cannot evaluate {type(node).__name__} here")

    def left_join(self, o1, o2, condition):
        o2 = list(o2)
        out = set()
        for (m1, t1, t2) in o1:
            matched = False
            for (m2, t3, t4) in o2:
                if compatible(m1, m2) and max(t1, t3) <= min(t2, t4):
                    m = merge(m1, m2)
                    if condition is None or ebv(eval_expr(self.A, condition, dict(m))) is True:
                        out.add((m, max(t1, t3), min(t2, t4)))
                        matched = True
            if not matched:
                out.add((m1, t1, t2))
        return out

    def window(self, node):
        A = self.A
        if node.stream not in self.streams:
            raise KeyError(f"no stream {node.stream}; streams are {sorted(self.streams)}")
        stream, w, t = self.streams[node.stream], node.window, self.at
        if isinstance(w, A.Now):
            return w_now(stream, t)
        if isinstance(w, A.All):
            return w_all(stream, t)
        if isinstance(w, A.Triples):
            return w_triples(stream, t, w.n)
        if isinstance(w, A.Range):
            T = w.range.ticks(self.unit)
            step = T if w.tumbling else (w.step.ticks(self.unit) if w.step is not None else None)
            return w_range(stream, t, T) if step is None else w_step(stream, t, T, step)
        raise TypeError(f"unknown window {w!r}")

    def graph(self, name):
        if name not in self.background and name is not None and None in self.background:
            name = None  # as cep.spark.evaluate: FROM <g> read from the default graph the caller gave
        if name not in self.background:
            raise KeyError(f"no background graph {name}; graphs are {list(self.background)}")
        return self.background[name]

    def static(self, node, graph) -> set[frozenset]:
        """SPARQL evaluation over the static graph (mappings without intervals)."""
        A = self.A
        if isinstance(node, A.BGP):
            sols = [frozenset()]
            for tp in node.patterns:
                if isinstance(tp, A.PathPattern):
                    part = self.path_solutions(tp, graph)
                else:
                    part = _match_triples([(tp.s, tp.p, tp.o)], graph, self.is_var)
                sols = [merge(a, b) for a in sols for b in part if compatible(a, b)]
            return set(sols)
        return self.static_parts(node, graph)

    def static_parts(self, node, graph):
        """Join/Union/OPTIONAL/FILTER over the graph: the interval operators on one common interval."""
        A = self.A
        if isinstance(node, (A.Join, A.Union, A.LeftJoin, A.Filter)):
            def sub(n):
                return {(mu, 0, 0) for mu in self.static(n, graph)}
            if isinstance(node, A.Join):
                res = join(sub(node.left), sub(node.right))
            elif isinstance(node, A.Union):
                res = union(sub(node.left), sub(node.right))
            elif isinstance(node, A.LeftJoin):
                res = self.left_join(sub(node.left), sub(node.right), node.condition)
            else:
                res = {(mu, a, b) for (mu, a, b) in sub(node.inner)
                       if ebv(eval_expr(A, node.condition, dict(mu))) is True}
            return {mu for (mu, _a, _b) in res}
        raise TypeError(f"cannot evaluate {type(node).__name__} on a background graph")

    def path_solutions(self, tp, graph) -> list[frozenset]:
        from paths.reference import evaluate as path_eval
        s_var, o_var = self.is_var(tp.s), self.is_var(tp.o)
        pairs = path_eval(graph, tp.path, start=None if s_var else tp.s, end=None if o_var else tp.o)
        out = []
        for (x, y) in pairs:
            if s_var and o_var and tp.s.name == tp.o.name and x != y:
                continue
            d = {}
            if s_var:
                d[tp.s.name] = x
            if o_var:
                d[tp.o.name] = y
            out.append(frozenset(d.items()))
        return out


# ---------------------------------------------------------------------------------------------
# FILTER expressions (SPARQL 1.1 §17), values as N-Triples terms; errors are ``_ERROR``

class _Error:
    def __repr__(self):
        return "error"


_ERROR = _Error()


def _simple_string(term):
    lit = parse_literal(term)
    if lit is not None and lit[1] is None and lit[2] == XSD_STRING:
        return lit[0]
    return None


def ebv(value):
    """Effective boolean value (§17.2.2): True, False or _ERROR."""
    if value is _ERROR or value is None:
        return _ERROR
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return not (value == 0 or math.isnan(value))
    lit = parse_literal(value)
    if lit is None:
        return _ERROR
    if lit[2] == XSD_BOOLEAN:
        return lit[0] in ("true", "1") if lit[0] in ("true", "false", "1", "0") else False
    if lit[2] in NUMERIC_DATATYPES:
        n = numeric_value(value)
        return False if n is None else not (n == 0 or math.isnan(n))
    if lit[2] == XSD_STRING:
        return lit[0] != ""
    return _ERROR


def _num(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return value
    return numeric_value(value) if isinstance(value, str) else None


def _term_of(value):
    """A value as an N-Triples term (booleans and numbers from expressions become literals)."""
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^<{XSD_BOOLEAN}>'
    if isinstance(value, float):
        return None  # computed numbers have no canonical term here; compared numerically only
    return value


def eval_expr(A, e, mu: dict):
    """Value of expression ``e`` under mapping ``mu``: a term string, a bool, a float, or _ERROR."""
    if isinstance(e, A.Var):
        return mu.get(e.name, _ERROR)
    if isinstance(e, A.Const):
        return e.term
    if isinstance(e, A.Bound):
        return e.var.name in mu
    if isinstance(e, A.Not):
        v = ebv(eval_expr(A, e.expr, mu))
        return _ERROR if v is _ERROR else not v
    if isinstance(e, A.And):
        a, b = ebv(eval_expr(A, e.left, mu)), ebv(eval_expr(A, e.right, mu))
        if a is False or b is False:
            return False
        return _ERROR if (a is _ERROR or b is _ERROR) else True
    if isinstance(e, A.Or):
        a, b = ebv(eval_expr(A, e.left, mu)), ebv(eval_expr(A, e.right, mu))
        if a is True or b is True:
            return True
        return _ERROR if (a is _ERROR or b is _ERROR) else False
    if isinstance(e, A.Neg):
        n = _num(eval_expr(A, e.expr, mu))
        return _ERROR if n is None else -n
    if isinstance(e, A.Arith):
        a, b = _num(eval_expr(A, e.left, mu)), _num(eval_expr(A, e.right, mu))
        if a is None or b is None:
            return _ERROR
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        return _ERROR if b == 0 else a / b
    if isinstance(e, A.Compare):
        return _compare(e.op, eval_expr(A, e.left, mu), eval_expr(A, e.right, mu))
    if isinstance(e, A.Str):
        v = eval_expr(A, e.expr, mu)
        t = _term_of(v)
        if not isinstance(t, str):
            return _ERROR
        if t.startswith("<"):
            return '"' + t[1:-1].replace("\\", "\\\\").replace('"', '\\"') + '"'
        m = LITERAL_RE.match(t)
        return '"' + m.group(1) + '"' if m else _ERROR
    if isinstance(e, A.Lang):
        t = _term_of(eval_expr(A, e.expr, mu))
        lit = parse_literal(t) if isinstance(t, str) else None
        return _ERROR if lit is None else f'"{lit[1] or ""}"'
    if isinstance(e, A.Datatype):
        t = _term_of(eval_expr(A, e.expr, mu))
        lit = parse_literal(t) if isinstance(t, str) else None
        return _ERROR if lit is None else f"<{lit[2]}>"
    if isinstance(e, A.Regex):
        t = _term_of(eval_expr(A, e.text, mu))
        lit = parse_literal(t) if isinstance(t, str) else None
        pat = parse_literal(_term_of(eval_expr(A, e.pattern, mu)) or "")
        flags = parse_literal(_term_of(eval_expr(A, e.flags, mu)) or "") if e.flags is not None else ("", None, None)
        if lit is None or pat is None or flags is None:
            return _ERROR
        prefix = "".join(f"(?{f})" for f in flags[0] if f in "imsx")
        return re.search(prefix + pat[0], lit[0]) is not None
    raise TypeError(f"unknown expression {type(e).__name__}")


def _compare(op, a, b):
    if a is _ERROR or b is _ERROR:
        return _ERROR
    na, nb = _num(a), _num(b)
    if na is not None and nb is not None:
        x, y = na, nb
    else:
        sa, sb = _simple_string(_term_of(a)), _simple_string(_term_of(b))
        if sa is not None and sb is not None:
            x, y = sa, sb
        elif op in ("=", "!="):
            ta, tb = _term_of(a), _term_of(b)
            if ta is None or tb is None:
                return _ERROR
            return (ta == tb) if op == "=" else (ta != tb)
        else:
            return _ERROR
    return {"=": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


# ---------------------------------------------------------------------------------------------
# conversions to and from rows (for comparing with the Spark runtime; pure Python)

def to_records(omega: Iterable[Element], variables: Iterable[str]) -> list[tuple]:
    """Rows ``(value of each variable or None, ..., t1, t2)`` in the order of ``variables``."""
    variables = list(variables)
    return [tuple(dict(mu).get(v) for v in variables) + (t1, t2) for (mu, t1, t2) in omega]


def from_records(rows: Iterable[TMapping], start: str, end: str, column_var) -> set[Element]:
    """A set of mappings with intervals from rows (dict-like) of variable columns (decoded to
    variable names by ``column_var``; other columns ignored) and the interval columns."""
    out = set()
    for row in rows:
        d = row.asDict() if hasattr(row, "asDict") else dict(row)
        mu = []
        for k, v in d.items():
            if k in (start, end) or v is None:
                continue
            try:
                name = column_var(k)
            except ValueError:
                continue
            mu.append((name, v))
        out.add((frozenset(mu), d[start], d[end]))
    return out
