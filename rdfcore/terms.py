"""RDF terms as N-Triples strings: conversion from rdflib terms, small predicates, and the writer of
an N-Triples file (:func:`write_ntriples`).

The canonical form follows RDF 1.1 N-Triples: IRIs in angle brackets, literals with only
``"``, ``\\``, LF and CR escaped, ``xsd:string`` literals written as simple literals, language
tags lower-cased (as rdflib normalises them).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rdflib import BNode, Literal, URIRef
from rdflib.term import Node

from rdfcore.vocab import XSD_STRING

_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


def literal(lexical: str, *, lang: str | None = None, datatype: str | None = None) -> str:
    """N-Triples form of a literal; ``datatype`` is given in N-Triples form (``<iri>``)."""
    body = '"' + lexical.translate(_ESCAPES) + '"'
    if lang:
        return f"{body}@{lang.lower()}"
    if datatype and datatype != XSD_STRING:
        return f"{body}^^{datatype}"
    return body


def from_rdflib(node: Node, bnode_scope: str = "") -> str:
    """N-Triples form of an rdflib term; blank-node labels get ``bnode_scope`` as a prefix."""
    if isinstance(node, URIRef):
        return f"<{node}>"
    if isinstance(node, BNode):
        return f"_:{bnode_scope}{node}"
    if isinstance(node, Literal):
        return literal(str(node), lang=node.language, datatype=f"<{node.datatype}>" if node.datatype else None)
    raise TypeError(f"not an RDF term: {node!r} ({type(node).__name__})")


def write_ntriples(out_path: str | Path, lines: Sequence[str], header: str = "") -> int:
    """Write an N-Triples file: ``header`` (comment lines, each ending in a newline), then ``lines``
    (triples, each ending in a newline) as they are, UTF-8 with LF line ends; returns the triple count."""
    with open(out_path, "w", encoding="utf-8", newline="\n") as out:
        out.write(header)
        out.writelines(lines)
    return len(lines)
