"""Syntax tree (``cep.syntax.tree``) → algebra (``cep.algebra.patterns``), with the checks the grammar cannot do.

``lower(tree)`` builds the paper's model Q = (V, P, D, EC) (CQELS-CEP §3.2) as one algebra tree:

* ``[[Q, t]] = π_V JOIN([[EC, t]], [[P, t]]_D)`` (eq. 1), the event clauses joined right-associated
  (eq. 2): ``Project(V, JOIN(EC_1, JOIN(EC_2, ..., Background(D, P))))``.
* An event clause is a window ``WINDOW :W { TSP }`` (a ``StreamPattern``, eq. 9) or a sequence of
  windows ``SEQ(:W1, ..., !:Wi, ..., :Wn)`` naming WINDOW blocks; a TSP is a BGP or a sequence of
  BGPs ``SEQ({P1}, ..., !{Pi}, ..., {Pn})``. Both kinds of sequence are built by
  ``cep.algebra.patterns.sequence``: right-associated (eq. 3, 10), a negated element inside is
  ``SEQ_WO(SEQ(prefix), neg, SEQ(suffix))`` (eq. 5, 12), at the head ``NO_HEAD`` (eq. 6, 13), at the
  tail ``NO_TAIL`` (eq. 7, 14); a sequence of one element is that element.
* Everything else in WHERE — triples (with paths), OPTIONAL, UNION, nested groups — is the
  background pattern P over D: ``Background(graph, P)`` (eq. 17), graph = the dataset's default
  graph (``_Lowering.dataset``: the ``FROM`` IRI, several FROMs' merge, None without FROM). The
  paper's §3.2 takes |D| = 1; SPARQL 1.1's datasets (§13.2) are the extension: several FROMs are
  merged into one default graph, FROM NAMED graphs are read with GRAPH. P is translated as SPARQL 1.1 §18.2.2.6 does a
  group (adjacent triples one BGP, OPTIONAL a LeftJoin of what precedes it, UNION an OR); the
  WINDOW blocks and SEQ clauses are taken out of the group first, so an OPTIONAL's left side is the
  background elements written before it.
* FILTERs of the top group restrict the whole join (SPARQL: a filter applies to its whole group);
  FILTERs in a WINDOW block restrict that window's TSP; FILTERs in a nested group, that group.

Decisions the paper leaves open (documented here, tested in tests/test_cep_lower.py):

* A window named in an event-clause SEQ is evaluated there only; it is not joined a second time
  on its own. A WINDOW block named by no SEQ is an event clause of its own. Event clauses are
  joined in the order written (JOIN is commutative), the background last.
* A query with no window is a background-only query: ``Project(V, Background(D, P))``. A query
  with windows and no background triples has no Background node.
* A window is declared by ``FROM NAMED WINDOW :W ON <s> [w]`` or in place, ``WINDOW :W ON <s> [w]
  { TSP }`` (the paper's WinSpec); a declared window without a WINDOW block and unused is ignored,
  as SPARQL ignores an unused FROM NAMED.

Errors (``CepSemanticError``, with the line and column of the offending part):

* a window named in a SEQ or a WINDOW block that is not declared; a window declared twice; two
  WINDOW blocks for one window; a window named in a SEQ that has no WINDOW block;
* two negated elements in one sequence (§3.1, §3.2: "at most one element negated"); a sequence
  whose only element is negated (NO_HEAD / NO_TAIL / SEQ_WO need a positive side, §4.2);
* a property path inside a window (TSP ::= TrTemp, §3.1: triples templates only; paths are for the
  background, §3.2 "P is an extended graph pattern"); a WINDOW block without a pattern;
* WINDOW / SEQ inside OPTIONAL, UNION or a nested group (event clauses belong to the query, §3.2);
* a SELECTed variable that no pattern binds (one that occurs only in a negated element binds
  nothing: NO_HEAD / NO_TAIL / SEQ_WO keep the positive side's mapping, §4.2);
* paths in CONSTRUCT templates (not supported; use a variable / an IRI).

The paper puts no restriction on the variables of a negated element (SEQ_WO only asks its mappings
to be compatible); neither do we.

EP-SPARQL (Anicic et al., WWW 2011, ``../shared/papers/000_...`` §4): a query is EP-SPARQL when
``lang="epsparql"`` is given, or (``lang=None``) when it combines groups with SEQ, EQUALS,
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

RSEP-QL (Dell'Aglio et al., EKAW 2016, ``../shared/papers/001_...`` §3.3): a query is RSEP-QL when
``lang="rsepql"`` is given or it has a ``MATCH [policy] ( E )``. Each top-level MATCH is an event
clause (``A.Match``), joined with the others and the background exactly as CQELS-CEP's windows
(eq. 1-2); ``EVENT :w { triples }`` names a window declared by ``FROM NAMED WINDOW`` (read as
RSEP-QL's window functions, ``A.EventPattern``), ``FIRST``/``LAST``/``SEQ`` build the event
pattern, and every SEQ takes the MATCH's policy, or ``policy=`` when the MATCH names none.
Errors: an undeclared or TRIPLES window, a path or no triple in an EVENT, a MATCH below the top
level, CQELS-CEP's WINDOW blocks or SEQ(...) beside a MATCH, and MATCH under ``lang="cqels"``.

C-SPARQL (Barbieri et al., WWW 2009, ``../shared/papers/003_...`` §2-3): a query is C-SPARQL when
``lang="csparql"`` is given or it has ``REGISTER``, ``FROM STREAM`` or ``AGGREGATE``. WHERE is lowered
as a SPARQL group (as the background above) and evaluated over ONE graph, the default graph of the
background's dataset (``dataset``: one FROM, several FROMs merged, none: the default graph given)
merged with the ``FROM STREAM`` windows: ``Snapshot(D, windows, P, every)`` (§3.2; ``every`` =
COMPUTED EVERY). The dataset is SPARQL's (§13.2) with the streams in it: its default graph that
merge, its named graphs the FROM NAMED STREAM windows and the FROM NAMED background graphs (all
with distinct IRIs). AGGREGATE clauses become ``Aggregate(Snapshot(...), specs)`` (§3.1, each clause independent),
their FILTERs one ``Filter`` above it; ``timestamp(?v [, <s>])`` is ``A.Timestamp`` and
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

SPARQL 1.1 solution modifiers, for every language: GROUP BY / HAVING / ``(aggregate AS ?v)``
become ``Aggregate`` (+ ``Filter``) under the projection (background-only and C-SPARQL queries;
see ``_Lowering.grouping``), or ``GroupCover`` (+ ``Filter``) over event clauses (CQELS-CEP,
RSEP-QL, EP-SPARQL; below); ORDER BY / LIMIT / OFFSET ``Query.modifiers`` (keys over the selected
variables). Errors: a selected variable neither grouped nor aggregated, ``(expr AS ?v)`` other than
an aggregate, an aggregate of an expression or outside SELECT / HAVING, ``?v`` already bound,
HAVING without grouping, SELECT * with GROUP BY, an ORDER BY key reading an unselected variable.

Grouping over event clauses (CQELS-CEP with windows / SEQ, RSEP-QL's MATCH, EP-SPARQL's operators;
none of the papers has grouping over events, this is SPARQL 1.1 §11 over their mappings with
intervals): ``Project(V, Filter(HAVING, GroupCover(P, G, aggregates)))``. The solutions of ⟦P, t⟧
are mappings with intervals [t1, t2]; the group of a key k is the set of distinct (mapping,
interval) solutions agreeing with k on the GROUP BY variables G (set semantics as everywhere in
``cep``: two events with the same mapping and different intervals are two members, so COUNT counts
events). Each group gives ONE answer: k, the aggregates, and the interval covering its members, [min
t1, max t2] (as EP-SPARQL's joins cover their parts). HAVING filters those answers (getDURATION()
etc. read the cover), the projection keeps them. The implicit group (aggregates without GROUP BY)
over no solution gives one answer, COUNT 0 etc., over [t, t]: not [since, t] as ``Aggregate`` over a
background (every background answer has that interval; the windows' content has not been unchanged
since ``since``, so "none" holds at t, not over that span), but the evaluation instant, which the
count is about and every solution ends by. GROUP BY without aggregates is a ``GroupCover`` too (one
answer per group, not one per member interval); only the group variables and the aggregates are in
scope above it. C-SPARQL's ``Aggregate`` (each mapping keeps its own interval) is unchanged.
Evaluated at instants (``cep.evaluate(..., at=t)``, ``query --at T``); a continuous run evaluates it
at its windows' content changes (``cep.continuous.plan``, "CQELS-CEP at evaluation instants": a group's
members, values and cover change with t, which no row's lifetime says).
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from cep import algebra as A
from cep.syntax import tree as S
from cep.syntax.parser import CepSemanticError, parse
from paths.lowering import lower as lower_path
from paths.lowering import term as lower_term

__all__ = ["lower", "compile_query", "LANGUAGES", "detect_language"]

#: the query languages ``lower`` reads
LANGUAGES = ("cqels", "csparql", "epsparql", "rsepql")


def _error(tree_text: str, node: S.Node, reason: str, expected: tuple[str, ...] = ()):
    span = node.span
    return CepSemanticError(reason, tree_text, max(span.start_line, 1), max(span.start_column, 1),
                            expected)


def _where(node: S.Node) -> str:
    return f"line {node.span.start_line}, column {node.span.start_column}"


def _elements(group: S.Group):
    """Every syntax element under ``group``, pre-order."""
    for element in group.elements:
        yield element
        match element:
            case S.OptionalPattern() | S.GraphGraphPattern():
                yield from _elements(element.group)
            case S.UnionPattern() | S.GroupChain():
                for g in element.groups:
                    yield from _elements(g)
            case S.SubQuery():
                yield from _elements(element.where)


def _ep_chains(tree: S.Query) -> list[S.GroupChain]:
    return [e for e in _elements(tree.where) if isinstance(e, S.GroupChain)]


def _csparql_parts(tree: S.Query) -> list[S.Node]:
    """The C-SPARQL constructs of ``tree``: REGISTER, FROM STREAM, AGGREGATE."""
    parts: list[S.Node] = [tree.registration] if tree.registration is not None else []
    return parts + [d for d in tree.datasets if isinstance(d, S.FromStream)] + list(tree.aggregates)


def detect_language(tree: S.Query) -> str:
    """"csparql" for a query with REGISTER, FROM STREAM or AGGREGATE; "rsepql" for one with a
    MATCH event pattern; "epsparql" for one that combines groups with EP-SPARQL's operators and
    has no window; else "cqels"."""
    if _csparql_parts(tree):
        return "csparql"
    if any(isinstance(e, S.MatchPattern) for e in _elements(tree.where)):
        return "rsepql"
    windows = any(isinstance(d, S.FromWindow) for d in tree.datasets) or any(
        isinstance(e, (S.WindowBlock, S.EventSequence)) for e in _elements(tree.where))
    return "epsparql" if _ep_chains(tree) and not windows else "cqels"


class _Lowering:
    def __init__(self, tree: S.Query, policy: str = "unrestricted") -> None:
        self.tree = tree
        self.text = tree.text
        if policy not in A.POLICIES:
            raise ValueError(f"unknown selection policy {policy!r}; expected one of {', '.join(A.POLICIES)}")
        self.policy = policy
        self.lang = "cqels"
        self.streams: dict = {}     # C-SPARQL: FROM [NAMED] STREAM IRI -> its first clause (GRAPH names them)
        self.named_streams: tuple = ()   # ... the FROM NAMED STREAM ones (GRAPH ?g ranges over them)
        self.named_graphs: tuple | None = None   # FROM NAMED (None: no dataset clause)
        # EXISTS { P }: where P is matched. "here": in the scope of the FILTER (a background group,
        # C-SPARQL's WHERE); ("background", g): over background g (a top-level FILTER, which stands
        # over the event clauses); ("refused", where): not supported there
        self.exists_scope: object = "here"
        self.exists_depth = 0
        # blank nodes in patterns: label -> (hidden variable, the group using it, its first use)
        self.blank_vars: dict[str, tuple[A.Var, S.Node, S.Node]] = {}
        self.hidden: set[A.Var] = set()
        self.current_block: S.Node | None = None
        self.written = set(_VARIABLE_NAME.findall(tree.text or ""))

    def fail(self, node: S.Node, reason: str, expected: tuple[str, ...] = ()):
        return _error(self.text, node, reason, expected)

    # -- terms and triples
    def term(self, node) -> A.Term:
        """A term as in a path (``paths.lowering.term``); blank nodes are refused."""
        if isinstance(node, S.BlankNode):
            raise self.fail(node, "blank nodes are supported in WHERE patterns (variables no answer shows), "
                            "not here (a CONSTRUCT template, a window or graph name)",
                            ("a variable", "an IRI", "a literal"))
        return lower_term(node)

    def var_or_term(self, node):
        if isinstance(node, S.Variable):
            return A.Var(node.name)
        if isinstance(node, S.BlankNode) and self.current_block is not None:
            return self.blank_var(node)
        return self.term(node)

    def blank_var(self, node: S.BlankNode) -> A.Var:
        """A blank node in a pattern: a variable no answer shows (SPARQL 1.1 §4.1.4, §18.2.1; its
        label is scoped to one basic graph pattern, §4.1.4)."""
        found = self.blank_vars.get(node.label)
        if found is not None:
            var, block, first = found
            if block is not self.current_block:
                raise self.fail(node, f"blank node _:{node.label} is used in two basic graph patterns; the "
                                f"first use is at {_where(first)} (SPARQL 1.1 §4.1.4)", ("another label", "a variable"))
            return var
        base = "b_" + "".join(ch if ch.isalnum() else "_" for ch in node.label)
        name, k = base, 1
        while name in self.written or A.Var(name) in self.hidden:
            k += 1
            name = f"{base}_{k}"
        var = A.Var(name)
        self.hidden.add(var)
        self.blank_vars[node.label] = (var, self.current_block, node)
        return var

    def triple(self, node: S.Triple, *, paths_allowed: bool, where: str):
        s, o = self.var_or_term(node.s), self.var_or_term(node.o)
        if isinstance(node.p, S.Variable):
            return A.TriplePattern(s, A.Var(node.p.name), o)
        pattern = A.path_pattern(s, lower_path(node.p), o)
        if isinstance(pattern, A.PathPattern) and not paths_allowed:
            raise self.fail(node.p, f"a property path is not allowed {where}: only triples "
                            f"(CQELS-CEP §3.1, TSP ::= TrTemp); paths belong to the background",
                            ("an IRI", "'a'", "a variable"))
        return pattern

    def bgp(self, block: S.TriplesBlock, *, paths_allowed: bool, where: str, owner: S.Node | None = None) -> A.BGP:
        """``owner``: the group the block's blank node labels belong to (the triples of one group
        form one basic graph pattern, whatever FILTERs stand between them)."""
        self.current_block = block if owner is None else owner
        try:
            return A.bgp(*(self.triple(t, paths_allowed=paths_allowed, where=where)
                           for t in block.triples))
        finally:
            self.current_block = None

    # -- expressions (SPARQL 1.1 §17)
    def expr(self, node) -> A.Expr:
        match node:
            case S.Variable():
                return A.Var(node.name)
            case S.Binary():
                left, right = self.expr(node.left), self.expr(node.right)
                if node.op == "||":
                    return A.Or(left, right)
                if node.op == "&&":
                    return A.And(left, right)
                if node.op in A.COMPARE_OPS:
                    return A.Compare(node.op, left, right)
                return A.Arith(node.op, left, right)
            case S.Unary():
                inner = self.expr(node.operand)
                return A.Not(inner) if node.op == "!" else A.Neg(inner)
            case S.Call(name="BOUND"):
                return A.Bound(A.Var(node.args[0].name))
            case S.Call(name="REGEX"):
                return A.Regex(*(self.expr(arg) for arg in node.args))
            case S.Call(name=name) if name.startswith("GET"):
                return A.IntervalFn(name[3:])
            case S.Call(name="TIMESTAMP"):
                return self.timestamp(node)
            case S.Call(name=name) if name in A.BUILTINS:
                least, most = (1, 1) if name in ("IRI", "URI") else A.BUILTINS[name]   # 2: the base, added here
                if len(node.args) < least or (most is not None and len(node.args) > most):
                    wanted = (f"{least}" if least == most else f"at least {least}" if most is None
                              else f"{least} to {most}")
                    raise self.fail(node, f"{name} takes {wanted} argument(s), not {len(node.args)} "
                                    "(SPARQL 1.1 §17.4)", (f"{wanted} argument(s)",))
                args = tuple(self.expr(arg) for arg in node.args)
                if name in ("IRI", "URI") and self.base() is not None:    # §17.4.2.8: a relative IRI
                    args += (A.Const(f"<{self.base()}>"),)                  # resolves against BASE
                return A.Builtin(name, args)
            case S.ExistsCall():
                return self.exists(node)
            case S.AggregateCall():
                var = getattr(self, "agg_vars", {}).get(node)
                if var is None:
                    raise self.fail(node, f"{node.function}(...) belongs in SELECT (... AS ?v) or HAVING "
                                    "(SPARQL 1.1 §11)", ("an expression without aggregates",))
                return var
            case S.InList(negated=negated, expr=left, items=items):
                # §17.4.1.9: IN is (e = e1) || (e = e2) ..., NOT IN is (e != e1) && ...
                subject = self.expr(left)
                parts = [A.Compare("!=" if negated else "=", subject, self.expr(item)) for item in items]
                if not parts:
                    return A.Const(f'"{"true" if negated else "false"}"^^<http://www.w3.org/2001/XMLSchema#boolean>')
                out = parts[0]
                for part in parts[1:]:
                    out = A.And(out, part) if negated else A.Or(out, part)
                return out
            case S.Call():
                inner = self.expr(node.args[0])
                return {"STR": A.Str, "LANG": A.Lang, "DATATYPE": A.Datatype}[node.name](inner)
            case _:
                return A.Const(self.term(node))

    def plain_expr(self, node, where: str) -> A.Expr:
        """An expression whose value is bound (BIND, SELECT (... AS ?v), an aggregate's argument):
        no EXISTS, no timestamp()."""
        saved, self.exists_scope = self.exists_scope, ("refused", where)
        try:
            expr = self.expr(node)
        finally:
            self.exists_scope = saved
        if A.uses_timestamp(expr):
            raise self.fail(node, f"timestamp() is not supported {where}")
        return expr

    def exists(self, node: S.ExistsCall) -> A.Expr:
        """[NOT] EXISTS { P } (SPARQL 1.1 §17.4.1.4): P matched where ``exists_scope`` says."""
        scope = self.exists_scope
        if isinstance(scope, tuple) and scope[0] == "refused":
            raise self.fail(node, f"EXISTS is not supported {scope[1]}; it is in FILTERs over background "
                            "patterns and C-SPARQL's WHERE", ("a FILTER of the background part",))
        for element in _elements(node.group):
            if isinstance(element, S.SubQuery):
                raise self.fail(element, "a sub-query inside EXISTS is not supported", ("triples", "a group"))
        saved, self.exists_scope = self.exists_scope, "here"
        self.exists_depth += 1
        try:
            pattern = self.group(node.group)
        finally:
            self.exists_scope = saved
            self.exists_depth -= 1
        for inner in A.walk(pattern):
            if isinstance(inner, (A.Filter, A.LeftJoin)) and inner.condition is not None and \
                    A.uses_timestamp(inner.condition):
                raise self.fail(node, "timestamp() inside EXISTS is not supported")
        if isinstance(scope, tuple):
            pattern = A.Background(scope[1], pattern)
        out = A.Exists(pattern)
        return A.Not(out) if node.negated else out

    def timestamp(self, node: S.Call) -> A.Expr:
        """C-SPARQL's timestamp(?v [, <s>]) (§2.7) or timestamp(s p o) (RSEP-QL eq. 9)."""
        if self.lang != "csparql":
            raise self.fail(node, "timestamp() is C-SPARQL's (§2.7) and reads the windows of FROM STREAM; "
                            f"this query is read as {_NAMES[self.lang]}", ("a C-SPARQL query",))
        args = node.args
        if len(args) == 3:
            return A.PatternTimestamp(*(self.var_or_term(a) for a in args))
        if not isinstance(args[0], S.Variable):
            raise self.fail(args[0], "timestamp() takes a variable, a variable and a stream IRI, or a "
                            "triple pattern s p o", ("a variable ?v",))
        return A.Timestamp(A.Var(args[0].name), self.term(args[1]) if len(args) == 2 else None)

    def conjunction(self, filters: list[S.FilterPattern]) -> A.Expr | None:
        condition = None
        for item in filters:
            expr = self.expr(item.expr)
            condition = expr if condition is None else A.And(condition, expr)
        return condition

    # -- windows
    def duration(self, node: S.DurationLiteral) -> A.Duration:
        return A.Duration(node.amount, node.unit)

    def window(self, node) -> A.Window:
        match node:
            case S.RangeWindow():
                step = None if node.step is None else self.duration(node.step)
                return A.Range(self.duration(node.range), step, node.tumbling)
            case S.TriplesWindow():
                return A.Triples(node.n)
            case S.NowWindow():
                return A.Now()
            case S.AllWindow():
                return A.All()
        raise TypeError(f"not a window: {node!r}")

    def check_negations(self, elements) -> int | None:
        """The index of the negated element, after checking there is at most one and that it is
        not alone (§3.1-§3.2)."""
        negated = [i for i, element in enumerate(elements) if element.negated]
        if len(negated) > 1:
            first = elements[negated[0]]
            raise self.fail(elements[negated[1]],
                            "a sequence has at most one negated element (CQELS-CEP §3.1-§3.2); "
                            f"the first one is at {_where(first)}")
        if negated and len(elements) == 1:
            raise self.fail(elements[0], "a negated element needs at least one positive element "
                            "in its sequence (NO_HEAD, NO_TAIL and SEQ_WO, CQELS-CEP §4.2)")
        return negated[0] if negated else None

    def window_graph(self, block: S.WindowBlock, name, stream, window) -> A.WindowGraph:
        """RSEP-QL's ``WINDOW w P``: P (triples and FILTERs) over the window's merged graph."""
        if any(isinstance(item, S.TspSequence) for item in block.body):
            raise self.fail(block, f"window {block.name}: SEQ inside a WINDOW block is CQELS-CEP's; in RSEP-QL "
                            f"a window graph pattern holds triples (event sequences go inside MATCH)",
                            ("triples",))
        if isinstance(window, A.Triples):
            raise self.fail(block, f"window {block.name} is a TRIPLES window, which RSEP-QL's window functions "
                            f"W^τ(α, β) do not define", ("[RANGE d]", "[RANGE d STEP s]", "[ALL]", "[NOW]"))
        return A.WindowGraph(name, stream, window, self.tsp(block))

    def tsp(self, block: S.WindowBlock) -> A.Pattern:
        where = f"in window {block.name}"
        filters = [item for item in block.body if isinstance(item, S.FilterPattern)]
        patterns = [item for item in block.body if not isinstance(item, S.FilterPattern)]
        if not patterns:
            raise self.fail(block, f"window {block.name} has no pattern: a WINDOW block holds "
                            "triples or SEQ(...) (CQELS-CEP §3.1 TSP)",
                            ("triples", "SEQ(...)"))
        (body,) = patterns
        if isinstance(body, S.TriplesBlock):
            pattern = self.bgp(body, paths_allowed=False, where=where)
        else:
            negated = self.check_negations(body.elements)
            parts = [self.bgp(e.triples, paths_allowed=False, where=where) for e in body.elements]
            pattern = A.sequence(*parts, negated=negated)               # eq. 10-15
        saved, self.exists_scope = self.exists_scope, ("refused", "inside a window")
        try:
            condition = self.conjunction(filters)
        finally:
            self.exists_scope = saved
        return pattern if condition is None else A.Filter(condition, pattern)

    # -- background groups (SPARQL 1.1 §18.2.2.6)
    def group(self, group: S.Group, elements=None) -> A.Pattern:
        elements = group.elements if elements is None else elements
        pattern: A.Pattern = A.BGP(())
        filters = []
        for element in elements:
            match element:
                case S.FilterPattern():
                    filters.append(element)
                case S.TriplesBlock():
                    block = self.bgp(element, paths_allowed=True, where="", owner=group)
                    pattern = A.bgp(pattern, block) if isinstance(pattern, A.BGP) \
                        else _join(pattern, block)
                case S.OptionalPattern():
                    inner = self.group(element.group)
                    if isinstance(inner, A.Filter):
                        pattern = A.left_join(pattern, inner.inner, inner.condition)
                    else:
                        pattern = A.left_join(pattern, inner)
                case S.UnionPattern():
                    pattern = _join(pattern, A.union(*(self.group(g) for g in element.groups)))
                case S.GraphGraphPattern():
                    pattern = _join(pattern, self.graph_pattern(element))
                case S.MinusPattern():                                       # §18.2.2.6
                    pattern = A.Minus(pattern, self.group(element.group))
                case S.InlineData():
                    pattern = _join(pattern, self.values(element))
                case S.Bind():                                               # §18.2.2.6 Extend
                    pattern = self.bind(pattern, element)
                case S.SubQuery():
                    pattern = _join(pattern, self.sub_select(element))
                case S.GroupChain():
                    op = next(o for o in element.operators if o != "UNION")
                    raise self.fail(element, f"{op} between groups is EP-SPARQL (§4.1), and this query "
                                    "is read as CQELS-CEP (it has windows, or --lang cqels was given); "
                                    "CQELS-CEP sequences windows with SEQ(:W1, :W2) or patterns "
                                    "inside a window with SEQ({...}, {...})",
                                    ("UNION", "SEQ(...) in a WINDOW block"))
                case S.WindowBlock() | S.EventSequence():
                    raise self.fail(element, "WINDOW blocks and SEQ(...) event clauses belong at "
                                    "the top level of WHERE, not inside OPTIONAL, UNION or a "
                                    "nested group (CQELS-CEP §3.2: Q = (V, P, D, EC))")
                case S.MatchPattern():
                    raise self.fail(element, "MATCH belongs at the top level of WHERE, not inside "
                                    "OPTIONAL, UNION or a nested group")
                case _:
                    raise TypeError(f"not a group element: {element!r}")
        condition = self.conjunction(filters)
        return pattern if condition is None else A.Filter(condition, pattern)

    # -- EP-SPARQL (§4.2)
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
        saved, self.exists_scope = self.exists_scope, ("refused", "over EP-SPARQL's streams")
        try:
            condition = self.conjunction(filters)
        finally:
            self.exists_scope = saved
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

    def ep_pattern(self) -> A.Pattern:
        tree = self.tree
        for dataset in tree.datasets:
            what = "FROM graphs" if isinstance(dataset, S.FromGraph) else "windows"
            raise self.fail(dataset, f"an EP-SPARQL query reads only the streams given (EP-SPARQL "
                            f"§4.2); {what} are not part of it",
                            ("WHERE",))
        return A.Occurrences(self.ep_group(tree.where))

    # -- RSEP-QL event patterns (§3.3)
    def match(self, element: S.MatchPattern, declared) -> A.Match:
        policy = element.policy or self.policy

        def event(node) -> A.EventNode:
            match node:
                case S.EventBasic():
                    name = self.term(node.name)
                    if name not in declared:
                        raise self.fail(node.name, f"window {node.name} is not declared",
                                        (f"FROM NAMED WINDOW {node.name} ON <stream> [RANGE ...]",))
                    stream, window, _ = declared[name]
                    if isinstance(window, A.Triples):
                        raise self.fail(node.name, f"window {node.name} is a TRIPLES window: RSEP-QL's "
                                        "windows are time-based, landmark ([ALL]) and NOW (§3.2)",
                                        ("[RANGE d]", "[RANGE d STEP d]", "[ALL]"))
                    pattern = self.bgp(node.triples, paths_allowed=False, where=f"in EVENT {node.name}")
                    if not pattern.patterns:
                        raise self.fail(node, "an EVENT pattern needs at least one triple", ("triples",))
                    return A.EventPattern(name, stream, window, pattern)
                case S.EventFirst():
                    return A.FirstEvent(event(node.inner))
                case S.EventLast():
                    return A.LastEvent(event(node.inner))
                case S.EventSeqExpr():
                    return A.EventSeq(event(node.left), event(node.right), policy)
            raise TypeError(f"not an event pattern: {node!r}")

        return A.Match(event(element.event), policy)

    def dataset(self):
        """The background's dataset (SPARQL 1.1 §13.2), read alike in every language: returns the
        default graph (``Background.graph`` / ``Snapshot.graph``) and sets ``self.named_graphs``,
        what GRAPH <g> / ?g range over. Several FROMs: their merge; FROM NAMED without FROM: an
        empty default graph; no FROM: the default graph given. The named graphs are the FROM NAMED
        ones; a query without FROM / FROM NAMED reads every named graph given (None), since a
        dataset clause replaces the default dataset."""
        graphs = [d for d in self.tree.datasets if isinstance(d, S.FromGraph) and not d.named]
        named = [d for d in self.tree.datasets if isinstance(d, S.FromGraph) and d.named]
        froms = tuple(dict.fromkeys(self.term(d.iri) for d in graphs))
        self.named_graphs = (tuple(dict.fromkeys(self.term(d.iri) for d in named))
                             if graphs or named else None)
        return (() if named else None) if not froms else froms[0] if len(froms) == 1 else froms

    # -- C-SPARQL (003_... §2-3)
    def csparql(self) -> A.Query:
        """``Project/Construct(Filter(Aggregate(Snapshot(D, windows, P), A_1..A_n)))``: WHERE over
        the background merged with the windows, then the AGGREGATE clauses and their FILTERs."""
        tree = self.tree
        for element in _elements(tree.where):
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
                                        f"at {_where(first)}: its windows are either named graphs or part of "
                                        "the default graph, not both")
                    windows.append((stream, self.window(dataset.window)))
                    if dataset.named and stream not in named:
                        named.append(stream)
        self.named_streams = tuple(named)
        for dataset in tree.datasets:   # GRAPH <g> names one graph: a stream's window or a background graph
            if isinstance(dataset, S.FromGraph) and dataset.named and self.term(dataset.iri) in self.streams:
                raise self.fail(dataset, f"{self.term(dataset.iri)} is both a FROM NAMED graph and a stream of the "
                                f"query (at {_where(self.streams[self.term(dataset.iri)])}): a dataset's named "
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

    def graph_pattern(self, element: S.GraphGraphPattern) -> A.Pattern:
        """GRAPH <g> / ?g { P } over the background's named graphs (SPARQL 1.1 §13.3). In C-SPARQL the
        dataset holds the streams too (``csparql``'s docstring): GRAPH <stream> { P } is P over that
        stream's window alone (§2.3), GRAPH ?g { P } the union of P over each FROM NAMED STREAM's
        window and over each named background graph, ?g bound to its IRI."""
        name = A.Var(element.name.name) if isinstance(element.name, S.Variable) else self.term(element.name)
        pattern = self.group(element.group)
        graphs = A.NamedGraph(name, pattern, self.named_graphs)
        if self.lang != "csparql":
            return graphs
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
                                f"first is at {_where(seen[var])}")
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

    # -- the query
    def lower(self, lang: str | None = None) -> A.Query:
        tree = self.tree
        if lang is None:
            lang = detect_language(tree)
        if lang not in LANGUAGES:
            raise ValueError(f"unknown query language {lang!r}; expected one of {', '.join(LANGUAGES)}")
        self.lang = lang
        if lang == "csparql":
            return self.csparql()
        for part in _csparql_parts(tree):
            raise self.fail(part, f"REGISTER, FROM STREAM and AGGREGATE are C-SPARQL's, and this query is read "
                            f"as {_NAMES[lang]} (--lang {lang}); leave --lang out or pass --lang csparql")
        if lang == "epsparql":
            return self.finish(self.ep_pattern())
        for element in _elements(tree.where):
            if lang == "cqels" and isinstance(element, S.MatchPattern):
                raise self.fail(element, "MATCH is RSEP-QL's event graph pattern, and this query is read "
                                "as CQELS-CEP (--lang cqels); leave --lang out or pass --lang rsepql")
            if lang == "rsepql" and isinstance(element, S.EventSequence):
                raise self.fail(element, "CQELS-CEP's SEQ(...) clauses cannot be mixed with RSEP-QL's MATCH "
                                "(in RSEP-QL, E1 SEQ E2 goes inside MATCH)", ("MATCH ( ... )",))
        graph = self.dataset()

        declared: dict[str, tuple[A.Term, A.Window, S.Node]] = {}

        def declare(name_node, stream_node, window_node, at: S.Node):
            name = self.term(name_node)
            if name in declared:
                raise self.fail(name_node, f"window {name_node} is declared twice; the first "
                                f"declaration is at {_where(declared[name][2])}")
            declared[name] = (self.term(stream_node), self.window(window_node), at)

        for dataset in tree.datasets:
            if isinstance(dataset, S.FromWindow):
                declare(dataset.name, dataset.stream, dataset.window, dataset)

        top = tree.where.elements
        blocks: dict[str, S.WindowBlock] = {}
        for element in top:
            if isinstance(element, S.WindowBlock):
                if element.stream is not None:
                    declare(element.name, element.stream, element.window, element)
                name = self.term(element.name)
                if name in blocks:
                    raise self.fail(element, f"window {element.name} has two WINDOW blocks; the "
                                    f"first is at {_where(blocks[name])}")
                blocks[name] = element

        streams: dict[str, A.StreamPattern] = {}
        for name, block in blocks.items():
            if name not in declared:
                raise self.fail(block.name, f"window {block.name} is not declared",
                                _declare_hint(block.name))
            stream_iri, window, _ = declared[name]
            if lang == "rsepql":   # RSEP-QL's window graph pattern WINDOW w P (§4.1 eq. 3)
                streams[name] = self.window_graph(block, name, stream_iri, window)
                continue
            streams[name] = A.StreamPattern(name, stream_iri, window, self.tsp(block))  # eq. 9

        in_sequences = set()
        for element in top:
            if isinstance(element, S.EventSequence):
                for item in element.elements:
                    name = self.term(item.name)
                    if name not in declared:
                        raise self.fail(item.name, f"window {item.name} is not declared",
                                        _declare_hint(item.name))
                    if name not in blocks:
                        raise self.fail(item.name, f"window {item.name} has no WINDOW block "
                                        "giving its pattern",
                                        (f"WINDOW {item.name} {{ ... }} in WHERE",))
                    in_sequences.add(name)

        events: list[A.Pattern] = []
        for element in top:
            if isinstance(element, S.MatchPattern):
                events.append(self.match(element, declared))                  # RSEP-QL §4.2
            elif isinstance(element, S.EventSequence):
                negated = self.check_negations(element.elements)
                parts = [streams[self.term(item.name)] for item in element.elements]
                events.append(A.sequence(*parts, negated=negated))           # eq. 3-8
            elif isinstance(element, S.WindowBlock):
                name = self.term(element.name)
                if name not in in_sequences:
                    events.append(streams[name])

        rest = [e for e in top if not isinstance(e, (S.WindowBlock, S.EventSequence,
                                                       S.FilterPattern, S.MatchPattern))]
        background_pattern = self.group(tree.where, rest)
        parts = list(events)
        if not events or background_pattern != A.BGP(()):
            parts.append(A.Background(graph, background_pattern))           # eq. 17
        pattern = A.join(*parts)                                             # eq. 1, 2
        self.exists_scope = ("background", graph)   # a top-level FILTER stands over the event clauses
        condition = self.conjunction([e for e in top if isinstance(e, S.FilterPattern)])
        self.exists_scope = "here"
        if condition is not None:
            pattern = A.Filter(condition, pattern)
        return self.finish(pattern)

    def grouping(self, pattern: A.Pattern, q=None) -> A.Pattern:
        """SPARQL 1.1 GROUP BY / aggregates in SELECT / HAVING (§11, §18.2.4.1): ``Aggregate`` over
        the WHERE pattern (group = the GROUP BY variables; none: the implicit group), HAVING a
        ``Filter`` above it. Each ``(AGG(...) AS ?v)`` binds ?v; an aggregate only in HAVING gets a
        variable of its own. Set semantics, as everywhere in ``cep``: the solutions aggregated are
        the distinct WHERE solutions. ``q``: the query or sub-query (``S.SubQuery``) read.

        Over a CQELS-CEP query with event clauses (windows, SEQ), an RSEP-QL or an EP-SPARQL query
        the node is ``GroupCover``: one answer per group, over the interval covering its members
        (module doc, "Grouping over event clauses"); GROUP BY without aggregates is a ``GroupCover`` too, so that a group is one
        answer there as well. Background-only and C-SPARQL queries keep ``Aggregate`` (every
        solution there has one interval, so both rules agree)."""
        tree = self.tree if q is None else q
        items = tree.form.variables or ()
        found = [e for item in items if isinstance(item, S.SelectExpression) for e in _syntax_aggregates(item.expr)]
        found += [e for h in tree.having for e in _syntax_aggregates(h)]
        if not tree.group_by and not found:
            if tree.having:
                raise self.fail(tree.having[0], "HAVING without GROUP BY or an aggregate")
            return pattern
        cover = tree is self.tree and (self.lang in ("epsparql", "rsepql")
                                       or (self.lang == "cqels" and bool(A.event_clauses(pattern))))
        where_vars = A.variables(pattern)
        group = tuple(dict.fromkeys(A.Var(v.name) for v in tree.group_by))
        self.agg_vars = {}
        specs: list[A.AggregateSpec] = []
        arguments: list[tuple[A.Var, A.Expr]] = []   # aggregates of expressions: (fresh variable, expression)

        def fresh_var(prefix: str) -> A.Var:
            taken = where_vars | {s.var for s in specs} | {v for v, _e in arguments}
            k = 1
            while A.Var(f"{prefix}{k}") in taken or f"{prefix}{k}" in self.written:
                k += 1
            return A.Var(f"{prefix}{k}")

        def spec_for(call: S.AggregateCall, var: A.Var) -> None:
            if call.argument is None and call.function != "COUNT":
                raise self.fail(call, f"{call.function}(*) is not an aggregate; only COUNT(*) is", ("?x",))
            if call.argument is None:
                argument = None
            elif isinstance(call.argument, S.Variable):
                argument = A.Var(call.argument.name)
            else:                                   # SUM(?x * 2): the expression bound first (Extend)
                if _syntax_aggregates(call.argument):
                    raise self.fail(call.argument, "an aggregate inside an aggregate", ("an expression without aggregates",))
                argument = fresh_var("_arg")
                arguments.append((argument, self.plain_expr(call.argument, "in an aggregate")))
            self.agg_vars[call] = var
            strict = call.argument is not None and not isinstance(call.argument, S.Variable)
            specs.append(A.AggregateSpec(var, call.function, argument, call.distinct, group, strict))

        for item in items:
            if isinstance(item, S.SelectExpression):
                var = A.Var(item.variable.name)
                if var in where_vars or var in {s.var for s in specs}:
                    raise self.fail(item.variable, f"{item.variable} is already bound; (... AS ?v) introduces a "
                                    "new variable (SPARQL 1.1 §18.2.4.1)")
                if not isinstance(item.expr, S.AggregateCall):   # an expression of the groups: Extend, later
                    outside = [v for v in _syntax_variables(item.expr) if A.Var(v.name) not in group]
                    if outside:
                        raise self.fail(outside[0], f"{outside[0]} is neither grouped nor inside an aggregate "
                                        "(SPARQL 1.1 §18.2.4.1)", tuple(f"?{v.name}" for v in group) or ("COUNT(...)",))
                    continue
                if item.expr in self.agg_vars:
                    raise self.fail(item, f"{item.expr} is selected twice; select it once")
                spec_for(item.expr, var)
            elif A.Var(item.name) not in group:
                raise self.fail(item, f"{item} is selected but neither grouped nor aggregated (SPARQL 1.1 "
                                "§18.2.4.1: with GROUP BY or aggregates, SELECT names GROUP BY variables and "
                                "(aggregate AS ?v))", tuple(f"?{v.name}" for v in group) or ("(COUNT(*) AS ?n)",))
        for call in found:
            if call not in self.agg_vars:
                spec_for(call, fresh_var("_agg"))
        for var, expr in arguments:
            pattern = A.Extend(pattern, var, expr)
        if cover:                                   # over event clauses: one answer per group
            out: A.Pattern = A.GroupCover(pattern, group, tuple(specs))
        else:
            out = A.Aggregate(pattern, tuple(specs)) if specs else pattern
        condition = None
        saved, self.exists_scope = self.exists_scope, ("refused", "in HAVING")
        try:
            for h in tree.having:
                e = self.expr(h)
                condition = e if condition is None else A.And(condition, e)
        finally:
            self.exists_scope = saved
        if condition is not None:
            out = A.Filter(condition, out)
        return out   # GROUP BY without aggregates (no cover): the projection's distinct rows are the groups

    def projection(self, pattern: A.Pattern, q) -> A.Project:
        """SELECT over ``pattern`` (grouping, trailing VALUES, the projection) of the query or
        sub-query ``q``."""
        form = q.form
        saved = getattr(self, "agg_vars", None)
        pattern = self.grouping(pattern, q)
        if q.values is not None:                                            # §18.2.4.3
            pattern = A.Join(pattern, self.values(q.values))
        for item in form.variables or ():                                  # §18.2.4.4
            if isinstance(item, S.SelectExpression) and not isinstance(item.expr, S.AggregateCall):
                var = A.Var(item.variable.name)
                if var in A.variables(pattern):
                    raise self.fail(item.variable, f"{item.variable} is already bound; (... AS ?v) introduces a "
                                    "new variable (SPARQL 1.1 §18.2.4.1)")
                pattern = A.Extend(pattern, var, self.plain_expr(item.expr, "in SELECT"))
        bound = A.variables(pattern)
        if form.variables is None:
            if q.group_by:
                raise self.fail(form, "SELECT * with GROUP BY: name the grouped variables and aggregates")
            projected = [v for v in _ordered_variables(pattern) if v not in self.hidden]
        else:
            names = [v.variable if isinstance(v, S.SelectExpression) else v for v in form.variables]
            for variable in names:
                if A.Var(variable.name) not in bound:
                    raise self.fail(variable, self._unbound_reason(variable, pattern))
            projected = [A.Var(v.name) for v in names]
        result = A.project(projected, pattern, form.distinct)
        self.modifier_result = self.modifiers(result, q)
        self.agg_vars = saved if saved is not None else {}
        return result

    def sub_select(self, q: S.SubQuery, where: A.Pattern | None = None) -> A.SubSelect:
        """{ SELECT ... } in a group (SPARQL 1.1 §18.2.1): its WHERE in the same scope as the group
        (``where``: that WHERE lowered already)."""
        where = self.group(q.where) if where is None else where
        form = self.projection(where, q)
        return A.SubSelect(form, self.modifier_result)

    def bind(self, pattern: A.Pattern, element: S.Bind) -> A.Extend:
        """BIND(expr AS ?v) after ``pattern``, the group so far (SPARQL 1.1 §18.2.2.6: Extend; ?v
        must be new, §18.2.1). Over EP-SPARQL's streams too: Extend keeps each solution's interval
        (``ep_sub_select``)."""
        var = A.Var(element.variable.name)
        if var in A.variables(pattern):
            raise self.fail(element.variable, f"BIND: {element.variable} is bound already by the group "
                            "before it (SPARQL 1.1 §18.2.1)", ("a new variable",))
        return A.Extend(pattern, var, self.plain_expr(element.expr, "in BIND"))

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
                 for e in _syntax_aggregates(item.expr)]
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

    def values(self, node: S.InlineData) -> A.Values:
        """VALUES: its rows of terms (UNDEF: None)."""
        variables = tuple(A.Var(v.name) for v in node.variables)
        for i, v in enumerate(node.variables):
            if A.Var(v.name) in variables[:i]:
                raise self.fail(v, f"{v} is named twice in VALUES", ("distinct variables",))
        rows = tuple(tuple(None if isinstance(x, S.Undef) else self.term(x) for x in row) for row in node.rows)
        return A.Values(variables, rows)

    def finish(self, pattern: A.Pattern) -> A.Query:
        """The query form (SELECT / CONSTRUCT) over ``pattern``, with the prologue."""
        tree = self.tree
        form = tree.form
        modifiers = None
        if isinstance(form, S.Select):
            result = self.projection(pattern, tree)
            modifiers = self.modifier_result
        else:
            if tree.values is not None:
                pattern = A.Join(pattern, self.values(tree.values))
            template = []
            for triple in form.triples:
                if not isinstance(triple.p, (S.Variable, S.IriRef, S.PrefixedName,
                                             S.TypeKeyword)):
                    raise self.fail(triple.p, "a CONSTRUCT template holds triples, not paths",
                                    ("an IRI", "'a'", "a variable"))
                template.append(A.TriplePattern(*(f"_:{part.label}" if isinstance(part, S.BlankNode)
                                                  else self.var_or_term(part)
                                                  for part in (triple.s, triple.p, triple.o))))
            result = A.construct(template, pattern)

        prefixes = {decl.name: decl.iri.value for decl in tree.prologue if isinstance(decl, S.PrefixDecl)}
        return A.Query(result, prefixes, self.base(), modifiers=modifiers)

    def base(self) -> str | None:
        """The query's base IRI: its (last) BASE declaration's."""
        found = None
        for decl in self.tree.prologue:
            if not isinstance(decl, S.PrefixDecl):
                found = decl.iri.value
        return found

    def modifiers(self, form, q=None) -> A.Modifiers | None:
        """ORDER BY / LIMIT / OFFSET (SPARQL 1.1 §15): keys over the variables WHERE binds (an answer,
        a distinct projected row, takes the first position of the solutions it comes from); with
        grouping, over the selected variables only."""
        tree = self.tree if q is None else q
        if not (tree.order_by or tree.limit is not None or tree.offset):
            return None
        keys = []
        for condition in tree.order_by:
            saved, self.exists_scope = self.exists_scope, ("refused", "in ORDER BY")
            try:
                expr = self.expr(condition.expr)
            finally:
                self.exists_scope = saved
            outside = sorted(v.name for v in A.expr_variables(expr) if v not in form.variables)
            top = form.inner
            while isinstance(top, A.Filter):   # HAVING / AGGREGATE clauses' FILTERs
                top = top.inner
            grouped = bool(tree.group_by) or isinstance(top, (A.Aggregate, A.GroupCover))
            unbound = [name for name in outside if A.Var(name) not in A.variables(form.inner)]
            if outside and grouped:
                raise self.fail(condition, f"ORDER BY reads ?{outside[0]}, which is not selected: with GROUP BY or "
                                "aggregates, keys are expressions over the SELECTed variables (select it, or name "
                                "an aggregate (... AS ?v) and order by ?v)", tuple(f"?{v.name}" for v in form.variables))
            if unbound:
                raise self.fail(condition, f"ORDER BY reads ?{unbound[0]}, which no pattern of WHERE binds",
                                tuple(f"?{v.name}" for v in form.variables))
            if A.uses_interval(expr) or A.uses_timestamp(expr):
                raise self.fail(condition, "ORDER BY cannot read an answer's interval or timestamps")
            keys.append(A.OrderKey(expr, condition.descending))
        return A.Modifiers(tuple(keys), tree.limit, tree.offset)

    def _unbound_reason(self, variable: S.Variable, pattern: A.Pattern) -> str:
        var = A.Var(variable.name)
        mentioned = any(isinstance(node, A.BGP) and var in A.variables(node)
                        for node in A.walk(pattern))
        if mentioned:
            return (f"{variable} occurs only in a negated element, which binds nothing "
                    "(NO_HEAD, NO_TAIL and SEQ_WO keep the positive mappings, CQELS-CEP §4.2)")
        return f"{variable} is selected but no pattern of WHERE binds it"


#: a variable as written (?name / $name), to keep hidden variables' names apart from them
_VARIABLE_NAME = re.compile(r"[?$]([A-Za-z_0-9\u00B7-\uFFFF][A-Za-z_0-9\u00B7-\uFFFF-]*)")

_NAMES = {"cqels": "CQELS-CEP", "csparql": "C-SPARQL", "epsparql": "EP-SPARQL", "rsepql": "RSEP-QL"}


def _syntax_find(e, kind, skip=()) -> list:
    """The nodes of type ``kind`` in a syntax expression, left to right, not looking inside nodes
    of the types ``skip``."""
    if isinstance(e, kind):
        return [e]
    if isinstance(e, skip):
        return []
    out = []
    for name in ("left", "right", "operand", "expr"):
        child = getattr(e, name, None)
        if child is not None and not isinstance(child, (str, bool)):
            out += _syntax_find(child, kind, skip)
    for child in getattr(e, "args", ()) + getattr(e, "items", ()):
        out += _syntax_find(child, kind, skip)
    return out


def _syntax_aggregates(e) -> list:
    """The aggregate calls in a syntax expression, left to right."""
    return _syntax_find(e, S.AggregateCall)


def _syntax_variables(e) -> list:
    """The variables of a syntax expression outside its aggregate calls and EXISTS, left to right."""
    return _syntax_find(e, S.Variable, (S.AggregateCall, S.ExistsCall))


def _declare_hint(name) -> tuple[str, ...]:
    return (f"FROM NAMED WINDOW {name} ON <stream> [RANGE ...]",
            f"WINDOW {name} ON <stream> [RANGE ...] {{ ... }}")


def _split_filter(pattern: A.Pattern) -> tuple[A.Pattern, A.Expr | None]:
    """(inner, condition) of a Filter, else (pattern, None): a group's FILTERs as an optional
    join's condition."""
    if isinstance(pattern, A.Filter):
        return pattern.inner, pattern.condition
    return pattern, None


def _join(left: A.Pattern, right: A.Pattern) -> A.Pattern:
    if isinstance(left, A.BGP) and not left.patterns:
        return right
    return A.Join(left, right)


def _ordered_variables(pattern: A.Pattern) -> list[A.Var]:
    """The in-scope variables of ``pattern`` in the order they are first written (SELECT *)."""
    seen: dict[A.Var, None] = {}

    def visit(node) -> None:
        match node:
            case A.BGP():
                for item in node.patterns:
                    for x in (item.s, getattr(item, "p", None), item.o):
                        if isinstance(x, A.Var):
                            seen.setdefault(x, None)
            case A.SeqWithout():             # a negated element binds nothing
                visit(node.left)
                visit(node.right)
            case A.NoHead():
                visit(node.right)
            case A.NoTail() | A.Minus():
                visit(node.left)
            case A.Values():
                for v in node.variables:
                    seen.setdefault(v, None)
            case A.NamedGraph() | A.GraphPattern():
                name = node.name if isinstance(node, A.NamedGraph) else node.graph
                if isinstance(name, A.Var):
                    seen.setdefault(name, None)
                visit(node.pattern)
            case A.Extend():
                visit(node.inner)
                seen.setdefault(node.var, None)
            case A.SubSelect():
                for v in node.form.variables:
                    seen.setdefault(v, None)
            case A.Aggregate():
                visit(node.inner)
                for spec in node.specs:
                    seen.setdefault(spec.var, None)
            case A.GroupCover():              # only the groups and the aggregates are in scope
                for v in node.group + tuple(spec.var for spec in node.specs):
                    seen.setdefault(v, None)
            case _:
                for child in A.children(node):
                    visit(child)

    visit(pattern)
    return list(seen)


def lower(tree: S.Query, lang: str | None = None, policy: str = "unrestricted") -> A.Query:
    """Lower a parsed query (``cep.parse``) to the algebra, per equations (1)-(17) of
    CQELS-CEP, §4.2 of EP-SPARQL or §3-4 of RSEP-QL (``lang``: "cqels", "epsparql", "rsepql", or
    None to detect it, :func:`detect_language`); ``policy``: the selection policy of an RSEP-QL
    MATCH that names none. Raises :class:`cep.syntax.parser.CepSemanticError` for the errors listed
    above."""
    if not isinstance(tree, S.Query):
        raise TypeError(f"lower() takes a cep.syntax.tree.Query, not {type(tree).__name__}")
    return _Lowering(tree, policy).lower(lang)


def compile_query(text: str, prefixes: Mapping[str, str] | None = None,
                  base: str | None = None, lang: str | None = None,
                  policy: str = "unrestricted") -> A.Query:
    """``lower(parse(text, prefixes, base), lang, policy)``: query text → algebra Query."""
    return lower(parse(text, prefixes, base), lang, policy)
