"""Triple patterns matched against DataFrames of triples (columns s, p, o of term ids): the
primitives every Spark operator that reads stream items or graphs builds on."""
from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cep import algebra as A
from cep.engines.columns import var_column
from rdfcore.hashing import term_id
from rdfcore.schema import O, P, S

__all__ = ["triple_match", "triple_part", "non_null"]


def triple_match(tp: A.TriplePattern) -> tuple[Column, dict[str, str]]:
    """The condition a triple (columns s, p, o) meets to match ``tp`` — constants compared by id,
    a repeated variable compared within the triple, every variable's column not null — and
    {variable name: the column that binds it}."""
    cond = F.lit(True)
    first: dict[str, str] = {}
    for part, column in ((tp.s, S), (tp.p, P), (tp.o, O)):
        if isinstance(part, A.Var):
            if part.name in first:
                cond = cond & (F.col(column) == F.col(first[part.name]))
            else:
                first[part.name] = column
                cond = cond & F.col(column).isNotNull()
        else:
            cond = cond & (F.col(column) == F.lit(term_id(part)))
    return cond, first


def triple_part(tp: A.TriplePattern, triples: DataFrame, keep: tuple[str, ...]) -> DataFrame:
    """The matches of one triple pattern: constants compared by id, a repeated variable compared
    within the triple, one column per variable (filtered not null and marked non-nullable, see
    ``non_null``, so later joins on it are plain equi-joins); ``keep``: extra columns kept."""
    cond, first = triple_match(tp)
    cols = [non_null(column).alias(var_column(name)) for name, column in first.items()]
    return triples.filter(cond).select(*keep, *cols)


def non_null(column: str) -> Column:
    """``column`` after a ``isNotNull`` filter, marked non-nullable in the DataFrame's schema.

    Spark clears the nullable flag of a filtered column only in the physical plan; the coalesce
    (whose default is never taken: the rows with a null are gone) clears it in the schema, which
    is what ``cep.engines.spark.intervals`` reads to join on plain equality (a hash/sort-merge key) instead of
    the null-aware compatibility test.
    """
    return F.coalesce(F.col(column), F.lit(0).cast("long"))
