"""Fetch and cache the JVM jars the project needs (GraphFrames' core) from Maven Central.

GraphFrames' Python package (``graphframes-py``) only wraps the JVM library; the jar itself is
published on Maven Central as ``io.graphframes:graphframes-spark4_2.13``. ``resolve`` downloads it
with its runtime (compile-scope) dependencies, skipping what Spark already ships (Spark, Scala,
slf4j), into a cache directory; ``jobs.spark.build_session`` puts every cached jar on the
classpath and ``rsp-sidecar setup`` (``jobs.jars``) fetches them. This module sits in the library
(below the CLI) because ``reasoner.closure`` names the artifact and its remedy when it is missing.
When the jar cannot be had, :class:`JarUnavailable` says which artifact, from where, why, and how
to supply it by hand on a cluster.
"""
from __future__ import annotations

import dataclasses
import os
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

from reasoner.errors import SidecarError

MAVEN_REPO = os.environ.get("RSP_MAVEN_REPO", "https://repo1.maven.org/maven2")
GRAPHFRAMES_VERSION = "0.10.0"  # pinned with pyspark 4.0.1 / graphframes-py 0.10.0 in pyproject


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


GRAPHFRAMES = Artifact("io.graphframes", "graphframes-spark4_2.13", GRAPHFRAMES_VERSION)

# Spark's own distribution provides these groups; fetching them again would shadow Spark's jars.
_PROVIDED_GROUPS = ("org.apache.spark", "org.scala-lang", "org.slf4j", "org.apache.logging.log4j")


class JarUnavailable(SidecarError, RuntimeError):
    """A required JVM jar is neither cached nor downloadable."""

    def __init__(self, artifact: Artifact, reason: str, cache: Path):
        self.artifact = artifact
        self.reason = reason
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


def cached_jars() -> list[str]:
    """All jars in the cache, as absolute paths (empty when nothing was fetched)."""
    directory = cache_dir()
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


def resolve(artifact: Artifact = GRAPHFRAMES, *, repo: str = MAVEN_REPO, timeout: float = 30.0) -> list[Path]:
    """Download ``artifact`` and its runtime dependencies into the cache; return their paths.

    Already cached jars are not downloaded again. Raises :class:`JarUnavailable` on any failure.
    """
    directory = cache_dir()
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
