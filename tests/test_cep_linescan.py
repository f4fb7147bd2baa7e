"""``cep.io.linescan`` (the compiled JSON Lines reader) against ``cep.io.lineparse.parse_jsonl``, its
definition: every line the scanner takes as plain or blank, ``parse_jsonl`` takes the same way
with the same item; whatever it leaves (slow) goes to ``parse_jsonl`` itself. No Spark: the
parser's agreement with Spark is ``tests/test_cep_lineparse.py``'s."""
from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cep.io import linescan as J
from cep.io.lineparse import TSNT_BLANK_OR_COMMENT, TSNT_STRICT, item_id, parse_jsonl, parse_tsnt
from rdfcore.bytekernels import xxh64_long
from rdfcore.hashing import xxh64
from tests.test_cep_lineparse import PREFIXES, random_line

TRICKY = [
    "", "  \t ", "\r", "\f", '{"s": ":a", "p": "a", "o": ":m", "t": 1}',
    '  {"t":1,"o":":m","p":"a","s":":a"}  ', '\t{ "s" : ":a" , "p" : "a" , "o" : ":m" , "t" : 1 }\r',
    '{"s": ":a", "p": "a", "o": ":m", "t": -0}', '{"s": ":a", "p": "a", "o": ":m", "t": -12}',
    '{"s": ":a", "p": "a", "o": ":m", "t": 007}', '{"s": ":a", "p": "a", "o": ":m", "t": 0}',
    '{"s": ":a", "p": "a", "o": ":m", "t": 1.0}', '{"s": ":a", "p": "a", "o": ":m", "t": 1e3}',
    '{"s": ":a", "p": "a", "o": ":m", "t": 1E3}', '{"s": ":a", "p": "a", "o": ":m", "t": 123456789012345678}',
    '{"s": ":a", "p": "a", "o": ":m", "t": 1234567890123456789}', '{"s": ":a", "p": "a", "o": ":m", "t": -}',
    '{"s": ":a", "p": "a", "o": ":m", "t": 5, "t_end": 4}', '{"s": ":a", "p": "a", "o": ":m", "t": 5, "t_end": 5}',
    '{"s": ":a", "p": "a", "o": ":m", "t": 5, "t_end": 9}', '{"s": ":a", "p": "a", "o": ":m", "t": 5, "t_end": null}',
    '{"s": ":a", "p": "a", "o": ":m", "t_end": 9}', '{"s": ":a", "p": "a", "o": ":m", "t": 1}x',
    '{"s": ":a", "p": "a", "o": ":m", "t": 1},', '{"s": ":a", "p": "a", "o": ":m", "t": 1,}',
    '{"s": ":a" "p": "a", "o": ":m", "t": 1}', '{"s": ":a", "p": "a", "o": ":m", "t": 1', '{"s": ":a", "p": "a"',
    '{"s": ":a", "p": "a", "o": ":m", "t": 1, "t": 2}', '{"s": ":a", "p": "a", "o": ":m", "o": ":n", "t": 1}',
    '{"s": ":a", "p": "a", "o": ":m", "t": 1, "x": 2}', '{"s": ":a", "p": "a", "o": ":m", "t": "1"}',
    '{"s": ":a", "p": "a", "o": ":m", "t": true}', '{"s": ":a", "p": "a", "o": ":m", "t": NaN}',
    '{"s": ":\\u0061", "p": "a", "o": ":m", "t": 1}', '{"s": ":a\t", "p": "a", "o": ":m", "t": 1}',
    '{"s": ":é", "p": "a", "o": ":m", "t": 1}', '{"s": ":a\x7f", "p": "a", "o": ":m", "t": 1}',
    '{"s": "", "p": "a", "o": ":m", "t": 1}', '{"s": "_:", "p": "a", "o": ":m", "t": 1}',
    '{"s": "_:b", "p": "a", "o": "_:b", "t": 1}', '{"s": ":a", "p": "_:p", "o": ":m", "t": 1}',
    '{"s": "s", "p": "a", "o": ":m", "t": 1}', '{"s": ":a", "p": "p", "o": "t_end", "t": 1}',
    '{"s": ":a", "p": "a", "o": "nope:m", "t": 1}', '{"s": "<http://x/a>", "p": "<http://x/p>", "o": "<a b>", "t": 1}',
    '{"s": "<http://x/a>", "p": "<http://x/p>", "o": "<http://x/o>", "t": 1}', '{"s": ":a", "p": "a", "o": "ex:", "t": 1}',
    '{"triples": [[":a", "a", ":m"]], "t": 1}', '["s", "p"]', '{}', '{ }', 'null', '{"s": ":a", "p": "a", "o": ":m", "t": 1}\n',
    '\ufeff{"s": ":a", "p": "a", "o": ":m", "t": 1}', '{"s": ":a", "p": "a", "o": ":m", "t": 1}\x0b',
    '{"s": ":a", "p": "a", "o": "\\"lit\\"", "t": 1}', '{"s": ":a", "p": "a", "o": ":m", "t":1,"t_end":-0}',
]


def _mutate(line: str, rng: random.Random) -> str:
    """A random byte-level edit: a character dropped, doubled or replaced, whitespace added."""
    if not line:
        return line
    i = rng.randrange(len(line))
    edit = rng.random()
    if edit < 0.25:
        return line[:i] + line[i + 1:]
    if edit < 0.5:
        return line[:i] + line[i] + line[i:]
    if edit < 0.75:
        return line[:i] + rng.choice(' \t"{}:,-0123456789e.\\_x') + line[i + 1:]
    return line[:i] + rng.choice([" ", "\t", "\r", "  "]) + line[i:]


def _plain_line(rng: random.Random) -> str:
    """A line of the scanner's shape, most of them with terms ``parse_jsonl`` takes."""
    obj = {"s": rng.choice([":a1", "ex:b", "<http://x/c>", "_:b1", "_:b.x", "nope:x", ":", "ex:a/b#c"]),
           "p": rng.choice([":delayAt", "a", "ex:p", "<http://x/p>", "_:p"]),
           "o": rng.choice([":m", "_:o", "<http://x/o>", "ex:o.", ":", "_:b1", "<http://x/o>"]),
           "t": rng.choice([0, 7, -3, 2 ** 59, rng.randrange(10 ** 6)])}
    if rng.random() < 0.2:
        obj["t_end"] = obj["t"] + rng.choice([0, 1, 100, -1])
    return json.dumps(obj)


def _lines(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        line = random_line(rng) if rng.random() < 0.5 else _plain_line(rng)
        if rng.random() < 0.3:
            try:
                obj = json.loads(line)
            except ValueError:
                obj = None
            if isinstance(obj, dict):       # keys in another order, other spacing
                items = list(obj.items())
                rng.shuffle(items)
                sep = rng.choice([(",", ":"), (", ", ": "), (" ,\t", " :  ")])
                line = json.dumps(dict(items), separators=sep)
        if rng.random() < 0.2:
            line = _mutate(line, rng)
        out.append(line)
    return out


def _check(lines: list[str], files: list[str]) -> dict:
    cache: dict = {}
    kind, plain = J.scan(pa.array(lines, pa.string()), pa.array(files, pa.string()), PREFIXES, cache)
    counts = {J.BLANK: 0, J.PLAIN: 0, J.SLOW: 0}
    row = {int(i): k for k, i in enumerate(plain.at)}
    numbers = {}
    for i, (line, file) in enumerate(zip(lines, files)):
        numbers[file] = numbers.get(file, 0) + 1
        counts[int(kind[i])] += 1
        expected = parse_jsonl(line, file, numbers[file], PREFIXES)
        if kind[i] == J.BLANK:
            assert expected == [], repr(line)
        elif kind[i] == J.PLAIN:
            k = row[i]
            got = [(item_id(file, numbers[file]), plain.terms["s"][k].as_py(), plain.terms["p"][k].as_py(),
                    plain.terms["o"][k].as_py(), int(plain.t1[k]), int(plain.t2[k]))]
            assert got == expected, repr(line)
            from rdfcore.hashing import term_id
            assert [int(plain.ids[c][k]) for c in "spo"] == [term_id(t) for t in got[0][1:4]]
    assert J.PLAIN not in kind[[i for i in range(len(lines)) if i not in row]]
    return counts


def test_the_tricky_lines_are_read_as_parse_jsonl_reads_them():
    counts = _check(TRICKY, ["/data/a.jsonl"] * len(TRICKY))
    assert counts[J.PLAIN] >= 12 and counts[J.BLANK] == 3 and counts[J.SLOW] >= 30


def test_random_lines_from_several_files_are_read_as_parse_jsonl_reads_them():
    rng = random.Random(11)
    files = [rng.choice(["/data/a.jsonl", "/data/b.jsonl", "hdfs://nn/x/c.jsonl"]) for _ in range(6000)]
    counts = _check(_lines(rng, len(files)), files)
    assert counts[J.BLANK] > 20 and counts[J.PLAIN] > 1500 and counts[J.SLOW] > 1500, counts


def test_a_blank_node_is_scoped_to_its_file():
    lines = ['{"s": "_:b1", "p": "a", "o": "_:b1", "t": 1}'] * 2
    _kind, plain = J.scan(pa.array(lines), pa.array(["/a.jsonl", "/b.jsonl"]), PREFIXES, {})
    subjects = plain.terms["s"].to_pylist()
    assert subjects[0] != subjects[1] and plain.ids["s"][0] != plain.ids["s"][1]
    assert plain.terms["o"].to_pylist() == subjects


def test_strings_that_only_hash_alike_are_caught():
    data = np.frombuffer(b"abcdabcxabcd_:b1_:b1", np.uint8)
    starts, ends = np.array([0, 4, 8, 12, 16]), np.array([4, 8, 12, 16, 20])
    files = np.array([0, 0, 0, 0, 1])
    # every span claims the first's hash; only the equal ones (and the blank node of the same file) pass
    ok = J._verify(data, starts, ends, files, np.array([0, 3]), np.array([0, 0, 0, 1, 1]))
    assert ok.tolist() == [True, False, True, True, False]


def test_item_ids_are_sparks_xxhash64_of_file_and_line():
    rng = random.Random(3)
    files = [rng.choice(["/a.jsonl", "kafka://h:1/t/0", "/é/ü.jsonl"]) for _ in range(300)]
    lines = [rng.choice([0, 1, -1, 2 ** 63 - 1, -2 ** 63, rng.randrange(-2 ** 63, 2 ** 63)]) for _ in files]
    got = J.item_ids(pa.array(files), np.array(lines, np.int64))
    assert got.tolist() == [item_id(f, n) for f, n in zip(files, lines)]
    for _ in range(200):
        value, seed = rng.randrange(-2 ** 63, 2 ** 63), rng.randrange(2 ** 64)
        assert xxh64_long(np.int64(value), np.uint64(seed)) == xxh64(value.to_bytes(8, "little", signed=True), seed)


NT_SUBJECTS = ["<http://x/a>", "<http://x/é>", "_:b1", "_:b.x", "_:b.", "<a b>", "<http://x/a\\u00e9>", "x:a"]
NT_PREDICATES = ["<http://x/p>", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", "_:p", "a"]
NT_OBJECTS = ["<http://x/o>", '"plain"', '"x"@EN-gb', '"y"^^<http://www.w3.org/2001/XMLSchema#string>',
              '"5"^^<http://www.w3.org/2001/XMLSchema#integer>', '"é ü"', '"esc\\"aped"', "_:o", '"k"@', '"t"^^xsd:x']
NT_STAMPS = ['"0"', '"17"', '"123456789012345678"', '"1234567890123456789"', '"007"', '"-3"',
             '"42"^^<http://www.w3.org/2001/XMLSchema#long>', '"2024-05-01T10:00:00Z"', "17", '"1.5"']


def _nt_line(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.08:
        return rng.choice(["", "   ", "\t# a comment", "# é comment", "#", "not a triple", "<http://x/a> <http://x/p> ."])
    s_ = rng.choice(NT_SUBJECTS[:4]) if rng.random() < 0.9 else rng.choice(NT_SUBJECTS)
    p_ = NT_PREDICATES[0] if rng.random() < 0.6 else rng.choice(NT_PREDICATES)
    o_ = rng.choice(NT_OBJECTS)
    t_ = rng.choice(NT_STAMPS[:3]) if rng.random() < 0.8 else rng.choice(NT_STAMPS)
    line = rng.choice([f"{s_} {p_} {o_} {t_} .", f"{s_} {p_} {o_} {t_}", f"{s_} {p_} {o_} . {t_}",
                       f"{s_} {p_} {o_} {t_}.", f"{s_}  {p_} {o_} {t_} .", f"{s_} {p_} {o_} {t_} . # c"])
    return _mutate(line, rng) if rng.random() < 0.1 else line


@pytest.mark.spark
def test_timestamped_ntriples_plain_lines_parse_as_spark_parses_them(spark, tmp_path):
    """``scan_tsnt`` against Spark's parser (``cep.io.streams``), the definition: every plain line
    gives Spark's triple, times and item id; every blank one is neither an item nor a reject."""
    from collections import defaultdict

    from cep.io.streams import read_stream

    rng = random.Random(8)
    lines = [_nt_line(rng).replace("\r", " ") for _ in range(3000)]     # a CR ends a line for Spark
    path = tmp_path / "stream.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    file = str(path.resolve())
    stream = read_stream(spark, path, {}, "ms", plain=False)   # Spark's expressions alone
    spark_rows = defaultdict(list)
    for r in stream.terms.collect():
        spark_rows[r["item"]].append((r["s"], r["p"], r["o"], r["t_start"], r["t_end"]))
    rejected = {r["line"] for r in stream.rejects.collect()}
    kind, plain = J.scan_tsnt(pa.array(lines), pa.array([file] * len(lines)), {})
    row = {int(i): k for k, i in enumerate(plain.at)}
    counts = {J.BLANK: 0, J.PLAIN: 0, J.SLOW: 0}
    for number, raw in enumerate(lines, start=1):
        i = number - 1
        counts[int(kind[i])] += 1
        item = item_id(file, number)
        if kind[i] == J.BLANK:
            assert item not in spark_rows and number not in rejected, raw
        elif kind[i] == J.PLAIN:
            k = row[i]
            got = (plain.terms["s"][k].as_py(), plain.terms["p"][k].as_py(), plain.terms["o"][k].as_py(),
                   int(plain.t1[k]), int(plain.t2[k]))
            assert number not in rejected and spark_rows[item] == [got], raw
    assert counts[J.BLANK] > 50 and counts[J.PLAIN] > 500 and counts[J.SLOW] > 1000, counts


def test_timestamped_ntriples_lines_parse_in_python_as_the_scanner_reads_them():
    """``parse_tsnt`` (the driver's reader of small files) against ``scan_tsnt``, which the test
    above holds to Spark's parser: the same blank, plain and slow lines, and for a plain one the
    same item id, terms and times; and the lines it takes are those of the RE2 expression."""
    rng = random.Random(11)
    lines = [_nt_line(rng).replace("\r", " ") for _ in range(4000)]
    file = "/data/stream.nt"
    kind, plain = J.scan_tsnt(pa.array(lines), pa.array([file] * len(lines)), {})
    row = {int(i): k for k, i in enumerate(plain.at)}
    strict = pc.match_substring_regex(pa.array(lines), TSNT_STRICT).to_pylist()
    blank = pc.match_substring_regex(pa.array(lines), TSNT_BLANK_OR_COMMENT).to_pylist()
    cache: dict = {}
    counts = {J.BLANK: 0, J.PLAIN: 0, J.SLOW: 0}
    for number, raw in enumerate(lines, start=1):
        i = number - 1
        got = parse_tsnt(raw, file, number, cache)
        counts[int(kind[i])] += 1
        if kind[i] == J.BLANK:
            assert got == [] and blank[i], raw
        elif kind[i] == J.SLOW:
            assert got is None, raw
        else:
            k = row[i]
            assert strict[i] and got == [(item_id(file, number), plain.terms["s"][k].as_py(), plain.terms["p"][k].as_py(),
                                          plain.terms["o"][k].as_py(), int(plain.t1[k]), int(plain.t2[k]))], raw
    assert counts[J.BLANK] > 50 and counts[J.PLAIN] > 500 and counts[J.SLOW] > 1000, counts


def _bad_bytes(line: str, rng: random.Random) -> bytes:
    """``line`` with a byte sequence that is not UTF-8 put at a random place (inside a term, most
    of the time: the scanners' terms are where bytes above 0x7F may stand)."""
    data = line.encode("utf-8")
    at = rng.randrange(len(data) + 1)
    bad = rng.choice([b"\xff", b"\xfe\xff", b"\xc3", b"\x80", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                      b"\xf0\x9f\x98"])
    return data[:at] + bad + data[at:]


def test_lines_of_invalid_utf8_are_never_plain_and_read_as_with_u_fffd():
    """Bytes that are not UTF-8 in a line (a Kafka message's bytes reach the scanners as they
    are): both compiled scanners give such a line the kind they give it with U+FFFD for its bad
    bytes, never plain (no parser takes a line holding U+FFFD); ``with_valid_utf8`` gives that
    line, and the valid lines themselves (the same array when every line is valid)."""
    from cep.io import tsntscan

    rng = random.Random(59)
    for lines in (TRICKY + _lines(rng, 2000), [_nt_line(rng) for _ in range(2000)]):
        raw = [_bad_bytes(x, rng) if rng.random() < 0.5 else x.encode("utf-8") for x in lines]
        bytes_as_they_are = pa.array(raw, pa.binary()).view(pa.string())
        replaced = pa.array([x.decode("utf-8", errors="replace") for x in raw], pa.string())
        valid = J.with_valid_utf8(bytes_as_they_are)
        assert valid.to_pylist() == replaced.to_pylist()
        assert J.with_valid_utf8(replaced) is replaced
        bad = np.array([x != x.decode("utf-8", errors="replace").encode("utf-8") for x in raw])
        files = pa.array(["/d/a.jsonl"] * len(raw))
        for scan in (lambda a: J.scan(a, files, PREFIXES, {})[0], lambda a: J.scan_tsnt(a, files, {})[0],
                     lambda a: tsntscan.scan(a, tsntscan.TermSet(pa.array(["<http://x/p>"])),
                                             tsntscan.TermSet(pa.array(["<http://x/o>"])))[0]):
            kind = scan(bytes_as_they_are)
            assert (kind == scan(replaced)).all()
            assert bad.sum() > 500 and not (kind[bad] == J.PLAIN).any()


def test_setup_compiles_the_kernels_once_for_every_later_process():
    """``rsp-sidecar setup`` compiles the kernels (``cep.io.kernels``) into numba's cache beside
    their modules: after one process has run it (the install's setup, so it compiles nothing here
    unless a kernel changed since), a second process runs none of the compiler's passes (each kernel
    it calls is loaded), as a service's first micro-batch then does."""
    import subprocess
    import sys

    code = ("from numba.core import event\n"
            "passes = [0]\n"
            "class Count(event.Listener):\n"
            "    def on_start(self, ev): passes[0] += 1\n"
            "    def on_end(self, ev): pass\n"
            "event.register('numba:run_pass', Count())\n"
            "from cep.io.kernels import compile_all\n"
            "compile_all()\n"
            "print(passes[0])\n")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:] + runs[1].stderr[-2000:]
    assert int(runs[1].stdout.strip().splitlines()[-1]) == 0, "the second process compiled a kernel"
