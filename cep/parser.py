"""Text → syntax tree (``cep.syntax``). With ``paths/parser.py``, the only module that imports lark.

``parse(text, prefixes, base)`` runs the LALR(1) parser built from ``cep/grammar.lark`` (which
imports the path rules of ``paths/grammar.lark``, so a predicate may be any path) and a lark
Transformer that yields the frozen dataclasses of ``cep.syntax``. The path and term nodes are built
by the transformer of ``paths.parser``, which this one extends, so paths mean exactly the same in a
query as on their own.

Every error — lexical, syntactic, an unknown prefix, a relative IRI without a base, a malformed
``PREFIX`` or window — is a :class:`CepSyntaxError` naming the line, the column and what was
expected there. Errors of meaning (an undeclared window, two negated elements, ...) are found by
``cep.lower`` and raised as :class:`CepSemanticError`, also with line and column.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path as _FilePath
from urllib.parse import urljoin, urlsplit

from lark import Lark, Token, v_args
from lark.exceptions import UnexpectedInput, VisitError

from cep import syntax as S
# The path transformer and its helpers are reused, not copied: a path in a query is built by the
# very code that builds a path on its own.
from paths.parser import _TERMINAL_WORDS as _PATH_TERMINAL_WORDS
from paths.parser import (PathSyntaxError, _decode_uchar, _Located, _span, _token_span, _ToSyntax,
                          translate_error)

__all__ = ["parse", "CepSyntaxError", "CepSemanticError"]


class CepSyntaxError(PathSyntaxError):
    """A query that cannot be read.

    ``line`` and ``column`` are 1-based; ``expected`` lists, in words, what would have been
    accepted there. ``str(error)`` shows the offending line with a caret under the column. A
    subclass of ``paths.PathSyntaxError`` (same attributes), so a caller may catch both at once.
    """


class CepSemanticError(CepSyntaxError):
    """A query that reads but means nothing (CQELS-CEP §3.1-§3.2): found before anything runs."""


_PATHS_DIR = str(_FilePath(__file__).resolve().parent.parent / "paths")
_GRAMMAR_FILE = _FilePath(__file__).with_name("grammar.lark")
_LARK = Lark(_GRAMMAR_FILE.read_text(encoding="utf-8"), parser="lalr", lexer="contextual",
             propagate_positions=True, maybe_placeholders=False, import_paths=[_PATHS_DIR])

_TERMINAL_WORDS = {
    **_PATH_TERMINAL_WORDS,  # the path rules are imported from paths/grammar.lark
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
    "$END": "the end of the query",
}


def _words(terminals) -> tuple[str, ...]:
    words = set()
    for name in terminals:
        bare = name.split("__")[-1] if name.startswith("grammar__") else name
        if bare in _TERMINAL_WORDS:
            words.add(_TERMINAL_WORDS[bare])
            continue
        try:
            pattern = _LARK.get_terminal(name).pattern
        except KeyError:
            words.add(name)
            continue
        if type(pattern).__name__ == "PatternStr":
            words.add(repr(pattern.value.upper() if pattern.value.isalpha() else pattern.value))
        else:
            words.add(name)
    return tuple(sorted(words))


def _join_spans(first: S.Span, last: S.Span) -> S.Span:
    return S.Span(first.start_line, first.start_column, last.end_line, last.end_column,
                  first.start_pos, last.end_pos)


_UNITS = ("ms", "s", "m", "h", "d")


@v_args(meta=True)
class _ToCep(_ToSyntax):
    """lark parse tree → ``cep.syntax``; path and term rules are those of ``paths.parser``
    (imported rules and aliases arrive under the ``grammar__`` namespace)."""

    # the path rules, as lark names them once imported from paths/grammar.lark
    for _name in ("alternative", "sequence", "inverse", "modified", "filtered", "test_step",
                  "nested_test", "empty_path", "negated", "path_negated_property_set",
                  "forward_member", "backward_member", "axis", "axis_term", "axis_nested",
                  "type_keyword", "iri_ref", "prefixed_name", "rdf_literal", "numeric_literal",
                  "boolean_literal", "blank_node"):
        locals()["grammar__" + _name] = _ToSyntax.__dict__[_name]
    del _name
    expr_iri_ref = _ToSyntax.__dict__["iri_ref"]
    expr_prefixed_name = _ToSyntax.__dict__["prefixed_name"]
    expr_rdf_literal = _ToSyntax.__dict__["rdf_literal"]
    expr_numeric_literal = _ToSyntax.__dict__["numeric_literal"]
    expr_boolean_literal = _ToSyntax.__dict__["boolean_literal"]

    def __init__(self, prefixes: Mapping[str, str], base: str | None, text: str) -> None:
        super().__init__(dict(prefixes), base)
        self.text = text

    # -- query and prologue
    def start(self, meta, children):
        prologue, (form, datasets, where) = children
        return S.Query(prologue, form, datasets, where, text=self.text, span=_span(meta))

    def prologue(self, meta, children):
        return tuple(children)

    def _absolute(self, token: Token) -> S.IriRef:
        text = str(token)[1:-1]
        value = _decode_uchar(text)
        if not urlsplit(value).scheme:
            if self.base is None:
                raise _Located(f"relative IRI <{text}> and no base IRI to resolve it against",
                               token.line, token.column, ("an absolute IRI",))
            value = urljoin(self.base, value)
        return S.IriRef(text, value, span=_token_span(token))

    def base_decl(self, meta, children):
        iri = self._absolute(children[0])
        self.base = iri.value
        return S.BaseDecl(iri, span=_span(meta))

    def prefix_decl(self, meta, children):
        name_token, iri_token = children
        name, _, local = str(name_token).partition(":")
        if local:
            raise _Located(f"a PREFIX declaration names a prefix ending in ':', not "
                           f"{str(name_token)!r}", name_token.line, name_token.column,
                           ("a prefix name such as 'ex:' or ':'",))
        iri = self._absolute(iri_token)
        self.prefixes[name] = iri.value
        return S.PrefixDecl(name, iri, span=_span(meta))

    def select_query(self, meta, children):
        form, *datasets, where = children
        return form, tuple(datasets), where

    construct_query = select_query

    def select_clause(self, meta, children):
        distinct = bool(children) and isinstance(children[0], Token) \
            and children[0].type == "DISTINCT"
        rest = children[1:] if distinct else children
        if len(rest) == 1 and isinstance(rest[0], Token) and rest[0].type == "STAR":
            return S.Select(distinct, None, span=_span(meta))
        return S.Select(distinct, tuple(rest), span=_span(meta))

    def construct_template(self, meta, children):
        triples = children[0].triples if children else ()
        return S.ConstructTemplate(triples, span=_span(meta))

    def from_graph(self, meta, children):
        return S.FromGraph(children[0], span=_span(meta))

    def from_window(self, meta, children):
        name, stream, window = children
        return S.FromWindow(name, stream, window, span=_span(meta))

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
        return S.DurationLiteral(amount, unit, span=_token_span(token))

    def range_window(self, meta, children):
        return S.RangeWindow(self._duration(children[0]), span=_span(meta))

    def range_step_window(self, meta, children):
        rng, step = self._duration(children[0]), self._duration(children[1])
        if step.amount == 0:
            raise _Located("a window's STEP must be positive", step.span.start_line,
                           step.span.start_column, ("a positive duration",))
        return S.RangeWindow(rng, step, span=_span(meta))

    def range_tumbling_window(self, meta, children):
        return S.RangeWindow(self._duration(children[0]), None, True, span=_span(meta))

    def triples_window(self, meta, children):
        token = children[0]
        if int(token) < 1:
            raise _Located("a TRIPLES window holds at least one item", token.line, token.column,
                           ("a whole number of at least 1",))
        return S.TriplesWindow(int(token), span=_span(meta))

    def now_window(self, meta, children):
        return S.NowWindow(span=_span(meta))

    def all_window(self, meta, children):
        return S.AllWindow(span=_span(meta))

    # -- group patterns
    def where_clause(self, meta, children):
        return children[0]

    def group_graph_pattern(self, meta, children):
        return S.Group(tuple(children), span=_span(meta))

    def triples_block(self, meta, children):
        return S.TriplesBlock(tuple(t for same in children for t in same), span=_span(meta))

    triples_template = triples_block

    def triples_same_subject(self, meta, children):
        subject, pairs = children
        return [S.Triple(subject, verb, obj, span=_join_spans(subject.span, obj.span))
                for verb, objects in pairs for obj in objects]

    def property_list(self, meta, children):
        return [(children[i], children[i + 1]) for i in range(0, len(children), 2)]

    def object_list(self, meta, children):
        return list(children)

    def group_or_union(self, meta, children):
        return S.UnionPattern(tuple(children), span=_span(meta))

    def optional_pattern(self, meta, children):
        return S.OptionalPattern(children[0], span=_span(meta))

    def filter(self, meta, children):
        return S.FilterPattern(children[0], span=_span(meta))

    def window_block(self, meta, children):
        if len(children) == 4:
            name, stream, window, body = children
        else:
            (name, body), stream, window = children, None, None
        return S.WindowBlock(name, stream, window, body, span=_span(meta))

    def window_body(self, meta, children):
        return tuple(children)

    def tsp_sequence(self, meta, children):
        return S.TspSequence(tuple(children), span=_span(meta))

    def tsp_element(self, meta, children):
        negated = len(children) == 2
        return S.TspElement(negated, children[-1], span=_span(meta))

    def event_sequence(self, meta, children):
        return S.EventSequence(tuple(children), span=_span(meta))

    def event_element(self, meta, children):
        negated = len(children) == 2
        return S.EventElement(negated, children[-1], span=_span(meta))

    # -- variables and expressions
    def var(self, meta, children):
        return S.Variable(str(children[0])[1:], span=_span(meta))

    expr_var = var

    def or_expr(self, meta, children):
        return S.Binary("||", children[0], children[1], span=_span(meta))

    def and_expr(self, meta, children):
        return S.Binary("&&", children[0], children[1], span=_span(meta))

    def compare(self, meta, children):
        left, op, right = children
        return S.Binary(str(op), left, right, span=_span(meta))

    arith = compare

    def not_expr(self, meta, children):
        return S.Unary("!", children[-1], span=_span(meta))

    def neg_expr(self, meta, children):
        return S.Unary("-", children[0], span=_span(meta))

    def _call(self, meta, children):
        name = str(children[0]).upper()
        return S.Call(name, tuple(children[1:]), span=_span(meta))

    str_call = lang_call = datatype_call = bound_call = regex_call = _call


def parse(text: str, prefixes: Mapping[str, str] | None = None,
          base: str | None = None) -> S.Query:
    """Parse a CQELS-CEP query into a syntax tree (``cep.syntax.Query``).

    ``prefixes`` maps prefix names (without the colon) to namespace IRIs, as if declared before
    the query's own ``PREFIX`` lines; ``base`` resolves relative ``<iri>`` references until a
    ``BASE`` replaces it. Raises :class:`CepSyntaxError`.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() takes the query as a str, not {type(text).__name__}")
    try:
        tree = _LARK.parse(text)
    except UnexpectedInput as error:
        raise translate_error(error, text, lark=_LARK, words=_words, error_cls=CepSyntaxError,
                              subject="query") from None
    try:
        return _ToCep(dict(prefixes or {}), base, text).transform(tree)
    except VisitError as error:
        located = error.orig_exc
        if isinstance(located, _Located):
            raise CepSyntaxError(located.reason, text, located.line, located.column,
                                 located.expected) from None
        raise
