"""C-SPARQL's lowering (Barbieri et al., WWW 2009, ``../shared/papers/003_...`` §2-3): a query is
C-SPARQL when ``lang="csparql"`` is given or it has ``REGISTER``, ``FROM STREAM`` or ``AGGREGATE``.
WHERE is lowered as a SPARQL group (as CQELS-CEP's background, ``Lowering.group``) and evaluated
over ONE graph, the default graph of the background's dataset (``Lowering.dataset``: one FROM,
several FROMs merged, none: the default graph given) merged with the ``FROM STREAM`` windows:
``Snapshot(D, windows, P, every)`` (§3.2; ``every`` = COMPUTED EVERY). The dataset is SPARQL's
(§13.2) with the streams in it: its default graph that merge, its named graphs the FROM NAMED
STREAM windows and the FROM NAMED background graphs (all with distinct IRIs). AGGREGATE clauses
become ``Aggregate(Snapshot(...), specs)`` (§3.1, each clause independent), their FILTERs one
``Filter`` above it; ``timestamp(?v [, <s>])`` is ``A.Timestamp`` and
``timestamp(s p o)`` ``A.PatternTimestamp``; ``GRAPH <s> { P }`` is ``A.GraphPattern`` (P over stream
s's window alone, s a FROM [NAMED] STREAM); ``FROM NAMED STREAM`` windows are named graphs only
(``Snapshot.named``); ``GRAPH <g> { P }`` naming no stream is ``A.NamedGraph`` over the named
background graphs, as in the other languages; ``GRAPH ?g { P }`` ranges over both kinds of named
graph: ``Union(A.GraphPattern(?g, P, named streams), A.NamedGraph(?g, P, named graphs))`` (either
side alone when the other has no graph). ``Query.registration`` keeps ("QUERY"|"STREAM", name).
Errors: REGISTER STREAM of a SELECT (§2.5: only CONSTRUCT forms a stream); an AGGREGATE variable
bound by WHERE or by another clause; an argument or group variable WHERE does not bind; SUM / AVG /
MIN / MAX without an argument; a stream both FROM STREAM and FROM NAMED STREAM; an IRI both FROM NAMED
and a stream; CQELS-CEP windows, RSEP-QL MATCH or EP-SPARQL
operators in a C-SPARQL query; ``timestamp(?v)`` whose FILTER's group is not triples only or does
not bind ?v (ts(v, P) reads P's triple patterns, §3.3); timestamp() in an AGGREGATE's FILTER or in
another language; C-SPARQL constructs under another ``lang``.
"""
from __future__ import annotations

from cep import algebra as A
from cep.lowering.common import Lowering, group_elements, position
from cep.syntax import tree as S

__all__ = ["CsparqlLowering", "csparql_parts"]


def csparql_parts(tree: S.Query) -> list[S.Node]:
    """The C-SPARQL constructs of ``tree``: REGISTER, FROM STREAM, AGGREGATE."""
    parts: list[S.Node] = [tree.registration] if tree.registration is not None else []
    return parts + [d for d in tree.datasets if isinstance(d, S.FromStream)] + list(tree.aggregates)


class CsparqlLowering(Lowering):
    """A C-SPARQL query (module doc)."""

    lang = "csparql"

    def __init__(self, tree: S.Query) -> None:
        super().__init__(tree)
        self.streams: dict = {}     # FROM [NAMED] STREAM IRI -> its first clause (GRAPH names them)
        self.named_streams: tuple = ()   # ... the FROM NAMED STREAM ones (GRAPH ?g ranges over them)

    def query(self) -> A.Query:
        """``Project/Construct(Filter(Aggregate(Snapshot(D, windows, P), A_1..A_n)))``: WHERE over
        the background merged with the windows, then the AGGREGATE clauses and their FILTERs."""
        tree = self.tree
        for element in group_elements(tree.where):
            if isinstance(element, (S.WindowBlock, S.EventSequence, S.MatchPattern, S.GroupChain)):
                what = {S.WindowBlock: "a CQELS-CEP WINDOW block", S.EventSequence: "a CQELS-CEP SEQ(...) clause",
                        S.MatchPattern: "an RSEP-QL MATCH", S.GroupChain: "an EP-SPARQL operator between groups"}
                raise self.fail(element, f"{what[type(element)]} in a C-SPARQL query (it has REGISTER, FROM "
                                "STREAM or AGGREGATE): C-SPARQL matches WHERE against the windows' "
                                "triples merged with the background graph", ("triples, OPTIONAL, UNION, FILTER",))
        windows, named = [], []
        self.streams = {}
        graph = self.dataset()
        for dataset in tree.datasets:
            match dataset:
                case S.FromWindow():
                    raise self.fail(dataset, "FROM NAMED WINDOW is CQELS-CEP's; C-SPARQL names its streams with "
                                    "FROM STREAM <s> [RANGE ...]", ("FROM STREAM <s> [RANGE d STEP d]",))
                case S.FromStream():
                    stream = self.term(dataset.stream)
                    first = self.streams.setdefault(stream, dataset)
                    if first.named != dataset.named:
                        raise self.fail(dataset, f"stream {stream} is FROM {'NAMED ' if first.named else ''}STREAM "
                                        f"at {position(first)}: its windows are either named graphs or part of "
                                        "the default graph, not both")
                    windows.append((stream, self.window(dataset.window)))
                    if dataset.named and stream not in named:
                        named.append(stream)
        self.named_streams = tuple(named)
        for dataset in tree.datasets:   # GRAPH <g> names one graph: a stream's window or a background graph
            if isinstance(dataset, S.FromGraph) and dataset.named and self.term(dataset.iri) in self.streams:
                raise self.fail(dataset, f"{self.term(dataset.iri)} is both a FROM NAMED graph and a stream of the "
                                f"query (at {position(self.streams[self.term(dataset.iri)])}): a dataset's named "
                                "graphs have distinct IRIs, and GRAPH would not know which one it names")
        registration = tree.registration
        every = None
        if registration is not None:
            if registration.kind == "STREAM" and not isinstance(tree.form, S.ConstructTemplate):
                raise self.fail(registration, "REGISTER STREAM registers a CONSTRUCT query (C-SPARQL §2.5: only "
                                "queries that produce triples form a stream)", ("REGISTER QUERY", "CONSTRUCT"))
            if registration.every is not None:
                if registration.every.amount <= 0:
                    raise self.fail(registration.every, "COMPUTED EVERY needs a positive duration")
                every = self.duration(registration.every)
        where = self.group(tree.where)
        self.check_timestamps(where)
        pattern: A.Pattern = A.Snapshot(graph, tuple(windows), where, every, tuple(named))
        if tree.aggregates:
            pattern = self.aggregates(pattern, tree.aggregates)
        query = self.finish(pattern)
        if registration is not None:
            query = A.Query(query.form, query.prefixes, query.base, (registration.kind, registration.name),
                            query.modifiers)
        return query

    def timestamp(self, node: S.Call) -> A.Expr:
        """C-SPARQL's timestamp(?v [, <s>]) (§2.7) or timestamp(s p o) (RSEP-QL eq. 9)."""
        args = node.args
        if len(args) == 3:
            return A.PatternTimestamp(*(self.var_or_term(a) for a in args))
        if not isinstance(args[0], S.Variable):
            raise self.fail(args[0], "timestamp() takes a variable, a variable and a stream IRI, or a "
                            "triple pattern s p o", ("a variable ?v",))
        return A.Timestamp(A.Var(args[0].name), self.term(args[1]) if len(args) == 2 else None)

    def graph_pattern(self, element: S.GraphGraphPattern) -> A.Pattern:
        """GRAPH <g> / ?g { P } over the background's named graphs (SPARQL 1.1 §13.3). In C-SPARQL the
        dataset holds the streams too (module doc): GRAPH <stream> { P } is P over that
        stream's window alone (§2.3), GRAPH ?g { P } the union of P over each FROM NAMED STREAM's
        window and over each named background graph, ?g bound to its IRI."""
        graphs = super().graph_pattern(element)
        name, pattern = graphs.name, graphs.pattern
        if not isinstance(name, A.Var):
            return A.GraphPattern(name, pattern) if name in self.streams else graphs
        windows = A.GraphPattern(name, pattern, self.named_streams)   # no named stream: no solution
        if self.named_graphs == ():
            return windows
        return A.Union(windows, graphs) if self.named_streams else graphs

    def check_timestamps(self, pattern: A.Pattern) -> None:
        """timestamp(?v) reads the triples of the FILTER's own basic graph pattern (§3.3, ts(v, P)):
        it must filter a BGP that mentions ?v."""
        for node in A.walk(pattern):
            if not isinstance(node, A.Filter):
                continue
            for e in A.subexpressions(node.condition):
                if isinstance(e, A.Timestamp):
                    if not isinstance(node.inner, A.BGP) or e.var not in A.variables(node.inner):
                        raise self.fail(self.tree.where, f"{e}: ?{e.var.name} must be bound by a triple of the "
                                        "FILTER's own group, and that group must be triples only (C-SPARQL "
                                        "§3.3: ts(v, P) over the triple patterns of P)",
                                        (f"a triple with ?{e.var.name} beside the FILTER",))

    def aggregates(self, pattern: A.Pattern, clauses) -> A.Pattern:
        """§3.1: the clauses are independent; each adds a new variable from WHERE's variables."""
        where_vars = A.variables(pattern)
        specs, filters, seen = [], [], {}
        for clause in clauses:
            var = A.Var(clause.variable.name)
            if var in where_vars:
                raise self.fail(clause.variable, f"{clause.variable} is bound by WHERE; an AGGREGATE clause "
                                "introduces a new variable (C-SPARQL §2.2)", ("a variable not in WHERE",))
            if var in seen:
                raise self.fail(clause.variable, f"{clause.variable} is introduced by two AGGREGATE clauses; the "
                                f"first is at {position(seen[var])}")
            seen[var] = clause
            for used in ((clause.argument,) if clause.argument is not None else ()) + clause.group:
                if A.Var(used.name) not in where_vars:
                    raise self.fail(used, f"{used} is not bound by WHERE: an AGGREGATE clause's argument and "
                                    "group are variables of the WHERE clause (C-SPARQL §2.2)",
                                    tuple(f"?{v.name}" for v in sorted(where_vars, key=lambda v: v.name))[:8])
            if clause.argument is None and clause.function != "COUNT":
                raise self.fail(clause, f"{clause.function} needs an argument, {clause.function}(?v) "
                                "(only COUNT may have none, C-SPARQL §2.2)", (f"{clause.function}(?v)",))
            specs.append(A.AggregateSpec(var, clause.function,
                                         None if clause.argument is None else A.Var(clause.argument.name),
                                         clause.distinct, tuple(A.Var(v.name) for v in clause.group)))
            if clause.filter is not None:
                filters.append(clause.filter)
        out: A.Pattern = A.Aggregate(pattern, tuple(specs))
        condition = self.conjunction(filters)
        if condition is not None:
            for e in A.subexpressions(condition):
                if isinstance(e, (A.Timestamp, A.PatternTimestamp)):
                    raise self.fail(next(f for f in filters), "timestamp() in an AGGREGATE clause's FILTER: "
                                    "it reads the stream triples of WHERE's patterns; put it in WHERE")
            out = A.Filter(condition, out)
        return out
