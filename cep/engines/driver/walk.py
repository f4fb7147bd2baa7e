"""The driver engine's walk of the algebra, one for both of its operator sets: Python rows
(``cep.engines.driver.rows``, the definition) and numpy columns (``cep.engines.driver.columnar``).

The walk decides what is evaluated, where and in which order; the operator set
(``DriverOperators``: ``cep.engines.protocol.Operators`` and what a walk on the driver needs)
computes. Every pattern is evaluated at every instant at once: a relation holds rows with
intervals and lifetimes (``cep.engines.driver.rows``' module doc). The static side (background
patterns, eq. 17) comes in as relations (``background``), evaluated by Spark once per closure
version; a window's content is computed once per (stream, window) and kept in ``windows``.

A JOIN with the static side narrows the other side early (sideways information passing).
JOIN(P, S), S static: a row of P whose variable x is bound to a value no row of S binds x to
joins with nothing, and neither does any row built from it on the way up — JOIN, SEQ and OR keep
a bound value, a negation's result is its positive side's rows. So S is evaluated first, and the
values it binds (``narrow``) are passed down to P's window matches (``bgp_in_window``), which
drop the others before the SEQs and negations pair them. Into a negated pattern a value goes only
for a variable the positive side binds in every row (``_bound``): a blocker then blocks only rows
with its own value. Into OPTIONAL's right side nothing goes (a right row dropped would make its
left row unmatched). An operator set that does not narrow (``cep.engines.driver.rows``) returns
``allowed`` as it is from ``narrow``: ``allowed`` then stays empty, and every match is kept.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from cep import algebra as A
from cep.engines.columns import var_column
from cep.engines.errors import UnsupportedQueryError
from cep.engines.protocol import Operators

__all__ = ["DriverOperators", "supports", "walk"]

R = TypeVar("R")


class DriverOperators(Operators[R], Protocol[R]):
    """``Operators`` and what the driver's walk needs besides: a window's BGP, FILTER, OPTIONAL's
    condition and the values a static relation binds."""

    def bgp_in_window(self, node: A.BGP, content: Any, allowed: Mapping[str, Any], /) -> R:
        """eq. 16: the triple patterns of ``node`` matched inside one item of a window's
        ``content`` (``window``'s result), alive where all their triples are; only the matches
        whose values are ``allowed`` ({variable column: values}, from ``narrow``)."""

    def filter_rel(self, rel: R, condition: A.Expr, terms: Callable | None, time_unit: str, /) -> R:
        """FILTER: the rows of ``rel`` for whose mapping and interval ``condition`` holds
        (``terms``: ids → {id: term}, to decode the values the condition reads)."""

    def keeper(self, condition: A.Expr, terms: Callable | None, time_unit: str, /) -> Callable[[R], Any]:
        """OPTIONAL's ``condition`` as this operator set's ``left_join`` reads it (``keep``)."""

    def narrow(self, allowed: dict, static: R, /) -> dict:
        """``allowed`` and the values the rows of ``static`` bind, per variable (module doc)."""

    def extend(self, rel: R, var: A.Var, expr: A.Expr, known: dict, time_unit: str, /) -> R:
        """BIND (expr AS ?var): each row of ``rel`` with the term ``expr`` gives for its mapping,
        unbound on an error; ``known`` ({id: term}) decodes the values and receives the terms
        computed."""


def _outside_background(node):
    """``node`` and its sub-patterns, not those of a ``Background`` (Spark evaluates those once and
    hands them in as relations)."""
    yield node
    if not isinstance(node, A.Background):
        for child in A.children(node):
            yield from _outside_background(child)


def supports(query: A.Query, bind: bool = False) -> str | None:
    """Why the driver engine cannot evaluate ``query`` (then ``cep.continuous.runner`` uses Spark), or
    None. ``bind``: the caller decodes the terms a BIND computes (``walk``'s ``known``), so a BIND
    outside the background is evaluated when its value depends on the mapping alone (not on the
    interval, the instant or a draw: an answer's value would then change along its lifetime)."""
    for node in _outside_background(query.form):
        if isinstance(node, A.Extend) and bind:
            if any(isinstance(e, (A.Exists, A.Timestamp, A.PatternTimestamp, A.IntervalFn))
                   or (isinstance(e, A.Builtin) and e.name in A.SOLUTION_BUILTINS) for e in A.subexpressions(node.expr)):
                return ("a BIND over events that reads the instant, the interval, a timestamp or EXISTS, or draws "
                        "(RAND(), UUID(), STRUUID(), BNODE()) (on Spark)")
            continue
        if isinstance(node, (A.Values, A.Minus, A.SubSelect, A.Extend, A.GroupCover)):
            return "VALUES, MINUS, BIND, GROUP BY over events and sub-queries outside the background (on Spark)"
        condition = node.condition if isinstance(node, (A.Filter, A.LeftJoin)) else None
        if condition is not None and any(
                isinstance(e, (A.Exists, A.Timestamp, A.PatternTimestamp))
                or (isinstance(e, A.Builtin) and e.name == "NOW") for e in A.subexpressions(condition)):
            return "EXISTS, timestamp() and NOW() in a condition (on Spark)"
    return None


def _bound(node) -> frozenset:
    """The variable columns every row of ``node`` binds (a static, conservative answer)."""
    match node:
        case A.BGP():
            return frozenset(var_column(part.name) for tp in node.patterns
                             for part in (tp.s, tp.o, getattr(tp, "p", None)) if isinstance(part, A.Var))
        case A.Join() | A.Sequence():
            return _bound(node.left) | _bound(node.right)
        case A.Union():
            return _bound(node.left) & _bound(node.right)
        case A.LeftJoin() | A.NoTail():
            return _bound(node.left)
        case A.Filter():
            return _bound(node.inner)
        case A.NoHead():
            return _bound(node.right)
        case A.SeqWithout():
            return _bound(node.left) | _bound(node.right)
        case A.StreamPattern():
            return _bound(node.pattern)
    return frozenset()


def _only(allowed: dict, columns: frozenset) -> dict:
    return {v: values for v, values in allowed.items() if v in columns}


def walk(ops: DriverOperators[R], pattern, streams: Mapping, background: Mapping, time_unit: str,
         terms: Callable | None = None, windows: dict | None = None, known: dict | None = None) -> R:
    """⟦pattern⟧ at every instant, computed by ``ops``. ``streams``: {stream IRI: its triples, as
    ``ops.window`` reads them}; ``background``: {``A.Background`` node: its relation};
    ``terms``: ids → {id: term}, for FILTER and OPTIONAL conditions; ``windows``: receives each
    (stream, window)'s content (``ops.window``), and a content already there is used; ``known``:
    {id: term} of every id the inputs hold, which receives the terms a BIND computes (without it,
    a BIND outside the background is refused: ``supports``)."""
    windows = {} if windows is None else windows

    def ev(node, content, allowed: dict) -> R:
        """⟦node⟧ where ``content`` is the window's content (None: outside every window);
        ``allowed``: values a JOIN above lets through, per variable (module doc)."""
        match node:
            case A.BGP() if content is not None:
                refusal = A.stream_path_refusal(node)
                if refusal:
                    raise UnsupportedQueryError(refusal)
                return ops.bgp_in_window(node, content, allowed)
            case A.Join(left=left, right=right):
                static = [side for side in (left, right) if content is None and not A.stream_patterns(side)]
                if static and len(static) < 2:    # the static side first: it narrows the other
                    first = ev(static[0], content, {})
                    other = ev(right if static[0] is left else left, content, ops.narrow(allowed, first))
                    return ops.join(first, other) if static[0] is left else ops.join(other, first)
                return ops.join(ev(left, content, allowed), ev(right, content, allowed))
            case A.Union(left=left, right=right):
                return ops.union(ev(left, content, allowed), ev(right, content, allowed))
            case A.LeftJoin(left=left, right=right, condition=condition):
                keep = None if condition is None else ops.keeper(condition, terms, time_unit)
                return ops.left_join(ev(left, content, allowed), ev(right, content, {}), keep)
            case A.Filter(condition=condition, inner=inner):
                return ops.filter_rel(ev(inner, content, allowed), condition, terms, time_unit)
            case A.Extend(inner=inner, var=var, expr=expr) if known is not None:
                bound = var_column(var.name)   # the BIND's own variable narrows nothing below it
                inner_rel = ev(inner, content, {v: values for v, values in allowed.items() if v != bound})
                return ops.extend(inner_rel, var, expr, known, time_unit)
            case A.Background():
                return background[node]
            case A.StreamPattern():
                key = (node.stream, node.window)
                if key not in windows:
                    windows[key] = ops.window(streams.get(node.stream, ()), node.window, None, time_unit)
                return ev(node.pattern, windows[key], allowed)
            case A.Sequence(left=left, right=right):
                return ops.seq(ev(left, content, allowed), ev(right, content, allowed))
            case A.SeqWithout(left=left, negated=negated, right=right):
                blocked = _bound(left) | _bound(right)
                return ops.seq_wo(ev(left, content, allowed), ev(negated, content, _only(allowed, blocked)),
                                  ev(right, content, allowed))
            case A.NoHead(negated=negated, right=right):
                return ops.no_head(ev(negated, content, _only(allowed, _bound(right))), ev(right, content, allowed))
            case A.NoTail(left=left, negated=negated):
                return ops.no_tail(ev(left, content, allowed), ev(negated, content, _only(allowed, _bound(left))), None)
        raise TypeError(f"cannot evaluate {type(node).__name__} here")

    return ev(pattern, None, {})
