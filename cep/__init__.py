"""CQELS-CEP: continuous queries with windows, event sequences (SEQ with one negated element) and
nested regular expressions (Dao-Tran & Le-Phuoc, HiDeSt 2015; ../shared/papers/002_...); and
EP-SPARQL (Anicic et al., WWW 2011; ../shared/papers/000_...): SEQ, EQUALS, OPTIONALSEQ and
EQUALSOPTIONAL between graph patterns over a stream, getDURATION() & co. in FILTER. Both parse with
one grammar and lower to one algebra (``cep.lowering.languages.detect_language``, or ``lang=``).

Three trees, three modules (DESIGN.md "Engineering rules"):

* ``cep/syntax/grammar.lark`` + ``cep.parse`` — text → syntax tree (``cep.syntax.tree``, frozen dataclasses with
  spans); the grammar imports the path rules of ``paths/grammar.lark``. Errors are
  :class:`CepSyntaxError` with line, column and what was expected;
* ``cep.lowering`` (one module per language; ``cep.lower``) / ``cep.compile`` — syntax tree / text → algebra
  ``cep.algebra.patterns.Query`` per the paper's equations (1)-(17); errors of meaning are
  :class:`CepSemanticError` (line, column);
* runtimes of the algebra (``cep.engines.reference``, ``cep.engines.spark.evaluate.evaluate``); the SPARQL 1.1 patterns every
  front end shares (MINUS, VALUES, [NOT] EXISTS, sub-queries, GRAPH, BIND) are algebra nodes too,
  with their Spark operators in ``cep.engines.spark.graphpatterns`` and BIND's exact term values in ``cep.terms.numbers``.

The front end (parser, syntax, algebra, lower) does not import pyspark.
"""
from cep.algebra import Query
from cep.lowering.languages import compile_query, lower
from cep.planner import rewrite
from cep.planner.explain import explain as explain_text
from cep.syntax.parser import CepSemanticError, CepSyntaxError, parse

compile = compile_query  # noqa: A001 - the name the issue asks for; shadows the builtin only here

__all__ = ["parse", "lower", "compile", "compile_query", "CepSyntaxError", "CepSemanticError", "evaluate", "explain"]


def explain(query, lang: str | None = None) -> str:
    """The plan of ``query`` (text or ``cep.algebra.Query``) as ``query --explain`` prints it,
    without the engine: as written, as the planner rewrites it (``cep.planner``) and why."""
    if not isinstance(query, Query):
        query = compile_query(query, lang=lang)
    return explain_text(rewrite(query))


def __getattr__(name):  # PEP 562: the Spark runtime is imported only when asked for
    if name == "evaluate":
        from cep.engines.spark.evaluate import evaluate

        return evaluate
    raise AttributeError(f"module 'cep' has no attribute {name!r}")
