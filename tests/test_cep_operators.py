"""The interval operators (cep.engines.spark.intervals) against the reference (cep.engines.reference) at the edges.

Terms are plain ints here (ids; the window BGP test, evaluated end to end, uses IRIs); every case
also states the expected set explicitly, so a bug shared by both implementations fails too.
"""
from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from cep import compile_query, evaluate
from cep.engines.spark import intervals as I
from cep.engines import reference as R
from cep.engines.columns import ITEM, T_END, T_START, column_var, is_var_column, var_column
from rdfcore.hashing import term_id
from rdfcore.schema import O, P, S

m = R.mapping


def frame(spark, variables, omega, nullable=True):
    cols = [var_column(v) for v in variables]
    nn = "" if nullable else " not null"
    schema = ", ".join([f"`{c}` long{nn}" for c in cols] + [f"{T_START} long", f"{T_END} long"])
    return spark.createDataFrame(R.to_records(omega, variables), schema)


def collect(df):
    return R.from_records(df.collect(), T_START, T_END, column_var)


# --- columns -----------------------------------------------------------------------------------

def test_var_column_is_injective_case_insensitively_and_avoids_interval_columns():
    names = ["s", "S", "s_", "_s", "S_", "t_start", "T_START", "x1", "é", "a_b", "aB", "a__b", "ab_"]
    cols = [var_column(n) for n in names]
    assert len({c.lower() for c in cols}) == len(names)
    assert all(c == c.lower() and c.isascii() for c in cols)
    assert T_START not in cols and T_END not in cols
    assert all(is_var_column(c) for c in cols)
    assert [column_var(c) for c in cols] == names
    assert not is_var_column(T_START) and not is_var_column(ITEM)


# --- reference operators on their own (the oracle must be right) --------------------------------

def test_reference_compatibility_with_unbound_variables():
    assert R.compatible(m(v=1), m(s=2))
    assert R.compatible(m(v=1, s=2), m(v=1))
    assert not R.compatible(m(v=1, s=2), m(v=1, s=3))
    assert R.compatible(m(), m(v=1))


# --- JOIN --------------------------------------------------------------------------------------

JOIN_LEFT = {(m(v=1, s=10), 1, 3), (m(v=2, s=20), 5, 5), (m(v=3), 0, 9), (m(v=4, s=40), 2, 6)}
JOIN_RIGHT = {(m(s=10, x=7), 3, 5),      # touches [1,3] at 3
              (m(s=20, x=8), 5, 5),      # equal point intervals
              (m(s=20, x=9), 6, 7),      # after [5,5]: disjoint
              (m(s=30), 4, 4),           # joins v=3 (s unbound there)
              (m(x=1), 4, 10),           # no shared variable with anything but unbound s
              (m(s=40), 3, 4)}           # inside [2,6]


@pytest.mark.parametrize("nullable", [True, False])
def test_join_intersects_intervals_at_the_edges(spark, nullable):
    left = {e for e in JOIN_LEFT if dict(e[0]).get("s") is not None} if not nullable else JOIN_LEFT
    right = {e for e in JOIN_RIGHT if dict(e[0]).get("x") is not None and dict(e[0]).get("s") is not None} \
        if not nullable else JOIN_RIGHT
    got = collect(I.join(frame(spark, ["v", "s"], left, nullable), frame(spark, ["s", "x"], right, nullable)))
    expected = R.join(left, right)
    assert got == expected
    assert (m(v=1, s=10, x=7), 3, 3) in expected            # touching intervals meet in a point
    assert (m(v=2, s=20, x=8), 5, 5) in expected
    assert not any(dict(e[0]).get("x") == 9 and dict(e[0]).get("v") == 2 for e in expected)
    if nullable:
        assert (m(v=3, s=30), 4, 4) in expected             # the unbound s takes the bound value
        assert (m(v=3, x=1), 4, 9) in expected
        assert (m(v=4, s=40), 3, 4) in expected
        assert (m(v=4, s=40, x=1), 4, 6) in expected


def test_union_pads_unbound_variables_with_null(spark):
    a = {(m(v=1), 1, 2), (m(v=2), 3, 3)}
    b = {(m(s=5), 1, 2), (m(s=6), 3, 3)}
    c = {(m(v=1), 1, 2), (m(v=1, s=5), 1, 2)}
    out = I.union(I.union(frame(spark, ["v"], a), frame(spark, ["s"], b)), frame(spark, ["v", "s"], c))
    assert out.columns == [var_column("s"), var_column("v"), T_START, T_END]
    assert collect(out) == R.union(R.union(a, b), c) == {
        (m(v=1), 1, 2), (m(v=2), 3, 3), (m(s=5), 1, 2), (m(s=6), 3, 3), (m(v=1, s=5), 1, 2)}


# --- SEQ ---------------------------------------------------------------------------------------

def test_seq_needs_strict_order(spark):
    a = {(m(v=1), 1, 3), (m(v=2), 2, 2), (m(), 0, 0)}
    b = {(m(v=1, s=4), 3, 5),       # starts where a1 ends: not after it
         (m(v=1, s=5), 4, 6),       # strictly after
         (m(v=2, s=6), 3, 3),
         (m(s=7), 1, 1)}            # v unbound: compatible with everything, but after [0,0] only
    got = collect(I.seq(frame(spark, ["v"], a), frame(spark, ["v", "s"], b)))
    assert got == R.seq(a, b) == {
        (m(v=1, s=5), 1, 6), (m(v=2, s=6), 2, 3),
        (m(v=1, s=4), 0, 5), (m(v=1, s=5), 0, 6), (m(v=2, s=6), 0, 3), (m(s=7), 0, 1)}


# --- SEQ_WO ------------------------------------------------------------------------------------

def test_seq_wo_negation_at_the_boundaries(spark):
    a = {(m(v=1), 2, 2), (m(v=2), 2, 2), (m(v=3), 2, 2), (m(v=4), 2, 2), (m(v=5), 2, 2)}
    c = {(m(v=1, s=0), 8, 8), (m(v=2, s=0), 8, 8), (m(v=3, s=0), 8, 8), (m(v=4, s=0), 8, 8),
         (m(v=5, s=0), 8, 8)}
    neg = {(m(v=1), 2, 2),          # exactly at t2: inside [t2, t5], blocks
           (m(v=2), 8, 8),          # exactly at t5: blocks
           (m(v=3), 1, 3),          # starts before t2: not inside, does not block
           (m(v=4, s=1), 5, 5),     # incompatible with μ1 ∪ μ3 (s differs) — only μ3 binds s
           (m(s=0), 9, 9),          # after t5
           (m(v=5, s=0), 3, 7)}     # inside: blocks
    got = collect(I.seq_wo(frame(spark, ["v"], a), frame(spark, ["v", "s"], neg), frame(spark, ["v", "s"], c)))
    assert got == R.seq_wo(a, neg, c) == {(m(v=3, s=0), 2, 8), (m(v=4, s=0), 2, 8)}


def test_seq_wo_negation_compatible_with_the_right_side_only(spark):
    # the typo fix: the negated mapping must be compatible with μ1 ∪ μ3, so a binding of s that only
    # μ3 has decides
    a = {(m(v=1), 1, 1)}
    c = {(m(v=1, s=7), 5, 5), (m(v=1, s=8), 5, 5)}
    neg = {(m(s=7), 3, 3)}
    got = collect(I.seq_wo(frame(spark, ["v"], a), frame(spark, ["s"], neg), frame(spark, ["v", "s"], c)))
    assert got == R.seq_wo(a, neg, c) == {(m(v=1, s=8), 1, 5)}


def test_seq_wo_needs_strict_order(spark):
    """t2 < t5: a right mapping starting where the left one ends does not follow it. Kills
    ``seq_wo``'s ``t2 < t5`` -> ``<=`` (before, only the random operator test caught it)."""
    a = {(m(v=1), 2, 4), (m(v=2), 2, 3)}
    c = {(m(v=1, s=0), 4, 6), (m(v=2, s=0), 4, 6)}
    got = collect(I.seq_wo(frame(spark, ["v"], a), frame(spark, ["v"], set()), frame(spark, ["v", "s"], c)))
    assert got == R.seq_wo(a, set(), c) == {(m(v=2, s=0), 2, 6)}


# --- NO_HEAD / NO_TAIL -------------------------------------------------------------------------

def test_no_head_edges(spark):
    neg = {(m(v=1), 3, 3), (m(v=2), 1, 4), (m(), 10, 10)}
    b = {(m(v=1, s=0), 3, 5),       # negation ends at 3 = t3: not before, kept
         (m(v=1, s=1), 4, 4),       # negation before: dropped
         (m(v=2, s=2), 4, 6),       # negation [1,4] ends at t3: kept
         (m(v=2, s=3), 5, 5),       # dropped
         (m(v=3, s=4), 11, 11)}     # the empty mapping at 10 is compatible with all: dropped
    got = collect(I.no_head(frame(spark, ["v"], neg), frame(spark, ["v", "s"], b)))
    assert got == R.no_head(neg, b) == {(m(v=1, s=0), 3, 5), (m(v=2, s=2), 4, 6)}


def test_no_tail_respects_the_evaluation_time(spark):
    a = {(m(v=1), 1, 2), (m(v=2), 1, 2), (m(v=3), 1, 5), (m(v=4), 1, 2)}
    neg = {(m(v=1), 3, 4),          # after, ended by t=6: drops v=1
           (m(v=2), 5, 7),          # after, but ends at 7 > t: does not count yet
           (m(v=3), 5, 6),          # starts at t2 = 5: not after
           (m(v=4, s=9), 6, 6)}     # ends exactly at t: counts
    got = collect(I.no_tail(frame(spark, ["v"], a), frame(spark, ["v", "s"], neg), 6))
    assert got == R.no_tail(a, neg, 6) == {(m(v=2), 1, 2), (m(v=3), 1, 5)}


def test_example_8_intermediate_result(spark):
    """CQELS-CEP Example 8: NO_TAIL(SEQ(Ω1, Ω2), ∅, 16)."""
    a1, d1, mm, h = 1, 2, 3, 4
    o1 = {(m(v=a1, s=mm), 10, 10), (m(v=d1, s=h), 12, 12)}
    o2 = {(m(v=a1, s=mm), 16, 16), (m(v=d1, s=h), 14, 14)}
    out = I.no_tail(I.seq(frame(spark, ["v", "s"], o1), frame(spark, ["v", "s"], o2)),
                    frame(spark, ["v", "s"], set()), 16)
    expected = {(m(v=a1, s=mm), 10, 16), (m(v=d1, s=h), 12, 14)}
    assert collect(out) == expected == R.no_tail(R.seq(o1, o2), set(), 16)


# --- OPTIONAL ----------------------------------------------------------------------------------

def test_left_join_keeps_unmatched_and_intersects(spark):
    a = {(m(v=1), 0, 10), (m(v=2), 0, 10), (m(v=3), 0, 2)}
    b = {(m(v=1, x=5), 3, 12), (m(v=3, x=6), 4, 5)}
    got = collect(I.left_join(frame(spark, ["v"], a), frame(spark, ["v", "x"], b)))
    assert got == {(m(v=1, x=5), 3, 10), (m(v=2), 0, 10), (m(v=3), 0, 2)}


# --- windows -----------------------------------------------------------------------------------

STREAM = [(1, frozenset({(7, 8, 9)}), 10, 10), (2, frozenset({(7, 8, 9), (7, 8, 10)}), 12, 12),
          (3, frozenset({(1, 2, 3)}), 3, 6),      # interval crossing t − T
          (4, frozenset({(1, 2, 4)}), 14, 20),    # crossing t
          (5, frozenset({(1, 2, 5)}), 17, 17)]    # in the future


def stream_frame(spark, items):
    rows = [(item, s, p, o, t1, t2) for (item, g, t1, t2) in items for (s, p, o) in g]
    return spark.createDataFrame(rows, f"{ITEM} long, {S} long, {P} long, {O} long, {T_START} long, {T_END} long")


def window_items(df):
    out = {}
    for r in df.collect():
        key = (r[ITEM], r[T_START], r[T_END])
        out.setdefault(key, set()).add((r[S], r[P], r[O]))
    return sorted((k[0], frozenset(v), k[1], k[2]) for k, v in out.items())


def test_windows_against_the_reference(spark):
    st = stream_frame(spark, STREAM)
    cases = [
        (I.w_range(st, 16, 10), R.w_range(STREAM, 16, 10)),
        (I.w_now(st, 14), R.w_now(STREAM, 14)),
        (I.w_all(st, 16), R.w_all(STREAM, 16)),
        (I.w_triples(st, 16, 2), R.w_triples(STREAM, 16, 2)),
        (I.w_step(st, 16, 10, 5), R.w_step(STREAM, 16, 10, 5)),
    ]
    for got, expected in cases:
        assert window_items(got) == sorted(expected)
    assert sorted(R.w_range(STREAM, 16, 10)) == [
        (1, frozenset({(7, 8, 9)}), 10, 10), (2, frozenset({(7, 8, 9), (7, 8, 10)}), 12, 12),
        (3, frozenset({(1, 2, 3)}), 6, 6), (4, frozenset({(1, 2, 4)}), 14, 16)]
    assert sorted(R.w_now(STREAM, 14)) == [(4, frozenset({(1, 2, 4)}), 14, 14)]
    # the last 2 triples: item 4's and one of item 2's (ties broken by o descending)
    assert sorted(R.w_triples(STREAM, 16, 2)) == [(2, frozenset({(7, 8, 10)}), 12, 12),
                                                  (4, frozenset({(1, 2, 4)}), 14, 16)]
    # STEP 5 at t=16: the window that closed at 15 (C-SPARQL report on close)
    assert sorted(R.w_step(STREAM, 16, 10, 5)) == [
        (1, frozenset({(7, 8, 9)}), 10, 10), (2, frozenset({(7, 8, 9), (7, 8, 10)}), 12, 12),
        (3, frozenset({(1, 2, 3)}), 5, 6), (4, frozenset({(1, 2, 4)}), 14, 15)]


def test_triples_window_breaks_start_ties_by_end_before_item(spark):
    """TRIPLES n orders by (t_start, t_end) and only then by item: items 1 and 2 start together,
    item 1 ends later, so it is the most recent. Kills ``w_triples`` ordering by item before t_end."""
    stream = [(1, frozenset({(1, 2, 3)}), 10, 12), (2, frozenset({(1, 2, 4)}), 10, 11)]
    got = window_items(I.w_triples(stream_frame(spark, stream), 16, 1))
    assert got == sorted(R.w_triples(stream, 16, 1)) == [(1, frozenset({(1, 2, 3)}), 10, 12)]


# --- window BGPs: several triple patterns match inside ONE stream item (eq. 16) -----------------

def test_window_bgp_matches_inside_one_item_not_across_items_at_the_same_time(spark):
    """Guards the eq. 16 mutant of ``cep.engines.spark.evaluate._bgp_in_items`` that drops the stream item from the
    join key of a BGP's triple patterns (key (ITEM, T_START, T_END) -> (T_START, T_END)): items 2
    and 3 hold :b's two triples at the same time, items 4 and 5 get the same interval only by the
    window's clipping; neither pair is one graph, so neither matches (tests/MUTATION.md)."""
    def ex(n):
        return f"<http://ex/{n}>"
    items = [(1, frozenset({(ex("a"), ex("p"), ex("m")), (ex("a"), ex("q"), ex("h"))}), 5, 5),
             (2, frozenset({(ex("b"), ex("p"), ex("m"))}), 5, 5),
             (3, frozenset({(ex("b"), ex("q"), ex("h"))}), 5, 5),
             (4, frozenset({(ex("c"), ex("p"), ex("m"))}), 3, 6),     # clipped to [4, 6] at t=6
             (5, frozenset({(ex("c"), ex("q"), ex("h"))}), 4, 6)]
    rows = [(item, term_id(a), term_id(b), term_id(c), t1, t2) for (item, g, t1, t2) in items for (a, b, c) in g]
    stream = spark.createDataFrame(rows, f"{ITEM} long, {S} long, {P} long, {O} long, {T_START} long, {T_END} long")
    head = "PREFIX : <http://ex/>\nSELECT * FROM NAMED WINDOW :W ON :st [RANGE 2] WHERE { WINDOW :W { "
    queries = {"shared": head + "?v :p ?s . ?v :q ?o } }",           # joined on ?v and the item
               "disjoint": head + "?v :p ?s . ?w :q ?o } }"}         # no shared variable: the item only
    frames = []
    for name, text in queries.items():
        out = evaluate(compile_query(text), {}, {ex("st"): stream}, at=6)
        cols = [c for c in out.columns if c not in (T_START, T_END)]
        frames.append(out.select(F.lit(name).alias("_q"), F.to_json(F.struct(*cols)).alias("_m"), T_START, T_END))
    names = {term_id(t): t for (_i, g, _a, _b) in items for tr in g for t in tr}
    got = {name: set() for name in queries}
    for r in frames[0].unionByName(frames[1]).collect():          # one Spark job
        mu = frozenset((column_var(k), names[val]) for k, val in json.loads(r["_m"]).items() if val is not None)
        got[r["_q"]].add((mu, r[T_START], r[T_END]))
    a_only = {(frozenset({("v", ex("a")), ("s", ex("m")), ("o", ex("h"))}), 5, 5)}
    assert got["shared"] == a_only
    assert got["disjoint"] == {(frozenset({("v", ex("a")), ("s", ex("m")), ("w", ex("a")), ("o", ex("h"))}), 5, 5)}
    for name, text in queries.items():
        assert got[name] == R.evaluate(compile_query(text), {}, {ex("st"): items}, at=6), name
