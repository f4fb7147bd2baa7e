"""Benchmark: RSEP-QL's SEQ on the driver (``cep.engines.driver.rsepql``: one ordered pass per SEQ)
against the reference evaluator (``cep.engines.reference``: per E2 event, E1's events and E2's
again), in process, no JVM (issue 37).

    python bench/rsepql_seq.py [--events 2000,20000] [--reference-max-events 2000] [--instants 4]
                               [--keys 200] [--repeat 3]

The stream: ``--events`` items of one triple each, a fleet of ``--keys`` vehicles alternating
``:v :at :stop`` and ``:stop :next :stop'`` over one item per millisecond; the query is Fig. 1's
shape, ``MATCH P ( EVENT :w1 { ?x :at ?y } SEQ EVENT :w2 { ?y :next ?z } )`` over the landmark
window, and a three-step chain ``(... SEQ ...) SEQ EVENT :w1 { ?x :at ?z }``, under each policy P,
at ``--instants`` instants spread over the stream (consumption between them). Each line: the
driver's and the reference's seconds (median of ``--repeat``; the reference only up to
``--reference-max-events``) and their ratio; both answers are compared where both ran.
"""
from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cep import algebra as A  # noqa: E402  (the repository, put on the path above)
from cep import compile_query  # noqa: E402
from cep.engines import reference as R  # noqa: E402
from cep.engines.driver import answers as D  # noqa: E402
from rdfcore.hashing import term_id  # noqa: E402

EX = "http://example.org/fleet#"
STREAM = f"<{EX}S>"
PAIR = """PREFIX : <http://example.org/fleet#>
SELECT ?x ?y ?z FROM NAMED WINDOW :w1 ON :S [ALL] FROM NAMED WINDOW :w2 ON :S [ALL]
WHERE { MATCH %s ( EVENT :w1 { ?x :at ?y } SEQ EVENT :w2 { ?y :next ?z } ) }"""
CHAIN = """PREFIX : <http://example.org/fleet#>
SELECT ?x ?y ?z FROM NAMED WINDOW :w1 ON :S [ALL] FROM NAMED WINDOW :w2 ON :S [ALL]
WHERE { MATCH %s ( EVENT :w1 { ?x :at ?y } SEQ EVENT :w2 { ?y :next ?z } SEQ EVENT :w1 { ?x :at ?z } ) }"""


def stream(events: int, keys: int, seed: int = 7) -> list:
    """[(item, frozenset({triple}), τ, τ)]: vehicles at stops, and stops' successors."""
    rng = random.Random(seed)
    stops = [f"<{EX}stop{k}>" for k in range(keys)]
    out = []
    for k in range(events):
        if k % 2 == 0:
            triple = (f"<{EX}v{rng.randrange(keys)}>", f"<{EX}at>", rng.choice(stops))
        else:
            triple = (rng.choice(stops), f"<{EX}next>", rng.choice(stops))
        out.append((k, frozenset({triple}), k, k))
    return out


def driver(query, items, times) -> list:
    terms = {term_id(w): w for (_i, g, _a, _b) in items for tr in g for w in tr}
    rows = np.array([(item, *map(term_id, tr), t1, t2) for item, g, t1, t2 in items for tr in g],
                    dtype=np.int64).reshape(-1, 6)
    got = D.answers_at(query, {}, {STREAM: rows}, times, "ms", terms)
    out = {t: set() for t in times}
    for at, *values, t1, t2 in got.rows:
        out[at].add((frozenset((n, v) for n, v in zip(got.variables, values) if v is not None), t1, t2))
    return [out[t] for t in times]


def median_seconds(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        result = None
        gc.collect()           # the previous case's answers are garbage: not this one's to collect
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="2000,20000")
    parser.add_argument("--reference-max-events", type=int, default=2000)
    parser.add_argument("--instants", type=int, default=4)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'query':<34} {'events':>7} {'answers':>8} {'driver':>10} {'reference':>11} {'ratio':>8}")
    for n in (int(v) for v in args.events.split(",")):
        items = stream(n, args.keys)
        times = [n * (k + 1) // args.instants for k in range(args.instants)]
        for name, text in (("pair", PAIR), ("chain", CHAIN)):
            for policy in A.POLICIES:
                query = compile_query(text % policy.upper())
                ours, got = median_seconds(lambda: driver(query, items, times), args.repeat)
                label = f"{name} {policy}"
                count = sum(len(a) for a in got)
                if n > args.reference_max_events:
                    print(f"{label:<34} {n:>7} {count:>8} {ours:>8.3f} s {'n/a':>11} {'n/a':>8}", flush=True)
                    continue
                theirs, expected = median_seconds(lambda: R.evaluate_sequence(query, {}, {STREAM: items}, times), 1)
                if expected != got:
                    raise SystemExit(f"{label} on {n} events: the driver's answers differ from the reference's")
                print(f"{label:<34} {n:>7} {count:>8} {ours:>8.3f} s {theirs:>9.3f} s {theirs / ours:>7.1f}x",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
