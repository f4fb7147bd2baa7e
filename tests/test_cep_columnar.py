"""``cep.engines.driver.columnar`` (the driver engine over numpy columns) against ``cep.engines.driver.rows`` (its definition,
itself checked against the reference evaluator in ``tests/test_cep_local.py``, where both engines
run), operator by operator on random relations larger than those tests draw: unbound variables
in join keys, several shared variables, lifetimes open at either end, empty sides. No Spark.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from cep import algebra as A
from cep.engines.driver import columnar as C
from cep.engines.driver import rows as L
from cep.algebra import windows as W
from cep.algebra.timeline import OPEN_END
from cep.algebra.timeline import MIN_TIME

VARS = ("?a", "?b", "?c")


def random_rel(rng: random.Random, vars_, n: int, unbound: float) -> L.Rel:
    rows = set()
    for _ in range(n):
        values = tuple(None if rng.random() < unbound else rng.randint(1, 4) for _ in vars_)
        t1 = rng.choice((MIN_TIME, rng.randint(0, 20)))
        t2 = t1 if rng.random() < 0.5 and t1 != MIN_TIME else rng.randint(max(t1, 0), 24)
        a = rng.randint(0, 20)
        b = rng.choice((OPEN_END, a + rng.randint(0, 8)))
        rows.add(values + (t1, t2, a, b))
    return L.Rel(tuple(vars_), frozenset(rows))


def draw(rng: random.Random, unbound: float):
    pick = lambda: tuple(sorted(rng.sample(VARS, rng.randint(0, 3))))   # noqa: E731
    return [random_rel(rng, pick(), rng.choice((0, 1, 5, 30, 60)), unbound) for _ in range(3)]


BINARY = {"join": (L.join, C.join), "seq": (L.seq, C.seq), "union": (L.union, C.union),
          "no_head": (L.no_head, C.no_head), "no_tail": (L.no_tail, C.no_tail),
          "left_join": (L.left_join, C.left_join)}


@pytest.mark.parametrize("unbound", (0.0, 0.2), ids=("bound", "unbound"))
@pytest.mark.parametrize("name", [*BINARY, "seq_wo"])
def test_operators_equal_the_python_ones(name, unbound):
    checked = 0
    for seed in range(60):
        rng = random.Random(seed)
        x, y, z = draw(rng, unbound)
        cx, cy, cz = (C.Table.from_rel(r) for r in (x, y, z))
        if name == "seq_wo":
            expected, got = L.seq_wo(x, y, z), C.seq_wo(cx, cy, cz)
        else:
            python, columnar = BINARY[name]
            expected, got = python(x, y), columnar(cx, cy)
        assert got.vars == expected.vars, seed
        assert got.rows == expected.rows, seed
        checked += bool(expected.rows)
    assert checked > 20, "most draws must give rows, or the test proves little"


def test_distinct_rows_survive_hash_collisions(monkeypatch):
    rng = np.random.default_rng(5)
    data = rng.integers(0, 3, size=(400, 5))
    expected = set(map(tuple, data.tolist()))
    assert set(map(tuple, C._distinct(data).tolist())) == expected and len(C._distinct(data)) == len(expected)
    monkeypatch.setattr(C, "mix", lambda keys: np.zeros(len(keys), np.int64))   # every row collides
    got = C._distinct(data)
    assert set(map(tuple, got.tolist())) == expected and len(got) == len(expected)
    li, ri = C._match(data[:, :2], data[:, 1:3])     # multi-column keys: every pair checked
    assert {(i, j) for i, j in zip(li.tolist(), ri.tolist())} == {
        (i, j) for i in range(len(data)) for j in range(len(data)) if data[i, 0] == data[j, 1] and data[i, 1] == data[j, 2]}


@pytest.mark.parametrize("collide", (False, True), ids=("hashed", "colliding"))
def test_first_instants_are_each_keys_earliest_instant_in_range(monkeypatch, collide):
    if collide:
        monkeypatch.setattr(C, "mix", lambda keys: np.zeros(len(keys), np.int64))
    for seed in range(30):
        rng = random.Random(seed)
        rel = random_rel(rng, ("?a", "?b"), 80, 0.2)
        lo, hi = rng.randint(0, 10), rng.randint(10, 30)
        expected: dict = {}
        for row in rel.rows:
            a, b = row[-2], row[-1]
            if b >= lo and a <= hi:
                expected[row[:-2]] = min(max(a, lo), expected.get(row[:-2], max(a, lo)))
        assert C.first_instants(C.Table.from_rel(rel), lo, hi) == expected, seed


def test_subtract_equals_the_free_runs():
    rng = random.Random(3)
    for _ in range(200):
        rows = [(i, rng.randint(-5, 10), 0, 0) for i in range(rng.randint(1, 6))]
        rows = [(i, 0, a, rng.choice((a + rng.randint(0, 12), OPEN_END))) for i, _x, a, _b in rows]
        blocks = [(rng.randrange(len(rows)), rng.choice((MIN_TIME, rng.randint(-8, 14))),
                   rng.choice((OPEN_END, rng.randint(-8, 16)))) for _ in range(rng.randint(0, 8))]
        data = np.array(rows, dtype=np.int64)
        got = C.subtract(data, *(np.array([b[k] for b in blocks], dtype=np.int64) for k in range(3)))
        expected = L._subtract(rows, lambda r: [(x, y) for i, x, y in blocks if i == r[0]])
        assert set(map(tuple, got.tolist())) == expected


WINDOWS = [W.Now(), W.Triples(1), W.Triples(3), A.Range(A.Duration(4)), A.Range(A.Duration(6), A.Duration(4)),
           A.Range(A.Duration(5), tumbling=True), A.Range(A.Duration(3), A.Duration(5)), A.All()]


@pytest.mark.parametrize("spec", WINDOWS, ids=repr)
def test_windows_equal_the_python_ones(spec):
    for seed in range(30):
        rng = random.Random(seed)
        stream = []
        for item in range(rng.randint(0, 25)):
            t1 = rng.randint(-6, 20)
            t2 = t1 + (rng.choice((1, 2, 5, 9)) if rng.random() < 0.3 else 0)
            stream.extend((item, rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 3), t1, t2)
                          for _ in range(rng.choice((1, 1, 2))))
        expected = set(L.window(stream, spec))
        got = C.window(np.array(stream, dtype=np.int64).reshape(-1, 6), spec)
        assert set(map(tuple, got.tolist())) == expected, seed


def test_a_term_whose_id_is_the_unbound_mark_takes_the_python_engine():
    from cep.engines.columns import var_column
    from rdfcore.hashing import term_id

    v = A.Var("v")
    p = "<http://example.org/p>"
    clause = A.StreamPattern("<http://example.org/W>", "<http://example.org/s>", A.Range(A.Duration(5)),
                             A.bgp(A.triple(v, p, v)))
    q = A.Query(A.project([v], clause))
    rows = [(1, int(C.NULL), term_id(p), int(C.NULL), 3, 3), (2, 7, term_id(p), 7, 4, 4)]
    got = C.evaluate(q, {"<http://example.org/s>": np.array(rows, dtype=np.int64)}, {}, "ms")
    expected = L.evaluate(q, {"<http://example.org/s>": rows}, {}, "ms")
    assert got.vars == (var_column("v"),)
    assert {r[0] for r in got.rows} == {int(C.NULL), 7}, "the id NULL is a term here, not unbound"
    assert got.rows == expected.rows
