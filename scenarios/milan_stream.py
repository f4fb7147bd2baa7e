"""A seeded, replayable day of Milan deliveries: agents' plans and their stream of events.

:func:`plan_agents` gives each agent a start and ``locations`` stops drawn from the network's
largest strongly connected part (every leg has a route while everything is open).
:func:`write_stream` writes what happens, in event time (seconds):

* each agent requests its route, travels its leg for the nominal time (the fastest route with
  everything open) plus a dwell of 1-10 minutes, arrives (``m:arrivedAt``), and requests again;
* traffic closes ``closed_share`` (default 60 %, as in the paper: more than half) of the
  connections on the agents' nominal routes, at random times over the day; ``reopen_share`` of
  the closures end after 5-60 minutes (``m:traffic m:open``).

Events go into one JSON Lines file per ``file_seconds`` of event time, renamed into place whole,
with increasing modification times (Spark's file source reads them in that order). The same
arguments give the same bytes.
"""
from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

from paths.weighted import Network
from scenarios.milan_routing import ARRIVED, CLOSED, M, OPEN, REQUESTS, TRAFFIC, agent_iri

__all__ = ["core_stops", "plan_agents", "write_stream"]

_HUB = f"<{M}metro/DUOMO>"


def core_stops(router: Network, hub: str = _HUB) -> list[str]:
    """Stops that reach ``hub`` and are reached from it (sorted): any two are connected."""
    if hub not in router.out:
        hub = max(router.out, key=lambda n: len(router.out[n]))
    forward = router.reachable(hub) | {hub}
    back: dict = {}
    for i in range(len(router.keys)):
        back.setdefault(router.end[i], []).append(router.beg[i])
    seen, stack = {hub}, [hub]
    while stack:
        for prev in back.get(stack.pop(), ()):
            if prev not in seen:
                seen.add(prev)
                stack.append(prev)
    return sorted(forward & seen)


def plan_agents(router: Network, agents: int, locations: int, seed: int = 0) -> dict:
    """A plans document (``scenarios.milan_routing.read_plans``) for ``agents`` agents."""
    if agents < 1 or locations < 1:
        raise ValueError("need at least one agent and one location")
    rng = random.Random(seed)
    core = core_stops(router)
    plans = []
    for a in range(agents):
        stops = rng.sample(core, min(len(core), locations + 1))
        plans.append({"id": f"a{a}", "start": stops[0], "locations": stops[1:]})
    return {"agents": plans}


def write_stream(router: Network, plans: dict, directory: str | Path, *, seed: int = 0, closed_share: float = 0.6,
                 reopen_share: float = 0.5, file_seconds: int = 1800) -> dict:
    """Write the day's events (module doc); returns counts."""
    if not 0 <= closed_share <= 1 or not 0 <= reopen_share <= 1 or file_seconds < 1:
        raise ValueError("shares must be between 0 and 1, file_seconds positive")
    rng = random.Random(seed)
    events = []                  # (t, order, s, p, o)
    on_routes: set = set()
    for entry in plans["agents"]:
        agent = agent_iri(entry["id"])
        t = rng.randrange(0, 300)
        here = entry["start"]
        for target in entry["locations"]:
            events.append((t, len(events), agent, REQUESTS, f"<{M}next>"))
            route = router.route(here, target)
            seconds = route.seconds if route else 1800
            if route:
                on_routes.update(route.connections)
            t += seconds + rng.randrange(60, 601)
            events.append((t, len(events), agent, ARRIVED, target))
            here = target
            t += 1
        events.append((t, len(events), agent, REQUESTS, f"<{M}next>"))       # -> "finished"
    horizon = max((e[0] for e in events), default=0) + 1
    closures = rng.sample(sorted(on_routes), math.ceil(closed_share * len(on_routes))) if on_routes else []
    reopened = 0
    for conn in closures:
        t = rng.randrange(0, horizon)
        events.append((t, len(events), conn, TRAFFIC, CLOSED))
        if rng.random() < reopen_share:
            events.append((t + rng.randrange(300, 3601), len(events), conn, TRAFFIC, OPEN))
            reopened += 1
    events.sort()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = 0
    by_file: dict[int, list] = {}
    for t, _order, s, p, o in events:
        by_file.setdefault(t // file_seconds, []).append(json.dumps({"s": s, "p": p, "o": o, "t": t}))
    for k in sorted(by_file):
        name = f"events-{k * file_seconds:08d}.jsonl"
        tmp = directory / f".{name}.tmp"
        tmp.write_text("\n".join(by_file[k]) + "\n", encoding="utf-8")
        os.utime(tmp, (1_600_000_000 + k, 1_600_000_000 + k))
        os.replace(tmp, directory / name)
        files += 1
    return {"events": len(events), "files": files, "agents": len(plans["agents"]),
            "connections_on_routes": len(on_routes), "closures": len(closures), "reopened": reopened,
            "horizon_s": horizon}
