"""C-SPARQL's aggregate functions (§2.2, §3.1 of ../shared/papers/003_...): the term f(values) of
a group, for every engine that computes it on terms (the reference evaluator and the driver's
C-SPARQL engine; the Spark engine computes the same terms with columns,
``cep.engines.spark.csparql``). Numbers are read with ``cep.terms.numbers.literal_number`` and
written with ``cep.terms.literals``' canonical forms: exact integers and decimals, doubles the
fewest digits that read back."""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext

from cep.terms.literals import (AGGREGATE_LIMIT, AGGREGATE_SCALE, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER,
                                canonical_decimal, canonical_double)
from cep.terms.numbers import literal_number

__all__ = ["aggregate_value"]


def _order_key(term):
    """MIN / MAX order of a group whose values are not all numbers: blank nodes, then IRIs, then
    literals; the numbers among the literals first, by value (as ``<`` orders them: 2 before
    12345678901234), the other literals after them; each tie by the term's N-Triples text (code
    points)."""
    rank = 0 if term.startswith("_:") else 1 if term.startswith("<") else 2
    number = literal_number(term) if rank == 2 else None
    return (rank, 1, 0.0, term) if number is None else (rank, 0, float(number[1]), term)


def aggregate_value(function: str, distinct: bool, values: list, rows: int):
    """The term f(values) (None: an error, the variable stays unbound). ``values``: the bound
    argument terms of the group's mappings (one per mapping); ``rows``: the group's size.

    COUNT → xsd:integer (the mappings, or the bound values); SUM, AVG of numbers: exact decimals
    for integer and decimal values (SUM of integers an xsd:integer, else an xsd:decimal; AVG an
    xsd:decimal, 18 fraction digits, rounded half up), doubles when one value is a double or
    float; none → "0"^^xsd:integer; a value that is not a number → error. MIN, MAX: the least /
    greatest value — by number (ties by term text) when all are numbers, else by
    ``_order_key`` (numbers still by value) — the term itself."""
    if distinct:
        values = list(dict.fromkeys(values))
    if function == "COUNT":
        return f'"{rows if values is None else len(values)}"^^<{XSD_INTEGER}>'
    if function in ("MIN", "MAX"):
        if not values:
            return None
        numbers = [literal_number(v) for v in values]
        if all(n is not None for n in numbers):
            keyed = [(float(n[1]), v) for n, v in zip(numbers, values)]
        else:
            keyed = [(_order_key(v), v) for v in values]
        return (min if function == "MIN" else max)(keyed)[1]
    if not values:
        return f'"0"^^<{XSD_INTEGER}>'
    numbers = [literal_number(v) for v in values]
    if any(n is None for n in numbers):
        return None
    kinds = {k for k, _ in numbers}
    if "double" in kinds:
        # added smallest first, as the Spark engine does: a group has no order, and a sum of
        # doubles rounds differently in another one
        total = sum(sorted(float(v) for _, v in numbers), 0.0)
        result = total if function == "SUM" else total / len(numbers)
        text = canonical_double(result)
        return None if text is None else f'"{text}"^^<{XSD_DOUBLE}>'
    total = sum((v for _, v in numbers), Decimal(0))
    if abs(total) >= AGGREGATE_LIMIT:
        return None
    if function == "SUM":
        if kinds == {"integer"}:
            return f'"{int(total)}"^^<{XSD_INTEGER}>'
        return f'"{canonical_decimal(total)}"^^<{XSD_DECIMAL}>'
    with localcontext() as ctx:
        ctx.prec = 80
        mean = (total / len(numbers)).quantize(Decimal(1).scaleb(-AGGREGATE_SCALE), rounding=ROUND_HALF_UP)
    return f'"{canonical_decimal(mean)}"^^<{XSD_DECIMAL}>'
