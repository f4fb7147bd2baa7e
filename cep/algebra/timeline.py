"""Time in the CEP runtimes (CQELS-CEP §4.1): instants are signed 64-bit integers in the query's
time unit (``cep.algebra.patterns.TIME_UNITS``). Pure Python, shared by ``cep.engines.spark.intervals``/``cep.engines.spark.evaluate`` and
the reference evaluator ``cep.engines.reference``.
"""
from __future__ import annotations

__all__ = ["MIN_TIME", "OPEN_END", "close_instant"]

#: The smallest representable time (a signed 64-bit long). A static background has been unchanged
#: "since forever": without a known change time its mappings carry [MIN_TIME, t] (eq. 17).
MIN_TIME = -(1 << 63)
#: The largest 64-bit time: an interval end that is "the evaluation instant", a lifetime with no end.
OPEN_END = (1 << 63) - 1


def close_instant(t: int, step: int) -> int:
    """The last close of a STEP/TUMBLING window at or before t: ⌊t / step⌋ · step (origin 0;
    C-SPARQL's report policy "on window close")."""
    if step <= 0:
        raise ValueError(f"a window step must be positive, got {step}")
    return (int(t) // int(step)) * int(step)
