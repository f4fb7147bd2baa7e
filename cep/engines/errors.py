"""Expected failures of evaluating a CQELS-CEP query (both runtimes, ``cep.engines.spark.evaluate`` and
``cep.engines.reference``): the inputs given do not fit the query, or the query asks for something the
runtime does not evaluate. Syntax and meaning errors found before anything runs are
``cep.CepSyntaxError`` / ``cep.CepSemanticError``.

Each class derives from ``rdfcore.errors.SidecarError`` and from the built-in class callers caught
before (``KeyError``, ``ValueError``, ``NotImplementedError``), so both ways of catching work.
"""
from __future__ import annotations

from rdfcore.errors import SidecarError

__all__ = ["CepEvaluationError", "CepInputError", "MissingInputError", "DictionaryRequiredError",
           "UnsupportedQueryError"]


class CepEvaluationError(SidecarError):
    """A query that cannot be evaluated."""


class CepInputError(CepEvaluationError, ValueError):
    """The inputs given to ``evaluate`` do not fit the query (none at all, one missing, no dictionary)."""


class MissingInputError(CepInputError, KeyError):
    """A stream or background graph the query reads was not given to ``evaluate`` (the message
    names it and lists those given)."""

    def __str__(self) -> str:  # KeyError's str() is the repr of its argument; keep the message as written
        return str(self.args[0]) if self.args else ""


class DictionaryRequiredError(CepInputError):
    """A FILTER inspects term values (numbers, strings, REGEX, ...) but no dictionary (id, term) was
    given to decode the ids."""


class UnsupportedQueryError(CepEvaluationError, NotImplementedError):
    """A query part the runtime does not evaluate (a property path inside a WINDOW, a blank node in
    a CONSTRUCT template, a REGEX whose pattern or flags are not constant strings)."""
