"""Compile every numba kernel once, into numba's cache beside its module (``rsp-sidecar setup``).

The line scanners (``cep.io.linescan``, ``cep.io.tsntscan``, ``rdfcore.bytekernels``) and the
driver engine's negation runs (``cep.engines.driver.columnar``) are compiled on their first call
and cached (``cache=True``). Without this, the first micro-batch of a fresh installation pays the
compilation (~15 s on 2 cores), and so does every process that calls a kernel before the cache
is written. ``compile_all`` calls each kernel on a few lines of every kind it reads.
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from cep.engines.driver import columnar
from cep.io import linescan, tsntscan

__all__ = ["compile_all"]

_JSON = ['{"s": ":a", "p": ":delayAt", "o": ":b", "t": 1}', '{"s": "<http://e/a>", "p": ":p", "o": "\\"x\\"@en", "t": 2}',
         '', '{"s": ":a", "p": ":p", "o": 3, "t": [1, 2]}', 'not json']
_TSNT = ['<http://e/a> <http://e/p> <http://e/b> "1" .', '_:b <http://e/p> "x"@en "2" .',
         '<http://e/a> <http://e/p> "3"^^<http://www.w3.org/2001/XMLSchema#integer> "3" .', '# c', 'bad']


def compile_all() -> float:
    """Call every cached kernel once (module doc); returns the seconds it took."""
    started = time.perf_counter()
    for lines, read in ((_JSON, lambda raw, files: linescan.scan(raw, files, {"": "http://e/"}, {})),
                        (_TSNT, lambda raw, files: linescan.scan_tsnt(raw, files, {}))):
        read(pa.array(lines, pa.string()), pa.array(["f"] * len(lines), pa.string()))
    linescan.item_ids(pa.array(["f", "f"], pa.string()), np.array([1, 2], np.int64))
    terms = tsntscan.TermSet(pa.array(["<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"], pa.string()))
    classes = tsntscan.TermSet(pa.array(["<http://e/C>"], pa.string()))
    typed = pa.array(['<http://e/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://e/C> "1" .', *_TSNT],
                     pa.string())
    tsntscan.scan(typed, terms, classes)
    tsntscan.json_answers(typed, 1, terms, classes, '{"s":"', ',"l":', "}\n", "_:f.")
    ints = np.array([0, 5], np.int64)
    columnar.free_runs(ints, ints + 4, np.array([0], np.int64), np.array([1], np.int64), np.array([2], np.int64))
    return time.perf_counter() - started
