"""``cep.engines.driver.rows`` (the lifetimes operators on the driver) against the reference evaluator.

For random streams — point and interval events, several items per time, multi-triple items —
and queries covering every operator it evaluates (SEQ; negation at head, middle and tail; JOIN,
OR and OPTIONAL inside windows; two windows joined; a background JOIN) under every window it
evaluates (RANGE, STEP, TUMBLING, TRIPLES, NOW), with FILTERs (on values, on the interval, RAND(),
an unbound variable) and an OPTIONAL condition: at every instant t, the rows alive at t equal
``cep.engines.reference.evaluate(query, ..., at=t)``. No Spark: many seeds per query.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from cep import algebra as A
from cep.engines.driver import columnar as C
from cep.algebra import expressions as E
from cep.engines.driver import rows as L
from cep.engines import reference as R
from cep.engines.columns import var_column
from cep.algebra.timeline import OPEN_END
from cep.algebra.timeline import MIN_TIME
from rdfcore.hashing import term_id
from tests.stream_terms import EX, OBJECTS, PREDICATES, SUBJECTS
from tests.stream_terms import STREAM_IRI as STREAM

OTHER = f"<{EX}other>"
XSD = "http://www.w3.org/2001/XMLSchema#"
P0, P1, P2 = PREDICATES
TYPE, KIND = f"<{EX}type>", f"<{EX}Kind>"
v, s, x = (A.Var(n) for n in ("v", "s", "x"))


def b(*triples):
    return A.bgp(*(A.triple(*t) for t in triples))


A_, B_, TWO = b((v, P0, s)), b((v, P1, s)), b((v, P0, s), (v, P2, x))
BACKGROUND = A.Background(None, b((v, TYPE, KIND)))
#: binds x (an object): joined with patterns where x is in a negated or OPTIONAL part only, a
#: static side must not filter those parts (cep.engines.driver.columnar narrows the other side of such a JOIN)
BACKGROUND_X = A.Background(None, b((x, TYPE, KIND)))
X_ = b((v, P2, x))


def query(window, pattern, *, variables=(v, s, x), extra=None, stream=STREAM):
    clause = A.StreamPattern(f"<{EX}W>", stream, window, pattern)
    inner = clause if extra is None else A.join(clause, extra)
    return A.Query(A.project(list(variables), inner))


RANGE6, STEP, TUMBLING = A.Range(A.Duration(6)), A.Range(A.Duration(8), A.Duration(3)), A.Range(A.Duration(5), tumbling=True)
QUERIES = {
    "SEQ, tail negated, RANGE": query(RANGE6, A.sequence(A_, A_, B_, negated=2)),
    "SEQ, head negated, RANGE": query(A.Range(A.Duration(5)), A.sequence(B_, A_, negated=0)),
    "SEQ, middle negated, STEP": query(STEP, A.sequence(A_, B_, TWO, negated=1)),
    "SEQ of a two-pattern BGP, TUMBLING": query(TUMBLING, A.sequence(TWO, A_)),
    "TRIPLES, tail negated": query(A.Triples(4), A.sequence(A_, B_, negated=1)),
    "NOW, two-pattern BGP": query(A.Now(), TWO),
    "ALL (landmark), head negated": query(A.All(), A.sequence(B_, A_, negated=0)),
    "ALL (landmark), tail negated, interval events": query(A.All(), A.sequence(A_, B_, negated=1)),
    "JOIN and OR in a window": query(RANGE6, A.union(A.join(A_, B_), b((v, P2, x)))),
    "OPTIONAL in a window": query(A.Range(A.Duration(4)), A.left_join(A_, b((v, P2, x)))),
    "background JOIN": query(RANGE6, A.sequence(A_, B_), extra=BACKGROUND),
    "background JOIN, its variable in the negated tail": query(RANGE6, A.sequence(A_, X_, negated=1),
                                                               extra=BACKGROUND_X),
    "background JOIN, its variable in the negated head": query(RANGE6, A.sequence(X_, A_, negated=0),
                                                               extra=BACKGROUND_X),
    "background JOIN, its variable in the negated middle": query(STEP, A.sequence(A_, X_, B_, negated=1),
                                                                 extra=BACKGROUND_X),
    "background JOIN, its variable OPTIONAL": query(RANGE6, A.left_join(A_, X_), extra=BACKGROUND_X),
    "background JOIN through a negation": query(RANGE6, A.sequence(TWO, X_, negated=1), extra=BACKGROUND_X),
    "FILTER over a SEQ": A.Query(A.project([v, s, x], A.Filter(
        E.Or(E.Compare("!=", s, E.Const(OBJECTS[0])), E.Compare("=", v, E.Const(SUBJECTS[1]))),
        A.StreamPattern(f"<{EX}W>", STREAM, RANGE6, A.sequence(A_, B_))))),
    "FILTER on the interval, inside a window": query(RANGE6, A.Filter(
        E.Compare(">=", E.IntervalFn("DURATION"), E.Const(f'"PT0.002S"^^<{XSD}dayTimeDuration>')),
        A.sequence(A_, X_))),
    "FILTER on an OPTIONAL's unbound variable": query(A.Range(A.Duration(4)), A.Filter(
        E.Not(E.Bound(x)), A.left_join(A_, X_))),
    "FILTER drawing RAND() from the solution": query(RANGE6, A.Filter(
        E.Compare("<", E.Builtin("RAND", ()), E.Const(f'"0.5"^^<{XSD}double>')), A.sequence(A_, B_))),
    "OPTIONAL with a condition": query(A.Range(A.Duration(4)), A.left_join(
        A_, X_, E.Not(E.Builtin("STRENDS", (E.Str(x), E.Const('"h"')))))),
    "background JOIN through a FILTER": query(RANGE6, A.Filter(E.Compare("!=", s, E.Const(OBJECTS[1])),
                                                               A.sequence(A_, X_)), extra=BACKGROUND_X),
    "BIND over a SEQ joined with the background": A.Query(A.project([v, s, x], A.Extend(A.join(
        A.StreamPattern(f"<{EX}W>", STREAM, RANGE6, A.sequence(A_, B_)), BACKGROUND), x, E.Str(s)))),
    "BIND in a window, an error leaves it unbound": query(STEP, A.Extend(
        A.sequence(A_, X_, negated=1), A.Var("n"),
        E.Arith("+", E.Builtin("STRLEN", (E.Str(s),)), E.Builtin("IF", (E.Compare("=", v, E.Const(SUBJECTS[0])), v,
                                                                           E.Const('"1"^^<' + XSD + 'integer>'))))),
        variables=(v, s, x, A.Var("n"))),
    "two windows": A.Query(A.project([v, s, x], A.join(
        A.StreamPattern(f"<{EX}W1>", STREAM, A.Range(A.Duration(3)), A_),
        A.StreamPattern(f"<{EX}W2>", OTHER, A.Triples(3), b((v, P2, x)))))),
}
BACKGROUND_TRIPLES = {(SUBJECTS[0], TYPE, KIND), (SUBJECTS[2], TYPE, KIND), (OBJECTS[0], TYPE, KIND)}


def random_stream(rng: random.Random, n: int, span: int, first_id: int = 0):
    items = []
    for i in range(n):
        sub = rng.choice(SUBJECTS)
        g = {(sub, rng.choice((P0, P1, P2)), rng.choice(OBJECTS)) for _ in range(rng.choice((1, 1, 2, 3)))}
        t1 = rng.randint(0, span)
        t2 = t1 + (rng.choice((0, 0, 0, 1, 3)) if rng.random() < 0.3 else 0)
        items.append((first_id + i, frozenset(g), t1, t2))
    return items


def local_rows(items):
    return [(item, term_id(s_), term_id(p_), term_id(o_), t1, t2) for (item, g, t1, t2) in items for (s_, p_, o_) in g]


def background_rels():
    rows = {(term_id(sub), MIN_TIME, OPEN_END, MIN_TIME, OPEN_END) for (sub, _p, _o) in BACKGROUND_TRIPLES}
    return {BACKGROUND: L.Rel.of((var_column("v"),), rows), BACKGROUND_X: L.Rel.of((var_column("x"),), rows)}


def alive_at(rel: L.Rel, t: int, terms: dict, names):
    out = set()
    for r in rel.rows:
        t1, t2, a, b_ = r[-4:]
        if a <= t <= b_:
            mapping = frozenset((n, terms[val]) for n, val in zip(names, r) if val is not None)
            out.add((mapping, t1, t if t2 == OPEN_END else t2))
    return out


TERMS = {term_id(t): t for t in SUBJECTS + OBJECTS + [P0, P1, P2, TYPE, KIND]}


def decode(ids) -> dict:
    return {i: TERMS[i] for i in ids}


def run_local(q, streams, background, unit, known):
    return L.evaluate(q, streams, background, unit, terms=decode, known=known)


def run_columnar(q, streams, background, unit, known):
    table = C.evaluate(q, {k: np.array(rows, dtype=np.int64).reshape(-1, 6) for k, rows in streams.items()},
                       background, unit, terms=decode, known=known)
    if isinstance(table, C.Table):
        assert len(table.data) == len(table.rows), "the result holds a row twice"
        return table.to_rel()
    return table


ENGINES = {"local": run_local, "columnar": run_columnar}


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize("label", list(QUERIES))
def test_local_lifetimes_equal_the_reference_at_every_instant(label, engine):
    q = QUERIES[label]
    names = [var.name for var in q.form.variables]
    answered = 0
    for seed in range(25):
        rng = random.Random(seed * 7919 + len(label))
        streams = {STREAM: random_stream(rng, 14, 14), OTHER: random_stream(rng, 8, 14, first_id=100)}
        terms = dict(TERMS)   # receives the terms a BIND computes
        result = ENGINES[engine](q, {k: local_rows(items) for k, items in streams.items()},
                                 background_rels(), "ms", terms)
        assert result.vars == tuple(var_column(n) for n in names)
        for t in range(0, 14 + 3 + 9):
            expected = R.evaluate(q, {None: BACKGROUND_TRIPLES}, streams, at=t)
            assert alive_at(result, t, terms, names) == expected, (seed, t)
            answered += bool(expected)
    assert answered, "no seed gives this query an answer: the test would prove nothing"


def test_free_runs():
    assert list(L._free_runs(0, 10, [])) == [(0, 10)]
    assert list(L._free_runs(0, 10, [(2, 3), (3, 5), (8, 20)])) == [(0, 1), (6, 7)]
    assert list(L._free_runs(0, 10, [(0, 10)])) == []


def test_supports_says_why():
    window = A.StreamPattern(f"<{EX}W>", STREAM, RANGE6, A_)
    assert L.supports(A.Query(A.project([v], A.Filter(A.Var("v"), window)))) is None
    exists = A.Query(A.project([v], A.Filter(E.Exists(b((v, P1, s))), window)))
    assert "EXISTS" in L.supports(exists)
    now = A.Query(A.project([v], A.Filter(E.Compare("<", E.Builtin("NOW", ()), E.Const('"x"')), window)))
    assert "NOW()" in L.supports(now)
    assert L.supports(QUERIES["two windows"]) is None
    bind = QUERIES["BIND over a SEQ joined with the background"]
    assert "BIND" in L.supports(bind) and L.supports(bind, bind=True) is None   # bind: the caller decodes its terms
    drawn = A.Query(A.project([v, s], A.Extend(window, A.Var("r"), E.Builtin("RAND", ()))))
    assert "draws" in L.supports(drawn, bind=True)
