"""Fetch and cache the JVM jars the project needs from Maven Central, for the running Spark.

Every fetched jar follows the installed PySpark's version: the Spark Kafka connector is that
version's (``kafka_connector``), GraphFrames' core the release built for that Spark line
(``graphframes``), and both are cached in a directory of their own per Spark version
(``spark_cache_dir``), so two PySpark installations sharing one cache never put each other's jars
on a classpath. GraphFrames' Python package (``graphframes-py``) only wraps the JVM library; the jar
itself is published as ``io.graphframes:graphframes-spark4_2.13``. ``resolve`` downloads it with its
runtime (compile-scope) dependencies, skipping what Spark already ships (Spark, Scala, slf4j);
``jobs.spark.build_session`` puts every cached jar on the classpath and ``rsp-sidecar setup``
(``jobs.jars``) fetches them. This module sits in the library (below the CLI) because
``reasoner.closure`` names the artifact and its remedy when it is missing. When a jar cannot be
had, :class:`JarUnavailable` says which artifact, from where, why, and how to supply it by hand on
a cluster.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
import zipfile
from importlib.metadata import PackageNotFoundError, version as package_version
from pathlib import Path

from rdfcore import resources
from rdfcore.errors import SidecarError

MAVEN_REPO = os.environ.get("RSP_MAVEN_REPO", "https://repo1.maven.org/maven2")


@dataclasses.dataclass(frozen=True)
class Artifact:
    group: str
    name: str
    version: str

    @property
    def coordinate(self) -> str:
        return f"{self.group}:{self.name}:{self.version}"

    @property
    def jar_name(self) -> str:
        return f"{self.name}-{self.version}.jar"

    def url(self, repo: str, ext: str) -> str:
        return f"{repo}/{self.group.replace('.', '/')}/{self.name}/{self.version}/{self.name}-{self.version}.{ext}"


def installed_spark_version() -> str:
    """The installed PySpark's version, read from its metadata (PySpark itself is not imported)."""
    try:
        return package_version("pyspark")
    except PackageNotFoundError:
        raise SidecarError("PySpark is not installed: install the project (bash scripts/install.sh)") from None


def spark_line(spark_version: str) -> str:
    """``4.2.0`` -> ``4.2``: the release line whose patch releases are binary compatible."""
    return ".".join(spark_version.split(".")[:2])


GRAPHFRAMES_NAME = "graphframes-spark4_2.13"
#: GraphFrames' release for each Spark line: 0.10.0 is built against Spark 4.0.0; 0.12.2 (August
#: 2026) is the newest release for Spark 4. No io.graphframes artifact is served from Maven Central
#: as reached here, so none of them is tested here: GraphFrames stays optional.
#: A newer Spark line than those named takes the last (the newest) release.
GRAPHFRAMES_FOR_SPARK = {"4.0": "0.10.0", "4.1": "0.12.2", "4.2": "0.12.2"}


def graphframes(spark_version: str | None = None) -> Artifact:
    """GraphFrames' core for Spark ``spark_version`` (the installed one by default)."""
    line = spark_line(spark_version or installed_spark_version())
    newest = list(GRAPHFRAMES_FOR_SPARK.values())[-1]
    return Artifact("io.graphframes", GRAPHFRAMES_NAME, GRAPHFRAMES_FOR_SPARK.get(line, newest))


# Spark's own distribution provides these groups; fetching them again would shadow Spark's jars.
_PROVIDED_GROUPS = ("org.apache.spark", "org.scala-lang", "org.slf4j", "org.apache.logging.log4j")


class JarUnavailable(SidecarError, RuntimeError):
    """A required JVM jar is neither cached nor downloadable."""

    def __init__(self, artifact: Artifact, reason: str, cache: Path):
        self.artifact = artifact
        self.reason = reason
        if artifact.name != GRAPHFRAMES_NAME:
            what = KAFKA_WHAT.get(artifact.name, "JVM library")
            super().__init__(
                f"{what} {artifact.coordinate} is not available: {reason}.\n"
                f"Supply it in one of these ways:\n"
                f"  * run `rsp-sidecar setup` where Maven Central (or $RSP_MAVEN_REPO) is reachable: it "
                f"caches the jar and its dependencies in {cache};\n"
                f"  * on a cluster: spark-submit --packages {artifact.coordinate} ...;\n"
                f"  * or put the jars into {cache} by hand (RSP_JAR_CACHE names another directory).")
            return
        super().__init__(
            f"GraphFrames JVM library {artifact.coordinate} is not available: {reason}.\n"
            f"GraphFrames' Python package does not contain it. Supply it in one of these ways:\n"
            f"  * on a cluster: spark-submit --packages {artifact.coordinate} ...  "
            f"(or --jars /path/to/{artifact.jar_name} with its dependencies, "
            f"or the Spark settings spark.jars / spark.jars.packages);\n"
            f"  * locally: put {artifact.jar_name} and its dependency jars into {cache} "
            f"(or set RSP_JAR_CACHE to a directory holding them), or set RSP_MAVEN_REPO to a "
            f"reachable Maven repository and run `rsp-sidecar setup`."
        )


def cache_dir() -> Path:
    """Where downloaded jars live: $RSP_JAR_CACHE, else ~/.cache/rsp-sidecar/jars."""
    explicit = os.environ.get("RSP_JAR_CACHE")
    return Path(explicit) if explicit else Path.home() / ".cache" / "rsp-sidecar" / "jars"


def spark_cache_dir(spark_version: str | None = None) -> Path:
    """Where the jars a Spark session of ``spark_version`` loads live (the connector, GraphFrames)."""
    return cache_dir() / f"spark-{spark_version or installed_spark_version()}"


def cached_jars(spark_version: str | None = None) -> list[str]:
    """The jars cached for Spark ``spark_version``, as absolute paths (empty when nothing was fetched)."""
    directory = spark_cache_dir(spark_version)
    return sorted(str(p) for p in directory.glob("*.jar")) if directory.is_dir() else []


def _download(url: str, timeout: float) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "rsp-sidecar"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def _dependencies(pom: bytes, owner: Artifact) -> list[Artifact]:
    """Compile/runtime-scope dependencies declared in a POM, minus what Spark provides."""
    root = ET.fromstring(pom)
    ns = {"m": root.tag[1:].split("}")[0]} if root.tag.startswith("{") else {"m": ""}
    prefix = "m:" if ns["m"] else ""
    found = []
    for dep in root.findall(f"{prefix}dependencies/{prefix}dependency", ns):
        def text(tag: str) -> str:
            node = dep.find(f"{prefix}{tag}", ns)
            return (node.text or "").strip() if node is not None else ""

        scope, optional = text("scope") or "compile", text("optional") == "true"
        group, name, version = text("groupId"), text("artifactId"), text("version")
        if scope not in ("compile", "runtime") or optional or group.startswith(_PROVIDED_GROUPS):
            continue
        version = version.replace("${project.version}", owner.version)
        if not version or "${" in version:
            raise ValueError(f"{owner.coordinate}: cannot resolve the version of dependency {group}:{name} ({version!r})")
        found.append(Artifact(group, name, version))
    return found


def resolve(artifact: Artifact | None = None, *, repo: str = MAVEN_REPO, timeout: float = 30.0) -> list[Path]:
    """Download ``artifact`` (GraphFrames for the installed Spark by default) and its runtime
    dependencies into the installed Spark's cache; return their paths.

    Already cached jars are not downloaded again. Raises :class:`JarUnavailable` on any failure.
    """
    artifact = artifact or graphframes()
    directory = spark_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    todo, seen, paths = [artifact], set(), []
    while todo:
        current = todo.pop()
        if current.coordinate in seen:
            continue
        seen.add(current.coordinate)
        target = directory / current.jar_name
        try:
            pom = _download(current.url(repo, "pom"), timeout)
            todo.extend(_dependencies(pom, current))
            if not target.exists():
                data = _download(current.url(repo, "jar"), timeout)
                partial = target.with_suffix(".jar.part")
                partial.write_bytes(data)
                partial.replace(target)
        except urllib.error.HTTPError as exc:
            raise JarUnavailable(artifact, f"{current.url(repo, 'pom')} answered HTTP {exc.code}", directory) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise JarUnavailable(artifact, f"cannot reach {repo} ({exc})", directory) from None
        except (ET.ParseError, ValueError) as exc:
            raise JarUnavailable(artifact, f"bad POM for {current.coordinate}: {exc}", directory) from None
        paths.append(target)
    return paths


# --- Kafka: the Structured Streaming connector and, for tests and demos, a broker ----------------

KAFKA_CONNECTOR_NAME = "spark-sql-kafka-0-10_2.13"
#: Apache Kafka's broker (KRaft mode), at the version of the connector's kafka-clients
KAFKA_BROKER_NAME = "kafka_2.13"
#: Hadoop's test clusters (HDFS, YARN) in one JVM, for the cluster tests (``devcluster.hadoop_cluster``); its
#: version is that of the Hadoop client PySpark bundles (see :func:`hadoop_version`)
HADOOP_MINICLUSTER_NAME = "hadoop-client-minicluster"
KAFKA_WHAT = {KAFKA_CONNECTOR_NAME: "The Spark Kafka connector", KAFKA_BROKER_NAME: "The Kafka broker",
              HADOOP_MINICLUSTER_NAME: "Hadoop's mini cluster"}


def kafka_connector(spark_version: str | None = None) -> Artifact:
    """The Spark Kafka connector of Spark ``spark_version`` (the installed one by default)."""
    return Artifact("org.apache.spark", KAFKA_CONNECTOR_NAME, spark_version or installed_spark_version())


#: where the broker's own classpath is cached (never on Spark's classpath: its Scala and Jackson differ)
BROKER_DIR = "kafka-broker"


def spark_jars_dir() -> Path:
    """The jars of the installed PySpark (what a Spark session has on its classpath already)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent / "jars"


def _unversioned(jar: Path) -> str:
    """``org.apache.kafka__kafka-clients-3.9.0.jar`` / ``kafka-clients-3.9.0.jar`` -> ``kafka-clients``."""
    name = jar.name.split("__", 1)[-1][: -len(".jar")]
    parts = name.split("-")
    while len(parts) > 1 and parts[-1][:1].isdigit():
        parts.pop()
    return "-".join(parts)


def java_command() -> str:
    """The ``java`` to run helper JVMs with: $JAVA_HOME's, else the one on PATH."""
    return str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME") else "java"


def ivy_resolve(artifact: Artifact, directory: Path, *, skip_spark_provided: bool, repo: str = MAVEN_REPO,
                timeout: float = 600.0) -> list[Path]:
    """``artifact`` with its whole runtime closure (parent POMs, properties, dependency management:
    Apache Ivy, which PySpark ships, does the Maven resolution) into ``directory``; with
    ``skip_spark_provided`` the jars PySpark already has (by artifact name) are left out. A second
    call finds the marker file and downloads nothing. Raises :class:`JarUnavailable`."""
    marker = directory / f".resolved-{artifact.name}-{artifact.version}"
    if marker.exists():
        return [directory / line for line in marker.read_text(encoding="utf-8").split()]
    ivy = sorted(spark_jars_dir().glob("ivy-*.jar"))
    if not ivy:
        raise JarUnavailable(artifact, f"no Apache Ivy jar in {spark_jars_dir()} to resolve it with", directory)
    java = java_command()
    with tempfile.TemporaryDirectory(prefix="rsp-ivy-") as work:
        settings = Path(work) / "ivysettings.xml"
        settings.write_text(
            '<ivysettings><settings defaultResolver="central"/><resolvers>'
            f'<ibiblio name="central" m2compatible="true" root="{repo}"/></resolvers></ivysettings>\n',
            encoding="utf-8")
        retrieved = Path(work) / "jars"
        command = [str(java), "-cp", str(ivy[-1]), "org.apache.ivy.Main", "-settings", str(settings),
                   "-cache", str(cache_dir() / ".ivy-cache"), "-dependency", artifact.group, artifact.name,
                   artifact.version, "-confs", "default",
                   "-retrieve", str(retrieved / "[organisation]__[artifact]-[revision](-[classifier]).[ext]")]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise JarUnavailable(artifact, f"could not run Apache Ivy ({exc})", directory) from None
        jars = sorted(retrieved.glob("*.jar")) if retrieved.is_dir() else []
        if done.returncode != 0 or not any(j.name.startswith(f"{artifact.group}__{artifact.name}-") for j in jars):
            problems = [line.strip(" :\t") for line in (done.stdout + done.stderr).splitlines()
                        if "UNRESOLVED DEPENDENCIES" not in line and ("UNRESOLVED" in line or "not found" in line or "unresolved" in line.lower()
                        or "Exception" in line)]
            reason = "; ".join(dict.fromkeys(problems[:4])) or f"Apache Ivy exited with {done.returncode}"
            raise JarUnavailable(artifact, f"cannot resolve it from {repo} ({reason})", directory)
        provided = {_unversioned(j) for j in spark_jars_dir().glob("*.jar")} if skip_spark_provided else set()
        directory.mkdir(parents=True, exist_ok=True)
        kept = []
        for jar in jars:
            if _unversioned(jar) in provided:
                continue
            target = directory / jar.name.split("__", 1)[-1]
            if not target.exists():
                shutil.copyfile(jar, target.with_suffix(".jar.part"))
                target.with_suffix(".jar.part").replace(target)
            kept.append(target)
    marker.write_text("\n".join(p.name for p in kept) + "\n", encoding="utf-8")
    return kept


def resolve_kafka_connector(spark_version: str | None = None, *, repo: str = MAVEN_REPO) -> list[Path]:
    """The Kafka connector's jars (those PySpark lacks) for Spark ``spark_version`` (the installed
    one by default) into that Spark's cache, which its sessions put on their classpath
    (``jobs.spark.build_session``). The connector of the same version first; when that version
    does not resolve, the first release of the same line (``4.0.1``'s token-provider POM is not
    served from Maven Central as reached here; ``4.0.0``'s connector runs on it: patch releases
    of a line are binary compatible)."""
    spark_version = spark_version or installed_spark_version()
    directory = spark_cache_dir(spark_version)
    try:
        return ivy_resolve(kafka_connector(spark_version), directory, skip_spark_provided=True, repo=repo)
    except JarUnavailable as exc:
        first = f"{spark_line(spark_version)}.0"
        if first == spark_version:
            raise
        try:
            return ivy_resolve(kafka_connector(first), directory, skip_spark_provided=True, repo=repo)
        except JarUnavailable:
            raise JarUnavailable(kafka_connector(spark_version), f"{exc.reason}; nor does {first}, the first release "
                                 f"of Spark {spark_line(spark_version)}", directory) from None


def hadoop_version() -> str:
    """The Hadoop version of PySpark's own client jar (``hadoop-client-api-X.Y.Z.jar``)."""
    found = sorted(spark_jars_dir().glob("hadoop-client-api-*.jar"))
    if not found:
        raise JarUnavailable(Artifact("org.apache.hadoop", "hadoop-client-api", "?"),
                             f"PySpark's jars ({spark_jars_dir()}) hold no Hadoop client", cache_dir())
    return found[-1].name[len("hadoop-client-api-"):-len(".jar")]


def hadoop_minicluster() -> Artifact:
    return Artifact("org.apache.hadoop", HADOOP_MINICLUSTER_NAME, hadoop_version())


def _bouncycastle_version() -> str:
    found = sorted(spark_jars_dir().glob("bcprov-jdk18on-*.jar"))
    return found[-1].name[len("bcprov-jdk18on-"):-len(".jar")] if found else "1.80"


def resolve_hadoop_minicluster(*, repo: str = MAVEN_REPO) -> list[Path]:
    """Hadoop's mini cluster (beside PySpark's own Hadoop client jars, which it runs with) in its
    own directory under the cache: never on a Spark session's classpath. YARN's services also need
    Bouncy Castle's PKIX classes (at the version of PySpark's bcprov) and JAXB 2.3, which neither
    jar set has; Hadoop 3.5's (PySpark 4.2's) test utilities, which the mini YARN cluster calls at
    start, also JUnit 5's assertions."""
    directory = cache_dir() / "hadoop-minicluster"
    found = ivy_resolve(hadoop_minicluster(), directory, skip_spark_provided=True, repo=repo)
    for extra in (Artifact("org.bouncycastle", "bcpkix-jdk18on", _bouncycastle_version()),
                  Artifact("javax.xml.bind", "jaxb-api", "2.3.1"),
                  Artifact("org.glassfish.jaxb", "jaxb-runtime", "2.3.9"),
                  Artifact("org.junit.jupiter", "junit-jupiter-api", "5.11.4")):
        found += ivy_resolve(extra, directory, skip_spark_provided=extra.group == "org.bouncycastle", repo=repo)
    return list(dict.fromkeys(found))


def kafka_broker(*, repo: str = MAVEN_REPO) -> Artifact:
    """Apache Kafka's broker at the version of the installed Spark's connector's kafka-clients."""
    clients = [p for p in resolve_kafka_connector(repo=repo) if _unversioned(p) == "kafka-clients"]
    if not clients:
        raise JarUnavailable(Artifact("org.apache.kafka", KAFKA_BROKER_NAME, "?"),
                             "the Spark Kafka connector's jars name no kafka-clients to match", spark_cache_dir())
    return Artifact("org.apache.kafka", KAFKA_BROKER_NAME, clients[0].name[len("kafka-clients-"):-len(".jar")])


def resolve_kafka_broker(*, repo: str = MAVEN_REPO) -> list[Path]:
    """Apache Kafka's broker with its whole classpath (for tests and the demo of ``--continuous``
    over Kafka), in its own directory under the cache."""
    return ivy_resolve(kafka_broker(repo=repo), cache_dir() / BROKER_DIR, skip_spark_provided=False, repo=repo)


# --- The project's own JVM classes: Java sources compiled against the running Spark ---------------

#: where compiled jars live, apart from the fetched ones (``cached_jars`` does not list them: each
#: build is for one Spark version and one source text)
BUILT_DIR = "built"


class JarBuildFailed(SidecarError, RuntimeError):
    """A Java source of the project's could not be compiled."""


def java_tool(name: str) -> str:
    """A JDK tool (``javac``): $JAVA_HOME's, else the one on PATH."""
    return str(Path(os.environ["JAVA_HOME"]) / "bin" / name) if os.environ.get("JAVA_HOME") else name


def built_jar(source: Path, spark_version: str, classpath: str | None = None) -> Path:
    """``source`` (one ``.java`` file) compiled against the installed PySpark's jars (or
    ``classpath``: a running JVM's, where PySpark comes from a zip without its jars, as in a YARN
    container), as a jar cached under ``cache_dir()/built``, named for the source's hash and
    ``spark_version`` (the Spark those jars are): a new source text or another Spark builds again;
    a second call finds the jar.
    Raises :class:`JarBuildFailed` naming what is missing (no JDK's ``javac``) or what javac said."""
    text = source.read_bytes()
    digest = hashlib.sha256(text + spark_version.encode()).hexdigest()[:16]
    target = cache_dir() / BUILT_DIR / f"{source.stem}-{spark_version}-{digest}.jar"
    if target.is_file():
        return target
    if classpath is None and not spark_jars_dir().is_dir():
        raise JarBuildFailed(f"cannot build {source.name}: PySpark has no jars directory here ({spark_jars_dir()}); "
                             f"give the class path of a running Spark")
    javac = java_tool("javac")
    if shutil.which(javac) is None:
        raise JarBuildFailed(f"cannot build {source.name}: no javac ({javac}); install a JDK 17 or set JAVA_HOME to one")
    with tempfile.TemporaryDirectory(prefix="rsp-javac-") as scratch:
        classes = Path(scratch) / "classes"
        done = subprocess.run([javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-cp",
                               classpath or str(spark_jars_dir() / "*"), "-d", str(classes), str(source)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise JarBuildFailed(f"cannot build {source.name} against Spark {spark_version}'s jars: "
                                 f"javac said:\n{done.stderr.strip() or done.stdout.strip()}")
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: rsp-sidecar\n\n")
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        os.replace(partial, target)
    return target


#: the project's streaming file source, a resource of ``cep.continuous`` (``cep.continuous.sources.FileSource``)
ORDERED_FILES_SOURCE = ("cep.continuous", "OrderedFiles.java")
#: the source's format name, and where it logs the order it gave the files (under its checkpoint directory)
ORDERED_FILES = "rspsidecar.OrderedFiles"
ORDERED_LOG = "ordered"


def ordered_files_jar(spark_version: str, classpath: str | None = None) -> Path:
    """The jar of the ordered file source, built for Spark ``spark_version`` (``built_jar``)."""
    return built_jar(resources.path(*ORDERED_FILES_SOURCE), spark_version, classpath)
