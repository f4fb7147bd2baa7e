"""FILTER expressions of CQELS-CEP queries (SPARQL 1.1 §17): a closed set of frozen dataclasses.

Part of the algebra (``cep.algebra.patterns`` re-exports every name here): ``cep.lowering`` builds these nodes
from the syntax tree, the runtimes (``cep.engines.reference``, ``cep.engines.spark.evaluate``) evaluate them. Terms are
N-Triples strings, exactly as ``paths.algebra.Term``; variables are :class:`Var` (name without
``?``), which patterns use too.

``str(node)`` is a readable SPARQL-like form, for people and error messages.
"""
from __future__ import annotations

import re
import typing as _t
from dataclasses import dataclass, fields

from paths.algebra import Term, is_term

__all__ = [
    "Var", "Const", "Compare", "Arith", "And", "Or", "Not", "Neg", "Bound", "Regex", "Str", "Lang",
    "Datatype", "Exists", "Builtin", "BUILTINS", "TERM_BUILTINS", "SOLUTION_BUILTINS", "IntervalFn", "INTERVAL_FUNCTIONS", "Timestamp", "PatternTimestamp",
    "uses_timestamp", "subexpressions", "Expr", "EXPR_TYPES", "COMPARE_OPS", "ARITH_OPS",
    "expr_variables", "check_term", "check_expr", "uses_interval",
]

# --- variables and terms -----------------------------------------------------------------------

# SPARQL 1.1 [166] VARNAME ::= ( PN_CHARS_U | [0-9] ) ( PN_CHARS_U | [0-9] | #x00B7 |
#   [#x0300-#x036F] | [#x203F-#x2040] )*
_VARNAME = re.compile(
    r"[A-Za-z_0-9\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C-\u200D"
    r"\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\U00010000-\U000EFFFF]"
    r"[A-Za-z_0-9\u00B7\u0300-\u036F\u203F-\u2040\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF"
    r"\u0370-\u037D\u037F-\u1FFF\u200C-\u200D\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF"
    r"\uFDF0-\uFFFD\U00010000-\U000EFFFF]*"
    r"(?:-[A-Za-z_][A-Za-z_0-9]*)*")   # C-SPARQL's hyphenated names (?total-sensor), cep/syntax/grammar.lark


@dataclass(frozen=True)
class Var:
    """A query variable ``?name`` (SPARQL 1.1 [108]); ``name`` has no ``?``/``$``."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _VARNAME.fullmatch(self.name):
            raise ValueError(f"Var.name must be a SPARQL VARNAME without '?', got {self.name!r}")

    def __str__(self) -> str:
        return f"?{self.name}"


def check_term(value: object, what: str) -> None:
    """TypeError unless ``value`` is an N-Triples term."""
    if not is_term(value):
        raise TypeError(f"{what} must be an N-Triples term (<iri>, \"literal\", _:b), "
                        f"got {value!r}")


# --- expressions (SPARQL 1.1 §17; FILTER) ------------------------------------------------------

COMPARE_OPS = ("=", "!=", "<", "<=", ">", ">=")   # [114] RelationalExpression
ARITH_OPS = ("+", "-", "*", "/")                  # [116] AdditiveExpression, [117] Multiplicative


@dataclass(frozen=True)
class Const:
    """A constant in an expression (an N-Triples term)."""

    term: Term

    def __post_init__(self) -> None:
        check_term(self.term, "Const.term")

    def __str__(self) -> str:
        return self.term


@dataclass(frozen=True)
class Compare:
    """``left op right``, op in ``COMPARE_OPS`` (SPARQL 1.1 [114], §17.3 operator mapping;
    numeric/datatype-aware comparison is the runtime's job)."""

    op: str
    left: "Expr"
    right: "Expr"

    def __post_init__(self) -> None:
        if self.op not in COMPARE_OPS:
            raise ValueError(f"Compare.op must be one of {COMPARE_OPS}, got {self.op!r}")
        check_expr(self.left, "Compare.left")
        check_expr(self.right, "Compare.right")

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Arith:
    """``left op right``, op in ``ARITH_OPS`` (SPARQL 1.1 [116], [117]; numeric, §17.4.1)."""

    op: str
    left: "Expr"
    right: "Expr"

    def __post_init__(self) -> None:
        if self.op not in ARITH_OPS:
            raise ValueError(f"Arith.op must be one of {ARITH_OPS}, got {self.op!r}")
        check_expr(self.left, "Arith.left")
        check_expr(self.right, "Arith.right")

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class And:
    """``left && right`` (SPARQL 1.1 [112], §17.2 logical-and with errors)."""

    left: "Expr"
    right: "Expr"

    def __post_init__(self) -> None:
        check_expr(self.left, "And.left")
        check_expr(self.right, "And.right")

    def __str__(self) -> str:
        return f"({self.left} && {self.right})"


@dataclass(frozen=True)
class Or:
    """``left || right`` (SPARQL 1.1 [111], §17.2 logical-or with errors)."""

    left: "Expr"
    right: "Expr"

    def __post_init__(self) -> None:
        check_expr(self.left, "Or.left")
        check_expr(self.right, "Or.right")

    def __str__(self) -> str:
        return f"({self.left} || {self.right})"


@dataclass(frozen=True)
class Not:
    """``!e`` (SPARQL 1.1 [118], fn:not of the effective boolean value)."""

    expr: "Expr"

    def __post_init__(self) -> None:
        check_expr(self.expr, "Not.expr")

    def __str__(self) -> str:
        return f"!{self.expr}"


@dataclass(frozen=True)
class Neg:
    """``-e`` (SPARQL 1.1 [118], op:numeric-unary-minus)."""

    expr: "Expr"

    def __post_init__(self) -> None:
        check_expr(self.expr, "Neg.expr")

    def __str__(self) -> str:
        return f"-{self.expr}"


@dataclass(frozen=True)
class Bound:
    """``BOUND(?v)`` (SPARQL 1.1 [121], §17.4.1.1)."""

    var: Var

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise TypeError(f"Bound.var must be a Var, got {self.var!r}")

    def __str__(self) -> str:
        return f"BOUND({self.var})"


@dataclass(frozen=True)
class Regex:
    """``REGEX(text, pattern[, flags])`` (SPARQL 1.1 [122], §17.4.3.14)."""

    text: "Expr"
    pattern: "Expr"
    flags: "Expr | None" = None

    def __post_init__(self) -> None:
        check_expr(self.text, "Regex.text")
        check_expr(self.pattern, "Regex.pattern")
        if self.flags is not None:
            check_expr(self.flags, "Regex.flags")

    def __str__(self) -> str:
        extra = "" if self.flags is None else f", {self.flags}"
        return f"REGEX({self.text}, {self.pattern}{extra})"


@dataclass(frozen=True)
class Str:
    """``STR(e)`` (SPARQL 1.1 [121], §17.4.2.5)."""

    expr: "Expr"

    def __post_init__(self) -> None:
        check_expr(self.expr, "Str.expr")

    def __str__(self) -> str:
        return f"STR({self.expr})"


@dataclass(frozen=True)
class Lang:
    """``LANG(e)`` (SPARQL 1.1 [121], §17.4.2.6)."""

    expr: "Expr"

    def __post_init__(self) -> None:
        check_expr(self.expr, "Lang.expr")

    def __str__(self) -> str:
        return f"LANG({self.expr})"


@dataclass(frozen=True)
class Datatype:
    """``DATATYPE(e)`` (SPARQL 1.1 [121], §17.4.2.7)."""

    expr: "Expr"

    def __post_init__(self) -> None:
        check_expr(self.expr, "Datatype.expr")

    def __str__(self) -> str:
        return f"DATATYPE({self.expr})"


#: the SPARQL 1.1 built-ins (§17.4) a ``Builtin`` names: name → (least, most) arguments (None: any)
BUILTINS = {
    "STRSTARTS": (2, 2), "STRENDS": (2, 2), "CONTAINS": (2, 2), "STRLEN": (1, 1), "UCASE": (1, 1),
    "LCASE": (1, 1), "ISIRI": (1, 1), "ISURI": (1, 1), "ISLITERAL": (1, 1), "ISBLANK": (1, 1),
    "ISNUMERIC": (1, 1), "ABS": (1, 1), "CEIL": (1, 1), "FLOOR": (1, 1), "ROUND": (1, 1),
    "SAMETERM": (2, 2), "IF": (3, 3), "COALESCE": (1, None),
    "CONCAT": (1, None), "SUBSTR": (2, 3), "STRBEFORE": (2, 2), "STRAFTER": (2, 2), "REPLACE": (3, 4),
    "YEAR": (1, 1), "MONTH": (1, 1), "DAY": (1, 1), "HOURS": (1, 1), "MINUTES": (1, 1), "SECONDS": (1, 1),
    "LANGMATCHES": (2, 2), "STRDT": (2, 2), "STRLANG": (2, 2), "IRI": (1, 2), "URI": (1, 2), "ENCODE_FOR_URI": (1, 1),
    "MD5": (1, 1), "SHA1": (1, 1), "SHA256": (1, 1), "SHA384": (1, 1), "SHA512": (1, 1),
    "TIMEZONE": (1, 1), "TZ": (1, 1),
    "NOW": (0, 0), "RAND": (0, 0), "UUID": (0, 0), "STRUUID": (0, 0), "BNODE": (0, 1),
}
#: the built-ins that build a term from strings or read a dateTime's time zone (one function each in
#: ``cep.engines.reference`` and ``cep.engines.spark.filters``)
TERM_BUILTINS = ("LANGMATCHES", "STRDT", "STRLANG", "IRI", "URI", "ENCODE_FOR_URI", "MD5", "SHA1", "SHA256", "SHA384",
                 "SHA512", "TIMEZONE", "TZ")
#: the built-ins whose value is not a function of their arguments alone (§17.4.2.8, §17.4.3.x, §17.4.5.1,
#: §17.4.6): RAND, UUID, STRUUID and BNODE read the solution they are evaluated on, NOW the
#: evaluation instant (one function each in ``cep.engines.reference`` and ``cep.engines.spark.filters``)
SOLUTION_BUILTINS = ("NOW", "RAND", "UUID", "STRUUID", "BNODE")


@dataclass(frozen=True)
class Builtin:
    """A SPARQL 1.1 built-in call (§17.4) other than those with nodes of their own: ``name``
    upper-cased, one of ``BUILTINS``, with its arguments: string tests and functions (STRSTARTS,
    STRENDS, CONTAINS, STRLEN, UCASE, LCASE), term tests (isIRI, isLiteral, isBlank, isNumeric,
    sameTerm), numeric functions (ABS, CEIL, FLOOR, ROUND), the functional forms IF and
    COALESCE, CONCAT, SUBSTR, STRBEFORE, STRAFTER, REPLACE (pattern and flags constant strings) and
    the xsd:dateTime accessors YEAR, MONTH, DAY, HOURS, MINUTES, SECONDS, TIMEZONE and TZ,
    LANGMATCHES, STRDT, STRLANG, IRI / URI (absolute IRIs), ENCODE_FOR_URI and the hash functions
    MD5, SHA1, SHA256, SHA384, SHA512, and those of ``SOLUTION_BUILTINS``: NOW() (the
    xsd:dateTime of the evaluation instant: one value per evaluation, as §17.4.5.1 asks of a query
    execution, and the same on a replay), RAND(), UUID(), STRUUID() and BNODE() / BNODE(str)
    (pseudo-random: drawn from a hash of the solution — its variables' term ids and its interval —
    so that each solution gets its own value, and a replayed or re-evaluated answer the same one,
    as exactly-once output needs; ``cep.terms.values.solution_hash``). (IN / NOT IN are the disjunction / conjunction of comparisons §17.4.1.9 defines
    them as, built when lowering.)"""

    name: str
    args: tuple

    def __post_init__(self) -> None:
        if self.name not in BUILTINS:
            raise ValueError(f"Builtin.name must be one of {tuple(BUILTINS)}, got {self.name!r}")
        if not isinstance(self.args, tuple):
            raise TypeError(f"Builtin.args must be a tuple, got {self.args!r}")
        least, most = BUILTINS[self.name]
        if len(self.args) < least or (most is not None and len(self.args) > most):
            raise ValueError(f"{self.name} takes {least}{'' if most == least else '+'} argument(s), "
                             f"got {len(self.args)}")
        for arg in self.args:
            check_expr(arg, f"{self.name} argument")

    def __str__(self) -> str:
        return f"{self.name}(" + ", ".join(str(a) for a in self.args) + ")"


#: EP-SPARQL's interval functions (EP-SPARQL §4.1; σ_{tα tω} of §4.2): name → what it yields
INTERVAL_FUNCTIONS = {"DURATION": "xsd:dayTimeDuration tω − tα", "STARTTIME": "xsd:dateTime tα",
                      "ENDTIME": "xsd:dateTime tω"}


@dataclass(frozen=True)
class IntervalFn:
    """``getDURATION()``, ``getSTARTTIME()``, ``getENDTIME()`` (EP-SPARQL §4.1): the length, start
    and end of the interval of the solution the FILTER is evaluated on (§4.2, σ_{tα tω}). A
    duration compares with xsd:duration / xsd:dayTimeDuration values, a time with xsd:dateTime
    values (the stream's ticks read as time since 1970-01-01T00:00:00Z). BIND and SELECT
    (expr AS ?v) bind them as terms: an xsd:dayTimeDuration, an xsd:dateTime (``cep.terms.numbers.temporal_term``)."""

    kind: str

    def __post_init__(self) -> None:
        if self.kind not in INTERVAL_FUNCTIONS:
            raise ValueError(f"IntervalFn.kind must be one of {tuple(INTERVAL_FUNCTIONS)}, got {self.kind!r}")

    def __str__(self) -> str:
        return f"get{self.kind}()"


@dataclass(frozen=True)
class Timestamp:
    """``timestamp(?v [, <s>])`` (C-SPARQL §2.7, §3.3): ts(v, P) = the greatest timestamp of the
    stream triples (of stream ``stream`` when given) that the triple patterns of the FILTER's basic
    graph pattern P mentioning ``var`` matched in the solution; an error (unbound) when none came
    from a stream. A time, compared as ``getSTARTTIME()`` is (an xsd:dateTime: the stream's ticks
    since 1970-01-01T00:00:00Z)."""

    var: Var
    stream: Term | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.var, Var):
            raise TypeError(f"Timestamp.var must be a Var, got {self.var!r}")
        if self.stream is not None:
            check_term(self.stream, "Timestamp.stream")

    def __str__(self) -> str:
        return f"timestamp({self.var}" + (f", {self.stream})" if self.stream is not None else ")")


@dataclass(frozen=True)
class PatternTimestamp:
    """``timestamp(s p o)`` (RSEP-QL eq. 9, C-SPARQL's "naive" sequencing): the time of the most
    recent stream triple in the windows that matches the pattern under the solution's bindings (a
    variable the solution leaves unbound matches anything); an error when there is none."""

    s: "Var | Term"
    p: "Var | Term"
    o: "Var | Term"

    def __post_init__(self) -> None:
        for name in ("s", "p", "o"):
            value = getattr(self, name)
            if not isinstance(value, Var):
                check_term(value, f"PatternTimestamp.{name}")

    def __str__(self) -> str:
        return f"timestamp({self.s} {self.p} {self.o})"


@dataclass(frozen=True)
class Exists:
    """``EXISTS { P }`` (SPARQL 1.1 §17.4.1.4, §18.6 exists): true when ``substitute(P, μ)`` has a
    solution in the scope the FILTER stands in, μ the mapping the FILTER is evaluated on (each
    variable μ binds replaced by its value, in patterns and in the FILTERs inside P). ``NOT EXISTS``
    is ``Not(Exists(P))``. ``pattern`` is a ``cep.algebra.patterns`` pattern node, checked where
    the expression enters a pattern (``cep.algebra.patterns.check_condition``): the patterns build
    on this module, not the other way round."""

    pattern: object

    def __str__(self) -> str:
        return f"EXISTS {{{self.pattern}}}"


Expr = _t.Union[Var, Const, Compare, Arith, And, Or, Not, Neg, Bound, Regex, Str, Lang, Datatype,
                IntervalFn, Builtin, Timestamp, PatternTimestamp, Exists]
EXPR_TYPES = (Var, Const, Compare, Arith, And, Or, Not, Neg, Bound, Regex, Str, Lang, Datatype,
              IntervalFn, Builtin, Timestamp, PatternTimestamp, Exists)
"""Every expression node type."""


def check_expr(value: object, what: str) -> None:
    """TypeError unless ``value`` is an expression node."""
    if not isinstance(value, EXPR_TYPES):
        raise TypeError(f"{what} must be an Expr, got {value!r}")


def expr_variables(expr: Expr) -> frozenset[Var]:
    """The variables mentioned in ``expr`` (an EXISTS pattern's own variables are not counted: it
    reads the mapping's, it binds none)."""
    match expr:
        case Exists():
            return frozenset()
        case Var():
            return frozenset((expr,))
        case Bound():
            return frozenset((expr.var,))
        case Const() | IntervalFn():
            return frozenset()
        case Timestamp():
            return frozenset((expr.var,))
        case PatternTimestamp():
            return frozenset(x for x in (expr.s, expr.p, expr.o) if isinstance(x, Var))
    out: frozenset[Var] = frozenset()
    for f in fields(expr):
        value = getattr(expr, f.name)
        for item in (value if isinstance(value, tuple) else (value,)):
            if isinstance(item, EXPR_TYPES):
                out |= expr_variables(item)
    return out


def subexpressions(expr: Expr):
    """``expr`` and every expression under it, pre-order."""
    yield expr
    for f in fields(expr):
        value = getattr(expr, f.name)
        for item in (value if isinstance(value, tuple) else (value,)):
            if isinstance(item, EXPR_TYPES):
                yield from subexpressions(item)


def uses_interval(expr: Expr) -> bool:
    """Whether ``expr`` calls an interval function (getDURATION() ...)."""
    return any(isinstance(e, IntervalFn) for e in subexpressions(expr))


def uses_timestamp(expr: Expr) -> bool:
    """Whether ``expr`` calls C-SPARQL's timestamp() (either form)."""
    return any(isinstance(e, (Timestamp, PatternTimestamp)) for e in subexpressions(expr))
