"""The reference's Python functions run row by row over Arrow batches, where Spark SQL cannot give
their semantics (XPath's exact integers and decimals, which Spark's decimals round): BIND's term
(``cep.engines.spark.evaluate``) and FILTER's computed numbers (``cep.engines.spark.filters``) are
computed by :func:`evaluate_rows`, a ``mapInArrow`` over the decoded terms.

Each row is evaluated under the evaluation instant (NOW(); in a plan keyed by the instant, the
row's own) and the row's :func:`solution_seed` (what RAND(), UUID(), STRUUID() and BNODE() draw from), set in ``cep.terms.values``' context variables.
Spark pickles the function it runs on the executors (cloudpickle); a ContextVar cannot be pickled,
so those variables and the module's other singletons are read through the module
(``V.EVALUATION_INSTANT``), never captured in a closure.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from cep import algebra as A
from cep.engines.columns import INSTANT, T_END, T_START, column_var, is_var_column, scratch, var_column
from cep.terms import values as V

__all__ = ["evaluate_rows", "solution_seed"]


def solution_seed(columns) -> Column:
    """``cep.terms.values.solution_hash`` of each row: Spark's ``xxhash64`` chained over the variable
    columns by variable name (a null, an unbound variable, skipped) and the interval's ends. A
    plan keyed by the instant (``INSTANT``) draws the values one evaluation at that instant draws:
    the instant is not part of the solution."""
    names = sorted(column_var(c) for c in columns if is_var_column(c) and c != INSTANT)
    interval = [F.col(c) for c in (T_START, T_END) if c in columns]
    return F.xxhash64(*[F.col(var_column(n)) for n in names], *interval)


def evaluate_rows(df: DataFrame, exprs: Sequence, terms: Mapping[str, str],
                  row: Callable[[dict, tuple | None], Sequence], fields: Sequence[StructField], *,
                  instant: int | tuple[int, ...] | None) -> DataFrame:
    """``df`` with the columns ``fields`` added, computed in Python over Arrow batches: ``row(mu,
    interval)`` gives a row's values of ``fields``, in order, where ``mu`` maps variable names to
    terms (``terms``: {column of decoded terms: variable name}; a null is left out) and
    ``interval`` is the row's (``T_START``, ``T_END``), None where ``df`` has no interval.

    ``row`` evaluates the expressions ``exprs``: it runs under the evaluation instant ``instant``
    (NOW(); None: NOW() is an error; a tuple, the instants of a plan keyed by the instant: each
    row's ``INSTANT``) and, where ``exprs`` draw from the solution (RAND(), UUID(), STRUUID(),
    BNODE()), under the row's :func:`solution_seed` (the whole solution's hash, of which ``mu`` is a
    part). It is called once per distinct input in a batch: the terms, the interval where ``exprs``
    read it (getDURATION() ...), the seed, the row's instant where NOW() reads it. ``row`` is
    pickled to the executors: what it reads must be picklable (expressions, strings, numbers,
    importable functions)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    drawn = any(isinstance(x, A.Builtin) and x.name in A.SOLUTION_BUILTINS and x.name != "NOW"
                for e in exprs for x in A.subexpressions(e))
    timed = any(A.uses_interval(e) for e in exprs)
    seed = scratch("seed")
    source = df.select(*df.columns, solution_seed(df.columns).alias(seed)) if drawn else df
    has_interval = T_START in df.columns and T_END in df.columns
    per_row = isinstance(instant, tuple) and any(isinstance(x, A.Builtin) and x.name == "NOW"
                                                 for e in exprs for x in A.subexpressions(e))
    if per_row and INSTANT not in df.columns:
        raise ValueError("evaluate_rows(): a plan keyed by the instant needs its INSTANT column")
    names = dict(terms)
    types = [to_arrow_type(f.dataType) for f in fields]
    added = [f.name for f in fields]
    schema = StructType(source.schema.fields + list(fields))

    def compute(batches):
        evaluation = V.EVALUATION_INSTANT.set(None if isinstance(instant, tuple) else instant)
        try:
            for batch in batches:
                n = batch.num_rows
                read = {c: batch.column(c).to_pylist() for c in names}
                starts = batch.column(T_START).to_pylist() if has_interval else [None] * n
                ends = batch.column(T_END).to_pylist() if has_interval else [None] * n
                seeds = batch.column(seed).to_pylist() if drawn else [None] * n
                ats = batch.column(INSTANT).to_pylist() if per_row else [None] * n
                values, memo = [], {}
                for i in range(n):
                    key = (tuple(read[c][i] for c in names), (starts[i], ends[i]) if timed else None, seeds[i],
                           ats[i])
                    out = memo.get(key)
                    if out is None:
                        mu = {names[c]: read[c][i] for c in names if read[c][i] is not None}
                        token = V.SOLUTION_SEED.set(seeds[i])
                        at = V.EVALUATION_INSTANT.set(ats[i]) if per_row else None
                        try:
                            out = memo[key] = tuple(row(mu, (starts[i], ends[i]) if has_interval else None))
                        finally:
                            if at is not None:
                                V.EVALUATION_INSTANT.reset(at)
                            V.SOLUTION_SEED.reset(token)
                    values.append(out)
                arrays = [pa.array([v[j] for v in values], t) for j, t in enumerate(types)]
                yield pa.RecordBatch.from_arrays(list(batch.columns) + arrays, names=batch.schema.names + added)
        finally:
            V.EVALUATION_INSTANT.reset(evaluation)

    out = source.mapInArrow(compute, schema)
    return out.drop(seed) if drawn else out
