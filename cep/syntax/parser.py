"""Text → syntax tree (``cep.syntax.tree``). With ``paths/parser.py``, the only module that imports lark.

``parse(text, prefixes, base)`` runs the LALR(1) parser built from ``cep/syntax/grammar.lark`` (which
imports the path rules of ``paths/grammar.lark``, so a predicate may be any path) and a lark
Transformer that yields the frozen dataclasses of ``cep.syntax.tree``. The path and term nodes are built
by the transformer of ``paths.parser``, which this one extends, so paths mean exactly the same in a
query as on their own.

Every error — lexical, syntactic, an unknown prefix, a relative IRI without a base, a malformed
``PREFIX`` or window — is a :class:`CepSyntaxError` naming the line, the column and what was
expected there. Errors of meaning (an undeclared window, two negated elements, ...) are found by
``cep.lowering`` and raised as :class:`CepSemanticError`, also with line and column.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from lark import Token, v_args

from cep.syntax import tree as S
# The path transformer is reused, not copied: a path in a query is built by the very code that
# builds a path on its own (paths.parser's extension point).
from paths.parser import (TERMINAL_WORDS, GrammarParser, LocatedError, PathSyntaxError,
                          PathTransformer, span, token_span)

__all__ = ["parse", "CepSyntaxError", "CepSemanticError"]


class CepSyntaxError(PathSyntaxError):
    """A query that cannot be read.

    ``line`` and ``column`` are 1-based; ``expected`` lists, in words, what would have been
    accepted there. ``str(error)`` shows the offending line with a caret under the column. A
    subclass of ``paths.PathSyntaxError`` (same attributes), so a caller may catch both at once;
    like it, a ``rdfcore.errors.SidecarError`` and a ``ValueError``.
    """


class CepSemanticError(CepSyntaxError):
    """A query that reads but means nothing (CQELS-CEP §3.1-§3.2): found before anything runs."""


_TERMINAL_WORDS = {
    **TERMINAL_WORDS,  # the path rules are imported from paths/grammar.lark
    "VAR": "a variable ?name",
    "DURATION": "a duration (10m, 500ms, 2h, or a number of time units)",
    "INTEGER": "a whole number",
    "DISTINCT": "'DISTINCT'",
    "STAR": "'*'",
    "BANG": "'!'",
    "COMPARE": "a comparison (=, !=, <, >, <=, >=)",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*' or '/'",
    "STR_FN": "'STR'",
    "LANG_FN": "'LANG'",
    "DATATYPE_FN": "'DATATYPE'",
    "BOUND_FN": "'BOUND'",
    "REGEX_FN": "'REGEX'",
    "BUILTIN_FN": "a built-in function (STRSTARTS, CONTAINS, STRLEN, IF, COALESCE, ...)",
    "UNDEF": "'UNDEF'",
    "EXISTS": "'EXISTS'",
    "POLICY": "a selection policy (UNRESTRICTED, NAIVE, CHRONOLOGICAL, RECENT)",
    "INTERVAL_FN": "getDURATION(), getSTARTTIME() or getENDTIME()",
    "GROUP_OP": "UNION, SEQ, EQUALS, OPTIONALSEQ or EQUALSOPTIONAL before a '{'",
    "TIMESTAMP_FN": "'timestamp'",
    "AGGREGATE_FN": "an aggregate function (COUNT, SUM, AVG, MIN, MAX)",
    "AGG_CALL": "an aggregate (COUNT, SUM, AVG, MIN, MAX)",
    "ORDER_DIRECTION": "ASC or DESC",
    "REGISTER_KIND": "'QUERY' or 'STREAM'",
    "QUERY_NAME": "a query name",
    "$END": "the end of the query",
}

_PARSER = GrammarParser("cep.syntax", "grammar.lark", _TERMINAL_WORDS,
                        error_cls=CepSyntaxError, subject="query")


def _join_spans(first: S.Span, last: S.Span) -> S.Span:
    return S.Span(first.start_line, first.start_column, last.end_line, last.end_column,
                  first.start_pos, last.end_pos)


_UNITS = ("ms", "s", "m", "h", "d")


@dataclass(frozen=True)
class _TriplesNode:
    """A blank node property list while it is parsed: its node and its triples."""

    node: S.BlankNode
    triples: tuple
    span: S.Span


@v_args(meta=True)
class _ToCep(PathTransformer.imported_as("grammar")):
    """lark parse tree → ``cep.syntax.tree``; path and term rules are those of ``paths.parser``
    (imported rules and aliases arrive under the ``grammar__`` namespace)."""

    # the terms of expressions are rules of their own (see grammar.lark), built as in a path
    expr_iri_ref = PathTransformer.iri_ref
    expr_prefixed_name = PathTransformer.prefixed_name
    expr_rdf_literal = PathTransformer.rdf_literal
    expr_numeric_literal = PathTransformer.numeric_literal
    expr_boolean_literal = PathTransformer.boolean_literal

    def __init__(self, prefixes: Mapping[str, str], base: str | None, text: str) -> None:
        super().__init__(dict(prefixes), base)
        self.text = text

    # -- query and prologue
    def start(self, meta, children):
        registration = None
        if len(children) == 4:   # C-SPARQL: prologue REGISTER ... AS prologue query
            first, registration, second, body = children
            prologue = first + second
        else:
            prologue, body = children
        form, datasets, where, aggregates, modifiers = body
        return S.Query(prologue, form, datasets, where, text=self.text, span=span(meta),
                       registration=registration, aggregates=aggregates, **modifiers)

    def registration(self, meta, children):
        kind, name, *every = children
        name = str(name)
        return S.Registration(str(kind).upper(), name,
                              self._duration(every[0]) if every else None, span=span(meta))

    def prologue(self, meta, children):
        return tuple(children)

    def base_decl(self, meta, children):
        iri = self.resolve_iri(children[0])
        self.base = iri.value
        return S.BaseDecl(iri, span=span(meta))

    def prefix_decl(self, meta, children):
        name_token, iri_token = children
        name, _, local = str(name_token).partition(":")
        if local:
            raise LocatedError(f"a PREFIX declaration names a prefix ending in ':', not "
                               f"{str(name_token)!r}", name_token.line, name_token.column,
                               ("a prefix name such as 'ex:' or ':'",))
        iri = self.resolve_iri(iri_token)
        self.prefixes[name] = iri.value
        return S.PrefixDecl(name, iri, span=span(meta))

    def select_query(self, meta, children):
        aggregates = tuple(c for c in children if isinstance(c, S.AggregateClause))
        modifiers = {}
        for c in children:
            if isinstance(c, dict):
                modifiers.update(c)
        form, *datasets, where = [c for c in children if not isinstance(c, (S.AggregateClause, dict))]
        return form, tuple(datasets), where, aggregates, modifiers

    def sub_select(self, meta, children):
        form, where, *rest = children
        modifiers = {}
        for c in rest:
            modifiers.update(c)
        return S.SubQuery(form, where, span=span(meta), **modifiers)

    def values_clause(self, meta, children):
        return {"values": children[0]}

    def inline_data(self, meta, children):
        return children[0]

    def data_one_var(self, meta, children):
        var, *values = children
        return S.InlineData((var,), tuple((self._data_value(v),) for v in values), span=span(meta))

    def data_full(self, meta, children):
        if children and isinstance(children[0], Token) and children[0].type == "NIL":
            variables, rows_in = (), children[1:]   # VALUES () { ... }
        else:
            variables = tuple(c for c in children if isinstance(c, S.Variable))
            rows_in = children[len(variables):]
        rows = []
        for c in rows_in:
            if isinstance(c, Token):   # NIL: a row of no values
                row, line, column = (), c.line, c.column
            else:
                row, at = c
                line, column = at.line, at.column
            if len(row) != len(variables):
                raise LocatedError(f"a VALUES row has {len(row)} value(s) for {len(variables)} variable(s)",
                                   line, column, (f"{len(variables)} value(s) (a term or UNDEF each)",))
            rows.append(row)
        return S.InlineData(variables, tuple(rows), span=span(meta))

    def data_row(self, meta, children):
        return tuple(self._data_value(v) for v in children), meta

    def _data_value(self, value):
        if isinstance(value, Token) and value.type == "UNDEF":
            return S.Undef(span=token_span(value))
        return value

    def group_clause(self, meta, children):
        return {"group_by": tuple(children)}

    def having_clause(self, meta, children):
        return {"having": tuple(children)}

    def order_clause(self, meta, children):
        return {"order_by": tuple(children)}

    def order_condition(self, meta, children):
        descending = isinstance(children[0], Token) and str(children[0]).upper() == "DESC"
        return S.OrderCondition(descending, children[-1], span=span(meta))

    def limit_offset(self, meta, children):
        out = {}
        for c in children:
            out.update(c)
        return out

    def limit_clause(self, meta, children):
        return {"limit": int(children[0])}

    def offset_clause(self, meta, children):
        return {"offset": int(children[0])}

    def select_expression(self, meta, children):
        return S.SelectExpression(children[0], children[1], span=span(meta))

    def aggregate_call(self, meta, children):
        name = str(children[0]).upper()
        distinct = any(isinstance(c, Token) and c.type == "DISTINCT" for c in children[1:])
        rest = [c for c in children[1:] if not isinstance(c, Token)]
        return S.AggregateCall(name, distinct, rest[0] if rest else None, span=span(meta))

    construct_query = select_query

    def select_clause(self, meta, children):
        distinct = bool(children) and isinstance(children[0], Token) \
            and children[0].type == "DISTINCT"
        rest = children[1:] if distinct else children
        if len(rest) == 1 and isinstance(rest[0], Token) and rest[0].type == "STAR":
            return S.Select(distinct, None, span=span(meta))
        return S.Select(distinct, tuple(rest), span=span(meta))

    def construct_template(self, meta, children):
        triples = children[0].triples if children else ()
        return S.ConstructTemplate(triples, span=span(meta))

    def from_graph(self, meta, children):
        return S.FromGraph(children[0], span=span(meta))

    def from_named_graph(self, meta, children):
        return S.FromGraph(children[0], True, span=span(meta))

    def from_window(self, meta, children):
        name, stream, window = children
        return S.FromWindow(name, stream, window, span=span(meta))

    def from_stream(self, meta, children):
        return S.FromStream(children[0], children[1], False, span=span(meta))

    def from_named_stream(self, meta, children):
        return S.FromStream(children[0], children[1], True, span=span(meta))

    # -- C-SPARQL aggregates (§2.2)
    def aggregate_clause(self, meta, children):
        variable, (function, distinct, argument), group, *rest = children
        return S.AggregateClause(variable, function, distinct, argument, group,
                                 rest[0] if rest else None, span=span(meta))

    def aggregate_function(self, meta, children):
        name = str(children[0]).upper()
        distinct = any(isinstance(c, Token) and c.type == "DISTINCT" for c in children[1:])
        argument = next((c for c in children[1:] if isinstance(c, S.Variable)), None)
        return name, distinct, argument

    def aggregate_group(self, meta, children):
        return tuple(children)

    # -- windows
    def window_spec(self, meta, children):
        return children[0]

    def _duration(self, token: Token) -> S.DurationLiteral:
        raw = str(token)
        unit = None
        for candidate in _UNITS:
            if raw.endswith(candidate):
                unit = candidate
                raw = raw[:-len(candidate)].rstrip()
                break
        amount = float(raw) if "." in raw else int(raw)
        return S.DurationLiteral(amount, unit, span=token_span(token))

    def range_window(self, meta, children):
        return S.RangeWindow(self._duration(children[0]), span=span(meta))

    def range_step_window(self, meta, children):
        rng, step = self._duration(children[0]), self._duration(children[1])
        if step.amount == 0:
            raise LocatedError("a window's STEP must be positive", step.span.start_line,
                               step.span.start_column, ("a positive duration",))
        return S.RangeWindow(rng, step, span=span(meta))

    def range_tumbling_window(self, meta, children):
        return S.RangeWindow(self._duration(children[0]), None, True, span=span(meta))

    def triples_window(self, meta, children):
        token = children[0]
        if int(token) < 1:
            raise LocatedError("a TRIPLES window holds at least one item", token.line,
                               token.column, ("a whole number of at least 1",))
        return S.TriplesWindow(int(token), span=span(meta))

    def now_window(self, meta, children):
        return S.NowWindow(span=span(meta))

    def all_window(self, meta, children):
        return S.AllWindow(span=span(meta))

    # -- group patterns
    def where_clause(self, meta, children):
        if len(children) == 1:
            return children[0]
        # EP-SPARQL's bare chain "{...} SEQ {...} FILTER (...)": read as one more pair of braces
        filters = [c for c in children if isinstance(c, S.FilterPattern)]
        chain = children[:len(children) - len(filters)]
        groups = [c for c in chain if isinstance(c, S.Group)]
        first = self._group_or_union(chain, _join_spans(groups[0].span, groups[-1].span))
        return S.Group((first, *filters), span=span(meta))

    def group_graph_pattern(self, meta, children):
        return S.Group(tuple(children), span=span(meta))

    def triples_block(self, meta, children):
        return S.TriplesBlock(tuple(t for same in children for t in same), span=span(meta))

    triples_template = triples_block

    def triples_same_subject(self, meta, children):
        subject, pairs = children
        node, out = self._node(subject)
        for verb, objects in pairs:
            for obj in objects:
                target, more = self._node(obj)
                out.append(S.Triple(node, verb, target, span=_join_spans(subject.span, obj.span)))
                out += more
        return out

    def triples_node_alone(self, meta, children):
        return self._node(children[0])[1]

    def blank_node_property_list(self, meta, children):
        """``[ :p :o ; ... ]`` (SPARQL 1.1 [99]): a fresh blank node, the subject of its triples."""
        node = self._fresh(meta)
        return _TriplesNode(node, self.triples_same_subject(meta, [node, children[0]]), node.span)

    def anon(self, meta, children):
        return self._fresh(meta)

    def _fresh(self, meta) -> S.BlankNode:
        """A blank node label the query does not write (``[]`` and ``[ ... ]`` have none)."""
        if not hasattr(self, "_written_labels"):
            self._written_labels = set(re.findall(r"_:([^\s.;,(){}\[\]]+)", self.text))
            self._anon = 0
        while True:
            self._anon += 1
            label = f"anon{self._anon}"
            if label not in self._written_labels:
                return S.BlankNode(label, span=span(meta))

    @staticmethod
    def _node(value):
        """A subject or object: the term, plus the triples of a ``[ ... ]`` it stands for."""
        if isinstance(value, _TriplesNode):
            return value.node, list(value.triples)
        return value, []

    def property_list(self, meta, children):
        return [(children[i], children[i + 1]) for i in range(0, len(children), 2)]

    def object_list(self, meta, children):
        return list(children)

    def group_or_union(self, meta, children):
        return self._group_or_union(children, span(meta))

    @staticmethod
    def _group_or_union(children, where: S.Span):
        groups = tuple(c for c in children if isinstance(c, S.Group))
        operators = tuple(str(c).upper() for c in children if isinstance(c, Token))
        if all(op == "UNION" for op in operators):
            return S.UnionPattern(groups, span=where)
        return S.GroupChain(groups, operators, span=where)

    def bind(self, meta, children):
        return S.Bind(children[0], children[1], span=span(meta))

    def minus_pattern(self, meta, children):
        return S.MinusPattern(children[0], span=span(meta))

    def exists_call(self, meta, children):
        return S.ExistsCall(False, children[-1], span=span(meta))

    def not_exists_call(self, meta, children):
        return S.ExistsCall(True, children[-1], span=span(meta))

    def optional_pattern(self, meta, children):
        return S.OptionalPattern(children[0], span=span(meta))

    def graph_graph_pattern(self, meta, children):
        return S.GraphGraphPattern(children[0], children[1], span=span(meta))

    def filter(self, meta, children):
        return S.FilterPattern(children[0], span=span(meta))

    def window_block(self, meta, children):
        if len(children) == 4:
            name, stream, window, body = children
        else:
            (name, body), stream, window = children, None, None
        return S.WindowBlock(name, stream, window, body, span=span(meta))

    def window_body(self, meta, children):
        return tuple(children)

    def tsp_sequence(self, meta, children):
        return S.TspSequence(tuple(children), span=span(meta))

    def tsp_element(self, meta, children):
        negated = len(children) == 2
        return S.TspElement(negated, children[-1], span=span(meta))

    def event_sequence(self, meta, children):
        return S.EventSequence(tuple(children), span=span(meta))

    def event_element(self, meta, children):
        negated = len(children) == 2
        return S.EventElement(negated, children[-1], span=span(meta))

    # -- RSEP-QL event patterns
    def match_pattern(self, meta, children):
        policy = str(children[0]).lower() if len(children) == 2 else None
        return S.MatchPattern(policy, children[-1], span=span(meta))

    def event_basic(self, meta, children):
        name, triples = children
        return S.EventBasic(name, triples, span=span(meta))

    def event_first(self, meta, children):
        return S.EventFirst(children[0], span=span(meta))

    def event_last(self, meta, children):
        return S.EventLast(children[0], span=span(meta))

    def event_seq(self, meta, children):
        return S.EventSeqExpr(children[0], children[1], span=span(meta))

    # -- variables and expressions
    def var(self, meta, children):
        return S.Variable(str(children[0])[1:], span=span(meta))

    expr_var = var

    def or_expr(self, meta, children):
        return S.Binary("||", children[0], children[1], span=span(meta))

    def and_expr(self, meta, children):
        return S.Binary("&&", children[0], children[1], span=span(meta))

    def compare(self, meta, children):
        left, op, right = children
        return S.Binary(str(op), left, right, span=span(meta))

    arith = compare

    def not_expr(self, meta, children):
        return S.Unary("!", children[-1], span=span(meta))

    def neg_expr(self, meta, children):
        return S.Unary("-", children[0], span=span(meta))

    def _call(self, meta, children):
        name = str(children[0]).upper()
        return S.Call(name, tuple(children[1:]), span=span(meta))

    str_call = lang_call = datatype_call = bound_call = regex_call = interval_call = builtin_fn_call = _call
    timestamp_call = _call

    def expression_list(self, meta, children):
        return tuple(c for c in children if not isinstance(c, Token))

    def in_expr(self, meta, children):
        return S.InList(False, children[0], children[1], span=span(meta))

    def not_in_expr(self, meta, children):
        return S.InList(True, children[0], children[-1], span=span(meta))


def parse(text: str, prefixes: Mapping[str, str] | None = None,
          base: str | None = None) -> S.Query:
    """Parse a CQELS-CEP query into a syntax tree (``cep.syntax.tree.Query``).

    ``prefixes`` maps prefix names (without the colon) to namespace IRIs, as if declared before
    the query's own ``PREFIX`` lines; ``base`` resolves relative ``<iri>`` references until a
    ``BASE`` replaces it. Raises :class:`CepSyntaxError`.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() takes the query as a str, not {type(text).__name__}")
    return _PARSER.parse(text, _ToCep(dict(prefixes or {}), base, text))
