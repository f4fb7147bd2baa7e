"""Python API over DataFrames: close a graph given as N-Triples strings, get decoded tables.

    from reasoner.api import closure_tables
    tables = closure_tables(triples_df)            # triples_df: (s, p, o) N-Triples strings
    tables["types"].filter(...)                    # (instance, class) strings

For the versioned, published tables use ``reasoner.publish.materialize_sources`` and
``reasoner.store.open_version``.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rdfcore.dictionary import build_dictionary, decode, encode_triples
from reasoner.materialize import Closure, materialize
from rdfcore.schema import ID, INFERRED, O, P, S, SUBCLASS, SUBPROPERTY, TERM, TERM_COLUMNS, TRANSITIVE, TYPES, require_columns


def encoded_closure(triples: DataFrame, strategy: str = "dataframe") -> tuple[Closure, DataFrame]:
    """Close string triples; returns the id-encoded closure and the dictionary."""
    require_columns(triples, (S, P, O), "closure_tables")
    dictionary = build_dictionary(triples)
    literals = dictionary.filter(F.col(TERM).startswith('"')).select(ID)
    return materialize(encode_triples(triples), literals, strategy=strategy), dictionary


def closure_tables(triples: DataFrame, strategy: str = "dataframe") -> dict[str, DataFrame]:
    """The reasoner's tables for string triples ``(s, p, o)``, decoded to N-Triples strings."""
    closure, dictionary = encoded_closure(triples, strategy)
    tables = {SUBCLASS: closure.subclass, SUBPROPERTY: closure.subproperty, TYPES: closure.types,
              TRANSITIVE: closure.transitive, INFERRED: closure.inferred}
    return {name: decode(df, dictionary, TERM_COLUMNS[name]) for name, df in tables.items()}
