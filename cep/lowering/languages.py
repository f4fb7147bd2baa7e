"""Syntax tree (``cep.syntax.tree``) → algebra (``cep.algebra.patterns``), with the checks the grammar
cannot do.

The entry points: ``detect_language`` reads which of the four languages a query is written in,
``lower`` refuses another language's constructs under the one given (or detected) and hands the
tree to that language's lowering, one module each: ``cep.lowering.cqels`` (CQELS-CEP),
``cep.lowering.csparql`` (C-SPARQL), ``cep.lowering.epsparql`` (EP-SPARQL) and
``cep.lowering.rsepql`` (RSEP-QL), with what they share in ``cep.lowering.common``.
``compile_query`` parses the text first.
"""
from __future__ import annotations

from collections.abc import Mapping

from cep import algebra as A
from cep.lowering.common import LANGUAGE_NAMES, error, group_elements
from cep.lowering.cqels import CqelsLowering
from cep.lowering.csparql import CsparqlLowering, csparql_parts
from cep.lowering.epsparql import EpsparqlLowering, ep_chains
from cep.lowering.rsepql import RsepqlLowering
from cep.syntax import tree as S
from cep.syntax.parser import parse

__all__ = ["lower", "compile_query", "LANGUAGES", "detect_language"]

#: the query languages ``lower`` reads
LANGUAGES = ("cqels", "csparql", "epsparql", "rsepql")


def detect_language(tree: S.Query) -> str:
    """"csparql" for a query with REGISTER, FROM STREAM or AGGREGATE; "rsepql" for one with a
    MATCH event pattern; "epsparql" for one that combines groups with EP-SPARQL's operators and
    has no window; else "cqels"."""
    if csparql_parts(tree):
        return "csparql"
    if any(isinstance(e, S.MatchPattern) for e in group_elements(tree.where)):
        return "rsepql"
    windows = any(isinstance(d, S.FromWindow) for d in tree.datasets) or any(
        isinstance(e, (S.WindowBlock, S.EventSequence)) for e in group_elements(tree.where))
    return "epsparql" if ep_chains(tree) and not windows else "cqels"


def lower(tree: S.Query, lang: str | None = None, policy: str = "unrestricted") -> A.Query:
    """Lower a parsed query (``cep.parse``) to the algebra, per equations (1)-(17) of
    CQELS-CEP, §4.2 of EP-SPARQL or §3-4 of RSEP-QL (``lang``: "cqels", "epsparql", "rsepql", or
    None to detect it, :func:`detect_language`); ``policy``: the selection policy of an RSEP-QL
    MATCH that names none. Raises :class:`cep.syntax.parser.CepSemanticError` for the errors the
    language modules list."""
    if not isinstance(tree, S.Query):
        raise TypeError(f"lower() takes a cep.syntax.tree.Query, not {type(tree).__name__}")
    if policy not in A.POLICIES:
        raise ValueError(f"unknown selection policy {policy!r}; expected one of {', '.join(A.POLICIES)}")
    if lang is None:
        lang = detect_language(tree)
    if lang not in LANGUAGES:
        raise ValueError(f"unknown query language {lang!r}; expected one of {', '.join(LANGUAGES)}")
    if lang == "csparql":
        return CsparqlLowering(tree).query()
    for part in csparql_parts(tree):
        raise error(tree.text, part, f"REGISTER, FROM STREAM and AGGREGATE are C-SPARQL's, and this query is read "
                    f"as {LANGUAGE_NAMES[lang]} (--lang {lang}); leave --lang out or pass --lang csparql")
    if lang == "epsparql":
        return EpsparqlLowering(tree).query()
    for element in group_elements(tree.where):
        if lang == "cqels" and isinstance(element, S.MatchPattern):
            raise error(tree.text, element, "MATCH is RSEP-QL's event graph pattern, and this query is read "
                        "as CQELS-CEP (--lang cqels); leave --lang out or pass --lang rsepql")
        if lang == "rsepql" and isinstance(element, S.EventSequence):
            raise error(tree.text, element, "CQELS-CEP's SEQ(...) clauses cannot be mixed with RSEP-QL's MATCH "
                        "(in RSEP-QL, E1 SEQ E2 goes inside MATCH)", ("MATCH ( ... )",))
    if lang == "rsepql":
        return RsepqlLowering(tree, policy).query()
    return CqelsLowering(tree).query()


def compile_query(text: str, prefixes: Mapping[str, str] | None = None,
                  base: str | None = None, lang: str | None = None,
                  policy: str = "unrestricted") -> A.Query:
    """``lower(parse(text, prefixes, base), lang, policy)``: query text → algebra Query."""
    return lower(parse(text, prefixes, base), lang, policy)
