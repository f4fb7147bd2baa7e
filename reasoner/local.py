"""The reasoner on the driver: the tables of ``reasoner.materialize`` computed in Python, for
inputs that fit in the driver's memory — the common case of an ontology of a few thousand to a
few hundred thousand triples, where Spark's per-job latency (seconds) is all the cost.

Same rules, same rounds, same tables as ``reasoner.materialize.materialize`` (read its module
doc): this module transcribes each step over Python sets of id triples, and
``tests/test_reasoner_local.py`` checks both give identical tables on random ontologies (and
against owlrl). The one piece with its own algorithm is :func:`transitive_closure`: strongly
connected components (Tarjan), then ancestor sets propagated over the condensed DAG from the
sinks up — linear in the size of the closure, where Spark's squaring takes a job per round.
It also serves the Spark path, which closes the class hierarchy here when it is small enough
(``reasoner.materialize.DRIVER_HIERARCHY_EDGES``).
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from reasoner import schema_rules
from rdfcore.errors import FixpointError
from rdfcore.errors import HashCollisionError
from rdfcore.hashing import fast_xxh64
from rdfcore.schema import TABLE_COLUMNS
from rdfcore.vocab import ENTAILMENT_VOCABULARY

Pair = tuple[int, int]
Triple = tuple[int, int, int]


def schema_record(sp, dom, rng, inv, sym, trans, owl_classes) -> dict:
    """The property-level schema of a run as JSON (the manifest's ``schema``): what an
    incremental refresh (``reasoner.incremental``) needs besides the published tables."""
    return {"sp": sorted(map(list, sp)), "dom": sorted(map(list, dom)), "rng": sorted(map(list, rng)),
            "inv": sorted(map(list, inv)), "sym": sorted(sym), "trans": sorted(trans),
            "owl_classes": sorted(owl_classes)}


def transitive_closure(edges: Iterable[Pair]) -> set[Pair]:
    """The (non-reflexive) transitive closure of ``edges``; a node on a cycle gets ``(x, x)``, as
    rdfs5/rdfs11 derive it."""
    return {(a, b) for a, reached in closure_map(edges).items() for b in reached}


def closure_map(edges: Iterable[Pair]) -> dict[int, frozenset]:
    """:func:`transitive_closure` as {node: the nodes it reaches} (nodes with an out-edge only)."""
    succ: dict[int, set[int]] = defaultdict(set)
    for a, b in edges:
        succ[a].add(b)
    # Tarjan's SCCs, iteratively; components come out sinks first (a topological order of the
    # condensation, reversed), so every successor component is complete when one is emitted.
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    comp_of: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    reach: list[frozenset] = []      # per component: the nodes reachable from it (members if cyclic)
    out: dict[int, frozenset] = {}
    counter = 0
    for root in list(succ):
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(succ.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] != index[node]:
                continue
            members = []
            while True:
                x = stack.pop()
                on_stack.discard(x)
                members.append(x)
                if x == node:
                    break
            c = len(reach)
            for x in members:
                comp_of[x] = c
            targets: set[int] = set()
            parts = []
            for x in members:
                for y in succ.get(x, ()):
                    d = comp_of[y]
                    if d != c:
                        parts.append(reach[d])
                        targets.add(y)
            acc = set(targets)
            for part in parts:
                acc |= part
            if len(members) > 1 or node in succ.get(node, ()):
                acc.update(members)
            reached = frozenset(acc)
            reach.append(reached)
            if reached:
                for x in members:
                    out[x] = reached
    return out


class Schema:
    """One round's schema (``reasoner.materialize._Schema``), as Python sets."""

    def __init__(self, current: set[Triple]):
        by_p: dict[int, set[Pair]] = defaultdict(set)
        wanted = {schema_rules.SC, schema_rules.EQC, schema_rules.SP, schema_rules.EQP, schema_rules.DOM, schema_rules.RANGE, schema_rules.INV}
        owl = (schema_rules.SYMMETRIC, schema_rules.TRANSITIVE)
        for s, p, o in current:
            if p in wanted or (p == schema_rules.TYPE and o in owl):
                by_p[p].add((s, o))
        self.sc = closure_map(by_p[schema_rules.SC] | schema_rules.both_ways_set(by_p[schema_rules.EQC]))   # {sub: sups}
        self.sp = frozenset(schema_rules.rdfs5(by_p[schema_rules.SP] | schema_rules.scm_eqp1(by_p[schema_rules.EQP])))
        self.dom = frozenset(by_p[schema_rules.DOM])
        self.rng = frozenset(by_p[schema_rules.RANGE])
        self.inv = frozenset(schema_rules.both_ways_set(by_p[schema_rules.INV]))
        types = by_p[schema_rules.TYPE]
        self.sym = frozenset(s for s, o in types if o == schema_rules.SYMMETRIC)
        self.trans = frozenset(s for s, o in types if o == schema_rules.TRANSITIVE)
        self.owl_classes = frozenset(set(owl) | {a for a, sups in self.sc.items() if not sups.isdisjoint(owl)})


def by_first(pairs: Iterable[Pair]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for a, b in pairs:
        out[a].append(b)
    return out


def _property_fixpoint(triples: set[Triple], schema: Schema, literals: set[int],
                       max_iterations: int) -> tuple[set[Triple], int]:
    """rdfs7, prp-inv, prp-symp, prp-trp, semi-naive (``materialize._property_fixpoint``)."""
    active = {s for s, _ in schema.sp} | {s for s, _ in schema.inv} | schema.sym | schema.trans
    if not active:
        return set(), 0
    targets = active | {o for _, o in schema.sp}
    sp, inv = by_first(schema.sp), by_first(schema.inv)
    known = {t for t in triples if t[1] in targets}
    by_subject: dict[tuple[int, int], set[int]] = defaultdict(set)   # (p, s) -> o, transitive p
    by_object: dict[tuple[int, int], set[int]] = defaultdict(set)    # (p, o) -> s
    for s, p, o in known:
        if p in schema.trans:
            by_subject[(p, s)].add(o)
            by_object[(p, o)].add(s)
    delta = {t for t in known if t[1] in active}
    added: set[Triple] = set()
    for iteration in range(1, max_iterations + 1):
        derived: set[Triple] = set()
        for s, p, o in delta:
            for q in sp.get(p, ()):
                derived.add((s, q, o))
            for q in inv.get(p, ()):
                derived.add((o, q, s))
            if p in schema.sym:
                derived.add((o, p, s))
            if p in schema.trans:
                derived.update((s, p, z) for z in by_subject.get((p, o), ()))
                derived.update((x, p, o) for x in by_object.get((p, s), ()))
        new = {t for t in derived if t[0] not in literals and t not in known}
        if not new:
            return added, iteration
        known |= new
        added |= new
        for s, p, o in new:
            if p in schema.trans:
                by_subject[(p, s)].add(o)
                by_object[(p, o)].add(s)
        delta = new
    raise FixpointError(f"property rules (rdfs7, prp-inv, prp-symp, prp-trp) did not reach a fixpoint within "
                        f"{max_iterations} iterations; raise max_iterations if the data has very long chains")


def materialize(triples: set[Triple], literals: set[int], *, max_rounds: int = 20,
                max_iterations: int = 200) -> dict:
    """``reasoner.materialize.materialize`` on the driver: the tables as columns (a tuple of
    int64 arrays per table: ``subclass``, ``subproperty``, ``types``, ``transitive``,
    ``inferred``) plus ``rounds``."""
    current = set(triples)
    for round_ in range(1, max_rounds + 1):
        schema = Schema(current)
        added, _ = _property_fixpoint(current, schema, literals, max_iterations)
        with_props = current | added if added else current
        dom, rng = by_first(schema.dom), by_first(schema.rng)
        base_types: set[Pair] = set()
        for s, p, o in with_props:
            if p == schema_rules.TYPE:
                base_types.add((s, o))
            for c in dom.get(p, ()):
                base_types.add((s, c))
            if o not in literals:
                for c in rng.get(p, ()):
                    base_types.add((o, c))
        types = set(base_types)
        for x, c in base_types:
            types.update((x, d) for d in schema.sc.get(c, ()))
        sp_map = {a: frozenset(b) for a, b in by_first(schema.sp).items()}
        # the hierarchy part of inferred: the closures, plus subClassOf/subPropertyOf triples the
        # property rules derived this round that the closures do not hold yet (then another round)
        extra = {t for t in with_props if (t[1] == schema_rules.SC and t[2] not in schema.sc.get(t[0], ()))
                 or (t[1] == schema_rules.SP and t[2] not in sp_map.get(t[0], ()))}
        if not _needs_another_round(schema, added, base_types):
            break
        current = ({t for t in with_props if t[1] not in (schema_rules.TYPE, schema_rules.SC, schema_rules.SP)}
                   | {(x, schema_rules.TYPE, c) for x, c in types} | extra
                   | {(a, schema_rules.SC, b) for a, bs in schema.sc.items() for b in bs}
                   | {(a, schema_rules.SP, b) for a, b in schema.sp})
    else:
        raise FixpointError(f"materialization did not converge within {max_rounds} rounds")
    # The last round's tables. The parts of inferred have distinct predicates or are disjoint by
    # construction, so they are concatenated, not unioned (the closure pairs are the bulk).
    facts = [t for t in with_props if t[1] not in (schema_rules.TYPE, schema_rules.SC, schema_rules.SP)]
    sc_cols = map_columns(schema.sc)
    sp_cols = map_columns(sp_map)
    typed = _pair_columns(types)
    type_triples = (typed[0], np.full(len(typed[0]), schema_rules.TYPE, dtype=np.int64), typed[1])
    hierarchy = [(sc_cols[0], np.full(len(sc_cols[0]), schema_rules.SC, dtype=np.int64), sc_cols[1]),
                 (sp_cols[0], np.full(len(sp_cols[0]), schema_rules.SP, dtype=np.int64), sp_cols[1]),
                 _triple_columns(extra)]
    inferred = _concat([_triple_columns(facts), type_triples, *hierarchy])
    trans = np.array(sorted(schema.trans), dtype=np.int64)
    keep = np.isin(inferred[1], trans)
    transitive = (inferred[1][keep], inferred[0][keep], inferred[2][keep])
    classes = set(schema.sc).union(*schema.sc.values()) | {c for _, c in base_types} | {
        c for _, c in schema.dom | schema.rng}
    subclass = _concat([sc_cols, _pair_columns((c, c) for c in classes if c not in schema.sc.get(c, ()))])
    properties = ({p for _, p, _ in with_props} | ({schema_rules.SC} if schema.sc else set())
                  | ({schema_rules.SP} if schema.sp else set()) | ({schema_rules.TYPE} if base_types else set())
                  | {q for pair in schema.sp | schema.inv for q in pair} | {p for p, _ in schema.dom | schema.rng}
                  | schema.sym | schema.trans)
    subproperty = _concat([sp_cols, _pair_columns((q, q) for q in properties if q not in sp_map.get(q, ()))])
    return {"subclass": subclass, "subproperty": subproperty, "types": typed, "transitive": transitive,
            "inferred": inferred, "rounds": round_,
            "schema": schema_record(schema.sp, schema.dom, schema.rng, schema.inv, schema.sym, schema.trans,
                                    schema.owl_classes)}


def map_columns(mapping: dict[int, frozenset]) -> tuple[np.ndarray, np.ndarray]:
    keys = list(mapping)
    lengths = [len(mapping[k]) for k in keys]
    subs = np.repeat(np.array(keys, dtype=np.int64), lengths)
    sups = np.fromiter(itertools.chain.from_iterable(mapping[k] for k in keys), dtype=np.int64, count=sum(lengths))
    return subs, sups


def _pair_columns(pairs: Iterable[Pair]) -> tuple[np.ndarray, np.ndarray]:
    flat = np.fromiter(itertools.chain.from_iterable(pairs), dtype=np.int64).reshape(-1, 2)
    return flat[:, 0].copy(), flat[:, 1].copy()


def _triple_columns(triples: Iterable[Triple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    flat = np.fromiter(itertools.chain.from_iterable(triples), dtype=np.int64).reshape(-1, 3)
    return flat[:, 0].copy(), flat[:, 1].copy(), flat[:, 2].copy()


def _concat(parts: list[tuple]) -> tuple:
    return tuple(np.concatenate([part[i] for part in parts]) for i in range(len(parts[0])))


def _needs_another_round(schema: Schema, added: set[Triple], base_types: set[Pair]) -> bool:
    """``reasoner.materialize._needs_another_round`` on the driver."""
    rule_predicates = {schema_rules.SC, schema_rules.SP, schema_rules.DOM, schema_rules.RANGE, schema_rules.EQC, schema_rules.EQP, schema_rules.INV}
    if any(p in rule_predicates for _, p, _ in added):
        return True
    readers = {s for s, _ in schema.sp | schema.inv | schema.dom | schema.rng} | schema.sym | schema.trans
    if readers & {schema_rules.TYPE, schema_rules.SC, schema_rules.SP}:
        return True
    owl = (schema_rules.SYMMETRIC, schema_rules.TRANSITIVE)
    up = {a: sups & set(owl) for a, sups in schema.sc.items() if not sups.isdisjoint(owl)}
    found = set()
    for x, c in base_types:
        if c in schema.owl_classes:
            found.update((x, o) for o in up.get(c, ()))
            if c in owl:
                found.add((x, c))
    known = {(p, schema_rules.SYMMETRIC) for p in schema.sym} | {(p, schema_rules.TRANSITIVE) for p in schema.trans}
    return bool(found - known)


def dictionary(triples: Iterable[tuple[str, str, str]]) -> dict[str, int]:
    """{term: id} for the terms of string triples plus the entailment vocabulary (the dictionary
    table); raises :class:`HashCollisionError` when two terms share an id."""
    terms = {t for triple in triples for t in triple}
    terms.update(ENTAILMENT_VOCABULARY)
    ids = {t: fast_xxh64(t.encode("utf-8")) for t in terms}
    if len(set(ids.values())) < len(ids):
        by_id: dict[int, list[str]] = defaultdict(list)
        for t, i in ids.items():
            by_id[i].append(t)
        raise HashCollisionError(sorted((i, sorted(ts)) for i, ts in by_id.items() if len(ts) > 1)[:100])
    return ids


def encode(triples: Iterable[tuple[str, str, str]], ids: dict[str, int]) -> tuple[set[Triple], set[int]]:
    """Id triples (distinct) and the ids of the literals."""
    return ({(ids[s], ids[p], ids[o]) for s, p, o in triples},
            {i for t, i in ids.items() if t.startswith('"')})


def closure_sets(triples: Iterable[tuple[str, str, str]]) -> dict[str, set[tuple[str, ...]]]:
    """The reasoner's tables for string triples, on the driver, as sets of N-Triples tuples —
    ``reasoner.api.closure_tables`` without Spark."""
    triples = list(triples)
    ids = dictionary(triples)
    terms = {i: t for t, i in ids.items()}
    tables = materialize(*encode(triples, ids))
    return {name: set(zip(*[[terms[int(v)] for v in column] for column in tables[name]]))
            for name in TABLE_COLUMNS if name in tables}
