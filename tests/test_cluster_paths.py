"""Running where Spark users run it (issue 15), the parts testable without a cluster: the project
imported and run from its ``--py-files`` zip alone, ``file:`` URLs as paths, other URLs as Hadoop
paths (a scheme Spark lacks refused before anything is written), and the lineage cut off local
mode. HDFS itself: ``tests/test_hdfs.py``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from jobs import package
from jobs.cli import main as cli
from rdfcore import resources
from reasoner import store
from rdfcore.fs import HadoopPath
from rdfcore.locations import LocationError, local_path, location

EXAMPLE = ("vienna_schema.ttl", "vienna_example.ttl")


def examples() -> list[str]:
    return [str(resources.path("ontologies", name)) for name in EXAMPLE]


# --- the zip -------------------------------------------------------------------------------------

def zip_only_env(artifact: Path) -> dict:
    """An environment whose Python sees the zip and the site-packages only (run with -S: no .pth,
    so not this source tree through the editable install)."""
    site = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(artifact), *site])
    return env


def test_the_package_runs_from_its_zip(tmp_path):
    artifact, launcher = package.build(tmp_path / "dist")
    package.check(artifact)                                  # imports from the zip; both grammars build
    work = tmp_path / "elsewhere"
    work.mkdir()
    ontology = work / "example.ttl"                          # the shipped example, read out of the zip
    probe = ("import sys; from rdfcore import resources; "
             "sys.stdout.write(str(resources.path('ontologies', 'vienna_example.ttl')))")
    extracted = subprocess.run([sys.executable, "-S", "-c", probe], env={**zip_only_env(artifact),
                               "RSP_CACHE_DIR": str(tmp_path / "cache")}, cwd=work, capture_output=True, text=True)
    assert extracted.returncode == 0, extracted.stderr
    assert extracted.stdout.startswith(str(tmp_path / "cache"))  # not a path into the zip
    ontology.write_bytes(Path(extracted.stdout).read_bytes())
    assert ontology.read_bytes() == resources.data("ontologies", "vienna_example.ttl")
    done = subprocess.run([sys.executable, "-S", str(launcher), "materialize", "--engine", "local",
                           "--ontology", str(ontology), "--out", "file://" + str(work / "store")],
                          env=zip_only_env(artifact), cwd=work, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    manifest = store.read_manifest(work / "store")
    assert manifest["summary"]["counts"]["inferred"] > 0
    assert sorted(p.name for p in work.iterdir()) == ["example.ttl", "store"]


def test_a_zip_without_resource_loading_is_caught(tmp_path):
    """The check fails for real: a zip whose parser reads its grammar through ``__file__``."""
    artifact = tmp_path / "broken.zip"
    import zipfile

    good, _ = package.build(tmp_path / "dist")
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(artifact, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "paths/parser.py":
                assert b"resources.text(package, name)" in data
                data = data.replace(b"resources.text(package, name)",
                                    b"__import__('pathlib').Path(__file__).with_name(name).read_text()")
            target.writestr(item, data)
    with pytest.raises(package.PackageError, match="does not import from the zip"):
        package.check(artifact)


# --- locations -----------------------------------------------------------------------------------

def test_local_path_reads_file_urls_and_refuses_other_filesystems():
    assert location("hdfs://nn:8020/a/b/") == HadoopPath("hdfs://nn:8020/a/b")
    assert location("file:///abs") == Path("/abs") and location("rel") == Path("rel")
    with pytest.raises(LocationError, match="not a filesystem Spark writes to"):
        location("https://example.org/x.ttl")
    assert local_path("file:///abs/a%20b") == Path("/abs/a b")
    assert local_path("file:/abs") == Path("/abs")
    assert local_path("file://localhost/abs") == Path("/abs")
    assert local_path("rel/x.nt") == Path("rel/x.nt")
    assert local_path("odd:name.nt") == Path("odd:name.nt")     # a colon in a file name is no URL
    for url in ("hdfs://nn:8020/closure", "s3a://bucket/key", "abfss://c@a.dfs.core.windows.net/x",
                Path("hdfs://nn/x")):
        with pytest.raises(LocationError, match=r"on a (hdfs|s3a|abfss):// filesystem"):
            local_path(url, "--out")
    with pytest.raises(LocationError, match="another host"):
        local_path("file://other/x")


def test_a_filesystem_spark_lacks_writes_nothing(spark, tmp_path, capsys, monkeypatch):
    """A URL is a Hadoop path (``rdfcore.fs``); a scheme without a filesystem on Spark's classpath
    is one error line naming the connector to add, and nothing is written locally (no directory
    named after the scheme, as ``pathlib`` once made of ``hdfs://``)."""
    monkeypatch.chdir(tmp_path)
    code = cli(["materialize", "--ontology", *examples(), "--out", "s3a://bucket/closure"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("error: s3a://bucket/closure: Spark has no Hadoop filesystem for s3a://")
    assert "hadoop-aws" in err[0]
    code = cli(["materialize", "--ontology", "s3a://bucket/schema.ttl", "--out", "store"])
    assert code == 2 and "error: s3a://bucket/schema.ttl: Spark has no Hadoop filesystem" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []                    # no directory named s3a: or store


@pytest.mark.spark
def test_continuous_runtime_on_a_filesystem_spark_lacks_writes_nothing(spark, tmp_path, capsys, monkeypatch):
    """The continuous runtime's directories are Hadoop paths too (``tests/test_hdfs.py`` runs it on
    HDFS): a checkpoint or a stream directory on a scheme Spark has no filesystem for is one error
    line before the stream starts, and nothing is written locally."""
    monkeypatch.chdir(tmp_path)
    query = str(resources.path("ontologies", "vienna_example_query.rq"))
    static = ["--static", str(resources.path("ontologies", "vienna_example.ttl"))]
    (tmp_path / "in").mkdir()
    code = cli(["query", query, *static, "--continuous", "--stream",
                f"<http://example.org/publicTransport>={tmp_path / 'in'}", "--checkpoint", "s3a://bucket/ckpt",
                "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    # the first thing read there is the checkpoint's record (cep.continuous.record)
    assert code == 2 and err[-1].startswith("error: s3a://bucket/ckpt/checkpoint.json: Spark has no Hadoop "
                                            "filesystem for s3a://")
    code = cli(["query", query, *static, "--continuous", "--checkpoint", str(tmp_path / "ckpt"),
                "--stream", "<http://example.org/publicTransport>=s3a://b/events"])
    assert code == 2 and "error: s3a://b/events: Spark has no Hadoop filesystem for s3a://" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]   # nothing named s3a:, no output


@pytest.mark.spark
def test_a_file_url_store_is_one_store(spark, tmp_path, monkeypatch):
    """``--out file:///abs/store`` once split the store: Parquet under /abs/store, the manifest and
    CURRENT under ./file:/abs/store. Both engines now write all of it at /abs/store."""
    from reasoner.publish import materialize_sources

    monkeypatch.chdir(tmp_path)
    for engine in ("spark", "local"):
        target = tmp_path / f"store-{engine}"
        url = "file://" + str(target)
        first = materialize_sources(spark, ["file://" + p for p in examples()], url, engine=engine)
        again = materialize_sources(spark, examples(), url, engine=engine, if_changed=True)
        assert first["version"] == "v000001" and again["skipped"]
        assert store.current_version(target) == "v000001"
        manifest = json.loads((target / "versions" / "v000001" / "manifest.json").read_text())
        assert manifest["tables"] == first["counts"]
        assert (target / "versions" / "v000001" / "inferred").is_dir()
        assert store.open_version(spark, url).table("inferred").count() == first["counts"]["inferred"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store-local", "store-spark"]


@pytest.mark.spark
def test_lineage_cut_is_reliable_off_local_mode(spark, tmp_path, monkeypatch):
    """Off local mode, ``cut`` writes a reliable checkpoint (to ``RSP_CHECKPOINT_DIR`` when the
    context has no checkpoint directory yet): the rows survive, and their files are there."""
    from urllib.parse import urlsplit

    from rdfcore import sparkutil

    monkeypatch.setattr(sparkutil, "is_local", lambda session: False)
    monkeypatch.setenv("RSP_CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    context = spark.sparkContext
    before = context.getCheckpointDir()
    frame, rows = sparkutil.cut_counted(spark.range(1000).selectExpr("id * 2 AS x"))
    assert rows == 1000 and frame.agg({"x": "sum"}).first()[0] == 999_000
    used = context.getCheckpointDir()
    assert used is not None and (before is not None or str(tmp_path / "checkpoints") in used)
    assert any(Path(urlsplit(used).path).rglob("rdd-*"))     # written, not kept in executor memory


@pytest.mark.spark
def test_no_checkpoint_directory_every_node_sees_is_one_clear_error(spark, monkeypatch):
    """A cluster whose default filesystem is the local disk (a standalone cluster without HDFS)
    and no checkpoint directory named: refused with what to set, not a failure inside Spark's
    checkpoint (each node would write to its own disk); named, it is used as given."""
    from rdfcore import sparkutil

    monkeypatch.delenv("RSP_CHECKPOINT_DIR", raising=False)
    assert spark.conf.get("spark.checkpoint.dir", None) is None
    with pytest.raises(sparkutil.CheckpointDirError, match="spark.checkpoint.dir=hdfs://"):
        sparkutil.checkpoint_directory(spark)
    monkeypatch.setenv("RSP_CHECKPOINT_DIR", "hdfs://nn:8020/ckpt")
    assert sparkutil.checkpoint_directory(spark) == "hdfs://nn:8020/ckpt"
