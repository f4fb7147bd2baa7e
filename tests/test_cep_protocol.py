"""The engines' operator sets against their protocol (``cep.engines.protocol.Operators``; the driver's
against ``cep.engines.driver.walk.DriverOperators``): every member there, and callable with the
arguments a walk passes. And the one window dispatch (``cep.algebra.windows.apply_window``): each
kind of window to its function, with its parameters in ticks. No Spark session (pyspark is only
imported).
"""
from __future__ import annotations

import inspect

import pytest

from cep import algebra as A
from cep.algebra import windows as W
from cep.engines.driver import columnar, rows
from cep.engines.driver.walk import DriverOperators
from cep.engines.protocol import Operators
from cep.engines.spark import intervals, lifetimes

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def members(protocol) -> dict:
    """The protocol's methods, by name (its own and those it extends)."""
    return {name: getattr(protocol, name) for name in dir(protocol)
            if not name.startswith("_") and inspect.isfunction(getattr(protocol, name))}


def takes_the_protocols_arguments(function, member) -> bool:
    """Whether ``function`` can be called with the positional arguments a call of ``member`` passes:
    it requires no more of them, and accepts as many."""
    wanted = list(inspect.signature(member).parameters.values())[1:]      # not self
    given = [p for p in inspect.signature(function).parameters.values() if p.kind in _POSITIONAL]
    required = sum(p.default is inspect.Parameter.empty for p in given)
    return required <= sum(p.default is inspect.Parameter.empty for p in wanted) and len(given) >= len(wanted)


@pytest.mark.parametrize("module", (rows, columnar), ids=lambda m: m.__name__)
def test_the_driver_operator_sets_conform_in_full(module):
    assert isinstance(module, Operators) and isinstance(module, DriverOperators)
    for name, member in members(DriverOperators).items():
        assert takes_the_protocols_arguments(getattr(module, name), member), name


@pytest.mark.parametrize("module", (intervals, lifetimes), ids=lambda m: m.__name__)
def test_the_spark_operator_sets_have_the_operators(module):
    for name, member in members(Operators).items():
        if name != "supports":       # the Spark walk refuses as it goes (cep.engines.protocol)
            assert takes_the_protocols_arguments(getattr(module, name), member), name


def test_the_driver_engines_say_why_they_cannot_evaluate_a_query():
    window = A.StreamPattern("<http://example.org/W>", "<http://example.org/s>", A.Range(A.Duration(5)),
                             A.bgp(A.triple(A.Var("v"), "<http://example.org/p>", A.Var("o"))))
    values = A.Query(A.project([A.Var("v")], A.join(window, A.Values((A.Var("v"),), ((None,),)))))
    assert rows.supports(A.Query(A.project([A.Var("v")], window))) is None
    assert "VALUES" in rows.supports(values) and columnar.supports(values) == rows.supports(values)


CALLS = W.WindowFunctions(sliding=lambda *a: ("sliding", *a), stepped=lambda *a: ("stepped", *a),
                          count=lambda *a: ("count", *a), landmark=lambda *a: ("landmark", *a))


@pytest.mark.parametrize("spec, call", [
    (A.Now(), ("sliding", "S", 0)),
    (A.Range(A.Duration(10, "s")), ("sliding", "S", 10_000)),
    (A.Range(A.Duration(10, "s"), A.Duration(2, "s")), ("stepped", "S", 10_000, 2_000)),
    (A.Range(A.Duration(3, "s"), tumbling=True), ("stepped", "S", 3_000, 3_000)),
    (A.Triples(4), ("count", "S", 4)),
    (A.All(), ("landmark", "S")),
], ids=str)
def test_a_window_goes_to_its_kinds_function_with_its_parameters_in_ticks(spec, call):
    assert W.apply_window(spec, "ms", CALLS, "S") == call
    with pytest.raises(TypeError):
        W.apply_window("[RANGE 5]", "ms", CALLS, "S")
