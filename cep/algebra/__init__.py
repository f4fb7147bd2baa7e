"""The CQELS-CEP algebra, the one tree every language lowers to and every engine evaluates: graph
and event patterns (``patterns``), FILTER expressions (``expressions``), windows (``windows``) and
time (``timeline``). This package is the whole algebra to its users (``from cep import algebra as
A``): it exports what ``patterns`` lists, which includes the expressions and the windows."""
from cep.algebra.patterns import *  # noqa: F401,F403
from cep.algebra.patterns import __all__  # noqa: F401
