"""The state a continuous query carries from one micro-batch to the next, checkpointed beside Spark's
own: the items some window can still hold, the answers emitted, the last evaluation, and each
batch's meta record (``Meta``), written atomically per batch label (``StateStore``)."""
from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from cep.engines.columns import ITEM, T_END, T_START
from rdfcore import fs
from rdfcore.fs import spark_path
from rdfcore.locations import Location
from rdfcore.schema import O, P, S


#: the stream IRI of a state item
STREAM = "_stream"

TERM_COLUMNS = {S: "_s_term", P: "_p_term", O: "_o_term"}


#: output keys besides the projected variables
OUT_START, OUT_END, OUT_VERSION, OUT_AT = "_start", "_end", "_version", "_at"

STATE_DIR, SPARK_DIR, METRICS_FILE = "state", "spark", "metrics.jsonl"


ITEMS, EMITTED, LAST, META = "items", "emitted", "last", "meta.json"

#: staged inputs of a batch (dropped with its state directory)
LINES, NEW = "_lines", "_new"

CLOSED = "-closed"


@dataclass
class Meta:
    max_time: int | None = None   # largest event time accepted so far
    first: int | None = None      # smallest event time accepted: the first instant evaluated
    done: int | None = None       # every instant ≤ done has been evaluated
    version: str | None = None    # the static side's version used last
    closed: bool = False
    state_rows: int | None = None  # items kept (the driver-side path's size test)
    #: the window convention the state was computed under (``cep.algebra.WindowConvention`` as a
    #: dict; None in a checkpoint written before it was recorded)
    convention: dict | None = None

    def to_json(self) -> str:
        return json.dumps(self.__dict__)


class StateStore:
    """``CHECKPOINT/state/<label>/``: items, emitted, last (Parquet) and meta.json per batch; each
    meta.json records ``convention`` (the run's window convention, see ``Meta``)."""

    def __init__(self, spark: SparkSession, root: Location, convention: dict | None = None):
        self.spark, self.root, self.convention = spark, root / STATE_DIR, convention

    @staticmethod
    def label(batch_id: int, closed: bool = False) -> str:
        return f"{batch_id:010d}" + (CLOSED if closed else "")

    def _labels(self) -> list[tuple[int, bool, str]]:
        if not self.root.is_dir():
            return []
        out = []
        for p in self.root.iterdir():
            name = p.name
            if name.startswith(".") or not (p / META).exists():
                continue
            closed = name.endswith(CLOSED)
            out.append((int(name[:10]), closed, name))
        return sorted(out)

    def latest_before(self, batch_id: int | None) -> tuple[str | None, Meta]:
        """The newest state written by a batch before ``batch_id`` (None: the newest of all)."""
        found = [x for x in self._labels() if batch_id is None or x[0] < batch_id]
        if not found:
            return None, Meta()
        name = found[-1][2]
        return name, Meta(**json.loads((self.root / name / META).read_text(encoding="utf-8")))

    def frame(self, name: str | None, table: str) -> DataFrame | None:
        if name is None or not (self.root / name / table).exists():
            return None
        return self.spark.read.parquet(spark_path(self.root / name / table))

    def staging(self, label: str) -> Location:
        """A fresh directory the batch ``label`` writes into; ``write`` renames it into place."""
        tmp = self.root / f".tmp-{label}-{os.getpid()}"
        fs.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        return tmp

    def _tmp(self, label: str) -> Location:
        tmp = self.root / f".tmp-{label}-{os.getpid()}"
        return tmp if tmp.is_dir() else self.staging(label)

    def put(self, label: str, table: str, df: DataFrame) -> DataFrame:
        """Write one table of batch ``label``'s state (staged until ``write``); read it back."""
        path = str(self._tmp(label) / table)
        df.write.mode("overwrite").parquet(path)
        return self.spark.read.parquet(spark_path(path))

    def table(self, name: str | None, table: str):
        """A state table as a pyarrow Table (the driver-side path, ``cep.engines.driver.rows``), or None."""
        if name is None or not (self.root / name / table).exists():
            return None
        try:
            return fs.read_parquet(self.root / name / table)
        except FileNotFoundError:      # no part file: nothing kept
            return None

    def write(self, label: str, tables: Mapping[str, object], meta: Meta) -> None:
        """Stage ``tables`` (DataFrames, or pyarrow Tables from the driver-side path: the same
        Parquet either way, so consecutive batches may take different paths) and ``meta``, then
        rename the batch's directory into place."""
        import pyarrow as pa

        tmp = self._tmp(label)
        for name, df in tables.items():
            if isinstance(df, pa.Table):
                fs.rmtree(tmp / name, ignore_errors=True)
                (tmp / name).mkdir()
                fs.write_parquet(df, tmp / name / "part-00000.parquet")
            elif df is not None:
                df.write.mode("overwrite").parquet(str(tmp / name))
        meta.convention = self.convention
        (tmp / META).write_text(meta.to_json(), encoding="utf-8")
        final = self.root / label
        if final.exists():  # a replayed batch: the same content again
            fs.rmtree(final)
        tmp.rename(final)
        for staged in (LINES, NEW):  # read by this batch only; its kept items are in ITEMS now
            fs.rmtree(final / staged, ignore_errors=True)

    def prune(self, keep_from: int) -> None:
        """Drop the states of batches before ``keep_from`` (the previous one stays for a replay)."""
        for batch, _closed, name in self._labels():
            if batch < keep_from:
                fs.rmtree(self.root / name, ignore_errors=True)


#: the columns of a state item
ITEM_COLUMNS = (STREAM, ITEM, S, P, O, T_START, T_END, *TERM_COLUMNS.values())


@functools.cache
def item_schema():
    """The state items as the driver-side path holds them: ``ITEM_COLUMNS`` as a pyarrow schema."""
    import pyarrow as pa

    return pa.schema([(c, pa.string() if c in (STREAM, *TERM_COLUMNS.values()) else pa.int64()) for c in ITEM_COLUMNS])


def state_items(old, new=None):
    """The state items read back (a pyarrow table, or None) and the batch's new ones, as one table
    of ``item_schema``."""
    import pyarrow as pa

    parts = [t.select(list(ITEM_COLUMNS)).cast(item_schema()) for t in (old, new) if t is not None]
    return pa.concat_tables(parts) if parts else item_schema().empty_table()


def table_rows(table, columns) -> list[tuple]:
    """A pyarrow table's rows as tuples of ``columns`` (column-wise: no dict per row)."""
    if table is None:
        return []
    return list(zip(*(table.column(c).to_pylist() for c in columns))) if table.num_rows else []


def rows_table(rows, schema):
    """Tuples in the order of ``schema``'s fields → a pyarrow table."""
    import pyarrow as pa

    columns = list(zip(*rows)) if rows else [[] for _ in schema.names]
    return pa.table({name: pa.array(list(values), type=schema.field(name).type)
                     for name, values in zip(schema.names, columns)}, schema=schema)
