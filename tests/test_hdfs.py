"""Inputs, the store and outputs on a real HDFS (issue 15): Hadoop's mini cluster on loopback
(``devcluster.hadoop_cluster``, the session's ``hadoop`` fixture in ``tests/conftest.py``), the jobs run in-process on the
shared local session, reaching HDFS through its Hadoop FileSystem API. Every answer is compared
with the same run on local files.

Marked ``cluster`` (and ``spark``): ``pytest -m "not cluster"`` leaves out the ~30 s cluster start."""
from __future__ import annotations

import json

import pytest

from jobs import materialize as materialize_job
from jobs import paths as paths_job
from jobs import query as query_job
from rdfcore import resources
from reasoner import store
from rdfcore.fs import HadoopPath, append_text, atomic_writer, lock
from rdfcore.schema import TABLE_COLUMNS

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

EXAMPLE = ("vienna_schema.ttl", "vienna_example.ttl")
VIENNA = "http://example.org/vienna#"
# instance data in N-Triples (read by Spark's line reader), with one bad line
DATA = "".join(f"<{VIENNA}x{i}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{VIENNA}subway> .\n"
               for i in range(5)) + "this is not a triple\n"
MORE = "".join(f"<{VIENNA}y{i}> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{VIENNA}subway> .\n"
               for i in range(3))


@pytest.fixture
def hdfs(hadoop):
    return hadoop


@pytest.fixture
def inputs(spark, hdfs, tmp_path, request):
    """The example ontology and the instance data, on local disk and on HDFS (same bytes)."""
    base = HadoopPath(f"{hdfs.hdfs}/{request.node.name}")
    local, remote = [], []
    for name in EXAMPLE:
        data = resources.data("ontologies", name)
        (tmp_path / name).write_bytes(data)
        (base / name).write_bytes(data)
        local.append(tmp_path / name)
        remote.append(base / name)
    (tmp_path / "data.nt").write_text(DATA)
    (base / "data.nt").write_text(DATA)
    local.append(tmp_path / "data.nt")
    remote.append(base / "data.nt")
    return base, local, remote


def _materialize(capsys, *argv) -> tuple[int, dict | None, str]:
    code = materialize_job.main([str(a) for a in argv])
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if line.startswith("{")]
    return code, (json.loads(lines[-1]) if lines else None), captured.err


def _tables(spark, out) -> dict[str, set]:
    opened = store.open_version(spark, out)
    return {name: {tuple(r) for r in opened.table(name, decoded=True).collect()} for name in TABLE_COLUMNS}


def _rejects(spark, out) -> list[tuple]:
    return sorted((r["line"], r["reason"]) for r in store.open_version(spark, out).table("rejects").collect())


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_materialize_from_and_into_hdfs_equals_local(spark, hdfs, inputs, tmp_path, capsys, engine):
    """Sources on HDFS, the store on HDFS: the same tables and rejects as the local run; a second
    run with --if-changed skips; the N-Triples export lands on HDFS with the local export's bytes."""
    base, local, remote = inputs
    url = f"{base}/store"
    code, summary, err = _materialize(capsys, "--ontology", *remote, "--out", url, "--engine", engine,
                                      "--export-ntriples", f"{base}/inferred.nt")
    assert code == 0, err
    assert summary["version"] == "v000001" and summary["engine"] == engine and summary["rejected"] == 1
    code, expected, err = _materialize(capsys, "--ontology", *local, "--out", tmp_path / "store", "--engine", "local",
                                       "--export-ntriples", tmp_path / "inferred.nt")
    assert code == 0, err
    assert summary["counts"] == expected["counts"]
    assert _tables(spark, url) == _tables(spark, tmp_path / "store")
    assert _rejects(spark, url) == _rejects(spark, tmp_path / "store") == [(6, _rejects(spark, url)[0][1])]
    assert HadoopPath(f"{base}/inferred.nt").read_bytes() == (tmp_path / "inferred.nt").read_bytes()
    manifest = store.read_manifest(url)
    assert [s["path"] for s in manifest["sources"]] == [str(p) for p in remote]
    assert [s["sha256"] for s in manifest["sources"]] == [s["sha256"] for s in store.read_manifest(tmp_path / "store")["sources"]]
    code, again, err = _materialize(capsys, "--ontology", *remote, "--out", url, "--engine", engine, "--if-changed")
    assert code == 0 and again["skipped"] and again["version"] == "v000001", err
    staged = HadoopPath(url) / "versions"
    assert [p.name for p in staged.iterdir()] == ["v000001"]                 # nothing left behind
    assert not (HadoopPath(url) / ".lock").exists()


def test_a_second_version_switches_current_and_appends_incrementally(spark, hdfs, inputs, tmp_path, capsys):
    """Data appended on HDFS: --if-changed publishes v000002 incrementally (the previous tables
    copied by HDFS, not recomputed), CURRENT names it, v000001 stays readable; the tables equal a
    full local run over the grown files."""
    base, local, remote = inputs
    url = f"{base}/store"
    assert _materialize(capsys, "--ontology", *remote, "--out", url, "--engine", "spark")[0] == 0
    remote[-1].write_text(DATA + MORE)
    local[-1].write_text(DATA + MORE)
    code, summary, err = _materialize(capsys, "--ontology", *remote, "--out", url, "--engine", "spark", "--if-changed")
    assert code == 0, err
    assert summary["version"] == "v000002" and summary["mode"] == "incremental" and not summary["skipped"]
    assert store.current_version(url) == "v000002" and store.list_versions(url) == ["v000001", "v000002"]
    assert (HadoopPath(url) / "CURRENT").read_text() == "v000002\n"
    assert _materialize(capsys, "--ontology", *local, "--out", tmp_path / "full", "--engine", "local")[0] == 0
    assert _tables(spark, url) == _tables(spark, tmp_path / "full")
    old = store.open_version(spark, url, "v000001").table("types").count()
    assert old == store.read_manifest(url, "v000001")["tables"]["types"]


def test_query_at_reads_background_and_stream_from_hdfs(spark, hdfs, inputs, capsys):
    """The running example (CQELS-CEP Example 6) with its background graph, its stream, its
    output and its rejects on HDFS: the answer of DESIGN.md (?s = :m on [10, 16]), as the local
    run gives it (tests/test_query_cli.py)."""
    base, _local, _remote = inputs
    query = resources.path("ontologies", "vienna_example_query.rq")
    stream = base / "stream.jsonl"
    stream.write_bytes(resources.data("ontologies", "vienna_example_stream.jsonl") + b'{"s": ":a1"}\n')
    out, rejects = base / "answers.tsv", base / "rejects.jsonl"
    code = query_job.main([str(query), "--static", f"<http://example.org/transportationMap>={base / EXAMPLE[1]}",
                           "--stream", f"<http://example.org/publicTransport>={stream}",
                           "--at", "16", "--time-unit", "m", "--out", str(out), "--rejects", str(rejects)])
    err = capsys.readouterr().err
    assert code == 0, err
    integer = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    assert out.read_text().splitlines()[1:] == [f'<{VIENNA}m>\t"10"{integer}\t"16"{integer}']
    (reject,) = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert reject["file"] == str(stream) and reject["line"] == 5


def _continuous_answers(directory) -> list[dict]:
    return sorted((json.loads(line) for f in directory.glob("part-*.jsonl") for line in f.read_text().splitlines()),
                  key=json.dumps)


def test_continuous_query_with_everything_on_hdfs(spark, hdfs, inputs, tmp_path, capsys):
    """``query --continuous`` with its closure store, stream directory, checkpoint (Spark's
    progress and the state tables), answers and rejects on HDFS, run twice (a file arrives
    between the runs): the first run on the Spark engine (its executors write the state's
    Parquet), the second on the driver-side one, which reads that state and writes its own with
    pyarrow through the FileSystem API. The answers and rejects are those of the same runs on local
    directories."""
    from reasoner.publish import materialize_sources

    base, local, remote = inputs
    lines = resources.data("ontologies", "vienna_example_stream.jsonl").decode().splitlines(keepends=True)
    files = {"part0.jsonl": "".join(lines[:2]) + "not json\n", "part1.jsonl": "".join(lines[2:]),
             "part2.jsonl": '{"s": ":a1", "p": ":delayAt", "o": ":m", "t": 3}\n'   # late: rejected
                            '{"s": ":x1", "p": ":delayAt", "o": ":m", "t": 30}\n'}
    query = resources.path("ontologies", "vienna_example_query.rq")
    results = []
    # the reference: local directories, the driver-side engine (both engines equal the reference
    # evaluator: tests/test_cep_continuous.py)
    for root, engines, example in ((tmp_path / "local", ("local", "local"), local[1]),
                                   (HadoopPath(f"{base}/continuous"), ("spark", "auto"), remote[1])):
        materialize_sources(spark, [example], root / "closure", engine="local")
        (root / "in").mkdir(parents=True)
        for names, engine in zip((["part0.jsonl", "part1.jsonl"], ["part2.jsonl"]), engines):
            for name in names:
                (root / "in" / name).write_text(files[name])
            code = query_job.main([str(query), "--closure", str(root / "closure"),
                                   "--stream", f"<http://example.org/publicTransport>={root / 'in'}", "--continuous",
                                   "--checkpoint", str(root / "ckpt"), "--out", str(root / "out"),
                                   "--rejects", str(root / "rejects"), "--time-unit", "m", "--max-per-trigger", "1",
                                   "--engine", engine, "--trigger", "available-now"])
            assert code == 0, capsys.readouterr().err
        metrics = [json.loads(line) for line in (root / "ckpt" / "metrics.jsonl").read_text().splitlines()]
        rejects = [(r["line"], r["reason"][:20]) for f in (root / "rejects").glob("part-*.jsonl")
                   for r in map(json.loads, f.read_text().splitlines())]
        results.append((_continuous_answers(root / "out"), sorted(rejects)))
    assert [m["engine"] for m in metrics] == ["spark"] * 3 + ["local"] * 2   # 2 batches and a close, then 1 and a close
    assert results[0] == results[1]
    answers, rejects = results[1]
    assert {a["s"] for a in answers} == {f"<{VIENNA}m>"}
    assert [line for line, _why in rejects] == [1, 3] and rejects[0][1].startswith("late: event time 3")


def test_tracheobionta_service_with_everything_on_hdfs(spark, hdfs, inputs, tmp_path):
    """The membership service (``scenarios.membership``, the Tracheobionta job's) with its closure
    store, stream, checkpoint, answers and rejects on HDFS: the stream files are not local, so the
    batch's lines come through Spark rather than the driver's file reader; the answers and
    rejects are those of the run on local directories (the driver's reader)."""
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from reasoner.publish import materialize_sources
    from scenarios.membership import run

    base, local, remote = inputs
    rdf_type = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
    events = "".join(f'<{VIENNA}v{i}> {rdf_type} <{VIENNA}{kind}> "{i}" .\n'
                     for i, kind in enumerate(["subway", "tram", "Stop", "Conveyance", "subway"]))
    results = []
    for root in (tmp_path / "local", HadoopPath(f"{base}/membership")):
        materialize_sources(spark, local[:2] if root == tmp_path / "local" else remote[:2], root / "store",
                            engine="local")
        (root / "in").mkdir(parents=True)
        (root / "in" / "part0.nt").write_text(events + "not a triple\n")
        summary = run(spark, [FileSource("<urn:s>", str(root / "in"))], store=root / "store",
                      target=f"<{VIENNA}Vehicle>", sink=DirectorySink(root / "out"), checkpoint=root / "ckpt",
                      rejects=root / "rejects")
        answers = sorted((r["subject"], r["class"], r["t"], r["line"]) for f in (root / "out").glob("part-*.jsonl")
                         for r in map(json.loads, f.read_text().splitlines()))
        rejects = [(r["line"], r["reason"]) for f in (root / "rejects").glob("part-*.jsonl")
                   for r in map(json.loads, f.read_text().splitlines())]
        metrics = [json.loads(line) for line in (root / "ckpt" / "metrics.jsonl").read_text().splitlines()]
        results.append((answers, rejects, summary.answers, len(metrics)))
    assert results[0] == results[1]
    answers, rejects, _n, _batches = results[1]
    assert [a[0] for a in answers] == [f"<{VIENNA}v{i}>" for i in (0, 1, 3, 4)] and [r[0] for r in rejects] == [6]


def test_milan_routing_service_with_everything_on_hdfs(spark, hdfs, tmp_path):
    """The route service (``scenarios.milan_routing``) with its event stream, checkpoint (Spark's
    progress, the agents' state JSON per batch, the metrics log) and routes on HDFS, three
    micro-batches (each reads the previous batch's state from HDFS): the routes of the
    independent replay of tests/test_milan_routing.py."""
    import random

    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from scenarios.milan_routing import run
    from tests.test_milan_routing import as_replay, random_day, replay, small_network

    rng = random.Random(2)
    net = small_network(rng)
    plans, events = random_day(net, rng, 3, 120)
    root = HadoopPath(f"{hdfs.hdfs}/milan")
    (root / "in").mkdir(parents=True)
    for f in range(3):                   # written in order: the file source reads the oldest first
        part = [e for e in events if f * 280 <= e[0] < (f + 1) * 280]
        (root / "in" / f"e{f}.jsonl").write_text("".join(json.dumps({"s": s, "p": p, "o": o, "t": t}) + "\n"
                                                         for t, s, p, o in part))
    summary = run(spark, [FileSource("<urn:m>", str(root / "in"), max_files_per_trigger=1)], network=net, plans=plans,
                  sink=DirectorySink(root / "out"), checkpoint=root / "ckpt")
    got = [as_replay(json.loads(line)) for f in (root / "out").glob("part-*.jsonl") for line in f.read_text().splitlines()]
    assert sorted(got, key=repr) == sorted(replay(net, plans, events), key=repr) and got
    assert summary.batches == 3
    assert len((root / "ckpt" / "metrics.jsonl").read_text().splitlines()) == 3
    assert [p.name for p in (root / "ckpt" / "state").iterdir()] == ["0000000001.json", "0000000002.json"]


def test_paths_read_their_data_from_hdfs(spark, hdfs, inputs, capsys):
    """``paths --data`` on HDFS, both engines, the answers written to HDFS: those of the local files."""
    base, local, remote = inputs
    path = "(^:beg/[:means :subway]/:end)+"
    for engine in ("local", "spark"):
        results = []
        for data, out in ((local[1], local[1].parent / f"pairs-{engine}.tsv"), (remote[1], base / f"pairs-{engine}.tsv")):
            code = paths_job.main(["--data", str(data), "--path", path, "--engine", engine, "--out", str(out)],
                                  spark=spark)
            assert code == 0, capsys.readouterr().err
            results.append(out.read_text())
        assert results[0] == results[1] and f"<{VIENNA}m>" in results[0]


def test_lock_on_hdfs_names_its_owner_and_stale_locks_are_taken(spark, hdfs, inputs, capsys):
    """A lock file of a run on another host refuses the run (one error line naming the owner and
    the file); a lock left by a dead process of this host is taken over."""
    import socket

    base, _local, remote = inputs
    root = HadoopPath(f"{base}/locked")
    root.mkdir(parents=True)
    (root / ".lock").write_text(json.dumps({"host": "elsewhere.example", "pid": 1, "started": "2026-01-01T00:00:00Z"}))
    code, _summary, err = _materialize(capsys, "--ontology", *remote, "--out", root, "--engine", "local")
    assert code == 2
    assert err.count("error:") == 1 and "process 1 on elsewhere.example" in err and f"delete {root}/.lock" in err
    assert store.current_version(root) is None
    (root / ".lock").write_text(json.dumps({"host": socket.gethostname(), "pid": 2 ** 22 + 7, "started": "x"}))
    code, summary, err = _materialize(capsys, "--ontology", *remote, "--out", root, "--engine", "local")
    assert code == 0 and summary["version"] == "v000001", err
    with lock(root):
        assert json.loads((root / ".lock").read_text())["host"] == socket.gethostname()
    assert not (root / ".lock").exists()


def test_unreachable_namenode_and_unknown_scheme_are_one_error_line(spark, hdfs, inputs, tmp_path, capsys, monkeypatch):
    """A namenode nobody listens on, an HDFS URL without a host, a scheme Spark has no filesystem
    for: one ``error:`` line each, naming the URL and what to do; nothing written locally."""
    from jobs.services import free_port

    monkeypatch.chdir(tmp_path)
    _base, local, _remote = inputs
    cases = {f"hdfs://127.0.0.1:{free_port()}/store": "cannot reach 127.0.0.1:",
             "hdfs:///store": "names no namenode",
             "nosuchfs://bucket/store": "no Hadoop filesystem for nosuchfs://"}
    for url, expected in cases.items():
        code, _summary, err = _materialize(capsys, "--ontology", *local, "--out", url, "--engine", "local")
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {url}") and expected in lines[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in local)


def test_hadoop_path_behaves_like_a_path(spark, hdfs):
    """The pathlib subset the store and the loaders use, on HDFS."""
    root = HadoopPath(f"{hdfs.hdfs}/paths/a b")
    root.mkdir(parents=True)
    with pytest.raises(FileExistsError):
        root.mkdir()
    (root / "x.txt").write_text("one\ntwo\n")
    assert (root / "x.txt").is_file() and root.is_dir() and not (root / "y").exists()
    assert (root / "x.txt").stat().st_size == 8 and (root / "x.txt").suffix == ".txt"
    with (root / "x.txt").open("rb") as handle:
        handle.seek(4)
        assert handle.read() == b"two\n"
    with pytest.raises(FileExistsError):
        (root / "x.txt").open("x")
    with pytest.raises(FileNotFoundError):
        (root / "missing").read_bytes()
    (root / "x.txt").rename(root / "z.txt")
    with pytest.raises(FileExistsError):
        (root / "z.txt").rename(root / "z.txt")
    (root / "w.txt").write_text("new")
    (root / "w.txt").replace(root / "z.txt")
    assert [p.name for p in root.iterdir()] == ["z.txt"] and (root / "z.txt").read_text() == "new"
    assert [p.name for p in root.glob("*.txt")] == ["z.txt"]
    assert root.parent == HadoopPath(f"{hdfs.hdfs}/paths") and root.resolve() == root
    assert HadoopPath("hdfs://localhost:1/b/") == HadoopPath("hdfs://localhost:1/b")
    with pytest.raises(RuntimeError), atomic_writer(root / "z.txt") as handle:   # a failed write changes nothing
        handle.write("half")
        raise RuntimeError("stop")
    assert [p.name for p in root.iterdir()] == ["z.txt"] and (root / "z.txt").read_text() == "new"
    for text in ("a\n", "b\n"):                           # created, then FileSystem.append
        append_text(root / "log", text)
    assert (root / "log").read_text() == "a\nb\n"
