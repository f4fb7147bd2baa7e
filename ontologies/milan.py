"""The ATM / AMAT Milano network (``milan/`` in the data directory) as RDF in the Vienna vocabulary.

Source: the operator's GTFS feed (agency ``AMAT_Milan_feed``) as processed in
nhabbash/transport-network-analysis — "AMAT Milano / Comune di Milano", Italian public-sector
open data; see ``../shared/data/README.md``. Three files of route patterns
(``metro_routes.csv``, ``tram_routes.csv``, ``bus_routes.csv``: ``route_id, stop_name, stop_id,
stop_sequence, stop_lat, stop_lon, shape_id``), one representative pattern per route.

Modelling (properties and classes of ``ontologies.vienna``: ``:beg``, ``:end``, ``:means``,
``:line``, ``:distance``, ``:dur``, ``:Stop``, ``:subway``/``:tram``/``:bus``; Milan's resources
under ``http://example.org/milan/``):

* **Stops are the nodes.** A surface stop is its GTFS ``stop_id`` (routes sharing a stop id share
  the node): ``<.../stop/11181>``; a metro station is its name (the metro file's stop ids are
  station names): ``<.../metro/LORETO>``. Each has ``rdfs:label`` and ``geo:lat``/``geo:long``.
* **Connections**: consecutive stops of a pattern (by ``stop_sequence``). The feed keeps one
  pattern per route, run in one direction; vehicles run it both ways, so each hop gives a
  connection each way (``<.../conn/<route>/<from>/<to>>``). Hops between the same node are not
  connections (counted).
* **Transfers** between a metro station and the surface stops within :data:`TRANSFER_METRES`
  (great-circle) are modelled explicitly, as walking connections both ways (``:means :walk``),
  since the data says metro stations and surface stops are distinct nodes unless a transfer is.
* **Durations are estimates** (the files hold no travel times): great-circle distance over a
  typical speed (:data:`SPEED_KMH`), rounded up to whole seconds; a transfer adds
  :data:`TRANSFER_PENALTY_S`. The file says so in a header comment and on ``:dur``.

Bad rows (a missing or out-of-range coordinate, a bad sequence number, a missing stop id) are
never dropped silently: each is kept as a reject with file, line and reason and counted; a file
that cannot be read at all raises :class:`MilanDataError` naming file and line.

CLI: ``python -m ontologies.milan --out milan.nt [--data-dir D]``, prints a JSON summary.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ontologies.data import data_dir
from ontologies.vienna import (BUS, DUR, RDFS_COMMENT, STOP, SUBWAY, TRAM, Reject, connection_triples,
                               great_circle_metres, line_triples, place_triples, v)
from rdfcore.errors import SidecarError
from rdfcore.terms import literal, write_ntriples

MILAN_NS = "http://example.org/milan/"
WALK = v("walk")
FILES = {"metro": "milan/metro_routes.csv", "tram": "milan/tram_routes.csv", "bus": "milan/bus_routes.csv"}
MEANS_OF = {"metro": SUBWAY, "tram": TRAM, "bus": BUS}
COLUMNS = ("route_id", "stop_name", "stop_id", "stop_sequence", "stop_lat", "stop_lon", "shape_id")
#: typical average speed (km/h, stops included) per mode, for the :dur estimates; walking for transfers
SPEED_KMH = {"metro": 30.0, "tram": 13.0, "bus": 15.0, "walk": 4.5}
TRANSFER_METRES = 250.0
TRANSFER_PENALTY_S = 60
DUR_COMMENT = ("Estimated travel time, not from the source: the great-circle distance between the two stops divided "
               "by a typical average speed (km/h: " + ", ".join(f"{k} {s:g}" for k, s in SPEED_KMH.items()) +
               f"), rounded up to whole seconds; a walking transfer adds {TRANSFER_PENALTY_S} s.")


class MilanDataError(SidecarError, ValueError):
    """A source file that cannot be used at all; names the file and line."""

    def __init__(self, path: str | Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")


@dataclass(frozen=True)
class Stop:
    key: str          # "stop/<id>" or "metro/<NAME>"
    name: str
    lat: float
    lon: float
    lat_text: str
    lon_text: str

    @property
    def iri(self) -> str:
        return f"<{MILAN_NS}{_safe(self.key)}>"


@dataclass(frozen=True)
class Connection:
    route: str        # route id, or "walk"
    mode: str         # metro, tram, bus, walk
    beg: str          # stop keys
    end: str
    metres: int
    seconds: int

    @property
    def iri(self) -> str:
        return f"<{MILAN_NS}conn/{_safe(self.route)}/{_safe(self.beg)}/{_safe(self.end)}>"


@dataclass
class Network:
    stops: dict[str, Stop]
    connections: dict[tuple[str, str, str], Connection]
    routes: dict[str, str]                 # route id -> mode
    rejects: list[Reject]
    counts: Counter = field(default_factory=Counter)


def _safe(text: str) -> str:
    """An IRI path segment: characters outside [A-Za-z0-9_.-/] percent-encoded."""
    out = []
    for ch in text:
        if ch.isascii() and (ch.isalnum() or ch in "_.-/"):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out)


def _seconds(metres: float, mode: str) -> int:
    return max(1, math.ceil(metres / (SPEED_KMH[mode] / 3.6)))


def _read(path: Path, mode: str, stops: dict[str, Stop], rejects: list[Reject]) -> dict[tuple[str, str], list]:
    """Rows of one file: {(route, shape): [(sequence, stop key)]}; stops added to ``stops``."""
    if not path.is_file():
        raise MilanDataError(path, 0, "no such file")
    patterns: dict[tuple[str, str], list] = {}
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None or tuple(header) != COLUMNS:
            raise MilanDataError(path, 1, f"expected the header {','.join(COLUMNS)!r}, got {','.join(header or [])!r}")
        for row in reader:
            number = reader.line_num
            raw = ",".join(row)
            if not any(x.strip() for x in row):
                continue
            if len(row) != len(COLUMNS):
                rejects.append(Reject(str(path), number, f"expected {len(COLUMNS)} fields, got {len(row)}", raw))
                continue
            route, name, stop_id, seq, lat_text, lon_text, shape = (x.strip() for x in row)
            if not route or not stop_id:
                rejects.append(Reject(str(path), number, "missing route_id or stop_id", raw))
                continue
            if not seq.isdigit():
                rejects.append(Reject(str(path), number, f"stop_sequence {seq!r} is not a whole number", raw))
                continue
            try:
                lat, lon = float(lat_text), float(lon_text)
            except ValueError:
                rejects.append(Reject(str(path), number, f"coordinates {lat_text!r}, {lon_text!r} are not numbers", raw))
                continue
            if not (44.0 <= lat <= 47.0 and 8.0 <= lon <= 10.5):
                rejects.append(Reject(str(path), number, f"coordinates {lat}, {lon} are outside the Milan area", raw))
                continue
            key = f"metro/{stop_id}" if mode == "metro" else f"stop/{stop_id}"
            stops.setdefault(key, Stop(key, name or stop_id, lat, lon, lat_text, lon_text))
            patterns.setdefault((route, shape), []).append((int(seq), key))
    return patterns


def build(directory: str | Path) -> Network:
    """Read the three route files under ``directory`` (the data directory)."""
    directory = Path(directory)
    stops: dict[str, Stop] = {}
    rejects: list[Reject] = []
    connections: dict[tuple[str, str, str], Connection] = {}
    routes: dict[str, str] = {}
    counts: Counter = Counter()
    for mode, name in FILES.items():
        for (route, _shape), rows in _read(directory / name, mode, stops, rejects).items():
            routes[route] = mode
            rows.sort()
            for (_s1, a), (_s2, b) in zip(rows, rows[1:]):
                if a == b:
                    counts["same_stop_hops"] += 1
                    continue
                metres = great_circle_metres(stops[a].lat, stops[a].lon, stops[b].lat, stops[b].lon)
                for x, y in ((a, b), (b, a)):
                    connections.setdefault((route, x, y), Connection(route, mode, x, y, round(metres),
                                                                     _seconds(metres, mode)))
    metro = [s for s in stops.values() if s.key.startswith("metro/")]
    surface = [s for s in stops.values() if not s.key.startswith("metro/")]
    for m in metro:
        for s in surface:
            if abs(m.lat - s.lat) > 0.003 or abs(m.lon - s.lon) > 0.004:
                continue
            metres = great_circle_metres(m.lat, m.lon, s.lat, s.lon)
            if metres <= TRANSFER_METRES:
                seconds = _seconds(metres, "walk") + TRANSFER_PENALTY_S
                for x, y in ((m.key, s.key), (s.key, m.key)):
                    connections[("walk", x, y)] = Connection("walk", "walk", x, y, round(metres), seconds)
                counts["transfers"] += 1
    return Network(stops, connections, routes, rejects, counts)


def triples(network: Network) -> list[str]:
    out: list[str] = []
    add = out.append
    for st in network.stops.values():
        out += place_triples(st.iri, STOP, st.name, st.lat_text, st.lon_text)
    for route, mode in network.routes.items():
        out += line_triples(f"<{MILAN_NS}line/{_safe(route)}>", route, MEANS_OF[mode])
    for c in network.connections.values():
        walk = c.mode == "walk"
        out += connection_triples(c.iri, network.stops[c.beg].iri, network.stops[c.end].iri,
                                  WALK if walk else MEANS_OF[c.mode],
                                  None if walk else f"<{MILAN_NS}line/{_safe(c.route)}>", c.metres, c.seconds)
    add(f"{DUR} {RDFS_COMMENT} {literal(DUR_COMMENT)} .\n")
    out.sort()
    return out


#: the comment lines the N-Triples file starts with
HEADER = ("# ATM Milano network (AMAT Milano / Comune di Milano, GTFS), built by ontologies/milan.py.\n"
          "# :dur is an ESTIMATE (the source has no travel times): " + DUR_COMMENT + "\n")


def summary(network: Network) -> dict:
    modes = Counter(c.mode for c in network.connections.values())
    return {"stops": len(network.stops), "routes": len(network.routes), "connections": len(network.connections),
            "connections_by_means": dict(sorted(modes.items())), "rejected_rows": len(network.rejects),
            "rejects_by_reason": dict(Counter(r.reason.split(" ")[0] for r in network.rejects)),
            **dict(network.counts)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ontologies.milan", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", help="data directory (default: $RSP_DATA_DIR or <repo>/../shared/data)")
    parser.add_argument("--out", required=True, help="N-Triples file")
    args = parser.parse_args(argv)
    try:
        network = build(data_dir(args.data_dir))
        n = write_ntriples(args.out, triples(network), HEADER)
    except (FileNotFoundError, MilanDataError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps({**summary(network), "triples": n, "out": args.out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
