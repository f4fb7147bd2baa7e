"""The Tracheobionta service (``scenarios.membership``, ``jobs/tracheobionta.py``).

Oracles, independent of the code under test: Spark's stream parser (``cep.io.streams.read_stream``,
the one definition of the formats) for what each line says, and the taxonomy CSV walked in Python
(``ontologies.plants.descendants``) for which classes are below the target — not the reasoner's
closure the service reads.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from ontologies.plants import TRACHEOBIONTA_ID, class_iri, descendants, read_taxonomy, taxonomy_path
from rdfcore.vocab import RDF_TYPE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF
from cep.io import lineparse, tsnt

pytestmark = pytest.mark.spark

EX = "http://example.org/x#"
TRACHEOBIONTA = class_iri(TRACHEOBIONTA_ID)


# --- the bulk splitter against Spark's parser -------------------------------------------------

SUBJECTS = ["<http://x/s>", "_:b1", "_:b.x", "<http://x/é>", "<>", "<http://x/\\u00e9>", "_:", "<a b>", '"lit"',
            "<http://x/s\ufffd>"]
PREDICATES = [RDF_TYPE, "<http://x/p>", "<http://x/type>", "_:p"]
OBJECTS = ["<http://k/C>", "<http://k/D>", '"5"^^<http://www.w3.org/2001/XMLSchema#integer>', '"x"@EN-gb',
           '"a b <http://k/C> c"', '"esc\\"aped"', "_:o", '"tab\there"', "<http://k/C", '"unterminated']
STAMPS = ['"10"', '"0"', '"007"', '"-3"', '"123456789012345678"', '"1234567890123456789012"', '"2024-05-01T10:00:00Z"',
          '"5"^^<http://www.w3.org/2001/XMLSchema#long>', '"x"', "10"]
SHAPES = ["{s} {p} {o} {t} .", "{s} {p} {o} {t}", "{s} {p} {o} . {t}", "{s} {p} {o} {t}.", "{s}\t{p} {o} {t} .",
          "  {s} {p} {o} {t} .", "{s} {p} {o} {t} . # c", "{s} {p} {o} .", "{s}  {p} {o} {t} .", "{s} {p} {o}{t} ."]


def spark_parse(spark, paths, prefixes: dict | None = None):
    """Spark's reading of stream files (one path or several, read together):
    ([(s, p, o, t_start, file, line)], [(file, line, reason)])."""
    from cep.io.streams import parse_lines
    from rdfcore.loading import read_lines, with_line_numbers
    from rdfcore.schema import FILE, LINE, RAW

    lines = read_lines(spark, [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)])
    numbered = with_line_numbers(lines, lines).select(FILE, LINE, RAW)
    terms, rejects = parse_lines(numbered, prefixes or {}, "ms")
    return ([(r["s"], r["p"], r["o"], r["t_start"], r["file"], r["line"]) for r in terms.collect()],
            [(r["file"], r["line"], r["reason"]) for r in rejects.collect()])


def random_line(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return rng.choice(["", "   ", "# comment", "\t# c", "garbage", "<http://x/s>"])
    pick = (lambda xs, k: rng.choice(xs[:k]) if rng.random() < 0.8 else rng.choice(xs))
    shape = rng.choice(SHAPES[:4]) if rng.random() < 0.75 else rng.choice(SHAPES)
    return shape.format(s=pick(SUBJECTS, 3), p=pick(PREDICATES, 2), o=pick(OBJECTS, 4), t=pick(STAMPS, 5))


def test_plain_lines_split_as_spark_parses_them(spark, tmp_path):
    from cep.io.lineparse import bnode_scope

    rng = random.Random(11)
    lines = [random_line(rng) for _ in range(3000)]
    path = tmp_path / "stream.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    terms, bad = spark_parse(spark, path)
    parsed = {line: (s, p, o, t) for s, p, o, t, _f, line in terms}
    rejected = {line for _f, line, _r in bad}
    chunks = list(tsnt.read_lines(path, block_bytes=1 << 14))      # several chunks
    assert sum(len(c) for _, c in chunks) == len(lines)
    predicates = pa.array([RDF_TYPE, "<http://x/type>"])
    classes = pa.array(["<http://k/C>", "<http://k/D>"])
    scope = bnode_scope(str(path.resolve()))
    fast = slow = 0
    for first, chunk in chunks:
        hits = tsnt.type_hits(chunk, predicates, classes)
        slow_lines = {first + i for i in hits.slow.to_pylist()}
        slow += len(slow_lines)
        got = {}
        for i, s, k, t in zip(hits.index.to_pylist(), hits.subject.to_pylist(), hits.klass.to_pylist(),
                              hits.ticks.to_pylist()):
            got[first + i] = ("_:f" + scope + "." + s[2:] if s.startswith("_:") else s, k, int(t))
        for offset in range(len(chunk)):
            number = first + offset
            if number in slow_lines:
                continue
            # not slow: Spark accepts it (or it is blank), and it is a hit exactly when Spark says so
            assert number not in rejected, lines[number - 1]
            want = parsed.get(number)
            is_hit = want is not None and want[1] in (RDF_TYPE, "<http://x/type>") and want[2] in ("<http://k/C>", "<http://k/D>")
            if is_hit:
                fast += 1
                assert got.get(number) == (want[0], want[2], want[3]), lines[number - 1]
            else:
                assert number not in got, lines[number - 1]
    assert fast > 150 and slow > 300
    assert len(rejected) > 100


TRICKY = ['<http://x/s> <http://x/p> <http://x/o> "1" .', '<http://x/\ufffd> <http://x/p> <http://x/o> "1" .',
          '<http://x/s> <http://x/p> "a\ufffdb" "1" .', '<http://x/é> <http://x/p> "é" "1" .', '_:a. <http://x/p> <o> "1" .',
          '_:.a <http://x/p> <o> "1" .', '_:a.b <http://x/p> _:c-d "1".', '_:-_ <p> <o> "1"', '_: <p> <o> "1" .',
          '<s> <p> "x"@en- "1" .', '<s> <p> "x"@en-GB-1 "1" .', '<s> <p> "x"@1 "1" .', '<s> <p> "x"^^<t "1" .',
          '<s> <p> "x"^^<t> "1" .', '<s> <p> "x"^ "1" .', '<s> <p> "x"^^t "1" .', '<s> <p> <o> "0" .', '<s> <p> <o> "00" .',
          '<s> <p> <o> "123456789012345678" .', '<s> <p> <o> "1234567890123456789" .', '<s> <p> <o> . "1" .',
          '<s> <p> <o> . "1"', '<s> <p> <o> .. "1"', '<s> <p> <o> "1" ..', '<s> <p> <o> "1"  .', '<s> <p> <o> "1" . ',
          '<s> <p> <o> "1"^^<http://t> .', '<s> <p> <o> "1"^^<http://t>', '<s> <p> <o> "1"^<t> .', '<s> <p> <o> "1" .\n',
          '<s> <p> <o> "1" .\n\n', '<s> <p> <o>\t"1" .', '<s> <p> "a\tb c" "1" .', '<s> <p> "a\\"b" "1" .', '',
          '\n', ' \t ', '# c', ' # c\n', '#', '# a\nb', '<s> <p> <o> "1" . # c', '<s> <p> <{o}> "1" .', '<s> <p> <o`> "1" .',
          '<s>  <p> <o> "1" .', '<s> <p> <o> "" .', '<s> <p> <o> "1', '<s> <p> <o> "1" .\x00', '<\x7f> <p> <o> "1" .']
MUTATIONS = ['<', '>', '_', ':', '"', ' ', '.', '\\', '^', '@', '-', 'a', 'Z', '0', '1', '9', '\t', '#', '\n', '\ufffd',
             'é', '{', '`', '\x00', '\x7f', '\U0001F600']


def test_the_compiled_scanner_reads_exactly_the_lines_of_the_strict_expression():
    """``tsntscan`` (a byte-by-byte recogniser) against :data:`tsnt.STRICT` and the blank/comment
    expression (RE2, the definition): the kind of every line, on tricky lines and on random lines
    with random edits; and the hits against the expression's lines split by hand."""
    import re

    import pyarrow.compute as pc

    from cep.io import tsntscan

    rng = random.Random(23)

    def mutate(line):
        chars = list(line)
        for _ in range(rng.randint(1, 3)):
            op = rng.random()
            if op < 0.4 and chars:
                chars[rng.randrange(len(chars))] = rng.choice(MUTATIONS)
            elif op < 0.7:
                chars.insert(rng.randint(0, len(chars)), rng.choice(MUTATIONS))
            elif chars:
                del chars[rng.randrange(len(chars))]
        return "".join(chars)

    lines = list(TRICKY)
    for _ in range(40_000):
        line = random_line(rng)
        lines.append((mutate(line) if rng.random() < 0.6 else line) + ("\n" if rng.random() < 0.3 else ""))
    array = pa.array(lines, pa.string())
    predicates = tsntscan.TermSet(pa.array([RDF_TYPE, "<http://x/type>", "<p>"]))
    classes = tsntscan.TermSet(pa.array(["<http://k/C>", "<http://k/D>", "<o>", "_:c-d"]))
    kind, (at, subjects, klasses, ticks) = tsntscan.scan(array, predicates, classes)
    strict = pc.match_substring_regex(array, tsnt.STRICT).to_pylist()
    blank = pc.match_substring_regex(array, lineparse.TSNT_BLANK_OR_COMMENT).to_pylist()
    want = [tsntscan.PLAIN if a else tsntscan.BLANK if b else tsntscan.SLOW for a, b in zip(strict, blank)]
    wrong = [(w, int(k), line) for w, k, line in zip(want, kind, lines) if w != k]
    assert not wrong, wrong[:10]
    counts = {k: want.count(k) for k in (tsntscan.PLAIN, tsntscan.SLOW, tsntscan.BLANK)}
    assert min(counts.values()) > 500, counts
    expected = []
    for i, line in enumerate(lines):          # a plain line's terms: it splits at its first three spaces
        if want[i] == tsntscan.PLAIN:
            s, p, o, rest = line.split(" ", 3)
            if p in (RDF_TYPE, "<http://x/type>", "<p>") and o in ("<http://k/C>", "<http://k/D>", "<o>", "_:c-d"):
                expected.append((i, s, o, re.match(r'(?:\. )?"([0-9]+)"', rest).group(1)))
    got = list(zip(at.tolist(), subjects.to_pylist(), klasses.to_pylist(),
                   ticks.to_pylist()))
    assert got == expected and len(got) > 500


def test_the_scanners_term_sets_find_exactly_their_terms():
    """``TermSet`` against a Python set: many random terms (most of one length, sharing a long
    prefix: hash collisions and full probes), terms of 1-7 bytes, a term over 65,535 bytes (its
    length stored beside it), non-ASCII terms; looked up as the objects of plain lines."""
    from cep.io import tsntscan

    rng = random.Random(31)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789é"
    def iri(length):
        return "<http://example.org/plants#" + "".join(rng.choice(alphabet) for _ in range(length)) + ">"
    members = {iri(rng.choice([4, 4, 4, 5, 12])) for _ in range(5000)} | {"<a>", "<ab>", "_:x", "<" + "l" * 70000 + ">"}
    others = {iri(rng.choice([4, 5, 12])) for _ in range(5000)} - members
    others |= {"<b>", "_:y", "<" + "l" * 69999 + "m>", "<" + "l" * 70001 + ">", "<" + "l" * 69999 + ">"}
    terms = sorted(members)
    classes = tsntscan.TermSet(pa.array(terms, pa.string()))
    predicates = tsntscan.TermSet(pa.array([RDF_TYPE]))
    probe = sorted(members | others)
    rng.shuffle(probe)
    lines = pa.array([f'<http://x/s{i}> {RDF_TYPE} {o} "{i}" .' for i, o in enumerate(probe)], pa.string())
    kind, (at, subjects, klasses, ticks) = tsntscan.scan(lines, predicates, classes)
    assert (kind == tsntscan.PLAIN).all()
    assert klasses.to_pylist() == [o for o in probe if o in members]
    assert at.tolist() == [i for i, o in enumerate(probe) if o in members]
    assert ticks.to_pylist() == [str(i) for i in at.tolist()]


def test_the_scanners_answer_lines_are_those_built_column_wise():
    """``tsntscan.json_answers`` (the service's answers written by the compiled scanner) against
    ``_Answers.build`` (pyarrow, column-wise) over ``type_hits``: blank-node subjects scoped, line
    numbers from a first number or per line (Kafka offsets), a file name that JSON escapes."""
    import json

    import numpy as np

    from cep.io import tsntscan
    from scenarios.membership import _Answers, _json_pieces

    rng = random.Random(8)
    predicates = tsntscan.TermSet(pa.array([RDF_TYPE, "<http://x/type>"]))
    classes = tsntscan.TermSet(pa.array(["<http://k/C>", "<http://k/D>", "_:o"]))
    file, version, at = 'd/"odd" é.nt', "v7", 1_700_000_000_123
    for first in (1, 987_654_321, None):
        lines = pa.array([random_line(rng) for _ in range(2000)], pa.string())
        numbers = np.array(sorted(rng.sample(range(10**12), len(lines))), np.int64) if first is None else first
        kind, part = tsntscan.json_answers(lines, numbers, predicates, classes, *_json_pieces(file, version, at),
                                           "_:fscope.")
        hits = tsnt.type_hits(lines, predicates, classes)
        subject = [("_:fscope." + x[2:]) if x.startswith("_:") else x for x in hits.subject.to_pylist()]
        line = pa.array(hits.index.to_numpy() + first if first else numbers[hits.index.to_numpy()])
        want = _Answers.build(pa.array(subject, pa.string()), hits.klass, hits.ticks, file, line, at, version)
        assert part.to_pylist() == want.to_pylist() and len(part) > 100
        assert np.flatnonzero(kind == tsntscan.SLOW).tolist() == hits.slow.to_pylist()
        row = json.loads(part[0].as_py())
        assert row["file"] == file and row["version"] == version and row["processed_at"] == at


def test_files_the_csv_reader_refuses_are_read_line_by_line(tmp_path):
    path = tmp_path / "odd.nt"
    good = '<http://x/s> <http://x/p> <http://x/o> "1" .'
    path.write_bytes((good + "\r\n" + "<a> \x01 <b>\n" + good + "\r" + "\xff\xfe bad\n" + good + "\n").encode("latin-1"))
    lines = [x for _, chunk in tsnt.read_lines(path) for x in chunk.to_pylist()]
    assert lines == [good, "<a> \x01 <b>", good, "\ufffd\ufffd bad", good]


def test_the_byte_reader_gives_the_csv_readers_lines_and_hits(tmp_path):
    """``read_terminated`` (the file's bytes cut at its line feeds, each line with its LF) against
    ``read_lines`` (the CSV reader), and ``type_hits`` on its lines against the same lines without
    their LF: random files, blocks smaller than a line, with and without a last LF, a CR or invalid
    UTF-8 at a random place (handed to the CSV reader from there)."""
    rng = random.Random(5)
    predicates = pa.array([RDF_TYPE, "<http://x/type>"])
    classes = pa.array(["<http://k/C>", "<http://k/D>"])
    path = tmp_path / "s.nt"
    oddities = 0
    for trial in range(60):
        lines = [random_line(rng) for _ in range(rng.randint(0, 300))]
        data = ("\n".join(lines) + rng.choice(["", "\n"])).encode("utf-8")
        if lines and rng.random() < 0.3:
            at = rng.randrange(len(data) + 1)
            data = data[:at] + rng.choice([b"\r\n", b"\r", b"\xff", b"\xc3"]) + data[at:]
            oddities += 1
        path.write_bytes(data)
        block = rng.choice([16, 200, 1 << 14])
        want = [(first, chunk.to_pylist()) for first, chunk in tsnt.read_lines(path, block)]
        got = list(tsnt.read_terminated(path, block))
        assert [x for _, c in want for x in c] == [x.removesuffix("\n") for _, c in got for x in c.to_pylist()]
        assert [first for first, _ in got] == sorted({first for first, _ in got})
        for first, chunk in got:
            assert first == 1 + sum(len(c) for f, c in got if f < first)
            plain = pa.array([x.removesuffix("\n") for x in chunk.to_pylist()], pa.string())
            a, b = tsnt.type_hits(chunk, predicates, classes), tsnt.type_hits(plain, predicates, classes)
            for name in ("index", "subject", "klass", "ticks", "slow"):
                assert getattr(a, name).to_pylist() == getattr(b, name).to_pylist(), (trial, name)
    assert oddities > 5
    # a sliced chunk and Spark's large strings (Kafka batches) split alike
    lines = pa.array([random_line(rng) for _ in range(500)], pa.string())
    for chunk in (lines.slice(37, 400), pa.array(lines.to_pylist(), pa.large_string())):
        a = tsnt.type_hits(chunk, predicates, classes)
        b = tsnt.type_hits(pa.array(chunk.to_pylist(), pa.string()), predicates, classes)
        assert len(a.index) > 10
        for name in ("index", "subject", "klass", "ticks", "slow"):
            assert getattr(a, name).to_pylist() == getattr(b, name).to_pylist(), name


# --- the service -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def taxa(shared_data):
    return read_taxonomy(taxonomy_path(shared_data))


@pytest.fixture(scope="module")
def closure(spark, shared_data, tmp_path_factory):
    from jobs.tracheobionta import publish_taxonomy

    store = tmp_path_factory.mktemp("plants-closure")
    publish_taxonomy(spark, store, str(shared_data))
    return store


def below(taxa, root=TRACHEOBIONTA_ID) -> set[str]:
    return {class_iri(t) for t in descendants(taxa, root) | {root}}


def oracle(spark, files: list[Path], classes: set[str], predicates=(RDF_TYPE,)):
    """(answers, rejects) as the Spark parser and the taxonomy CSV define them."""
    terms, bad = spark_parse(spark, files, {"ex": EX})
    return {(s, o, t, file, line) for s, p, o, t, file, line in terms if p in predicates and o in classes}, set(bad)


def got(out: Path) -> list[tuple]:
    rows = []
    for part in sorted(out.glob("part-*.jsonl")):
        for line in part.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            rows.append((r["subject"], r["class"], r["t"], r["file"], r["line"]))
    return rows


def got_rejects(directory: Path) -> set[tuple]:
    return {(r["file"], r["line"], r["reason"]) for part in directory.glob("part-*.jsonl")
            for r in map(json.loads, part.read_text(encoding="utf-8").splitlines())}


def tricky_files(directory: Path) -> list[Path]:
    """Lines the bulk path leaves to Spark: blank nodes, tabs, ISO times, comments, JSON Lines, bad
    bytes; and issue 59's malformed lines (``tests/running_example.py``) as a file of their own."""
    from tests.running_example import with_malformed_lines

    directory.mkdir(parents=True, exist_ok=True)
    vascular, moss = class_iri("species:Abies_alba"), class_iri("division:Bryophyta")
    nt = directory / "tricky.nt"
    nt.write_text("\n".join([
        f'_:p1 {RDF_TYPE} {TRACHEOBIONTA} "5" .',
        f'<{EX}a>\t{RDF_TYPE} {TRACHEOBIONTA} "6" .',
        f'<{EX}b> {RDF_TYPE} {TRACHEOBIONTA} "1970-01-01T00:00:01Z" .',
        f'<{EX}c> {RDF_TYPE} {TRACHEOBIONTA} "7" . # seen in the garden',
        f'<{EX}d> {RDF_TYPE} {moss} "8" .',
        f'<{EX}e> {RDF_TYPE} {vascular} "9"',
        "",
        f'<{EX}\\u00e9> {RDF_TYPE} {TRACHEOBIONTA} "10" .',
        f'<{EX}f> {RDF_TYPE} "no class" "11" .',
    ]) + "\n", encoding="utf-8")
    with nt.open("ab") as out:             # a typed plant whose IRI holds bytes that are not UTF-8
        out.write(f"<{EX}".encode() + b"\xff\xc3> " + f'{RDF_TYPE} {TRACHEOBIONTA} "12" .\n'.encode())
    js = directory / "tricky.jsonl"
    js.write_text("\n".join([
        json.dumps({"s": "ex:g", "p": "a", "o": TRACHEOBIONTA, "t": 12}),
        json.dumps({"t": 13, "triples": [["ex:h", "a", TRACHEOBIONTA], ["ex:h", "ex:likes", "ex:i"]]}),
        json.dumps({"s": "ex:j", "p": "a", "o": TRACHEOBIONTA}),
        json.dumps({"s": "ex:k", "p": "a", "o": TRACHEOBIONTA, "t": "1970-01-01T00:00:02Z"}),
    ]) + "\n", encoding="utf-8")
    malformed = directory / "malformed.jsonl"
    malformed.write_bytes(with_malformed_lines([])[0])
    return [nt, js, malformed]


@pytest.mark.parametrize("engine", ["auto", "spark", "auto+bytes"])
def test_answers_and_rejects_are_those_the_semantics_defines(spark, taxa, closure, tmp_path, engine):
    """``auto+bytes``: also a topic of messages holding issue 59's malformed lines as a Kafka topic
    hands them over (Spark strings of the bytes as they are): the batches then are collected
    through Spark (``_collected``), and each message is a reject with its offset and reason."""
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from scenarios.membership import run
    from scenarios.plant_stream import Mix, generate
    from tests.running_example import MALFORMED_LINES, raw_bytes_source, with_malformed_lines

    stream = tmp_path / "in"
    generate(taxa, stream, 3000, files=3, seed=3, mix=Mix(bad=0.04))
    files = sorted(stream.glob("*.nt")) + tricky_files(stream)
    sources = [FileSource("<urn:plants>", str(stream), max_files_per_trigger=2)]
    if engine == "auto+bytes":
        sources.append(raw_bytes_source("<urn:plants>", tmp_path / "topic", with_malformed_lines([])[0]))
    summary = run(spark, sources, store=closure, target=TRACHEOBIONTA, sink=DirectorySink(tmp_path / "out"),
                  checkpoint=tmp_path / "ckpt", rejects=tmp_path / "rejects", prefixes={"ex": EX},
                  engine=engine.split("+")[0])
    want, want_rejects = oracle(spark, [f.resolve() for f in files], below(taxa))
    malformed = {(str(files[-1].resolve()), n, why) for n, why in with_malformed_lines([])[1].items()}
    if engine == "auto+bytes":
        malformed |= {("kafka:raw/0", n, why) for n, why in with_malformed_lines([])[1].items()}
    rows = got(tmp_path / "out")
    assert len(rows) == len(set(rows)), "an answer was written twice"
    assert set(rows) == want
    rejects = got_rejects(tmp_path / "rejects")
    assert {r for r in rejects if r[0] != "kafka:raw/0"} == want_rejects
    # each malformed line with its file, line and reason (issue 59); the bad bytes of tricky.nt too
    by_line = {(f, n): why for f, n, why in rejects}
    assert sorted(k for k in by_line if k[0] == "kafka:raw/0") == sorted((f, n) for f, n, _ in malformed
                                                                          if f == "kafka:raw/0")
    assert all(by_line[f, n].startswith(why) for f, n, why in malformed) and len(malformed) >= len(MALFORMED_LINES)
    assert by_line[str((stream / "tricky.nt").resolve()), 10] == "invalid UTF-8 byte sequence"
    assert summary.answers == len(want) and summary.rejected == len(rejects) > 100
    assert summary.batches == 3
    if engine == "auto":
        assert summary.driver_batches == 3 and summary.spark_batches == 0
    subjects = {r[0] for r in rows}
    assert any(s.startswith("_:f") for s in subjects), "the blank node subject is scoped to its file"
    assert f"<{EX}h>" in subjects and f"<{EX}\\u00e9>" in subjects


def test_restart_continues_exactly_once_and_a_refreshed_closure_is_picked_up(spark, taxa, tmp_path):
    """Two runs on one checkpoint, a new closure version published between them: no answer
    twice, none lost, and the second run's batches answer with the new version — where a
    taxon unknown before is now a subclass of the target."""
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from reasoner.publish import materialize_sources
    from scenarios.membership import run
    from scenarios.plant_stream import Mix, generate

    target = f"<{EX}Watched>"
    store = tmp_path / "store"
    schema = tmp_path / "schema.nt"
    inside = [class_iri(t.id) for t in taxa[:400]]
    schema.write_text("".join(f"{c} {RDFS_SUBCLASSOF} {target} .\n" for c in inside)
                      + f"<{EX}seen> {RDFS_SUBPROPERTYOF} {RDF_TYPE} .\n", encoding="utf-8")
    materialize_sources(spark, [schema], store)
    stream = tmp_path / "in"
    generate(taxa[:800], stream, 3000, files=3, seed=8, mix=Mix(unknown=0.2), target_id=taxa[0].id)
    kw = dict(store=store, target=target, sink=DirectorySink(tmp_path / "out"), checkpoint=tmp_path / "ckpt")
    first = run(spark, [FileSource("<urn:p>", str(stream), max_files_per_trigger=1)], **kw)
    assert first.batches == 3 and first.version == "v000001"
    # the taxonomy grows: an unknown taxon becomes a subclass of one inside
    unknown = "<http://example.org/plants#unknown:Taxon7>"
    with open(schema, "a", encoding="utf-8") as out:
        out.write(f"{unknown} {RDFS_SUBCLASSOF} {inside[0]} .\n")
    materialize_sources(spark, [schema], store)
    generate(taxa[:800], stream, 2000, files=2, seed=9, mix=Mix(unknown=0.2), first_index=3000)
    (stream / "seen.nt").write_text(f'<{EX}z> <{EX}seen> {inside[1]} "5" .\n', encoding="utf-8")
    second = run(spark, [FileSource("<urn:p>", str(stream), max_files_per_trigger=1)], **kw)
    assert second.batches == 3 and second.version == "v000002"
    rows = got(tmp_path / "out")
    assert len(rows) == len(set(rows))
    files = sorted(f.resolve() for f in stream.glob("*.nt"))
    old, _ = oracle(spark, [f for f in files if f.name <= "plants-8-~"], set(inside))
    new, _ = oracle(spark, [f for f in files if f.name > "plants-8-~"], set(inside) | {unknown},
                    predicates=(RDF_TYPE, f"<{EX}seen>"))
    assert set(rows) == old | new
    assert any(r[1] == unknown for r in rows) and any(r[0] == f"<{EX}z>" for r in rows)
    versions = {json.loads(x)["version"] for p in (tmp_path / "out").glob("*.jsonl")
                for x in p.read_text().splitlines()}
    assert versions == {"v000001", "v000002"}


def test_many_batches_read_their_files_from_the_source_log(spark, taxa, closure, tmp_path):
    """The driver path finds each batch's files in the order the file source logged
    (``scenarios.batches.batch_files``): no batch falls back to collecting through Spark."""
    from cep.continuous.sinks import DirectorySink
    from cep.continuous.sources import FileSource
    from scenarios.membership import run
    from scenarios.plant_stream import generate

    stream = tmp_path / "in"
    generate(taxa, stream, 440, files=11, seed=4)
    summary = run(spark, [FileSource("<urn:p>", str(stream), max_files_per_trigger=1)], store=closure,
                  target=TRACHEOBIONTA, sink=DirectorySink(tmp_path / "out"), checkpoint=tmp_path / "ckpt")
    assert summary.batches == 11 and summary.driver_batches == 11
    assert any(p.name.endswith(".files") for p in (tmp_path / "ckpt" / "spark" / "sources" / "0" / "ordered").iterdir())
    want, _ = oracle(spark, sorted(f.resolve() for f in stream.glob("*.nt")), below(taxa))
    assert sorted(got(tmp_path / "out")) == sorted(want)


def test_cli_errors_name_the_problem(closure, tmp_path, capsys):
    """The first as ``python -m jobs.tracheobionta`` (the entry point, a process of its own), the
    second in-process (``main``): both fail before any JVM starts."""
    from jobs.tracheobionta import main

    (tmp_path / "in").mkdir()
    cmd = [sys.executable, "-m", "jobs.tracheobionta", "--stream", str(tmp_path / "in"), "--closure", str(closure),
           "--checkpoint", str(tmp_path / "ck"), "--class", "genus:Nonexistent"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "genus_Nonexistent" in done.stderr and "is not a term of closure version" in done.stderr
    capsys.readouterr()
    assert main(cmd[3:4] + [str(tmp_path / "missing")] + cmd[5:-2]) == 2
    assert "no such directory" in capsys.readouterr().err
