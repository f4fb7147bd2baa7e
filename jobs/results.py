"""Writers for the W3C SPARQL 1.1 Query Results formats: TSV, CSV and JSON.

    write_results(rows, variables, fmt, out)

``rows`` is an iterable of dicts mapping a variable name (without ``?``) to an RDF term in
N-Triples form (``<iri>``, ``_:label``, ``"lexical"``, ``"lexical"@lang``, ``"lexical"^^<dt>``)
or to ``None``; ``None`` or a missing key means *unbound*. ``out`` is a text stream. Rows are
written as they come (nothing is buffered), so a Spark ``toLocalIterator()`` can feed them.

* ``tsv`` — *SPARQL 1.1 Query Results CSV and TSV Formats* §3 (W3C Rec. 2013-03-21): a header of
  the variables with their ``?``, tab-separated; each term in Turtle / N-Triples syntax (IRIs in
  ``<>``, literals quoted with their language tag or datatype, blank nodes ``_:label``); tab, LF
  and CR inside a literal are written as the escapes ``\\t``, ``\\n``, ``\\r``; unbound is an
  empty field; lines end with LF.
* ``csv`` — the same Recommendation, §2: a header of the bare variable names; each term as a
  plain value (an IRI without ``<>``, a literal's lexical form only — its language tag and
  datatype are lost, as the format specifies —, a blank node ``_:label``); a field containing a
  double quote, comma, CR or LF is quoted per RFC 4180 (``"`` doubled); unbound is an empty
  field; lines end with CRLF (RFC 4180).
* ``json`` — *SPARQL 1.1 Query Results JSON Format* (W3C Rec. 2013-03-21), media type
  ``application/sparql-results+json``: ``{"head": {"vars": [...]}, "results": {"bindings":
  [...]}}``; each bound variable maps to ``{"type": "uri"|"literal"|"bnode", "value": ...}``
  with ``"xml:lang"`` or ``"datatype"`` on literals (a simple literal has neither); an unbound
  variable is absent from its binding.

Escapes inside N-Triples terms (``\\"``, ``\\n``, ``\\uXXXX``, ...) are decoded to the characters
they stand for before a value is written as CSV or JSON.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TextIO

__all__ = ["FORMATS", "MEDIA_TYPES", "ResultTerm", "parse_term", "write_results"]

FORMATS = ("tsv", "csv", "json")
MEDIA_TYPES = {
    "tsv": "text/tab-separated-values",
    "csv": "text/csv",
    "json": "application/sparql-results+json",
}

_VARNAME = re.compile(r"^[A-Za-z0-9_\u00B7\u00C0-\uFFFF][A-Za-z0-9_\u00B7\u00C0-\uFFFF]*$")
# N-Triples productions (RDF 1.1 N-Triples [10] IRIREF, [141s] BLANK_NODE_LABEL, [6] LITERAL).
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([tbnrf\"'\\]))")
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_LITERAL = re.compile(r'^"((?:[^"\\]|\\.)*)"(?:@([A-Za-z]+(?:-[A-Za-z0-9]+)*)|\^\^<([^<>]*)>)?$', re.S)


@dataclass(frozen=True)
class ResultTerm:
    """An RDF term taken apart: ``kind`` in {"uri", "literal", "bnode"}; ``value`` is the IRI,
    the literal's lexical form or the blank-node label (without ``_:``), escapes decoded."""

    kind: str
    value: str
    lang: str | None = None
    datatype: str | None = None


def _unescape(text: str) -> str:
    def one(match: re.Match) -> str:
        if match.group(3):
            return _ECHAR[match.group(3)]
        return chr(int(match.group(1) or match.group(2), 16))

    return _ESCAPE.sub(one, text)


def parse_term(term: str) -> ResultTerm:
    """Take an N-Triples term apart; raises ``ValueError`` for anything that is not a term."""
    if not isinstance(term, str):
        raise ValueError(f"expected an RDF term in N-Triples form, got {term!r} ({type(term).__name__})")
    if term.startswith("<") and term.endswith(">") and len(term) >= 2 and ">" not in term[1:-1]:
        return ResultTerm("uri", _unescape(term[1:-1]))
    if term.startswith("_:") and len(term) > 2 and not any(c.isspace() for c in term):
        return ResultTerm("bnode", term[2:])
    match = _LITERAL.match(term)
    if match:
        lexical, lang, datatype = match.groups()
        return ResultTerm("literal", _unescape(lexical), lang.lower() if lang else None,
                          _unescape(datatype) if datatype is not None else None)
    raise ValueError(f"expected an RDF term in N-Triples form (<iri>, _:label or \"literal\"), got {term!r}")


def _tsv_term(term: str) -> str:
    """A term in the Turtle syntax the TSV format asks for (tab/LF/CR escaped in literals)."""
    parsed = parse_term(term)  # validates
    if parsed.kind != "literal":
        return term
    return term.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _csv_field(value: str) -> str:
    if any(c in value for c in '",\r\n'):
        return '"' + value.replace('"', '""') + '"'
    return value


def _csv_term(term: str) -> str:
    parsed = parse_term(term)
    if parsed.kind == "bnode":
        return _csv_field("_:" + parsed.value)
    return _csv_field(parsed.value)


def _json_term(term: str) -> dict[str, str]:
    parsed = parse_term(term)
    out = {"type": parsed.kind, "value": parsed.value}
    if parsed.lang:
        out["xml:lang"] = parsed.lang
    elif parsed.datatype is not None:
        out["datatype"] = parsed.datatype
    return out


def _variables(variables: Sequence[str]) -> list[str]:
    names = [v[1:] if v[:1] in ("?", "$") else v for v in variables]
    for name in names:
        if not _VARNAME.match(name):
            raise ValueError(f"not a SPARQL variable name: {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate variable names in {names!r}")
    return names


def _value(row: Mapping[str, str | None], name: str) -> str | None:
    try:
        return row.get(name)
    except AttributeError:
        raise ValueError(f"expected each row to be a dict of variable -> term, got {row!r}") from None


def write_results(rows: Iterable[Mapping[str, str | None]], variables: Sequence[str], fmt: str,
                  out: TextIO) -> int:
    """Write ``rows`` as SPARQL 1.1 query results in ``fmt`` to ``out``; returns the row count.

    A row's keys that are not among ``variables`` are ignored (a projection), ``None`` and missing
    keys are unbound. A value that is not an N-Triples term raises ``ValueError``.
    """
    names = _variables(variables)
    count = 0
    if fmt == "tsv":
        out.write("\t".join("?" + n for n in names) + "\n")
        for row in rows:
            cells = []
            for name in names:
                value = _value(row, name)
                cells.append("" if value is None else _tsv_term(value))
            out.write("\t".join(cells) + "\n")
            count += 1
    elif fmt == "csv":
        out.write(",".join(_csv_field(n) for n in names) + "\r\n")
        for row in rows:
            cells = []
            for name in names:
                value = _value(row, name)
                cells.append("" if value is None else _csv_term(value))
            out.write(",".join(cells) + "\r\n")
            count += 1
    elif fmt == "json":
        out.write('{"head": {"vars": ' + json.dumps(names, ensure_ascii=False) + '}, "results": {"bindings": [')
        for row in rows:
            binding = {}
            for name in names:
                value = _value(row, name)
                if value is not None:
                    binding[name] = _json_term(value)
            out.write(("," if count else "") + "\n  " + json.dumps(binding, ensure_ascii=False))
            count += 1
        out.write(("\n" if count else "") + "]}}\n")
    else:
        raise ValueError(f"unknown results format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return count
