"""The stream file formats, by name and extension (no pyspark: the driver's readers use them too).

JSON Lines (``.jsonl``, ``.ndjson``, ``.json``) and timestamped N-Triples (``.nt``,
``.ntriples``, ``.tsnt``, ``.tnt``); ``cep.io.streams`` documents both.
"""
from __future__ import annotations

from pathlib import Path

from rdfcore.errors import RDFLoadError

__all__ = ["JSONL", "TSNT", "FORMATS", "EXTENSIONS", "detect_stream_format"]

JSONL, TSNT = "jsonl", "tsnt"
FORMATS = (JSONL, TSNT)
#: file extension → format
EXTENSIONS = {".jsonl": JSONL, ".ndjson": JSONL, ".json": JSONL,
              ".nt": TSNT, ".ntriples": TSNT, ".tsnt": TSNT, ".tnt": TSNT}


def detect_stream_format(path: Path, explicit: str | None = None) -> str:
    """``explicit`` when given (checked), else the format its extension names."""
    if explicit is not None:
        if explicit not in FORMATS:
            raise RDFLoadError(str(path), f"unknown stream format {explicit!r}; expected one of {', '.join(FORMATS)}")
        return explicit
    suffix = path.suffix.lower()
    if suffix not in EXTENSIONS:
        raise RDFLoadError(str(path), f"cannot tell the stream format from the extension {suffix!r}; expected one of "
                                      f"{', '.join(sorted(EXTENSIONS))} (or pass fmt='jsonl'|'tsnt')")
    return EXTENSIONS[suffix]
