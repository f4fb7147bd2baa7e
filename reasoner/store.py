"""Versioned output directory for the reasoner's tables.

Layout::

    OUT/
      CURRENT                    the id of the current version (one line), replaced atomically
      versions/
        v000003/                 one directory per successful run
          manifest.json          sources + hashes, rules, options, row counts, timings
          subclass/ subproperty/ types/ transitive/ inferred/ dictionary/ rejects/   (Parquet)
        .tmp-v000004-<pid>/      a run in progress (renamed into place when complete)

A run writes everything into a temporary directory, writes the manifest last, renames the
directory to its version id and only then replaces ``CURRENT`` (a temporary file, flushed, then an
atomic replace). A run that fails half-way leaves ``CURRENT`` and the version it names untouched.
A lock serialises concurrent runs on the same directory.

The directory is a local path, a ``file:`` URL or a URL of any Hadoop filesystem Spark has
(``hdfs://``, ``s3a://``, ...): the driver's manifest, pointer, lock and renames go through
``rdfcore.fs`` (``pathlib`` locally, Hadoop's FileSystem API elsewhere; what is atomic where is
stated there), the Parquet tables are written by Spark, or by the driver with pyarrow for small
inputs (``reasoner.local``) — the same layout either way.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
from collections.abc import Iterator

from pyspark.sql import DataFrame, SparkSession

from rdfcore import fs
from rdfcore.dictionary import decode
from rdfcore.errors import SidecarError
from rdfcore.locations import Location, location
from rdfcore.schema import DICTIONARY, REJECTS, TABLE_COLUMNS, TERM_COLUMNS

VERSIONS = "versions"
CURRENT = "CURRENT"
MANIFEST = "manifest.json"
TABLES = tuple(TABLE_COLUMNS) + (REJECTS,)


class StoreError(SidecarError, RuntimeError):
    """The output directory is missing, locked, or does not hold the asked version."""


def _root(out: str | Location) -> Location:
    """The store's directory (``rdfcore.locations.location``)."""
    return location(out, "the store")


def current_version(out: str | Location) -> str | None:
    pointer = _root(out) / CURRENT
    if not pointer.exists():
        return None
    return pointer.read_text(encoding="utf-8").strip() or None


def list_versions(out: str | Location) -> list[str]:
    directory = _root(out) / VERSIONS
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def read_manifest(out: str | Location, version: str | None = None) -> dict:
    version = version or current_version(out)
    if version is None:
        raise StoreError(f"{out}: no current version (nothing has been materialized here yet)")
    path = _root(out) / VERSIONS / version / MANIFEST
    if not path.exists():
        raise StoreError(f"{out}: version {version} does not exist (present: {', '.join(list_versions(out)) or 'none'})")
    return json.loads(path.read_text(encoding="utf-8"))


@contextlib.contextmanager
def _locked(out: Location) -> Iterator[None]:
    try:
        with fs.lock(out):
            yield
    except fs.LockedError as error:
        raise StoreError(str(error)) from None


@dataclasses.dataclass
class VersionWriter:
    """Collects the tables of one run; :meth:`commit` publishes them."""

    out: Location
    version: str
    staging: Location

    def write_table(self, name: str, df: DataFrame) -> int:
        """Write ``df`` as Parquet table ``name``; returns its row count, counted by the write's
        own job (an observed metric; reading the table back was one more job per table)."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        path = self.staging / name
        rows = Observation()
        df.observe(rows, F.count(F.lit(1)).alias("n")).write.mode("error").parquet(str(path))
        return int(rows.get["n"])

    def write_rows(self, name: str, columns: dict[str, str], rows) -> int:
        """Write ``rows`` (tuples in the order of ``columns``: {name: "long" | "string"}) as the
        Parquet table ``name`` from the driver (pyarrow; the same layout Spark reads); returns
        the row count."""
        rows = list(rows)
        return self.write_columns(name, columns, [[r[i] for r in rows] for i in range(len(columns))])

    def write_columns(self, name: str, columns: dict[str, str], values, part: str | None = None) -> int:
        """:meth:`write_rows` from one sequence (list, numpy array) per column. ``part``: write
        one more part file of that name into the table's existing directory (an incremental
        version's new rows beside the previous version's files) instead of a new table."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        types = {"long": pa.int64(), "string": pa.string()}
        schema = pa.schema([(c, types[t]) for c, t in columns.items()])
        arrays = [pa.array(v, type=f.type) for v, f in zip(values, schema)]
        path = self.staging / name
        if part is None:
            path.mkdir()
        table = pa.Table.from_arrays(arrays, schema=schema)
        target = path / (part or "part-00000.parquet")
        if fs.is_hadoop(path):              # pyarrow writes into memory, the driver copies it out
            buffer = io.BytesIO()
            pq.write_table(table, buffer)
            target.write_bytes(buffer.getvalue())
        else:
            pq.write_table(table, str(target))
        return table.num_rows

    def commit(self, manifest: dict) -> None:
        manifest = {**manifest, "version": self.version}
        (self.staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
        self.staging.rename(self.out / VERSIONS / self.version)
        fs.write_atomically(self.out / CURRENT, self.version + "\n")


@contextlib.contextmanager
def new_version(out: str | Location) -> Iterator[VersionWriter]:
    """Stage a new version; on any exception the staging directory is removed, CURRENT untouched."""
    out = _root(out)
    with _locked(out):
        (out / VERSIONS).mkdir(parents=True, exist_ok=True)
        for stale in (out / VERSIONS).glob(".tmp-*"):  # left by a crashed run; we hold the lock
            fs.rmtree(stale, ignore_errors=True)
        existing = [int(v[1:]) for v in list_versions(out) if v[1:].isdigit()]
        version = f"v{(max(existing) + 1 if existing else 1):06d}"
        staging = out / VERSIONS / f".tmp-{version}-{os.getpid()}"
        staging.mkdir()
        writer = VersionWriter(out, version, staging)
        try:
            yield writer
        except BaseException:
            fs.rmtree(staging, ignore_errors=True)
            raise


@dataclasses.dataclass
class Materialized:
    """Reader over one published version."""

    spark: SparkSession
    out: Location
    version: str
    manifest: dict

    def table(self, name: str, decoded: bool = False) -> DataFrame:
        """Table ``name`` as a DataFrame of ids, or of N-Triples strings when ``decoded``."""
        if name not in TABLES:
            raise StoreError(f"unknown table {name!r}; tables are {', '.join(TABLES)}")
        df = self.spark.read.parquet(fs.spark_path(self.out / VERSIONS / self.version / name))
        if decoded and name in TERM_COLUMNS:
            df = decode(df, self.table(DICTIONARY), TERM_COLUMNS[name])
        return df


def open_version(spark: SparkSession, out: str | Location, version: str | None = None) -> Materialized:
    """Open the current version of ``out`` (or ``version``) for reading."""
    manifest = read_manifest(out, version)
    return Materialized(spark, _root(out), manifest["version"], manifest)
