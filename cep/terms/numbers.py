"""Computed numbers, typed as XPath types them, and the terms expressions evaluate to: what
``BIND(expr AS ?v)`` and ``SELECT (expr AS ?v)`` bind (SPARQL 1.1 §18.5 Extend), what an
aggregate of an expression aggregates, and what FILTER compares.

``term_value(expr, μ)`` is the term ``expr`` evaluates to under μ, or None where SPARQL's
evaluation is an error (the variable is then left unbound, §18.5 Extend). The value of a numeric
expression (``numeric``) is a ``Number``: its XPath type and its exact value (op:numeric-add etc.,
SPARQL 1.1 §17.3), which FILTER compares as it is (``cep.terms.values.eval_expr``) and BIND writes as
a term:

* integer op integer → xsd:integer (``/`` → xsd:decimal); with a decimal → xsd:decimal; with a
  double or float → xsd:double. Integers and decimals are exact decimal(38, 18) values (the
  C-SPARQL aggregates' ``cep.terms.numbers.literal_number``): a result beyond 10^20 or a division by zero is
  an error; decimals have 18 fraction digits, rounded half up (XPath asks for at least 18);
* ABS, CEIL, FLOOR, ROUND keep the type (ROUND halves toward positive infinity, fn:round);
  STRLEN, YEAR, MONTH, DAY, HOURS, MINUTES are xsd:integers, SECONDS an xsd:decimal, RAND an
  xsd:double; doubles follow IEEE 754 (a division by zero is ±INF, 0/0 NaN) and keep their 53
  bits until written as a term (the fewest significant digits that read back as the same double,
  ``cep.terms.literals.canonical_double``);
* the other expressions are those of FILTER: a term, or a boolean (xsd:boolean); IF and
  COALESCE choose their branch first, so a numeric branch (or a time, below) is typed too;
* EP-SPARQL's getDURATION() is the interval's length, tω − tα, as an xsd:dayTimeDuration in XSD's
  canonical form (PT0S, P1D, PT1H30M, PT0.5S, -P2DT3H4M5.25S: ``cep.terms.literals.duration_term``);
  getSTARTTIME() / getENDTIME() are tα / tω as xsd:dateTimes in UTC (``cep.terms.literals.datetime_term``;
  outside years 1-9999 an error). Both are FILTER's very values — the stream's ticks times the
  time unit, since 1970-01-01T00:00:00Z — so a FILTER on the bound variable compares as one on
  the function (``cep.terms.literals.temporal_value`` reads the terms back exactly).

The Spark engine evaluates BIND, and the numeric parts of a FILTER, with these very functions in
a vectorized Arrow UDF over the decoded terms (``cep.engines.spark.evaluate``, ``cep.engines.spark.filters``): Spark SQL's decimal
arithmetic keeps 6 fraction digits of a decimal(38, 18) quotient, below what XPath asks for.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal, localcontext

from cep import algebra as A
from cep.terms.literals import (AGGREGATE_LIMIT, AGGREGATE_SCALE, DATETIME_PATTERN, NUMBER_LEXICAL, XSD_BOOLEAN,
                                XSD_DATETIME, XSD_DECIMAL, XSD_DOUBLE, XSD_FLOAT, XSD_INTEGER, XSD_STRING,
                                canonical_decimal, canonical_double, datetime_term, duration_term, number_kind,
                                numeric_value, parse_literal)

__all__ = ["temporal_term", "numeric", "Number", "number", "comparable", "term_of", "literal_of",
           "string_literal", "simple_string", "literal_number", "STRINGS"]

_NUMERIC_BUILTINS = ("ABS", "CEIL", "FLOOR", "ROUND", "STRLEN", "YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS",
                     "RAND")
_QUANTUM = Decimal(1).scaleb(-AGGREGATE_SCALE)
#: the kinds held as IEEE 754 binary floating point (Python floats; a "float" rounded to a single)
_BINARY = ("float", "double")
_SPECIAL_DOUBLES = {"INF": math.inf, "+INF": math.inf, "-INF": -math.inf, "NaN": math.nan}


@dataclass(frozen=True)
class Number:
    """A computed number: ``kind`` "integer" / "decimal" (``value`` an exact Decimal, 18 fraction
    digits), "float" (``value`` a Python float holding an IEEE 754 single) or "double"."""

    kind: str
    value: object

    def term(self) -> str:
        """The number as an N-Triples literal (xsd:integer, xsd:decimal, xsd:double)."""
        return _term(self.kind, self.value)


def numeric(e) -> bool:
    """Whether ``e`` computes a number (arithmetic or a numeric function): its value is a Number."""
    return isinstance(e, (A.Arith, A.Neg)) or (isinstance(e, A.Builtin) and e.name in _NUMERIC_BUILTINS)


def temporal_term(kind: str, seconds) -> str | None:
    """The term of a time value (``cep.terms.values.eval_expr``'s, in exact seconds): a "duration" as
    an xsd:dayTimeDuration in canonical form (``cep.terms.literals.duration_term``: P1DT2H, PT0.5S), a
    "dateTime" (since 1970-01-01T00:00:00Z) as an xsd:dateTime in UTC (``cep.terms.literals.datetime_term``;
    None, an error, outside years 1-9999). ``cep.terms.literals.temporal_value`` reads either back to the
    same value, so a later FILTER compares the bound term as it compares the function's value."""
    if kind == "duration":
        return duration_term(seconds)
    if kind == "dateTime":
        return datetime_term(seconds)
    raise ValueError(f"a time value is a 'duration' or a 'dateTime', got {kind!r}")


def comparable(value) -> tuple | None:
    """(kind, value) of a value a numeric comparison reads — a Number, or a numeric literal
    (INF / NaN too) — or None: "integer" / "decimal" values as exact decimal(38, 18) (beyond
    10^20, a literal reads as a double), "double" values as floats. Two exact values compare
    exactly; with a double, both compare as doubles."""
    if isinstance(value, Number):
        return value.kind, value.value
    if not isinstance(value, str) or not value.startswith('"'):
        return None
    found = _literal_operand(value)
    if found is not None:
        return found
    n = numeric_value(value)
    return None if n is None else ("double", n)


def _literal_operand(term: str) -> tuple | None:
    found = literal_number(term)
    lit = parse_literal(term) if found is None or found[0] == "double" else None
    if found is None and lit is not None and number_kind(lit[2]) == "double" and lit[0] in _SPECIAL_DOUBLES:
        found = "double", _SPECIAL_DOUBLES[lit[0]]
    if found is not None and lit is not None and lit[2] == XSD_FLOAT:   # read as a double, kept a float
        return "float", _single(found[1])
    return found


STRINGS = (XSD_STRING, "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString")


def string_literal(value):
    """(lexical, lang or None) of a string literal (simple, xsd:string, language-tagged), else None."""
    lit = literal_of(value)
    if lit is None or lit[2] not in STRINGS:
        return None
    return lit[0], lit[1]


def simple_string(term):
    lit = parse_literal(term)
    if lit is not None and lit[1] is None and lit[2] == XSD_STRING:
        return lit[0]
    return None


def term_of(value):
    """A value as an N-Triples term (booleans and numbers from expressions become literals)."""
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^<{XSD_BOOLEAN}>'
    if isinstance(value, Number):
        return value.term()
    return value


def literal_of(value):
    """``parse_literal`` of a value as a term (None when it is no literal, or an error)."""
    t = term_of(value)
    return parse_literal(t) if isinstance(t, str) else None


def literal_number(term):
    """(kind, value) of a numeric literal an aggregate can read, else None: "integer" / "decimal"
    values are exact decimal(38, 18) (None beyond 10^20), "double" values floats."""
    lit = parse_literal(term)
    kind = number_kind(lit[2]) if lit is not None else None
    if kind is None or not re.match(NUMBER_LEXICAL[kind], lit[0]):
        return None
    if kind == "double":
        return kind, float(lit[0])
    with localcontext() as ctx:   # 20 integer and 18 fraction digits: past the default 28
        ctx.prec = 80
        value = Decimal(lit[0]).quantize(Decimal(1).scaleb(-AGGREGATE_SCALE), rounding=ROUND_HALF_UP)
    if value == 0:
        value = abs(value)   # "-0.0" is 0
    return (kind, value) if abs(value) < AGGREGATE_LIMIT else None


def _single(x: float) -> float:
    """``x`` rounded to the nearest IEEE 754 single (xsd:float's value space)."""
    import numpy as np

    with np.errstate(over="ignore"):
        return float(np.float32(x))


def _operand(value) -> tuple | None:
    """(kind, value) of an arithmetic operand's value, or None (not a number: an error)."""
    if isinstance(value, Number):
        return value.kind, value.value
    return _literal_operand(value) if isinstance(value, str) else None


def number(e, sub, rand) -> Number | None:
    """The value of numeric expression ``e``, or None (an error). ``sub(x)``: the value of a
    subexpression (``cep.terms.values.eval_expr``'s); ``rand()``: the solution's RAND() double."""

    match e:
        case A.Neg(expr=inner):
            n = _operand(sub(inner))
            if n is None or n[0] in _BINARY:
                return None if n is None else Number(n[0], -n[1])
            with localcontext() as ctx:
                ctx.prec = 80
                return Number(n[0], -n[1] + 0)   # + 0: no negative zero
        case A.Arith(op=op, left=left, right=right):
            a, b = _operand(sub(left)), _operand(sub(right))
            if a is None or b is None:
                return None
            if "double" in (a[0], b[0]) or "float" in (a[0], b[0]):
                kind = "double" if "double" in (a[0], b[0]) else "float"
                x, y = float(a[1]), float(b[1])
                if kind == "float":   # a decimal or an integer promoted to xsd:float
                    x, y = _single(x), _single(y)
                if op == "/" and y == 0:   # IEEE 754, as xsd:double has it: ±INF, or NaN for 0/0
                    return Number(kind, math.nan if x == 0 or math.isnan(x)
                                  else math.copysign(math.inf, x) * math.copysign(1, y))
                value = {"+": x + y, "-": x - y, "*": x * y, "/": x / y if y else 0.0}[op]
                return Number(kind, _single(value) if kind == "float" else value)
            kind = "integer" if a[0] == b[0] == "integer" and op != "/" else "decimal"
            with localcontext() as ctx:
                ctx.prec = 80
                if op == "/":
                    if b[1] == 0:
                        return None
                    value = a[1] / b[1]
                else:
                    value = {"+": a[1] + b[1], "-": a[1] - b[1], "*": a[1] * b[1]}[op]
                value = value.quantize(_QUANTUM, rounding=ROUND_HALF_UP) + 0   # + 0: no negative zero
            return Number(kind, value) if abs(value) < AGGREGATE_LIMIT else None
        case A.Builtin(name="YEAR" | "MONTH" | "DAY" | "HOURS" | "MINUTES" | "SECONDS" as name, args=(arg,)):
            lit = literal_of(sub(arg))
            m = re.match(DATETIME_PATTERN, lit[0]) if lit is not None and lit[2] == XSD_DATETIME else None
            if m is None:
                return None
            fields = re.match(r"^(-?[0-9]+)-([0-9]+)-([0-9]+)T([0-9]+):([0-9]+):([0-9]+)$", m.group(1)).groups()
            if name == "SECONDS":                     # xsd:decimal, the fraction kept
                return Number("decimal", Decimal(f"{fields[5]}.{m.group(2) or '0'}").quantize(_QUANTUM))
            index = ("YEAR", "MONTH", "DAY", "HOURS", "MINUTES").index(name)
            return Number("integer", Decimal(int(fields[index])))
        case A.Builtin(name="RAND"):                 # xsd:double (§17.4.4.5)
            value = rand()
            return Number("double", value) if isinstance(value, float) else None
        case A.Builtin(name="STRLEN", args=(arg,)):
            text = string_literal(sub(arg))
            return None if text is None else Number("integer", Decimal(len(text[0])))
        case A.Builtin(name=name, args=(arg,)):
            n = _operand(sub(arg))
            if n is None:
                return None
            kind, v = n
            if kind in _BINARY:
                if not math.isfinite(v):
                    return Number(kind, abs(v) if name == "ABS" else v)
                out = {"ABS": abs(v), "CEIL": math.ceil(v), "FLOOR": math.floor(v), "ROUND": math.floor(v + 0.5)}[name]
                return Number(kind, float(out))
            with localcontext() as ctx:
                ctx.prec = 80
                out = {"ABS": abs(v), "CEIL": v.to_integral_value(ROUND_CEILING),
                       "FLOOR": v.to_integral_value(ROUND_FLOOR),
                       "ROUND": (v + Decimal("0.5")).to_integral_value(ROUND_FLOOR)}[name]
                return Number(kind, out.quantize(_QUANTUM) + 0)   # + 0: no negative zero
    raise TypeError(f"not a numeric expression: {e!r}")


def _term(kind: str, value) -> str:
    if kind == "integer":
        return f'"{int(value)}"^^<{XSD_INTEGER}>'
    if kind == "decimal":
        return f'"{canonical_decimal(value)}"^^<{XSD_DECIMAL}>'
    if math.isnan(value):
        text = "NaN"
    elif math.isinf(value):
        text = "INF" if value > 0 else "-INF"
    else:
        text = canonical_double(value, single=kind == "float")
    return f'"{text}"^^<{XSD_FLOAT if kind == "float" else XSD_DOUBLE}>'
