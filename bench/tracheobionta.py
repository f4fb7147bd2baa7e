"""Benchmark: the Tracheobionta service against per-triple reasoning (EP-SPARQL's Test 2).

    python bench/tracheobionta.py [--sizes 10000 100000 1000000 10000000] [--per-file 1000000]
                                  [--oxigraph-seconds 30] [--owlrl-triples 2] [--seed 1]

The paper measures the "delay caused by reasoning" per streamed triple: is the subject of this
triple an instance of Tracheobionta (42,006 subclasses in the real USDA taxonomy)? A seeded
stream (``scenarios.plant_stream``: 70 % typed observations — 70 % of them inside Tracheobionta,
the rest real non-vascular taxa — 5 % unknown taxa, 25 % unrelated triples), one file per
``--per-file`` lines, for each size of ``--sizes``. Side by side in one run:

* **(a) ours**: ``scenarios.membership.run`` (the service of ``jobs/tracheobionta.py``) over the
  files, one file per micro-batch, trigger available-now, in a warm local[2] session, the closure
  published once beforehand. *Steady state* = the lines of all batches but the first over their
  time inside the batches; *end to end* = all lines over the wall time of the run (Spark's
  micro-batch planning and the checkpoint included).
* **(c) pyoxigraph**: the taxonomy loaded into a store once; per streamed triple: split the
  line, add the triple, ``ASK { <x> a/rdfs:subClassOf* <Tracheobionta> }``. Run for at most
  ``--oxigraph-seconds`` per size and extrapolated beyond (said so).
* **(b) rdflib + owlrl**: on-the-fly reasoning per triple, the approach the paper compares with:
  the taxonomy in an rdflib graph; per triple: add it, ``DeductiveClosure(RDFS_Semantics)`` over
  the graph, look the type up. Each closure takes tens of seconds, so only ``--owlrl-triples``
  triples are run (the first also closes the taxonomy itself; the figure is the last one's) and
  the per-triple time is extrapolated to each size (said so).

Answer counts are compared where both ran all lines.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def generate(taxa, directory: Path, n: int, per_file: int, seed: int) -> float:
    from scenarios.plant_stream import generate as write

    started = time.perf_counter()
    files = max(1, -(-n // per_file))
    write(taxa, directory, n, files=files, seed=seed)
    return time.perf_counter() - started


def ours(spark, directory: Path, store: Path, target: str, work: Path) -> dict:
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from scenarios.membership import run

    out, ckpt = work / "out", work / "ckpt"
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(ckpt, ignore_errors=True)
    started = time.perf_counter()
    with open(work / "metrics.jsonl", "w") as metrics:
        summary = run(spark, [FileSource("<urn:plants>", str(directory), max_files_per_trigger=1)], store=store,
                      target=target, sink=DirectorySink(out), checkpoint=ckpt, metrics=metrics)
    wall = time.perf_counter() - started
    batches = summary.per_batch
    steady = batches[1:] or batches
    lines = sum(b["lines"] for b in steady)
    seconds = sum(b["seconds"] for b in steady)
    return {"lines": summary.lines, "answers": summary.answers, "batches": summary.batches, "wall": wall,
            "steady_rate": lines / seconds if seconds else None, "end_to_end_rate": summary.lines / wall,
            "driver_batches": summary.driver_batches}


def oxigraph(hierarchy: Path, directory: Path, target: str, cap: float) -> dict:
    import pyoxigraph as ox

    store = ox.Store()
    started = time.perf_counter()
    with open(hierarchy, "rb") as handle:
        store.bulk_load(handle, ox.RdfFormat.N_TRIPLES)
    load = time.perf_counter() - started
    # the subject written into the query text: with a substitution for ?x instead, pyoxigraph
    # evaluates the path from the class's side (~45 ms a query instead of ~45 us)
    ask = "ASK {{ {} <" + RDF_TYPE + ">/<http://www.w3.org/2000/01/rdf-schema#subClassOf>* " + target + " }}"
    seen = answers = 0
    started = time.perf_counter()
    deadline = started + cap
    done = True
    for path in sorted(directory.glob("*.nt")):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                s, p, rest = line.split(" ", 2)
                o = rest.split(" ", 1)[0]
                subject = ox.NamedNode(s[1:-1])
                obj = ox.NamedNode(o[1:-1]) if o.startswith("<") else ox.Literal(o.strip('"'))
                store.add(ox.Quad(subject, ox.NamedNode(p[1:-1]), obj))
                if store.query(ask.format(s)):
                    answers += 1
                seen += 1
                if not seen % 1000 and time.perf_counter() > deadline:
                    done = False
                    break
        if not done:
            break
    seconds = time.perf_counter() - started
    return {"load": load, "seen": seen, "answers": answers, "seconds": seconds, "rate": seen / seconds,
            "complete": done}


def owlrl_per_triple(hierarchy: Path, directory: Path, target: str, triples: int, cap: float) -> dict | None:
    """(b) in a child process stopped after ``cap`` seconds: a closure that has not finished by
    then gives a lower bound (``bounded``)."""
    if triples <= 0:
        return None
    import subprocess

    line_file = sorted(directory.glob("*.nt"))[0]
    code = f"""
import json, time, owlrl, rdflib
g = rdflib.Graph(); t0 = time.perf_counter(); g.parse({str(hierarchy)!r}, format="nt")
print(json.dumps({{"load": time.perf_counter() - t0}}), flush=True)
klass = rdflib.URIRef({target[1:-1]!r})
with open({str(line_file)!r}, encoding="utf-8") as handle:
    for _ in range({triples}):
        s, p, rest = handle.readline().split(" ", 2)
        o = rest.split(" ", 1)[0]
        x = rdflib.URIRef(s[1:-1])
        t0 = time.perf_counter()
        g.add((x, rdflib.URIRef(p[1:-1]), rdflib.URIRef(o[1:-1]) if o.startswith("<") else rdflib.Literal(o.strip('"'))))
        owlrl.DeductiveClosure(owlrl.RDFS_Semantics).expand(g)
        found = (x, rdflib.RDF.type, klass) in g
        print(json.dumps({{"triple": time.perf_counter() - t0, "found": found}}), flush=True)
"""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    records = [json.loads(x) for x in out.splitlines() if x.strip()]
    load = next((r["load"] for r in records if "load" in r), None)
    times = [r["triple"] for r in records if "triple" in r]
    if times:
        return {"load": load, "first": times[0], "per_triple": times[-1], "triples": len(times), "bounded": False}
    spent = time.perf_counter() - started - (load or 0)
    return {"load": load, "first": None, "per_triple": spent, "triples": 0, "bounded": True}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 10_000_000])
    parser.add_argument("--per-file", type=int, default=1_000_000, help="lines per file = per micro-batch")
    parser.add_argument("--oxigraph-seconds", type=float, default=30.0)
    parser.add_argument("--owlrl-triples", type=int, default=2, help="0 skips (b)")
    parser.add_argument("--owlrl-seconds", type=float, default=300.0, help="cap on (b); a lower bound past it")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir")
    parser.add_argument("--work", help="working directory (default: a temporary one)")
    args = parser.parse_args(argv)

    from jobs.spark import build_session
    from jobs.tracheobionta import publish_taxonomy
    from ontologies.data import data_dir
    from ontologies.plants import TRACHEOBIONTA_ID, class_iri, read_taxonomy, taxonomy_path

    work = Path(args.work or tempfile.mkdtemp(prefix="bench-tracheobionta-"))
    work.mkdir(parents=True, exist_ok=True)
    taxa = read_taxonomy(taxonomy_path(data_dir(args.data_dir)))
    target = class_iri(TRACHEOBIONTA_ID)
    spark = build_session("bench tracheobionta", {"spark.master": "local[2]"})
    store = work / "closure"
    t0 = time.perf_counter()
    published = publish_taxonomy(spark, store, args.data_dir)
    print(f"closure published: version {published.get('version')} in {time.perf_counter() - t0:.1f} s "
          f"(engine {published.get('engine', '?')}); hierarchy {store / 'source' / 'plants.nt'}")
    hierarchy = store / "source" / "plants.nt"
    # warm-up: one small run so the first size does not pay for the JVM's first streaming query
    warm = work / "warm"
    generate(taxa, warm / "in", 1000, 1000, args.seed + 99)
    ours(spark, warm / "in", store, target, warm)

    owl = owlrl_per_triple(hierarchy, warm / "in", target, args.owlrl_triples, args.owlrl_seconds)
    if owl and owl["bounded"]:
        print(f"(b) rdflib+owlrl: the closure for the first streamed triple did not finish in "
              f"{owl['per_triple']:.0f} s (stopped): per triple > {owl['per_triple']:.0f} s, a lower bound below")
    elif owl:
        print(f"(b) rdflib+owlrl: taxonomy parsed in {owl['load']:.1f} s; closure per triple: first "
              f"{owl['first']:.1f} s, then {owl['per_triple']:.1f} s ({owl['triples']} triples run, "
              f"extrapolated below)")
    rows = []
    for n in args.sizes:
        directory = work / f"stream-{n}"
        shutil.rmtree(directory, ignore_errors=True)
        gen = generate(taxa, directory, n, args.per_file, args.seed)
        a = ours(spark, directory, store, target, work / f"ours-{n}")
        c = oxigraph(hierarchy, directory, target, args.oxigraph_seconds)
        row = {"triples": n, "generate_s": round(gen, 1), "ours": a, "oxigraph": c}
        ratio = a["steady_rate"] / c["rate"] if a["steady_rate"] and c["rate"] else None
        check = ("answers equal" if c["answers"] == a["answers"] else
                 f"ANSWERS DIFFER: ours {a['answers']} oxigraph {c['answers']}") if c["complete"] else \
            f"oxigraph ran {c['seen']:,} of {n:,} lines in {c['seconds']:.0f} s, extrapolated"
        print(f"\n== {n:,} streamed triples ({a['batches']} micro-batches, {a['answers']:,} answers; "
              f"stream generated in {gen:.1f} s)")
        print(f"  (a) ours   steady {a['steady_rate']:>12,.0f} triples/s  ({1e6 / a['steady_rate']:.2f} us/triple)   "
              f"end to end {a['end_to_end_rate']:>12,.0f} triples/s  ({a['wall']:.1f} s)")
        print(f"  (c) oxigraph      {c['rate']:>12,.0f} triples/s  ({1e6 / c['rate']:.1f} us/triple)   "
              f"{'total' if c['complete'] else 'extrapolated'} {n / c['rate']:.1f} s   [{check}]")
        if owl:
            bound = "<" if owl["bounded"] else ""
            print(f"  (b) owlrl        {bound}{1 / owl['per_triple']:>12,.4f} triples/s  ({owl['per_triple']:.1f} s/triple)   "
                  f"extrapolated {'>' if bound else ''}{n * owl['per_triple'] / 86400:,.1f} days")
        print(f"  ratio ours/oxigraph (steady): {ratio:,.0f}x" + (
            f"   ours/owlrl: {'>' if owl['bounded'] else ''}{a['steady_rate'] * owl['per_triple']:,.0f}x" if owl else ""))
        rows.append(row)
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(work / f"ours-{n}" / "out", ignore_errors=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak driver memory (Python process RSS): {peak:,.0f} MiB")
    print(json.dumps({"results": rows, "owlrl": owl}, default=str))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
