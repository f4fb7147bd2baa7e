"""The keyed operator on Spark (cep.continuous.keyed.operator): a user's streaming DataFrame in, the
answers out through Spark's own sinks, equal to the union over instants of the reference.

Each stream is a directory of JSON files of triples, one file per micro-batch. Spark's watermark
makes an instant final one batch after its events arrive, so each run ends with a *heartbeat*
(a row with a time and no triple): it moves the watermark past the last event, and the output is
then the union of ``cep.engines.reference.evaluate`` over every instant up to the last event time.
"""
from __future__ import annotations

import json
import os
import random
import zlib
from pathlib import Path

import pytest

from cep.continuous.keyed.operator import answers
from cep.continuous.plan import ContinuousError
from cep.engines import reference as R
from tests.test_keyed_bucket import QUERIES, as_answers, query, random_items, reference_union
from tests.stream_terms import OBJECTS, PREDICATES, STREAM_IRI, SUBJECTS

pytestmark = pytest.mark.spark

SCHEMA = "item long, s string, p string, o string, t long"


def write_batches(directory: Path, batches) -> None:
    """One JSON file per batch of rows ``(item, (s, p, o) or None, t)``, modified in order."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches):
        path = directory / f"part{i:03d}.json"
        with open(path, "w", encoding="utf-8") as out:
            for item, triple, t in rows:
                s, p, o = triple if triple is not None else (None, None, None)
                out.write(json.dumps({"item": item, "s": s, "p": p, "o": o, "t": t}) + "\n")
        os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))


def run(spark, tmp_path: Path, q, batches, *, lateness=0, buckets=4, sink="foreach", emit="istream"):
    """The operator's output rows over ``batches`` (every file processed, then stopped)."""
    directory = tmp_path / "in"
    write_batches(directory, batches)
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    out = answers(spark, q, {STREAM_IRI: frame}, lateness=lateness, buckets=buckets, emit=emit)
    got: list = []
    # available-now: every file, then the batch without data in which the last watermark fires the
    # timers (processAllAvailable may return before that batch has run)
    writer = out.writeStream.option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True)
    if sink == "memory":
        name = f"keyed_{zlib.crc32(str(tmp_path).encode())}"
        writer.format("memory").queryName(name).start().awaitTermination()
        return [r.asDict() for r in spark.sql(f"SELECT * FROM {name}").collect()]
    writer.foreachBatch(lambda batch, _id: got.extend(r.asDict() for r in batch.collect())).start().awaitTermination()
    return got


def item_batches(items, k, heartbeat=True):
    """``items`` cut into k batches of triple rows, then a heartbeat one tick after the last event."""
    size = max(1, -(-len(items) // k))
    batches = [[(item, triple, t1) for item, g, t1, _t2 in items[i:i + size] for triple in sorted(g)]
               for i in range(0, len(items), size)]
    if heartbeat:
        batches.append([(0, None, max(t for _i, _g, t, _t2 in items) + 1)])
    return batches


@pytest.mark.parametrize("which", [0, 2, 9], ids=[QUERIES[i][0] for i in (0, 2, 9)])
def test_operator_equals_union_of_instants(spark, tmp_path, which):
    label, window, pattern, shown = QUERIES[which]
    q = query(window, pattern, shown)
    names = [v.name for v in q.form.variables]
    for attempt in range(20):
        items = random_items(random.Random(zlib.crc32(label.encode()) + attempt), 24, 14)
        expected = reference_union(q, items, max(t for _i, _g, t, _t2 in items))
        if expected:
            break
    rows = run(spark, tmp_path, q, item_batches(items, 3))
    got = as_answers([r for r in rows if r["_reject"] is None], names)
    assert len(got) == len(set(got)), "an answer was emitted twice"
    assert set(got) == expected
    assert all(r["_reject"] is None for r in rows)


def test_a_construct_on_the_operator_equals_union_of_instants(spark, tmp_path):
    """A CONSTRUCT with a blank node in its template: s, p, o columns, each triple and interval
    once, the blank nodes named as the reference names them."""
    from cep import algebra as A
    from tests.test_keyed_bucket import CONSTRUCTS, ELEMENT_A, ELEMENT_B, WINDOW_IRI

    label, template, _key = CONSTRUCTS[0]
    pattern = A.StreamPattern(WINDOW_IRI, STREAM_IRI, A.Range(A.Duration(6)), A.sequence(ELEMENT_A, ELEMENT_B, negated=1))
    q = A.Query(A.Construct(template, pattern))
    items = random_items(random.Random(zlib.crc32(label.encode())), 24, 14)
    expected = reference_union(q, items, max(t for _i, _g, t, _t2 in items))
    assert expected
    rows = run(spark, tmp_path, q, item_batches(items, 3), buckets=3)
    got = [((r["s"], r["p"], r["o"]), r["_start"], r["_end"]) for r in rows if r["_reject"] is None]
    assert len(got) == len(set(got)), "a triple was emitted twice"
    assert set(got) == expected


@pytest.mark.parametrize("emit", ["dstream", "rstream"])
def test_dstream_and_rstream_on_the_operator(spark, tmp_path, emit):
    """``emit="dstream"``: each answer at each instant where it stops holding (``_at``);
    ``emit="rstream"`` (one bucket): the whole answer set wherever it changes; up to the last event
    time (the closing heartbeat makes it final)."""
    from tests.test_keyed_bucket import stream_expected

    label, window, pattern, shown = QUERIES[2]      # middle negated, STEP
    q = query(window, pattern, shown)
    names = [v.name for v in q.form.variables]
    items = random_items(random.Random(zlib.crc32(label.encode())), 24, 14)
    expected = stream_expected(q, items, emit)
    assert expected
    rows = [r for r in run(spark, tmp_path, q, item_batches(items, 3), buckets=3, emit=emit) if r["_reject"] is None]
    gone = [(*answer, r["_at"]) for answer, r in zip(as_answers(rows, names), rows)]
    assert len(gone) == len(set(gone))
    assert set(gone) == expected


def test_late_rows_are_rejected_not_dropped_and_an_idle_stream_waits_for_a_heartbeat(spark, tmp_path):
    """A negated tail's answer holds once its instant is final: with no later event, only a
    heartbeat makes it final. A row older than the watermark comes out as a reject, with its reason."""
    a, b = SUBJECTS[0], SUBJECTS[1]
    q = query(*QUERIES[0][1:3])      # SEQ(A, A, !B), RANGE 6
    p0 = PREDICATES[0]
    first = [(1, (a, p0, OBJECTS[0]), 10), (2, (a, p0, OBJECTS[0]), 12)]
    late = [(3, (b, p0, OBJECTS[0]), 5),                       # the watermark is 12 by now
            (4, ("not-a-term", p0, OBJECTS[0]), 12), (5, (a, None, OBJECTS[0]), 12)]
    rows = run(spark, tmp_path / "idle", q, [first, late])
    assert [r for r in rows if r["_reject"] is None] == []     # instant 12 is not final yet
    rejects = sorted((r for r in rows if r["_reject"] is not None), key=lambda r: (r["_t"], r["_s"]))
    assert [(r["_s"], r["_t"]) for r in rejects] == [(b, 5), (a, 12), ("not-a-term", 12)]
    assert rejects[0]["_reject"].startswith("late: event time 5 is not after 11")
    assert rejects[1]["_reject"] == "p: missing term (null)"
    assert rejects[2]["_reject"].startswith("s: expected an IRI")
    rows = run(spark, tmp_path / "beat", q, [first, late, [(0, None, 13)]])
    got = [(r["v"], r["s"], r["_start"], r["_end"], r["_at"]) for r in rows if r["_reject"] is None]
    assert got == [(a, OBJECTS[0], 10, 12, 12)]


def test_a_users_dataframe_to_a_memory_sink(spark, tmp_path):
    q = query(*QUERIES[9][1:4])      # SELECT ?s: keyed by ?s
    items = random_items(random.Random(3), 20, 10)
    rows = run(spark, tmp_path, q, item_batches(items, 2), sink="memory", buckets=2)
    got = as_answers([r for r in rows if r["_reject"] is None], ["s"])
    assert set(got) == reference_union(q, items, max(t for _i, _g, t, _t2 in items))


def test_answers_refuses_what_it_cannot_run(spark, tmp_path):
    q = query(*QUERIES[0][1:3])
    frame = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    with pytest.raises(ContinuousError, match="not given"):
        answers(spark, q, {"<http://ex/other>": frame})
    with pytest.raises(ContinuousError, match="no column t"):
        answers(spark, q, {STREAM_IRI: frame.drop("t")})
    with pytest.raises(ContinuousError, match="not a streaming DataFrame"):
        answers(spark, q, {STREAM_IRI: spark.range(1)})
    with pytest.raises(ContinuousError, match="buckets must be a positive number"):
        answers(spark, q, {STREAM_IRI: frame}, buckets=0)


def test_a_closure_published_mid_stream_reaches_every_bucket(spark, tmp_path):
    """A new version of the reasoner's store, shipped by ``Keyed.refreshed`` and sent through the
    control stream while the query runs: the instants final up to the batch that delivers it read
    the old closure, the later ones the new; each answer says which (``_version``)."""
    from cep import algebra as A
    from cep.continuous.keyed.operator import prepare, source_items
    from cep.continuous.static import ClosureStore
    from reasoner.publish import materialize_sources
    from reasoner.store import current_version
    from tests.test_keyed_bucket import ELEMENT_A, ELEMENT_B, NEAR, WINDOW_IRI, b, s, v, x

    pattern = A.join(A.StreamPattern(WINDOW_IRI, STREAM_IRI, A.Range(A.Duration(6)),
                                     A.sequence(ELEMENT_A, ELEMENT_B, negated=1)),
                     A.Background(None, b((s, NEAR, x))))
    q = A.Query(A.Project((v, s, x), False, pattern))
    old = {(o, NEAR, OBJECTS[0]) for o in SUBJECTS + OBJECTS[:2]}
    new = {(o, NEAR, OBJECTS[1]) for o in SUBJECTS[1:] + OBJECTS[1:]}
    store = tmp_path / "store"
    for name, triples in (("old", old), ("new", new)):
        (tmp_path / f"{name}.nt").write_text("".join(f"{a} {p} {c} .\n" for a, p, c in sorted(triples)))
    materialize_sources(spark, [tmp_path / "old.nt"], store)
    v1 = current_version(store)
    keyed = prepare(spark, q, static=ClosureStore(store), buckets=3)
    assert keyed.refreshed(spark, v1) is None             # nothing new published
    items = random_items(random.Random(11), 40, 24)
    batches = item_batches(items, 4)
    directory, published = tmp_path / "in", tmp_path / "published"
    directory.mkdir()
    published.mkdir()
    frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(directory))
    control = spark.readStream.format("text").load(str(published))
    out = keyed.run({STREAM_IRI: source_items(frame, 0, "ms")}, control)
    got: list = []
    running = (out.writeStream.foreachBatch(lambda batch, _id: got.extend(r.asDict() for r in batch.collect()))
               .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    try:
        write_batches(directory, batches[:2])
        running.processAllAvailable()
        materialize_sources(spark, [tmp_path / "new.nt"], store)
        shipped = keyed.refreshed(spark, v1)
        assert shipped is not None and shipped.version == current_version(store) != v1
        (published / "static-1.json").write_text(shipped.text() + "\n")
        running.processAllAvailable()
        later = tmp_path / "later"
        write_batches(later, batches[2:])
        for i, path in enumerate(sorted(later.iterdir())):
            os.replace(path, directory / f"later{i:03d}.json")
        running.processAllAvailable()
        running.processAllAvailable()
    finally:
        running.stop()
    cut = max(t for rows in batches[:2] for _i, _t, t in rows) - 1      # the delivering batch's last final instant
    until = max(t for _i, _g, t, _t2 in items)
    expected: dict = {}
    for t in range(min(t for _i, _g, t, _t2 in items), until + 1):
        for answer in R.evaluate(q, {None: old if t <= cut else new}, {STREAM_IRI: items}, at=t):
            expected.setdefault(answer, t)
    rows = [r for r in got if r["_reject"] is None]
    answers_ = as_answers(rows, ["v", "s", "x"])
    assert len(answers_) == len(set(answers_)), "an answer was emitted twice"
    assert set(answers_) == set(expected)
    for row, answer in zip(rows, answers_):
        assert (row["_at"], row["_version"]) == (expected[answer], v1 if row["_at"] <= cut else shipped.version)
    assert {r["_version"] for r in rows} == {v1, shipped.version}
