"""Syntax tree of a CQELS-CEP query: what was written, with where it was written.

One frozen dataclass per construct of ``cep/syntax/grammar.lark``; nothing here evaluates anything.
``cep.lowering`` turns a tree into the algebra (``cep.algebra.patterns``) and checks what the grammar cannot.
Spans (``paths.syntax.Span``) take no part in equality: two trees are equal when they say the same
thing, wherever it was written. Terms and paths are the nodes of ``paths.syntax`` (IriRef,
PrefixedName, StringLiteral, ..., and every path node), so a predicate may be any path.

``str(node)`` gives concrete syntax that parses back to an equal tree, with two normalisations the
tree already made: property lists (``;`` and ``,``) are written out as one triple each, and
expressions are fully parenthesised. The prologue is printed too, so prefixed names resolve.

Constructs (grammar production in brackets; CQELS = CQELS-CEP paper §3.1, CSPARQL = C-SPARQL §3)

==================================  ==========================================================
``Query``                           prologue, SELECT/CONSTRUCT, FROM clauses, WHERE   [2]
``PrefixDecl``, ``BaseDecl``        ``PREFIX p: <iri>``, ``BASE <iri>``               [4]-[6]
``Select(distinct, variables)``     ``SELECT [DISTINCT] ?a (COUNT(?x) AS ?n)`` or ``*``      [9]
``SelectExpression(expr, var)``     ``( expr AS ?v )`` in SELECT                      [9]
``AggregateCall(fn, distinct, arg)`` ``COUNT(DISTINCT ?x)``, ``SUM(?x)``, ``COUNT(*)``  [127]
``OrderCondition(descending, expr)`` ``ORDER BY ?a DESC(?b)``; ``LIMIT n`` ``OFFSET n``  [23]-[25]
``ConstructTemplate(triples)``      ``CONSTRUCT { ... }``                             [10], [73]
``FromGraph(iri, named)``           ``FROM <g>``: the static background D; ``FROM NAMED <g>``  [13]-[15]
``FromWindow(name, stream, win)``   ``FROM NAMED WINDOW :W ON <s> [window]``          CQELS Ex. 6
``FromStream(stream, win, named)``  ``FROM [NAMED] STREAM <s> [window]``              CSPARQL §2.3
``Registration(kind, name, every)`` ``REGISTER QUERY|STREAM q [COMPUTED EVERY d] AS`` CSPARQL §2.4
``AggregateClause(var, fn, ...)``   ``AGGREGATE { (?v, COUNT, {?g}) [FILTER] }``      CSPARQL §2.2
``RangeWindow``, ``TriplesWindow``, ``[RANGE d]``, ``[RANGE d STEP d]``, ``[RANGE d TUMBLING]``,
``NowWindow``, ``AllWindow``        ``[TRIPLES n]``, ``[NOW]``, ``[ALL]``             CSPARQL, CQL
``DurationLiteral(amount, unit)``   ``10m``, ``500ms``, ``3`` (stream time units)     CSPARQL
``Group(elements)``                 ``{ ... }``                                       [53], [54]
``TriplesBlock(triples)``           triples, ``.``-separated                          [55], [52]
``Triple(s, p, o)``                 one triple; ``p`` a Variable or any path          [75]-[86]
``OptionalPattern(group)``          ``OPTIONAL { ... }``                              [57]
``MinusPattern(group)``             ``MINUS { ... }``                                 [66]
``Bind(expr, variable)``            ``BIND ( expr AS ?v )``                           [60]
``InlineData(variables, rows)``     ``VALUES (?a ?b) { (1 UNDEF) }`` (``Undef``)      [61]-[65], [28]
``SubQuery(form, where, ...)``      ``{ SELECT ... WHERE { ... } ORDER BY ... }``     [8]
``ExistsCall(negated, group)``      ``EXISTS { ... }`` / ``NOT EXISTS { ... }``       [125], [126]
``GraphGraphPattern(name, group)``  ``GRAPH <g> { ... }`` / ``GRAPH ?g { ... }``       [58]
``UnionPattern(groups)``            ``{ ... } UNION { ... }`` (one group: a nested group)  [67]
``GroupChain(groups, operators)``   ``{ ... } SEQ { ... } EQUALS { ... }`` ...        EP-SPARQL §4.1
``FilterPattern(expr)``             ``FILTER (...)``                                  [68], [69]
``WindowBlock(name, ..., body)``    ``WINDOW :W [ON <s> [window]] { TSP }``           CQELS WinSpec
``TspSequence(elements)``           ``SEQ({...}, !{...}, ...)`` inside a window       CQELS TSP
``TspElement(negated, triples)``    one ``{...}`` / ``!{...}`` of it
``EventSequence(elements)``         ``SEQ(:W1, !:W2, ...)`` across windows            CQELS EC
``EventElement(negated, name)``     one ``:W`` / ``!:W`` of it
``MatchPattern(policy, event)``     ``MATCH [policy] ( E )``                           RSEP-QL §3.3
``EventBasic(name, triples)``,      ``EVENT :w { ... }``, ``FIRST E``, ``LAST E``,
``EventFirst``, ``EventLast``,      ``E1 SEQ E2`` (event patterns)
``EventSeqExpr(left, right)``
``Variable(name)``                  ``?v`` / ``$v`` (printed ``?v``)                  [108]
``Binary(op, left, right)``         ``||  &&  = != < > <= >=  + - * /``               [111]-[117]
``Unary(op, operand)``              ``! -`` (a unary ``+`` is dropped)                [118]
``Call(name, args)``                ``STR LANG DATATYPE BOUND REGEX``                 [121], [122]
                                    ``getDURATION() getSTARTTIME() getENDTIME()``     EP-SPARQL §4.1
                                    ``timestamp(?v [, <s>])``, ``timestamp(s p o)``   CSPARQL §2.7
==================================  ==========================================================
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from paths.syntax import (NO_SPAN, AxisStep, BlankNode, BooleanLiteral, IriRef, Node,
                          NumericLiteral, PathNode, PrefixedName, Span, StringLiteral, TypeKeyword,
                          is_native)

__all__ = [
    "Span", "NO_SPAN", "Node", "IriRef", "PrefixedName", "StringLiteral", "NumericLiteral",
    "BooleanLiteral", "BlankNode", "TypeKeyword", "PathNode", "AxisStep", "is_native",
    "Variable", "Triple", "TriplesBlock", "Group", "OptionalPattern", "MinusPattern", "InlineData", "Undef",
    "SubQuery", "ExistsCall", "Bind", "GraphGraphPattern", "UnionPattern", "GroupChain",
    "GROUP_OPERATORS", "EP_OPERATORS", "MatchPattern", "EventBasic", "EventFirst", "EventLast",
    "EventSeqExpr", "EventExpr",
    "FilterPattern", "WindowBlock", "TspSequence", "TspElement", "EventSequence", "EventElement",
    "DurationLiteral", "RangeWindow", "TriplesWindow", "NowWindow", "AllWindow", "WindowSyntax",
    "FromGraph", "FromWindow", "FromStream", "Registration", "AggregateClause", "AGGREGATE_FUNCTIONS",
    "PrefixDecl", "BaseDecl", "Select", "ConstructTemplate", "Query",
    "Binary", "Unary", "Call", "InList", "SelectExpression", "AggregateCall", "OrderCondition", "ExprNode", "GroupElement", "CALLS",
]


# --- variables and expressions -----------------------------------------------------------------

@dataclass(frozen=True)
class Variable(Node):
    """``?name`` or ``$name`` [108]; the sigil is not kept (SPARQL: they are the same variable)."""

    name: str

    def __str__(self) -> str:
        return f"?{self.name}"


@dataclass(frozen=True)
class Binary(Node):
    """``left op right``: op one of ``||``, ``&&``, a comparison, ``+ - * /`` [111]-[117]."""

    op: str
    left: "ExprNode"
    right: "ExprNode"

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Unary(Node):
    """``!e`` or ``-e`` [118]."""

    op: str
    operand: "ExprNode"

    def __str__(self) -> str:
        # '-' 1 would read back as the literal -1, and [118] takes a PrimaryExpression after the
        # operator: wrap numbers after '-' and nested unary expressions in parentheses
        text = str(self.operand)
        if isinstance(self.operand, Unary) or (self.op == "-" and
                                               isinstance(self.operand, NumericLiteral)):
            text = f"({text})"
        return f"{self.op}{text}"


CALLS = ("STR", "LANG", "DATATYPE", "BOUND", "REGEX", "GETDURATION", "GETSTARTTIME", "GETENDTIME",
         "STRSTARTS", "STRENDS", "CONTAINS", "STRLEN", "UCASE", "LCASE", "ISIRI", "ISURI", "ISLITERAL",
         "ISBLANK", "ISNUMERIC", "ABS", "CEIL", "FLOOR", "ROUND", "SAMETERM", "IF", "COALESCE", "TIMESTAMP",
         "CONCAT", "SUBSTR", "STRBEFORE", "STRAFTER", "REPLACE", "YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS")


@dataclass(frozen=True)
class InList(Node):
    """``expr IN (e1, ...)`` / ``expr NOT IN (...)`` [114]."""

    negated: bool
    expr: "ExprNode"
    items: tuple["ExprNode", ...]

    def __str__(self) -> str:
        return f"({self.expr} {'NOT IN' if self.negated else 'IN'} (" + ", ".join(map(str, self.items)) + "))"


@dataclass(frozen=True)
class Call(Node):
    """A built-in call [121]: ``name`` upper-cased, one of ``CALLS``."""

    name: str
    args: tuple["ExprNode", ...]

    def __str__(self) -> str:
        name = "get" + self.name[3:] if self.name.startswith("GET") else self.name
        if self.name == "TIMESTAMP":   # timestamp(?v [, <s>]) or the pattern timestamp(s p o)
            sep = " " if len(self.args) == 3 else ", "
            return "timestamp(" + sep.join(str(arg) for arg in self.args) + ")"
        return f"{name}(" + ", ".join(str(arg) for arg in self.args) + ")"


@dataclass(frozen=True)
class ExistsCall(Node):
    """``EXISTS { ... }`` / ``NOT EXISTS { ... }`` [125], [126]."""

    negated: bool
    group: "Group"

    def __str__(self) -> str:
        return ("NOT EXISTS " if self.negated else "EXISTS ") + str(self.group)


@dataclass(frozen=True)
class AggregateCall(Node):
    """``COUNT|SUM|AVG|MIN|MAX ( [DISTINCT] expr | * )`` [127] (``argument`` None: ``*``)."""

    function: str
    distinct: bool
    argument: "ExprNode | None"

    def __str__(self) -> str:
        arg = "*" if self.argument is None else str(self.argument)
        return f"{self.function}({'DISTINCT ' if self.distinct else ''}{arg})"


ExprNode = Union[Binary, Unary, Call, InList, ExistsCall, AggregateCall, Variable, IriRef, PrefixedName, StringLiteral,
                 NumericLiteral, BooleanLiteral]


# --- triples and group patterns ----------------------------------------------------------------

@dataclass(frozen=True)
class Triple(Node):
    """One triple pattern: subject and object a Variable or a term; ``p`` a Variable or a path
    (an IRI, ``a``, or any path of ``paths/grammar.lark``)."""

    s: "Variable | IriRef | PrefixedName | StringLiteral | NumericLiteral | BooleanLiteral | BlankNode"
    p: "Variable | PathNode"
    o: "Variable | IriRef | PrefixedName | StringLiteral | NumericLiteral | BooleanLiteral | BlankNode"

    def __str__(self) -> str:
        return f"{self.s} {self.p} {self.o}"


@dataclass(frozen=True)
class TriplesBlock(Node):
    """Triples written one after the other [55] / [52] (property lists written out)."""

    triples: tuple[Triple, ...]

    def __str__(self) -> str:
        return " . ".join(str(triple) for triple in self.triples) + " ."


@dataclass(frozen=True)
class Group(Node):
    """``{ ... }`` [53]: its elements in written order."""

    elements: tuple["GroupElement", ...]

    def __str__(self) -> str:
        if not self.elements:
            return "{ }"
        return "{ " + " ".join(str(element) for element in self.elements) + " }"


@dataclass(frozen=True)
class OptionalPattern(Node):
    """``OPTIONAL { ... }`` [57]."""

    group: Group

    def __str__(self) -> str:
        return f"OPTIONAL {self.group}"


@dataclass(frozen=True)
class MinusPattern(Node):
    """``MINUS { ... }`` [66]."""

    group: Group

    def __str__(self) -> str:
        return f"MINUS {self.group}"


@dataclass(frozen=True)
class Bind(Node):
    """``BIND ( expr AS ?v )`` [60]."""

    expr: "ExprNode"
    variable: "Variable"

    def __str__(self) -> str:
        return f"BIND ({self.expr} AS {self.variable})"


@dataclass(frozen=True)
class Undef(Node):
    """``UNDEF`` in a VALUES row [65]: the variable is unbound in that row."""

    def __str__(self) -> str:
        return "UNDEF"


@dataclass(frozen=True)
class InlineData(Node):
    """``VALUES ?v { ... }`` / ``VALUES (?a ?b) { (1 UNDEF) ... }`` [61]-[65], in a group or after
    the query [28]; every row has one value (a term or ``Undef``) per variable."""

    variables: tuple[Variable, ...]
    rows: tuple[tuple, ...]

    def __str__(self) -> str:
        head = "(" + " ".join(map(str, self.variables)) + ")"
        rows = " ".join("(" + " ".join(map(str, row)) + ")" for row in self.rows)
        return f"VALUES {head} {{ {rows} }}"


@dataclass(frozen=True)
class SubQuery(Node):
    """``{ SELECT ... WHERE { ... } modifiers [VALUES ...] }`` [8]: a sub-query in a group."""

    form: "Select"
    where: Group
    group_by: tuple[Variable, ...] = ()
    having: tuple["ExprNode", ...] = ()
    order_by: tuple["OrderCondition", ...] = ()
    limit: int | None = None
    offset: int = 0
    values: InlineData | None = None

    def __str__(self) -> str:
        # the group it stands in writes the braces around it: { SELECT ... }
        return " ".join(x for x in (str(self.form), f"WHERE {self.where}", _modifiers_text(self)) if x)


@dataclass(frozen=True)
class GraphGraphPattern(Node):
    """``GRAPH <g> { ... }`` or ``GRAPH ?g { ... }`` [58]."""

    name: "IriRef | PrefixedName | Variable"
    group: Group

    def __str__(self) -> str:
        return f"GRAPH {self.name} {self.group}"


@dataclass(frozen=True)
class UnionPattern(Node):
    """``{...} UNION {...} ...`` [67]; a single group is a nested group ``{ ... }``."""

    groups: tuple[Group, ...]

    def __str__(self) -> str:
        return " UNION ".join(str(group) for group in self.groups)


#: the operators between groups: UNION, and EP-SPARQL's (§4.1)
EP_OPERATORS = ("SEQ", "EQUALS", "OPTIONALSEQ", "EQUALSOPTIONAL")
GROUP_OPERATORS = ("UNION",) + EP_OPERATORS


@dataclass(frozen=True)
class GroupChain(Node):
    """``{...} op {...} op ...`` with at least one EP-SPARQL operator (``EP_OPERATORS``) among the
    ``operators`` (upper-cased; ``len(groups) == len(operators) + 1``). A chain of UNIONs only is a
    :class:`UnionPattern`."""

    groups: tuple[Group, ...]
    operators: tuple[str, ...]

    def __str__(self) -> str:
        parts = [str(self.groups[0])]
        for op, group in zip(self.operators, self.groups[1:]):
            parts.append(f"{op} {group}")
        return " ".join(parts)


@dataclass(frozen=True)
class FilterPattern(Node):
    """``FILTER (expr)`` [68]."""

    expr: ExprNode

    def __str__(self) -> str:
        text = str(self.expr)
        return f"FILTER {text}" if text.startswith("(") else f"FILTER ({text})"


@dataclass(frozen=True)
class TspElement(Node):
    """One element ``{ triples }`` or ``!{ triples }`` of a triple sequence pattern (CQELS §3.1)."""

    negated: bool
    triples: TriplesBlock

    def __str__(self) -> str:
        return ("!" if self.negated else "") + "{ " + str(self.triples) + " }"


@dataclass(frozen=True)
class TspSequence(Node):
    """``SEQ({P1}, ..., !{Pi}, ..., {Pn})`` inside a window (CQELS §3.1 TSP, §3.2)."""

    elements: tuple[TspElement, ...]

    def __str__(self) -> str:
        return "SEQ(" + ", ".join(str(element) for element in self.elements) + ")"


@dataclass(frozen=True)
class EventElement(Node):
    """One element ``:W`` or ``!:W`` of an event clause (CQELS §3.1 EC)."""

    negated: bool
    name: "IriRef | PrefixedName"

    def __str__(self) -> str:
        return ("!" if self.negated else "") + str(self.name)


@dataclass(frozen=True)
class EventSequence(Node):
    """``SEQ(:W1, ..., !:Wi, ..., :Wn)`` across windows (CQELS §3.1 EC, §3.2)."""

    elements: tuple[EventElement, ...]

    def __str__(self) -> str:
        return "SEQ(" + ", ".join(str(element) for element in self.elements) + ")"


# --- windows -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class DurationLiteral(Node):
    """``10m``, ``1.5s``, ``3`` (C-SPARQL Number TimeUnit; no unit: the stream's time units)."""

    amount: int | float
    unit: str | None = None

    def __str__(self) -> str:
        return f"{self.amount}{self.unit or ''}"


@dataclass(frozen=True)
class RangeWindow(Node):
    """``RANGE d``, ``RANGE d STEP s`` (``SLIDE`` is read as ``STEP``), ``RANGE d TUMBLING``."""

    range: DurationLiteral
    step: DurationLiteral | None = None
    tumbling: bool = False

    def __str__(self) -> str:
        if self.tumbling:
            return f"[RANGE {self.range} TUMBLING]"
        if self.step is not None:
            return f"[RANGE {self.range} STEP {self.step}]"
        return f"[RANGE {self.range}]"


@dataclass(frozen=True)
class TriplesWindow(Node):
    """``TRIPLES n`` (also ``RANGE TRIPLES n``, C-SPARQL's form)."""

    n: int

    def __str__(self) -> str:
        return f"[TRIPLES {self.n}]"


@dataclass(frozen=True)
class NowWindow(Node):
    """``NOW``."""

    def __str__(self) -> str:
        return "[NOW]"


@dataclass(frozen=True)
class AllWindow(Node):
    """``ALL``: the landmark window."""

    def __str__(self) -> str:
        return "[ALL]"


WindowSyntax = Union[RangeWindow, TriplesWindow, NowWindow, AllWindow]


@dataclass(frozen=True)
class WindowBlock(Node):
    """``WINDOW :W { TSP }`` or, declaring the window in place (the paper's WinSpec),
    ``WINDOW :W ON <stream> [window] { TSP }``. ``body`` is the TSP (a TriplesBlock or a
    TspSequence) with any FILTERs around it, in written order."""

    name: "IriRef | PrefixedName"
    stream: "IriRef | PrefixedName | None"
    window: WindowSyntax | None
    body: tuple["TriplesBlock | TspSequence | FilterPattern", ...]

    def __str__(self) -> str:
        head = f"WINDOW {self.name}"
        if self.stream is not None:
            head += f" ON {self.stream} {self.window}"
        inner = " ".join(str(item) for item in self.body)
        return f"{head} {{ {inner} }}" if inner else f"{head} {{ }}"


@dataclass(frozen=True)
class EventBasic(Node):
    """``EVENT :w { triples }`` (RSEP-QL basic event pattern)."""

    name: "IriRef | PrefixedName"
    triples: TriplesBlock

    def __str__(self) -> str:
        return f"EVENT {self.name} {{ {self.triples} }}"


@dataclass(frozen=True)
class EventFirst(Node):
    """``FIRST E``."""

    inner: "EventExpr"

    def __str__(self) -> str:
        return f"FIRST ({self.inner})"


@dataclass(frozen=True)
class EventLast(Node):
    """``LAST E``."""

    inner: "EventExpr"

    def __str__(self) -> str:
        return f"LAST ({self.inner})"


@dataclass(frozen=True)
class EventSeqExpr(Node):
    """``E1 SEQ E2``."""

    left: "EventExpr"
    right: "EventExpr"

    def __str__(self) -> str:
        return f"({self.left}) SEQ ({self.right})"


EventExpr = Union[EventBasic, EventFirst, EventLast, EventSeqExpr]


@dataclass(frozen=True)
class MatchPattern(Node):
    """``MATCH [policy] ( E )`` (RSEP-QL event graph pattern); ``policy`` lower-cased or None."""

    policy: str | None
    event: EventExpr

    def __str__(self) -> str:
        policy = "" if self.policy is None else f" {self.policy.upper()}"
        return f"MATCH{policy} ({self.event})"


GroupElement = Union[TriplesBlock, OptionalPattern, MinusPattern, InlineData, SubQuery, Bind, GraphGraphPattern, UnionPattern,
                     GroupChain, FilterPattern, WindowBlock, MatchPattern, EventSequence]


# --- query -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PrefixDecl(Node):
    """``PREFIX name: <iri>`` [6]."""

    name: str
    iri: IriRef

    def __str__(self) -> str:
        return f"PREFIX {self.name}: {self.iri}"


@dataclass(frozen=True)
class BaseDecl(Node):
    """``BASE <iri>`` [5]."""

    iri: IriRef

    def __str__(self) -> str:
        return f"BASE {self.iri}"


@dataclass(frozen=True)
class FromGraph(Node):
    """``FROM <g>`` [14]: the static background graph D (several: their merge); ``FROM NAMED <g>``
    [15] (``named``): a named graph GRAPH reads."""

    iri: "IriRef | PrefixedName"
    named: bool = False

    def __str__(self) -> str:
        return f"FROM {'NAMED ' if self.named else ''}{self.iri}"


@dataclass(frozen=True)
class FromWindow(Node):
    """``FROM NAMED WINDOW :W ON <stream> [window]`` (CQELS Example 6)."""

    name: "IriRef | PrefixedName"
    stream: "IriRef | PrefixedName"
    window: WindowSyntax

    def __str__(self) -> str:
        return f"FROM NAMED WINDOW {self.name} ON {self.stream} {self.window}"


@dataclass(frozen=True)
class OrderCondition(Node):
    """One ``ORDER BY`` key [24]: ``ASC(e)`` / ``DESC(e)`` / ``?v`` / ``(e)``."""

    descending: bool
    expr: ExprNode

    def __str__(self) -> str:
        return f"{'DESC' if self.descending else 'ASC'}({self.expr})"


@dataclass(frozen=True)
class SelectExpression(Node):
    """``( expr AS ?v )`` in SELECT [9], or EP-SPARQL's ``expr AS ?v`` without the parentheses
    (grammar.lark, select_item), printed with them."""

    expr: ExprNode
    variable: Variable

    def __str__(self) -> str:
        return f"({self.expr} AS {self.variable})"


@dataclass(frozen=True)
class Select(Node):
    """``SELECT [DISTINCT] items`` or ``SELECT [DISTINCT] *`` (``variables`` None) [9]; an item
    is a variable or a ``SelectExpression``."""

    distinct: bool
    variables: "tuple[Variable | SelectExpression, ...] | None"

    def __str__(self) -> str:
        head = "SELECT " + ("DISTINCT " if self.distinct else "")
        if self.variables is None:
            return head + "*"
        return head + " ".join(str(v) for v in self.variables)


@dataclass(frozen=True)
class ConstructTemplate(Node):
    """``CONSTRUCT { triples }`` [10], [73]."""

    triples: tuple[Triple, ...]

    def __str__(self) -> str:
        if not self.triples:
            return "CONSTRUCT { }"
        return "CONSTRUCT { " + " . ".join(str(t) for t in self.triples) + " . }"


@dataclass(frozen=True)
class FromStream(Node):
    """``FROM [NAMED] STREAM <s> [window]`` (C-SPARQL §2.3): the window's content joins the graph
    the WHERE clause is matched against."""

    stream: "IriRef | PrefixedName"
    window: WindowSyntax
    named: bool = False

    def __str__(self) -> str:
        return f"FROM {'NAMED ' if self.named else ''}STREAM {self.stream} {self.window}"


@dataclass(frozen=True)
class Registration(Node):
    """``REGISTER QUERY|STREAM name [COMPUTED EVERY d] AS`` (C-SPARQL §2.4-2.5); ``kind`` is
    "QUERY" or "STREAM"."""

    kind: str
    name: str
    every: DurationLiteral | None = None

    def __str__(self) -> str:
        every = f" COMPUTED EVERY {self.every}" if self.every is not None else ""
        return f"REGISTER {self.kind} {self.name}{every} AS"


AGGREGATE_FUNCTIONS = ("COUNT", "SUM", "AVG", "MIN", "MAX")


@dataclass(frozen=True)
class AggregateClause(Node):
    """``AGGREGATE { (?v, F[( [DISTINCT] ?p | * )], group) [FILTER (...)] }`` (C-SPARQL §2.2):
    ``function`` one of ``AGGREGATE_FUNCTIONS``; ``argument`` None for a bare ``COUNT`` or
    ``COUNT(*)``."""

    variable: Variable
    function: str
    distinct: bool
    argument: Variable | None
    group: tuple[Variable, ...]
    filter: "FilterPattern | None" = None

    def __str__(self) -> str:
        if self.argument is None and not self.distinct:
            fn = self.function
        else:
            fn = f"{self.function}({'DISTINCT ' if self.distinct else ''}{self.argument or '*'})"
        group = "{" + ", ".join(str(v) for v in self.group) + "}"
        tail = f" {self.filter}" if self.filter is not None else ""
        return f"AGGREGATE {{ ({self.variable}, {fn}, {group}){tail} }}"


@dataclass(frozen=True)
class Query(Node):
    """A whole query [2]. ``text`` is the source it was parsed from (for error messages; not
    compared). C-SPARQL's ``registration`` and ``aggregates`` are empty in the other languages."""

    prologue: tuple["PrefixDecl | BaseDecl", ...]
    form: "Select | ConstructTemplate"
    datasets: tuple["FromGraph | FromWindow | FromStream", ...]
    where: Group
    text: str = field(default="", compare=False, repr=False)
    registration: Registration | None = None
    aggregates: tuple[AggregateClause, ...] = ()
    group_by: tuple[Variable, ...] = ()
    having: tuple[ExprNode, ...] = ()
    order_by: tuple[OrderCondition, ...] = ()
    limit: int | None = None
    offset: int = 0
    values: InlineData | None = None

    def __str__(self) -> str:
        lines = [str(self.registration)] if self.registration is not None else []
        lines.extend(str(decl) for decl in self.prologue)
        lines.append(str(self.form))
        lines.extend(str(dataset) for dataset in self.datasets)
        lines.append(f"WHERE {self.where}")
        lines.extend(str(clause) for clause in self.aggregates)
        lines.append(_modifiers_text(self))
        return "\n".join(line for line in lines if line)


def _modifiers_text(q) -> str:
    """GROUP BY ... VALUES of a query or sub-query, one clause per line."""
    lines = []
    if q.group_by:
        lines.append("GROUP BY " + " ".join(map(str, q.group_by)))
    if q.having:
        lines.append("HAVING " + " ".join(f"({e})" for e in q.having))
    if q.order_by:
        lines.append("ORDER BY " + " ".join(map(str, q.order_by)))
    if q.limit is not None:
        lines.append(f"LIMIT {q.limit}")
    if q.offset:
        lines.append(f"OFFSET {q.offset}")
    if q.values is not None:
        lines.append(str(q.values))
    return "\n".join(lines)
