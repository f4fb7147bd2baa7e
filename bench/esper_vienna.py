"""The classic-CEP baseline of the Vienna benchmarks (``bench/streaming.py``, ``bench/planner.py``):
Esper 8.9 running ``bench/esper/ViennaDelays.java`` on the same JSON Lines files, the static side
(which vehicles are subways, which stops reach the centre by subway) computed by our engine and
handed to it as two sets of local names."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from pyspark.sql import functions as F

from cep.engines.spark.evaluate import Prepared
from rdfcore import jars

ROOT = Path(__file__).resolve().parent.parent
VERSION = "8.9.0"


def static_sets(query, side) -> dict[str, str]:
    """{"v_v": the subways, "v_s": the stops}, comma-separated local names, from the background
    patterns of ``query`` over ``side`` (a ``cep.continuous.static.StaticSide``): one relation as
    written, or the planner's parts, each binding one of the two."""
    sets = {}
    for frame in Prepared(query, side.background, "m", dictionary=side.dictionary).background_lifetimes().values():
        for column in ("v_v", "v_s"):
            if column in frame.columns:
                ids = frame.select(F.col(column).alias("id")).distinct()
                terms = side.dictionary.join(ids, "id", "left_semi").collect()
                sets[column] = ",".join(sorted(t["term"].split("#", 1)[1].rstrip(">") for t in terms))
    return sets


def run(mode: str, sets: dict[str, str], files, work: Path, timeout: float = 1800) -> tuple[dict | None, str | None]:
    """Esper on ``files`` in ``mode`` ("all": every pair, ``every a -> every b``; "next": ``every a
    -> b``): ({"events", "answers", "seconds", "compile_seconds"}, None), or (None, why it did not
    run). The sets go through files in ``work``: a large fleet's subways exceed a command line."""
    try:
        classpath = [p for name in ("esper-compiler", "esper-runtime")
                     for p in jars.ivy_resolve(jars.Artifact("com.espertech", name, VERSION),
                                               jars.cache_dir() / "esper", skip_spark_provided=False)]
    except jars.JarUnavailable as exc:
        return None, f"not run ({exc})"
    listed = []
    for column in ("v_v", "v_s"):
        path = work / f"esper-{column}.csv"
        path.write_text(sets[column], encoding="utf-8")
        listed.append(f"@{path}")
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    done = subprocess.run([java, "-cp", os.pathsep.join(map(str, classpath)),
                           str(ROOT / "bench" / "esper" / "ViennaDelays.java"), mode, "10", *listed,
                           *sorted(str(f) for f in files)], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        return None, f"failed: {done.stderr.strip()[-500:]}"
    return json.loads(done.stdout.strip().splitlines()[-1]), None
