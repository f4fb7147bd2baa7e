"""Syntax tree of a path expression: what was written, with where it was written.

One frozen dataclass per construct of ``paths/grammar.lark``. Nothing here evaluates anything;
``paths.lowering.lower`` turns a tree into the algebra. Every node carries a :class:`Span`,
which takes no part in equality or hashing: two trees are equal when they say the same thing,
wherever it was written.

``str(node)`` gives concrete syntax that parses back to an equal tree (prefixed names and numbers
as written, parentheses only where precedence needs them). The tree keeps no parentheses of its
own, so ``(:p)`` and ``:p`` parse to equal trees.

Constructs (grammar production in brackets)

=================================  ===========================================================
``Alternative(options)``           ``a | b | ...``                        [89]
``Sequence(steps)``                ``a / b / ...``                        [90]
``Inverse(path)``                  ``^elt``                               [92]
``Modified(path, modifier)``       ``primary?`` ``primary*`` ``primary+`` [91], [93]
``Filtered(path, test)``           ``elt[test]``                          CQELS-CEP §3.1
``TestStep(test)``                 ``[test]`` as a step of its own        CQELS-CEP, DESIGN.md
``NestedTest(path, term)``         the inside of ``[...]``: a path, optionally a term
``NegatedPropertySet(members)``    ``!:p``, ``!^:p``, ``!(:p|^:q|a)``     [95], [96]
``EmptyPath()``                    ``()`` — SPARQL's ZeroLengthPath        our extension
``AxisStep(axis, inverse, ...)``   ``next``, ``edge^-1::t``, ``node::[e]``, ``self::t``  nSPARQL
``IriRef``, ``PrefixedName``,      an IRI as a path is the link ``next::iri``   [136], [137]
``TypeKeyword``                    ``a`` (rdf:type)
``StringLiteral``,                 constants, only after ``axis::`` or at the end of a test
``NumericLiteral``,                [129]-[135], [138]
``BooleanLiteral``, ``BlankNode``
=================================  ===========================================================

Zero-length paths: ``*`` and ``?`` take the identity of the dialect their operand is written in —
SPARQL 1.1's (the subjects and objects of the graph) unless the operand contains an nSPARQL axis
step, in which case nSPARQL's (``self``: every term of the graph). ``self`` and ``()`` name the two
identities explicitly. See ``paths.algebra``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

__all__ = [
    "Span", "NO_SPAN", "Node",
    "IriRef", "PrefixedName", "TypeKeyword", "StringLiteral", "NumericLiteral", "BooleanLiteral",
    "BlankNode",
    "Alternative", "Sequence", "Inverse", "Modified", "Filtered", "TestStep", "NestedTest",
    "NegatedMember", "NegatedPropertySet", "EmptyPath", "AxisStep",
    "AXES", "MODIFIERS", "Term", "PathNode", "escape_string", "is_native",
]


@dataclass(frozen=True)
class Span:
    """Where a node was written: 1-based lines and columns, 0-based character offsets.

    ``end_column`` and ``end_pos`` point just past the last character (as in lark).
    """

    start_line: int
    start_column: int
    end_line: int
    end_column: int
    start_pos: int
    end_pos: int

    def __str__(self) -> str:
        return f"{self.start_line}:{self.start_column}-{self.end_line}:{self.end_column}"


NO_SPAN = Span(0, 0, 0, 0, 0, 0)
"""The span of a node built in code rather than parsed."""


@dataclass(frozen=True)
class Node:
    """Base of all syntax nodes; ``span`` is keyword-only and ignored by ``==`` and ``hash``."""

    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)

    # precedence of the printed form: 0 alternative, 1 sequence, 2 inverse, 3 element, 4 primary
    _level = 4


def _wrap(node: Node, min_level: int) -> str:
    text = str(node)
    return text if node._level >= min_level else f"({text})"


# --- terms -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class IriRef(Node):
    """``<text>``; ``value`` is the absolute IRI (``text`` resolved against the base, ``\\u``
    escapes decoded)."""

    text: str
    value: str

    def __str__(self) -> str:
        return f"<{self.text}>"


@dataclass(frozen=True)
class PrefixedName(Node):
    """``prefix:local`` as written (``local`` keeps its ``\\`` escapes); ``value`` is the IRI."""

    prefix: str
    local: str
    value: str

    def __str__(self) -> str:
        return f"{self.prefix}:{self.local}"


@dataclass(frozen=True)
class TypeKeyword(Node):
    """The keyword ``a``: rdf:type."""

    def __str__(self) -> str:
        return "a"


_ECHAR_OUT = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
              "\f": "\\f"}


def escape_string(lexical: str) -> str:
    """``lexical`` as a double-quoted SPARQL string (STRING_LITERAL2 [157])."""
    return '"' + "".join(_ECHAR_OUT.get(ch, ch) for ch in lexical) + '"'


@dataclass(frozen=True)
class StringLiteral(Node):
    """A quoted literal [129]: ``lexical`` is the value (escapes decoded), plus a language tag as
    written (without ``@``) or a datatype, not both."""

    lexical: str
    language: str | None = None
    datatype: IriRef | PrefixedName | None = None

    def __str__(self) -> str:
        text = escape_string(self.lexical)
        if self.language is not None:
            return f"{text}@{self.language}"
        if self.datatype is not None:
            return f"{text}^^{self.datatype}"
        return text


@dataclass(frozen=True)
class NumericLiteral(Node):
    """A number as written [130]-[133]: ``42``, ``-1.5``, ``+2e10``."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class BooleanLiteral(Node):
    """``true`` or ``false`` [134]."""

    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True)
class BlankNode(Node):
    """``_:label`` [138]; a constant here (nSPARQL's a ∈ I ∪ B ∪ L)."""

    label: str

    def __str__(self) -> str:
        return f"_:{self.label}"


Term = Union[IriRef, PrefixedName, TypeKeyword, StringLiteral, NumericLiteral, BooleanLiteral,
             BlankNode]
"""A constant: after ``axis::`` or at the end of a nested test."""


# --- paths -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Alternative(Node):
    """``o1 | o2 | ...`` [89], at least two options."""

    options: tuple["PathNode", ...]
    _level = 0

    def __str__(self) -> str:
        return "|".join(_wrap(option, 1) for option in self.options)


@dataclass(frozen=True)
class Sequence(Node):
    """``s1 / s2 / ...`` [90], at least two steps."""

    steps: tuple["PathNode", ...]
    _level = 1

    def __str__(self) -> str:
        return "/".join(_wrap(step, 2) for step in self.steps)


@dataclass(frozen=True)
class Inverse(Node):
    """``^elt`` [92]."""

    path: "PathNode"
    _level = 2

    def __str__(self) -> str:
        return "^" + _wrap(self.path, 3)


MODIFIERS = ("?", "*", "+")


@dataclass(frozen=True)
class Modified(Node):
    """``primary?``, ``primary*``, ``primary+`` [91], [93]."""

    path: "PathNode"
    modifier: str
    _level = 3

    def __str__(self) -> str:
        return _wrap(self.path, 4) + self.modifier


@dataclass(frozen=True)
class NestedTest(Node):
    """The inside of ``[...]``: a path, optionally followed by a term it must reach.

    ``[p t]`` means ``[p/self::t]`` (DESIGN.md, "Nested regular expressions").
    """

    path: "PathNode"
    term: Term | None = None

    def __str__(self) -> str:
        return str(self.path) if self.term is None else f"{self.path} {self.term}"


@dataclass(frozen=True)
class Filtered(Node):
    """``elt[test]`` (CQELS-CEP §3.1): the pairs of ``elt`` whose end satisfies ``test``."""

    path: "PathNode"
    test: NestedTest
    _level = 3

    def __str__(self) -> str:
        return f"{_wrap(self.path, 3)}[{self.test}]"


@dataclass(frozen=True)
class TestStep(Node):
    """``[test]`` standing alone as a step: keeps the current node if it satisfies ``test``."""

    __test__ = False  # not a pytest test class

    test: NestedTest

    def __str__(self) -> str:
        return f"[{self.test}]"


@dataclass(frozen=True)
class NegatedMember(Node):
    """One member of a negated property set [96]: ``iri``, ``a``, ``^iri`` or ``^a``."""

    iri: IriRef | PrefixedName | TypeKeyword
    inverse: bool = False

    def __str__(self) -> str:
        return ("^" if self.inverse else "") + str(self.iri)


@dataclass(frozen=True)
class NegatedPropertySet(Node):
    """``!member`` or ``!(m1|m2|...)`` [95]; ``!(x)`` and ``!x`` give equal trees."""

    members: tuple[NegatedMember, ...]

    def __str__(self) -> str:
        if len(self.members) == 1:
            return "!" + str(self.members[0])
        return "!(" + "|".join(str(member) for member in self.members) + ")"


@dataclass(frozen=True)
class EmptyPath(Node):
    """``()``: the empty path of SPARQL 1.1 (its ZeroLengthPath, §18.5). Our extension, so that
    ``e?`` = ``e|()`` and ``e*`` = ``()|e+`` can be written out."""

    def __str__(self) -> str:
        return "()"


AXES = ("self", "next", "edge", "node")


@dataclass(frozen=True)
class AxisStep(Node):
    """An nSPARQL step: ``axis``, ``axis::term`` or ``axis::[path]`` (at most one of ``term``,
    ``test``); ``inverse`` writes ``axis^-1`` and is never set for ``self``."""

    axis: str
    inverse: bool = False
    term: Term | None = None
    test: "PathNode | None" = None

    def __post_init__(self) -> None:
        if self.axis not in AXES:
            raise ValueError(f"unknown axis {self.axis!r}; the axes are {', '.join(AXES)}")
        if self.inverse and self.axis == "self":
            raise ValueError("self has no inverse axis")
        if self.term is not None and self.test is not None:
            raise ValueError("an axis step has a term or a nested test, not both")

    def __str__(self) -> str:
        head = self.axis + ("^-1" if self.inverse else "")
        if self.term is not None:
            return f"{head}::{self.term}"
        if self.test is not None:
            return f"{head}::[{self.test}]"
        return head


PathNode = Union[Alternative, Sequence, Inverse, Modified, Filtered, TestStep, NegatedPropertySet,
                 EmptyPath, AxisStep, IriRef, PrefixedName, TypeKeyword]
"""Any node that is a path."""


def is_native(node: Node) -> bool:
    """Whether ``node`` contains an nSPARQL axis step anywhere (then ``*`` and ``?`` applied to it
    use nSPARQL's identity, ``self``, rather than SPARQL's)."""
    match node:
        case AxisStep():
            return True
        case Alternative():
            return any(is_native(option) for option in node.options)
        case Sequence():
            return any(is_native(step) for step in node.steps)
        case Inverse() | Modified() | NestedTest():
            return is_native(node.path)
        case Filtered():
            return is_native(node.path) or is_native(node.test)
        case TestStep():
            return is_native(node.test)
    return False
