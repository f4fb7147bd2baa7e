"""The Wiener Linien network (``vienna/`` in the data directory) as RDF in the running example's vocabulary.

Source: Stadt Wien / Wiener Linien open government data (CC BY 4.0, "Datenquelle: Stadt Wien –
data.wien.gv.at"); four ``;``-separated UTF-8 files, see ``../shared/data/README.md``.

Modelling (namespace ``:`` = ``http://example.org/vienna#``, the one of ``vienna_example.ttl``):

* **Stations are the nodes of the network.** A station is a DIVA number of
  ``haltestellen``: ``:st60201320 a :Stop ; rdfs:label "Stephansplatz" ; geo:lat ... ; geo:long ...``.
  Every connection begins and ends at a *station*, so lines transfer where they share a station
  and "reach Stephansplatz" means the station, whatever platform (U1, U3, bus) one arrives at.
  Station coordinates come from ``haltestellen``, whose columns are swapped in the file: the
  values under ``Longitude`` are latitudes and vice versa (the data README says so; we read them
  that way and check the ranges).
* **Stop points** (``haltepunkte``, a platform or pole, ``StopID``) are kept as detail:
  ``:sp4111 a :StopPoint ; :atStation :st60201320 ; rdfs:label "Stephansplatz" ; geo:lat/long``.
  A stop point without a DIVA or without coordinates (853 rows: depots "Abstellplatz ...",
  dummies, a few Badner Bahn stops) cannot be placed: its row is rejected.
* **Connections**: consecutive stops of a line pattern (``fahrwegverlaeufe``, ordered by
  ``StopSeqCount``) give ``:conn_<LineID>_<fromStopID>_<toStopID>`` with ``:beg`` / ``:end``
  (the stations), ``:begPoint`` / ``:endPoint`` (the stop points), ``:means``, ``:line``,
  ``:distance`` (metres, great-circle) and ``:dur``. One resource per line and pair of stop
  points: the many patterns of a line that run over the same hop share it. A hop between two
  stop points of one station is not a connection (counted as ``same_station_hops``). When rows
  of a pattern are rejected (an unplaceable stop point), the pattern continues from the last
  placed stop to the next one — the vehicle does run from one to the other — and the summary
  counts these ``bridged_connections``.
* **Means of transport** (``linien.MeansOfTransport``): ``ptMetro`` → ``:subway``; ``ptTram`` →
  ``:tram``; ``ptTramWLB`` (Badner Bahn, a light-rail line that runs as a tram on Vienna's
  streets) → ``:tram``; ``ptBusCity``, ``ptBusNight``, ``ptRufBus`` (on-demand bus) → ``:bus``;
  ``ptTrainS`` (S-Bahn) → ``:train``. Each line keeps its raw type in ``:transportType``.
* **Durations are estimates**: the files hold no travel times. ``:dur`` is the great-circle
  distance between the two stop points divided by a typical average speed (stops included) of the
  line's type — :data:`SPEED_KMH`: U-Bahn 32 km/h, tram 15 km/h, Badner Bahn 30 km/h, bus
  17 km/h, night bus 20 km/h, on-demand bus 20 km/h, S-Bahn 40 km/h — rounded up to whole
  seconds, as an ``xsd:duration``. The N-Triples file says so in a header comment and in an
  ``rdfs:comment`` on ``:dur``.

Bad rows are never silently dropped: each goes to the rejects (file, line, reason, raw), is
counted by reason in the summary, and ``--rejects FILE`` writes them as CSV. A file that cannot be
read at all (missing, wrong header) stops the build with :class:`ViennaDataError` naming file and
line.

CLI: ``python -m ontologies.vienna --out vienna.nt [--data-dir D] [--rejects rejects.csv]``,
prints a JSON summary.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ontologies.data import data_dir
from rdfcore.errors import SidecarError
from rdfcore.progress import Progress
from rdfcore.terms import literal, write_ntriples
from rdfcore.vocab import RDF_TYPE, RDFS_LABEL, RDFS_NS, XSD_DECIMAL, XSD_INTEGER, XSD_NS, iri

VIENNA_NS = "http://example.org/vienna#"
GEO_NS = "http://www.w3.org/2003/01/geo/wgs84_pos#"
XSD_DURATION = iri(XSD_NS + "duration")
RDFS_COMMENT = iri(RDFS_NS + "comment")


def v(local: str) -> str:
    """An N-Triples IRI in the Vienna namespace."""
    return iri(VIENNA_NS + local)


BEG, END, MEANS, DUR, LINE = v("beg"), v("end"), v("means"), v("dur"), v("line")
BEG_POINT, END_POINT, DISTANCE, AT_STATION = v("begPoint"), v("endPoint"), v("distance"), v("atStation")
TRANSPORT_TYPE = v("transportType")
STOP, STOP_POINT, LINE_CLASS = v("Stop"), v("StopPoint"), v("Line")
GEO_LAT, GEO_LONG = iri(GEO_NS + "lat"), iri(GEO_NS + "long")

SUBWAY, TRAM, BUS, TRAIN = v("subway"), v("tram"), v("bus"), v("train")
#: linien.MeansOfTransport -> the :means of its connections (see the module docstring).
MEANS_OF_TRANSPORT = {
    "ptMetro": SUBWAY,
    "ptTram": TRAM,
    "ptTramWLB": TRAM,
    "ptBusCity": BUS,
    "ptBusNight": BUS,
    "ptRufBus": BUS,
    "ptTrainS": TRAIN,
}
#: Typical average speed (km/h, stops included) per linien.MeansOfTransport, for :dur estimates.
SPEED_KMH = {
    "ptMetro": 32.0,
    "ptTram": 15.0,
    "ptTramWLB": 30.0,
    "ptBusCity": 17.0,
    "ptBusNight": 20.0,
    "ptRufBus": 20.0,
    "ptTrainS": 40.0,
}
EARTH_RADIUS_M = 6_371_008.8  # mean Earth radius (IUGG)

LINES_FILE = "vienna/wienerlinien-ogd-linien.csv"
PATTERNS_FILE = "vienna/wienerlinien-ogd-fahrwegverlaeufe.csv"
STOP_POINTS_FILE = "vienna/wienerlinien-ogd-haltepunkte.csv"
STATIONS_FILE = "vienna/wienerlinien-ogd-haltestellen.csv"
LINES_COLUMNS = ("LineID", "LineText", "SortingHelp", "Realtime", "MeansOfTransport")
PATTERNS_COLUMNS = ("LineID", "PatternID", "StopSeqCount", "StopID", "Direction")
STOP_POINTS_COLUMNS = ("StopID", "DIVA", "StopText", "Municipality", "MunicipalityID", "Longitude", "Latitude")
STATIONS_COLUMNS = ("DIVA", "PlatformText", "Municipality", "MunicipalityID", "Longitude", "Latitude")

STEPHANSPLATZ_DIVA = "60201320"
_ID = re.compile(r"^[0-9]+$")
_DECIMAL = re.compile(r"^[+-]?[0-9]+(\.[0-9]+)?$")

DUR_COMMENT = ("Estimated travel time, not from the source: the great-circle distance between the two stop "
               "points divided by a typical average speed of the line's type (km/h: " +
               ", ".join(f"{k} {v:g}" for k, v in SPEED_KMH.items()) + "), rounded up to whole seconds.")


def station_iri(diva: str) -> str:
    """``<http://example.org/vienna#st60201320>`` for DIVA 60201320."""
    return v("st" + diva)


def stop_point_iri(stop_id: str) -> str:
    return v("sp" + stop_id)


def line_iri(line_id: str) -> str:
    return v("line" + line_id)


def connection_iri(line_id: str, from_stop: str, to_stop: str) -> str:
    return v(f"conn_{line_id}_{from_stop}_{to_stop}")


STEPHANSPLATZ = station_iri(STEPHANSPLATZ_DIVA)


class ViennaDataError(SidecarError, ValueError):
    """A source file that cannot be used at all; names the file and line."""

    def __init__(self, path: str | Path, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line = str(path), line


@dataclass(frozen=True)
class Reject:
    """A row left out of the graph: 1-based line of its file, why, and the raw text."""

    file: str
    line: int
    reason: str
    raw: str


@dataclass(frozen=True)
class Station:
    diva: str
    name: str
    lat: float | None = None
    lon: float | None = None
    lat_text: str | None = None
    lon_text: str | None = None


@dataclass(frozen=True)
class StopPoint:
    stop_id: str
    diva: str
    name: str
    lat: float
    lon: float
    lat_text: str
    lon_text: str


@dataclass(frozen=True)
class Line:
    line_id: str
    text: str
    transport_type: str

    @property
    def means(self) -> str:
        return MEANS_OF_TRANSPORT[self.transport_type]


@dataclass(frozen=True)
class Connection:
    line_id: str
    from_stop: str
    to_stop: str
    from_station: str
    to_station: str
    metres: int
    seconds: int

    @property
    def iri(self) -> str:
        return connection_iri(self.line_id, self.from_stop, self.to_stop)


@dataclass
class Network:
    stations: dict[str, Station]
    stop_points: dict[str, StopPoint]
    lines: dict[str, Line]
    connections: dict[tuple[str, str, str], Connection]
    rejects: list[Reject]
    counts: Counter = field(default_factory=Counter)  # duplicates, bridged hops, ...

    def rejects_by_reason(self) -> dict[str, int]:
        return dict(sorted(Counter(f"{Path(r.file).name}: {_reason_kind(r.reason)}" for r in self.rejects).items()))


def _reason_kind(reason: str) -> str:
    """The reason without the row-specific values (for counting): text before the first ':'."""
    return reason.split(":")[0]


def _rows(path: Path, columns: Sequence[str]) -> Iterator[tuple[int, list[str], str]]:
    """(line number, fields, raw line) of the data rows; checks the header."""
    if not path.is_file():
        raise ViennaDataError(path, 0, "no such file")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        lines = iter(handle)
        header = next(lines, None)
        if header is None:
            raise ViennaDataError(path, 1, f"empty file; expected the header {';'.join(columns)!r}")
        got = header.rstrip("\r\n").split(";")
        if tuple(got) != tuple(columns):
            raise ViennaDataError(path, 1, f"expected the header {';'.join(columns)!r}, got {';'.join(got)!r}")
        for number, raw in enumerate(lines, start=2):
            text = raw.rstrip("\r\n")
            if not text.strip():
                continue
            yield number, next(csv.reader([text], delimiter=";")), text


def _coordinate(text: str, low: float, high: float) -> float | None:
    if not _DECIMAL.match(text):
        return None
    value = float(text)
    return value if low <= value <= high else None


def read_stations(path: Path, rejects: list[Reject]) -> dict[str, Station]:
    """haltestellen: DIVA -> Station; the ``Longitude`` column holds latitudes and vice versa."""
    stations: dict[str, Station] = {}
    for number, row, raw in _rows(path, STATIONS_COLUMNS):
        if len(row) != len(STATIONS_COLUMNS):
            rejects.append(Reject(str(path), number, f"wrong number of fields: expected {len(STATIONS_COLUMNS)}, "
                                                     f"got {len(row)}", raw))
            continue
        diva, name, _, _, lat_text, lon_text = row  # swapped in the source: see the module docstring
        if not _ID.match(diva):
            rejects.append(Reject(str(path), number, f"bad DIVA: expected digits, got {diva!r}", raw))
            continue
        if diva in stations:
            rejects.append(Reject(str(path), number, f"duplicate DIVA: {diva} is already defined", raw))
            continue
        lat, lon = _coordinate(lat_text, -90, 90), _coordinate(lon_text, -180, 180)
        if lat is None or lon is None:
            rejects.append(Reject(str(path), number, f"no coordinates: station {diva} kept without them "
                                                     f"(latitude {lat_text!r}, longitude {lon_text!r})", raw))
            stations[diva] = Station(diva, name)
            continue
        stations[diva] = Station(diva, name, lat, lon, lat_text, lon_text)
    return stations


def read_stop_points(path: Path, stations: dict[str, Station], rejects: list[Reject]) -> dict[str, StopPoint]:
    """haltepunkte: StopID -> StopPoint, only those with a DIVA and coordinates (others rejected).

    A DIVA missing from haltestellen gets a station named after the stop point, without coordinates.
    """
    points: dict[str, StopPoint] = {}
    for number, row, raw in _rows(path, STOP_POINTS_COLUMNS):
        if len(row) != len(STOP_POINTS_COLUMNS):
            rejects.append(Reject(str(path), number, f"wrong number of fields: expected {len(STOP_POINTS_COLUMNS)}, "
                                                     f"got {len(row)}", raw))
            continue
        stop_id, diva, name, _, _, lon_text, lat_text = row
        if not _ID.match(stop_id):
            rejects.append(Reject(str(path), number, f"bad StopID: expected digits, got {stop_id!r}", raw))
            continue
        if stop_id in points:
            rejects.append(Reject(str(path), number, f"duplicate StopID: {stop_id} is already defined", raw))
            continue
        if not _ID.match(diva):
            rejects.append(Reject(str(path), number, f"no station: stop point {stop_id} ({name}) has no DIVA", raw))
            continue
        lat, lon = _coordinate(lat_text, -90, 90), _coordinate(lon_text, -180, 180)
        if lat is None or lon is None:
            rejects.append(Reject(str(path), number, f"no coordinates: stop point {stop_id} ({name}) has latitude "
                                                     f"{lat_text!r}, longitude {lon_text!r}", raw))
            continue
        points[stop_id] = StopPoint(stop_id, diva, name, lat, lon, lat_text, lon_text)
        if diva not in stations:
            stations[diva] = Station(diva, name)
    return points


def read_lines(path: Path, rejects: list[Reject]) -> dict[str, Line]:
    lines: dict[str, Line] = {}
    for number, row, raw in _rows(path, LINES_COLUMNS):
        if len(row) != len(LINES_COLUMNS):
            rejects.append(Reject(str(path), number, f"wrong number of fields: expected {len(LINES_COLUMNS)}, "
                                                     f"got {len(row)}", raw))
            continue
        line_id, text, _, _, transport = row
        if not _ID.match(line_id):
            rejects.append(Reject(str(path), number, f"bad LineID: expected digits, got {line_id!r}", raw))
            continue
        if line_id in lines:
            rejects.append(Reject(str(path), number, f"duplicate LineID: {line_id} is already defined", raw))
            continue
        if transport not in MEANS_OF_TRANSPORT:
            rejects.append(Reject(str(path), number, f"unknown MeansOfTransport: {transport!r}; expected one of "
                                                     f"{', '.join(MEANS_OF_TRANSPORT)}", raw))
            continue
        lines[line_id] = Line(line_id, text, transport)
    return lines


def great_circle_metres(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Haversine distance on a sphere of the mean Earth radius."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def travel_seconds(metres: float, transport_type: str) -> int:
    """Estimated travel time: distance / typical speed of the type, rounded up to whole seconds."""
    return math.ceil(metres / (SPEED_KMH[transport_type] / 3.6))


def xsd_duration(seconds: int) -> str:
    """Canonical ``xsd:duration`` lexical form of whole seconds: 0 -> PT0S, 125 -> PT2M5S."""
    if seconds < 0:
        raise ValueError(f"negative duration {seconds}")
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = "PT" + (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "") + (f"{secs}S" if secs else "")
    return text if text != "PT" else "PT0S"


def read_connections(path: Path, lines: dict[str, Line], points: dict[str, StopPoint], rejects: list[Reject],
                     counts: Counter) -> dict[tuple[str, str, str], Connection]:
    """fahrwegverlaeufe: consecutive placed stops of a pattern -> connections (see the module docstring)."""
    patterns: dict[tuple[str, str], list[tuple[int, int, str | None]]] = defaultdict(list)  # (seq, line, stop)
    for number, row, raw in _rows(path, PATTERNS_COLUMNS):
        if len(row) != len(PATTERNS_COLUMNS):
            rejects.append(Reject(str(path), number, f"wrong number of fields: expected {len(PATTERNS_COLUMNS)}, "
                                                     f"got {len(row)}", raw))
            continue
        line_id, pattern_id, seq, stop_id, direction = row
        if not (_ID.match(line_id) and _ID.match(pattern_id) and _ID.match(seq) and _ID.match(stop_id)):
            rejects.append(Reject(str(path), number, "bad number: LineID, PatternID, StopSeqCount and StopID must be "
                                                     "digits", raw))
            continue
        if direction not in ("1", "2"):
            rejects.append(Reject(str(path), number, f"bad Direction: expected 1 or 2, got {direction!r}", raw))
            continue
        if line_id not in lines:
            rejects.append(Reject(str(path), number, f"unknown line: LineID {line_id} is not in linien", raw))
            continue
        key = (line_id, pattern_id)
        if stop_id not in points:
            rejects.append(Reject(str(path), number, f"unplaced stop point: StopID {stop_id} has no station or "
                                                     f"coordinates in haltepunkte", raw))
            patterns[key].append((int(seq), number, None))  # a gap: the pattern is bridged over it
            continue
        patterns[key].append((int(seq), number, stop_id))
    connections: dict[tuple[str, str, str], Connection] = {}
    for (line_id, _pattern), stops in patterns.items():
        stops.sort()
        line = lines[line_id]
        previous: str | None = None
        last_seq: int | None = None
        gap = False
        for seq, _number, stop_id in stops:
            if seq == last_seq and stop_id is not None and stop_id == previous:
                counts["duplicate_rows"] += 1  # the same (pattern, seq, stop) listed twice
                continue
            last_seq = seq
            if stop_id is None:
                gap = previous is not None
                continue
            if previous is not None and stop_id != previous:
                a, b = points[previous], points[stop_id]
                if a.diva == b.diva:
                    counts["same_station_hops"] += 1
                else:
                    key3 = (line_id, previous, stop_id)
                    if key3 not in connections:
                        metres = great_circle_metres(a.lat, a.lon, b.lat, b.lon)
                        connections[key3] = Connection(line_id, previous, stop_id, a.diva, b.diva, round(metres),
                                                       travel_seconds(metres, line.transport_type))
                        if gap:
                            counts["bridged_connections"] += 1
            elif previous is not None:
                counts["repeated_stop"] += 1
            previous, gap = stop_id, False
    return connections


def build(directory: str | Path) -> Network:
    """Read the four files under ``directory/vienna/`` into a :class:`Network`."""
    directory = Path(directory)
    rejects: list[Reject] = []
    counts: Counter = Counter()
    stations = read_stations(directory / STATIONS_FILE, rejects)
    points = read_stop_points(directory / STOP_POINTS_FILE, stations, rejects)
    lines = read_lines(directory / LINES_FILE, rejects)
    connections = read_connections(directory / PATTERNS_FILE, lines, points, rejects, counts)
    return Network(stations, points, lines, connections, rejects, counts)


def _decimal(text: str) -> str:
    return literal(text, datatype=XSD_DECIMAL)


def place_triples(s: str, klass: str, label: str, lat_text: str | None, lon_text: str | None) -> list[str]:
    """A stop's (or stop point's) class, label and coordinates, as N-Triples lines."""
    out = [f"{s} {RDF_TYPE} {klass} .\n", f"{s} {RDFS_LABEL} {literal(label)} .\n"]
    if lat_text is not None:
        out += [f"{s} {GEO_LAT} {_decimal(lat_text)} .\n", f"{s} {GEO_LONG} {_decimal(lon_text)} .\n"]
    return out


def line_triples(s: str, label: str, means: str) -> list[str]:
    """A line's class, label and means of transport."""
    return [f"{s} {RDF_TYPE} {LINE_CLASS} .\n", f"{s} {RDFS_LABEL} {literal(label)} .\n", f"{s} {MEANS} {means} .\n"]


def connection_triples(s: str, beg: str, end: str, means: str, line: str | None, metres: int,
                       seconds: int) -> list[str]:
    """A connection: its ends, means, line (if any), distance and estimated duration."""
    out = [f"{s} {BEG} {beg} .\n", f"{s} {END} {end} .\n", f"{s} {MEANS} {means} .\n"]
    if line is not None:
        out.append(f"{s} {LINE} {line} .\n")
    out += [f"{s} {DISTANCE} {literal(str(metres), datatype=XSD_INTEGER)} .\n",
            f"{s} {DUR} {literal(xsd_duration(seconds), datatype=XSD_DURATION)} .\n"]
    return out


def triples(network: Network) -> list[str]:
    """The network as N-Triples lines (sorted, each ending with a newline)."""
    out: list[str] = []
    add = out.append
    for st in network.stations.values():
        out += place_triples(station_iri(st.diva), STOP, st.name, st.lat_text, st.lon_text)
    for sp in network.stop_points.values():
        s = stop_point_iri(sp.stop_id)
        out += place_triples(s, STOP_POINT, sp.name, sp.lat_text, sp.lon_text)
        add(f"{s} {AT_STATION} {station_iri(sp.diva)} .\n")
    for ln in network.lines.values():
        s = line_iri(ln.line_id)
        out += line_triples(s, ln.text, ln.means)
        add(f"{s} {TRANSPORT_TYPE} {literal(ln.transport_type)} .\n")
    for c in network.connections.values():
        s = c.iri
        out += connection_triples(s, station_iri(c.from_station), station_iri(c.to_station),
                                  network.lines[c.line_id].means, line_iri(c.line_id), c.metres, c.seconds)
        add(f"{s} {BEG_POINT} {stop_point_iri(c.from_stop)} .\n")
        add(f"{s} {END_POINT} {stop_point_iri(c.to_stop)} .\n")
    add(f"{DUR} {RDFS_COMMENT} {literal(DUR_COMMENT)} .\n")
    add(f"{DISTANCE} {RDFS_COMMENT} {literal('Great-circle distance in metres between the two stop points.')} .\n")
    out.sort()
    return out


#: the comment lines the N-Triples file starts with
HEADER = (
    "# Wiener Linien network (Datenquelle: Stadt Wien - data.wien.gv.at, CC BY 4.0), built by ontologies/vienna.py.\n"
    "# Nodes are stations (DIVA); :beg/:end of a connection are stations, :begPoint/:endPoint its stop points.\n"
    "# :dur is an ESTIMATE (the source has no travel times): " + DUR_COMMENT + "\n"
)


def write_rejects(network: Network, out_path: str | Path) -> int:
    with open(out_path, "w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(("file", "line", "reason", "raw"))
        writer.writerows((r.file, r.line, r.reason, r.raw) for r in network.rejects)
    return len(network.rejects)


def summary(network: Network, source: Path) -> dict[str, object]:
    means = Counter(network.lines[c.line_id].means for c in network.connections.values())
    return {
        "source": str(source),
        "stations": len(network.stations),
        "stations_without_coordinates": sum(1 for s in network.stations.values() if s.lat is None),
        "stop_points": len(network.stop_points),
        "lines": len(network.lines),
        "connections": len(network.connections),
        "connections_by_means": {k[len("<" + VIENNA_NS):-1]: n for k, n in sorted(means.items())},
        **{k: network.counts.get(k, 0) for k in ("bridged_connections", "same_station_hops", "duplicate_rows",
                                                 "repeated_stop")},
        "rejected": len(network.rejects),
        "rejects_by_reason": network.rejects_by_reason(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints a one-line JSON summary."""
    parser = argparse.ArgumentParser(prog="python -m ontologies.vienna", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", help="data directory (default: $RSP_DATA_DIR or <repo>/../shared/data)")
    parser.add_argument("--out", required=True, help="N-Triples file to write")
    parser.add_argument("--rejects", metavar="FILE", help="also write the rejected rows as CSV (file,line,reason,raw)")
    args = parser.parse_args(argv)
    try:
        source = data_dir(args.data_dir)
        started = time.perf_counter()
        progress = Progress("vienna")
        network = build(source)
        progress.phase("network built from the Wiener Linien CSVs")
        report = summary(network, source / "vienna")
        report["triples"] = write_ntriples(args.out, triples(network), HEADER)
        progress.phase(f"{args.out} written", rows=report["triples"])
        report["out"] = str(args.out)
        if args.rejects:
            write_rejects(network, args.rejects)
            report["rejects_out"] = str(args.rejects)
            progress.phase(f"{args.rejects} written")
        report["seconds"] = round(time.perf_counter() - started, 3)
    except (FileNotFoundError, ViennaDataError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
