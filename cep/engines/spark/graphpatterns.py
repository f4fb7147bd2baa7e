"""SPARQL 1.1 graph patterns on Spark, over DataFrames of mappings with intervals (``cep.engines.columns``):
MINUS, VALUES and FILTER [NOT] EXISTS. ``cep.engines.spark.evaluate`` calls these; ``cep.engines.reference`` is the same
semantics in pure Python (``minus``, ``substitute``), the oracle.

They stand in background patterns and C-SPARQL's WHERE (``cep.lowering.common``), where every mapping of
one evaluation has the same interval, so they are SPARQL's operators; the interval columns (and
the lifetime columns of ``cep.engines.spark.lifetimes``) are carried along.

**EXISTS** (§18.6: ``exists(substitute(P, μ))`` for each mapping μ the FILTER reads) is evaluated
*decorrelated*, for all mappings at once:

* the **seed**: the distinct values of the variables of Ω that P mentions (K), each row with a key
  (``key_column(None, depth)``: a hash of the row, nulls included: the project's ids are 64-bit hashes already) and the
  values in key columns of their own (``key_column``; null where μ leaves the variable unbound);
* P evaluated once, each of its leaves (a BGP's solutions, a VALUES table) joined with the seed:
  the solutions agreeing with μ on the variables μ binds (an equi-join where the seed binds them
  all), every leaf row carrying the key, the key columns and μ's values for K. The operators above
  the leaves join on every variable column, so on the key too: each seed row is evaluated on its
  own, and P's FILTERs read μ's values, as substitution has it. MINUS does not count a
  substituted variable as shared (after substitution it is a constant);
* the keys with a solution flag the Ω rows with those values (null-safe equality).

Sub-queries inside EXISTS are refused when lowering (their projection would drop the key).

**GROUP BY over event clauses** (``group_cover``, ``A.GroupCover``): unlike the operators above it
stands over mappings whose intervals differ (event clauses of any language); one row per
group, its aggregates computed as C-SPARQL's (``cep.engines.spark.csparql.aggregate``), its interval the cover
of its members'.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cep import algebra as A
from cep.engines.columns import T_END, T_START, column_var, var_column, var_columns
from cep.engines.spark.intervals import compatible, prefixed, side_col
from cep.engines.spark.keyed import INSTANT
from rdfcore.hashing import term_id
from cep.engines.spark.csparql import aggregate

__all__ = ["key_column", "Correlation", "minus", "values_rows", "mentioned", "seed", "correlate",
           "exists_flags", "group_cover"]

_R = "r"


def key_column(column: str | None, depth: int) -> str:
    """The seed's copy of variable column ``column`` (None: the seed row's key) for an EXISTS
    nested ``depth`` deep: a variable column (so that every operator carries it) no query can
    name ('·' cannot start a SPARQL variable name)."""
    return var_column(f"·key{depth}" if column is None else f"·k{depth}·{column_var(column)}")


def _internal(column: str) -> bool:
    return column_var(column).startswith("·")


@dataclass(frozen=True)
class Correlation:
    """An EXISTS being evaluated: the ``seed`` (key, key columns), {variable column: its key
    column}, and the name of the key column."""

    seed: DataFrame
    keys: dict
    key: str


def minus(o1: DataFrame, o2: DataFrame, keys: dict | None = None) -> DataFrame:
    """MINUS (SPARQL 1.1 §18.5): the Ω1 rows with no compatible Ω2 row that shares a bound variable
    with it and whose interval intersects. ``keys``: inside EXISTS, {variable column: key column};
    a variable the seed row binds was substituted, so it is not shared."""
    keys = keys or {}
    shared = sorted(c for c in set(var_columns(o1)) & set(var_columns(o2)) if not _internal(c))
    if not shared:
        return o1                    # dom(μ1) ∩ dom(μ2) = ∅ for every pair: nothing is removed
    r = prefixed(o2, _R)
    overlap = F.lit(False)
    for c in shared:
        both = F.col(c).isNotNull() & side_col(_R, c).isNotNull()
        if c in keys:
            both = both & F.col(keys[c]).isNull()
        overlap = overlap | both
    intersect = F.greatest(F.col(T_START), side_col(_R, T_START)) <= F.least(F.col(T_END), side_col(_R, T_END))
    return o1.join(r, compatible(o1, None, o2, _R) & overlap & intersect, "left_anti")


def values_rows(node: A.Values) -> tuple[list[str], list[tuple]]:
    """VALUES as (variable columns, rows of ids; None = UNDEF)."""
    columns = [var_column(v.name) for v in node.variables]
    rows = [tuple(None if t is None else term_id(t) for t in row) for row in node.rows]
    return columns, rows


def mentioned(node) -> set[str]:
    """The variable columns of every variable written anywhere in ``node`` (patterns, FILTERs,
    nested EXISTS)."""
    return {var_column(v.name) for v in A.leaves(node) if isinstance(v, A.Var)}


def seed(omega: DataFrame, pattern, depth: int) -> Correlation:
    """The seed of EXISTS { pattern } over ``omega``: the distinct values of the variables both
    mention, keyed (module docstring)."""
    columns = sorted(c for c in set(var_columns(omega)) & mentioned(pattern) if not _internal(c))
    if INSTANT in omega.columns:   # evaluated at many instants: a row's EXISTS is that of its instant
        columns.append(INSTANT)
    keys = {c: key_column(c, depth) for c in columns}
    parts: list[Column] = []
    for c in columns:
        parts += [F.col(c).isNull(), F.coalesce(F.col(c), F.lit(0).cast("long"))]
    key = F.xxhash64(F.lit(1), *parts)
    rows = omega.select(*columns).distinct()
    name = key_column(None, depth)
    return Correlation(rows.select(*[F.col(c).alias(k) for c, k in keys.items()], key.alias(name)), keys, name)


def correlate(leaf: DataFrame, corr: Correlation, nullable: bool) -> DataFrame:
    """A leaf's solutions for each seed row: those agreeing with the values the row binds; every
    row with the key, the key columns and μ's values of the seed's variables. ``nullable``: whether
    the leaf may leave a variable unbound (VALUES' UNDEF), which agrees with any value. (A leaf
    and the seed have no column name in common: the seed's are the key and key columns.)"""
    s = corr.seed
    have = set(var_columns(leaf))
    shared = [c for c in corr.keys if c in have]
    columns = [F.col(c) for c in var_columns(leaf) if c not in corr.keys]
    for c, k in corr.keys.items():
        columns.append((F.coalesce(F.col(k), F.col(c)) if c in have else F.col(k)).alias(c))
    columns += [F.col(k) for k in corr.keys.values()] + [F.col(corr.key)]
    columns += [F.col(c) for c in leaf.columns if c not in have]   # the interval (and lifetime) columns

    def agree(c) -> Column:
        k = F.col(corr.keys[c])
        out = k.isNull() | (F.col(c) == k)
        return (out | F.col(c).isNull()) if nullable else out

    if not shared:
        return leaf.crossJoin(s).select(*columns)
    cond = F.lit(True)
    for c in shared:
        cond = cond & agree(c)
    if nullable:
        return leaf.join(s, cond, "inner").select(*columns)
    # the seed rows binding every shared variable: an equi-join; the others: a join on the rest
    bound = F.lit(True)
    for c in shared:
        bound = bound & F.col(corr.keys[c]).isNotNull()
    full = s.filter(bound)
    equi = leaf.join(full, [F.col(c) == F.col(corr.keys[c]) for c in shared], "inner")
    rest = leaf.join(s.filter(~bound), cond, "inner")
    return equi.select(*columns).unionByName(rest.select(*columns))


def exists_flags(omega: DataFrame, corr: Correlation, solutions: DataFrame, flag: str) -> DataFrame:
    """``omega`` with a boolean column ``flag``: whether its seed row has a solution."""
    hits = solutions.select(corr.key).distinct()
    keyed = corr.seed.join(hits, corr.key, "left_semi").select(*corr.keys.values()).withColumn(flag, F.lit(True))
    if not corr.keys:                # EXISTS shares no variable with the mapping: one answer for all
        return omega.join(keyed.limit(1), F.lit(True), "left").select(
            *omega.columns, F.coalesce(F.col(flag), F.lit(False)).alias(flag))
    cond = F.lit(True)
    for c, k in corr.keys.items():
        cond = cond & F.col(c).eqNullSafe(F.col(k))
    return omega.join(keyed, cond, "left").select(*omega.columns, F.coalesce(F.col(flag), F.lit(False)).alias(flag))


def group_cover(omega: DataFrame, node: A.GroupCover, dictionaries, at, instants=None
                ) -> tuple[DataFrame, DataFrame | None]:
    """GROUP BY over mappings with intervals (``A.GroupCover``; ``cep.engines.reference.group_cover`` is the
    oracle): one row per group of the distinct rows of ``omega`` on ``node.group`` (null, unbound,
    is a value of its own, as ``groupBy`` has it), with the group's columns, one id column per
    aggregate and [min t_start, max t_end] of its members. The aggregates are C-SPARQL's
    (``cep.engines.spark.csparql.aggregate``: per member, then constant over the group, so grouping by them too
    changes nothing); over no row the implicit group gives one row of the aggregates of nothing
    over [at, at]. Returns the rows and the (id, term) rows of the terms computed (None if none).
    ``instants`` (``cep.engines.spark.keyed.Instants``): ``omega`` holds the solutions of each, and
    ``at`` is the column of a row's instant: the groups are those of each instant."""
    present = set(var_columns(omega))
    members = omega.select(*sorted(present), T_START, T_END).distinct()   # a member is a distinct solution
    terms = None
    if node.specs:
        members, terms = aggregate(members, node.specs, dictionaries, (at, at), instants)
    keys = [F.col(c) if c in present else F.lit(None).cast("long").alias(c)
            for c in (var_column(v.name) for v in node.group)]
    if instants is not None:
        keys.append(F.col(INSTANT))
    computed = [F.col(var_column(spec.var.name)) for spec in node.specs]
    out = members.groupBy(*keys, *computed).agg(F.min(T_START).alias(T_START), F.max(T_END).alias(T_END))
    return out, terms
