"""Milan goods delivery: delivery agents' routes, recomputed as traffic closes connections.

EP-SPARQL's Test 3 as a service over the real Milan network (``ontologies.milan``). Each agent
has an ordered list of locations (stops) to visit. Events arrive as a stream in the formats of
``cep.io.streams`` (JSON Lines or timestamped N-Triples; time in ``time_unit``, seconds by default),
with ``m:`` = ``http://example.org/milan/``:

* ``<connection> m:traffic m:closed`` / ``m:open`` — a connection closes or reopens;
* ``m:agent/ID m:requestsRoute m:next`` — the agent asks for its route to its next location;
* ``m:agent/ID m:arrivedAt <stop>`` — the agent is at a stop (reaching its next location takes
  that location off its list; the rest of a current route beyond the stop is kept).

Semantics. Events are applied in event-time order (ties: file, line). On a request, and whenever
a connection on an agent's current route closes, the agent's route from its position to its next
location is recomputed over the connections open at that moment (``paths.weighted``: the nodes
reachable are the transitive closure of the open connections; the route is the fastest by
``:dur``, ties by fewest hops) and one event is emitted: ``route`` (stops, connections, duration,
hops), ``unreachable`` (the target is not in the closure of open connections — never silence),
or ``finished`` (a request with no location left). Every output carries the agent, the event time
``t``, the ``cause`` (``request`` or ``closed <connection>``), the ``closure_version`` (network
hash and traffic revision: which set of open connections the route was computed over),
``compute_ms`` and ``processed_at``. An event older than the latest event time already processed
is rejected as ``late`` (with the reason, counted), as is any event naming an unknown agent, stop
or connection, or an unknown predicate: nothing is dropped silently.

State — agents' positions, remaining lists and current routes, the closed connections, the
revision, the latest event time — lives in the checkpoint next to Spark's
(``CHECKPOINT/state/<batch>.json``, written by atomic rename). A batch reads the state of the
latest earlier batch, so a batch Spark replays after a crash computes the same outputs and state
again, and its ``DirectorySink`` file is replaced (exactly once).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from cep.io.lineparse import parse_jsonl
from cep.continuous.sinks import write_json_lines, write_jsonl
from cep.continuous.record import MILAN, claim, streams_record
from cep.continuous.sources import FileSource, KafkaSource
from cep.continuous.state import SPARK_DIR
from cep.io.formats import JSONL, TSNT, detect_stream_format
from paths.weighted import Network, Route, spark_route
from rdfcore.errors import SidecarError
from rdfcore import fs
from rdfcore.locations import local_path, location
from rdfcore.schema import FILE, LINE, RAW
from scenarios.batches import batch_files, numbered_lines, parse_slow, run_batches

__all__ = ["M", "PREFIXES", "RoutingError", "Plans", "read_plans", "router_for", "run", "RunSummary", "draw_map"]

M = "http://example.org/milan/"
PREFIXES = {"m": M, "v": "http://example.org/vienna#"}
TRAFFIC, CLOSED, OPEN = f"<{M}traffic>", f"<{M}closed>", f"<{M}open>"
REQUESTS, ARRIVED = f"<{M}requestsRoute>", f"<{M}arrivedAt>"
STATE_DIR, METRICS_FILE = "state", "metrics.jsonl"
ENGINES = ("local", "spark")


class RoutingError(SidecarError, ValueError):
    """Bad agent plans or options."""


def agent_iri(name: str) -> str:
    return f"<{M}agent/{name}>"


@dataclass(frozen=True)
class Plans:
    """Agents (IRI → (start stop, [locations])) as read from a plans file."""

    agents: dict


def _term(text: str, where: str) -> str:
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        return text
    if text.startswith("m:"):
        return f"<{M}{text[2:]}>"
    raise RoutingError(f"{where}: {text!r} is not a stop IRI (<http://...> or m:stop/ID)")


def read_plans(path: str | Path, known_stops=None) -> Plans:
    """``{"agents": [{"id": "a1", "start": STOP, "locations": [STOP, ...]}, ...]}`` (a stop as an
    IRI ``<...>`` or ``m:stop/ID``); every stop must be a node of the network when
    ``known_stops`` is given."""
    path = location(path, "--agents")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RoutingError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("agents"), list):
        raise RoutingError(f'{path}: expected {{"agents": [{{"id": ..., "start": ..., "locations": [...]}}, ...]}}')
    agents = {}
    for k, entry in enumerate(doc["agents"]):
        where = f"{path}: agents[{k}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not isinstance(entry.get("start"), str) \
                or not isinstance(entry.get("locations"), list):
            raise RoutingError(f'{where}: expected {{"id": "a1", "start": STOP, "locations": [STOP, ...]}}')
        iri = agent_iri(entry["id"])
        if iri in agents:
            raise RoutingError(f"{where}: agent {entry['id']!r} planned twice")
        stops = [_term(entry["start"], where)] + [_term(x, f"{where}.locations") if isinstance(x, str) else
                                                  _bad_location(where) for x in entry["locations"]]
        if known_stops is not None:
            unknown = [s for s in stops if s not in known_stops]
            if unknown:
                raise RoutingError(f"{where}: stop(s) not in the network: {', '.join(unknown[:5])}")
        agents[iri] = (stops[0], stops[1:])
    return Plans(agents)


def _bad_location(where: str):
    raise RoutingError(f"{where}.locations: every location must be a string (a stop IRI)")


def router_for(network) -> tuple[Network, str]:
    """The router over an ``ontologies.milan.Network`` (stop and connection IRIs) and the
    network's version (a hash of its connections)."""
    conns = [(c.iri, network.stops[c.beg].iri, network.stops[c.end].iri, c.seconds)
             for c in network.connections.values()]
    digest = hashlib.sha256()
    for key, beg, end, seconds in sorted(conns):
        digest.update(f"{key} {beg} {end} {seconds}\n".encode("utf-8"))
    return Network(conns), "net:" + digest.hexdigest()[:12]


# --- state ------------------------------------------------------------------------------------

@dataclass
class _Agent:
    position: str
    remaining: list
    route: dict | None = None          # {"stops": [...], "connections": [...], "seconds": s}

    def to_json(self) -> dict:
        return {"position": self.position, "remaining": self.remaining, "route": self.route}


@dataclass
class _State:
    agents: dict
    closed: list = field(default_factory=list)
    revision: int = 0
    watermark: int | None = None
    network: str | None = None

    def to_json(self) -> str:
        return json.dumps({"agents": {k: a.to_json() for k, a in sorted(self.agents.items())},
                           "closed": sorted(self.closed), "revision": self.revision, "watermark": self.watermark,
                           "network": self.network}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "_State":
        doc = json.loads(text)
        return cls({k: _Agent(**a) for k, a in doc["agents"].items()}, doc["closed"], doc["revision"],
                   doc["watermark"], doc.get("network"))


def _state_labels(root) -> list[int]:
    if not root.is_dir():
        return []
    return sorted(int(p.stem) for p in root.glob("*.json") if p.stem.isdigit())


# --- the service ------------------------------------------------------------------------------

@dataclass
class RunSummary:
    batches: int = 0
    events: int = 0
    outputs: int = 0
    routes: int = 0
    unreachable: int = 0
    rejected: int = 0
    revision: int = 0
    compute_ms: list = field(default_factory=list)
    batch_seconds: list = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("compute_ms", "batch_seconds")}
        if self.compute_ms:
            ordered = sorted(self.compute_ms)
            out["compute_ms_p50"] = round(ordered[len(ordered) // 2], 3)
            out["compute_ms_p99"] = round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3)
        return out


class _Service:
    def __init__(self, spark, sources, router: Network, version: str, plans: Plans, sink, checkpoint: Path,
                 rejects: Path | None, time_unit: str, metrics: TextIO | None, map_png: Path | None, geometry,
                 on_outputs: Callable | None, engine: str = "local"):
        self.spark, self.sources, self.router, self.network_version = spark, list(sources), router, version
        self.plans, self.sink, self.checkpoint, self.rejects_dir = plans, sink, checkpoint, rejects
        self.time_unit, self.metrics_out, self.map_png, self.geometry = time_unit, metrics, map_png, geometry
        self.on_outputs, self.engine = on_outputs, engine
        self.frame = None                 # the connections as a DataFrame (engine "spark")
        self.summary = RunSummary()
        self.error: BaseException | None = None
        self.state_root = checkpoint / STATE_DIR

    def initial(self) -> _State:
        return _State({a: _Agent(start, list(locations)) for a, (start, locations) in self.plans.agents.items()},
                      network=self.network_version)

    def load(self, batch_id: int | None) -> _State:
        labels = [b for b in _state_labels(self.state_root) if batch_id is None or b < batch_id]
        if not labels:
            return self.initial()
        return _State.from_json((self.state_root / f"{labels[-1]:010d}.json").read_text(encoding="utf-8"))

    def batch(self, lines, batch_id: int) -> None:
        try:
            self._batch(lines, batch_id)
        except BaseException as exc:  # noqa: BLE001 - re-raised by run()
            self.error = exc
            raise

    def _batch(self, lines, batch_id: int) -> None:
        started = time.perf_counter()
        state = self.load(batch_id)
        if state.network != self.network_version:
            raise RoutingError(f"the checkpoint's state was computed over network {state.network}, this run's "
                               f"network is {self.network_version}: start a new checkpoint for a new network")
        # the router's closed set is the state's (a replayed batch starts from the same one)
        self.router.closed = {self.router.index[c] for c in state.closed}
        events, rejects, count = self._events(lines, batch_id)
        events.sort(key=lambda e: (e[3], e[4], e[5]))
        outputs: list[dict] = []
        for s, p, o, t, file, line in events:
            if state.watermark is not None and t < state.watermark:
                rejects.append((file, line, f"late: event time {t} is before {state.watermark}, the latest event time "
                                            f"already processed (routing applies events in time order)", None))
                continue
            why = self._apply(state, s, p, o, t, outputs)
            if why:
                rejects.append((file, line, why, None))
                continue
            state.watermark = t if state.watermark is None else max(state.watermark, t)
        state.closed = sorted(self.router.keys[i] for i in self.router.closed)
        label = f"{batch_id:010d}"
        now = int(time.time() * 1000)
        for out in outputs:
            out["processed_at"] = now
        written = write_json_lines(self.sink, label, (json.dumps(x, ensure_ascii=False) for x in outputs))
        if self.on_outputs is not None:
            self.on_outputs(label, outputs)
        self._rejects(label, rejects, lines_of=self._raw)
        self._write_state(batch_id, state)
        if self.map_png is not None:
            draw_map(self.geometry, self.router, state, self.map_png)
        seconds = time.perf_counter() - started
        s_ = self.summary
        s_.batches += 1
        s_.events += count
        s_.outputs += written
        s_.routes += sum(1 for x in outputs if x["event"] == "route")
        s_.unreachable += sum(1 for x in outputs if x["event"] == "unreachable")
        s_.rejected += len(rejects)
        s_.revision = state.revision
        s_.compute_ms += [x["compute_ms"] for x in outputs if "compute_ms" in x]
        s_.batch_seconds.append(seconds)
        record = {"batch": batch_id, "events": count, "outputs": written, "rejected": len(rejects),
                  "seconds": round(seconds, 4), "revision": state.revision, "closed": len(state.closed)}
        text = json.dumps(record)
        print(text, file=self.metrics_out or sys.stderr, flush=True)
        fs.append_text(self.checkpoint / METRICS_FILE, text + "\n")

    # -- events ---------------------------------------------------------------------------------
    def _events(self, lines, batch_id: int):
        """Parsed events ``(s, p, o, t, file, line)`` of the batch, rejects, and the line count."""
        self._raw = {}
        rows = []                         # (file, line, raw, fmt)
        files = None
        if all(isinstance(s, FileSource) for s in self.sources):
            files = []
            for i, source in enumerate(self.sources):
                paths = batch_files(self.checkpoint / SPARK_DIR, batch_id, i)
                if paths is None:
                    files = None
                    break
                files.extend((str(p), source.fmt) for p in paths)
        if files is not None:
            from cep.io.tsnt import read_lines

            for file, fmt in files:
                kind = fmt or _format(file)
                for first, chunk in read_lines(file):
                    rows.extend((file, first + k, raw, kind) for k, raw in enumerate(chunk.to_pylist()))
        else:
            for r in numbered_lines(lines).collect():
                src = self.sources[r["_source"]]
                rows.append((r[FILE], r[LINE], r[RAW], src.fmt or _format(r[FILE])))
        events, slow = [], []
        for file, line, raw, kind in rows:
            self._raw[(file, line)] = raw
            parsed = parse_jsonl(raw, file, line, PREFIXES) if kind == JSONL else None
            if parsed is None:
                if raw.strip() and not (kind == TSNT and raw.lstrip().startswith("#")):
                    slow.append((file, line, raw, kind))
                continue
            events += [(s, p, o, t1, file, line) for (_item, s, p, o, t1, _t2) in parsed]
        terms, bad = parse_slow(self.spark, slow, PREFIXES, self.time_unit)
        events += [(s, p, o, t1, file, line) for s, p, o, t1, _t2, file, line in terms]
        return events, [(f, n, why, None) for f, n, why, _raw in bad], sum(1 for r in rows if r[2].strip())

    def _apply(self, state: _State, s: str, p: str, o: str, t: int, outputs: list) -> str | None:
        """Apply one event; returns why it is rejected, or None."""
        if p == TRAFFIC:
            if s not in self.router:
                return f"unknown connection {s} (not in the network)"
            if o == CLOSED:
                if self.router.close(s):
                    state.revision += 1
                    for name in sorted(state.agents):
                        agent = state.agents[name]
                        if agent.route and s in agent.route["connections"]:
                            self._recompute(state, name, agent, t, f"closed {s}", outputs)
                return None
            if o == OPEN:
                if self.router.reopen(s):
                    state.revision += 1
                return None
            return f"traffic status {o}: expected {CLOSED} or {OPEN}"
        if p in (REQUESTS, ARRIVED):
            agent = state.agents.get(s)
            if agent is None:
                return f"unknown agent {s} (not in the plans)"
            if p == REQUESTS:
                self._recompute(state, s, agent, t, "request", outputs)
                return None
            if o not in self.router.out:
                return f"unknown stop {o} (not in the network)"
            agent.position = o
            if agent.remaining and agent.remaining[0] == o:
                agent.remaining.pop(0)
                agent.route = None
            elif agent.route and o in agent.route["stops"]:
                k = agent.route["stops"].index(o)
                agent.route = {"stops": agent.route["stops"][k:], "connections": agent.route["connections"][k:],
                               "seconds": None}
            else:
                agent.route = None             # off its route: the next request plans again
            return None
        return f"unknown predicate {p}: expected {TRAFFIC}, {REQUESTS} or {ARRIVED}"

    def _recompute(self, state: _State, name: str, agent: _Agent, t: int, cause: str, outputs: list) -> None:
        base = {"agent": name, "from": agent.position, "t": t, "cause": cause,
                "closure_version": f"{self.network_version}/r{state.revision}"}
        if not agent.remaining:
            agent.route = None
            outputs.append({"event": "finished", **base})
            return
        target = agent.remaining[0]
        started = time.perf_counter()
        route: Route | None = self._route(agent.position, target)
        compute_ms = (time.perf_counter() - started) * 1000
        if route is None:
            agent.route = None
            outputs.append({"event": "unreachable", **base, "to": target, "compute_ms": round(compute_ms, 3)})
            return
        agent.route = {"stops": list(route.stops), "connections": list(route.connections), "seconds": route.seconds}
        outputs.append({"event": "route", **base, "to": target, "stops": list(route.stops),
                        "connections": list(route.connections), "duration_s": route.seconds, "hops": route.hops,
                        "compute_ms": round(compute_ms, 3)})

    def _route(self, source: str, target: str) -> Route | None:
        if self.engine != "spark":
            return self.router.route(source, target)

        if self.frame is None:
            r = self.router
            self.frame = self.spark.createDataFrame(
                [(r.keys[i], r.beg[i], r.end[i], r.seconds[i]) for i in range(len(r.keys))],
                "key string, beg string, end string, seconds long").cache()
        return spark_route(self.frame, source, target, [self.router.keys[i] for i in self.router.closed])

    # -- output ---------------------------------------------------------------------------------
    def _rejects(self, label: str, rejects: list, lines_of: dict) -> None:
        if rejects and self.rejects_dir is not None:
            self.rejects_dir.mkdir(parents=True, exist_ok=True)
            write_jsonl(self.rejects_dir / f"part-{label}.jsonl",
                         ({"file": f, "line": n, "reason": why, "raw": lines_of.get((f, n))}
                          for f, n, why, _raw in sorted(rejects, key=lambda r: (r[0], r[1]))))

    def _write_state(self, batch_id: int, state: _State) -> None:
        self.state_root.mkdir(parents=True, exist_ok=True)
        fs.write_atomically(self.state_root / f"{batch_id:010d}.json", state.to_json())
        for old in _state_labels(self.state_root):        # keep this batch's and the previous one
            if old < batch_id - 1:
                (self.state_root / f"{old:010d}.json").unlink(missing_ok=True)


def _format(file: str) -> str | None:
    try:
        return detect_stream_format(Path(file))
    except SidecarError:
        return None


def draw_map(geometry: dict, router: Network, state: _State, out_png: str | Path) -> None:
    """A PNG of the network (grey), closed connections (red) and each agent's current route
    (a colour per agent; a dot at its position, a star at its next location)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    def segment(i: int):
        a, b = geometry.get(router.beg[i]), geometry.get(router.end[i])
        return None if a is None or b is None else [(a[1], a[0]), (b[1], b[0])]

    fig, ax = plt.subplots(figsize=(10, 10), dpi=110)
    every = [seg for i in range(len(router.keys)) if i not in router.closed and (seg := segment(i))]
    ax.add_collection(LineCollection(every, colors="#c8c8c8", linewidths=0.5))
    closed = [seg for i in sorted(router.closed) if (seg := segment(i))]
    ax.add_collection(LineCollection(closed, colors="#d62728", linewidths=1.6, label=f"closed ({len(closed)})"))
    palette = plt.get_cmap("tab10")
    for k, (name, agent) in enumerate(sorted(state.agents.items())):
        colour = palette(k % 10)
        if agent.route:
            segs = [seg for c in agent.route["connections"] if (seg := segment(router.index[c]))]
            ax.add_collection(LineCollection(segs, colors=[colour], linewidths=2.2))
        here = geometry.get(agent.position)
        if here:
            ax.plot(here[1], here[0], "o", color=colour, markersize=6)
        if agent.remaining and geometry.get(agent.remaining[0]):
            there = geometry[agent.remaining[0]]
            ax.plot(there[1], there[0], "*", color=colour, markersize=11)
    lats = [p[0] for p in geometry.values()]
    lons = [p[1] for p in geometry.values()]
    ax.set_xlim(min(lons) - 0.005, max(lons) + 0.005)
    ax.set_ylim(min(lats) - 0.005, max(lats) + 0.005)
    ax.set_aspect(1 / 0.7)                 # ~cos(45.5°): metres the same both ways
    ax.set_title(f"Milan: {len(state.agents)} agents, {len(closed)} closed connections, traffic revision "
                 f"{state.revision}, event time {state.watermark}")
    ax.legend(loc="lower left")
    ax.set_xlabel("longitude")
    ax.set_ylabel("latitude")
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_png.with_name(f".{out_png.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, out_png)


def run(spark, sources: Sequence[FileSource | KafkaSource], *, network, plans: Plans, sink, checkpoint: str | Path,
        trigger: str = "available-now", rejects: str | Path | None = None, time_unit: str = "s",
        metrics: TextIO | None = None, timeout: float | None = None, map_png: str | Path | None = None,
        on_outputs: Callable | None = None, engine: str = "local") -> RunSummary:
    """Run the routing service over ``sources`` (module doc). ``network``: an
    ``ontologies.milan.Network``; ``plans``: :func:`read_plans`. ``engine``: where routes are
    searched — ``local`` (the driver, ``paths.weighted.Network``: milliseconds on a city) or
    ``spark`` (``paths.weighted.spark_route``: a Spark job per round, for networks beyond the
    driver; the same routes)."""
    if engine not in ENGINES:
        raise RoutingError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    if not sources:
        raise RoutingError("no stream source given")
    router, version = router_for(network)
    missing = [s for start, locations in plans.agents.values() for s in [start, *locations] if s not in router.out]
    if missing:
        raise RoutingError(f"the plans name stops not in the network: {', '.join(sorted(set(missing))[:5])}")
    checkpoint = location(checkpoint, "the checkpoint")
    # the state's event times are in time_unit, Spark's offsets the sources': a restart keeps them
    claim(checkpoint, {"engine": MILAN, "time_unit": time_unit, "streams": streams_record(sources)})
    geometry = {st.iri: (st.lat, st.lon) for st in network.stops.values()}
    service = _Service(spark, sources, router, version, plans, sink, checkpoint,
                       location(rejects, "the rejects directory") if rejects else None, time_unit, metrics,
                       local_path(map_png, "--map") if map_png else None, geometry, on_outputs, engine)
    if hasattr(sink, "bind"):
        sink.bind(spark)
    run_batches(spark, sources, service.batch, checkpoint, trigger, timeout, lambda: service.error)
    if map_png is not None and service.summary.batches == 0:
        draw_map(geometry, router, service.load(None), local_path(map_png, "--map"))
    return service.summary
