"""How a continuous query is partitioned for the keyed operator: its key, its buckets (pure Python).

An answer of a CQELS-CEP query combines stream items whose mappings are compatible. When some
variables occur in *every* triple pattern matched against a stream (in every window, every element
of a SEQ, the negated one included), all the items an answer uses, and all the items that may block
it (a negated element's ``μ2 ~ μ1``), bind those variables to the answer's values. So the answers
of one value of those variables — a *key* — depend on the items of that key alone (Flink CEP's
``keyBy``, SASE's PARTITION BY), and the keys can be evaluated apart, on different executors.

The key is the variables that every stream triple pattern binds **and that the answer shows** (the
SELECT's variables; a CONSTRUCT's: those in every template triple that has no blank node). The
second condition keeps Istream's "each answer once" local: two answers that look alike after the
projection have the same key, hence the same bucket, where they are deduplicated. ``SELECT ?s``
over elements ``{?v :delayAt ?s}`` is keyed by ?s, not by (?v, ?s).

An item triple is routed by each stream triple pattern it matches (constants and repeated
variables equal) to the key its key variables take there; a triple matching none of them cannot
take part in an answer and is dropped before the operator. A triple that matches patterns with
different key values goes to each key; a key's evaluation keeps only the answers of that key.

Keys are hashed into a fixed number of *buckets* (``Partition.buckets``), the groups of Spark's
stateful operator: Python costs per group, so a bucket holds many keys, evaluated together by the
numpy kernels (``cep.continuous.keyed.bucket``). The bucket count is fixed when the checkpoint is
created and stored with it.

A query with no key runs in ONE bucket (Flink CEP's parallelism 1), every item in it: its windows
are evaluated together, on one executor. The plan says why (``Partition.single``). That happens
when no variable is shared and shown; with Rstream (the whole answer set wherever it changes); when a window counts triples (``[TRIPLES n]``: which triples
a window holds depends on every key's items, and on triples no pattern matches); and when an answer
may come from the background alone (it binds no stream variable). Replicating a small or negated
side to every bucket would key more queries, but it re-evaluates that side per bucket and per
batch; one bucket is exact and simple, and the benchmark measures what it costs.
"""
from __future__ import annotations

from dataclasses import dataclass

from cep import algebra as A
from cep.continuous.plan import COUNT, ContinuousError, ContinuousPlan, LIFETIMES, RSTREAM, background_only
from cep.engines.driver.walk import supports

__all__ = ["Shape", "Partition", "partition", "route", "refusal", "stream_triples", "DEFAULT_BUCKETS"]

#: buckets of a new checkpoint when none is asked for: a few per core of a small cluster; each is
#: one Python call per micro-batch in which it has rows or a timer
DEFAULT_BUCKETS = 16


@dataclass(frozen=True)
class Shape:
    """One stream triple pattern as the routing sees it: which triples of ``stream`` match it
    (``constants``: (position, term), position 0/1/2 for s/p/o; ``same``: positions that must hold
    the same term, a variable written twice) and where its key variables sit (``key``: a position
    per key variable, in the key's order)."""

    stream: A.Term
    constants: tuple[tuple[int, A.Term], ...]
    same: tuple[tuple[int, int], ...]
    key: tuple[int, ...]


@dataclass(frozen=True)
class Partition:
    """The keyed operator's partitioning of a plan: ``key`` (variable names, empty when the query
    runs in one bucket), the routing ``shapes``, ``single`` (why the query has no key, or None) and
    ``filtering`` (False when every triple of the streams must reach the bucket: a count window)."""

    key: tuple[str, ...]
    shapes: tuple[Shape, ...]
    single: str | None = None
    filtering: bool = True

    @property
    def streams(self) -> tuple[A.Term, ...]:
        return tuple(dict.fromkeys(s.stream for s in self.shapes))


def stream_triples(node) -> list[tuple[A.Term, A.TriplePattern]]:
    """(stream, triple pattern) of every triple pattern matched against a stream in ``node``."""
    out = []
    for sp in A.stream_patterns(node):
        for bgp in A.walk(sp.pattern):
            if isinstance(bgp, A.BGP):
                out.extend((sp.stream, tp) for tp in bgp.patterns)
    return out


def refusal(cplan: ContinuousPlan) -> str | None:
    """Why the keyed operator cannot run ``cplan`` (it then runs elsewhere, or is refused), or None."""
    if cplan.mode != LIFETIMES:
        return ("the query is evaluated at evaluation instants (C-SPARQL, RSEP-QL, EP-SPARQL, or CQELS-CEP with "
                "ORDER BY / LIMIT / NOW() / GROUP BY over events), not as answers with lifetimes")
    why = supports(cplan.query)
    if why is not None:
        return why
    for _stream, tp in stream_triples(cplan.query.pattern):
        if not isinstance(tp, A.TriplePattern):
            return A.stream_path_refusal(A.BGP((tp,))) or f"{tp} inside a WINDOW"
    return None


def partition(cplan: ContinuousPlan) -> Partition:
    """The key and routing of ``cplan`` (module doc); ContinuousError when the keyed operator
    cannot run it (``refusal``)."""
    why = refusal(cplan)
    if why is not None:
        raise ContinuousError(f"the keyed continuous operator cannot run this query: {why}")
    query = cplan.query
    triples = stream_triples(query.pattern)
    shown = _shown(query)
    shared = set(shown)
    for _stream, tp in triples:
        shared &= {part.name for part in (tp.s, tp.p, tp.o) if isinstance(part, A.Var)}
    key = tuple(name for name in shown if name in shared)
    single = None
    if cplan.emit == RSTREAM:
        single = "Rstream reports the whole answer set at every instant where it changes, whatever its keys"
    elif any(w.kind == COUNT for w in cplan.windows):
        single = "a [TRIPLES n] window holds the last n triples of its stream, whatever their key"
    elif background_only(query.pattern):
        single = "an answer can come from the background alone, binding no stream variable"
    elif not key:
        single = ("no variable is both shown by the SELECT and written in every triple pattern over a stream "
                  "(the negated element's included)")
    if single is not None:
        key = ()
    shapes = tuple(dict.fromkeys(_shape(stream, tp, key) for stream, tp in triples))
    return Partition(key, shapes, single, filtering=not any(w.kind == COUNT for w in cplan.windows))


def _shown(query: A.Query) -> list[str]:
    """The variables an answer shows (module doc): the SELECT's; for a CONSTRUCT, those in every
    template triple without a blank node (a blank node is named from the whole solution, key
    included, so a triple holding one cannot come from two keys), all when every triple has one."""
    if isinstance(query.form, A.Project):
        return [v.name for v in query.form.variables]
    names = sorted({v.name for v in A.variables(query.pattern)})
    for tp in query.form.template:
        parts = (tp.s, tp.p, tp.o)
        if not any(isinstance(x, str) and x.startswith("_:") for x in parts):
            names = [n for n in names if A.Var(n) in parts]
    return names


def _shape(stream: A.Term, tp: A.TriplePattern, key: tuple[str, ...]) -> Shape:
    parts = (tp.s, tp.p, tp.o)
    constants = tuple((i, part) for i, part in enumerate(parts) if not isinstance(part, A.Var))
    first: dict[str, int] = {}
    same = []
    for i, part in enumerate(parts):
        if isinstance(part, A.Var):
            if part.name in first:
                same.append((first[part.name], i))
            else:
                first[part.name] = i
    return Shape(stream, constants, tuple(same), tuple(first[name] for name in key))


def route(part: Partition, stream: A.Term, triple: tuple[A.Term, A.Term, A.Term]) -> list[tuple[A.Term, ...]]:
    """The keys (tuples of terms, in the key's order) that a triple of ``stream`` goes to, each
    once: one per shape it matches (module doc); every triple goes to the one key () when the
    partition does not filter (a count window)."""
    if not part.filtering:
        return [()]
    out = []
    for shape in part.shapes:
        if shape.stream != stream:
            continue
        if any(triple[i] != term for i, term in shape.constants) or any(triple[i] != triple[j] for i, j in shape.same):
            continue
        out.append(tuple(triple[i] for i in shape.key))
    return list(dict.fromkeys(out))
