"""RDF literals in N-Triples form: the XSD datatype tables and the literal syntax both CEP runtimes
use (``cep.filters`` on Spark columns, ``cep.reference`` in pure Python). Pure Python, no pyspark.

A literal term is ``"lexical form"`` (N-Triples escapes inside), then ``@lang`` or
``^^<datatype IRI>`` or nothing (RDF 1.1 Concepts §3.3; N-Triples grammar [9] ``literal``). Its
datatype is ``rdf:langString`` with a language tag, else the given IRI, else ``xsd:string``.

Numeric literals (SPARQL 1.1 §17.1 "numeric") are those of :data:`NUMERIC_DATATYPES`: xsd:integer,
decimal, double, float and the types derived from xsd:integer; their value is the lexical form
parsed as a double.

:data:`LITERAL_PATTERN` is one regular expression in the syntax Python's ``re`` and Java's
``java.util.regex`` (Spark's ``rlike``/``regexp_extract``) read alike; groups: 1 the escaped lexical
form, 2 the language tag, 3 the datatype IRI. :data:`LITERAL_RE` compiles it for Python and
:data:`LITERAL_JAVA_RE` is the same text with the DOTALL flag inline, for Spark.
"""
from __future__ import annotations

import re

from reasoner.vocab import RDF_NS, XSD_NS

__all__ = [
    "XSD", "XSD_STRING", "XSD_BOOLEAN", "RDF_LANGSTRING", "NUMERIC_DATATYPES",
    "LITERAL_PATTERN", "LITERAL_RE", "LITERAL_JAVA_RE", "ESCAPES", "unescape", "parse_literal", "numeric_value",
]

# datatype IRIs as they appear between ``^^<`` and ``>`` (bare; ``reasoner.vocab`` has N-Triples forms)
XSD = XSD_NS
XSD_STRING = XSD + "string"
XSD_BOOLEAN = XSD + "boolean"
RDF_LANGSTRING = RDF_NS + "langString"

#: the numeric datatypes of SPARQL 1.1 §17.1 (xsd:integer, decimal, float, double and the types
#: derived from xsd:integer), as full IRIs
NUMERIC_DATATYPES = frozenset(XSD + n for n in (
    "integer", "decimal", "double", "float", "int", "long", "short", "byte", "nonNegativeInteger",
    "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedLong", "unsignedInt",
    "unsignedShort", "unsignedByte"))

#: an N-Triples literal: (1) escaped lexical form, then (2) @lang or (3) ^^<datatype>
LITERAL_PATTERN = r'^"(.*)"(?:@([A-Za-z0-9-]+)|\^\^<([^>]*)>)?$'
LITERAL_RE = re.compile(LITERAL_PATTERN, re.S)
LITERAL_JAVA_RE = "(?s)" + LITERAL_PATTERN

#: N-Triples ECHAR escapes (grammar [153s]) and the characters they stand for
ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "'": "'"}


def unescape(lex: str) -> str:
    """The N-Triples escapes of :data:`ESCAPES` undone (``\\uXXXX`` and unknown ones kept as written)."""
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), "\\" + m.group(1)), lex)


def parse_literal(term: str):
    """(lexical form unescaped, language or None, datatype IRI) of a literal term, else None."""
    m = LITERAL_RE.match(term) if isinstance(term, str) else None
    if not m:
        return None
    lex, lang, dt = m.group(1), m.group(2), m.group(3)
    return unescape(lex), (lang or None), (RDF_LANGSTRING if lang else dt or XSD_STRING)


def numeric_value(term) -> float | None:
    """The value of a numeric literal (by datatype, lexical form parsed as a double), else None."""
    lit = parse_literal(term)
    if lit is None or lit[2] not in NUMERIC_DATATYPES:
        return None
    try:
        return float(lit[0])
    except ValueError:
        return None
