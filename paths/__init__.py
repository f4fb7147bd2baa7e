"""Navigational path queries: SPARQL 1.1 property paths and nSPARQL nested regular expressions.

Three trees, three modules (DESIGN.md "Engineering rules"):

* ``paths/grammar.lark`` + ``paths.parser.parse`` — text → syntax tree (``paths.syntax``, frozen
  dataclasses with source spans); errors are :class:`PathSyntaxError` with line and column;
* ``paths.algebra.lower`` — syntax tree → algebra (``paths.algebra``: closed set of frozen
  dataclasses built by simplifying smart constructors; ``str()`` is nSPARQL native syntax);
* compilers of the algebra: ``paths.reference.evaluate`` (pure Python, the oracle for tests) and,
  later, the Spark compiler, whose ``evaluate`` will be exported from here. The front end (parser,
  syntax, algebra, reference, named) does not import pyspark.

``paths.named`` holds the nSPARQL RDFS expressions (``SC_STAR``, ``TYPE``, ...).

    >>> from paths import parse, lower
    >>> str(lower(parse("^:beg/[:means :subway]", {"": "http://ex/"})))
    'next^-1::<http://ex/beg>/self::[next::<http://ex/means>/self::<http://ex/subway>]'
"""
from paths.algebra import lower
from paths.parser import PathSyntaxError, parse

__all__ = ["parse", "lower", "PathSyntaxError"]
