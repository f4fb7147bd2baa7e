"""Logical rewrites: a query into an equivalent one that is cheaper to evaluate (pure Python).

The lowering writes a CQELS-CEP query as eq. (1)-(2) do: JOIN(EC_1, ..., EC_m, BACKGROUND(D, P)),
possibly under top-level FILTERs, grouping and BINDs. An engine that evaluates it as written
evaluates P as one relation. When P's triple and path patterns fall apart into groups that share
no variable (Vienna's ``?v rdf:type :subway . ?s (...)+ :c``), that relation is the cross product
of the groups (1,514 subways × 200 stops = 302,800 rows), though each group only joins the stream's
answers on its own variables. ``rewrite`` makes the query say so:

* **split** — a background BGP is split into its *connected components* (two patterns are
  connected when they share a variable; a blank node is a variable here): BACKGROUND(D, P1 ∪ P2) =
  JOIN(BACKGROUND(D, P1), BACKGROUND(D, P2)) when P1 and P2 share no variable. Eq. (17) gives
  every background mapping the interval [t1, t] of the one graph D, so the JOIN's intervals are
  that interval again.
* **filters** — a FILTER of that background whose variables all lie in one component goes with
  that component (FILTER(c, P1 ⋈ P2) = FILTER(c, P1) ⋈ P2 when P1 binds all of c's variables); one
  that spans components is applied after the join, above the event clauses and the background
  (the same mappings reach it: every variable it reads is bound by the background, so the
  stream's bindings agree with them). A condition whose value depends on more than the mapping's
  values (EXISTS reads the graph it is evaluated in; NOW(), RAND(), UUID(), STRUUID(), BNODE(),
  timestamp() and the interval functions read the instant, the interval or the whole solution)
  is not moved: the background is then kept whole, and the plan says why.
* **order** — the components join the event clauses one at a time, each one first that shares a
  variable with what is joined so far (the smallest first when sizes are given), as a left-deep
  JOIN(JOIN(EC, B1), B2): each component then meets rows that bind its variables. A component
  that shares no variable with anything joined before it is a cross product the query itself
  asks for; the plan says so.

A query with nothing to split is returned as it is (the same object). C-SPARQL, RSEP-QL and
EP-SPARQL queries are returned as they are: their engines walk their own shapes (the plan says so).
The rewrite is idempotent. The reference evaluator never sees it: the planned engines are tested
against the query as written (tests/test_planner.py).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from cep import algebra as A

__all__ = ["Step", "Logical", "rewrite", "components", "conjuncts", "movable"]

#: what may sit above the top-level JOIN (``cep.algebra.patterns._top_joined``)
_ABOVE_JOIN = (A.Filter, A.Aggregate, A.GroupCover, A.Extend)


@dataclass(frozen=True)
class Step:
    """One decision of the planner: ``rule`` (split, filter, order, cross-product, kept, ...) and
    why, in words."""

    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


@dataclass(frozen=True)
class Logical:
    """A query as written (``written``), as rewritten (``query``: what the engines evaluate) and the
    ``steps`` that lead from one to the other."""

    written: A.Query
    query: A.Query
    steps: tuple[Step, ...] = ()

    @property
    def changed(self) -> bool:
        return self.query is not self.written


def movable(condition: A.Expr) -> bool:
    """Whether a FILTER's value depends on its mapping's values alone, so that it may be evaluated
    on a larger or a smaller mapping that binds the same variables (module doc)."""
    for e in A.subexpressions(condition):
        if isinstance(e, (A.Exists, A.Timestamp, A.PatternTimestamp, A.IntervalFn)):
            return False
        if isinstance(e, A.Builtin) and e.name in A.SOLUTION_BUILTINS:
            return False
    return True


def components(patterns) -> list[tuple]:
    """The connected components of triple / path patterns (module doc), each in written order,
    ordered by their first pattern."""
    parent = list(range(len(patterns)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[A.Var, int] = {}
    for i, pattern in enumerate(patterns):
        for var in sorted(pattern.variables(), key=lambda v: v.name):
            if var in first:
                parent[root(i)] = root(first[var])
            else:
                first[var] = i
    groups: dict[int, list] = {}
    for i, pattern in enumerate(patterns):
        groups.setdefault(root(i), []).append(pattern)
    return [tuple(group) for group in groups.values()]


def _join_leaves(node) -> list:
    if isinstance(node, A.Join):
        return _join_leaves(node.left) + _join_leaves(node.right)
    return [node]


def _unit(node) -> tuple[list, tuple | None]:
    """A JOIN operand of a background pattern as (its FILTERs' conjuncts, its triple / path
    patterns), the patterns None when it is not a BGP under FILTERs (a UNION, an OPTIONAL, ...:
    kept whole, one part)."""
    conditions = []
    while isinstance(node, A.Filter):
        conditions.extend(conjuncts(node.condition))
        node = node.inner
    return conditions, (node.patterns if isinstance(node, A.BGP) else None)


def _split(background: A.Background) -> tuple[list, list, Step | None]:
    """``background`` as its components (each a Background), the conditions to apply above the
    join, and a step that says why it was kept whole (or None). A FILTER over the whole pattern, or
    over one of its groups (a JOIN operand), reads that group's variables only (SPARQL's FILTER
    scope): it goes with the component that binds them all, or above the join when they span
    components; one that reads anything else keeps the background whole."""
    outer, pattern = _unit(background.pattern)[0], background.pattern
    while isinstance(pattern, A.Filter):
        pattern = pattern.inner
    units = []          # (conditions, patterns or None, the operand) per JOIN operand
    for operand in _join_leaves(pattern):
        conditions, patterns = _unit(operand)
        units.append((conditions if patterns is not None else [], patterns, operand))
    # one item per triple / path pattern and per opaque operand, in written order
    items = [p for _c, patterns, operand in units for p in (patterns if patterns is not None else (operand,))]
    if len(items) < 2:
        return [background], [], None
    groups = components([_AsPattern(item) for item in items])
    if len(groups) < 2:
        return [background], [], None
    groups = [tuple(wrapped.item for wrapped in group) for group in groups]
    certain = [frozenset().union(*(p.variables() for p in group if not _opaque(p))) for group in groups]
    scoped = [(c, frozenset().union(*(q.variables() for q in patterns)))
              for conds, patterns, _o in units if patterns is not None for c in conds]
    every = frozenset().union(*(q.variables() for _c, patterns, _o in units if patterns is not None for q in patterns))
    scoped += [(c, every) for c in outer]
    placed: list[list] = [[] for _ in groups]
    above = []
    for condition, scope in scoped:
        if not movable(condition):
            return [background], [], Step("kept", f"{background} is evaluated whole: its FILTER {condition} reads "
                                                  f"more than its mapping's values (EXISTS, NOW(), a draw, a "
                                                  f"timestamp or the interval), so it stays where it is written")
        names = A.expr_variables(condition)
        if not names <= scope:
            return [background], [], Step("kept", f"{background} is evaluated whole: its FILTER {condition} reads "
                                                  f"variables its group does not bind")
        home = [i for i, vars_ in enumerate(certain) if names <= vars_]
        if home:
            placed[home[0]].append(condition)
        else:
            above.append(condition)
    parts = []
    for group, mine in zip(groups, placed):
        triples = tuple(p for p in group if not _opaque(p))
        inner = A.join(*([A.BGP(triples)] if triples else []), *(p for p in group if _opaque(p)))
        for condition in reversed(mine):
            inner = A.Filter(condition, inner)
        parts.append(A.Background(background.graph, inner))
    return parts, above, None


def _opaque(item) -> bool:
    return not isinstance(item, (A.TriplePattern, A.PathPattern))


@dataclass(frozen=True)
class _AsPattern:
    """An item of ``_split`` as ``components`` reads it: its variables (an opaque operand's: every
    variable it may bind)."""

    item: object

    def variables(self) -> frozenset:
        return A.variables(self.item) if _opaque(self.item) else self.item.variables()


def _names(node) -> str:
    names = sorted(v.name for v in A.variables(node))
    return ", ".join(f"?{n}" for n in names) or "no variable"


def _order(events: list, parts: list, sizes: Mapping | None) -> tuple[list, list[Step]]:
    """``parts`` in the order they join ``events`` (module doc, "order")."""
    bound = frozenset().union(*(A.variables(e) for e in events)) if events else frozenset()
    remaining, out, steps = list(parts), [], []

    def cost(part) -> tuple:
        size = None if sizes is None else sizes.get(part)
        return (size is None, size or 0, parts.index(part))

    while remaining:
        linked = [p for p in remaining if A.variables(p) & bound]
        pick = min(linked or remaining, key=cost)
        if not linked and (out or events):
            if A.variables(pick):
                steps.append(Step("cross-product", f"{pick} shares no variable with the patterns joined before it "
                                                   f"(which bind {', '.join(f'?{v.name}' for v in sorted(bound, key=lambda v: v.name)) or 'no variable'}): "
                                                   f"the query asks for their cross product"))
            else:
                steps.append(Step("check", f"{pick} binds no variable: it keeps or drops every row at once"))
        out.append(pick)
        remaining.remove(pick)
        bound |= A.variables(pick)
    return out, steps


def conjuncts(condition: A.Expr) -> list:
    """``a && b && ...`` as [a, b, ...]: FILTER(a && b) keeps what FILTER(a) then FILTER(b) keeps
    (an error in either is not true)."""
    if isinstance(condition, A.And):
        return conjuncts(condition.left) + conjuncts(condition.right)
    return [condition]


def _certain(pattern) -> frozenset:
    """The variables every mapping of a background ``pattern`` binds: its BGPs' (under FILTERs and
    JOINs); a UNION's or an OPTIONAL's may leave one unbound, so none of theirs is certain."""
    match pattern:
        case A.BGP():
            return A.variables(pattern)
        case A.Filter():
            return _certain(pattern.inner)
        case A.Join():
            return _certain(pattern.left) | _certain(pattern.right)
    return frozenset()


def _rewrite_top(node, sizes: Mapping | None) -> tuple[object, list[Step]]:
    above = []
    while isinstance(node, _ABOVE_JOIN):
        above.append(node)
        node = node.inner
    k = len(above)
    while k and isinstance(above[k - 1], A.Filter):   # the WHERE's FILTERs, right above the JOIN
        k -= 1
    outer, wheres = above[:k], [c for f in above[k:] for c in conjuncts(f.condition)]
    leaves = _join_leaves(node)
    events = [leaf for leaf in leaves if not isinstance(leaf, A.Background)]
    backgrounds = [leaf for leaf in leaves if isinstance(leaf, A.Background)]
    parts, lifted, steps, changed = [], [], [], False
    for background in backgrounds:
        pieces, up, kept = _split(background)
        if kept is not None:
            steps.append(kept)
        if len(pieces) > 1:
            changed = True
            steps.append(Step("split", f"{background} has {len(pieces)} parts that share no variable: "
                                       + "; ".join(f"{p.pattern} binds {_names(p)}" for p in pieces)))
            for condition in up:
                steps.append(Step("filter", f"FILTER {condition} reads variables of several parts: applied after "
                                            f"they are joined"))
        parts.extend(pieces)
        lifted.extend(up)
    remaining = []
    for condition in wheres:
        names = A.expr_variables(condition)
        home = [i for i, p in enumerate(parts) if names <= _certain(p.pattern)] if movable(condition) else []
        if not home:
            remaining.append(condition)
            continue
        part = parts[home[0]]
        parts[home[0]] = A.Background(part.graph, A.Filter(condition, part.pattern))
        changed = True
        steps.append(Step("push", f"FILTER {condition} reads only variables that {part} binds: evaluated there, "
                                  f"before the join"))
    if not changed:
        return None, steps
    ordered, order_steps = _order(events, parts, sizes)
    steps.extend(order_steps)
    names = [f"[{_names(p)}]" for p in ordered]
    steps.append(Step("order", "joined in this order: " + " ⋈ ".join((["the event clauses"] if events else []) + names)))
    body = A.join(*events) if events else ordered[0]
    for part in ordered[0 if events else 1:]:
        body = A.Join(body, part)
    for condition in lifted + remaining:
        body = A.Filter(condition, body)
    for wrapper in reversed(outer):
        body = replace(wrapper, inner=body)
    return body, steps


def rewrite(query: A.Query, sizes: Mapping | None = None) -> Logical:
    """``query`` rewritten (module doc). ``sizes``: {Background node of the rewritten query: its
    number of rows}, when known, to join the smallest component first among those that share
    variables with what is joined already."""
    if not isinstance(query, A.Query):
        raise TypeError(f"rewrite() needs a cep.algebra.patterns.Query, got {type(query).__name__}")
    for language, test in (("EP-SPARQL", A.is_epsparql), ("RSEP-QL", A.is_rsepql), ("C-SPARQL", A.is_csparql)):
        if test(query):
            return Logical(query, query, (Step("as-written", f"a {language} query is evaluated as written (its "
                                                             f"engines walk their own shapes)"),))
    body, steps = _rewrite_top(query.form.inner, sizes)
    if body is None:
        return Logical(query, query, tuple(steps))
    return Logical(query, replace(query, form=replace(query.form, inner=body)), tuple(steps))
