"""The Vienna transit service (``jobs/vienna_transit.py``) on the paper's example and on the real network.

Oracle: the reference evaluator (``cep.engines.reference``) at every minute of the stream; the service's
output must be the union of its answers, each once (the Istream of ``cep.continuous.plan``).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

V = "http://example.org/vienna#"


def answers(out: Path) -> list[tuple]:
    rows = []
    for part in sorted(out.glob("part-*.jsonl")):
        rows += [(r["s"], r["_start"], r["_end"]) for r in map(json.loads, part.read_text().splitlines())]
    return rows


def _term(x: str) -> str:
    return f"<{V}{x[1:]}>" if x.startswith(":") else x


def test_the_real_network_answers_as_the_reference_does_at_every_minute(spark, shared_data, tmp_path):
    """On the per-batch runner and on the keyed operator (``--engine keyed``), with a file of issue
    59's malformed lines among the stream's (``tests/running_example.py``), each rejected with its
    file, line and reason. The background handed to the reference is cut to what the query can touch — the subway
    connections (``:means :subway``) with their ``:beg``/``:end``, and the fleet's types — which
    leaves its answers unchanged and keeps it fast; the service reads the whole network."""
    from cep.engines import reference
    from cep.lowering.languages import compile_query
    from jobs.vienna_transit import main
    from scenarios import vienna_transit as vt
    from tests.running_example import with_malformed_lines

    net = tmp_path / "net"
    world = vt.real_network(net, str(shared_data), vehicles=12, subways=6)
    stream = tmp_path / "in"
    minutes = 40
    vt.write_stream(stream, minutes, 8, 10, 5, world)
    data, malformed = with_malformed_lines([])
    (stream / "malformed.ndjson").write_bytes(data)       # JSON Lines too, left out of the reference's *.jsonl
    got = {}
    # the per-batch runner, file by file; the keyed operator (keyed by the stop), two files a batch
    for engine, files in (("auto", "1"), ("keyed", "2")):
        assert main(["--stream", str(stream), "--checkpoint", str(tmp_path / f"ck-{engine}"), "--out",
                     str(tmp_path / f"out-{engine}"), "--network-dir", str(net), "--data-dir", str(shared_data),
                     "--vehicles", "12", "--subways", "6", "--max-per-trigger", files, "--engine", engine,
                     "--rejects", str(tmp_path / f"rejects-{engine}")]) == 0
        got[engine] = answers(tmp_path / f"out-{engine}")
        rejects = {r["line"]: r["reason"] for f in (tmp_path / f"rejects-{engine}").glob("*.jsonl")
                   for r in map(json.loads, f.read_text().splitlines()) if r.get("file", "").endswith("malformed.ndjson")}
        assert sorted(rejects) == sorted(malformed) and all(rejects[n].startswith(why) for n, why in malformed.items())
        assert len(got[engine]) == len(set(got[engine])), f"an answer was emitted twice ({engine})"

    triples = []
    for f in world.static[vt.MAP]:
        for line in open(f, encoding="utf-8"):
            s, p, o = line.rstrip("\n")[:-2].split(" ", 2)
            triples.append((s, p, o))
    subway_links = {s for s, p, o in triples if p == f"<{V}means>" and o == f"<{V}subway>"}
    background = [t for t in triples if t[0] in subway_links or t[1] == "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"]
    assert len(subway_links) > 100
    items = []
    for f in sorted(stream.glob("*.jsonl")):
        for i, line in enumerate(f.read_text().splitlines()):
            e = json.loads(line)
            items.append((f"{f.name}:{i}", frozenset({(_term(e["s"]), _term(e["p"]), _term(e["o"]))}), e["t"], e["t"]))
    query = compile_query(world.query)
    want = set()
    for t in range(0, minutes):
        for mapping, t1, t2 in reference.evaluate(query, {vt.MAP: background}, {vt.STREAM: items}, at=t, time_unit="m"):
            want.add((dict(mapping)["s"], t1, t2))
    assert want, "the seeded stream must produce alerts"
    assert set(got["auto"]) == want
    assert set(got["keyed"]) == want


def test_an_unknown_centre_is_refused_with_suggestions(shared_data, tmp_path):
    from scenarios.vienna_transit import TransitError, real_network

    with pytest.raises(TransitError, match="Stephansplatz"):
        real_network(tmp_path, str(shared_data), centre="Stephans")
    assert real_network(tmp_path, str(shared_data), centre="stephansplatz").centre == ":st60201320"


def test_the_paper_example_gives_m_over_10_16(spark, tmp_path):
    """``--example``: the service on the paper's map (in-process, the shared session; a job file
    run by spark-submit in a JVM of its own is tests/test_standalone.py's and tests/test_yarn.py's)."""
    from jobs.vienna_transit import main

    assert main(["--example", "--checkpoint", str(tmp_path / "ck"), "--out", str(tmp_path / "out")]) == 0
    assert answers(tmp_path / "out") == [(f"<{V}m>", 10, 16)]
