"""The local Python worker daemon (``jobs.pyworker``): PySpark's own, without the archives each
Python task would read again (``importlib.invalidate_caches`` re-reads every zip on the path)."""
from __future__ import annotations

import os

from jobs.pyworker import strip_archives


def test_strip_archives_drops_only_pysparks_own_when_pyspark_is_installed():
    import pyspark

    lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    jar = os.path.join(os.path.dirname(pyspark.__file__), "jars", "spark-core.jar")
    mine = os.path.join(os.sep, "opt", "deps.zip")
    path = [os.path.join(lib, "pyspark.zip"), os.path.join(lib, "py4j-src.zip"), jar, mine]
    path += [p for p in __import__("sys").path if not p.endswith((".zip", ".jar"))]
    kept = strip_archives(path)
    assert kept == [p for p in path if p not in path[:3]]        # another archive stays
    assert strip_archives(["/nowhere"]) == ["/nowhere"]


def test_local_workers_start_without_the_archives(spark):
    """The suite's session runs Python tasks through the daemon: their sys.path holds no archive of
    PySpark's, and they still import PySpark (from the installed package)."""
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.python.daemon.module") == "jobs.pyworker"

    @F.udf("string")
    def archives(_x):
        import sys

        import pyspark
        return ",".join(p for p in sys.path if p.endswith((".zip", ".jar")) and "pyspark" in p) + "|" + pyspark.__file__

    (row,) = spark.range(1).select(archives("id").alias("a")).collect()
    found, origin = row["a"].split("|")
    assert found == "" and ".zip" not in origin


def test_the_daemons_collection_after_a_task_is_of_the_young_generations(monkeypatch):
    """What the daemon calls as ``gc.collect()`` after each task collects generations 0 and 1
    only, and the daemon is given it in place of the ``gc`` module (it uses nothing else of it)."""
    import gc
    import inspect

    from pyspark import daemon

    from jobs import pyworker

    asked = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: asked.append(generation) or 0)
    pyworker.YoungCollections.collect()
    pyworker.YoungCollections.collect(0)
    assert asked == [1, 0]
    used = {line.split("gc.", 1)[1].split("(", 1)[0] for line in inspect.getsource(daemon).splitlines()
            if "gc." in line and not line.lstrip().startswith("#")}
    assert used == {"collect"}
