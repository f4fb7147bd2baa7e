"""Vienna transit alerts: DESIGN.md's CQELS-CEP query, continuously, over the real Wiener Linien network.

Stops from which the centre is reachable by subway, where a subway was delayed twice within ten
minutes and did not arrive afterwards (``ontologies/vienna_example_query.rq``; the answers and
their intervals are those of ``cep.evaluate`` at every instant, reported once: ``cep.continuous.runner``).

Two worlds, each a static side, the query, and what a seeded stream draws from:

* :func:`real_network` — the Wiener Linien network (``ontologies.vienna``, read from the data
  directory, never copied), the centre a real station (Stephansplatz by default; a DIVA number or
  a station name), and a fleet of vehicles of which some are subways (``vehicles.nt``; the open
  data has no vehicle list, so the fleet is synthetic and says so). Events happen at real
  stations, 70 % of them at stations a subway line serves.
* :func:`example_map` — the paper's tiny example (``vienna_example.ttl``): its stream
  (``vienna_example_stream.jsonl``) gives the one answer ``:m`` over ``[10, 16]``.

:func:`write_stream` writes a seeded stream of ``:delayAt`` (80 %) and ``:arriveAt`` events, one
JSON Lines file per ``batch_minutes``, time in minutes; the same arguments give the same bytes.
"""
from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from ontologies.data import data_dir as find_data_dir
from rdfcore import resources
from rdfcore.errors import SidecarError

__all__ = ["STREAM", "MAP", "CENTRE", "World", "real_network", "example_map", "network_world", "write_stream",
           "TransitError"]

STREAM = "<http://example.org/publicTransport>"
MAP = "<http://example.org/transportationMap>"
VIENNA = "http://example.org/vienna#"
CENTRE = "60201320"          # Stephansplatz (DIVA)
_RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


class TransitError(SidecarError, ValueError):
    """An unknown centre station or a bad fleet size."""


@dataclass
class World:
    """A static side (graph IRI → files), the query text, and what events are drawn from."""

    static: dict
    query: str
    vehicles: list
    stops: list
    subway_stops: list = field(default_factory=list)
    centre: str = ":c"

    def stop(self, rng: random.Random) -> str:
        if self.subway_stops and rng.random() < 0.7:
            return rng.choice(self.subway_stops)
        return rng.choice(self.stops)


def _query_text() -> str:
    return resources.text("ontologies", "vienna_example_query.rq")


def example_map() -> World:
    """The running example: four vehicles (:a1, :d1 subways), five stops, the centre :c."""
    return World({MAP: [resources.path("ontologies", "vienna_example.ttl")]}, _query_text(),
                 [":a1", ":d1", ":x1", ":x2"], [":m", ":b", ":h", ":g", ":c"])


def example_stream() -> Path:
    return resources.path("ontologies", "vienna_example_stream.jsonl")


def real_network(work: str | Path, data_dir: str | None = None, vehicles: int = 60, subways: int = 20,
                 centre: str = CENTRE) -> World:
    """Build the network into ``work/network.nt`` (again only when missing) and a fleet into
    ``work/vehicles.nt``; the query's centre becomes ``centre`` (DIVA or station name)."""
    from ontologies import vienna
    from rdfcore.terms import write_ntriples

    if vehicles < 1 or not 0 <= subways <= vehicles:
        raise TransitError(f"a fleet of {vehicles} vehicles with {subways} subways: need 0 <= subways <= vehicles >= 1")
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    network = vienna.build(find_data_dir(data_dir))
    diva = _station(network, centre)
    nt = work / "network.nt"
    if not nt.exists():
        tmp = work / ".network.nt.tmp"
        write_ntriples(tmp, vienna.triples(network), vienna.HEADER)
        os.replace(tmp, nt)
    fleet = [f"veh{i}" for i in range(vehicles)]
    with open(work / "vehicles.nt", "w", encoding="utf-8") as out:
        for i, name in enumerate(fleet):
            kind = "subway" if i < subways else ("tram" if i < subways + (vehicles - subways) // 2 else "bus")
            out.write(f"<{VIENNA}{name}> {_RDF_TYPE} <{VIENNA}{kind}> .\n")
    subway_stations = sorted({c.from_station for c in network.connections.values()
                              if network.lines[c.line_id].means == vienna.SUBWAY})
    query = _query_text()
    if ":end)+ :c ." not in query:
        raise TransitError("the shipped query no longer names the centre as :c")
    query = query.replace(":end)+ :c .", f":end)+ :st{diva} .")
    return World({MAP: [nt, work / "vehicles.nt"]}, query, [f":{v}" for v in fleet],
                 sorted(f":st{d}" for d in network.stations), [f":st{d}" for d in subway_stations], f":st{diva}")


def network_world(network: str | None, work: str | Path) -> tuple[str, World]:
    """``network`` ("real", "example", or None: real when the data directory is there) and its
    world (``real_network`` built under ``work``, or ``example_map``)."""
    if network is None:
        try:
            find_data_dir()
            network = "real"
        except FileNotFoundError:
            network = "example"
    return network, real_network(work) if network == "real" else example_map()


def _station(network, centre: str) -> str:
    if centre in network.stations:
        return centre
    named = sorted(d for d, s in network.stations.items() if s.name.casefold() == centre.casefold())
    if not named:
        near = sorted(s.name for s in network.stations.values() if centre.casefold() in s.name.casefold())[:5]
        raise TransitError(f"centre {centre!r} is neither a station's DIVA number nor a station name"
                           + (f"; stations with that in their name: {', '.join(near)}" if near else ""))
    return named[0]


def write_stream(directory: str | Path, minutes: int, per_minute: int, batch_minutes: int, seed: int, world: World,
                 start: int = 0) -> int:
    """The seeded stream (module doc), minutes ``start`` … ``start + minutes - 1``; returns the
    number of events. Files are renamed into place whole, with increasing modification times
    (Spark's file source reads them in that order)."""
    if minutes < 0 or per_minute < 0 or batch_minutes < 1:
        raise TransitError("need minutes >= 0, per_minute >= 0 and batch_minutes >= 1")
    rng = random.Random(seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    n = 0
    for start_minute in range(start, start + minutes, batch_minutes):
        name = f"events-{start_minute:08d}.jsonl"
        tmp = directory / f".{name}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            for t in range(start_minute, min(start_minute + batch_minutes, start + minutes)):
                for _ in range(per_minute):
                    p = ":delayAt" if rng.random() < 0.8 else ":arriveAt"
                    out.write(json.dumps({"s": rng.choice(world.vehicles), "p": p, "o": world.stop(rng), "t": t}) + "\n")
                    n += 1
        stamp = 1_600_000_000 + start_minute
        os.utime(tmp, (stamp, stamp))
        os.replace(tmp, directory / name)
    return n
