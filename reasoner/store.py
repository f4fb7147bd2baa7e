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
directory to its version id (atomic on one file system) and only then replaces ``CURRENT``
(write a temp file, fsync, ``os.replace``). A run that fails half-way leaves ``CURRENT`` and the
version it names untouched. A lock file serialises concurrent runs on the same directory.

The directory must be on a local or mounted POSIX file system (the manifest and the pointer are
written by the driver); the Parquet tables are written by Spark, or by the driver with pyarrow
for small inputs (``reasoner.local``) — the same layout either way.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from reasoner.dictionary import decode
from reasoner.errors import SidecarError
from reasoner.locations import local_path
from reasoner.schema import DICTIONARY, REJECTS, TABLE_COLUMNS, TERM_COLUMNS

VERSIONS = "versions"
CURRENT = "CURRENT"
MANIFEST = "manifest.json"
TABLES = tuple(TABLE_COLUMNS) + (REJECTS,)


class StoreError(SidecarError, RuntimeError):
    """The output directory is missing, locked, or does not hold the asked version."""


def _root(out: str | Path) -> Path:
    """The store's directory: a local path or a ``file:`` URL (``reasoner.locations``)."""
    return local_path(out, "the store")


def current_version(out: str | Path) -> str | None:
    pointer = _root(out) / CURRENT
    if not pointer.exists():
        return None
    return pointer.read_text(encoding="utf-8").strip() or None


def list_versions(out: str | Path) -> list[str]:
    directory = _root(out) / VERSIONS
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def read_manifest(out: str | Path, version: str | None = None) -> dict:
    version = version or current_version(out)
    if version is None:
        raise StoreError(f"{out}: no current version (nothing has been materialized here yet)")
    path = _root(out) / VERSIONS / version / MANIFEST
    if not path.exists():
        raise StoreError(f"{out}: version {version} does not exist (present: {', '.join(list_versions(out)) or 'none'})")
    return json.loads(path.read_text(encoding="utf-8"))


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"{out}: another materialization is writing to this directory") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclasses.dataclass
class VersionWriter:
    """Collects the tables of one run; :meth:`commit` publishes them."""

    out: Path
    version: str
    staging: Path

    def write_table(self, name: str, df: DataFrame) -> int:
        """Write ``df`` as Parquet table ``name``; returns its row count."""
        path = self.staging / name
        df.write.mode("error").parquet(str(path))
        return df.sparkSession.read.parquet(str(path)).count()

    def write_rows(self, name: str, columns: dict[str, str], rows) -> int:
        """Write ``rows`` (tuples in the order of ``columns``: {name: "long" | "string"}) as the
        Parquet table ``name`` from the driver (pyarrow; the same layout Spark reads); returns
        the row count."""
        rows = list(rows)
        return self.write_columns(name, columns, [[r[i] for r in rows] for i in range(len(columns))])

    def write_columns(self, name: str, columns: dict[str, str], values) -> int:
        """:meth:`write_rows` from one sequence (list, numpy array) per column."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        types = {"long": pa.int64(), "string": pa.string()}
        schema = pa.schema([(c, types[t]) for c, t in columns.items()])
        arrays = [pa.array(v, type=f.type) for v, f in zip(values, schema)]
        path = self.staging / name
        path.mkdir()
        table = pa.Table.from_arrays(arrays, schema=schema)
        pq.write_table(table, str(path / "part-00000.parquet"))
        return table.num_rows

    def commit(self, manifest: dict) -> None:
        manifest = {**manifest, "version": self.version}
        (self.staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
        final = self.out / VERSIONS / self.version
        os.rename(self.staging, final)
        pointer = self.out / (CURRENT + ".tmp")
        with open(pointer, "w", encoding="utf-8") as handle:
            handle.write(self.version + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(pointer, self.out / CURRENT)


@contextlib.contextmanager
def new_version(out: str | Path) -> Iterator[VersionWriter]:
    """Stage a new version; on any exception the staging directory is removed, CURRENT untouched."""
    out = _root(out)
    with _locked(out):
        (out / VERSIONS).mkdir(parents=True, exist_ok=True)
        for stale in (out / VERSIONS).glob(".tmp-*"):  # left by a crashed run; we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        existing = [int(v[1:]) for v in list_versions(out) if v[1:].isdigit()]
        version = f"v{(max(existing) + 1 if existing else 1):06d}"
        staging = out / VERSIONS / f".tmp-{version}-{os.getpid()}"
        staging.mkdir()
        writer = VersionWriter(out, version, staging)
        try:
            yield writer
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


@dataclasses.dataclass
class Materialized:
    """Reader over one published version."""

    spark: SparkSession
    out: Path
    version: str
    manifest: dict

    def table(self, name: str, decoded: bool = False) -> DataFrame:
        """Table ``name`` as a DataFrame of ids, or of N-Triples strings when ``decoded``."""
        if name not in TABLES:
            raise StoreError(f"unknown table {name!r}; tables are {', '.join(TABLES)}")
        df = self.spark.read.parquet(str(self.out / VERSIONS / self.version / name))
        if decoded and name in TERM_COLUMNS:
            df = decode(df, self.table(DICTIONARY), TERM_COLUMNS[name])
        return df


def open_version(spark: SparkSession, out: str | Path, version: str | None = None) -> Materialized:
    """Open the current version of ``out`` (or ``version``) for reading."""
    manifest = read_manifest(out, version)
    return Materialized(spark, _root(out), manifest["version"], manifest)
