"""Benchmark: the store's tables as plain Parquet (``reasoner.store``) against Delta Lake.

    python bench/store_format.py [--data-dir D] [--work DIR] [--instances 5000000] [--rounds 2]

Materializes the plant hierarchy plus N instance triples (engine spark), then, side by side in
one session and alternating the two formats ``--rounds`` times on the same rows:

* writing the version's three bulk tables (dictionary, types, inferred) as Parquet and as Delta;
* an incremental refresh's appends (1% more instance triples: the new rows of each table, as the
  refresh computed them) — Parquet as the store does it (the previous files hard-linked into a
  new version directory, one part file more per table) and Delta as an append commit per table;
* reading one version back (a ``count`` of the types table): the version's directory, and Delta's
  ``versionAsOf``.

Delta's jars (``io.delta:delta-spark_2.13``) come from Maven Central through the project's jar
cache (``rdfcore.jars.resolve``); the Python package is ``delta-spark`` from PyPI (only its
configuration names are used: no import needed). The answer decides the README's "why plain
Parquet" paragraph.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ontologies import plants  # noqa: E402
from ontologies.data import data_dir  # noqa: E402

DELTA = ("io.delta", "delta-spark_2.13", "4.0.0")
BULK = ("dictionary", "types", "inferred")


def delta_session():
    """A session with Delta's jars. They are cached in a directory of their own under the jar
    cache: every jar directly in the cache goes onto every session's classpath
    (``jobs.spark.build_session``), and Delta is not a dependency of the project."""
    import os

    from jobs.spark import build_session
    from rdfcore import jars

    saved = os.environ.get("RSP_JAR_CACHE")
    os.environ["RSP_JAR_CACHE"] = str(jars.cache_dir() / "delta")
    try:
        found = jars.resolve(jars.Artifact(*DELTA))
    finally:
        os.environ.pop("RSP_JAR_CACHE") if saved is None else os.environ.update(RSP_JAR_CACHE=saved)
    conf = {"spark.jars": ",".join(str(j) for j in found),
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
    return build_session("rsp-sidecar bench store format", conf)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def link_tree(source: Path, target: Path) -> None:
    """The store's way to carry a version's files into the next one (``incremental._link_table``)."""
    from rdfcore import fs

    target.mkdir(parents=True)
    for file in source.iterdir():
        if not file.name.startswith((".", "_")):
            fs.link_or_copy(file, target / file.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--work")
    parser.add_argument("--instances", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)

    from reasoner import store
    from reasoner.publish import materialize_sources

    work = Path(args.work or tempfile.mkdtemp(prefix="rsp-bench-format-"))
    work.mkdir(parents=True, exist_ok=True)
    taxa = plants.read_taxonomy(plants.taxonomy_path(data_dir(args.data_dir)))
    hierarchy, instances = work / "plants.nt", work / "instances.nt"
    plants.write_hierarchy(taxa, hierarchy, labels=False)
    plants.write_instances(taxa, instances, args.instances, seed=1)
    spark = delta_session()
    spark.sparkContext.setLogLevel("ERROR")
    out = work / "store"
    shutil.rmtree(out, ignore_errors=True)
    materialize_sources(spark, [hierarchy, instances], out, engine="spark", if_changed=True)
    first = out / store.VERSIONS / store.current_version(out)
    added = work / "added.nt"
    plants.write_instances(taxa, added, args.instances // 100, seed=2, prefix="http://example.org/plants/added/")
    with instances.open("ab") as handle, added.open("rb") as extra:
        shutil.copyfileobj(extra, handle)
    materialize_sources(spark, [hierarchy, instances], out, engine="spark", if_changed=True)
    second = out / store.VERSIONS / store.current_version(out)
    manifest = json.loads((second / "manifest.json").read_text())
    assert manifest["mode"] == "incremental", manifest.get("full_because")
    tables = {name: spark.read.parquet(str(first / name)).cache() for name in BULK}
    # the refresh's new rows: the part files the incremental version added
    deltas = {name: spark.read.parquet(*[str(f) for f in (second / name).glob("*incremental*.parquet")]).cache()
              for name in BULK}
    rows = {name: tables[name].count() for name in BULK}
    new_rows = {name: deltas[name].count() for name in BULK}

    figures = {k: [] for k in ("parquet_write", "delta_write", "parquet_append", "delta_append",
                               "parquet_read", "delta_read")}
    for round_ in range(args.rounds):
        root = work / f"round{round_}"
        shutil.rmtree(root, ignore_errors=True)
        figures["parquet_write"].append(sum(timed(lambda n=n: tables[n].write.parquet(str(root / "p1" / n)))
                                            for n in BULK))
        figures["delta_write"].append(sum(timed(lambda n=n: tables[n].write.format("delta").save(str(root / "d" / n)))
                                          for n in BULK))

        def parquet_append(name: str) -> None:
            link_tree(root / "p1" / name, root / "p2" / name)
            deltas[name].coalesce(1).write.mode("append").parquet(str(root / "p2" / name))

        figures["parquet_append"].append(sum(timed(lambda n=n: parquet_append(n)) for n in BULK))
        figures["delta_append"].append(sum(
            timed(lambda n=n: deltas[n].coalesce(1).write.format("delta").mode("append").save(str(root / "d" / n)))
            for n in BULK))
        figures["parquet_read"].append(timed(lambda: spark.read.parquet(str(root / "p1" / "types")).count()))
        figures["delta_read"].append(timed(
            lambda: spark.read.format("delta").option("versionAsOf", 0).load(str(root / "d" / "types")).count()))
        shutil.rmtree(root)

    print(f"\nstore tables, plant hierarchy + {args.instances:,} instance triples "
          f"({', '.join(f'{n} {rows[n]:,} rows' for n in BULK)}); best of {args.rounds}")
    print(f"  {'':34} {'Parquet':>9} {'Delta':>9} {'Delta/Parquet':>14}")
    for label, key in (("write the bulk tables", "write"),
                       (f"append a 1% refresh ({sum(new_rows.values()):,} rows)", "append"),
                       ("read one version (count types)", "read")):
        p, d = min(figures[f"parquet_{key}"]), min(figures[f"delta_{key}"])
        print(f"  {label:<34} {p:8.2f}s {d:8.2f}s {d / p:13.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
