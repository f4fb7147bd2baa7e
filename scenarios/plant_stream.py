"""A seeded, replayable stream of plant observations drawn from the real USDA taxonomy.

Timestamped N-Triples (``<s> <p> <o> "t" .``), one file per micro-batch, written to a temporary
name and renamed into place (Spark's file source never sees half a file). Line ``i`` has event
time ``start + i * step`` and subject ``<http://example.org/plants/instance/i>``; what it says is
drawn with ``random.Random(seed)``, so the same arguments give the same bytes:

* ``typed`` — ``x rdf:type C`` with C a real taxon: inside the target's subtree (a positive), or
  with probability ``negative`` outside it (mosses, liverworts, algae, fungi: real negatives);
* ``unknown`` — ``x rdf:type <...#unknown:TaxonK>``, a class the taxonomy does not have;
* ``other`` — unrelated triples (a label, a place, a height, an observer);
* ``bad`` — malformed lines (the service must reject them with a reason, not drop them).

CLI: ``python -m scenarios.plant_stream --out DIR --triples N [--files K] [--seed S] [--bad 0.001]``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ontologies.data import data_dir
from ontologies.plants import INSTANCE_NS, PLANTS_NS, TRACHEOBIONTA_ID, class_iri, descendants, read_taxonomy, taxonomy_path
from rdfcore.vocab import RDF_TYPE, RDFS_LABEL

__all__ = ["Mix", "generate", "main"]

_XSD_INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"
_BAD = ('<{s}> {type} <http://example.org/plants#broken "{t}" .',      # an IRI never closed
        '<{s}> {type} "{t}" .',                                          # no object
        '<{s}> <http://example.org/plants#observedIn> "garden" .',      # no timestamp
        "observed {s} at {t}")                                          # not N-Triples at all


@dataclass(frozen=True)
class Mix:
    """Shares of the line kinds (they need not sum to 1: ``other`` takes the rest)."""

    typed: float = 0.7
    unknown: float = 0.05
    bad: float = 0.0
    negative: float = 0.3      # of the typed lines: a taxon outside the target subtree

    def check(self) -> None:
        for name in ("typed", "unknown", "bad", "negative"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"{name} share must be between 0 and 1, got {value}")
        if self.typed + self.unknown + self.bad > 1:
            raise ValueError("typed + unknown + bad shares exceed 1")


def generate(taxa, out_dir: str | Path, n: int, *, files: int = 1, seed: int = 0, start: int = 0, step: int = 1,
             mix: Mix = Mix(), target_id: str = TRACHEOBIONTA_ID, first_index: int = 0) -> dict:
    """Write ``n`` lines into ``files`` files of ``out_dir`` (module doc); returns a summary with
    the number of lines of each kind."""
    if n < 0 or files < 1:
        raise ValueError("need n >= 0 and files >= 1")
    mix.check()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    inside = descendants(taxa, target_id) | {target_id}
    positives = [class_iri(t.id) for t in taxa if t.id in inside]
    negatives = [class_iri(t.id) for t in taxa if t.id not in inside]
    rng = random.Random(seed)
    counts = {"typed_positive": 0, "typed_negative": 0, "unknown": 0, "other": 0, "bad": 0}
    per_file = -(-n // files) if n else 0
    typed_cut = mix.typed
    unknown_cut = typed_cut + mix.unknown
    bad_cut = unknown_cut + mix.bad
    written = []
    for f in range(files):
        lo, hi = f * per_file, min(n, (f + 1) * per_file)
        if lo >= hi and f:
            break
        lines = []
        for i in range(lo, hi):
            index = first_index + i
            s = f"{INSTANCE_NS}{index}"
            t = start + index * step
            x = rng.random()
            if x < typed_cut:
                if negatives and rng.random() < mix.negative:
                    lines.append(f'<{s}> {RDF_TYPE} {rng.choice(negatives)} "{t}" .\n')
                    counts["typed_negative"] += 1
                else:
                    lines.append(f'<{s}> {RDF_TYPE} {rng.choice(positives)} "{t}" .\n')
                    counts["typed_positive"] += 1
            elif x < unknown_cut:
                lines.append(f'<{s}> {RDF_TYPE} <{PLANTS_NS}unknown:Taxon{rng.randrange(1000)}> "{t}" .\n')
                counts["unknown"] += 1
            elif x < bad_cut:
                lines.append(rng.choice(_BAD).format(s=s, t=t, type=RDF_TYPE) + "\n")
                counts["bad"] += 1
            else:
                k = rng.randrange(4)
                if k == 0:
                    lines.append(f'<{s}> {RDFS_LABEL} "specimen {index}" "{t}" .\n')
                elif k == 1:
                    lines.append(f'<{s}> <{PLANTS_NS}observedIn> "garden {index % 97}"@en "{t}" .\n')
                elif k == 2:
                    lines.append(f'<{s}> <{PLANTS_NS}heightCm> "{rng.randrange(1, 3000)}"^^{_XSD_INTEGER} "{t}" .\n')
                else:
                    lines.append(f'<{s}> <{PLANTS_NS}observedBy> <http://example.org/people/p{index % 31}> "{t}" .\n')
                counts["other"] += 1
        name = f"plants-{seed}-{first_index + lo:012d}.nt"
        tmp = out / f".{name}.tmp"
        with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write("".join(lines))
        os.replace(tmp, out / name)
        written.append(name)
    return {"lines": n, "files": len(written), "seed": seed, **counts}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scenarios.plant_stream", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="directory for the stream files")
    parser.add_argument("--triples", type=int, required=True, metavar="N")
    parser.add_argument("--files", type=int, default=1, metavar="K", help="split into K files (micro-batches)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", type=int, default=0, help="event time of line 0 (default 0)")
    parser.add_argument("--step", type=int, default=1, help="event time between lines (default 1)")
    parser.add_argument("--bad", type=float, default=0.0, help="share of malformed lines (default 0)")
    parser.add_argument("--negative", type=float, default=0.3, help="share of typed lines outside the class")
    parser.add_argument("--data-dir", help="data directory (default: $RSP_DATA_DIR or <repo>/../shared/data)")
    args = parser.parse_args(argv)
    try:
        taxa = read_taxonomy(taxonomy_path(data_dir(args.data_dir)))
        started = time.perf_counter()
        summary = generate(taxa, args.out, args.triples, files=args.files, seed=args.seed, start=args.start,
                           step=args.step, mix=Mix(bad=args.bad, negative=args.negative))
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    summary["seconds"] = round(time.perf_counter() - started, 3)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
