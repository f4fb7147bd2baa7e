"""Values of expressions as RDF terms: what ``BIND(expr AS ?v)`` and ``SELECT (expr AS ?v)`` bind
(SPARQL 1.1 §18.5 Extend), and what an aggregate of an expression aggregates.

``term_value(expr, μ)`` is the term ``expr`` evaluates to under μ, or None where SPARQL's
evaluation is an error (the variable is then left unbound, §18.5 Extend). FILTER
(``cep.reference.eval_expr``, ``cep.filters``) needs only truth values and compares computed
numbers as doubles; a bound value is a term, so numbers here are typed exactly (XPath's
op:numeric-add etc., SPARQL 1.1 §17.3):

* integer op integer → xsd:integer (``/`` → xsd:decimal); with a decimal → xsd:decimal; with a
  double or float → xsd:double. Integers and decimals are exact decimal(38, 18) values (the
  C-SPARQL aggregates' ``cep.reference._number``): a result beyond 10^20 or a division by zero is
  an error; decimals have 18 fraction digits, rounded half up (XPath asks for at least 18);
* ABS, CEIL, FLOOR, ROUND keep the type (ROUND halves toward positive infinity, fn:round);
  STRLEN, YEAR, MONTH, DAY, HOURS, MINUTES are xsd:integers, SECONDS an xsd:decimal, RAND an xsd:double; doubles follow IEEE 754 (a division by zero is ±INF, 0/0 NaN);
* the other expressions are those of FILTER: a term, or a boolean (xsd:boolean); IF and
  COALESCE choose their branch first, so a numeric branch is typed too. getDURATION() and the
  other time values, which no term form is given for, are errors.

The Spark engine evaluates BIND with this very function, in a vectorized Arrow UDF over the
decoded terms (``cep.spark``): Spark SQL's decimal arithmetic keeps 6 fraction digits of a
decimal(38, 18) quotient, below what XPath asks for.
"""
from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal, localcontext

from cep import algebra as A
from cep.literals import (AGGREGATE_LIMIT, AGGREGATE_SCALE, DATETIME_PATTERN, XSD_BOOLEAN, XSD_DATETIME, XSD_DECIMAL,
                          XSD_DOUBLE, XSD_INTEGER, canonical_decimal, canonical_double)

__all__ = ["term_value", "numeric"]

_NUMERIC_BUILTINS = ("ABS", "CEIL", "FLOOR", "ROUND", "STRLEN", "YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS",
                     "RAND")
_QUANTUM = Decimal(1).scaleb(-AGGREGATE_SCALE)


def numeric(e) -> bool:
    """Whether ``e`` computes a number (arithmetic or a numeric function), typed here."""
    return isinstance(e, (A.Arith, A.Neg)) or (isinstance(e, A.Builtin) and e.name in _NUMERIC_BUILTINS)


def term_value(e, mu: dict, interval: tuple | None = None, unit: str = "ms", exists=None) -> str | None:
    """The term ``e`` evaluates to under ``mu`` (variable name → term), or None (an error)."""
    from cep.reference import _ERROR, ebv, eval_expr

    if numeric(e):
        n = _number(e, mu, interval, unit, exists)
        return None if n is None else _term(*n)
    if isinstance(e, A.Builtin) and e.name == "IF":
        cond = ebv(eval_expr(e.args[0], mu, interval, unit, None, exists))
        if cond is _ERROR:
            return None
        return term_value(e.args[1] if cond else e.args[2], mu, interval, unit, exists)
    if isinstance(e, A.Builtin) and e.name == "COALESCE":
        for arg in e.args:
            value = term_value(arg, mu, interval, unit, exists)
            if value is not None:
                return value
        return None
    value = eval_expr(e, mu, interval, unit, None, exists)
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^<{XSD_BOOLEAN}>'
    if isinstance(value, str):
        return value
    return None   # an error, or a value with no term form here (a time, a duration)


def _operand(e, mu, interval, unit, exists):
    """(kind, value) of a numeric operand, or None."""
    from cep.reference import _number as literal_number
    from cep.reference import eval_expr

    if numeric(e):
        return _number(e, mu, interval, unit, exists)
    value = eval_expr(e, mu, interval, unit, None, exists)
    return literal_number(value) if isinstance(value, str) and not isinstance(value, bool) else None


def _number(e, mu, interval, unit, exists):
    """(kind, value) of a numeric expression ("integer" / "decimal": a Decimal, "double": a
    float), or None (an error)."""
    from cep.reference import _string_literal, eval_expr

    match e:
        case A.Neg(expr=inner):
            n = _operand(inner, mu, interval, unit, exists)
            return None if n is None else (n[0], -n[1])
        case A.Arith(op=op, left=left, right=right):
            a = _operand(left, mu, interval, unit, exists)
            b = _operand(right, mu, interval, unit, exists)
            if a is None or b is None:
                return None
            if "double" in (a[0], b[0]):
                x, y = float(a[1]), float(b[1])
                if op == "/" and y == 0:   # IEEE 754, as xsd:double has it: ±INF, or NaN for 0/0
                    return "double", (math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1, y))
                return "double", {"+": x + y, "-": x - y, "*": x * y, "/": x / y if y else 0.0}[op]
            kind = "integer" if a[0] == b[0] == "integer" and op != "/" else "decimal"
            with localcontext() as ctx:
                ctx.prec = 80
                if op == "/":
                    if b[1] == 0:
                        return None
                    value = a[1] / b[1]
                else:
                    value = {"+": a[1] + b[1], "-": a[1] - b[1], "*": a[1] * b[1]}[op]
                value = value.quantize(_QUANTUM, rounding=ROUND_HALF_UP)
            return (kind, value) if abs(value) < AGGREGATE_LIMIT else None
        case A.Builtin(name="YEAR" | "MONTH" | "DAY" | "HOURS" | "MINUTES" | "SECONDS" as name, args=(arg,)):
            from cep.reference import _literal_of
            lit = _literal_of(eval_expr(arg, mu, interval, unit, None, exists))
            m = re.match(DATETIME_PATTERN, lit[0]) if lit is not None and lit[2] == XSD_DATETIME else None
            if m is None:
                return None
            fields = re.match(r"^(-?[0-9]+)-([0-9]+)-([0-9]+)T([0-9]+):([0-9]+):([0-9]+)$", m.group(1)).groups()
            if name == "SECONDS":                     # xsd:decimal, the fraction kept
                return "decimal", Decimal(f"{fields[5]}.{m.group(2) or '0'}").quantize(_QUANTUM)
            index = ("YEAR", "MONTH", "DAY", "HOURS", "MINUTES").index(name)
            return "integer", Decimal(int(fields[index]))
        case A.Builtin(name="RAND"):                 # xsd:double (§17.4.4.5)
            value = eval_expr(e, mu, interval, unit, None, exists)
            return ("double", value) if isinstance(value, float) else None
        case A.Builtin(name="STRLEN", args=(arg,)):
            text = _string_literal(eval_expr(arg, mu, interval, unit, None, exists))
            return None if text is None else ("integer", Decimal(len(text[0])))
        case A.Builtin(name=name, args=(arg,)):
            n = _operand(arg, mu, interval, unit, exists)
            if n is None:
                return None
            kind, v = n
            if kind == "double":
                if not math.isfinite(v):
                    return kind, (abs(v) if name == "ABS" else v)
                out = {"ABS": abs(v), "CEIL": math.ceil(v), "FLOOR": math.floor(v), "ROUND": math.floor(v + 0.5)}[name]
                return kind, float(out)
            with localcontext() as ctx:
                ctx.prec = 80
                out = {"ABS": abs(v), "CEIL": v.to_integral_value(ROUND_CEILING),
                       "FLOOR": v.to_integral_value(ROUND_FLOOR),
                       "ROUND": (v + Decimal("0.5")).to_integral_value(ROUND_FLOOR)}[name]
            return kind, out.quantize(_QUANTUM) + 0   # + 0: no negative zero
    raise TypeError(f"not a numeric expression: {e!r}")


def _term(kind: str, value) -> str | None:
    if kind == "integer":
        return f'"{int(value)}"^^<{XSD_INTEGER}>'
    if kind == "decimal":
        return f'"{canonical_decimal(value + 0)}"^^<{XSD_DECIMAL}>'
    if math.isnan(value):
        text = "NaN"
    elif math.isinf(value):
        text = "INF" if value > 0 else "-INF"
    else:
        text = canonical_double(value)
    return f'"{text}"^^<{XSD_DOUBLE}>'
