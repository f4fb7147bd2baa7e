"""Files on whatever filesystem Spark reaches: local paths through ``pathlib``, the rest through
Hadoop's ``FileSystem`` API in the Spark session's JVM.

:class:`HadoopPath` is the part of ``pathlib.Path`` the project uses (``/``, ``name``, ``parent``,
``exists``, ``is_file``, ``is_dir``, ``iterdir``, ``glob``, ``stat().st_size``, ``mkdir``,
``read_bytes``/``read_text``, ``write_bytes``/``write_text``, ``open``, ``unlink``, ``rename``,
``replace``) for a URL of a Hadoop filesystem — ``hdfs://namenode:port/dir``, ``s3a://bucket/dir``,
``abfss://...``: whichever the session has on its classpath. Code that takes a location
(``rdfcore.locations.location``) therefore works on both kinds; the few operations pathlib has no
method for are functions here that take either: :func:`rmtree`, :func:`replace` (an atomic switch),
:func:`lock` (one writer per store), :func:`atomic_writer` (a file replaced whole, never seen
half-written), :func:`append_text`.

What the operations guarantee per filesystem:

* **Local disks and HDFS**: a directory ``rename`` and the ``replace`` of a file are atomic (HDFS:
  ``FileContext.rename`` with ``OVERWRITE``, one namenode operation), so readers that follow a
  pointer file written last never see a half-written version.
* **Object stores** (``s3a``, ``abfss``, ``gs``): a directory rename is a copy of every object
  followed by a delete; it is not atomic, and a crash in the middle leaves a partial copy under
  the new name. What still holds: the pointer file is one object written in one PUT (atomic per
  object), and it is written last, so a reader that follows it sees a complete version; a partial
  directory left by a crash is never pointed to. ``replace`` falls back to delete-then-rename where
  ``FileContext`` has no implementation for the scheme.
* **The lock**: on the local filesystem an ``fcntl`` lock (released by the kernel when the process
  dies); on a Hadoop filesystem a lock *file* created with create-if-absent (``FileSystem.create``
  with ``overwrite=false``, atomic on HDFS; on object stores as atomic as the store's conditional
  create). The file names its owner (host, pid, start time). Stale rule: a lock whose owner runs on
  this host and whose process no longer exists is removed and taken; any other existing lock is
  refused with an error naming the owner and the file to delete once that run is known dead.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from urllib.parse import urlsplit

from rdfcore.errors import SidecarError

__all__ = ["HadoopPath", "FilesystemError", "LockedError", "is_hadoop", "rmtree", "replace", "link_or_copy",
           "atomic_writer", "write_atomically", "write_lines", "append_text", "read_parquet", "write_parquet", "lock"]


class FilesystemError(SidecarError, OSError):
    """A Hadoop filesystem cannot be reached or used: names the URL, the cause and the remedy."""


class LockedError(SidecarError, RuntimeError):
    """Another run holds the lock of a directory."""


# --- the JVM side --------------------------------------------------------------------------------

_CONNECTORS = {
    "s3a": "org.apache.hadoop:hadoop-aws (the Hadoop version of Spark's jars) with its AWS SDK bundle",
    "abfs": "org.apache.hadoop:hadoop-azure", "abfss": "org.apache.hadoop:hadoop-azure",
    "wasb": "org.apache.hadoop:hadoop-azure", "wasbs": "org.apache.hadoop:hadoop-azure",
    "gs": "com.google.cloud.bigdataoss:gcs-connector (the hadoop3 shaded jar)",
}


def _session():
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def _java_classes(error) -> list[tuple[str, str]]:
    """(class name, message) of a Java exception and of its causes."""
    found, throwable, depth = [], getattr(error, "java_exception", None), 0
    while throwable is not None and depth < 8:
        found.append((throwable.getClass().getName(), str(throwable.getMessage() or "")))
        throwable, depth = throwable.getCause(), depth + 1
    return found


def _translate(error: Exception, url: str, doing: str) -> Exception:
    """A Py4J error of a Hadoop call as the Python error a caller expects, with the URL in it."""
    from py4j.protocol import Py4JJavaError

    if not isinstance(error, Py4JJavaError):
        return error
    chain = _java_classes(error)
    names = [name for name, _ in chain]
    message = next((m for _, m in chain if m), names[0] if names else "unknown error").splitlines()[0]
    scheme = urlsplit(url).scheme
    missing_class = any(n == "java.lang.ClassNotFoundException" for n in names)   # fs.s3a.impl set, jar absent
    if ("org.apache.hadoop.fs.UnsupportedFileSystemException" in names or "No FileSystem for scheme" in message
            or (missing_class and doing == "opening its filesystem")):
        connector = _CONNECTORS.get(scheme, f"the Hadoop FileSystem connector for {scheme}://")
        return FilesystemError(
            f"{url}: Spark has no Hadoop filesystem for {scheme}:// on its classpath; add {connector} "
            f"(spark-submit --packages ..., or spark.jars.packages), or use a local path / file: URL")
    if "Incomplete HDFS URI" in message:
        return FilesystemError(f"{url}: the URL names no namenode; write hdfs://HOST:PORT/path, or set the "
                               f"default filesystem (spark.hadoop.fs.defaultFS=hdfs://HOST:PORT)")
    if "java.io.FileNotFoundException" in names:
        return FileNotFoundError(f"{url}: no such file or directory ({doing})")
    if "org.apache.hadoop.fs.FileAlreadyExistsException" in names:
        return FileExistsError(f"{url}: already exists ({doing})")
    if any(n in names for n in ("java.net.ConnectException", "java.net.UnknownHostException",
                                "java.net.NoRouteToHostException", "java.net.SocketTimeoutException")):
        host = urlsplit(url).netloc or "the default filesystem"
        return FilesystemError(f"{url}: cannot reach {host} while {doing} ({message}); check that the "
                               f"namenode/endpoint is up and the host and port are right")
    if "org.apache.hadoop.security.AccessControlException" in names:
        return PermissionError(f"{url}: permission denied while {doing} ({message})")
    return FilesystemError(f"{url}: {doing} failed: {names[0] if names else ''}: {message}")


@contextlib.contextmanager
def _hadoop(url: str, doing: str) -> Iterator[None]:
    from py4j.protocol import Py4JJavaError

    try:
        yield
    except Py4JJavaError as error:
        raise _translate(error, url, doing) from None


class _Jvm:
    """The session's JVM, Hadoop configuration and FileSystem instances (cached per scheme and
    authority, as Hadoop's own cache does)."""

    def __init__(self, spark):
        self.spark = spark
        self.jvm = spark.sparkContext._jvm
        self.gateway = spark.sparkContext._gateway
        self.conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.filesystems: dict[str, object] = {}

    def path(self, url: str):
        return self.jvm.org.apache.hadoop.fs.Path(url)

    def fs(self, url: str):
        parts = urlsplit(url)
        key = f"{parts.scheme}://{parts.netloc}"
        if key not in self.filesystems:
            with _hadoop(url, "opening its filesystem"):
                self.filesystems[key] = self.path(url).getFileSystem(self.conf)
        return self.filesystems[key]


_JVMS: dict[int, _Jvm] = {}


def _jvm(url: str) -> _Jvm:
    spark = _session()
    if spark is None:
        raise FilesystemError(f"{url}: a {urlsplit(url).scheme}:// location is read and written through Spark's "
                              f"Hadoop filesystems, and no Spark session is running")
    key = id(spark.sparkContext._jsc)
    if key not in _JVMS:
        _JVMS.clear()           # one live context at a time
        _JVMS[key] = _Jvm(spark)
    return _JVMS[key]


# --- HadoopPath ----------------------------------------------------------------------------------

class _Reader(io.RawIOBase):
    def __init__(self, stream, url: str):
        self.stream, self.url = stream, url

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self.tell()
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("seek from the end of a Hadoop file")
        with _hadoop(self.url, f"seeking to byte {offset}"):
            self.stream.seek(offset)
        return offset

    def tell(self) -> int:
        return int(self.stream.getPos())

    def readinto(self, buffer) -> int:
        with _hadoop(self.url, "reading"):
            data = self.stream.readNBytes(len(buffer))
        data = bytes(data or b"")
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            with _hadoop(self.url, "closing"):
                self.stream.close()
        super().close()


class _Writer(io.RawIOBase):
    def __init__(self, stream, url: str):
        self.stream, self.url = stream, url

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        with _hadoop(self.url, "writing"):
            self.stream.write(bytearray(data))
        return len(data)

    def close(self) -> None:
        if not self.closed:
            with _hadoop(self.url, "closing"):
                self.stream.hflush()
                self.stream.close()
        super().close()


class HadoopPath:
    """A location on a Hadoop filesystem, by URL (see the module doc). Immutable and hashable;
    ``str()`` is the URL, which Spark's readers and writers take as they are."""

    __slots__ = ("url",)

    def __init__(self, url: str):
        parts = urlsplit(str(url))
        if not parts.scheme or parts.scheme == "file":
            raise ValueError(f"{url}: not a Hadoop filesystem URL")
        path = str(PurePosixPath(parts.path or "/"))
        object.__setattr__(self, "url", f"{parts.scheme}://{parts.netloc}{path}")

    def __setattr__(self, name, value):
        raise AttributeError("HadoopPath is immutable")

    # names
    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"HadoopPath({self.url!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, HadoopPath) and other.url == self.url

    def __hash__(self) -> int:
        return hash(("HadoopPath", self.url))

    def __lt__(self, other: "HadoopPath") -> bool:
        return self.url < other.url

    def __truediv__(self, name: str | os.PathLike) -> "HadoopPath":
        name = str(name)
        if name.startswith("/"):
            raise ValueError(f"{self.url} / {name}: an absolute path cannot be joined to a URL")
        return HadoopPath(self.url.rstrip("/") + "/" + name)

    @property
    def _posix(self) -> PurePosixPath:
        return PurePosixPath(urlsplit(self.url).path)

    @property
    def name(self) -> str:
        return self._posix.name

    @property
    def suffix(self) -> str:
        return self._posix.suffix

    @property
    def stem(self) -> str:
        return self._posix.stem

    @property
    def parent(self) -> "HadoopPath":
        parts = urlsplit(self.url)
        return HadoopPath(f"{parts.scheme}://{parts.netloc}{self._posix.parent}")

    def with_name(self, name: str) -> "HadoopPath":
        return self.parent / name

    def with_suffix(self, suffix: str) -> "HadoopPath":
        return self.parent / (self.stem + suffix)

    def resolve(self) -> "HadoopPath":
        """The fully qualified URL (``hdfs:///x`` names the default namenode's host and port),
        as Spark reports the files it reads."""
        jvm = _jvm(self.url)
        fs = jvm.fs(self.url)
        with _hadoop(self.url, "qualifying it"):
            return HadoopPath(str(fs.makeQualified(jvm.path(self.url)).toString()))

    def absolute(self) -> "HadoopPath":
        return self

    def as_uri(self) -> str:
        return self.url

    # the JVM calls
    def _call(self, doing: str, method: str, *args):
        jvm = _jvm(self.url)
        fs = jvm.fs(self.url)
        with _hadoop(self.url, doing):
            return getattr(fs, method)(jvm.path(self.url), *args)

    def _status(self):
        try:
            return self._call("reading its status", "getFileStatus")
        except FileNotFoundError:
            return None

    def exists(self) -> bool:
        return self._status() is not None

    def is_file(self) -> bool:
        status = self._status()
        return status is not None and status.isFile()

    def is_dir(self) -> bool:
        status = self._status()
        return status is not None and status.isDirectory()

    def stat(self) -> SimpleNamespace:
        status = self._status()
        if status is None:
            raise FileNotFoundError(f"{self.url}: no such file or directory")
        millis = int(status.getModificationTime())
        return SimpleNamespace(st_size=int(status.getLen()), st_mtime=millis / 1000.0, st_mtime_ns=millis * 1_000_000)

    def iterdir(self) -> Iterator["HadoopPath"]:
        statuses = self._call("listing it", "listStatus")
        return iter(sorted(self / status.getPath().getName() for status in statuses))

    def glob(self, pattern: str) -> Iterator["HadoopPath"]:
        if "/" in pattern:
            raise ValueError(f"glob({pattern!r}): one directory level only on a Hadoop filesystem")
        jvm = _jvm(self.url)
        with _hadoop(self.url, f"matching {pattern}"):
            statuses = jvm.fs(self.url).globStatus(jvm.path(spark_path(self) + "/" + pattern))
        return iter(sorted(self / status.getPath().getName() for status in (statuses or [])))

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        status = self._status()
        if status is not None:
            if exist_ok and status.isDirectory():
                return
            raise FileExistsError(f"{self.url}: already exists")
        if not parents and not self.parent.is_dir():
            raise FileNotFoundError(f"{self.url}: the parent directory does not exist")
        if not self._call("creating the directory", "mkdirs"):
            raise FilesystemError(f"{self.url}: the directory could not be created")

    def open(self, mode: str = "r", encoding: str | None = None, newline: str | None = None):
        if mode in ("r", "rb"):
            raw = _Reader(self._call("opening it for reading", "open"), self.url)
            binary = io.BufferedReader(raw, buffer_size=1 << 20)
        elif mode in ("w", "wb", "x", "xb"):
            raw = _Writer(self._call("creating it", "create", mode.startswith("w")), self.url)
            binary = io.BufferedWriter(raw, buffer_size=1 << 20)
        else:
            raise ValueError(f"{self.url}: open mode {mode!r} is not supported on a Hadoop filesystem")
        if "b" in mode:
            return binary
        return io.TextIOWrapper(binary, encoding=encoding or "utf-8", newline=newline)

    def read_bytes(self) -> bytes:
        with self.open("rb") as handle:
            return handle.read()

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes) -> int:
        with self.open("wb") as handle:
            handle.write(data)
        return len(data)

    def write_text(self, text: str, encoding: str = "utf-8") -> int:
        return self.write_bytes(text.encode(encoding))

    def unlink(self, missing_ok: bool = False) -> None:
        if not self._call("deleting it", "delete", False) and not missing_ok:
            raise FileNotFoundError(f"{self.url}: no such file")

    def rename(self, target: "HadoopPath") -> "HadoopPath":
        """Rename to ``target``, which must not exist (atomic on HDFS; a copy on object stores)."""
        target = _same_kind(self, target)
        if target.exists():
            raise FileExistsError(f"{target.url}: already exists (renaming {self.url})")
        jvm = _jvm(self.url)
        if not self._call(f"renaming it to {target.url}", "rename", jvm.path(target.url)):
            raise FilesystemError(f"{self.url}: could not be renamed to {target.url}")
        return target

    def replace(self, target: "HadoopPath") -> "HadoopPath":
        """Rename to ``target``, replacing it: one atomic operation where the filesystem's
        ``FileContext`` supports ``OVERWRITE`` (HDFS, local), else delete then rename."""
        target = _same_kind(self, target)
        jvm = _jvm(self.url)
        fs_package = jvm.jvm.org.apache.hadoop.fs
        try:
            with _hadoop(self.url, f"replacing {target.url} with it"):
                context = fs_package.FileContext.getFileContext(jvm.fs(self.url).getUri(), jvm.conf)
                overwrite = jvm.gateway.new_array(getattr(fs_package, "Options$Rename"), 1)
                overwrite[0] = getattr(fs_package, "Options$Rename").OVERWRITE
                context.rename(jvm.path(self.url), jvm.path(target.url), overwrite)
        except FilesystemError as error:
            if "UnsupportedFileSystemException" not in str(error) and "AbstractFileSystem" not in str(error):
                raise
            target.unlink(missing_ok=True)
            self.rename(target)
        return target


def _same_kind(source: HadoopPath, target) -> HadoopPath:
    if not isinstance(target, HadoopPath):
        raise ValueError(f"{source.url} -> {target}: a rename stays on one filesystem")
    return target


# --- what pathlib has no method for ---------------------------------------------------------------

def is_hadoop(path) -> bool:
    return isinstance(path, HadoopPath)


_GLOB = re.compile(r"([\\\[\]{}*?])")


def spark_path(path: Path | HadoopPath | str) -> str:
    """``path`` as Spark's readers must be given it: they expand Hadoop glob patterns, so the
    pattern characters of a real name (``data[1].nt``, a test's ``store[spark]``) are escaped."""
    return _GLOB.sub(r"\\\1", str(path))


def rmtree(path: Path | HadoopPath, ignore_errors: bool = False) -> None:
    """Remove a directory tree (``shutil.rmtree`` on local paths, a recursive delete elsewhere)."""
    if isinstance(path, HadoopPath):
        try:
            path._call("deleting it recursively", "delete", True)
        except OSError:
            if not ignore_errors:
                raise
        return
    shutil.rmtree(path, ignore_errors=ignore_errors)


def link_or_copy(source: Path | HadoopPath, target: Path | HadoopPath) -> None:
    """Make ``target`` a file with ``source``'s bytes: a hard link where the local filesystem can
    (no bytes copied), else a copy (on a Hadoop filesystem by its own ``FileUtil.copy``: the bytes
    go from datanode to datanode through the driver's JVM, never through Python)."""
    if isinstance(source, HadoopPath):
        target = _same_kind(source, target)
        jvm = _jvm(source.url)
        with _hadoop(source.url, f"copying it to {target.url}"):
            done = jvm.jvm.org.apache.hadoop.fs.FileUtil.copy(
                jvm.fs(source.url), jvm.path(source.url), jvm.fs(target.url), jvm.path(target.url), False, jvm.conf)
        if not done:
            raise FilesystemError(f"{source.url}: could not be copied to {target.url}")
        return
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def replace(source: Path | HadoopPath, target: Path | HadoopPath) -> None:
    """Atomically make ``target`` what ``source`` was (``os.replace`` locally; see
    :meth:`HadoopPath.replace`)."""
    if isinstance(source, HadoopPath):
        source.replace(target)
    else:
        os.replace(source, target)


@contextlib.contextmanager
def atomic_writer(target: Path | HadoopPath, binary: bool = False) -> Iterator:
    """A handle on a temporary file beside ``target`` (``.NAME.tmp-PID``); when the block ends,
    the file is flushed to stable storage (``fsync`` locally; ``hflush`` and close on a Hadoop
    filesystem: visible to every reader) and :func:`replace` makes it ``target``. A failure in
    the block removes the temporary file and leaves ``target`` as it was."""
    partial = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    mode = "wb" if binary else "w"
    if isinstance(target, HadoopPath):
        handle = partial.open(mode)
    else:
        handle = open(partial, mode, **({} if binary else {"encoding": "utf-8"}))
    try:
        with handle:
            yield handle
            if not isinstance(target, HadoopPath):
                handle.flush()
                os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise
    replace(partial, target)


def write_atomically(target: Path | HadoopPath, text: str) -> None:
    """Write ``text`` to ``target`` through :func:`atomic_writer`."""
    with atomic_writer(target) as handle:
        handle.write(text)


def write_lines(target: Path | HadoopPath, lines, end: str = "\n") -> int:
    """Write each of ``lines`` followed by ``end`` to ``target`` through :func:`atomic_writer`;
    returns how many (a replay rewrites the same file whole)."""
    n = 0
    with atomic_writer(target) as handle:
        for line in lines:
            handle.write(line + end)
            n += 1
    return n


def append_text(target: Path | HadoopPath, text: str) -> None:
    """Append ``text`` to ``target`` (created if absent): ``open("a")`` locally, ``FileSystem.append``
    on a Hadoop filesystem; where the filesystem has no append (object stores), the file is
    read and rewritten whole through :func:`atomic_writer` (fine for the small logs it is used
    for)."""
    if not isinstance(target, HadoopPath):
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text)
        return
    if not target.exists():
        with target.open("x") as handle:
            handle.write(text)
        return
    try:
        raw = _Writer(target._call("appending to it", "append"), target.url)
    except FilesystemError as error:
        if "UnsupportedOperation" not in str(error) and "not supported" not in str(error).lower():
            raise
        write_atomically(target, target.read_text() + text)
        return
    with io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8") as handle:
        handle.write(text)


def read_parquet(path: Path | HadoopPath, columns: list[str] | None = None):
    """A Parquet file, or a directory of part files (as Spark writes them), as one pyarrow Table
    on the driver, without a Spark job: pyarrow reads a local path itself; a Hadoop path's part
    files are read through the FileSystem API (whole, into memory: for the small tables the
    driver-side paths read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(path, HadoopPath):
        return pq.read_table(str(path), columns=columns)
    parts = [path] if path.is_file() else [
        p for p in path.iterdir() if p.name.endswith(".parquet") and not p.name.startswith(("_", "."))]
    if not parts:
        raise FileNotFoundError(f"{path}: no Parquet files")
    return pa.concat_tables([pq.read_table(pa.BufferReader(p.read_bytes()), columns=columns) for p in parts])


def write_parquet(table, path: Path | HadoopPath) -> None:
    """A pyarrow Table to the Parquet file ``path`` (on a Hadoop filesystem through a buffer: its
    output stream cannot seek)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(path, HadoopPath):
        pq.write_table(table, str(path))
        return
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer)
    path.write_bytes(buffer.getvalue().to_pybytes())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def lock(directory: Path | HadoopPath, what: str = "materialization") -> Iterator[None]:
    """Hold ``directory/.lock`` for the block (see the module doc for the rule per filesystem)."""
    directory.mkdir(parents=True, exist_ok=True)
    if not isinstance(directory, HadoopPath):
        import fcntl

        with open(directory / ".lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LockedError(f"{directory}: another {what} is writing to this directory") from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    file = directory / ".lock"
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for attempt in (1, 2):
        try:
            with file.open("x") as handle:
                handle.write(json.dumps(owner) + "\n")
            break
        except FileExistsError:
            try:
                holder = json.loads(file.read_text() or "{}")
            except (OSError, ValueError):
                holder = {}
            stale = holder.get("host") == owner["host"] and isinstance(holder.get("pid"), int) and not _alive(holder["pid"])
            if stale and attempt == 1:
                file.unlink(missing_ok=True)
                continue
            who = (f"process {holder.get('pid')} on {holder.get('host')}, since {holder.get('started')}"
                   if holder else "an unknown owner")
            raise LockedError(f"{directory}: another {what} is writing to this directory ({who}); if that run "
                              f"is dead, delete {file} and run again") from None
    try:
        yield
    finally:
        file.unlink(missing_ok=True)
