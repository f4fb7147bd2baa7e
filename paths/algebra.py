"""The path algebra: a closed set of frozen dataclasses, built by smart constructors.

This is what the compilers see (the Spark compiler, ``paths.reference``); they never see syntax
trees. ``lower(tree)`` (``paths.lowering``, re-exported here) desugars a syntax tree
(``paths.syntax``) into it: prefixed names are gone,
``a`` is rdf:type, an IRI ``:p`` is ``next::p``, ``^`` is pushed down to the leaves, ``?`` is an
alternative with an identity, ``e[t]`` is a sequence with a node test.

Terms are N-Triples strings (``<http://...>``, ``"lex"``, ``"lex"@en``, ``"lex"^^<dt>``, ``_:b``).

Semantics over a graph G (a set of triples (s, p, o)); DESIGN.md "Nested regular expressions",
Pérez–Arenas–Gutierrez (nSPARQL), SPARQL 1.1 §18.4-18.5. voc(G) is every term in any position of
G; nodes(G) the subjects and objects only.

=========================================  =========================================================
node                                       ⟦node⟧
=========================================  =========================================================
``Axis(NEXT, False, None)``                next = {(x,y) | (x,z,y) ∈ G}
``Axis(EDGE, False, None)``                edge = {(x,y) | (x,y,z) ∈ G}
``Axis(NODE, False, None)``                node = {(x,y) | (z,x,y) ∈ G}
``Axis(k, False, a)``  (``a`` a term)      the same with z = a (``next::a`` = {(x,y) | (x,a,y) ∈ G})
``Axis(k, False, e)``  (``e`` a Path)      the same with ∃w: (z,w) ∈ ⟦e⟧       (``axis::[e]``)
``Axis(k, True, t)``                       {(y,x) | (x,y) ∈ ⟦Axis(k, False, t)⟧}   (``axis^-1``)
``SelfTerm(a)``                            {(a,a)}                                (``self::a``)
``Identity(Domain.VOC)``                   {(x,x) | x ∈ voc(G)}                   (``self``)
``Identity(Domain.NODES)``                 {(x,x) | x ∈ nodes(G)}, and (c,c) for a constant c
                                           bound at this end of the pattern (see below)  (``()``)
``Test(e)``                                {(x,x) | x ∈ voc(G), ∃w: (x,w) ∈ ⟦e⟧}  (``self::[e]``)
``NegatedSet(S, False)``                   {(x,y) | (x,p,y) ∈ G, p ∉ S}           (``!(p1|...)``)
``NegatedSet(S, True)``                    {(y,x) | (x,p,y) ∈ G, p ∉ S}           (``!(^p1|...)``)
``Seq((e1, ..., en))``                     ⟦e1⟧ ∘ ... ∘ ⟦en⟧                      (``e1/.../en``)
``Alt((e1, ..., en))``                     ⟦e1⟧ ∪ ... ∪ ⟦en⟧                      (``e1|...|en``)
``Plus(e)``                                ⋃_{k≥1} ⟦e⟧^k                          (``e+``)
``Star(e, d)``                             ⟦Identity(d)⟧ ∪ ⟦Plus(e)⟧              (``e*``)
=========================================  =========================================================

Zero-length paths. nSPARQL's ``exp*`` contains ``self``, the identity on voc(G) (predicates
included): ``Star(e, Domain.VOC)``. SPARQL 1.1's ``e*`` and ``e?`` relate every subject and object
of G to itself (§18.5 "nodes(G)"), and a constant endpoint of the pattern to itself even when it is
not in G: ``Star(e, Domain.NODES)``, ``Alt((e, Identity(Domain.NODES)))``. The constant is *bound at
an end* exactly as §18.2.2.4/§18.5 evaluate a path pattern ``X path Y``: X reaches the first part of
a ``Seq`` and Y the last (the parts in between are joined on fresh variables, so they see no
constant); both reach every option of an ``Alt``; a ``Plus``/``Star`` walks from X (ALP), each step
starting from a bound node, or backwards from Y when only Y is a constant; ``Test`` and
``axis::[e]`` see no constant. When X and Y are variables, or graph nodes, ``Identity(NODES)`` is
just the identity on nodes(G). ``lower`` gives each ``*`` and ``?`` the domain of the dialect its
operand is written in (see ``lower``); ``self`` and ``()`` write the two identities explicitly.

``Plus`` is kept as a node rather than desugared to ``Seq((e, Star(e)))``: a compiler runs it as one
semi-naive fixpoint from ⟦e⟧, without the identity (whose extent, all of voc(G), is the costly part)
and without evaluating ``e`` twice. As relations, ``e/e*`` = ``e+`` for every path here (DESIGN.md
defines ``exp+ = exp/exp*`` with nSPARQL's star): a pair of ⟦e⟧ can end outside voc(G) only as
(c,c) from ``self::c``, and then (c,c) ∈ ⟦e/e⟧ too. (With a constant bound at an end, SPARQL 1.1
itself tells them apart: ``:k (:p?)+ ?y`` gives :k, ``:k :p?/(:p?)* ?y`` does not when :k is not in
G; ``Plus`` follows ``+``.) ``Star(e, d)`` is ``Identity(d) ∪ Plus(e)`` and the constructors keep
it that way (``alt(Identity(d), Plus(e))`` builds ``Star(e, d)``).

Build nodes with the smart constructors (``axis``, ``self_term``, ``identity``, ``test``,
``negated_set``, ``seq``, ``alt``, ``plus``, ``star``, ``opt``, ``inverse``): they simplify while
building, so equal paths built in different ways tend to be equal values, and
``lower(parse(str(p)))`` gives back ``p`` for every ``p`` they return.

``str(path)`` is nSPARQL native syntax with full IRIs (``next::<iri>``, ``self``, ``()``, ...) that
``paths.parse`` reads back.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterator, Union

from rdfcore.vocab import XSD_NS, XSD_STRING, iri

XSD_BOOLEAN = iri(XSD_NS + "boolean")  # not (yet) in rdfcore.vocab

__all__ = [
    "Term", "AxisKind", "Domain",
    "Axis", "SelfTerm", "Identity", "Test", "NegatedSet", "Seq", "Alt", "Plus", "Star",
    "Path", "NODE_TYPES",
    "axis", "self_term", "identity", "test", "negated_set", "seq", "alt", "plus", "star", "opt",
    "inverse", "children", "walk", "literal_term", "is_term",
]

Term = str
"""An RDF term in N-Triples syntax."""


def is_term(value: object) -> bool:
    """Whether ``value`` looks like an N-Triples term (IRI, literal or blank node)."""
    return isinstance(value, str) and (
        (value.startswith("<") and value.endswith(">") and len(value) > 2)
        or (value.startswith('"') and len(value) >= 2)
        or (value.startswith("_:") and len(value) > 2))


def _check_term(value: object, what: str) -> None:
    if not is_term(value):
        raise TypeError(f"{what} must be an N-Triples term (<iri>, \"literal\", _:b), "
                        f"got {value!r}")


class AxisKind(enum.Enum):
    """The three nSPARQL axes that read triples (``self`` is ``Identity``/``SelfTerm``/``Test``).

    ``positions`` gives, as indices into a triple (s, p, o), the pair's start x, its end y and the
    element z that ``axis::a`` / ``axis::[e]`` constrain.
    """

    NEXT = "next"   # (x, z, y): subject to object, z the predicate
    EDGE = "edge"   # (x, y, z): subject to predicate, z the object
    NODE = "node"   # (z, x, y): predicate to object, z the subject

    @property
    def positions(self) -> tuple[int, int, int]:
        return _POSITIONS[self]


_POSITIONS = {AxisKind.NEXT: (0, 2, 1), AxisKind.EDGE: (0, 1, 2), AxisKind.NODE: (1, 2, 0)}


class Domain(enum.Enum):
    """Which terms a zero-length path relates to themselves."""

    NODES = "nodes"  # SPARQL 1.1: subjects and objects of G, plus a constant bound at that end
    VOC = "voc"      # nSPARQL: voc(G), every term of G in any position


# --- nodes -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Axis:
    """``axis``, ``axis::a`` or ``axis::[e]`` for next/edge/node, ``^-1`` when ``inverse``.

    ``test`` is None (any z), a term (z = test) or a Path (z must start some pair of it).
    """

    kind: AxisKind
    inverse: bool = False
    test: "Term | Path | None" = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, AxisKind):
            raise TypeError(f"Axis.kind must be an AxisKind, got {self.kind!r}")
        if isinstance(self.test, str):
            _check_term(self.test, "Axis.test")
        elif self.test is not None and not isinstance(self.test, NODE_TYPES):
            raise TypeError(f"Axis.test must be None, a term or a Path, got {self.test!r}")

    def __str__(self) -> str:
        head = self.kind.value + ("^-1" if self.inverse else "")
        if self.test is None:
            return head
        if isinstance(self.test, str):
            return f"{head}::{self.test}"
        return f"{head}::[{self.test}]"


@dataclass(frozen=True)
class SelfTerm:
    """``self::a`` = {(a, a)} (whether or not a occurs in G)."""

    term: Term

    def __post_init__(self) -> None:
        _check_term(self.term, "SelfTerm.term")

    def __str__(self) -> str:
        return f"self::{self.term}"


@dataclass(frozen=True)
class Identity:
    """The zero-length path over ``domain``: ``self`` (VOC) or ``()`` (NODES)."""

    domain: Domain

    def __post_init__(self) -> None:
        if not isinstance(self.domain, Domain):
            raise TypeError(f"Identity.domain must be a Domain, got {self.domain!r}")

    def __str__(self) -> str:
        return "self" if self.domain is Domain.VOC else "()"


@dataclass(frozen=True)
class Test:
    """Node filter ``self::[e]``: (x, x) for x ∈ voc(G) that start some pair of ⟦e⟧."""

    __test__ = False  # not a pytest test class

    path: "Path"

    def __post_init__(self) -> None:
        _check_path(self.path, "Test.path")

    def __str__(self) -> str:
        return f"self::[{self.path}]"


@dataclass(frozen=True)
class NegatedSet:
    """One direction of a SPARQL negated property set (§18.4): the triples whose predicate is not
    in ``excluded`` (never empty; ``negated_set`` turns an empty one into ``next``), read forwards,
    or backwards when ``inverse``.
    ``!(:p|^:q)`` is ``Alt((NegatedSet({p}), NegatedSet({q}, True)))``.
    """

    excluded: frozenset[Term]
    inverse: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.excluded, frozenset) or not self.excluded:
            raise ValueError("NegatedSet.excluded must be a non-empty frozenset; "
                             "use negated_set(), which gives next for an empty set")
        for term in self.excluded:
            _check_term(term, "NegatedSet.excluded")

    def __str__(self) -> str:
        mark = "^" if self.inverse else ""
        members = sorted(self.excluded)
        if len(members) == 1:
            return f"!{mark}{members[0]}"
        return "!(" + "|".join(mark + member for member in members) + ")"


@dataclass(frozen=True)
class Seq:
    """Composition of two or more paths, none of them a Seq."""

    parts: tuple["Path", ...]

    def __post_init__(self) -> None:
        _check_parts(self.parts, "Seq")

    def __str__(self) -> str:
        return "/".join(f"({part})" if isinstance(part, Alt) else str(part) for part in self.parts)


@dataclass(frozen=True)
class Alt:
    """Union of two or more distinct paths, none of them an Alt."""

    parts: tuple["Path", ...]

    def __post_init__(self) -> None:
        _check_parts(self.parts, "Alt")

    def __str__(self) -> str:
        return "|".join(str(part) for part in self.parts)


@dataclass(frozen=True)
class Plus:
    """One or more repetitions (transitive closure)."""

    path: "Path"

    def __post_init__(self) -> None:
        _check_path(self.path, "Plus.path")

    def __str__(self) -> str:
        return _operand(self.path) + "+"


@dataclass(frozen=True)
class Star:
    """Zero or more repetitions: ``Identity(identity) ∪ Plus(path)``."""

    path: "Path"
    identity: Domain

    def __post_init__(self) -> None:
        _check_path(self.path, "Star.path")
        if not isinstance(self.identity, Domain):
            raise TypeError(f"Star.identity must be a Domain, got {self.identity!r}")

    def __str__(self) -> str:
        # Reading ``e*`` back, the identity follows the dialect e is written in (paths.syntax):
        # nSPARQL's when e prints an axis, SPARQL's otherwise. Spell it out when that would differ.
        if (self.identity is Domain.VOC) == _prints_axis(self.path):
            return _operand(self.path) + "*"
        return f"({Identity(self.identity)}|{_operand(self.path)}+)"


Path = Union[Axis, SelfTerm, Identity, Test, NegatedSet, Seq, Alt, Plus, Star]
NODE_TYPES = (Axis, SelfTerm, Identity, Test, NegatedSet, Seq, Alt, Plus, Star)
"""Every algebra node type; a compiler that handles these handles every path."""


def _check_path(value: object, what: str) -> None:
    if not isinstance(value, NODE_TYPES):
        raise TypeError(f"{what} must be a Path, got {value!r}")


def _check_parts(parts: object, what: str) -> None:
    if not isinstance(parts, tuple) or len(parts) < 2:
        raise ValueError(f"{what}.parts must be a tuple of at least two paths; "
                         f"use {what.lower()}(), which handles fewer")
    same = Seq if what == "Seq" else Alt
    for part in parts:
        _check_path(part, f"{what}.parts[]")
        if isinstance(part, same):
            raise ValueError(f"{what}.parts must not contain a {what}; "
                             f"use {what.lower()}(), which flattens")


def _operand(path: Path) -> str:
    """``path`` printed so that a postfix operator applies to all of it."""
    if isinstance(path, (Seq, Alt, Plus, Star)):
        return f"({path})"
    return str(path)


def _prints_axis(path: Path) -> bool:
    """Whether ``str(path)`` contains an nSPARQL axis step (self, next, edge, node)."""
    match path:
        case Axis() | SelfTerm() | Test():
            return True
        case Identity():
            return path.domain is Domain.VOC
        case NegatedSet():
            return False
        case Seq() | Alt():
            return any(_prints_axis(part) for part in path.parts)
        case Plus():
            return _prints_axis(path.path)
        case Star():
            return path.identity is Domain.VOC or _prints_axis(path.path)
    raise TypeError(f"not a Path: {path!r}")


def children(path: Path) -> tuple[Path, ...]:
    """The sub-paths of ``path`` (the nested test of an Axis included)."""
    match path:
        case Seq() | Alt():
            return path.parts
        case Plus() | Star() | Test():
            return (path.path,)
        case Axis() if path.test is not None and not isinstance(path.test, str):
            return (path.test,)
    return ()


def walk(path: Path) -> Iterator[Path]:
    """``path`` and all its sub-paths, pre-order."""
    yield path
    for child in children(path):
        yield from walk(child)


# --- smart constructors ------------------------------------------------------------------------

def axis(kind: AxisKind, inverse: bool = False, test: "Term | Path | None" = None) -> Path:
    """``axis``, ``axis::a``, ``axis::[e]`` (``^-1`` when inverse).

    ``axis::[self::a]`` is ``axis::a``, and ``axis::[self::[e]]`` is ``axis::[e]`` (z always is in
    voc(G)).
    """
    while isinstance(test, Test):
        test = test.path
    if isinstance(test, SelfTerm):
        test = test.term
    return Axis(kind, bool(inverse), test)


def self_term(term: Term) -> Path:
    """``self::a``."""
    return SelfTerm(term)


def identity(domain: Domain) -> Path:
    """``self`` (VOC) or ``()`` (NODES)."""
    return Identity(domain)


def test(path: Path) -> Path:
    """``self::[e]``; ``self::[self::[e]]`` is ``self::[e]`` and ``self::[self]`` is ``self``."""
    if isinstance(path, Test):
        return path
    if path == Identity(Domain.VOC):
        return path
    return Test(path)


test.__test__ = False  # a smart constructor, not a pytest test


def negated_set(excluded, inverse: bool = False) -> Path:
    """``!(p1|...|pn)``, or ``!(^p1|...|^pn)`` when inverse; an empty set gives ``next``."""
    excluded = frozenset(excluded)
    if not excluded:
        return Axis(AxisKind.NEXT, bool(inverse), None)
    return NegatedSet(excluded, bool(inverse))


def seq(*parts: Path) -> Path:
    """Composition; flattens nested sequences; one part is that part."""
    flat: list[Path] = []
    for part in parts:
        _check_path(part, "seq() part")
        flat.extend(part.parts if isinstance(part, Seq) else (part,))
    if not flat:
        raise ValueError("seq() needs at least one path")
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def alt(*parts: Path) -> Path:
    """Union; flattens, removes duplicates (keeping the first), and absorbs identities:
    ``Identity(d) | Star(e, d)`` is ``Star(e, d)``, ``Identity(d) | Plus(e)`` is ``Star(e, d)``,
    ``Plus(e) | Star(e, d)`` is ``Star(e, d)``."""
    flat: list[Path] = []
    for part in parts:
        _check_path(part, "alt() part")
        flat.extend(part.parts if isinstance(part, Alt) else (part,))
    if not flat:
        raise ValueError("alt() needs at least one path")
    uniq = list(dict.fromkeys(flat))
    stars = {part.path for part in uniq if isinstance(part, Star)}
    uniq = [part for part in uniq if not (isinstance(part, Plus) and part.path in stars)]
    for domain in Domain:
        ident = Identity(domain)
        if ident not in uniq:
            continue
        if any(isinstance(part, Star) and part.identity is domain for part in uniq):
            uniq.remove(ident)
            continue
        at = next((i for i, part in enumerate(uniq) if isinstance(part, Plus)), None)
        if at is not None:
            uniq[at] = Star(uniq[at].path, domain)
            uniq.remove(ident)
    return uniq[0] if len(uniq) == 1 else Alt(tuple(uniq))


def plus(path: Path) -> Path:
    """``e+``: idempotent on closures, identities and node filters; ``(e | Identity(d))+`` is
    ``Star(e, d)``."""
    _check_path(path, "plus() operand")
    if isinstance(path, (Plus, Star, Identity, SelfTerm, Test)):
        return path
    if isinstance(path, Alt):
        idents = [part for part in path.parts if isinstance(part, Identity)]
        if idents:
            rest = [part for part in path.parts if not isinstance(part, Identity)]
            # (A ∪ I)+ = I ∪ A+ for an identity I
            return alt(*idents, plus(alt(*rest))) if rest else alt(*idents)
    return Plus(path)


def star(path: Path, domain: Domain) -> Path:
    """``e*`` with the given zero-length identity: ``Identity(domain) | e+``."""
    if not isinstance(domain, Domain):
        raise TypeError(f"star() needs a Domain, got {domain!r}")
    return alt(Identity(domain), plus(path))


def opt(path: Path, domain: Domain) -> Path:
    """``e?`` with the given zero-length identity: ``e | Identity(domain)``."""
    return alt(path, Identity(domain))


def inverse(path: Path) -> Path:
    """``^e``, pushed down to the leaves (an inverted Seq runs backwards)."""
    match path:
        case Axis():
            return Axis(path.kind, not path.inverse, path.test)
        case NegatedSet():
            return NegatedSet(path.excluded, not path.inverse)
        case SelfTerm() | Identity() | Test():
            return path
        case Seq():
            return seq(*(inverse(part) for part in reversed(path.parts)))
        case Alt():
            return alt(*(inverse(part) for part in path.parts))
        case Plus():
            return plus(inverse(path.path))
        case Star():
            return star(inverse(path.path), path.identity)
    raise TypeError(f"not a Path: {path!r}")


# --- terms -------------------------------------------------------------------------------------

_NT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
               "\f": "\\f"}


def literal_term(lexical: str, language: str | None = None, datatype: str | None = None) -> Term:
    """The N-Triples form of a literal. Language tags are lower-cased; ``xsd:string`` is dropped
    (RDF 1.1: a simple literal is an xsd:string); ``datatype`` is an N-Triples IRI ``<...>``."""
    chars = []
    for ch in lexical:
        if ch in _NT_ESCAPES:
            chars.append(_NT_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            chars.append(f"\\u{ord(ch):04X}")
        else:
            chars.append(ch)
    text = '"' + "".join(chars) + '"'
    if language is not None:
        return f"{text}@{language.lower()}"
    if datatype is not None and datatype != XSD_STRING:
        return f"{text}^^{datatype}"
    return text

