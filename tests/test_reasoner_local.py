"""The driver-side reasoner (``reasoner.local``) and N-Triples reader (``loading.load_local``):
the same tables and the same rejects as the Spark path, checked against it and against owlrl."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import owlrl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoner import local, store
from rdfcore.loading import load
from rdfcore.sources import load_local
from reasoner.publish import choose_engine, materialize_sources
from reasoner.schema_rules import rdfs5
from rdfcore.vocab import OWL_NS, RDF_TYPE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF
from tests.hypothesis_profiles import examples
from tests.rdfhelpers import tables_for
from tests.test_differential_owlrl import ontology, owlrl_closure, rho_df

ROOT = Path(__file__).resolve().parent.parent
VIENNA = [ROOT / "ontologies" / "vienna_schema.ttl", ROOT / "ontologies" / "vienna_example.ttl"]
EQC, EQP, INV = f"<{OWL_NS}equivalentClass>", f"<{OWL_NS}equivalentProperty>", f"<{OWL_NS}inverseOf>"
SYM, TRANS = f"<{OWL_NS}SymmetricProperty>", f"<{OWL_NS}TransitiveProperty>"


@settings(max_examples=examples(2, 30), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=4, max_size=8))
@pytest.mark.spark
def test_local_tables_equal_spark_tables(spark, seeds):
    """Every table, on random ontologies with OWL extras and meta-level statements (one Spark run
    closes them all: each has its own namespace, so they cannot interact)."""
    rng = random.Random(sum(seeds))
    onts = [_random_ontology(rng, f"http://example.org/r{i}#") for i in range(len(seeds))]
    union = set().union(*onts)
    assert local.closure_sets(union) == tables_for(spark, union)


def _random_ontology(rng: random.Random, ns: str) -> set[tuple[str, str, str]]:
    """Classes, properties, individuals of ``ns`` with the OWL extras and the meta-level
    statements that make the reasoner run more rounds."""
    cls = [f"<{ns}C{i}>" for i in range(4)]
    prop = [f"<{ns}p{i}>" for i in range(3)]
    ind = [f"<{ns}a{i}>" for i in range(4)]
    makers = [
        lambda: (rng.choice(cls), RDFS_SUBCLASSOF, rng.choice(cls)),
        lambda: (rng.choice(prop), RDFS_SUBPROPERTYOF, rng.choice(prop)),
        lambda: (rng.choice(prop), "<http://www.w3.org/2000/01/rdf-schema#domain>", rng.choice(cls)),
        lambda: (rng.choice(prop), "<http://www.w3.org/2000/01/rdf-schema#range>", rng.choice(cls)),
        lambda: (rng.choice(ind), RDF_TYPE, rng.choice(cls)),
        lambda: (rng.choice(ind), rng.choice(prop), rng.choice(ind + ['"lit"'])),
        lambda: (rng.choice(prop), RDFS_SUBPROPERTYOF, RDFS_SUBCLASSOF),
        lambda: (rng.choice(cls), EQC, rng.choice(cls)),
        lambda: (rng.choice(prop), EQP, rng.choice(prop)),
        lambda: (rng.choice(prop), INV, rng.choice(prop)),
        lambda: (rng.choice(prop), RDF_TYPE, rng.choice([SYM, TRANS])),
        lambda: (rng.choice(cls), RDFS_SUBCLASSOF, TRANS),
        lambda: (rng.choice(prop), RDFS_SUBPROPERTYOF, RDF_TYPE),
    ]
    weights = [4, 2, 2, 2, 3, 4, 1, 1, 1, 1, 1, 1, 1]
    return {rng.choices(makers, weights)[0]() for _ in range(rng.randint(1, 16))}


@settings(max_examples=examples(40, 400), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(ontology("http://example.org/r#"), min_size=1, max_size=1))
def test_local_matches_owlrl(onts):
    """ρdf part against the independent oracle, with no Spark: many more examples than the
    Spark-side differential test can afford."""
    ont = onts[0]
    assert rho_df(local.closure_sets(ont)["inferred"]) == rho_df(owlrl_closure(ont))


def test_local_owl_extras_match_owlrl_owl2rl():
    from tests.rdfhelpers import parse_turtle
    from tests.test_differential_owlrl import OWL_EXTRAS, _own_vocabulary

    triples = parse_turtle(OWL_EXTRAS)
    ours = local.closure_sets(triples)["inferred"]
    expected = owlrl_closure(triples, owlrl.OWLRL_Semantics)
    ns = "http://example.org/t#"
    assert _own_vocabulary(ours, ns) == _own_vocabulary(expected, ns)


@settings(max_examples=examples(200), deadline=None)
@given(st.sets(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=30))
def test_transitive_closure_equals_the_plain_one(edges):
    """Tarjan + ancestor sets against the obvious search (cycles, self-loops, diamonds)."""
    assert local.transitive_closure(edges) == rdfs5(edges)


def test_transitive_closure_of_a_deep_chain_has_no_recursion_limit():
    edges = {(i, i + 1) for i in range(5000)}
    closed = local.closure_map(edges)
    assert len(closed[0]) == 5000 and len(closed[4999]) == 1


# --- the N-Triples reader on the driver ------------------------------------------------------
TRICKY = [
    b"<http://e/a> <http://e/p> <http://e/b> .",
    b"# a comment",
    b"",
    b"   \t ",
    b'<http://e/a> <http://e/p> "lit"@EN-gb .',
    b'<http://e/a>\t<http://e/p>\t"s"^^<http://www.w3.org/2001/XMLSchema#string> . # trailing',
    b"<http://e/a> <http://e/p> <http://e/c>",
    b'"lit" <http://e/p> <http://e/c> .',
    b"<http://e/a> _:b <http://e/c> .",
    b"<http://e/a> <http://e/p> <http://e/b> . junk",
    b'<http://e/a> <http://e/p> "caf\xff" .',                         # a bad byte
    b'<http://e/a> <http://e/p> "x\xe2\x80\xa8y"@EN .',               # U+2028 inside a literal
    b"<http://e/a> <http://e/p> <http://e/b> . # c\xe2\x80\xa8d",     # U+2028 in a comment
    b"<http://e/a> <http://e/p> <http://e/b> .\xc2\x85",              # NEL after the dot
    b"_:x\xc2\xa0y <http://e/p> _:z .",                               # NBSP inside a blank node label
    b"_:b1 <http://e/p> _:b2.",
    b'<http://e/a> <http://e/p> "tab\\t\\u00e9\\U0001F600" .',
    b"<http://e/a b> <http://e/p> <http://e/c> .",
    b'<http://e/a> <http://e/p> "open .',
    b"<http://e/a> <http://e/p> <http://e/b> ..",
    b"\xef\xbb\xbf<http://e/a> <http://e/p> <http://e/b> .",          # a BOM
]


def _random_line(rng: random.Random) -> bytes:
    pieces = [b"<http://e/a>", b"<http://e/p>", b"_:b", b'"x"', b'"y"@En', b"<x y>", b".", b" ", b"\t", b"#", b"\xff",
              b"\xe2\x80\xa8", b'"', b"<", b">", b"^^<http://e/t>", b"\\u12", b"_:", b"@"]
    return b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 9)))


def _random_statement(rng: random.Random) -> bytes:
    """A statement with random spacing, terms and endings (most are good, some are not)."""
    ws = lambda: rng.choice([b"", b" ", b"\t", b"  "])  # noqa: E731
    subject = rng.choice([b"<http://e/s>", b"_:b1", b"_:b.2", b"<http://e/\\u00e9>"])
    obj = rng.choice([b"<http://e/o>", b"_:o", b'"v"', b'"v"@EN-Us', b'"v"^^<http://www.w3.org/2001/XMLSchema#string>',
                      b'"2"^^<http://www.w3.org/2001/XMLSchema#int>', b'"q\\"x"', b'"\xc3\xa9"'])
    end = rng.choice([b".", b". # c", b".#", b" .", b"", b". x"])
    return ws() + subject + ws() + b"<http://e/p>" + ws() + obj + ws() + end + ws()


def _near_plain(rng: random.Random) -> bytes:
    """A line of the plain shape ``<s> <p> <o> .`` (the Spark reader splits those at their spaces)
    or one edit away from it: every ASCII character in an IRI (DEL and the forbidden ones too),
    non-ASCII, an escape, other spacing, an empty IRI, a missing or doubled dot, a comment."""
    def iri() -> bytes:
        body = bytearray(rng.choice([b"http://e/", b"", b"urn:x:"]))
        for _ in range(rng.randint(0, 6)):
            body += rng.choice([bytes([rng.randint(0x21, 0x7F)]), b"a", b"%20", b"\xc3\xa9", b"\\u00e9", b"~_"])
        return b"<" + bytes(body) + b">"

    parts = [iri(), iri(), iri(), b"."]
    seps = [b" ", b" ", b" "]
    roll = rng.random()
    if roll < 0.15:
        seps[rng.randrange(3)] = rng.choice([b"  ", b"\t", b""])
    elif roll < 0.25:
        parts[3] = rng.choice([b"", b"..", b". ", b".# c", b" ."])
    elif roll < 0.3:
        parts[rng.randrange(3)] = rng.choice([b"_:b", b'"v"'])
    return b"".join(x for pair in zip(parts, seps + [b""]) for x in pair)


@pytest.mark.spark
def test_local_reader_equals_spark_reader(spark, tmp_path):
    """Same triples and same rejects (file, line, reason, raw) on tricky and random lines, with
    \\n, \\r\\n and \\r line ends, in two files (blank-node scopes); read directly and through a
    staging table (whose id columns are the terms' ids)."""
    from rdfcore.hashing import term_id
    from rdfcore.schema import ID_COLUMNS

    rng = random.Random(7)
    lines = TRICKY + [_random_line(rng) if rng.random() < 0.5 else _random_statement(rng) for _ in range(400)]
    lines += [_near_plain(rng) for _ in range(400)]
    rng.shuffle(lines)
    first = tmp_path / "a.nt"
    first.write_bytes(b"\n".join(lines) + b"\n")
    second = tmp_path / "b.nt"
    second.write_bytes(b"\r\n".join(lines[:30]) + b"\r" + b"\r".join(lines[30:60]))
    ours = load_local([first, second])
    theirs = load(spark, [first, second])
    staged = theirs.staged(tmp_path / "stage")
    for read in (theirs, staged):
        assert sorted(ours.triples) == sorted(tuple(r)[:3] for r in read.triples.collect())
        assert sorted(ours.rejects) == sorted(tuple(r) for r in read.rejects.collect())
    assert all(r[i] == term_id(r[t]) for r in staged.triples.collect() for t, i in zip("spo", ID_COLUMNS))
    assert len(ours.rejects) > 200 and len(ours.triples) > 200
    assert ours.sources == theirs.sources


@pytest.mark.spark
def test_publish_local_equals_spark_and_needs_no_session(spark, tmp_path):
    """materialize_sources with engine local writes the tables of engine spark (every table, the
    rejects too), skips unchanged sources, and exports the same N-Triples, all without Spark."""
    bad = tmp_path / "extra.nt"
    bad.write_bytes(b"<http://example.org/vienna#x> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
                    b"<http://example.org/vienna#Stop> .\n<oops> .\n")
    sources = [*VIENNA, bad]
    runs = {}
    for engine in ("spark", "local"):
        out = tmp_path / engine
        summary = materialize_sources(spark if engine == "spark" else None, sources, out, engine=engine,
                                      export_ntriples=tmp_path / f"{engine}.nt")
        assert summary["engine"] == engine and summary["rejected"] == 1
        version = store.open_version(spark, out)
        runs[engine] = {name: sorted(tuple(r) for r in version.table(name).collect()) for name in store.TABLES}
        runs[engine]["counts"] = summary["counts"]
    assert runs["local"] == runs["spark"]
    assert (tmp_path / "local.nt").read_text() == (tmp_path / "spark.nt").read_text()
    again = materialize_sources(None, sources, tmp_path / "local", engine="local", if_changed=True,
                                export_ntriples=tmp_path / "again.nt")
    assert again["skipped"] and (tmp_path / "again.nt").read_text() == (tmp_path / "spark.nt").read_text()


def test_auto_engine_decides_by_input_size(tmp_path, monkeypatch):
    small = tmp_path / "s.nt"
    small.write_text("<http://e/a> <http://e/p> <http://e/b> .\n")
    assert choose_engine([small], "auto", "dataframe") == "local"
    assert choose_engine([small], "auto", "graphframes") == "spark"
    monkeypatch.setenv("RSP_LOCAL_MAX_BYTES", "10")
    assert choose_engine([small], "auto", "dataframe") == "spark"
    with pytest.raises(ValueError, match="runs on Spark"):
        choose_engine([small], "local", "graphframes")
    with pytest.raises(ValueError, match="unknown engine"):
        choose_engine([small], "gpu", "dataframe")


def test_materialize_job_on_the_driver_starts_no_spark(tmp_path):
    """The scheduled refresh of a small ontology: one JSON line, engine local — and no JVM: with
    no Java to be found, starting Spark would fail."""
    out = tmp_path / "store"
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java"), "SPARK_HOME": str(tmp_path / "no-spark")}
    done = subprocess.run([sys.executable, "-m", "jobs.materialize", "--ontology", *map(str, VIENNA), "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["engine"] == "local" and summary["counts"]["inferred"] == 118
    assert store.read_manifest(out)["tables"]["inferred"] == 118


@pytest.mark.spark
def test_spark_closure_by_squaring_gives_the_same_tables(spark, monkeypatch):
    """Above DRIVER_SCHEMA_ROWS the Spark path closes the hierarchy on Spark (squaring), and above
    SEVERAL_TYPES_BROADCAST multi-typed instances rdfs9 deduplicates everything: both forced here
    on random ontologies, the tables equal the driver's."""
    from reasoner import materialize as M

    monkeypatch.setattr(M, "DRIVER_SCHEMA_ROWS", 0)
    monkeypatch.setattr(M, "SEVERAL_TYPES_BROADCAST", 0)     # and rdfs9 deduplicating all its output
    rng = random.Random(11)
    union = set().union(*[_random_ontology(rng, f"http://example.org/q{i}#") for i in range(10)])
    assert local.closure_sets(union) == tables_for(spark, union)


@pytest.mark.spark
def test_hash_collisions_are_refused_on_both_engines(spark, monkeypatch):
    """Two terms with one id would merge in every table: both dictionaries refuse them, naming
    the id and the terms."""
    from rdfcore.dictionary import checked_dictionary
    from rdfcore.errors import HashCollisionError

    parts = [spark.createDataFrame([(1, "<a>"), (2, "<c>"), (1, "<b>"), (2, "<c>")], "id long, term string")]
    with pytest.raises(HashCollisionError, match="<a>.*<b>") as caught:
        checked_dictionary(parts)
    assert "<c>" not in str(caught.value)
    monkeypatch.setattr(local, "fast_xxh64", lambda data: 7 if data in (b"<a>", b"<b>") else len(data) + 100)
    with pytest.raises(HashCollisionError, match="<a>.*<b>"):
        local.dictionary([("<a>", "<p>", "<b>")])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300).map(lambda b: b.replace(b"x", b"\n")), chunk=st.sampled_from([1, 3, 7, 64]),
       cut=st.floats(0, 1))
def test_a_file_and_its_prefix_hashed_in_one_pass(tmp_path_factory, data, chunk, cut):
    """``loading.hash_file``'s prefix (SHA-256, lines, ends a line) of the first ``mark`` bytes is
    what incremental refresh computes by reading them again, whatever the chunk boundaries."""
    import hashlib

    from reasoner.incremental import _prefix
    from rdfcore.sources import hash_file

    path = tmp_path_factory.mktemp("hash") / "f.nt"
    path.write_bytes(data)
    mark = int(len(data) * cut)
    sha, prefix = hash_file(path, mark, chunk=chunk)
    assert sha == hashlib.sha256(data).hexdigest()
    assert prefix == _prefix(path, mark)
    assert hash_file(path)[1] is None
