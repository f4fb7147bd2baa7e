"""Where inputs and outputs are: local paths, ``file:`` URLs, and URLs of Hadoop filesystems.

Every path a user gives goes through :func:`location` (or :func:`local_path`, for what must be on
the driver's disk) before anything is opened or created: a ``file:`` URL (``file:///abs``,
``file:/abs``, ``file://localhost/abs``, percent-encoded) becomes the local path it names; a URL of
another filesystem (``hdfs://``, ``s3a://``, ``abfss://``, ...) becomes a
:class:`rdfcore.fs.HadoopPath`, read and written through Spark's Hadoop FileSystem API (a scheme
Spark has no filesystem for is refused there, naming the connector to add).
:func:`local_path` refuses such URLs with one error naming the scheme and the option.
``pathlib`` must never see a URL: ``Path("hdfs://nn/x")``
collapses to the relative directory ``hdfs:/nn/x``, and a ``file:///abs`` store was once split
between ``/abs`` (Parquet written by Spark, which reads the URL) and ``./file:/abs`` (the
manifest and ``CURRENT``, written by the driver) without an error.

The store, the reasoner's sources and the query's store and background files take any
location; stream directories, sinks and checkpoints of the continuous runtime, and the scenario
services' side files, take local paths (on a cluster, a path every node mounts).
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from rdfcore.errors import SidecarError
from rdfcore.fs import HadoopPath

Location = Path | HadoopPath

__all__ = ["LocationError", "local_path", "location", "is_url", "Location", "TextFileError", "read_utf8"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
# what pathlib leaves of a URL ("hdfs://nn/x" -> "hdfs:/nn/x"): refused, it is never a real directory
_MANGLED = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):/")


class LocationError(SidecarError, ValueError):
    """A path names a filesystem this version cannot read or write."""


class TextFileError(SidecarError, ValueError):
    """A text file (a query, a rules file) that is not UTF-8: names the file, the line and the
    column of the first bad byte."""


def read_utf8(path: Path, what: str = "file") -> str:
    """The text of the local file ``path``, which must be UTF-8 (a byte-order mark is dropped);
    ``what`` names it in the error."""
    data = path.read_bytes()
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        start = bom + exc.start
        line = data.count(b"\n", 0, start) + 1
        column = len(data[data.rfind(b"\n", 0, start) + 1:start].decode("utf-8", errors="replace")) + 1
        raise TextFileError(f"{path}: line {line}, column {column}: {what} is not UTF-8 text (byte "
                            f"0x{data[start]:02x}: {exc.reason}); expected UTF-8") from None


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
            f"{text}: {what} is on a {scheme}:// filesystem; {what} takes a local path or a file: URL "
            f"(on a cluster, a path every node mounts)")
    return Path(text)


def location(value: str | Path | HadoopPath, what: str = "path") -> Location:
    """What ``value`` names: a local :class:`Path` (plain paths, ``file:`` URLs) or a
    :class:`HadoopPath` (any other ``scheme://`` URL); ``what`` names it in errors."""
    if isinstance(value, HadoopPath):
        return value
    text = str(value)
    if _URL.match(text) and not text.startswith("file:"):
        parts = urlsplit(text)
        if parts.query or parts.fragment:
            raise LocationError(f"{text}: {what}: a filesystem URL takes no ?query or #fragment")
        if parts.scheme in ("http", "https", "ftp") :
            raise LocationError(f"{text}: {what}: {parts.scheme}:// is not a filesystem Spark writes to; "
                                f"download the file, or use hdfs://, s3a://, ... or a local path")
        return HadoopPath(text)
    return local_path(value, what)
