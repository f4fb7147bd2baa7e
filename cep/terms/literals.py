"""RDF literals in N-Triples form: the XSD datatype tables and the literal syntax both CEP runtimes
use (``cep.engines.spark.filters`` on Spark columns, ``cep.engines.reference`` in pure Python). Pure Python, no pyspark.

A literal term is ``"lexical form"`` (N-Triples escapes inside), then ``@lang`` or
``^^<datatype IRI>`` or nothing (RDF 1.1 Concepts §3.3; N-Triples grammar [9] ``literal``). Its
datatype is ``rdf:langString`` with a language tag, else the given IRI, else ``xsd:string``.

Numeric literals (SPARQL 1.1 §17.1 "numeric") are those of :data:`NUMERIC_DATATYPES`: xsd:integer,
decimal, double, float and the types derived from xsd:integer; their value is the lexical form
parsed as a double.

:data:`LITERAL_PATTERN` is one regular expression in the syntax Python's ``re`` and Java's
``java.util.regex`` (Spark's ``rlike``/``regexp_extract``) read alike; groups: 1 the escaped lexical
form, 2 the language tag, 3 the datatype IRI. :data:`LITERAL_RE` compiles it for Python and
:data:`LITERAL_JAVA_RE` is the same text with the DOTALL flag inline, for Spark.
"""
from __future__ import annotations

import math
import re
import struct

from rdfcore.vocab import RDF_NS, XSD_NS

__all__ = [
    "XSD", "XSD_STRING", "XSD_BOOLEAN", "RDF_LANGSTRING", "NUMERIC_DATATYPES",
    "LITERAL_PATTERN", "LITERAL_RE", "LITERAL_JAVA_RE", "ESCAPES", "unescape", "parse_literal", "numeric_value",
    "XSD_INTEGER", "XSD_DECIMAL", "XSD_DOUBLE", "number_kind", "NUMBER_LEXICAL", "AGGREGATE_SCALE", "AGGREGATE_LIMIT",
    "canonical_decimal", "canonical_double", "canonical_double_text", "XSD_FLOAT", "SHORTEST_DOUBLE_PATTERN",
    "XSD_DATETIME", "datetime_term", "DURATION_DATATYPES", "DAY_TIME_DURATION_PATTERN", "DATETIME_PATTERN", "temporal_value",
    "XSD_DAYTIMEDURATION", "canonical_day_time_duration", "duration_term",
]

# datatype IRIs as they appear between ``^^<`` and ``>`` (bare; ``rdfcore.vocab`` has N-Triples forms)
XSD = XSD_NS
XSD_STRING = XSD + "string"
XSD_BOOLEAN = XSD + "boolean"
RDF_LANGSTRING = RDF_NS + "langString"

#: the numeric datatypes of SPARQL 1.1 §17.1 (xsd:integer, decimal, float, double and the types
#: derived from xsd:integer), as full IRIs
NUMERIC_DATATYPES = frozenset(XSD + n for n in (
    "integer", "decimal", "double", "float", "int", "long", "short", "byte", "nonNegativeInteger",
    "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedLong", "unsignedInt",
    "unsignedShort", "unsignedByte"))

#: an N-Triples literal: (1) escaped lexical form, then (2) @lang or (3) ^^<datatype>
LITERAL_PATTERN = r'^"(.*)"(?:@([A-Za-z0-9-]+)|\^\^<([^>]*)>)?$'
LITERAL_RE = re.compile(LITERAL_PATTERN, re.S)
LITERAL_JAVA_RE = "(?s)" + LITERAL_PATTERN

#: N-Triples ECHAR escapes (grammar [153s]) and the characters they stand for
ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "'": "'"}


def unescape(lex: str) -> str:
    """The N-Triples escapes of :data:`ESCAPES` undone (``\\uXXXX`` and unknown ones kept as written)."""
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), "\\" + m.group(1)), lex)


def parse_literal(term: str):
    """(lexical form unescaped, language or None, datatype IRI) of a literal term, else None."""
    m = LITERAL_RE.match(term) if isinstance(term, str) else None
    if not m:
        return None
    lex, lang, dt = m.group(1), m.group(2), m.group(3)
    return unescape(lex), (lang or None), (RDF_LANGSTRING if lang else dt or XSD_STRING)


def numeric_value(term) -> float | None:
    """The value of a numeric literal (by datatype, lexical form parsed as a double), else None."""
    lit = parse_literal(term)
    if lit is None or lit[2] not in NUMERIC_DATATYPES:
        return None
    try:
        return float(lit[0])
    except ValueError:
        return None


# --- computed numbers (C-SPARQL's aggregates, cep.engines.reference and cep.aggregates alike) ----------

XSD_INTEGER = XSD + "integer"
XSD_DECIMAL = XSD + "decimal"
XSD_DOUBLE = XSD + "double"
XSD_FLOAT = XSD + "float"

#: the lexical forms an aggregate reads, per kind (no INF/NaN, no spaces); read alike by Python's
#: ``re`` and Java's regex
NUMBER_LEXICAL = {
    "integer": r"^[+-]?[0-9]+$",
    "decimal": r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$",
    "double": r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$",
}
#: exact sums and averages are decimal(38, 18): 18 fraction digits (rounded half up), values below
#: 10^20 in magnitude; beyond that an aggregate is an error
AGGREGATE_SCALE = 18
AGGREGATE_LIMIT = 10 ** 20


def number_kind(datatype: str | None) -> str | None:
    """"integer" (xsd:integer and the types derived from it), "decimal", "double" (xsd:double and
    xsd:float: SPARQL's promotion, float read as double) or None (not numeric)."""
    if datatype not in NUMERIC_DATATYPES:
        return None
    if datatype == XSD_DECIMAL:
        return "decimal"
    if datatype in (XSD_DOUBLE, XSD + "float"):
        return "double"
    return "integer"


def canonical_decimal(value) -> str:
    """The lexical form of a decimal(38, 18) value: trailing zeros dropped, one digit kept after
    the point ("2.5", "2.0", "-0.125"), as XSD's canonical xsd:decimal."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:   # 20 integer and 18 fraction digits: past the default 28
        ctx.prec = 80
        text = format(Decimal(value).quantize(Decimal(1).scaleb(-AGGREGATE_SCALE)) + 0, "f")
    text = text.rstrip("0")
    return text + "0" if text.endswith(".") else text


#: a double's shortest round-trip digits as Python's ``repr`` and Java's ``Double.toString`` (what
#: Spark's cast to string writes) give them: "92.33333333333333", "1.0E20", "1.0E-5", "-0.0" →
#: groups: 1 sign, 2 integer digits, 3 fraction digits, 4 exponent (absent: 0)
SHORTEST_DOUBLE_PATTERN = r"^(-?)([0-9]+)\.?([0-9]*)(?:[eE]([+-]?[0-9]+))?$"
_SHORTEST_DOUBLE_RE = re.compile(SHORTEST_DOUBLE_PATTERN)


def canonical_double(value: float, single: bool = False) -> str | None:
    """A double's lexical form in XSD's canonical xsd:double shape ("9.233333333333333E1",
    "-2.0E-3", "0.0E0") with the fewest significant digits that read back as the same double
    (for ``single``: as the same 32-bit xsd:float); None for INF and NaN."""
    if not math.isfinite(value):
        return None
    if not single:
        return canonical_double_text(repr(float(value)))
    target = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):   # 9 significant digits always round-trip a single
        text = f"%.{digits - 1}E" % target
        if struct.unpack("f", struct.pack("f", float(text)))[0] == target:
            return canonical_double_text(text)
    raise AssertionError(f"no round-trip form for the single {value!r}")


def canonical_double_text(text: str) -> str:
    """A finite double's text in any decimal notation ("92.5", "1e-05", "1.0E20", "-0.0") in
    XSD's canonical shape, with its significant digits unchanged: one digit before the point, at
    least one after it, "E", the exponent without leading zeros or "+"."""
    m = _SHORTEST_DOUBLE_RE.match(text)
    if m is None:
        raise ValueError(f"not a finite double's text: {text!r}")
    sign, whole, fraction, exponent = m.groups()
    digits = whole + fraction
    significant = digits.lstrip("0").rstrip("0")
    if not significant:
        return f"{sign}0.0E0"
    # the value is digits × 10^(exponent − len(fraction)); its first significant digit stands
    # len(digits without leading zeros) − 1 places above that
    power = int(exponent or 0) - len(fraction) + len(digits.lstrip("0")) - 1
    return f"{sign}{significant[0]}.{significant[1:] or '0'}E{power}"


# --- time values (EP-SPARQL's getDURATION() / getSTARTTIME() / getENDTIME() compare with these) ---

XSD_DATETIME = XSD + "dateTime"
#: the duration datatypes compared by their length: xsd:duration and xsd:dayTimeDuration
#: (a duration with years or months has no fixed length in seconds; it compares with nothing)
DURATION_DATATYPES = frozenset((XSD + "duration", XSD + "dayTimeDuration"))
XSD_DAYTIMEDURATION = XSD + "dayTimeDuration"

#: a day-time duration ``-?P nD T nH nM n.nS`` (no years, no months); groups: 1 sign, 2 days,
#: 3 hours, 4 minutes, 5 seconds. Read alike by Python's ``re`` and Java's regex (Spark).
DAY_TIME_DURATION_PATTERN = (r"^(-)?P(?=[0-9T])(?:([0-9]+)D)?"
                             r"(?:T(?=[0-9])(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]+)?)S)?)?$")
_DAY_TIME_DURATION_RE = re.compile(DAY_TIME_DURATION_PATTERN)
#: an xsd:dateTime ``YYYY-MM-DDThh:mm:ss(.s+)?(Z|±hh:mm)?``; groups: 1 date and time to the
#: second, 2 the fraction digits, 3 the zone (none: read as UTC)
DATETIME_PATTERN = (r"^(-?[0-9]{4,}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]+))?"
                    r"(Z|[+-][0-9]{2}:[0-9]{2})?$")
_DATETIME_RE = re.compile(DATETIME_PATTERN)


def temporal_value(term):
    """``("duration", seconds)`` for an xsd:duration / xsd:dayTimeDuration literal without years
    or months, ``("dateTime", seconds since 1970-01-01T00:00:00Z)`` for an xsd:dateTime literal
    (no zone: read as UTC; fractions kept to the microsecond, as Spark's timestamps), else None.
    Seconds are exact ``Decimal`` values."""
    from datetime import datetime, timezone
    from decimal import Decimal

    lit = parse_literal(term)
    if lit is None:
        return None
    lex, _lang, dt = lit
    if dt in DURATION_DATATYPES:
        m = _DAY_TIME_DURATION_RE.match(lex)
        if not m or lex.endswith("T"):
            return None
        sign, days, hours, minutes, seconds = m.groups()
        total = (Decimal(days or 0) * 86400 + Decimal(hours or 0) * 3600 + Decimal(minutes or 0) * 60
                 + Decimal(seconds or 0))
        return ("duration", -total if sign else total)
    if dt == XSD_DATETIME:
        m = _DATETIME_RE.match(lex)
        if not m:
            return None
        whole, fraction, zone = m.groups()
        try:
            stamp = datetime.fromisoformat(whole + ("+00:00" if zone in (None, "Z") else zone))
        except ValueError:
            return None
        epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
        delta = stamp - epoch
        micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        micros += int((fraction or "0")[:6].ljust(6, "0"))
        return ("dateTime", Decimal(micros) / 1_000_000)
    return None


def datetime_term(seconds) -> str | None:
    """The xsd:dateTime term of an instant given as seconds since 1970-01-01T00:00:00Z (a Decimal
    or an int), in UTC ("Z"), the fraction without trailing zeros; None outside years 1-9999."""
    from datetime import datetime, timedelta, timezone
    from decimal import Decimal

    seconds = Decimal(seconds)
    whole = int(seconds.to_integral_value(rounding="ROUND_FLOOR"))
    fraction = seconds - whole
    try:
        stamp = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=whole)
    except OverflowError:
        return None
    text = stamp.strftime("%Y-%m-%dT%H:%M:%S")
    if fraction:
        text += format(fraction.normalize(), "f")[1:]
    return f'"{stamp.year:04d}{text[text.index("-"):]}Z"^^<{XSD_DATETIME}>'


def canonical_day_time_duration(seconds) -> str:
    """The canonical lexical form of the xsd:dayTimeDuration ``seconds`` long (a Decimal or an int;
    negative: a duration backwards), as XSD 1.1's canonical mapping of dayTimeDuration (Part 2
    §3.7.1.3) and XPath's casts to string (F&O 3.1 §10.3.2) write it: ``PT0S`` for zero, else an
    optional ``-``, ``P``, the days then ``T`` with the hours, minutes and seconds, each only when
    not zero (``P1D``, ``PT1H30M``, ``-P2DT3H4M5.25S``), the seconds without trailing fraction zeros
    (``PT0.5S``, ``PT5S``). ``temporal_value`` reads it back to the same value. Floats are refused:
    a binary fraction of a second has no exact decimal form here."""
    from decimal import Decimal, localcontext

    if isinstance(seconds, (bool, float)) or not isinstance(seconds, (int, Decimal)):
        raise TypeError(f"a duration is a Decimal or an int number of seconds, got {seconds!r}")
    with localcontext() as ctx:   # exact: no rounding of a long duration's fraction
        ctx.prec = 80
        value = Decimal(seconds)
        if not value.is_finite():
            raise ValueError(f"a duration has a finite number of seconds, got {seconds!r}")
        if value == 0:
            return "PT0S"
        whole = int(abs(value))                  # toward zero: the fraction stays in the seconds
        fraction = abs(value) - whole
        days, rest = divmod(whole, 86400)
        hours, rest = divmod(rest, 3600)
        minutes, rest = divmod(rest, 60)
        second = format(rest + fraction, "f")
    if "." in second:
        second = second.rstrip("0").rstrip(".")
    time = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "") + (f"{second}S" if second != "0" else "")
    return ("-" if value < 0 else "") + "P" + (f"{days}D" if days else "") + (f"T{time}" if time else "")


def duration_term(seconds) -> str:
    """The xsd:dayTimeDuration term of a length of time given in seconds (a Decimal or an int), in
    canonical form (``canonical_day_time_duration``): what getDURATION() binds."""
    return f'"{canonical_day_time_duration(seconds)}"^^<{XSD_DAYTIMEDURATION}>'
