"""Where inputs and outputs are: local paths and ``file:`` URLs today; other filesystems refused.

Every path a user gives (ontology and data files, the store, stream directories, checkpoints,
outputs) goes through :func:`local_path` before anything is opened or created: a ``file:`` URL
(``file:///abs``, ``file:/abs``, ``file://localhost/abs``, percent-encoded) becomes the local path
it names, and a URL of another filesystem (``hdfs://``, ``s3a://``, ``abfss://``, ...) is refused
with one error naming the scheme. ``pathlib`` must never see such a URL: ``Path("hdfs://nn/x")``
collapses to the relative directory ``hdfs:/nn/x``, and a ``file:///abs`` store was once split
between ``/abs`` (Parquet written by Spark, which reads the URL) and ``./file:/abs`` (the
manifest and ``CURRENT``, written by the driver) without an error.

The store and the readers work on the driver's filesystem, which on a cluster must be one every
node mounts (NFS, a FUSE mount of the object store); Hadoop filesystems through Spark's own
FileSystem API are the next step of the cluster work (issue 15).
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from reasoner.errors import SidecarError

__all__ = ["LocationError", "local_path", "is_url"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
# what pathlib leaves of a URL ("hdfs://nn/x" -> "hdfs:/nn/x"): refused, it is never a real directory
_MANGLED = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):/")


class LocationError(SidecarError, ValueError):
    """A path names a filesystem this version cannot read or write."""


def is_url(text: str) -> bool:
    """Whether ``text`` is a URL (``scheme://...`` or ``file:...``) rather than a plain path."""
    return bool(_URL.match(text)) or text.startswith("file:")


def local_path(value: str | Path, what: str = "path") -> Path:
    """The local path ``value`` names (see the module doc); ``what`` names it in errors
    (e.g. ``--out``)."""
    text = str(value)
    if text.startswith("file:"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise LocationError(f"{text}: {what}: a file: URL names a path on this machine "
                                f"(file:///abs/path); {parts.netloc!r} is another host")
        if not parts.path:
            raise LocationError(f"{text}: {what}: the file: URL names no path")
        if parts.query or parts.fragment:
            raise LocationError(f"{text}: {what}: a file: URL takes no ?query or #fragment")
        return Path(unquote(parts.path))
    match = _URL.match(text) or (_MANGLED.match(text) if isinstance(value, Path) else None)
    if match:
        scheme = match.group(1)
        raise LocationError(
            f"{text}: {what} is on a {scheme}:// filesystem, which this version does not read or write: "
            f"inputs, the store and stream directories are local paths or file: URLs (on a cluster, a "
            f"path every node mounts). Hadoop filesystems (hdfs, s3a, abfss) are planned")
    return Path(text)
