"""Column and table names: the only place they are spelled out (DESIGN.md, "Data model").

Joins refer to these constants, never to string literals.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rdfcore.errors import SidecarError

if TYPE_CHECKING:   # names only: the driver engines read these constants without pyspark
    from pyspark.sql import DataFrame

# triples (encoded: long ids; decoded: N-Triples strings)
S, P, O = "s", "p", "o"
# dictionary
ID, TERM = "id", "term"
# closure tables
SUB, SUP = "sub", "sup"
INSTANCE, CLASS = "instance", "class"
PROPERTY = "property"
# intervals of mappings and stream items
T_START, T_END = "t_start", "t_end"
# reject outputs
FILE, LINE, REASON, RAW = "file", "line", "reason", "raw"
# GraphFrames' fixed column names (its API: vertices ``id``, edges ``src``/``dst``, SCC ``component``)
GF_ID, GF_SRC, GF_DST, GF_COMPONENT = "id", "src", "dst", "component"
# scratch columns of the reasoner's own joins, never published
MID = "_mid"  # the shared middle node of a composition (a, mid), (mid, c)
KNOWN = "_known"  # whether a candidate pair was already in the closure
ANCESTORS, OLD_ANCESTORS, GOT = "anc", "old", "got"  # GraphFrames ancestor-set propagation
COMP_SUB, COMP_SUP, CYCLIC = "cs", "cd", "c"  # component-level pairs, components on a cycle

SUBCLASS = "subclass"
SUBPROPERTY = "subproperty"
TYPES = "types"
TRANSITIVE = "transitive"
INFERRED = "inferred"
DICTIONARY = "dictionary"
REJECTS = "rejects"

#: Columns of each table the reasoner publishes, in order.
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    SUBCLASS: (SUB, SUP),
    SUBPROPERTY: (SUB, SUP),
    TYPES: (INSTANCE, CLASS),
    TRANSITIVE: (PROPERTY, S, O),
    INFERRED: (S, P, O),
    DICTIONARY: (ID, TERM),
}
#: Columns holding term ids (decoded through the dictionary).
TERM_COLUMNS: dict[str, tuple[str, ...]] = {
    name: cols for name, cols in TABLE_COLUMNS.items() if name != DICTIONARY
}


#: The id columns (``xxhash64`` of ``s``, ``p``, ``o``: ``rdfcore.dictionary.encode_column``) a staged read (``rdfcore.loading``)
#: keeps beside the terms, so that encoding the triples reads longs instead of hashing strings.
ID_COLUMNS = ("_sid", "_pid", "_oid")


class MissingColumnsError(SidecarError, ValueError):
    """A DataFrame lacks columns an operation needs."""


def require_columns(df: DataFrame, columns: Iterable[str], what: str) -> None:
    """Raise naming the missing columns and listing the present ones."""
    present = list(df.columns)
    missing = [c for c in columns if c not in present]
    if missing:
        raise MissingColumnsError(
            f"{what}: missing column(s) {', '.join(missing)}; the DataFrame has {', '.join(present) or 'no columns'}"
        )
