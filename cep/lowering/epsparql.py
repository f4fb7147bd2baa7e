"""EP-SPARQL's lowering (Anicic et al., WWW 2011, ``../shared/papers/000_...`` §4): a query is
EP-SPARQL when ``lang="epsparql"`` is given, or (``lang=None``) when it combines groups with SEQ, EQUALS,
OPTIONALSEQ or EQUALSOPTIONAL and has no window. It names no stream: its WHERE pattern P is
evaluated over the triple occurrences of every stream given, ``Project(V, Occurrences(P))``, with
the translation of §4.2: adjacent triples one BGP (each triple matched in any occurrence, the
intervals covered); juxtaposed patterns CoverJoin; UNION Union; ``OPTIONAL {P FILTER F}``
CoverLeftJoin(·, P, F); ``SEQ`` SeqJoin (``Sequence``); ``EQUALS`` EqJoin; ``P1 OPTIONALSEQ P2``
SeqRightJoin(P1, P2, F) with F the FILTERs of P1's group (P1 is the optional side, as the
optional group's filters are OPTIONAL's condition in SPARQL); ``P1 EQUALSOPTIONAL P2``
EqLeftJoin(P1, P2, F), F the FILTERs of P2's group. A chain ``{A} op {B} op {C}`` is read left to
right, ``((A op B) op C)``; a group's FILTERs restrict the whole group, getDURATION() etc.
reading the group's interval. ``BIND(e AS ?v)`` is an Extend of the group before it and a
sub-query ``{ SELECT ... }`` (its WHERE an EP-SPARQL group too; the paper's example (5)) a
SubSelect juxtaposed as any pattern: both keep each solution's interval (``ep_sub_select``). A
query is EP-SPARQL also when its operators are inside a sub-query only. Errors: windows, FROM
graphs, property paths, empty groups, MINUS, VALUES and GRAPH in an EP-SPARQL query (the stream
is the only input; an empty group has no interval; §4.2 defines no such operator), a BIND first
in a group, grouping, VALUES, LIMIT or OFFSET in a sub-query over the stream, and EP-SPARQL
operators in a query lowered as CQELS-CEP (``lang="cqels"``).
"""
from __future__ import annotations

from cep import algebra as A
from cep.lowering.common import Lowering, group_elements, syntax_aggregates
from cep.syntax import tree as S

__all__ = ["EpsparqlLowering", "ep_chains"]


def ep_chains(tree: S.Query) -> list[S.GroupChain]:
    """The groups combined with EP-SPARQL's operators (SEQ, EQUALS, ...) in ``tree``'s WHERE."""
    return [e for e in group_elements(tree.where) if isinstance(e, S.GroupChain)]


class EpsparqlLowering(Lowering):
    """An EP-SPARQL query (module doc)."""

    lang = "epsparql"

    def query(self) -> A.Query:
        """``Project(V, Occurrences(P))``: WHERE over the triple occurrences of every stream given."""
        return self.finish(self.ep_pattern())

    def ep_pattern(self) -> A.Pattern:
        tree = self.tree
        for dataset in tree.datasets:
            what = "FROM graphs" if isinstance(dataset, S.FromGraph) else "windows"
            raise self.fail(dataset, f"an EP-SPARQL query reads only the streams given (EP-SPARQL "
                            f"§4.2); {what} are not part of it",
                            ("WHERE",))
        return A.Occurrences(self.ep_group(tree.where))

    def ep_group(self, group: S.Group) -> A.Pattern:
        """A group over the stream, translated as EP-SPARQL §4.2 does (module docstring)."""
        pattern: A.Pattern | None = None
        filters = []

        def joined(part: A.Pattern) -> A.Pattern:
            if pattern is None:
                return part
            if isinstance(pattern, A.BGP) and isinstance(part, A.BGP):
                return A.bgp(pattern, part)
            return A.CoverJoin(pattern, part)

        for element in group.elements:
            match element:
                case S.FilterPattern():
                    filters.append(element)
                case S.TriplesBlock():
                    pattern = joined(self.bgp(element, paths_allowed=False,
                                              where="over a stream (EP-SPARQL)"))
                case S.OptionalPattern():
                    if pattern is None:
                        raise self.fail(element, "OPTIONAL over a stream needs a pattern before it: "
                                        "an empty pattern has no interval (EP-SPARQL §4.2)",
                                        ("triples", "{ ... }"))
                    inner, condition = _split_filter(self.ep_group(element.group))
                    pattern = A.CoverLeftJoin(pattern, inner, condition)
                case S.UnionPattern():
                    pattern = joined(A.union(*(self.ep_group(g) for g in element.groups)))
                case S.GroupChain():
                    pattern = joined(self.ep_chain(element))
                case S.Bind():
                    if pattern is None:
                        raise self.fail(element, "BIND over a stream needs a pattern before it: an empty pattern "
                                        "has no interval (EP-SPARQL §4.2)", ("triples", "{ ... }"))
                    pattern = self.bind(pattern, element)
                case S.SubQuery():
                    pattern = joined(self.ep_sub_select(element))
                case S.MinusPattern() | S.InlineData() | S.GraphGraphPattern():
                    what = {S.MinusPattern: "MINUS", S.InlineData: "VALUES", S.GraphGraphPattern: "GRAPH"}
                    raise self.fail(element, f"{what[type(element)]} is supported over background patterns and "
                                    "C-SPARQL's WHERE, not over EP-SPARQL's streams (§4.2 defines no such operator "
                                    "on solutions with intervals); BIND and sub-queries are",
                                    ("triples", "{ ... }", "BIND", "FILTER"))
                case S.WindowBlock() | S.EventSequence() | S.MatchPattern():
                    raise self.fail(element, "an EP-SPARQL query has no windows: it reads the "
                                    "streams given (EP-SPARQL §4.2); windows are CQELS-CEP's "
                                    "(leave out --lang epsparql, or the EP-SPARQL operators)")
                case _:
                    raise TypeError(f"not a group element: {element!r}")
        if pattern is None:
            raise self.fail(group, "an empty group over a stream has no interval (EP-SPARQL §4.2)",
                            ("triples",))
        with self.exists_refused("over EP-SPARQL's streams"):
            condition = self.conjunction(filters)
        return pattern if condition is None else A.Filter(condition, pattern)

    def ep_chain(self, chain: S.GroupChain) -> A.Pattern:
        acc = self.ep_group(chain.groups[0])
        for op, group in zip(chain.operators, chain.groups[1:]):
            right = self.ep_group(group)
            match op:
                case "UNION":
                    acc = A.Union(acc, right)
                case "SEQ":
                    acc = A.Sequence(acc, right)
                case "EQUALS":
                    acc = A.EqJoin(acc, right)
                case "OPTIONALSEQ":
                    optional, condition = _split_filter(acc)
                    acc = A.SeqRightJoin(optional, right, condition)
                case "EQUALSOPTIONAL":
                    optional, condition = _split_filter(right)
                    acc = A.EqLeftJoin(acc, optional, condition)
                case _:
                    raise TypeError(f"unknown operator {op!r}")
        return acc

    def ep_sub_select(self, q: S.SubQuery) -> A.SubSelect:
        """``{ SELECT ... }`` over EP-SPARQL's streams, as the paper's example (5) writes it (§4.1):
        its WHERE an EP-SPARQL group over the same occurrences, then SELECT's ``expr AS ?v`` (an
        ``Extend``, as BIND) and the projection. §4.2 defines only the operators on solutions
        ⟨μ, tα, tω⟩, and says that a SELECT's solutions are "further processed (with respect to
        variable projection and output formatting) like for normal SPARQL"; so we chose that
        Extend and Project leave the interval as it is: ⟨μ ∪ {?v ↦ value}, tα, tω⟩ and
        ⟨μ|V, tα, tω⟩ (getDURATION() etc. in an expression read that interval, as in a FILTER). A
        sub-query's solutions are those of its pattern, so (5)'s rule derives its triples over the
        interval of the solution they sum up. Refused, with the reason: GROUP BY, HAVING and
        aggregates (§4.2 gives a group of solutions no interval), trailing VALUES (as in a group),
        LIMIT and OFFSET (they would drop solutions that a later instant keeps: not timewise
        monotone, §4.2 remarks)."""
        found = [e for item in q.form.variables or () if isinstance(item, S.SelectExpression)
                 for e in syntax_aggregates(item.expr)]
        refused = ([(found[0], "aggregates")] if found else []) + \
                  ([(q.group_by[0], "GROUP BY")] if q.group_by else []) + \
                  ([(q.having[0], "HAVING")] if q.having else []) + \
                  ([(q.values, "VALUES")] if q.values is not None else [])
        for node, what in refused:
            raise self.fail(node, f"{what} in a sub-query over EP-SPARQL's streams: §4.2 defines no interval "
                            "for a group of solutions (and VALUES none for its rows); a sub-query there "
                            "selects variables and expressions (expr AS ?v)", ("?v", "(expr AS ?v)"))
        if q.limit is not None or q.offset:
            raise self.fail(q, "LIMIT / OFFSET in a sub-query over EP-SPARQL's streams: they would drop "
                            "solutions that a later instant keeps, and EP-SPARQL's answers are timewise "
                            "monotone (§4.2 remarks); put them on the query itself")
        return self.sub_select(q, self.ep_group(q.where))


def _split_filter(pattern: A.Pattern) -> tuple[A.Pattern, A.Expr | None]:
    """(inner, condition) of a Filter, else (pattern, None): a group's FILTERs as an optional
    join's condition."""
    if isinstance(pattern, A.Filter):
        return pattern.inner, pattern.condition
    return pattern, None
