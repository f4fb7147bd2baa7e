"""The small vocabulary of the randomized CEP tests (reference vs Spark, continuous, driver-side):
one stream, one window name, three subjects, two objects, three predicates."""
from __future__ import annotations

import random

EX = "http://ex/"
STREAM_IRI = f"<{EX}stream>"
WINDOW_IRI = f"<{EX}W>"
SUBJECTS = [f"<{EX}{n}>" for n in ("a", "b", "c")]
OBJECTS = [f"<{EX}{n}>" for n in ("m", "h")]
PREDICATES = [f"<{EX}p{i}>" for i in range(3)]


def random_items(rng: random.Random, n: int, span: int, objects=OBJECTS, first: int = 0):
    """``n`` point events in [0, span], several per time, some items graphs of two or three
    triples with one subject: ``(item, graph, t, t)`` sorted by time, ids from ``first``."""
    items = []
    for i in range(n):
        size = rng.choice([1, 1, 2, 3])
        sub = rng.choice(SUBJECTS)
        g = {(sub, rng.choice(PREDICATES), rng.choice(objects)) for _ in range(size)}
        t = rng.randint(0, span)
        items.append((first + i, frozenset(g), t, t))
    return sorted(items, key=lambda it: it[2])
