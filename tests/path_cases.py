"""Random graphs and paths for the differential tests of the path executors (Spark, in-memory)
against the oracle ``paths.reference``: tiny graphs over a few terms, paths built by the algebra's
smart constructors with nesting, inverses, every axis and both identities."""
from __future__ import annotations

from hypothesis import strategies as st

from paths import reference
from paths.algebra import (AxisKind, Domain, axis, alt, identity, inverse, negated_set, opt, plus,
                           self_term, seq, star, test)

EX = "http://ex.org/"


def e(local: str) -> str:
    return f"<{EX}{local}>"


def decode(pairs, names):
    return {(names.get(x, x), names.get(y, y)) for (x, y) in pairs}


def expected(graph, path, start, end):
    """The oracle; a set at an end means the union over its terms."""
    starts = start if isinstance(start, (set, frozenset)) else [start]
    ends = end if isinstance(end, (set, frozenset)) else [end]
    out = set()
    for s in starts:
        for o in ends:
            out |= reference.evaluate(graph, path, s, o)
    return out


# --- randomized differential tests against paths.reference ------------------------------------

NODES = [e("a"), e("b"), e("c"), e("d")]
PREDS = [e("p"), e("q")]
LIT = '"x"'
ABSENT = e("k")
TERMS = NODES + PREDS + [LIT, ABSENT]

graphs = st.sets(st.tuples(st.sampled_from(NODES + [e("p")]), st.sampled_from(PREDS),
                           st.sampled_from(NODES + [e("q"), LIT])), min_size=1, max_size=7)
terms = st.sampled_from(TERMS)
kinds = st.sampled_from(list(AxisKind))
domains = st.sampled_from(list(Domain))

leaves = st.one_of(
    st.builds(axis, kinds, st.booleans(), st.none() | st.sampled_from(PREDS + NODES[:2])),
    st.builds(axis, st.just(AxisKind.NEXT), st.booleans(), st.sampled_from(PREDS)),
    st.builds(self_term, terms),
    st.builds(identity, domains),
    st.builds(negated_set, st.sets(st.sampled_from(PREDS), min_size=1, max_size=1), st.booleans()),
)


def recursive_paths(leaves, *, min_parts: int, max_leaves: int):
    """Paths built from ``leaves`` by every constructor of the algebra (sequences and alternatives
    of ``min_parts``–3 parts, closures, options, inverses, tests, nested axes)."""
    def extend(sub):
        return st.one_of(
            st.lists(sub, min_size=min_parts, max_size=3).map(lambda xs: seq(*xs)),
            st.lists(sub, min_size=min_parts, max_size=3).map(lambda xs: alt(*xs)),
            sub.map(plus),
            st.builds(star, sub, domains),
            st.builds(opt, sub, domains),
            sub.map(inverse),
            sub.map(test),
            st.builds(axis, kinds, st.booleans(), sub),
        )
    return st.recursive(leaves, extend, max_leaves=max_leaves)


paths = recursive_paths(leaves, min_parts=2, max_leaves=5)
ends = st.none() | terms
set_ends = st.frozensets(terms, min_size=1, max_size=3)
