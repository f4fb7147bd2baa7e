"""RDF sources read on the driver, with no Spark: file formats, the N-Triples grammar, rdflib's
parsers, ``owl:imports``, and :func:`load_local` (``reasoner.local``, ``query --at`` on the
driver). ``rdfcore.loading`` reads the same sources with Spark and gives the same triples and
rejects; both walk the sources with :func:`walk_sources`.

N-Triples (``.nt``, ``.ntriples``) are matched line by line against RDF 1.1's grammar (the Java
regular expressions Spark uses, translated by :func:`python_regex`): a bad line is a reject with
its file, line number and reason. Turtle, RDF/XML (``.rdf``, ``.owl``, ``.xml``), N3 and the
other formats rdflib knows are parsed by rdflib; a syntax error stops the load with
:class:`RDFLoadError` naming file, line and column. RDF/XML is parsed without resolving external
entities: a document declaring one is refused.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rdfcore.errors import RDFLoadError
from rdfcore.locations import location
from rdfcore.vocab import OWL_IMPORTS, XSD_STRING

if TYPE_CHECKING:
    import rdflib

_RDFLIB_FORMATS = {
    ".ttl": "turtle", ".turtle": "turtle", ".n3": "n3", ".rdf": "xml", ".owl": "xml", ".xml": "xml",
    ".jsonld": "json-ld", ".trig": "trig", ".nq": "nquads",
}
_NT_SUFFIXES = (".nt", ".ntriples")
FORMATS = sorted({"ntriples", *_RDFLIB_FORMATS.values()})


@dataclasses.dataclass(frozen=True)
class Source:
    """One input file as recorded in a manifest."""

    path: str
    format: str
    sha256: str
    bytes: int


def hash_file(path: Path, mark: int | None = None,
              chunk: int = 1 << 22) -> tuple[str, tuple[str, int, bool] | None]:
    """SHA-256 of the file and, with ``mark``, of its first ``mark`` bytes in the same pass: (their
    SHA-256, their line count, whether they end a line) — what incremental refresh checks an
    appended file against (None when the file is shorter)."""
    digest, prefix, lines, done, previous_last = hashlib.sha256(), None, 0, 0, b"\n"
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            if mark is not None and prefix is None and done + len(block) >= mark:
                head = block[:mark - done]
                digest.update(head)
                lines += head.count(b"\n")
                last = head[-1:] if head else previous_last
                prefix = (digest.copy().hexdigest(), lines, last in (b"\n", b"\r"))
                digest.update(block[mark - done:])
            else:
                digest.update(block)
                if mark is not None and prefix is None:
                    lines += block.count(b"\n")
            previous_last = block[-1:]
            done += len(block)
    if mark == 0 and prefix is None:                        # an empty file
        prefix = (hashlib.sha256().hexdigest(), 0, True)
    return digest.hexdigest(), prefix


def detect_format(path: Path, explicit: str | None = None) -> str:
    if explicit:
        if explicit not in FORMATS:
            raise RDFLoadError(str(path), f"unknown format {explicit!r}; expected one of {', '.join(FORMATS)}")
        return explicit
    suffix = path.suffix.lower()
    if suffix in _NT_SUFFIXES:
        return "ntriples"
    if suffix in _RDFLIB_FORMATS:
        return _RDFLIB_FORMATS[suffix]
    raise RDFLoadError(str(path), f"cannot tell the RDF format from the extension {suffix!r}; expected one of "
                                  f"{', '.join(sorted(set(_NT_SUFFIXES) | set(_RDFLIB_FORMATS)))}")


# --- the N-Triples grammar -----------------------------------------------------------------
# RDF 1.1 N-Triples grammar [2]-[18], as Java regular expressions (Spark's regex engine).
_UCHAR = r"\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}"
NT_IRI = r"<(?:[^<>\"{}|^`\\\x00-\x20]++|" + _UCHAR + r")*+>"
NT_BNODE = r"_:[^\s<>\"]*[^\s<>\".]"
NT_LITERAL = (r"\"(?:[^\"\\\n\r]++|\\[tbnrf\"'\\]|" + _UCHAR + r")*+\""
            r"(?:@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*|\^\^" + NT_IRI + r")?")
NT_WS = r"[ \t]*"
NT_SUBJECT = rf"^{NT_WS}({NT_IRI}|{NT_BNODE})"
NT_PREDICATE = rf"{NT_SUBJECT}{NT_WS}({NT_IRI})"
NT_OBJECT = rf"{NT_PREDICATE}{NT_WS}({NT_IRI}|{NT_BNODE}|{NT_LITERAL})"
NT_STATEMENT = rf"{NT_OBJECT}{NT_WS}\."
NT_LINE = rf"{NT_STATEMENT}{NT_WS}(?:#.*)?$"
NT_BLANK_OR_COMMENT = rf"^{NT_WS}(?:#.*)?$"


# --- N-Triples on the driver (the small-input path, ``reasoner.local``) ---------------------
# The same grammar and the same answers as the Spark reader above, line for line: the patterns
# are translated to Python's ``re`` (3.11 has possessive quantifiers) with Java's meaning of
# ``.`` and ``$`` (they stop at Java's line terminators) and of ``\s`` (ASCII blanks only).
_JAVA_DOT = "[^\n\r\u0085\u2028\u2029]"
_JAVA_END = "(?=[\u0085\u2028\u2029]?\\Z)"


def python_regex(java: str) -> re.Pattern:
    """One of this module's Java regular expressions as a Python pattern that matches the same."""
    out, i, in_class = [], 0, False
    while i < len(java):
        c = java[i]
        if c == "\\":
            pair = java[i:i + 2]
            out.append(" \t\n\x0b\x0c\r" if pair == r"\s" and in_class else pair)
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == ".":
            c = _JAVA_DOT
        elif c == "$":
            c = _JAVA_END
        out.append(c)
        i += 1
    return re.compile("".join(out))


_PY = {name: python_regex(java) for name, java in (
    ("line", NT_LINE), ("blank", NT_BLANK_OR_COMMENT), ("subject", NT_SUBJECT), ("predicate", NT_PREDICATE),
    ("object", NT_OBJECT), ("statement", NT_STATEMENT), ("ws", NT_WS),
    ("tagged", r'^(".*")@([a-zA-Z0-9-]+)$'), ("xsd_string", "\\^\\^" + re.escape(XSD_STRING) + "$"))}
_TERMINATOR = re.compile("\r\n|\r|\n")


def split_lines(data: bytes) -> list[str]:
    """A file's lines as Spark's text reader gives them: UTF-8 with U+FFFD for bad bytes, split
    at ``\\n``, ``\\r\\n`` or ``\\r``, no empty line after a final terminator."""
    lines = _TERMINATOR.split(data.decode("utf-8", errors="replace"))
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _python_reason(line: str) -> str:
    """:func:`reject_reason` on the driver."""
    def after(prefix: re.Pattern) -> int:   # column_after
        match = re.search(prefix.pattern + _PY["ws"].pattern, line)
        return (len(match.group(0)) if match else 0) + 1

    if "\ufffd" in line:
        return "invalid UTF-8 byte sequence"
    steps = (("subject", None, "expected a subject (IRI <...> or blank node _:x)"),
             ("predicate", "subject", "expected a predicate IRI <...>"),
             ("object", "predicate", "expected an object (IRI, blank node or literal \"...\")"),
             ("statement", "object", "expected '.' to end the statement"))
    for name, before, text in steps:
        if not _PY[name].search(line):
            column = 1 + len(_PY["ws"].match(line).group(0)) if before is None else after(_PY[before])
            return f"{text} at column {column}"
    return f"unexpected text after '.' at column {after(_PY['statement'])}"


def _python_canonical(term: str) -> str:
    """:func:`canonical_term` on the driver."""
    tagged = _PY["tagged"].search(term)
    if tagged:
        return f"{tagged.group(1)}@{tagged.group(2).lower()}"
    return _PY["xsd_string"].sub("", term, count=1)


def parse_ntriples_local(path: Path, scope: int) -> tuple[list[tuple[str, str, str]], list[tuple]]:
    """:func:`read_ntriples` for one file on the driver: ``(triples, rejects)``, rejects as
    ``(file, line, reason, raw)`` with the same file name, line numbers and reasons."""
    file = str(path.resolve())
    tag = f"_:f{scope}."
    triples, rejects = [], []
    line_re, blank_re = _PY["line"], _PY["blank"]
    for number, line in enumerate(split_lines(path.read_bytes()), start=1):
        match = line_re.search(line)
        if match is None or "\ufffd" in line:
            if not blank_re.search(line):
                rejects.append((file, number, _python_reason(line), line))
            continue
        # Spark replaces the match by the three groups: text after it (``$`` matches before a
        # final Java line terminator) stays on the object
        s, p, o = match.group(1), match.group(2), _python_canonical(match.group(3) + line[match.end():])
        if s.startswith("_:"):
            s = tag + s[2:]
        if o.startswith("_:"):
            o = tag + o[2:]
        triples.append((s, p, o))
    return triples, rejects


# --- rdflib formats -----------------------------------------------------------------------
_EXTERNAL_ENTITY = re.compile(rb"<!ENTITY\s+%?\s*[^\s>]+\s+(SYSTEM|PUBLIC)\b")


def _refuse_external_entities(path: Path, data: bytes) -> None:
    match = _EXTERNAL_ENTITY.search(data)
    if match:
        line = data.count(b"\n", 0, match.start()) + 1
        column = match.start() - (data.rfind(b"\n", 0, match.start()) + 1) + 1
        raise RDFLoadError(str(path), "the document declares an external entity; external entities are not "
                                      "resolved (inline the content or declare an internal entity)", line, column)


def parse_with_rdflib(path: Path, fmt: str, scope: int) -> "rdflib.Graph":
    """Parse one file with rdflib, turning its exceptions into a located :class:`RDFLoadError`."""
    import rdflib   # ~0.3 s: loaded only when a source is not N-Triples

    data = path.read_bytes()
    if fmt == "xml":
        _refuse_external_entities(path, data)
    graph = rdflib.Graph()
    try:
        graph.parse(data=data, format=fmt, publicID=path.resolve().as_uri())
    except SyntaxError as exc:  # rdflib's Turtle/N3 BadSyntax
        text, offset = getattr(exc, "_str", b""), getattr(exc, "_i", None)
        line = getattr(exc, "lines", None)
        column = None
        if isinstance(text, bytes) and offset is not None:
            column = offset - (text.rfind(b"\n", 0, offset) + 1) + 1
        why = getattr(exc, "_why", None) or str(exc)
        raise RDFLoadError(str(path), f"bad {fmt} syntax: {why}", None if line is None else line + 1, column) from None
    except Exception as exc:  # noqa: BLE001 - every parser error becomes a located load error
        line = exc.getLineNumber() if hasattr(exc, "getLineNumber") else None
        column = exc.getColumnNumber() if hasattr(exc, "getColumnNumber") else None
        message = exc.getMessage() if hasattr(exc, "getMessage") else str(exc)
        raise RDFLoadError(str(path), f"bad {fmt} document: {message}", line, column) from None
    return graph


def rdflib_triples(path: Path, fmt: str, scope: int) -> tuple[list[tuple[str, str, str]], list[str]]:
    """A non-N-Triples source's triples as N-Triples strings (blank nodes scoped by ``scope``, as
    the N-Triples readers scope theirs) and the IRIs it ``owl:imports``."""
    import rdflib   # rdflib, and rdfcore.terms' conversions from it, only for such sources

    from rdfcore.terms import from_rdflib

    graph = parse_with_rdflib(path, fmt, scope)
    tag = f"f{scope}."
    rows = [(from_rdflib(s, tag), from_rdflib(p, tag), from_rdflib(o, tag)) for s, p, o in graph]
    return rows, [str(o) for o in graph.objects(None, rdflib.OWL.imports)]


def _import_target(importer: Path, iri: str) -> Path:
    if iri.startswith("file:"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(iri).path))
    raise RDFLoadError(str(importer), f"owl:imports <{iri}> cannot be followed: only file: IRIs are loaded; "
                                      f"pass the imported ontology as another source instead")


def walk_sources(paths: Sequence[str | Path], formats: dict[str, str], follow_imports: bool,
          on_ntriples, marks: dict[str, int] | None = None,
          prefixes: dict | None = None) -> tuple[list[Source], list[tuple[str, str, str]]]:
    """Visit the sources (and, with ``follow_imports``, what they import) once each: N-Triples
    files go to ``on_ntriples(path, scope)``, which returns their ``owl:imports`` IRIs when asked
    to follow them; other formats are parsed by rdflib here. Returns the sources and rdflib's
    triples."""
    queue = [location(p, "source") for p in paths]
    seen: set[Path] = set()
    sources: list[Source] = []
    rows: list[tuple[str, str, str]] = []
    while queue:
        path = queue.pop(0)
        resolved = path.resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        if not path.is_file():
            raise RDFLoadError(str(path), "no such file")
        fmt = detect_format(path, formats.get(str(path)))
        scope = len(sources)
        size = path.stat().st_size
        mark = (marks or {}).get(str(path))
        sha, prefix = hash_file(path, mark if mark is not None and mark <= size else None)
        if prefix is not None and prefixes is not None:
            prefixes[str(path)] = prefix
        sources.append(Source(str(path), fmt, sha, size))
        imports: list[str] = []
        if fmt == "ntriples":
            imports = on_ntriples(path, scope)
        else:
            found, imported = rdflib_triples(path, fmt, scope)
            rows.extend(found)
            if follow_imports:
                imports = imported
        for iri in imports if follow_imports else ():
            target = _import_target(path, iri) if ":" in iri.split("/")[0] else (path.parent / iri)
            queue.append(target)
    return sources, rows


@dataclasses.dataclass
class LoadedLocal:
    """What :func:`load_local` read: Python lists instead of DataFrames."""

    triples: list[tuple[str, str, str]]  # N-Triples strings, duplicates possible
    rejects: list[tuple[str, int, str, str]]  # (file, line, reason, raw)
    sources: list[Source]


def load_local(paths: Sequence[str | Path], *, formats: dict[str, str] | None = None,
               follow_imports: bool = False) -> LoadedLocal:
    """:func:`load` on the driver, without Spark: the same triples, rejects and sources."""
    triples: list[tuple[str, str, str]] = []
    rejects: list[tuple[str, int, str, str]] = []

    def on_ntriples(path: Path, scope: int) -> list[str]:
        found, bad = parse_ntriples_local(path, scope)
        triples.extend(found)
        rejects.extend(bad)
        return [o[1:-1] for _s, p, o in found if p == OWL_IMPORTS and o.startswith("<")] if follow_imports else []

    sources, rows = walk_sources(paths, formats or {}, follow_imports, on_ntriples)
    return LoadedLocal(triples + rows, rejects, sources)


def total_bytes(paths: Sequence[str | Path]) -> int:
    """The size of the named files (imports not followed): what ``engine="auto"`` decides on."""
    files = [location(p, "source") for p in paths]
    return sum(p.stat().st_size for p in files if p.is_file())
