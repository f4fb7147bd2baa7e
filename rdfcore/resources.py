"""Files shipped inside the packages (grammars, logging configuration, example ontologies), read
the same way from a source tree, an installed wheel, or a zip on ``sys.path`` — the form
``spark-submit --py-files`` ships the project in to a cluster (YARN/Kubernetes cluster deploy mode
runs the driver from it). ``pathlib`` on ``__file__`` cannot: inside a zip there is no directory.

* :func:`text` — a resource's text (``importlib.resources``);
* :func:`path` — a resource as a real file, for readers that need one (the JVM's log4j
  configuration, Spark reading an example ontology): the file itself when the package is a
  directory, else a copy extracted once into ``$RSP_CACHE_DIR``/``~/.cache/rsp-sidecar/resources``
  under the content's hash (so concurrent jobs share it and a new build never reads a stale copy).
"""
from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

__all__ = ["text", "data", "path", "cache_dir"]


def data(package: str, name: str) -> bytes:
    """The bytes of resource ``name`` (a ``/``-separated path) of ``package``."""
    return resources.files(package).joinpath(name).read_bytes()


def text(package: str, name: str) -> str:
    """The UTF-8 text of resource ``name`` of ``package``."""
    return data(package, name).decode("utf-8")


def cache_dir() -> Path:
    """Where resources of a zipped package are extracted."""
    root = os.environ.get("RSP_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "rsp-sidecar")
    return Path(root) / "resources"


def path(package: str, name: str) -> Path:
    """Resource ``name`` of ``package`` as a file on the local disk (see the module doc)."""
    resource = resources.files(package).joinpath(name)
    if isinstance(resource, Path) and resource.is_file():
        return resource
    content = resource.read_bytes()
    target = cache_dir() / hashlib.sha256(content).hexdigest()[:16] / Path(name).name
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        partial.write_bytes(content)
        os.replace(partial, target)                         # atomic: readers see all or nothing
    return target
