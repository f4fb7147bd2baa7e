"""ORDER BY / LIMIT / OFFSET on the driver (SPARQL 1.1 §15, ``A.Modifiers``), for every
language the driver evaluates: applied to each asked instant's answers on their own, after the
answers are computed. So a consuming RSEP-QL MATCH consumes what every answer used, LIMIT or not,
as in ``cep.engines.reference`` and on Spark (``cep.engines.spark.filters``).

An instant's answers (its distinct rows) are sorted by the ORDER BY keys, each an expression
evaluated over the row's mapping and interval (``cep.terms.values.eval_expr``) and compared by
SPARQL's order of values (``cep.terms.values.order_key``), DESC reversing its key alone. Rows
equal on every key are ordered by their projected terms' ids (unbound first), then t1, t2: a
total order, so that LIMIT keeps the same rows on every engine. Then OFFSET rows are skipped and
at most LIMIT kept.

Not here (:func:`refusal`): ORDER BY keys that read a variable the SELECT drops (SPARQL orders the
solutions before it projects them), and modifiers on anything but a SELECT.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import cmp_to_key
from itertools import groupby

from cep import algebra as A
from cep.terms.values import eval_expr, order_key
from rdfcore.hashing import term_id

__all__ = ["refusal", "apply"]


def refusal(query: A.Query) -> str | None:
    """Why the driver does not apply ``query``'s modifiers (then Spark evaluates the query), or
    None (also when it has none)."""
    modifiers = query.modifiers
    if modifiers is None:
        return None
    if not isinstance(query.form, A.Project):
        return "ORDER BY / LIMIT / OFFSET on a query form other than SELECT (on Spark)"
    if not modifiers.reads_only({v.name for v in query.form.variables}):
        return "ORDER BY over a variable the SELECT does not project (on Spark)"
    return None


def apply(modifiers: A.Modifiers, variables: Sequence[str], rows: list, time_unit: str) -> list:
    """``rows`` — ``(t, term or None per variable..., t1, t2)``, distinct, grouped by t in increasing
    order (``cep.engines.driver.answers.sorted_rows``) — with each instant's rows in the query's
    order and sliced (module doc)."""
    keys = modifiers.order
    out = []
    for _at, group in groupby(rows, key=lambda r: r[0]):
        decorated = []
        for row in group:
            mapping = {name: value for name, value in zip(variables, row[1:-2]) if value is not None}
            interval = (row[-2], row[-1])
            values = [order_key(eval_expr(key.expr, mapping, interval, time_unit)) for key in keys]
            tie = (*[(0, 0) if v is None else (1, term_id(v)) for v in row[1:-2]], row[-2], row[-1])
            decorated.append((values, tie, row))

        def compare(a, b) -> int:
            for key, x, y in zip(keys, a[0], b[0]):
                if x != y:
                    before = x < y
                    return (1 if before else -1) if key.descending else (-1 if before else 1)
            return (a[1] > b[1]) - (a[1] < b[1])

        decorated.sort(key=cmp_to_key(compare))
        end = None if modifiers.limit is None else modifiers.offset + modifiers.limit
        out.extend(row for _values, _tie, row in decorated[modifiers.offset:end])
    return out
