"""Navigational path queries: SPARQL 1.1 property paths and nSPARQL nested regular expressions.

Three trees, three modules (DESIGN.md "Engineering rules"):

* ``paths/grammar.lark`` + ``paths.parser.parse`` — text → syntax tree (``paths.syntax``, frozen
  dataclasses with source spans); errors are :class:`PathSyntaxError` with line and column;
* ``paths.lowering.lower`` — syntax tree → algebra (``paths.algebra``: closed set of frozen
  dataclasses built by simplifying smart constructors; ``str()`` is nSPARQL native syntax);
* evaluation: ``paths.reference.evaluate`` (pure Python, the semantics written out literally: the
  oracle for tests); ``paths.compiler`` (how to compute a path for the binding of its ends) run by
  one of two executors — ``paths.spark`` (iterative Spark joins over an id-encoded graph) or
  ``paths.local`` (array operations on an in-memory index of it, for small graphs).
  ``paths.spark.evaluate`` picks one (``engine="auto"``) and is exported here as ``evaluate``
  together with ``PathGraph``. The front end (parser, syntax, algebra, reference, named) does not
  import pyspark; ``evaluate``/``PathGraph`` import ``paths.spark`` (and so pyspark) on first use.

``paths.named`` holds the nSPARQL RDFS expressions (``SC_STAR``, ``TYPE``, ...).

    >>> from paths import parse, lower
    >>> str(lower(parse("^:beg/[:means :subway]", {"": "http://ex/"})))
    'next^-1::<http://ex/beg>/self::[next::<http://ex/means>/self::<http://ex/subway>]'
"""
from paths.lowering import lower
from paths.parser import PathSyntaxError, parse

__all__ = ["parse", "lower", "PathSyntaxError", "evaluate", "PathGraph", "PathIterationLimit"]

_SPARK_NAMES = ("evaluate", "PathGraph", "PathIterationLimit")


def __getattr__(name):  # PEP 562: the Spark compiler is imported lazily
    if name in _SPARK_NAMES:
        from paths import spark

        return getattr(spark, name)
    raise AttributeError(f"module 'paths' has no attribute {name!r}")
