"""PySpark's Python worker daemon for local sessions, without the archives every task re-reads.

Before each task a PySpark worker calls ``importlib.invalidate_caches()``
(``pyspark.worker_util.setup_spark_files``), and Python's zip importer answers that by reading its
archive's whole directory again. Spark puts three archives on its workers' ``PYTHONPATH``:
``pyspark.zip``, py4j's zip and the spark-core jar (5,000+ entries). Reading them costs ~30 ms of
CPU per task, which was most of what the Python workers did in the test suite (BIND and FILTER's
Arrow UDFs: many small tasks).

When PySpark is installed as a package (pip), those archives only repeat it. This daemon drops
them from ``sys.path`` and from the importer cache before PySpark is imported, then runs PySpark's
own daemon (``pyspark.daemon.manager``), so every forked worker starts without them. Where PySpark
is not importable without them it changes nothing.

After every task a reused worker also runs a full garbage collection (``gc.collect()``), which
walks every object the worker holds: its imports, pandas, numpy, and a stateful operator's
program, static side and kernels. A py-spy profile of the keyed operator's benchmark put 28% of
its Python workers' CPU there. This daemon's workers collect the young generations after a task
(``YoungCollections``); the old generation is collected when Python's own thresholds say so, as
in any process.

``jobs.spark.build_session`` selects this daemon for local masters only
(``spark.python.daemon.module``); on a cluster the workers keep Spark's path and PySpark's daemon.
"""
from __future__ import annotations

import gc
import importlib.util
import os
import sys

__all__ = ["strip_archives", "main", "YoungCollections"]


def strip_archives(path: list[str]) -> list[str]:
    """``path`` without the PySpark archives (``.zip`` / ``.jar`` entries under the installed
    PySpark package) when PySpark is importable from a plain directory; else ``path`` itself."""
    archives = [p for p in path if p.endswith((".zip", ".jar")) and os.sep + "pyspark" + os.sep in p]
    if not archives:
        return path
    kept = [p for p in path if p not in archives]
    saved = sys.path[:]
    try:
        sys.path[:] = kept
        spec = importlib.util.find_spec("pyspark")
    finally:
        sys.path[:] = saved
    if spec is None or spec.origin is None or spec.origin.endswith((".zip", ".jar")) or ".zip" + os.sep in spec.origin:
        return path
    return kept


def main() -> None:
    kept = strip_archives(sys.path)
    if kept is not sys.path:
        dropped = set(sys.path) - set(kept)
        sys.path[:] = kept
        for entry in list(sys.path_importer_cache):
            if entry in dropped or any(entry.startswith(d + os.sep) for d in dropped):
                del sys.path_importer_cache[entry]
    from pyspark import daemon

    daemon.gc = YoungCollections()
    daemon.manager()


class YoungCollections:
    """What the daemon's workers see as ``gc`` (module doc): after each task, a collection of the
    young generations only; the old one is left to Python's own thresholds."""

    @staticmethod
    def collect(generation: int = 2) -> int:
        return gc.collect(min(generation, 1))


if __name__ == "__main__":
    main()
