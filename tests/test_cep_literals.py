"""cep.terms.literals (the literal syntax and XSD tables of both CEP runtimes) and the expected-failure
classes of cep.engines.errors, without Spark."""
from __future__ import annotations

import re

import pytest

from cep import compile_query
from cep.engines import reference as R
from cep.engines.errors import DictionaryRequiredError, MissingInputError, UnsupportedQueryError
from cep.terms.literals import (LITERAL_JAVA_RE, LITERAL_PATTERN, LITERAL_RE, NUMERIC_DATATYPES, RDF_LANGSTRING, XSD,
                                XSD_STRING, canonical_double, canonical_double_text, numeric_value, parse_literal)
from rdfcore.errors import SidecarError


@pytest.mark.parametrize("term, expected", [
    ('"abc"', ("abc", None, XSD_STRING)),
    ('"Wien"@de', ("Wien", "de", RDF_LANGSTRING)),
    (f'"5"^^<{XSD}integer>', ("5", None, XSD + "integer")),
    ('"a\\"b\\\\c\\nd"', ('a"b\\c\nd', None, XSD_STRING)),   # N-Triples escapes undone
    ('"x\\u0041"', ("x\\u0041", None, XSD_STRING)),          # \uXXXX kept as written
    ('"two\nlines"', ("two\nlines", None, XSD_STRING)),       # DOTALL: a raw newline in the form
    ("<http://ex/a>", None),
    ("_:b1", None),
    (None, None),
])
def test_parse_literal(term, expected):
    assert parse_literal(term) == expected


def test_numeric_value_by_datatype_only():
    assert numeric_value(f'"2.5E0"^^<{XSD}double>') == 2.5
    assert numeric_value(f'"7"^^<{XSD}unsignedByte>') == 7.0
    assert numeric_value('"7"') is None                       # a string, not a number
    assert numeric_value(f'"seven"^^<{XSD}integer>') is None  # ill-typed: no value
    assert len(NUMERIC_DATATYPES) == 16 and all(d.startswith(XSD) for d in NUMERIC_DATATYPES)


@pytest.mark.parametrize("value, text", [
    (277 / 3, "9.233333333333333E1"),    # 15 digits ("9.23333333333333E1") read back as another double
    (0.1 + 0.2, "3.0000000000000004E-1"), (15.0, "1.5E1"), (-0.002, "-2.0E-3"), (1e20, "1.0E20"),
    (0.0, "0.0E0"), (-0.0, "-0.0E0"), (5e-324, "5.0E-324"), (1.7976931348623157e308, "1.7976931348623157E308"),
    (float("inf"), None), (float("nan"), None),
])
def test_canonical_double_is_the_shortest_form_that_reads_back(value, text):
    assert canonical_double(value) == text
    assert text is None or float(text) == value or (value != value)


def test_canonical_double_round_trips_any_double_and_single():
    import random
    import struct

    rng = random.Random(7)
    for _ in range(20_000):
        value = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        text = canonical_double(value)
        assert text is None or (float(text) == value and text == canonical_double_text(repr(value)))
    assert canonical_double(0.1, single=True) == "1.0E-1"            # not the double's 17 digits
    assert canonical_double(1 / 3, single=True) == "3.3333334E-1"
    for _ in range(20_000):
        single = struct.unpack("f", struct.pack("I", rng.getrandbits(32)))[0]
        text = canonical_double(single, single=True)
        assert text is None or struct.unpack("f", struct.pack("f", float(text)))[0] == single


@pytest.mark.parametrize("text, canonical", [
    ("92.5", "9.25E1"), ("1e-05", "1.0E-5"), ("0.001", "1.0E-3"), ("100.0", "1.0E2"), ("1.0E20", "1.0E20"),
    ("-0.0", "-0.0E0"), ("007.50", "7.5E0"), ("1.2345E+3", "1.2345E3"),
])
def test_canonical_double_text_keeps_the_digits(text, canonical):
    assert canonical_double_text(text) == canonical


def test_one_pattern_for_python_and_spark():
    """The Java regex Spark uses is the Python pattern with the DOTALL flag inline."""
    assert LITERAL_RE.pattern == LITERAL_PATTERN and LITERAL_RE.flags & re.S
    assert LITERAL_JAVA_RE == "(?s)" + LITERAL_PATTERN


@pytest.mark.parametrize("cls, builtin", [
    (MissingInputError, KeyError), (MissingInputError, ValueError),
    (DictionaryRequiredError, ValueError), (UnsupportedQueryError, NotImplementedError)])
def test_errors_are_sidecar_errors_and_keep_their_builtin_class(cls, builtin):
    assert issubclass(cls, SidecarError) and issubclass(cls, builtin)


def test_missing_stream_and_graph_in_the_reference():
    q = compile_query("PREFIX : <http://ex/> SELECT ?x FROM NAMED WINDOW :w ON :s [RANGE 5] "
                      "WHERE { WINDOW :w { ?x :p ?y } }")
    with pytest.raises(MissingInputError, match="no stream <http://ex/s>") as info:
        R.evaluate(q, {}, {}, at=3)
    assert str(info.value).startswith("no stream")   # the message as written, not KeyError's repr
    q = compile_query("PREFIX : <http://ex/> SELECT ?x FROM :g WHERE { ?x :p ?y }")
    with pytest.raises(MissingInputError, match="no background graph"):
        R.evaluate(q, {}, {}, at=3)
