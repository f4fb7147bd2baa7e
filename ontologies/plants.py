"""The USDA PLANTS taxonomy (``plants/plants_taxonomy.csv``) as an RDFS class hierarchy in N-Triples.

Each taxon becomes a class ``<http://example.org/plants#LOCAL>`` (see :func:`class_iri`) with
``C rdfs:subClassOf Parent`` (none for the roots) and, optionally, ``C rdfs:label "Name"`` and
``C plants:rank "rank"``.  No ``rdf:type rdfs:Class`` triples are written: the hierarchy stays pure.
:func:`write_instances` writes a synthetic instance stream typed by the species-level taxa, for the
classification benchmarks (``?x rdf:type/rdfs:subClassOf* TRACHEOBIONTA``).

CLI: ``python -m ontologies.plants [--data-dir D] [--species-level] --out FILE
[--instances N --instances-out FILE] [--seed S] [--no-labels] [--ranks]``.
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ontologies.data import data_dir
from rdfcore.errors import SidecarError
from rdfcore.progress import Progress
from rdfcore.terms import literal, write_ntriples
from rdfcore.vocab import RDF_TYPE, RDFS_LABEL, RDFS_SUBCLASSOF, iri

PLANTS_NS = "http://example.org/plants#"
PLANTS_RANK = iri(PLANTS_NS + "rank")
INSTANCE_NS = "http://example.org/plants/instance/"

TAXONOMY_FILE = "plants/plants_taxonomy.csv"
SPECIES_LEVEL_FILE = "plants/plants_taxonomy_species_level.csv"
COLUMNS = ("id", "name", "rank", "parent_id")
INSTANCE_RANKS = frozenset(
    {"species", "subspecies", "variety", "subvariety", "forma", "subforma", "infraspecific taxon"}
)
TRACHEOBIONTA_ID = "subkingdom:Tracheobionta"

# Characters kept as they are in a class IRI's local part (RFC 3986 unreserved, minus "_").
# ":" becomes "_"; everything else, "_" included, is percent-encoded (UTF-8, uppercase hex), so the
# mapping is injective under RDF's IRI equality (simple string comparison).
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.~")
# Characters not allowed in an N-Triples IRIREF (besides those <= U+0020).
_IRI_FORBIDDEN = frozenset('<>"{}|^`\\')
_CHUNK_DIGITS = 5
_CHUNK = 10**_CHUNK_DIGITS  # lines per write in write_instances


class TaxonomyError(SidecarError, ValueError):
    """A malformed taxonomy CSV; the message names file, line, column and what was expected."""

    def __init__(self, path: str | Path, line: int, column: str, message: str) -> None:
        super().__init__(f"{path}:{line}: column {column!r}: {message}")
        self.path = str(path)
        self.line = line
        self.column = column


@dataclass(frozen=True)
class Taxon:
    """One row of the taxonomy CSV; ``parent_id`` is ``""`` for a root, ``line`` is 1-based."""

    id: str
    name: str
    rank: str
    parent_id: str
    line: int


def class_iri(taxon_id: str) -> str:
    """The N-Triples IRI of a taxon's class: ``usda:ABAB`` -> ``<http://example.org/plants#usda_ABAB>``."""
    local = "".join(
        c if c in _SAFE else "_" if c == ":" else "".join(f"%{b:02X}" for b in c.encode("utf-8"))
        for c in taxon_id
    )
    return iri(PLANTS_NS + local)


TRACHEOBIONTA = class_iri(TRACHEOBIONTA_ID)


def nt_string(value: str) -> str:
    """A plain string literal in canonical N-Triples form."""
    return literal(value)


def taxonomy_path(directory: Path, species_level: bool = False) -> Path:
    """The taxonomy CSV inside a data directory (the species-level variant if asked)."""
    return directory / (SPECIES_LEVEL_FILE if species_level else TAXONOMY_FILE)


def read_taxonomy(path: str | Path) -> list[Taxon]:
    """Read and validate a taxonomy CSV (header ``id,name,rank,parent_id``, parents before children)."""
    taxa: list[Taxon] = []
    seen: dict[str, int] = {}  # id -> line
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or tuple(header) != COLUMNS:
            got = header or []
            column = next(
                (c for i, c in enumerate(COLUMNS) if i >= len(got) or got[i] != c), "(extra)"
            )
            raise TaxonomyError(
                path, 1, column, f"expected the header {','.join(COLUMNS)!r}, got {','.join(got)!r}"
            )
        end = reader.line_num
        for row in reader:
            line, end = end + 1, reader.line_num
            if len(row) != len(COLUMNS):
                column = COLUMNS[len(row)] if len(row) < len(COLUMNS) else "(extra)"
                raise TaxonomyError(
                    path, line, column,
                    f"expected {len(COLUMNS)} columns ({','.join(COLUMNS)}), got {len(row)}: {row!r}",
                )
            taxon_id, name, rank, parent_id = row
            if not taxon_id:
                raise TaxonomyError(path, line, "id", "expected a non-empty taxon id")
            if taxon_id in seen:
                raise TaxonomyError(
                    path, line, "id",
                    f"expected a new taxon id, {taxon_id!r} is already defined on line {seen[taxon_id]}",
                )
            if parent_id and parent_id not in seen:
                raise TaxonomyError(
                    path, line, "parent_id",
                    f"expected empty or the id of a taxon defined on an earlier line, got {parent_id!r}",
                )
            seen[taxon_id] = line
            taxa.append(Taxon(taxon_id, name, rank, parent_id, line))
    return taxa


def descendants(taxa: Iterable[Taxon], root_id: str) -> set[str]:
    """Ids of all taxa below ``root_id`` (transitively), excluding the root itself."""
    children: dict[str, list[str]] = {}
    ids: set[str] = set()
    for taxon in taxa:
        ids.add(taxon.id)
        if taxon.parent_id:
            children.setdefault(taxon.parent_id, []).append(taxon.id)
    if root_id not in ids:
        raise KeyError(f"unknown taxon id {root_id!r}")
    found: set[str] = set()
    stack = [root_id]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def write_hierarchy(
    taxa: Iterable[Taxon], out_path: str | Path, labels: bool = True, ranks: bool = False
) -> int:
    """Write the class hierarchy as sorted N-Triples; returns the number of triples written."""
    lines: list[str] = []
    for taxon in taxa:
        cls = class_iri(taxon.id)
        if taxon.parent_id:
            lines.append(f"{cls} {RDFS_SUBCLASSOF} {class_iri(taxon.parent_id)} .\n")
        if labels:
            lines.append(f"{cls} {RDFS_LABEL} {nt_string(taxon.name)} .\n")
        if ranks:
            lines.append(f"{cls} {PLANTS_RANK} {nt_string(taxon.rank)} .\n")
    lines.sort()
    return write_ntriples(out_path, lines)


def instance_classes(taxa: Sequence[Taxon]) -> list[Taxon]:
    """The taxa instances are typed by: those of rank species or below, in file order (all if none)."""
    if not taxa:
        raise ValueError("no taxa to type instances by")
    return [t for t in taxa if t.rank in INSTANCE_RANKS] or list(taxa)


def write_instances(
    taxa: Sequence[Taxon],
    out_path: str | Path,
    n: int,
    seed: int = 0,
    prefix: str = INSTANCE_NS,
) -> int:
    """Stream ``n`` triples ``<prefix{i}> rdf:type C`` with C uniform over :func:`instance_classes`.

    The draw is deterministic for a seed (``random.Random(seed)``) and covers vascular and
    non-vascular taxa alike, so instances outside Tracheobionta (real negatives) occur.
    Returns ``n``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    bad = sorted({c for c in prefix if c in _IRI_FORBIDDEN or c <= " "})
    if bad:
        raise ValueError(f"prefix {prefix!r} has characters not allowed in an IRI: {bad!r}")
    tails = [f"> {RDF_TYPE} {class_iri(t.id)} .\n" for t in instance_classes(taxa)]
    rng = random.Random(seed)
    head = "<" + prefix
    # Line i = head + str(i) + tail.  With _CHUNK = 10**_CHUNK_DIGITS, the i of chunk q >= 1 are
    # str(q) followed by the zero-padded offset, so offsets are formatted once, not per line.
    offsets = [f"{j:0{_CHUNK_DIGITS}d}" for j in range(min(n, _CHUNK))]
    parts = [head] * (3 * len(offsets))
    parts[1::3] = map(str, range(len(offsets)))
    with open(out_path, "w", encoding="utf-8", newline="\n") as out:
        for chunk, start in enumerate(range(0, n, _CHUNK)):
            k = min(_CHUNK, n - start)
            if k < len(offsets):
                del parts[3 * k:]
            if chunk:
                parts[0::3] = [head + str(chunk)] * k
                parts[1::3] = offsets[:k]
            parts[2::3] = rng.choices(tails, k=k)
            out.write("".join(parts))
    return n


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints a one-line JSON summary."""
    parser = argparse.ArgumentParser(prog="python -m ontologies.plants", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", help="data directory (default: $RSP_DATA_DIR or <repo>/../shared/data)")
    parser.add_argument("--species-level", action="store_true", help="use the taxonomy that stops at species")
    parser.add_argument("--out", required=True, help="N-Triples file for the class hierarchy")
    parser.add_argument("--no-labels", action="store_true", help="omit rdfs:label triples")
    parser.add_argument("--ranks", action="store_true", help="add plants:rank triples")
    parser.add_argument("--instances", type=int, default=0, metavar="N", help="number of instance triples")
    parser.add_argument("--instances-out", help="N-Triples file for the instances (needed with --instances)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the instance classes (default 0)")
    args = parser.parse_args(argv)
    if args.instances < 0:
        parser.error("--instances must be >= 0")
    if args.instances and not args.instances_out:
        parser.error("--instances needs --instances-out FILE")
    try:
        source = taxonomy_path(data_dir(args.data_dir), args.species_level)
        started = time.perf_counter()
        progress = Progress("plants")
        taxa = read_taxonomy(source)
        progress.phase(f"taxonomy read from {source}", rows=len(taxa))
        triples = write_hierarchy(taxa, args.out, labels=not args.no_labels, ranks=args.ranks)
        progress.phase(f"hierarchy written to {args.out}", rows=triples)
        summary: dict[str, object] = {
            "source": str(source),
            "taxa": len(taxa),
            "triples": triples,
            "tracheobionta_subclasses": len(descendants(taxa, TRACHEOBIONTA_ID)),
            "out": str(args.out),
            "hierarchy_seconds": round(time.perf_counter() - started, 3),
        }
        if args.instances_out:
            started = time.perf_counter()
            summary["instances"] = write_instances(taxa, args.instances_out, args.instances, seed=args.seed)
            summary["instances_out"] = str(args.instances_out)
            progress.phase(f"instances written to {args.instances_out}", rows=summary["instances"])
            summary["instances_seconds"] = round(time.perf_counter() - started, 3)
    except (FileNotFoundError, TaxonomyError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
