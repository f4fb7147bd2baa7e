"""What the four lowerings share: ``Lowering``, the class each language's lowering extends
(``cep.lowering.cqels``, ``csparql``, ``epsparql``, ``rsepql``), with terms and triple patterns,
expressions (SPARQL 1.1 §17), windows, background groups (SPARQL 1.1 §18.2.2.6) and the dataset
(§13.2), the SPARQL 1.1 patterns (GRAPH, BIND, VALUES, sub-queries), the solution modifiers, and
the errors' form (``error``: a ``CepSemanticError`` with the line and column of the offending part).

Why a base class and one subclass per language: the lowerings share one state (the tree, the blank
nodes' scopes, where EXISTS is matched, the aggregates' variables, the dataset's named graphs) and
call into each other both ways. Every language lowers its groups, expressions and modifiers here,
and a shared rule reaches a language's own: an expression's ``timestamp()`` is C-SPARQL's
(``CsparqlLowering.timestamp``), ``GRAPH`` ranges over C-SPARQL's streams too
(``CsparqlLowering.graph_pattern``). A subclass that overrides a method says that in the
language's module; functions over one shared object would need this module to import the
language modules that import it. Two shared rules still read ``lang``, the language lowered:
``grouping`` (``GroupCover`` over event clauses, below) and the refusal of ``timestamp()``. Each
subclass sets ``lang`` and lowers a whole query with ``query()``; ``cep.lowering.languages``
picks the subclass.

SPARQL 1.1 solution modifiers, for every language: GROUP BY / HAVING / ``(aggregate AS ?v)``
become ``Aggregate`` (+ ``Filter``) under the projection (background-only and C-SPARQL queries;
see ``Lowering.grouping``), or ``GroupCover`` (+ ``Filter``) over event clauses (CQELS-CEP,
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
from contextlib import contextmanager

from cep import algebra as A
from cep.syntax import tree as S
from cep.syntax.parser import CepSemanticError
from paths.lowering import lower as lower_path
from paths.lowering import term as lower_term

__all__ = ["Lowering", "LANGUAGE_NAMES", "error", "position", "group_elements", "syntax_aggregates"]

#: each language's name, as the errors write it
LANGUAGE_NAMES = {"cqels": "CQELS-CEP", "csparql": "C-SPARQL", "epsparql": "EP-SPARQL", "rsepql": "RSEP-QL"}

#: a variable as written (?name / $name), to keep hidden variables' names apart from them
_VARIABLE_NAME = re.compile(r"[?$]([A-Za-z_0-9\u00B7-\uFFFF][A-Za-z_0-9\u00B7-\uFFFF-]*)")


def error(tree_text: str, node: S.Node, reason: str, expected: tuple[str, ...] = ()):
    """The ``CepSemanticError`` for ``node`` of the query ``tree_text``, at its line and column."""
    span = node.span
    return CepSemanticError(reason, tree_text, max(span.start_line, 1), max(span.start_column, 1),
                            expected)


def position(node: S.Node) -> str:
    """Where ``node`` stands, as an error names an earlier part: "line L, column C"."""
    return f"line {node.span.start_line}, column {node.span.start_column}"


def group_elements(group: S.Group):
    """Every syntax element under ``group``, pre-order."""
    for element in group.elements:
        yield element
        match element:
            case S.OptionalPattern() | S.GraphGraphPattern():
                yield from group_elements(element.group)
            case S.UnionPattern() | S.GroupChain():
                for g in element.groups:
                    yield from group_elements(g)
            case S.SubQuery():
                yield from group_elements(element.where)


class Lowering:
    """The lowering of one query, the parts every language shares. A subclass per language sets
    ``lang`` (a key of ``LANGUAGE_NAMES``) and lowers the whole query with ``query()``."""

    lang: str

    def __init__(self, tree: S.Query) -> None:
        self.tree = tree
        self.text = tree.text
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
        return error(self.text, node, reason, expected)

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
                                f"first use is at {position(first)} (SPARQL 1.1 §4.1.4)",
                                ("another label", "a variable"))
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
        with self.exists_refused(where):
            expr = self.expr(node)
        if A.uses_timestamp(expr):
            raise self.fail(node, f"timestamp() is not supported {where}")
        return expr

    @contextmanager
    def exists_refused(self, where: str):
        """EXISTS is refused ``where`` (the reason the error gives) while the block runs."""
        saved, self.exists_scope = self.exists_scope, ("refused", where)
        try:
            yield
        finally:
            self.exists_scope = saved

    def exists(self, node: S.ExistsCall) -> A.Expr:
        """[NOT] EXISTS { P } (SPARQL 1.1 §17.4.1.4): P matched where ``exists_scope`` says."""
        scope = self.exists_scope
        if isinstance(scope, tuple) and scope[0] == "refused":
            raise self.fail(node, f"EXISTS is not supported {scope[1]}; it is in FILTERs over background "
                            "patterns and C-SPARQL's WHERE", ("a FILTER of the background part",))
        for element in group_elements(node.group):
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
        """C-SPARQL's timestamp(?v [, <s>]) (§2.7) or timestamp(s p o) (RSEP-QL eq. 9): refused in
        the other languages (``CsparqlLowering.timestamp`` lowers it)."""
        raise self.fail(node, "timestamp() is C-SPARQL's (§2.7) and reads the windows of FROM STREAM; "
                        f"this query is read as {LANGUAGE_NAMES[self.lang]}", ("a C-SPARQL query",))

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

    def graph_pattern(self, element: S.GraphGraphPattern) -> A.Pattern:
        """GRAPH <g> / ?g { P } over the background's named graphs (SPARQL 1.1 §13.3). (In C-SPARQL
        the dataset holds the streams too: ``CsparqlLowering.graph_pattern``.)"""
        name = A.Var(element.name.name) if isinstance(element.name, S.Variable) else self.term(element.name)
        pattern = self.group(element.group)
        return A.NamedGraph(name, pattern, self.named_graphs)

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

    # -- SPARQL 1.1 patterns: sub-queries, BIND, VALUES
    def sub_select(self, q: S.SubQuery, where: A.Pattern | None = None) -> A.SubSelect:
        """{ SELECT ... } in a group (SPARQL 1.1 §18.2.1): its WHERE in the same scope as the group
        (``where``: that WHERE lowered already)."""
        where = self.group(q.where) if where is None else where
        form = self.projection(where, q)
        return A.SubSelect(form, self.modifier_result)

    def bind(self, pattern: A.Pattern, element: S.Bind) -> A.Extend:
        """BIND(expr AS ?v) after ``pattern``, the group so far (SPARQL 1.1 §18.2.2.6: Extend; ?v
        must be new, §18.2.1). Over EP-SPARQL's streams too: Extend keeps each solution's interval
        (``EpsparqlLowering.ep_sub_select``)."""
        var = A.Var(element.variable.name)
        if var in A.variables(pattern):
            raise self.fail(element.variable, f"BIND: {element.variable} is bound already by the group "
                            "before it (SPARQL 1.1 §18.2.1)", ("a new variable",))
        return A.Extend(pattern, var, self.plain_expr(element.expr, "in BIND"))

    def values(self, node: S.InlineData) -> A.Values:
        """VALUES: its rows of terms (UNDEF: None)."""
        variables = tuple(A.Var(v.name) for v in node.variables)
        for i, v in enumerate(node.variables):
            if A.Var(v.name) in variables[:i]:
                raise self.fail(v, f"{v} is named twice in VALUES", ("distinct variables",))
        rows = tuple(tuple(None if isinstance(x, S.Undef) else self.term(x) for x in row) for row in node.rows)
        return A.Values(variables, rows)

    # -- SPARQL 1.1 solution modifiers and the query form
    def grouping(self, pattern: A.Pattern, q=None) -> A.Pattern:
        """SPARQL 1.1 GROUP BY / aggregates in SELECT / HAVING (§11, §18.2.4.1): ``Aggregate`` over
        the WHERE pattern (group = the GROUP BY variables; none: the implicit group), HAVING a
        ``Filter`` above it. Each ``(AGG(...) AS ?v)`` binds ?v; an aggregate only in HAVING gets a
        variable of its own. Set semantics, as everywhere in ``cep``: the solutions aggregated are
        the distinct WHERE solutions. ``q``: the query or sub-query (``S.SubQuery``) read.

        Over a CQELS-CEP query with event clauses (windows, SEQ), an RSEP-QL or an EP-SPARQL query
        the node is ``GroupCover``: one answer per group, over the interval covering its members
        (module doc, "Grouping over event clauses"); GROUP BY without aggregates is a ``GroupCover``
        too, so that a group is one answer there as well. Background-only and C-SPARQL queries keep
        ``Aggregate`` (every solution there has one interval, so both rules agree)."""
        tree = self.tree if q is None else q
        items = tree.form.variables or ()
        found = [e for item in items if isinstance(item, S.SelectExpression) for e in syntax_aggregates(item.expr)]
        found += [e for h in tree.having for e in syntax_aggregates(h)]
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
                if syntax_aggregates(call.argument):
                    raise self.fail(call.argument, "an aggregate inside an aggregate",
                                    ("an expression without aggregates",))
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
                                        "(SPARQL 1.1 §18.2.4.1)",
                                        tuple(f"?{v.name}" for v in group) or ("COUNT(...)",))
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
        with self.exists_refused("in HAVING"):
            for h in tree.having:
                e = self.expr(h)
                condition = e if condition is None else A.And(condition, e)
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
            with self.exists_refused("in ORDER BY"):
                expr = self.expr(condition.expr)
            outside = sorted(v.name for v in A.expr_variables(expr) if v not in form.variables)
            top = form.inner
            while isinstance(top, A.Filter):   # HAVING / AGGREGATE clauses' FILTERs
                top = top.inner
            grouped = bool(tree.group_by) or isinstance(top, (A.Aggregate, A.GroupCover))
            unbound = [name for name in outside if A.Var(name) not in A.variables(form.inner)]
            if outside and grouped:
                raise self.fail(condition, f"ORDER BY reads ?{outside[0]}, which is not selected: with GROUP BY or "
                                "aggregates, keys are expressions over the SELECTed variables (select it, or name "
                                "an aggregate (... AS ?v) and order by ?v)",
                                tuple(f"?{v.name}" for v in form.variables))
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


def syntax_aggregates(e) -> list:
    """The aggregate calls in a syntax expression, left to right."""
    return _syntax_find(e, S.AggregateCall)


def _syntax_variables(e) -> list:
    """The variables of a syntax expression outside its aggregate calls and EXISTS, left to right."""
    return _syntax_find(e, S.Variable, (S.AggregateCall, S.ExistsCall))


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
