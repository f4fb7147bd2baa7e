"""Text → syntax tree (``paths.syntax``). The only module that imports lark.

``parse(text, prefixes, base)`` runs the LALR(1) parser built from ``grammar.lark`` and a lark
Transformer that yields the frozen dataclasses of ``paths.syntax`` (in the style of lark's
``examples/advanced/create_ast.py``). Every error — lexical, syntactic, an unknown prefix, a
relative IRI without a base — is a :class:`PathSyntaxError` naming the line, the column and what
was expected there.

Extension point, for a grammar that ``%import``s the path rules of ``paths/grammar.lark`` (the
CQELS-CEP parser, ``cep.syntax.parser``, is one); these are the public names it uses:

* :class:`GrammarParser` — the LALR(1) parser of such a grammar file (``paths/`` is on its import
  path), whose ``parse(text, transformer)`` turns every lark error, and every
  :class:`LocatedError` a transformer raises, into the grammar's error class, in words;
* :data:`TERMINAL_WORDS` — what each terminal of the path grammar means to a reader; extend it
  with the importing grammar's own terminals;
* :class:`PathTransformer` — the transformer of the path and term rules; subclass
  ``PathTransformer.imported_as("grammar")`` to get them under the names lark gives imported rules;
* :func:`span`, :func:`token_span` — a syntax node's source span from lark's meta or token.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urljoin, urlsplit

from lark import Lark, Token, Transformer, v_args
from lark.lexer import BasicLexer, ContextualLexer, PatternRE, PatternStr, Scanner, UnlessCallback
from lark.load_grammar import FromPackageLoader
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, \
    VisitError

from paths import syntax as S
from rdfcore import resources
from rdfcore.errors import SidecarError

__all__ = ["parse", "PathSyntaxError", "GrammarParser", "TERMINAL_WORDS", "PathTransformer",
           "LocatedError", "PATH_RULES", "span", "token_span", "translate_error", "accepted_terminals",
           "end_position", "MAX_TREE_DEPTH", "first_too_deep"]


class PathSyntaxError(SidecarError, ValueError):
    """A path that cannot be read.

    ``line`` and ``column`` are 1-based; ``expected`` lists, in words, what would have been
    accepted there (empty when the problem is not a missing token, e.g. an unknown prefix lists the
    declared prefixes instead). ``str(error)`` shows the offending line with a caret under the
    column.
    """

    def __init__(self, reason: str, text: str, line: int, column: int,
                 expected: tuple[str, ...] = ()) -> None:
        self.reason = reason
        self.text = text
        self.line = line
        self.column = column
        self.expected = tuple(expected)
        lines = text.splitlines() or [""]
        shown = lines[line - 1] if 0 < line <= len(lines) else ""
        message = f"line {line}, column {column}: {reason}"
        if self.expected:
            message += "; expected " + _one_of(self.expected)
        message += f"\n  {shown}\n  {' ' * (column - 1)}^"
        super().__init__(message)


def _one_of(items: tuple[str, ...]) -> str:
    if len(items) == 1:
        return items[0]
    return "one of " + ", ".join(items)


# What each named terminal means to a reader of an error message.
TERMINAL_WORDS = {
    "IRIREF": "an IRI <...>",
    "PNAME": "a prefixed name",
    "A": "'a'",
    "AXIS": "an axis (self, next, edge, node)",
    "AXIS_TEST": "an axis with a test (next::t, next::[path])",
    "PATH_MOD": "a modifier (?, * or +)",
    "_FILTER_OPEN": "'[' right after the path element (a nested test, no space between)",
    "NIL": "'()'",
    "STRING": "a string",
    "NUMERIC": "a number",
    "TRUE": "'true'",
    "FALSE": "'false'",
    "BLANK_NODE_LABEL": "a blank node _:label",
    "LANGTAG": "a language tag",
    "$END": "the end of the path",
}
"""Terminal name → what it means to a reader of an error message (the path grammar's terminals)."""


def _position(node) -> tuple[int, int]:
    """Line and column (1-based) where a parse tree node or token starts; 1, 1 when unknown."""
    meta = getattr(node, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line, meta.column
    line, column = getattr(node, "line", None), getattr(node, "column", None)
    return (line, column) if isinstance(line, int) and isinstance(column, int) else (1, 1)


class _TerminalScanner(Scanner):
    """lark's scanner with one compiled pattern per terminal, shared by every parser state.

    lark's contextual lexer builds a scanner per parser state, each one alternation of the
    terminals that state accepts, compiled on first use: ~30 alternations over the grammars'
    Unicode classes cost ~0.3 s at a query's first parse. An alternation matches its first
    alternative that matches at the position, so trying the terminals one by one in lark's order
    gives the same token; each terminal's pattern is compiled once per process (``_COMPILED``).
    """

    def _build_mres(self, terminals, max_size):
        return [_compiled(t.name, t.pattern.to_regexp(), self.g_regex_flags, self.re_) for t in terminals]

    def match(self, text, pos):
        for name, pattern in self._mres:
            m = pattern.match(text.text, pos, text.end)
            if m:
                return m.group(0), name
        return None

    def fullmatch(self, text: str):
        for name, pattern in self._mres:
            if pattern.fullmatch(text):
                return name
        return None


#: (terminal name, regexp, flags) → (name, compiled pattern): :class:`_TerminalScanner`'s
_COMPILED: dict = {}


def _compiled(name: str, regexp: str, flags: int, re_module) -> tuple:
    key = (name, regexp, flags, re_module.__name__)
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = (name, re_module.compile(regexp, flags))
    return found


class _TerminalLexer(BasicLexer):
    """lark's basic lexer on :class:`_TerminalScanner` (the grammars set no lexer callbacks).

    Keywords as lark resolves them: a string terminal that a pattern terminal of the same priority
    matches whole (``SELECT`` and a name) is lexed by the pattern, and the token renamed after; it
    leaves the scanner when its flags are among the pattern's. Whether a pattern matches a string
    whole is asked once per process (``_WHOLE``)."""

    def _build_scanner(self):
        assert not self.user_callbacks
        flags, strings = self.g_regex_flags, [t for t in self.terminals if isinstance(t.pattern, PatternStr)]
        hidden, self.callback = set(), {}
        for term in self.terminals:
            if not isinstance(term.pattern, PatternRE):
                continue
            same = [s for s in strings if s.priority == term.priority and _whole(term, s.pattern.value, flags, self.re)]
            if same:
                self.callback[term.name] = UnlessCallback(_TerminalScanner(same, flags, self.re, self.use_bytes))
                hidden.update(s for s in same if s.pattern.flags <= term.pattern.flags)
        return _TerminalScanner([t for t in self.terminals if t not in hidden], flags, self.re, self.use_bytes)


#: (terminal name, regexp, flags, text) → whether the terminal's pattern matches the text whole
_WHOLE: dict = {}


def _whole(term, text: str, flags: int, re_module) -> bool:
    regexp = term.pattern.to_regexp()
    key = (term.name, regexp, flags, text)
    found = _WHOLE.get(key)
    if found is None:
        m = _compiled(term.name, regexp, flags, re_module)[1].match(text)
        found = _WHOLE[key] = m is not None and m.group(0) == text
    return found


class _ContextualLexer(ContextualLexer):
    BasicLexer = _TerminalLexer


class GrammarParser:
    """The LALR(1) parser of the grammar ``name`` shipped in ``package`` — ``paths/grammar.lark``
    or a grammar that ``%import``s its rules (the ``paths`` package is on lark's import path) —
    with errors in words. Grammars are package resources (``rdfcore.resources``), so the parser
    builds from a zip on ``sys.path`` as from a source tree.

    ``words`` maps terminal names to what they mean to a reader (extend :data:`TERMINAL_WORDS`);
    ``error_cls`` is the error raised, called as ``error_cls(reason, text, line, column,
    expected)`` (:class:`PathSyntaxError` or a subclass); ``subject`` names what is parsed
    ("path", "query") in the end-of-input message.
    """

    def __init__(self, package: str, name: str, words: Mapping[str, str], *,
                 error_cls: type[PathSyntaxError], subject: str) -> None:
        # cache: the LALR tables are read from a file in the temp directory after the first build;
        # regex: the contextual lexer compiles a scanner per parser state on first use, and the
        # ``regex`` module compiles the grammars' large Unicode classes ~3x faster than ``re``
        self.lark = Lark(resources.text(package, name), parser="lalr", cache=True, regex=True,
                         lexer="contextual", propagate_positions=True, maybe_placeholders=False,
                         import_paths=[FromPackageLoader("paths")],
                         _plugins={"ContextualLexer": _ContextualLexer, "BasicLexer": _TerminalLexer})
        self.words = dict(words)
        self.error_cls = error_cls
        self.subject = subject

    def describe(self, terminals) -> tuple[str, ...]:
        """The terminals ``terminals`` (lark's names) in words, sorted: ``words`` first, then the
        literal text of an anonymous terminal (a keyword upper-cased: SPARQL 1.1 §19.3), else the
        name. Imported terminals (``grammar__NAME``) are looked up by their own name."""
        words = set()
        for name in terminals:
            bare = name.split("__")[-1] if name.startswith("grammar__") else name
            if bare in self.words:
                words.add(self.words[bare])
                continue
            try:
                pattern = self.lark.get_terminal(name).pattern
            except KeyError:
                words.add(name)
                continue
            if type(pattern).__name__ == "PatternStr":
                words.add(repr(pattern.value.upper() if pattern.value.isalpha() else pattern.value))
            else:
                words.add(name)
        return tuple(sorted(words))

    def parse(self, text: str, transformer: Transformer):
        """``text`` parsed and transformed by ``transformer``; a lark error or a
        :class:`LocatedError` raised by the transformer becomes ``error_cls``."""
        try:
            tree = self.lark.parse(text)
        except UnexpectedInput as error:
            raise translate_error(error, text, lark=self.lark, words=self.describe,
                                  error_cls=self.error_cls, subject=self.subject) from None
        too_deep = first_too_deep(tree, MAX_TREE_DEPTH)
        if too_deep is not None:
            line, column = _position(too_deep)
            raise self.error_cls(f"the {self.subject} nests too deeply here: more than {MAX_TREE_DEPTH} levels "
                                 "of its syntax tree (about half as many nested groups)", text, line, column)
        try:
            return transformer.transform(tree)
        except VisitError as error:
            located = error.orig_exc
            if isinstance(located, LocatedError):
                raise self.error_cls(located.reason, text, located.line, located.column,
                                     located.expected) from None
            # anything else a rule's conversion raises (urllib on a malformed IRI, a number too
            # large to convert): an error at the rule's text, never a traceback
            line, column = _position(error.obj)
            raise self.error_cls(f"cannot read this {error.rule.replace('_', ' ') if error.rule else 'part'}: "
                                 f"{located}", text, line, column, ()) from located


#: the deepest syntax tree a parse accepts. The transformers and the phases after them recurse
#: once per level (Python's default limit is 1,000 frames); a nested group costs two levels, a
#: nested expression or path none (their parentheses do not make nodes).
MAX_TREE_DEPTH = 250


def first_too_deep(tree, limit: int):
    """The first node (depth first) more than ``limit`` levels below ``tree``'s root, or None;
    iterative, so any depth is measured without recursion."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return node
        children = getattr(node, "children", None)
        if children:
            stack.extend((child, depth + 1) for child in reversed(children))
    return None


def end_position(text: str) -> tuple[int, int]:
    """Line and column just past the end of ``text`` (1-based)."""
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


def accepted_terminals(lark: Lark, text: str, failed_at: int | None = None) -> set[str] | None:
    """The terminals ``lark`` (an LALR parser) would have accepted where ``text`` goes wrong;
    ``failed_at``: the offset of the token the parse failed on (None: not known).

    The sets lark attaches to its errors are read after LALR's default reductions, from states
    shared by several contexts (after ``:p`` at the top, lark's own set says only "end"); so parse
    again, token by token, and ask a copy of the state from just before the failing token. A copy
    costs the depth of the parse stack, so only the tokens from ``failed_at`` on are copied: the
    whole text is then read in linear time however deeply it nests.
    """
    parser = lark.parse_interactive(text)
    tokens = parser.lexer_thread.lex(parser.parser_state)
    while True:
        try:
            token = next(tokens)
        except StopIteration:
            break
        except UnexpectedInput:                  # the lexer failed: the live state is the one
            return set(parser.accepts())
        before = parser.copy(deepcopy_values=False) if failed_at is None or token.start_pos >= failed_at else None
        try:
            parser.feed_token(token)
        except UnexpectedInput:
            return set(before.accepts()) if before is not None else None
    before = parser.copy(deepcopy_values=False)
    try:
        parser.feed_eof()
    except UnexpectedInput:
        return set(before.accepts())
    return None


def translate_error(error: UnexpectedInput, text: str, *, lark: Lark, words, error_cls, subject: str):
    """``error`` (lark's) as ``error_cls(message, text, line, column, expected)``: what was found,
    where, and what was expected, in the reader's words (``words(terminal names)``); ``subject``
    names what is parsed ("path", "query") in the end-of-input message. Shared by the path and
    the CQELS-CEP parsers."""
    if isinstance(error, UnexpectedToken) and error.token.type != "$END":
        failed_at = error.token.start_pos
    elif isinstance(error, UnexpectedCharacters):
        failed_at = error.pos_in_stream
    else:
        failed_at = len(text)
    try:
        accepted = accepted_terminals(lark, text, failed_at)
    except AttributeError:                       # lark's interactive API moved: use its own sets
        accepted = None
    if isinstance(error, UnexpectedCharacters):
        char = text[error.pos_in_stream] if error.pos_in_stream < len(text) else ""
        return error_cls(f"unexpected character {char!r}", text, error.line, error.column,
                         words(accepted if accepted is not None else error.allowed or ()))
    expected = words(accepted if accepted is not None else error.expected or ())
    if isinstance(error, UnexpectedEOF) or (
            isinstance(error, UnexpectedToken) and error.token.type == "$END"):
        line, column = end_position(text)
        return error_cls(f"unexpected end of the {subject}", text, line, column, expected)
    if isinstance(error, UnexpectedToken):
        token = error.token
        return error_cls(f"unexpected {str(token)!r}", text, token.line, token.column, expected)
    return error_cls(str(error), text, getattr(error, "line", 1) or 1, getattr(error, "column", 1) or 1)


class LocatedError(Exception):
    """Raised inside a transformer to reject what it reads at ``line``, ``column``;
    :meth:`GrammarParser.parse` turns it into the grammar's error class, with the whole text."""

    def __init__(self, reason: str, line: int, column: int, expected: tuple[str, ...] = ()):
        super().__init__(reason)
        self.reason, self.line, self.column, self.expected = reason, line, column, expected


def span(meta) -> S.Span:
    """The source span of a rule, from lark's ``meta`` (the grammar propagates positions)."""
    return S.Span(meta.line, meta.column, meta.end_line, meta.end_column, meta.start_pos,
                  meta.end_pos)


def token_span(token: Token) -> S.Span:
    """The source span of one token."""
    return S.Span(token.line, token.column, token.end_line, token.end_column, token.start_pos,
                  token.end_pos)


_UCHAR = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_ECHAR_IN = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'",
             "\\": "\\"}
_STRING_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([tbnrf\"'\\]))")
_LOCAL_ESCAPE = re.compile(r"\\([_~.\-!$&'()*+,;=/?#@%])")


def _decode_uchar(text: str) -> str:
    return _UCHAR.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), text)


def _decode_string(body: str) -> str:
    def one(match: re.Match) -> str:
        if match.group(3):
            return _ECHAR_IN[match.group(3)]
        return chr(int(match.group(1) or match.group(2), 16))
    return _STRING_ESCAPE.sub(one, body)


PATH_RULES = ("alternative", "sequence", "inverse", "modified", "filtered", "test_step",
              "nested_test", "empty_path", "negated", "path_negated_property_set",
              "forward_member", "backward_member", "axis", "axis_term", "axis_nested",
              "type_keyword", "iri_ref", "prefixed_name", "rdf_literal", "numeric_literal",
              "boolean_literal", "blank_node")
"""The rules (and aliases) of ``paths/grammar.lark`` that :class:`PathTransformer` builds."""


@v_args(meta=True)
class PathTransformer(Transformer):
    """lark parse tree → ``paths.syntax`` dataclasses; resolves prefixed names (``prefixes``, a
    mapping the transformer may extend) and relative IRIs (against ``base``).

    A grammar that ``%import``s the path rules subclasses :meth:`imported_as`, so that a path in
    it is built by the very code that builds a path on its own.
    """

    def __init__(self, prefixes: Mapping[str, str], base: str | None) -> None:
        super().__init__()
        self.prefixes = prefixes
        self.base = base

    @classmethod
    def imported_as(cls, namespace: str = "grammar") -> type["PathTransformer"]:
        """A subclass whose path and term rules (:data:`PATH_RULES`) also answer to the names lark
        gives them when a grammar imports them from ``paths/grammar.lark`` (``%import grammar
        (path, ...)`` names them ``grammar__alternative``, ...)."""
        aliases = {f"{namespace}__{name}": cls.__dict__[name] for name in PATH_RULES}
        return v_args(meta=True)(type(f"{cls.__name__}_{namespace}", (cls,), aliases))

    # -- paths
    def start(self, meta, children):
        return children[0]

    def alternative(self, meta, children):
        return S.Alternative(tuple(children), span=span(meta))

    def sequence(self, meta, children):
        return S.Sequence(tuple(children), span=span(meta))

    def inverse(self, meta, children):
        return S.Inverse(children[0], span=span(meta))

    def modified(self, meta, children):
        path, modifier = children
        return S.Modified(path, str(modifier), span=span(meta))

    def filtered(self, meta, children):
        path, test = children
        return S.Filtered(path, test, span=span(meta))

    def test_step(self, meta, children):
        return S.TestStep(children[0], span=span(meta))

    def nested_test(self, meta, children):
        term = children[1] if len(children) > 1 else None
        return S.NestedTest(children[0], term, span=span(meta))

    def empty_path(self, meta, children):
        return S.EmptyPath(span=span(meta))

    def negated(self, meta, children):
        return S.NegatedPropertySet(children[0], span=span(meta))

    def path_negated_property_set(self, meta, children):
        return tuple(children)

    def forward_member(self, meta, children):
        return S.NegatedMember(children[0], False, span=span(meta))

    def backward_member(self, meta, children):
        return S.NegatedMember(children[0], True, span=span(meta))

    # -- nSPARQL axes
    def _axis(self, token: Token) -> tuple[str, bool]:
        name = str(token).rstrip(":")
        inverse = name.endswith("^-1")
        axis = name[:-3] if inverse else name
        if inverse and axis == "self":
            raise LocatedError("'self^-1' is not an nSPARQL axis (self is its own inverse); "
                               "write 'self'",
                               token.line, token.column, ("'self'",))
        return axis, inverse

    def axis(self, meta, children):
        axis, inverse = self._axis(children[0])
        return S.AxisStep(axis, inverse, span=span(meta))

    def axis_term(self, meta, children):
        axis, inverse = self._axis(children[0])
        return S.AxisStep(axis, inverse, term=children[1], span=span(meta))

    def axis_nested(self, meta, children):
        axis, inverse = self._axis(children[0])
        return S.AxisStep(axis, inverse, test=children[1], span=span(meta))

    # -- terms
    def type_keyword(self, meta, children):
        return S.TypeKeyword(span=span(meta))

    def iri_ref(self, meta, children):
        return self.resolve_iri(children[0])

    def resolve_iri(self, token: Token) -> S.IriRef:
        """An ``IRIREF`` token as an absolute IRI, resolved against ``base`` when relative."""
        text = str(token)[1:-1]
        value = _decode_uchar(text)
        if not urlsplit(value).scheme:
            if self.base is None:
                raise LocatedError(f"relative IRI <{text}> and no base IRI to resolve it against",
                                   token.line, token.column, ("an absolute IRI",))
            value = urljoin(self.base, value)
        return S.IriRef(text, value, span=token_span(token))

    def prefixed_name(self, meta, children):
        token = children[0]
        prefix, _, local = str(token).partition(":")
        if prefix not in self.prefixes:
            declared = tuple(sorted(f"'{name}:'" for name in self.prefixes))
            raise LocatedError(f"unknown prefix {prefix + ':'!r}", token.line, token.column,
                               declared or ("a declared prefix (none were given)",))
        value = self.prefixes[prefix] + _LOCAL_ESCAPE.sub(r"\1", local)
        return S.PrefixedName(prefix, local, value, span=token_span(token))

    def rdf_literal(self, meta, children):
        token = children[0]
        raw = str(token)
        quote = 3 if raw[:3] in ('"""', "'''") else 1
        lexical = _decode_string(raw[quote:-quote])
        language = datatype = None
        if len(children) > 1:
            extra = children[1]
            if isinstance(extra, Token) and extra.type == "LANGTAG":
                language = str(extra)[1:]
            else:
                datatype = extra
        return S.StringLiteral(lexical, language, datatype, span=span(meta))

    def numeric_literal(self, meta, children):
        return S.NumericLiteral(str(children[0]), span=span(meta))

    def boolean_literal(self, meta, children):
        return S.BooleanLiteral(children[0].type == "TRUE", span=span(meta))

    def blank_node(self, meta, children):
        return S.BlankNode(str(children[0])[2:], span=span(meta))


_PARSER = GrammarParser("paths", "grammar.lark", TERMINAL_WORDS,
                        error_cls=PathSyntaxError, subject="path")


def parse(text: str, prefixes: Mapping[str, str] | None = None,
          base: str | None = None) -> S.PathNode:
    """Parse a property path / nested regular expression into a syntax tree.

    ``prefixes`` maps prefix names (without the colon; ``""`` for ``:``) to namespace IRIs;
    ``base`` resolves relative ``<iri>`` references. Raises :class:`PathSyntaxError`.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() takes the path as a str, not {type(text).__name__}")
    return _PARSER.parse(text, PathTransformer(dict(prefixes or {}), base))

