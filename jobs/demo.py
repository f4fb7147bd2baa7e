"""The README's demo: materialize the real plant taxonomy and ask the Tracheobionta question.

1. build the RDFS class hierarchy from ``plants/plants_taxonomy.csv`` (data directory) and
   ``--instances`` random instance triples ``:x rdf:type :SomeTaxon`` (N-Triples files);
2. materialize them into a versioned store under ``--out`` (a second run with ``--if-changed``
   shows the scheduled refresh skipping unchanged sources);
3. read the ``types`` table back and count the instances that are Tracheobionta (vascular
   plants), checked against a pure-Python walk of the taxonomy;
4. materialize the hand-written Vienna schema + running-example background and show what the
   reasoner derived for ``:conn1``;
5. build the real Wiener Linien network (``vienna/`` in the data directory) and ask which stations
   reach Stephansplatz by subway: the running example's nested path
   ``(^:beg/[:means :subway]/:end)+`` compiled to Spark joins (``jobs/paths.py``);
6. the CQELS-CEP running example (``ontologies/vienna_example_query.rq`` over
   ``vienna_example.ttl`` and the stream ``vienna_example_stream.jsonl``): no answer at t=14,
   exactly ``?s = :m`` with interval [10, 16] at t=16 (``jobs/query.py``); then the same job on the
   other languages: EP-SPARQL's stock query (``stock_example_query.rq``: one answer, :ACME over
   days [1, 10]) and RSEP-QL's Fig. 1 under the chronological policy at 8 and 10
   (``rsep_fig1_query.rq``: two answers at 8, none at 10, the rest consumed); and C-SPARQL's
   cars entering per district, registered as a stream (``csparql_entering_query.rq``), read
   back by a second registered query (``csparql_busy_query.rq``: :Distr1 with 2 cars at 10);
7-9. the three scenario services, briefly, on small seeded streams (trigger available-now):
   Tracheobionta stream reasoning (200,000 streamed triples against the closure of step 1; the
   answer count checked against the generator's own draw), Vienna transit alerts on the real
   network, and Milan route recomputation for three agents with a PNG map.
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path

from pyspark.sql import functions as F

from jobs import milan_routing, tracheobionta, vienna_transit
from jobs import paths as paths_job
from jobs.spark import build_session
from ontologies import plants, vienna
from ontologies.data import data_dir
from rdfcore import resources
from rdfcore.hashing import term_id
from rdfcore.schema import CLASS, INSTANCE, TYPES
from rdfcore.terms import write_ntriples
from reasoner.publish import materialize_sources
from reasoner.store import open_version
from scenarios.plant_stream import Mix, generate



def example(name: str) -> Path:
    """A shipped example file (package ``ontologies``) as a file on disk."""
    return resources.path("ontologies", name)


VIENNA = "http://example.org/vienna#"
STEPHANSPLATZ = "st60201320"  # the station (DIVA) of Stephansplatz, Vienna's centre


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="the shared data directory (default: ../shared/data or $RSP_DATA_DIR)")
    parser.add_argument("--out", default="out/demo", help="where the demo writes its files and stores")
    parser.add_argument("--instances", type=int, default=100_000, help="instance triples to generate")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    taxa = plants.read_taxonomy(plants.taxonomy_path(data_dir(args.data_dir)))
    hierarchy, instances = out / "plants.nt", out / "plant_instances.nt"
    plants.write_hierarchy(taxa, hierarchy)
    plants.write_instances(taxa, instances, args.instances, seed=7)
    spark = build_session("rsp-sidecar demo")

    print("== 1. materialize the plant taxonomy + instances")
    summary = materialize_sources(spark, [hierarchy, instances], out / "plants-store")
    print(json.dumps(summary, sort_keys=True))
    print("== 2. scheduled refresh with --if-changed (sources unchanged)")
    print(json.dumps(materialize_sources(spark, [hierarchy, instances], out / "plants-store", if_changed=True),
                     sort_keys=True))

    print("== 3. which instances are Tracheobionta (vascular plants)?")
    store = open_version(spark, out / "plants-store")
    vascular = store.table(TYPES).filter(F.col(CLASS) == term_id(plants.TRACHEOBIONTA)).select(INSTANCE)
    found = vascular.count()
    under = {plants.class_iri(t) for t in plants.descendants(taxa, plants.TRACHEOBIONTA_ID)}
    expected = sum(1 for line in instances.open(encoding="utf-8") if line.split(" ")[2] in under)
    print(f"instances typed Tracheobionta by the closure: {found}; by walking the taxonomy in Python: {expected}"
          f" -> {'OK' if found == expected else 'MISMATCH'}")

    print("== 4. the Vienna schema + running-example background")
    summary = materialize_sources(spark, [example("vienna_schema.ttl"), example("vienna_example.ttl")],
                                  out / "vienna-store")
    print(json.dumps(summary, sort_keys=True))
    inferred = open_version(spark, out / "vienna-store").table("inferred", decoded=True)
    for row in inferred.filter(F.col("s") == "<http://example.org/vienna#conn1>").orderBy("p", "o").collect():
        print(f"  {row.s} {row.p} {row.o} .")

    print("== 5. Wiener Linien network: which stations reach Stephansplatz by subway?")
    from jobs import query as query_job

    network = vienna.build(data_dir(args.data_dir))
    network_nt = out / "vienna.nt"
    written = write_ntriples(network_nt, vienna.triples(network), vienna.HEADER)
    print(json.dumps({**vienna.summary(network, data_dir(args.data_dir) / "vienna"), "triples": written},
                     ensure_ascii=False))
    answers = io.StringIO()
    paths_job.main(["--data", str(network_nt), "--prefix", f"={VIENNA}", "--path", "(^:beg/[:means :subway]/:end)+",
                    "--to", f":{STEPHANSPLATZ}"], spark=spark, out=answers)
    reaching = answers.getvalue().splitlines()[1:]
    labels = {vienna.station_iri(diva): station.name for diva, station in network.stations.items()}
    names = sorted(labels.get(row.split("\t")[0], row) for row in reaching)
    print(f"{len(names)} stations reach Stephansplatz by subway, e.g. {', '.join(names[:8])}")

    print("== 6. CQELS-CEP running example (query, background, stream):")
    print(resources.text("ontologies", "vienna_example_query.rq"))
    outcome = {}
    for at in (14, 16):
        answers_file = out / f"running_example_at_{at}.tsv"
        query_job.main([str(example("vienna_example_query.rq")), "--static", str(example("vienna_example.ttl")),
                        "--stream", f"<http://example.org/publicTransport>={example('vienna_example_stream.jsonl')}",
                        "--at", str(at), "--time-unit", "m", "--out", str(answers_file)])
        outcome[at] = answers_file.read_text(encoding="utf-8").splitlines()[1:]
        print(f"-- at t={at}: {len(outcome[at])} answer(s)")
        for line in outcome[at]:
            print("  " + line)
    integer = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    expected_cep = {14: [], 16: [f'<{VIENNA}m>\t"10"{integer}\t"16"{integer}']}
    cep_ok = outcome == expected_cep
    print(f"running example: {'OK' if cep_ok else 'MISMATCH, expected ' + repr(expected_cep)}")
    languages_ok = run_languages(out)
    scenarios_ok = run_scenarios(out / "scenarios", taxa, out / "plants-store", args.data_dir)
    return 0 if found == expected and cep_ok and languages_ok and scenarios_ok else 1


def run_languages(out: Path) -> bool:
    """Step 6, continued: EP-SPARQL's, RSEP-QL's and C-SPARQL's shipped examples through the query job."""
    from jobs import query as query_job

    integer = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    rsep = "http://example.org/rsep#"
    cases = [
        ("EP-SPARQL: stock price fell over 30% then rose over 5% within 30 days", "stock_example_query.rq",
         ["--stream", str(example("stock_example_stream.nt")), "--at", "200", "--time-unit", "d"],
         [f'<http://stock.example/ACME>\t"1"{integer}\t"10"{integer}']),
        ("RSEP-QL Fig. 1, chronological policy, evaluated at 8 and at 10", "rsep_fig1_query.rq",
         ["--stream", f"<{rsep}S>={example('rsep_fig1_stream.jsonl')}", "--at", "8,10", "--policy", "chronological"],
         [f'"8"{integer}\t<{rsep}a{i}>\t<{rsep}b{i}>\t<{rsep}c{i}>\t"{t}"{integer}\t"6"{integer}'
          for i, t in ((1, 2), (2, 4))]),
    ]
    ok = True
    for title, query, argv, expected in cases:
        print(f"== 6. {title}")
        answers_file = out / (query.replace(".rq", ".tsv"))
        query_job.main([str(example(query)), *argv, "--out", str(answers_file)])
        lines = answers_file.read_text(encoding="utf-8").splitlines()[1:]
        for line in lines:
            print("  " + line)
        good = lines == expected
        ok = ok and good
        print(f"{query}: {'OK' if good else 'MISMATCH, expected ' + repr(expected)}")
    print("== 6. C-SPARQL: cars entering per district every 5 minutes, registered as a stream, read by a "
          "second query")
    entering = out / "csparql_entering.nt"
    city = "http://linkedurbandata.org/city#"
    query_job.main([str(example("csparql_entering_query.rq")), "--static", str(example("csparql_city.ttl")),
                    "--stream", f"<http://streams.org/citytollgates.trdf>={example('csparql_tollgates_stream.nt')}",
                    "--time-unit", "m", "--at", "5,10", "--out", str(entering)])
    lines = entering.read_text(encoding="utf-8").splitlines()
    for line in lines:
        print("  " + line)
    busy = out / "csparql_busy.tsv"
    query_job.main([str(example("csparql_busy_query.rq")), "--stream", f"<http://example.org/streams/entering>={entering}",
                    "--time-unit", "m", "--at", "12", "--out", str(busy)])
    answers = busy.read_text(encoding="utf-8").splitlines()[1:]
    for line in answers:
        print("  " + line)
    good = len(lines) == 5 and answers == [f'<{city}Distr1>\t"2"{integer}\t"10"{integer}\t"10"{integer}']
    print(f"csparql_entering_query.rq -> csparql_busy_query.rq: {'OK' if good else 'MISMATCH'}")
    return ok and good


def _answers(directory: Path) -> list[dict]:
    rows = []
    for part in sorted(directory.glob("part-*.jsonl")):
        rows += [json.loads(line) for line in part.read_text(encoding="utf-8").splitlines()]
    return rows


def run_scenarios(work: Path, taxa, plant_store: Path, data: str | None) -> bool:
    """Steps 7-9: each scenario service briefly, on a small seeded stream, trigger available-now
    (each run starts from a fresh checkpoint, so the demo can be run again)."""
    shutil.rmtree(work, ignore_errors=True)
    data_args = ["--data-dir", data] if data else []
    print("== 7. Tracheobionta stream reasoning: streamed plants that are vascular (rsp-sidecar tracheobionta)")
    counts = generate(taxa, work / "plants-in", 200_000, files=2, seed=3, mix=Mix(bad=0.001))
    code = tracheobionta.main(["--stream", str(work / "plants-in"), "--closure", str(plant_store), "--checkpoint",
                               str(work / "plants-ckpt"), "--out", str(work / "plants-out"), "--rejects",
                               str(work / "plants-rejects")])
    rows = _answers(work / "plants-out")
    for row in rows[:3]:
        print("  " + json.dumps(row))
    plants_ok = code == 0 and len(rows) == counts["typed_positive"]
    print(f"{len(rows):,} answers from {counts['lines']:,} streamed triples ({counts['bad']} malformed lines "
          f"rejected into {work / 'plants-rejects'}); the generator drew {counts['typed_positive']:,} vascular "
          f"taxa -> {'OK' if plants_ok else 'MISMATCH'}")

    print("== 8. Vienna transit alerts on the real network (rsp-sidecar vienna-transit)")
    code = vienna_transit.main(["--stream", str(work / "vienna-in"), "--generate", "60", "--per-minute", "20",
                                "--checkpoint", str(work / "vienna-ckpt"), "--out", str(work / "vienna-out"),
                                "--network-dir", str(work / "vienna-network"), *data_args])
    rows = _answers(work / "vienna-out")
    for row in rows[:3]:
        print("  " + json.dumps(row))
    print(f"{len(rows)} alerts (stops with two subway delays and no arrival within 10 minutes, that reach "
          f"Stephansplatz by subway)")

    print("== 9. Milan route recomputation for 3 delivery agents (rsp-sidecar milan-routing)")
    png = work / "milan-map.png"
    code_m = milan_routing.main(["--generate", "3", "--locations", "5", "--stream", str(work / "milan-in"),
                                 "--agents", str(work / "milan-agents.json"), "--checkpoint", str(work / "milan-ckpt"),
                                 "--out", str(work / "milan-out"), "--map", str(png), *data_args])
    rows = _answers(work / "milan-out")
    for row in [r for r in rows if r["cause"] != "request"][:2] + [r for r in rows if r["event"] != "route"][:2]:
        brief = {k: row[k] for k in ("event", "agent", "from", "to", "t", "cause", "duration_s", "hops") if k in row}
        print("  " + json.dumps(brief))
    print(f"{len(rows)} route events; the map of the network, the closed connections and the routes: {png}")
    return plants_ok and code == 0 and code_m == 0
