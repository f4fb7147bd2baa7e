"""Engines that evaluate the algebra: ``reference`` (the tests' oracle: pure Python, literal
definitions), ``spark`` (Spark plans) and ``driver`` (the lifetimes operators over Python rows and
numpy columns), with what they share: the protocol of their operator sets (``protocol``), column
names (``columns``), evaluation errors (``errors``) and EP-SPARQL's rule closure (``rules``)."""
