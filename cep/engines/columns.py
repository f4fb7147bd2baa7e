"""Column names of mappings with intervals (CQELS-CEP §4.2): the only place they are spelled out.

A mapping with interval ``<μ, [t1, t2]>`` is one DataFrame row: one ``long`` column per variable
(the term id, ``null`` = unbound) plus ``T_START`` (t1) and ``T_END`` (t2), reused from
``rdfcore.schema``. A variable's column is ``var_column(name)``.

``var_column`` is injective and its image never meets ``T_START``/``T_END`` nor the scratch
columns of the operators (``scratch(...)``, which start with ``_``). Spark resolves column names
case-insensitively by default while SPARQL variables are case-sensitive (``?x`` and ``?X`` are two
variables), so the column name is lower-case ASCII only:

* ``v_`` prefix, then per character of the name:
* ``a-z`` and ``0-9`` as they are; ``_`` as ``__``; an upper-case ASCII letter ``X`` as ``_x``;
* any other character (SPARQL allows non-ASCII letters in names) as ``_<decimal code point>_``.

After a ``_`` the next character tells the cases apart (``_``, a letter or a digit), so
``column_var`` decodes every column name back to its variable.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rdfcore.schema import O, P, S, T_END, T_START

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["T_START", "T_END", "ITEM", "STREAM_COLUMNS", "VAR_PREFIX", "var_column", "column_var",
           "is_var_column", "var_columns", "scratch", "LIFE_FROM", "LIFE_TO", "INSTANT"]

VAR_PREFIX = "v_"
#: the stream-item column of a stream DataFrame ``(item, s, p, o, t_start, t_end)`` (the triples
#: of one item share it; a BGP in a window matches inside one item, eq. 16)
ITEM = "item"
#: the columns of a stream DataFrame, in order: one row per triple of a stream item <g, [t1, t2]>
#: (§4.1), the item's id and interval repeated on each of its triples
STREAM_COLUMNS = (ITEM, S, P, O, T_START, T_END)
_SCRATCH = "_"
#: the lifetime of a row in the continuous runtime (``cep.engines.spark.lifetimes``): the instants
#: LIFE_FROM ≤ t ≤ LIFE_TO at which the row is in the result
LIFE_FROM, LIFE_TO = "life_from", "life_to"


def var_column(name: str) -> str:
    """The column holding variable ``name`` (without ``?``/``$``)."""
    if not name:
        raise ValueError("a variable needs a non-empty name")
    out = [VAR_PREFIX]
    for ch in name:
        if "a" <= ch <= "z" or "0" <= ch <= "9":
            out.append(ch)
        elif ch == "_":
            out.append("__")
        elif "A" <= ch <= "Z":
            out.append("_" + ch.lower())
        else:
            out.append(f"_{ord(ch)}_")
    return "".join(out)


#: the evaluation instant a row belongs to, in a plan that evaluates many instants at once
#: (``cep.engines.spark.keyed``): a variable column no query can name ('·' cannot start a SPARQL
#: variable name), so the operators carry it as they carry a variable. It is not part of the
#: solution: what is drawn from a solution's hash (RAND(), BNODE(), ...) leaves it out.
INSTANT = var_column("·at")


def is_var_column(column: str) -> bool:
    """Whether ``column`` is the column of some variable."""
    return column.startswith(VAR_PREFIX) and len(column) > len(VAR_PREFIX)


def column_var(column: str) -> str:
    """The variable name of a ``var_column`` (its inverse); ValueError for any other column."""
    if not is_var_column(column):
        raise ValueError(f"{column!r} is not a variable column (they start with {VAR_PREFIX!r})")
    text, out, i = column[len(VAR_PREFIX):], [], 0
    while i < len(text):
        ch = text[i]
        if ch != "_":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= len(text):
            raise ValueError(f"{column!r}: dangling escape")
        nxt = text[i + 1]
        if nxt == "_":
            out.append("_")
            i += 2
        elif "a" <= nxt <= "z":
            out.append(nxt.upper())
            i += 2
        elif nxt.isdigit():
            end = text.index("_", i + 1)
            out.append(chr(int(text[i + 1:end])))
            i = end + 1
        else:
            raise ValueError(f"{column!r}: bad escape at {i}")
    return "".join(out)


def var_columns(df: DataFrame) -> list[str]:
    """The variable columns of a DataFrame of mappings, in their order in ``df``."""
    return [c for c in df.columns if is_var_column(c)]


def scratch(*parts: str) -> str:
    """A scratch column name for operator internals (never a variable column, never T_START/T_END)."""
    return _SCRATCH + "_".join(parts)
