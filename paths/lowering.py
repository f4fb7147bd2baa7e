"""Syntax tree (``paths.syntax``) → algebra (``paths.algebra``): the desugaring.

Prefixed names are gone (the parser resolved them), ``a`` is rdf:type, an IRI ``:p`` is
``next::p`` (SPARQL 1.1 §18.2.2.4), ``^`` is pushed down to the leaves, ``?`` is an alternative
with an identity, ``e[t]`` is a sequence with a node test and ``[t]`` a node test (CQELS-CEP §3.1,
DESIGN.md "Nested regular expressions"). The nodes are built by the smart constructors of
``paths.algebra``, so the result is simplified as it is built.

``term(node)`` is the N-Triples form of a syntax term; ``cep.lowering.common`` uses it for the terms of a
query, so a term means the same in a query as in a path.
"""
from __future__ import annotations

from paths import syntax as S
from paths.algebra import (XSD_BOOLEAN, Axis, AxisKind, Domain, Identity, Path, SelfTerm, Term,
                           alt, axis, inverse, literal_term, negated_set, opt, plus, seq, star, test)
from rdfcore.vocab import RDF_TYPE, XSD_DECIMAL, XSD_DOUBLE, XSD_INTEGER

__all__ = ["lower", "to_algebra", "term"]


def _iri(value: str) -> Term:
    return f"<{value}>"


def _numeric_datatype(text: str) -> Term:
    # SPARQL 1.1 [130]-[133]: a number with an exponent is a double, with a point a decimal
    if "e" in text or "E" in text:
        return XSD_DOUBLE
    if "." in text:
        return XSD_DECIMAL
    return XSD_INTEGER


def term(node: S.Term) -> Term:
    """The N-Triples form of a syntax term (an IRI, ``a``, a literal, a blank node)."""
    match node:
        case S.IriRef() | S.PrefixedName():
            return _iri(node.value)
        case S.TypeKeyword():
            return RDF_TYPE
        case S.StringLiteral():
            datatype = None if node.datatype is None else _iri(node.datatype.value)
            return literal_term(node.lexical, node.language, datatype)
        case S.NumericLiteral():
            return literal_term(node.text, None, _numeric_datatype(node.text))
        case S.BooleanLiteral():
            return literal_term("true" if node.value else "false", None, XSD_BOOLEAN)
        case S.BlankNode():
            return f"_:{node.label}"
    raise TypeError(f"not a term: {node!r}")


def _nested_test(node: S.NestedTest, zero_length: Domain | None) -> Path:
    inner = _lower(node.path, zero_length)
    if node.term is not None:  # [p t] = [p/self::t]  (DESIGN.md)
        inner = seq(inner, SelfTerm(term(node.term)))
    return test(inner)


_AXIS_KINDS = {kind.value: kind for kind in AxisKind}


def _lower(node: S.PathNode, zero_length: Domain | None) -> Path:
    match node:
        case S.IriRef() | S.PrefixedName() | S.TypeKeyword():
            return Axis(AxisKind.NEXT, False, term(node))      # :p = next::p
        case S.Alternative():
            return alt(*(_lower(option, zero_length) for option in node.options))
        case S.Sequence():
            return seq(*(_lower(step, zero_length) for step in node.steps))
        case S.Inverse():
            return inverse(_lower(node.path, zero_length))    # ^e
        case S.Modified():
            inner = _lower(node.path, zero_length)
            if node.modifier == "+":
                return plus(inner)
            domain = zero_length or (Domain.VOC if S.is_native(node.path) else Domain.NODES)
            return star(inner, domain) if node.modifier == "*" else opt(inner, domain)
        case S.Filtered():                                     # elt[t] = elt/self::[t]
            return seq(_lower(node.path, zero_length), _nested_test(node.test, zero_length))
        case S.TestStep():                                     # [t] = self::[t]
            return _nested_test(node.test, zero_length)
        case S.NegatedPropertySet():                           # SPARQL 1.1 §18.2.2.4
            forward = frozenset(term(m.iri) for m in node.members if not m.inverse)
            backward = frozenset(term(m.iri) for m in node.members if m.inverse)
            parts = []
            if forward or not backward:
                parts.append(negated_set(forward, False))
            if backward:
                parts.append(negated_set(backward, True))
            return alt(*parts)
        case S.EmptyPath():
            return Identity(Domain.NODES)
        case S.AxisStep(axis="self"):
            if node.term is not None:
                return SelfTerm(term(node.term))
            if node.test is not None:
                return test(_lower(node.test, zero_length))
            return Identity(Domain.VOC)
        case S.AxisStep():
            kind = _AXIS_KINDS[node.axis]
            if node.term is not None:
                return axis(kind, node.inverse, term(node.term))
            if node.test is not None:
                return axis(kind, node.inverse, _lower(node.test, zero_length))
            return axis(kind, node.inverse, None)
    raise TypeError(f"not a path syntax node: {node!r}")


def lower(tree: S.PathNode, *, zero_length: Domain | None = None) -> Path:
    """Desugar a syntax tree into the algebra.

    ``*`` and ``?`` get the identity of the dialect their operand is written in: ``Domain.VOC``
    (nSPARQL's ``self``) when the operand contains an nSPARQL axis step, ``Domain.NODES`` (SPARQL
    1.1) otherwise. ``zero_length`` forces one of them for every ``*`` and ``?``.
    """
    if zero_length is not None and not isinstance(zero_length, Domain):
        raise TypeError(f"zero_length must be a Domain or None, got {zero_length!r}")
    return _lower(tree, zero_length)


to_algebra = lower
