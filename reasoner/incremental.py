"""Incremental refresh: a new version from the previous one plus the consequences of the triples
added since, when that is exact.

RDFS is monotone: when the sources only grew and the schema did not change, the closure of the
new sources is the old closure plus what the added triples entail. ``plan`` decides whether a
refresh may be incremental, from the previous manifest and the current sources:

* every previous source is still named, at the same position (blank-node scopes are numbered by
  position), and is either unchanged (same SHA-256) or an N-Triples file that grew by appending
  (its first ``bytes`` bytes hash to the old SHA-256 and ended with a line break);
* new files may follow (any format);
* the previous version recorded its property-level schema (manifests since this module).

``apply`` then checks the added triples themselves (``Refused`` names the reason, and the caller
recomputes fully): none may be schema (subClassOf, subPropertyOf, domain, range, equivalences,
inverseOf, a type that makes a property symmetric or transitive), no rule may read rdf:type /
subClassOf / subPropertyOf as a property, and no added or derived triple may use a transitive
property (prp-trp joins it with old triples). Everything else an added triple entails depends
on it and the schema only: rdfs7, prp-inv, prp-symp (to a fixpoint over the added triples),
rdfs2/3 and rdfs9 against the published ``subclass`` table.

The new version's tables are the previous version's Parquet files, hard-linked (copied where
links are impossible), plus part files holding the new rows only: rows already in the previous
tables are removed by anti-joins restricted to the added triples' subjects (broadcast), so the
tables stay sets. The manifest says ``"mode": "incremental"`` and names the previous version.
The driver-side engine (``reasoner.local``) always recomputes: its inputs are small enough that a
full run takes about a second.
"""
from __future__ import annotations

import dataclasses
import hashlib
import shutil
import time
from pathlib import Path

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from rdfcore import fs, loading, sources
from reasoner import local, rules, schema_rules, store
from rdfcore.dictionary import dictionary_terms
from rdfcore.errors import HashCollisionError
from rdfcore.locations import location
from rdfcore.schema import (CLASS, DICTIONARY, FILE, ID, INFERRED, INSTANCE, LINE, O, P, RAW, REASON, REJECTS, S, SUB,
                             SUBCLASS, SUBPROPERTY, SUP, TABLE_COLUMNS, TERM, TRANSITIVE, TYPES)


class Refused(Exception):
    """Why this refresh cannot be incremental (the caller recomputes fully)."""


@dataclasses.dataclass
class Plan:
    previous: dict  # the previous manifest
    appended: list[tuple[Path, int, int, int]]  # (file, bytes already read, lines already read, scope)
    new_files: list[tuple[Path, int]]  # (file, scope)


def _prefix(path: Path, size: int) -> tuple[str, int, bool]:
    """SHA-256 of the first ``size`` bytes, their line count, whether they end a line."""
    digest, lines, last, left = hashlib.sha256(), 0, b"\n", size
    with path.open("rb") as handle:
        while left > 0:
            chunk = handle.read(min(1 << 22, left))
            if not chunk:
                break
            digest.update(chunk)
            lines += chunk.count(b"\n")
            last, left = chunk[-1:], left - len(chunk)
    return digest.hexdigest(), lines, last in (b"\n", b"\r")


def plan(previous: dict, sources: list[sources.Source], prefixes: dict | None = None) -> Plan:
    """Whether the change from ``previous`` (a manifest) to ``sources`` may be incremental.
    ``prefixes``: the hashes of the files' old lengths taken while loading (``loading.load``'s
    ``marks``); a file without one is read again here."""
    if previous.get("schema") is None:
        raise Refused("the previous version recorded no schema (made before incremental refresh)")
    if previous.get("rules") != list(rules.RULES):
        raise Refused("the previous version was made with other rules")
    old = previous["sources"]
    if len(sources) < len(old):
        raise Refused("a source was removed")
    appended = []
    for scope, (before, now) in enumerate(zip(old, sources)):
        if before["path"] != now.path:
            raise Refused(f"the sources changed order or names at position {scope + 1} ({before['path']} -> {now.path})")
        if before["sha256"] == now.sha256:
            continue
        if now.format != "ntriples" or now.bytes <= before["bytes"]:
            raise Refused(f"{now.path} was modified, not appended to")
        known = (prefixes or {}).get(now.path)
        digest, lines, whole = known if known is not None else _prefix(location(now.path), before["bytes"])
        if digest != before["sha256"] or not whole:
            raise Refused(f"{now.path} was modified, not appended to")
        appended.append((location(now.path), before["bytes"], lines, scope))
    new_files = [(location(s.path), scope) for scope, s in enumerate(sources) if scope >= len(old)]
    if not appended and not new_files:
        raise Refused("nothing was added")
    return Plan(previous, appended, new_files)


def _added(spark: SparkSession, the_plan: Plan, scratch: Path) -> tuple[DataFrame, DataFrame]:
    """The added triples (strings) and their rejects (file, line as in the whole file)."""
    scratch.mkdir(parents=True)
    paths, scopes, renames = [], [], {}
    for i, (path, offset, lines, scope) in enumerate(the_plan.appended):
        tail = scratch / f"appended-{i}.nt"
        with path.open("rb") as src, tail.open("wb") as dst:
            src.seek(offset)
            shutil.copyfileobj(src, dst, 1 << 22)
        paths.append(tail)
        scopes.append(scope)
        renames[str(tail.resolve())] = (str(path.resolve()), lines)
    triples, rejects = None, None
    if paths:
        triples, rejects = loading.read_ntriples(spark, paths, scopes, scratch / "parsed")
        triples = triples.select(S, P, O)
        original = F.create_map(*[x for k, (name, _) in renames.items() for x in (F.lit(k), F.lit(name))])
        shift = F.create_map(*[x for k, (_, lines) in renames.items() for x in (F.lit(k), F.lit(lines))])
        # (two steps: in one select, the renamed file column would be what the shift looks up)
        rejects = (rejects.withColumn(LINE, F.col(LINE) + shift[F.col(FILE)])
                   .withColumn(FILE, original[F.col(FILE)]).select(FILE, LINE, REASON, RAW))
    for path, scope in the_plan.new_files:
        part = loading.load(spark, [path]).staged(scratch / f"new-{scope}")
        # a new file's blank nodes belong to its own scope (its position among the sources)
        fixed = part.triples.select(*[F.regexp_replace(c, "^_:f0\\.", f"_:f{scope}.").alias(c) for c in (S, P, O)])
        triples = fixed if triples is None else triples.unionByName(fixed)
        rejects = part.rejects if rejects is None else rejects.unionByName(part.rejects)
    return triples, rejects


def _link_table(previous_dir: Path, staging: Path, name: str) -> None:
    """The previous version's table ``name`` in the staging directory, file by file (hard links)."""
    source, target = previous_dir / name, staging / name
    target.mkdir()
    for file in source.iterdir():
        if file.name.startswith((".", "_")) and file.name != "_SUCCESS":
            continue
        fs.link_or_copy(file, target / file.name)


class _Phases:
    """Seconds per phase into ``timings``, as ``incremental_<name>``: call it at each phase's end."""

    def __init__(self, timings: dict):
        self.timings, self.last = timings, time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[f"incremental_{name}"] = round(now - self.last, 3)
        self.last = now


def _pairs_frame(spark: SparkSession, pairs) -> DataFrame:
    return F.broadcast(spark.createDataFrame(sorted(tuple(x) for x in pairs), f"{SUB} long, {SUP} long"))


def apply(spark: SparkSession, the_plan: Plan, version: store.VersionWriter, out: Path,
          timings: dict | None = None) -> dict:
    """Write the incremental version into ``version``'s staging directory; returns the counts
    (raises :class:`Refused` when the added triples touch what must be recomputed). Seconds per
    phase go to ``timings``."""
    phase = _Phases({} if timings is None else timings)

    previous = the_plan.previous
    schema = previous["schema"]
    old_dir = out / store.VERSIONS / previous["version"]
    old = {name: spark.read.parquet(fs.spark_path(old_dir / name)) for name in store.TABLES}
    added, rejects = _added(spark, the_plan, version.staging / "_added")
    terms = dictionary_terms(added).distinct().cache()
    # one streaming scan of the old dictionary against the added terms (broadcast: they are few;
    # a shuffle would move every old term): collisions, and which ids existed before (an
    # instance that did not cannot have old types or triples: no anti-join needed for it)
    looked_up = (old[DICTIONARY].withColumnRenamed(TERM, "_old")
                 .join(F.broadcast(terms), ID).cache())
    clash = looked_up.filter(F.col(TERM) != F.col("_old")).limit(100).collect()
    if clash:
        raise HashCollisionError([(r[ID], sorted([r[TERM], r["_old"]])) for r in clash])
    known = F.broadcast(looked_up.select(ID))
    new_terms = terms.join(known, ID, "left_anti").select(ID, TERM)
    phase("read_and_dictionary_lookup")
    triples = added.select(*[F.xxhash64(c).alias(c) for c in (S, P, O)]).distinct().cache()

    schema_predicates = [schema_rules.SC, schema_rules.EQC, schema_rules.SP, schema_rules.EQP, schema_rules.DOM, schema_rules.RANGE, schema_rules.INV]
    owl_classes = schema["owl_classes"]
    touching = triples.filter(F.col(P).isin(schema_predicates)
                              | ((F.col(P) == schema_rules.TYPE) & F.col(O).isin(owl_classes))).limit(1).collect()
    if touching:
        raise Refused("the added triples change the schema")
    readers = {a for a, _ in schema["sp"] + schema["inv"] + schema["dom"] + schema["rng"]} | set(schema["sym"]) | set(
        schema["trans"])
    if readers & {schema_rules.TYPE, schema_rules.SC, schema_rules.SP}:
        raise Refused("the schema's rules read rdf:type / subClassOf / subPropertyOf as properties")

    # rdfs7, prp-inv, prp-symp over the added triples alone (their consequences need no old triple)
    sp = {(a, b) for a, b in schema["sp"] if a != b}
    inv, sym, trans = {tuple(x) for x in schema["inv"]}, set(schema["sym"]), set(schema["trans"])
    with_props = triples
    frontier = triples
    for _ in range(200):
        derived = []
        if sp:
            derived.append(rules.rdfs7(frontier, _pairs_frame(spark, sp)))
        if inv:
            derived.append(rules.prp_inv(frontier, _pairs_frame(spark, inv)))
        if sym:
            derived.append(rules.prp_symp(frontier, F.broadcast(spark.createDataFrame([(v,) for v in sorted(sym)],
                                                                                      f"{SUB} long"))))
        if not derived:
            break
        new = derived[0]
        for d in derived[1:]:
            new = new.unionAll(d)
        literal_ids = terms.filter(F.col(TERM).startswith('"')).select(F.col(ID).alias(S))
        new = new.join(literal_ids, S, "left_anti").distinct().join(with_props, [S, P, O], "left_anti").cache()
        if new.isEmpty():
            break
        with_props = with_props.unionAll(new).cache()
        frontier = new
    if not with_props.filter(F.col(P).isin(schema_predicates)
                             | ((F.col(P) == schema_rules.TYPE) & F.col(O).isin(owl_classes))).isEmpty():
        raise Refused("what the added triples entail changes the schema (a sub-property of a schema property)")
    if trans and not with_props.filter(F.col(P).isin(sorted(trans))).isEmpty():
        raise Refused("the added triples use a transitive property (prp-trp joins them with old triples)")

    phase("schema_checks_and_property_rules")
    literal_ids = terms.filter(F.col(TERM).startswith('"')).select(F.col(ID).alias(INSTANCE))
    base = with_props.filter(F.col(P) == schema_rules.TYPE).select(F.col(S).alias(INSTANCE), F.col(O).alias(CLASS))
    if schema["dom"]:
        base = base.unionAll(rules.rdfs2(with_props, _pairs_frame(spark, schema["dom"])))
    if schema["rng"]:
        base = base.unionAll(rules.rdfs3(with_props, _pairs_frame(spark, schema["rng"]),
                                         literal_ids.withColumnRenamed(INSTANCE, ID)))
    base = base.distinct().cache()
    up = old[SUBCLASS].select(F.col(SUB).alias(CLASS), SUP)
    types = base.unionAll(base.join(F.broadcast(up), CLASS).select(INSTANCE, F.col(SUP).alias(CLASS))).distinct()
    old_instances = base.select(INSTANCE).distinct().join(known.withColumnRenamed(ID, INSTANCE), INSTANCE, "left_semi")
    new_types = types
    if not old_instances.isEmpty():
        seen = old[TYPES].join(F.broadcast(old_instances), INSTANCE, "left_semi")
        new_types = types.join(seen, [INSTANCE, CLASS], "left_anti")
    new_types = new_types.cache()

    facts = with_props.filter(F.col(P) != schema_rules.TYPE).unionAll(
        types.select(F.col(INSTANCE).alias(S), F.lit(schema_rules.TYPE).alias(P), F.col(CLASS).alias(O))).distinct()
    old_subjects = facts.select(S).distinct().join(known.withColumnRenamed(ID, S), S, "left_semi").cache()
    new_inferred = facts
    if not old_subjects.isEmpty():
        seen = old[INFERRED].join(F.broadcast(old_subjects), S, "left_semi")
        new_inferred = facts.join(seen, [S, P, O], "left_anti")
    new_classes = (base.select(F.col(CLASS).alias(SUB)).distinct()
                   .join(old[SUBCLASS].select(SUB), SUB, "left_anti")
                   .select(SUB, F.col(SUB).alias(SUP)))
    predicates = with_props.select(F.col(P).alias(SUB))
    predicates = predicates.unionAll(base.limit(1).select(F.lit(schema_rules.TYPE).alias(SUB)))
    new_properties = (predicates.distinct().join(old[SUBPROPERTY].select(SUB), SUB, "left_anti")
                      .select(SUB, F.col(SUB).alias(SUP)))

    phase("types_planned")
    counts = {}
    for name, delta in ((DICTIONARY, new_terms), (REJECTS, rejects), (SUBCLASS, new_classes),
                        (SUBPROPERTY, new_properties), (TYPES, new_types), (TRANSITIVE, None),
                        (INFERRED, new_inferred)):
        _link_table(old_dir, version.staging, name)
        before = previous["tables"].get(name) if name != REJECTS else previous["summary"]["rejected"]
        written = 0
        if delta is not None:                               # counted by the write's own job
            rows = Observation()
            delta = delta.select(*old[name].columns).observe(rows, F.count(F.lit(1)).alias("n"))
            delta.write.mode("append").parquet(str(version.staging / name))
            written = int(rows.get["n"])
        counts[name] = before + written
        phase(f"write_{name}")
    fs.rmtree(version.staging / "_added", ignore_errors=True)
    for cached in (terms, triples, looked_up, base, new_types, old_subjects):
        cached.unpersist()
    return counts


# --- the same on the driver --------------------------------------------------------------------

def added_bytes(the_plan: Plan) -> int:
    """The bytes a refresh reads: the appended tails and the new files."""
    return (sum(path.stat().st_size - offset for path, offset, _lines, _scope in the_plan.appended)
            + sum(path.stat().st_size for path, _scope in the_plan.new_files))


def _read_arrow(directory, columns: list[str]):
    """A table of the store as one pyarrow Table of ``columns`` (on a Hadoop filesystem, its part
    files' bytes through ``rdfcore.fs``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not fs.is_hadoop(directory):
        return pq.read_table(str(directory), columns=columns)
    parts = [pq.read_table(pa.BufferReader(part.read_bytes()), columns=columns)
             for part in directory.glob("*.parquet")]
    return pa.concat_tables(parts)


def _member(values, sorted_keys):
    """A boolean mask: which of ``values`` (int64 array) are in ``sorted_keys`` (sorted int64)."""
    import numpy as np

    if len(sorted_keys) == 0:
        return np.zeros(len(values), dtype=bool)
    at = np.searchsorted(sorted_keys, values)
    at[at == len(sorted_keys)] = 0
    return sorted_keys[at] == values


def _added_local(the_plan: Plan, scratch: Path) -> tuple[list, list]:
    """:func:`_added` on the driver (``sources.parse_ntriples_local`` / ``load_local``): the added
    string triples and their rejects, numbered and named as in the whole file."""
    scratch.mkdir(parents=True)
    triples, rejects = [], []
    for i, (path, offset, lines, scope) in enumerate(the_plan.appended):
        tail = scratch / f"appended-{i}.nt"
        with path.open("rb") as src, tail.open("wb") as dst:
            src.seek(offset)
            shutil.copyfileobj(src, dst, 1 << 22)
        found, bad = sources.parse_ntriples_local(tail, scope)
        triples += found
        rejects += [(str(path.resolve()), line + lines, reason, raw) for _file, line, reason, raw in bad]
    for path, scope in the_plan.new_files:
        part = sources.load_local([path])
        tag = f"_:f{scope}."                    # a new file's blank nodes: its own scope
        triples += [tuple(tag + t[5:] if t.startswith("_:f0.") else t for t in triple) for triple in part.triples]
        rejects += part.rejects
    return triples, rejects


def apply_local(the_plan: Plan, version: store.VersionWriter, out: Path, timings: dict | None = None) -> dict:
    """:func:`apply` on the driver, for added triples that fit there (``added_bytes`` ≤ the local
    engine's limit): the same checks, rules and new rows, computed with ``reasoner.local``'s
    dictionary and Python sets; the previous version's tables are read with pyarrow only where
    an added triple can meet them (the dictionary's ids, for collisions and known terms; the old
    types and triples of instances that existed before); the new rows are written as one part
    file per table beside the previous version's linked files. No Spark job: a refresh of a few
    thousand triples costs what reading the old dictionary costs, not Spark's per-job latency."""
    import numpy as np

    phase = _Phases({} if timings is None else timings)

    previous = the_plan.previous
    schema = previous["schema"]
    old_dir = out / store.VERSIONS / previous["version"]
    added, rejects = _added_local(the_plan, version.staging / "_added")
    fs.rmtree(version.staging / "_added", ignore_errors=True)
    ids = local.dictionary(added)
    phase("parse")

    # the old dictionary's rows with an added id: the same term (known before), or a collision
    old_dictionary = _read_arrow(old_dir / DICTIONARY, [ID, TERM])
    added_ids = np.sort(np.fromiter(ids.values(), dtype=np.int64, count=len(ids)))
    matched = old_dictionary.filter(_member(old_dictionary.column(ID).to_numpy(), added_ids))
    terms = {i: t for t, i in ids.items()}
    known, clash = set(), []
    for i, t in zip(matched.column(ID).to_pylist(), matched.column(TERM).to_pylist()):
        known.add(i)
        if terms[i] != t:
            clash.append((i, sorted([terms[i], t])))
    if clash:
        raise HashCollisionError(clash[:100])
    new_terms = [(i, t) for t, i in ids.items() if i not in known]
    triples, literals = local.encode(added, ids)
    phase("dictionary_lookup")

    schema_predicates = {schema_rules.SC, schema_rules.EQC, schema_rules.SP, schema_rules.EQP, schema_rules.DOM, schema_rules.RANGE, schema_rules.INV}
    owl_classes = set(schema["owl_classes"])

    def touches_schema(ts) -> bool:
        return any(p in schema_predicates or (p == schema_rules.TYPE and o in owl_classes) for _s, p, o in ts)

    if touches_schema(triples):
        raise Refused("the added triples change the schema")
    readers = {a for a, _ in schema["sp"] + schema["inv"] + schema["dom"] + schema["rng"]} | set(schema["sym"]) | set(
        schema["trans"])
    if readers & {schema_rules.TYPE, schema_rules.SC, schema_rules.SP}:
        raise Refused("the schema's rules read rdf:type / subClassOf / subPropertyOf as properties")
    # rdfs7, prp-inv, prp-symp over the added triples alone, to a fixpoint
    sp = local.by_first((a, b) for a, b in schema["sp"] if a != b)
    inv, sym = local.by_first(tuple(x) for x in schema["inv"]), set(schema["sym"])
    with_props, frontier = set(triples), set(triples)
    for _ in range(200):
        derived = set()
        for s, p, o in frontier:
            derived.update((s, q, o) for q in sp.get(p, ()))
            derived.update((o, q, s) for q in inv.get(p, ()))
            if p in sym:
                derived.add((o, p, s))
        frontier = {t for t in derived if t[0] not in literals and t not in with_props}
        if not frontier:
            break
        with_props |= frontier
    if touches_schema(with_props):
        raise Refused("what the added triples entail changes the schema (a sub-property of a schema property)")
    trans = set(schema["trans"])
    if trans and any(p in trans for _s, p, _o in with_props):
        raise Refused("the added triples use a transitive property (prp-trp joins them with old triples)")
    dom, rng = local.by_first(tuple(x) for x in schema["dom"]), local.by_first(tuple(x) for x in schema["rng"])
    base = set()
    for s, p, o in with_props:
        if p == schema_rules.TYPE:
            base.add((s, o))
        base.update((s, c) for c in dom.get(p, ()))
        if o not in literals:
            base.update((o, c) for c in rng.get(p, ()))
    phase("rules")

    # rdfs9 against the published subclass table, as columns: each base type's superclasses
    subclass = _read_arrow(old_dir / SUBCLASS, [SUB, SUP])
    order = np.argsort(subclass.column(SUB).to_numpy(), kind="stable")
    subs, sups = subclass.column(SUB).to_numpy()[order], subclass.column(SUP).to_numpy()[order]
    bx, bc = _columns_of(base, 2)
    lo, hi = np.searchsorted(subs, bc, "left"), np.searchsorted(subs, bc, "right")
    counts_up = hi - lo
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts_up)[:-1])), counts_up)
    up = sups[starts + np.arange(int(counts_up.sum()))]
    types = _distinct_rows(np.concatenate([bx, np.repeat(bx, counts_up)]), np.concatenate([bc, up]))
    new_classes = np.setdiff1d(bc, subs)
    subproperty = _read_arrow(old_dir / SUBPROPERTY, [SUB]).column(SUB).to_numpy()
    predicates = np.array(sorted({p for _s, p, _o in with_props} | ({schema_rules.TYPE} if base else set())), dtype=np.int64)
    new_properties = np.setdiff1d(predicates, subproperty)
    known_sorted = np.array(sorted(known), dtype=np.int64)
    new_types = types
    if _member(types[0], known_sorted).any():   # instances the previous version typed already
        new_types = _without(types, _old_rows(old_dir / TYPES, [INSTANCE, CLASS], types[0], known_sorted))
    fs_, fp, fo = _columns_of({t for t in with_props if t[1] != schema_rules.TYPE}, 3)
    facts = _distinct_rows(np.concatenate([fs_, types[0]]),
                           np.concatenate([fp, np.full(len(types[0]), schema_rules.TYPE, dtype=np.int64)]),
                           np.concatenate([fo, types[1]]))
    new_inferred = facts
    if _member(facts[0], known_sorted).any():   # subjects the previous version had triples of
        new_inferred = _without(facts, _old_rows(old_dir / INFERRED, [S, P, O], facts[0], known_sorted))
    phase("old_tables")

    deltas = {DICTIONARY: list(zip(*new_terms)) if new_terms else [[], []],
              REJECTS: list(zip(*rejects)) if rejects else [[], [], [], []],
              SUBCLASS: [new_classes, new_classes], SUBPROPERTY: [new_properties, new_properties],
              TYPES: list(new_types), TRANSITIVE: None, INFERRED: list(new_inferred)}
    counts = {}
    for name, delta in deltas.items():
        _link_table(old_dir, version.staging, name)
        before = previous["tables"].get(name) if name != REJECTS else previous["summary"]["rejected"]
        written = 0
        if delta is not None and len(delta[0]):
            columns = {c: "string" if c in (TERM, FILE, REASON, RAW) else "long" for c in _columns(name)}
            written = version.write_columns(name, columns, delta, part=f"part-{version.version}-incremental.parquet")
        counts[name] = before + written
    phase("write")
    return counts


def _columns_of(rows: set, width: int) -> tuple:
    """A set of int tuples as ``width`` int64 columns."""
    import numpy as np

    if not rows:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(width))
    matrix = np.array(list(rows), dtype=np.int64).reshape(-1, width)
    return tuple(matrix[:, k].copy() for k in range(width))


def _distinct_rows(*columns) -> tuple:
    """The distinct rows of int64 columns (sorted)."""
    import numpy as np

    if len(columns[0]) == 0:
        return columns
    order = np.lexsort(columns[::-1])
    cols = [c[order] for c in columns]
    keep = np.ones(len(cols[0]), dtype=bool)
    keep[1:] = np.any([c[1:] != c[:-1] for c in cols], axis=0)
    return tuple(c[keep] for c in cols)


def _without(rows: tuple, old: set) -> tuple:
    """The rows (columns) not in the set ``old`` (tuples)."""
    import numpy as np

    if not old:
        return rows
    keep = np.array([t not in old for t in zip(*(c.tolist() for c in rows))], dtype=bool)
    return tuple(c[keep] for c in rows)


def _old_rows(directory, columns: list[str], firsts, known_sorted) -> set[tuple]:
    """The rows of an old table whose first column is one of ``firsts`` that are ``known``
    (sorted ids the previous version had), as tuples: what an anti-join must remove."""
    import numpy as np

    keys = np.unique(firsts[_member(firsts, known_sorted)])
    first = _read_arrow(directory, [columns[0]]).column(columns[0]).to_numpy()
    mask = _member(first, keys)
    if not mask.any():
        return set()
    table = _read_arrow(directory, columns).filter(mask)
    return set(zip(*[table.column(c).to_pylist() for c in columns]))


def _columns(name: str) -> list[str]:
    """The columns of a table of the store, in order."""
    if name == REJECTS:
        return [FILE, LINE, REASON, RAW]
    return list(TABLE_COLUMNS[name])
