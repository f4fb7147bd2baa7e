"""The Milan routing service (``scenarios.milan_routing``, ``jobs/milan_routing.py``) and its network.

Oracle for the service: an independent replay of the events (time order; a route recomputed on a
request and when a connection of the agent's route closes) that finds each route by enumerating
every simple path of a small network — not ``paths.weighted``.
"""
from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from ontologies import milan
from scenarios.milan_routing import ARRIVED, CLOSED, M, OPEN, REQUESTS, TRAFFIC, Plans, agent_iri

pytestmark = pytest.mark.spark


def test_the_real_network_is_connected_both_ways_with_estimated_durations(shared_data):
    net = milan.build(shared_data)
    assert len(net.stops) > 2000 and len(net.connections) > 5000 and not net.rejects
    for (route, beg, end), c in net.connections.items():
        assert (route, end, beg) in net.connections and c.seconds > 0
    modes = {c.mode for c in net.connections.values()}
    assert modes == {"metro", "tram", "bus", "walk"}
    lines = milan.triples(net)
    assert any("#dur>" in x and "duration" in x for x in lines)


def test_bad_rows_are_rejected_with_file_and_line(shared_data, tmp_path):
    (tmp_path / "milan").mkdir()
    for name in ("metro_routes.csv", "tram_routes.csv"):
        shutil.copy(shared_data / "milan" / name, tmp_path / "milan" / name)
    text = (shared_data / "milan" / "bus_routes.csv").read_text(encoding="utf-8").splitlines()
    text[3] = text[3].replace(text[3].split(",")[4], "north")
    text[5] = ",".join(text[5].split(",")[:3])
    (tmp_path / "milan" / "bus_routes.csv").write_text("\n".join(text) + "\n", encoding="utf-8")
    net = milan.build(tmp_path)
    assert sorted((r.line, r.reason.split(" ")[0]) for r in net.rejects) == [(4, "coordinates"), (6, "expected")]
    (tmp_path / "milan" / "tram_routes.csv").write_text("a,b\n", encoding="utf-8")
    with pytest.raises(milan.MilanDataError, match=r"tram_routes.csv:1: expected the header"):
        milan.build(tmp_path)


# --- the service on a small network, against an independent replay ------------------------------

def small_network(rng: random.Random, nodes: int = 7, edges: int = 16) -> milan.Network:
    stops = {f"stop/{i}": milan.Stop(f"stop/{i}", f"s{i}", 45.4 + i / 100, 9.1 + i / 100, "0", "0")
             for i in range(nodes)}
    conns = {}
    for k in range(edges):
        a, b = rng.sample(range(nodes), 2)
        conns[(f"r{k}", f"stop/{a}", f"stop/{b}")] = milan.Connection(f"r{k}", "bus", f"stop/{a}", f"stop/{b}", 100,
                                                                       rng.choice([30, 60, 90, 120]))
    return milan.Network(stops, conns, {f"r{k}": "bus" for k in range(edges)}, [])


def best_route(net: milan.Network, closed: set, source: str, target: str):
    out = {}
    for c in net.connections.values():
        if c.iri not in closed:
            out.setdefault(net.stops[c.beg].iri, []).append((c.iri, net.stops[c.end].iri, c.seconds))
    best = None

    def walk(node, seen, seconds, path, stops):
        nonlocal best
        if node == target:
            key = (seconds, len(path), tuple(path))
            if best is None or key < best[0]:
                best = (key, list(stops))
            return
        for key, nxt, s in out.get(node, ()):
            if nxt not in seen:
                walk(nxt, seen | {nxt}, seconds + s, path + [key], stops + [nxt])

    walk(source, {source}, 0, [], [source])
    return best


def replay(net, plans: Plans, events):
    """The semantics of the module doc, written again from scratch."""
    agents = {a: {"at": start, "todo": list(locs), "route": None} for a, (start, locs) in plans.agents.items()}
    closed, out = set(), []

    def recompute(name, t, cause):
        agent = agents[name]
        if not agent["todo"]:
            agent["route"] = None
            out.append(("finished", name, t, cause))
            return
        found = best_route(net, closed, agent["at"], agent["todo"][0]) if agent["at"] != agent["todo"][0] else \
            ((0, 0, ()), [agent["at"]])
        if found is None:
            agent["route"] = None
            out.append(("unreachable", name, t, cause, agent["todo"][0]))
            return
        (seconds, _hops, conns), stops = found
        agent["route"] = (list(stops), list(conns))
        out.append(("route", name, t, cause, tuple(stops), seconds))

    for t, s, p, o in sorted(events, key=lambda e: e[0]):
        if p == TRAFFIC and o == CLOSED and s not in closed:
            closed.add(s)
            for name in sorted(agents):
                route = agents[name]["route"]
                if route and s in route[1]:
                    recompute(name, t, f"closed {s}")
        elif p == TRAFFIC and o == OPEN:
            closed.discard(s)
        elif p == REQUESTS:
            recompute(s, t, "request")
        elif p == ARRIVED:
            agent = agents[s]
            agent["at"] = o
            if agent["todo"] and agent["todo"][0] == o:
                agent["todo"].pop(0)
                agent["route"] = None
            elif agent["route"] and o in agent["route"][0]:
                k = agent["route"][0].index(o)
                agent["route"] = (agent["route"][0][k:], agent["route"][1][k:])
            else:
                agent["route"] = None
    return out


def random_day(net, rng: random.Random, agents: int, n: int):
    iris = sorted(st.iri for st in net.stops.values())
    plans = Plans({agent_iri(f"a{i}"): (rng.choice(iris), rng.sample(iris, 3)) for i in range(agents)})
    conns = sorted(c.iri for c in net.connections.values())
    events = []
    for k in range(n):
        t = k * 7 + rng.randrange(3)
        x = rng.random()
        agent = rng.choice(sorted(plans.agents))
        if x < 0.35:
            events.append((t, rng.choice(conns), TRAFFIC, CLOSED))
        elif x < 0.5:
            events.append((t, rng.choice(conns), TRAFFIC, OPEN))
        elif x < 0.8:
            events.append((t, agent, REQUESTS, f"<{M}next>"))
        else:
            events.append((t, agent, ARRIVED, rng.choice(iris)))
    return plans, events


def outputs(directory: Path) -> list[dict]:
    rows = []
    for part in sorted(directory.glob("part-*.jsonl")):
        rows += [json.loads(x) for x in part.read_text().splitlines()]
    return rows


def as_replay(row: dict):
    if row["event"] == "finished":
        return ("finished", row["agent"], row["t"], row["cause"])
    if row["event"] == "unreachable":
        return ("unreachable", row["agent"], row["t"], row["cause"], row["to"])
    return ("route", row["agent"], row["t"], row["cause"], tuple(row["stops"]), row["duration_s"])


def test_routes_are_those_an_independent_replay_gives(spark, tmp_path):
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from scenarios.milan_routing import run

    every = []
    for seed in (1, 2, 3, 4):
        rng = random.Random(seed)
        net = small_network(rng)
        plans, events = random_day(net, rng, 3, 120)
        stream = tmp_path / f"in{seed}"
        stream.mkdir()
        for f in range(3):                                   # three files, three micro-batches
            part = [e for e in events if f * 280 <= e[0] < (f + 1) * 280]
            (stream / f"e{f}.jsonl").write_text("".join(json.dumps({"s": s, "p": p, "o": o, "t": t}) + "\n"
                                                        for t, s, p, o in part), encoding="utf-8")
            os.utime(stream / f"e{f}.jsonl", (1_600_000_000 + f, 1_600_000_000 + f))   # read in this order
        summary = run(spark, [FileSource("<urn:m>", str(stream), max_files_per_trigger=1)], network=net, plans=plans,
                      sink=DirectorySink(tmp_path / f"out{seed}"), checkpoint=tmp_path / f"ckpt{seed}")
        got = [as_replay(r) for r in outputs(tmp_path / f"out{seed}")]
        want = replay(net, plans, events)
        assert sorted(got, key=repr) == sorted(want, key=repr), seed
        assert summary.batches == 3 and summary.rejected == 0
        every += want
    assert {r[0] for r in every} >= {"route", "unreachable"}, "the random days exercise both outcomes"
    assert any(r[3].startswith("closed") for r in every), "and recomputations caused by closures"


def test_routes_searched_on_spark_are_the_same(spark, tmp_path):
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from scenarios.milan_routing import run

    rng = random.Random(7)
    net = small_network(rng, nodes=5, edges=10)
    plans, events = random_day(net, rng, 2, 10)
    stream = tmp_path / "in"
    stream.mkdir()
    (stream / "e.jsonl").write_text("".join(json.dumps({"s": s, "p": p, "o": o, "t": t}) + "\n"
                                            for t, s, p, o in events), encoding="utf-8")
    run(spark, [FileSource("<urn:m>", str(stream))], network=net, plans=plans, sink=DirectorySink(tmp_path / "out"),
        checkpoint=tmp_path / "ckpt", engine="spark")
    got = [as_replay(r) for r in outputs(tmp_path / "out")]
    assert sorted(got, key=repr) == sorted(replay(net, plans, events), key=repr)
    assert any(r[0] == "route" and len(r[4]) > 1 for r in got)


def test_bad_late_and_unknown_events_are_rejected_with_reasons(spark, tmp_path):
    """With issue 59's malformed lines between the events (``tests/running_example.py``: invalid
    UTF-8, NUL, broken JSON, bad timestamps, a 5 MB line...), each rejected with its line and reason."""
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from scenarios.milan_routing import run
    from tests.running_example import with_malformed_lines

    net = small_network(random.Random(4))
    iri = sorted(st.iri for st in net.stops.values())
    plans = Plans({agent_iri("a0"): (iri[0], [iri[1]])})
    stream = tmp_path / "in"
    stream.mkdir()
    data, malformed = with_malformed_lines([
        json.dumps({"s": agent_iri("a0"), "p": REQUESTS, "o": f"<{M}next>", "t": 10}),
        json.dumps({"s": agent_iri("ghost"), "p": REQUESTS, "o": f"<{M}next>", "t": 11}),
        json.dumps({"s": f"<{M}conn/nope>", "p": TRAFFIC, "o": CLOSED, "t": 12}),
        json.dumps({"s": agent_iri("a0"), "p": f"<{M}dances>", "o": iri[2], "t": 13}),
        "not json",
    ])
    (stream / "a.jsonl").write_bytes(data)
    kw = dict(network=net, plans=plans, sink=DirectorySink(tmp_path / "out"), checkpoint=tmp_path / "ckpt",
              rejects=tmp_path / "rej")
    run(spark, [FileSource("<urn:m>", str(stream), max_files_per_trigger=1)], **kw)
    (stream / "b.jsonl").write_text(json.dumps({"s": agent_iri("a0"), "p": REQUESTS, "o": f"<{M}next>", "t": 5}) + "\n")
    os.utime(stream / "b.jsonl", (2_000_000_000, 2_000_000_000))
    summary = run(spark, [FileSource("<urn:m>", str(stream), max_files_per_trigger=1)], **kw)
    rows = [r for p in (tmp_path / "rej").glob("*.jsonl") for r in map(json.loads, p.read_text().splitlines())]
    bad = {r["line"]: r["reason"] for r in rows if r["file"].endswith("a.jsonl") and r["line"] in malformed}
    assert sorted(bad) == sorted(malformed) and all(bad[n].startswith(why) for n, why in malformed.items()), bad
    reasons = sorted(r["reason"].split(" ")[0] + " " + r["reason"].split(" ")[1] for r in rows
                     if not (r["file"].endswith("a.jsonl") and r["line"] in malformed))
    assert reasons == ["bad JSON:", "late: event", "unknown agent", "unknown connection", "unknown predicate"]
    assert summary.rejected == 1 and len(outputs(tmp_path / "out")) == 1


def test_agent_state_survives_a_restart_and_a_replayed_batch_writes_the_same(spark, shared_data, tmp_path):
    """The real network, three agents: one uninterrupted run; a second run stopped after part of
    the files and restarted; a third whose last batch Spark replays (its commit removed). The
    outputs are the same, each once."""
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from scenarios.milan_routing import router_for, run
    from scenarios.milan_stream import plan_agents, write_stream

    net = milan.build(shared_data)
    router, _ = router_for(net)
    plans_doc = plan_agents(router, 3, 5, seed=2)
    plans = Plans({agent_iri(a["id"]): (a["start"], a["locations"]) for a in plans_doc["agents"]})
    stream = tmp_path / "all"
    write_stream(router, plans_doc, stream, seed=2, file_seconds=3600)
    files = sorted(stream.glob("*.jsonl"))
    assert len(files) >= 4

    def go(name, directory):
        return run(spark, [FileSource("<urn:m>", str(directory), max_files_per_trigger=1)], network=net, plans=plans,
                   sink=DirectorySink(tmp_path / name / "out"), checkpoint=tmp_path / name / "ckpt")

    whole = go("whole", stream)
    want = [{k: v for k, v in r.items() if k not in ("processed_at", "compute_ms")} for r in outputs(tmp_path / "whole" / "out")]
    assert whole.routes > 10 and any(r["cause"].startswith("closed") for r in want)
    assert sum(r["event"] == "finished" for r in want) == 3

    partial = tmp_path / "partial-in"
    partial.mkdir()
    for f in files[:2]:
        shutil.copy2(f, partial / f.name)
    go("restart", partial)
    for f in files[2:]:
        shutil.copy2(f, partial / f.name)
    go("restart", partial)
    got = [{k: v for k, v in r.items() if k not in ("processed_at", "compute_ms")} for r in outputs(tmp_path / "restart" / "out")]
    assert got == want

    commits = tmp_path / "whole" / "ckpt" / "spark" / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    before = (tmp_path / "whole" / "ckpt" / "state" / f"{last:010d}.json").read_text()
    replayed = go("whole", stream)
    assert replayed.batches == 1
    assert (tmp_path / "whole" / "ckpt" / "state" / f"{last:010d}.json").read_text() == before
    again = [{k: v for k, v in r.items() if k not in ("processed_at", "compute_ms")} for r in outputs(tmp_path / "whole" / "out")]
    assert again == want


def test_the_job_draws_its_map_and_names_bad_plans(shared_data, tmp_path, capsys):
    """The job as ``python -m jobs.milan_routing`` (a process and JVM of its own), then its plan
    check in-process (``main``: it fails before any JVM is wanted, and a second interpreter would
    only build the network again)."""
    import subprocess
    import sys

    from jobs.milan_routing import main

    options = ["--stream", str(tmp_path / "in"), "--agents", str(tmp_path / "plans.json"), "--checkpoint",
               str(tmp_path / "ck"), "--data-dir", str(shared_data)]
    base = [sys.executable, "-m", "jobs.milan_routing", *options]
    done = subprocess.run(base + ["--generate", "2", "--locations", "3", "--out", str(tmp_path / "out"),
                                  "--map", str(tmp_path / "map.png")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads(done.stderr.strip().splitlines()[-1])["milan_routing"]
    assert summary["routes"] >= 6 and summary["rejected"] == 0
    (tmp_path / "plans.json").write_text(json.dumps({"agents": [{"id": "x", "start": "m:stop/nowhere",
                                                                  "locations": []}]}))
    capsys.readouterr()
    code = main(options + ["--checkpoint", str(tmp_path / "ck2")])
    assert code == 2 and "agents[0]: stop(s) not in the network: <http://example.org/milan/stop/nowhere>" in capsys.readouterr().err
