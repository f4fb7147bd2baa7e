"""The values FILTER, BIND and ORDER BY compute (SPARQL 1.1 §17), shared by every engine: a value
is an N-Triples term, a bool, a ``cep.terms.numbers.Number``, a ``Temporal`` (a duration or a
dateTime in exact seconds) or ``ERROR``.

* ``eval_expr(e, μ, interval)`` — an expression's value under a solution; ``ebv`` its effective
  boolean value; ``term_value`` the term BIND binds (None where SPARQL's evaluation is an error);
* the built-ins of §17.4, with the solution-dependent ones (NOW, RAND, UUID, STRUUID, BNODE)
  drawn from ``solution_hash`` so that a replayed answer is the same answer;
* ``fresh_blank`` names a CONSTRUCT template's blank nodes per solution.

The reference evaluator (``cep.engines.reference``), the driver engine and the Spark engine's
Arrow UDFs (``cep.engines.spark.filters``) all evaluate expressions with this module.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping as TMapping
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cep import algebra as A
from cep.algebra.expressions import SOLUTION_BUILTINS, TERM_BUILTINS
from cep.algebra.windows import TIME_UNITS
from cep.terms.literals import (DATETIME_PATTERN, LITERAL_RE, NUMERIC_DATATYPES, XSD_BOOLEAN, XSD_DATETIME,
                                XSD_DAYTIMEDURATION, XSD_STRING, datetime_term, number_kind, numeric_value,
                                parse_literal, temporal_value)
from cep.terms.numbers import (STRINGS, Number, comparable, literal_of, number, numeric, simple_string,
                               string_literal, temporal_term, term_of)
from rdfcore.hashing import fast_xxh64, hash_longs, term_id

__all__ = ["ERROR", "Temporal", "ebv", "eval_expr", "term_value", "float_value", "temporal", "term_builtin",
           "resolve_iri", "ABSOLUTE_IRI", "EVALUATION_INSTANT", "SOLUTION_SEED", "SALTS", "solution_hash",
           "uuid_text", "solution_value", "fresh_blank", "fresh_blank_of_ids", "order_key"]



class Error:
    def __repr__(self):
        return "error"


ERROR = Error()


@dataclass(frozen=True)
class Temporal:
    """A duration or a dateTime, in exact seconds (``cep.terms.literals.temporal_value``)."""

    kind: str
    seconds: Any


def ebv(value):
    """Effective boolean value (§17.2.2): True, False or ERROR."""
    if value is ERROR or value is None:
        return ERROR
    if isinstance(value, bool):
        return value
    if isinstance(value, Number):
        return not (value.value == 0 or (value.kind in ("float", "double") and math.isnan(value.value)))
    lit = parse_literal(value)
    if lit is None:
        return ERROR
    if lit[2] == XSD_BOOLEAN:
        return lit[0] in ("true", "1") if lit[0] in ("true", "false", "1", "0") else False
    if lit[2] in NUMERIC_DATATYPES:
        n = numeric_value(value)
        return False if n is None else not (n == 0 or math.isnan(n))
    if lit[2] == XSD_STRING:
        return lit[0] != ""
    return ERROR


def float_value(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, Number):
        return float(value.value)
    return numeric_value(value) if isinstance(value, str) else None


def eval_expr(e, mu: dict, interval: tuple | None = None, unit: str = "ms", stamp=None, exists=None):
    """Value of expression ``e`` (a ``cep.algebra.patterns`` expression) under mapping ``mu``: a term
    string, a bool, a ``cep.terms.numbers.Number``, a duration/dateTime, or ERROR (SPARQL 1.1 §17). ``interval``: the
    solution's (t1, t2) in ``unit`` ticks, which getDURATION() / getSTARTTIME() / getENDTIME() read
    (EP-SPARQL §4.2, σ_{tα tω}). ``stamp(e, mu)``: the time (ticks) a timestamp() call ``e``
    yields for ``mu``, or None (C-SPARQL §3.3; no ``stamp``: an error). ``exists(pattern, mu)``:
    whether EXISTS { pattern } holds for ``mu`` (no ``exists``: an error)."""
    def sub(x):
        return eval_expr(x, mu, interval, unit, stamp, exists)

    if numeric(e):
        n = number(e, sub, lambda: solution_value("RAND", [], mu, interval, unit))
        return ERROR if n is None else n
    match e:
        case A.Exists(pattern=pattern):
            return ERROR if exists is None else exists(pattern, mu)
        case A.Builtin(name=name, args=args) if name in SOLUTION_BUILTINS:
            return solution_value(name, [sub(a) for a in args], mu, interval, unit)
        case A.Builtin(name=name, args=args):
            return _builtin(name, args, sub)
        case A.IntervalFn(kind=kind):
            if interval is None:
                return ERROR
            per_tick = Decimal(TIME_UNITS[unit]) / 1000
            t1, t2 = interval
            if kind == "DURATION":
                return Temporal("duration", (Decimal(t2) - Decimal(t1)) * per_tick)
            return Temporal("dateTime", Decimal(t1 if kind == "STARTTIME" else t2) * per_tick)
        case A.Timestamp() | A.PatternTimestamp():
            t = None if stamp is None else stamp(e, mu)
            if t is None:
                return ERROR
            return Temporal("dateTime", Decimal(t) * Decimal(TIME_UNITS[unit]) / 1000)
        case A.Var(name=name):
            return mu.get(name, ERROR)
        case A.Const(term=term):
            return term
        case A.Bound(var=var):
            return var.name in mu
        case A.Not(expr=inner):
            v = ebv(sub(inner))
            return ERROR if v is ERROR else not v
        case A.And(left=left, right=right):
            a, b = ebv(sub(left)), ebv(sub(right))
            if a is False or b is False:
                return False
            return ERROR if (a is ERROR or b is ERROR) else True
        case A.Or(left=left, right=right):
            a, b = ebv(sub(left)), ebv(sub(right))
            if a is True or b is True:
                return True
            return ERROR if (a is ERROR or b is ERROR) else False
        case A.Neg(expr=inner):
            n = float_value(sub(inner))
            return ERROR if n is None else -n
        case A.Arith(op=op, left=left, right=right):
            a, b = float_value(sub(left)), float_value(sub(right))
            if a is None or b is None:
                return ERROR
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            return ERROR if b == 0 else a / b
        case A.Compare(op=op, left=left, right=right):
            return _compare(op, sub(left), sub(right))
        case A.Str(expr=inner):
            t = term_of(sub(inner))
            if not isinstance(t, str):
                return ERROR
            if t.startswith("<"):
                return '"' + t[1:-1].replace("\\", "\\\\").replace('"', '\\"') + '"'
            m = LITERAL_RE.match(t)
            return '"' + m.group(1) + '"' if m else ERROR
        case A.Lang(expr=inner):
            lit = literal_of(sub(inner))
            return ERROR if lit is None else f'"{lit[1] or ""}"'
        case A.Datatype(expr=inner):
            lit = literal_of(sub(inner))
            return ERROR if lit is None else f"<{lit[2]}>"
        case A.Regex(text=text, pattern=pattern, flags=flags):
            lit = literal_of(sub(text))
            pat = parse_literal(term_of(sub(pattern)) or "")
            letters = parse_literal(term_of(sub(flags)) or "") if flags is not None else ("", None, None)
            if lit is None or pat is None or letters is None:
                return ERROR
            prefix = "".join(f"(?{f})" for f in letters[0] if f in "imsx")
            return re.search(prefix + pat[0], lit[0]) is not None
    raise TypeError(f"unknown expression {type(e).__name__}")


def _escape(lex: str) -> str:
    return lex.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


#: the evaluation instant NOW() reads (set by each evaluation; a Spark task evaluating BIND sets it)
EVALUATION_INSTANT: ContextVar = ContextVar("evaluation_instant", default=None)
#: the solution's hash, where the mapping at hand holds only some of the solution's variables (Spark's
#: BIND sees the terms its expression reads); None: ``solution_hash`` of the mapping and interval
SOLUTION_SEED: ContextVar = ContextVar("solution_seed", default=None)
#: the salts that make each solution-dependent built-in draw its own bits from the solution's hash
SALTS = {"RAND": 1, "UUID": (2, 3), "STRUUID": (2, 3), "BNODE": 4, "BNODE_ARG": 5}


def solution_hash(mu: TMapping, interval: tuple | None) -> int:
    """The hash RAND(), UUID(), STRUUID() and BNODE() draw from: Spark's ``xxhash64`` chained (seed
    42, nulls skipped) over the term ids of the solution's variables by name, then its interval's
    ends — as ``fresh_blank`` names a template's blank nodes, and as ``cep.engines.spark.filters`` computes it
    from a solution's columns. Same solution, same values: a replayed answer is the same answer."""
    seed = SOLUTION_SEED.get()
    if seed is not None:
        return seed
    t1, t2 = interval if interval is not None else (None, None)
    return hash_longs(*(None if mu[name] is None else term_id(mu[name]) for name in sorted(mu)), t1, t2)


def uuid_text(h1: int, h2: int) -> str:
    """A version-4 UUID's text (RFC 4122) from two hashes' 128 bits: the version digit set to 4 and
    the variant's two bits to 10 (``cep.engines.spark.filters`` builds the same from columns)."""
    digits = f"{h1 & 0xFFFFFFFFFFFFFFFF:016x}{h2 & 0xFFFFFFFFFFFFFFFF:016x}"
    variant = "89ab"[int(digits[16], 16) & 3]
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{variant}{digits[17:20]}-{digits[20:]}"


def solution_value(name: str, values: list, mu: TMapping, interval: tuple | None, unit: str):
    """NOW, RAND, UUID, STRUUID and BNODE (``cep.algebra.expressions.SOLUTION_BUILTINS``), given their
    arguments' values, under solution ``mu`` with ``interval``."""
    if name == "NOW":                                            # §17.4.5.1
        at = EVALUATION_INSTANT.get()
        if at is None:
            return ERROR
        term = datetime_term(Decimal(at) * Decimal(TIME_UNITS[unit]) / 1000)
        return ERROR if term is None else term
    seed = solution_hash(mu, interval)
    if name == "RAND":                                           # §17.4.4.5: a double in [0, 1)
        h = hash_longs(seed, SALTS["RAND"])
        return ((h & 0xFFFFFFFFFFFFFFFF) >> 11) * 2.0 ** -53
    if name in ("UUID", "STRUUID"):                              # §17.4.3.x, §17.4.2.12
        text = uuid_text(*(hash_longs(seed, salt) for salt in SALTS["UUID"]))
        return f"<urn:uuid:{text}>" if name == "UUID" else f'"{text}"'
    if not values:                                               # BNODE(), §17.4.2.9
        h = hash_longs(seed, SALTS["BNODE"])
    else:                                                        # BNODE(simple literal or xsd:string)
        if any(v is ERROR for v in values):
            return ERROR
        text = string_literal(values[0])
        if text is None or text[1] is not None:
            return ERROR
        h = fast_xxh64(text[0].encode("utf-8"), hash_longs(seed, SALTS["BNODE_ARG"]) & 0xFFFFFFFFFFFFFFFF)
    return f"_:b{h & 0xFFFFFFFFFFFFFFFF:016x}"


def _builtin(name, args, sub):
    """SPARQL 1.1 §17.4 built-ins (``cep.algebra.expressions.BUILTINS``)."""
    if name == "IF":                                             # §17.4.1.2
        cond = ebv(sub(args[0]))
        return ERROR if cond is ERROR else sub(args[1] if cond else args[2])
    if name == "COALESCE":                                       # §17.4.1.4
        for arg in args:
            value = sub(arg)
            if value is not ERROR and value is not None:
                return value
        return ERROR
    values = [sub(a) for a in args]
    if any(v is ERROR for v in values):
        return ERROR
    if name in ("STRSTARTS", "STRENDS", "CONTAINS"):             # §17.4.3.8-10, compatibility §17.4.3.1.3
        a, b = string_literal(values[0]), string_literal(values[1])
        if a is None or b is None or (b[1] is not None and a[1] != b[1]):
            return ERROR
        return {"STRSTARTS": a[0].startswith, "STRENDS": a[0].endswith,
                "CONTAINS": a[0].__contains__}[name](b[0])
    if name == "CONCAT":                                         # §17.4.3.12
        parts = [string_literal(v) for v in values]
        if any(p is None for p in parts):
            return ERROR
        langs = {p[1] for p in parts}
        lang = langs.pop() if len(langs) == 1 else None
        return f'"{_escape("".join(p[0] for p in parts))}"' + (f"@{lang}" if lang else "")
    if name == "SUBSTR":                                         # §17.4.3.3, fn:substring
        a = string_literal(values[0])
        start = _integer(values[1])
        length = _integer(values[2]) if len(values) == 3 else None
        if a is None or start is None or (len(values) == 3 and length is None):
            return ERROR
        first = start
        end = math.inf if length is None else first + length
        text = "".join(ch for p, ch in enumerate(a[0], 1) if first <= p < end)
        return f'"{_escape(text)}"' + (f"@{a[1]}" if a[1] else "")
    if name in ("STRBEFORE", "STRAFTER"):                        # §17.4.3.9-10
        a, b = string_literal(values[0]), string_literal(values[1])
        if a is None or b is None or (b[1] is not None and a[1] != b[1]):
            return ERROR
        at = a[0].find(b[0])
        if at < 0:
            return '""'
        text = a[0][:at] if name == "STRBEFORE" else a[0][at + len(b[0]):]
        return f'"{_escape(text)}"' + (f"@{a[1]}" if a[1] else "")
    if name == "REPLACE":                                        # §17.4.3.15, fn:replace
        a = string_literal(values[0])
        pattern, replacement = parse_literal(term_of(values[1]) or ""), parse_literal(term_of(values[2]) or "")
        flags = parse_literal(term_of(values[3]) or "") if len(values) == 4 else ("", None, None)
        if a is None or pattern is None or replacement is None or flags is None:
            return ERROR
        prefix = "".join(f"(?{f})" for f in flags[0] if f in "imsx")
        python = re.sub(r"\\([$\\])|\$([0-9])", lambda m: m.group(1).replace("\\", "\\\\") if m.group(1)
                        else f"\\g<{m.group(2)}>", replacement[0])
        try:
            text = re.sub(prefix + pattern[0], python, a[0])
        except (re.error, IndexError):
            return ERROR
        return f'"{_escape(text)}"' + (f"@{a[1]}" if a[1] else "")
    if name in TERM_BUILTINS:
        return term_builtin(name, values)
    if name in ("UCASE", "LCASE"):
        a = string_literal(values[0])
        if a is None:
            return ERROR
        lex = a[0].upper() if name == "UCASE" else a[0].lower()
        return f'"{_escape(lex)}"' + (f"@{a[1]}" if a[1] else "")
    term = term_of(values[0])
    if name in ("ISIRI", "ISURI"):
        return isinstance(term, str) and term.startswith("<")
    if name == "ISBLANK":
        return isinstance(term, str) and term.startswith("_:")
    if name == "ISLITERAL":
        return isinstance(term, str) and term.startswith('"') or isinstance(values[0], bool)
    if name == "ISNUMERIC":
        return float_value(values[0]) is not None
    if name == "SAMETERM":
        a, b = term_of(values[0]), term_of(values[1])
        return ERROR if not (isinstance(a, str) and isinstance(b, str)) else a == b
    raise TypeError(f"unknown built-in {name}")


_HASHES = {"MD5": "md5", "SHA1": "sha1", "SHA256": "sha256", "SHA384": "sha384", "SHA512": "sha512"}
#: RFC 3986 unreserved characters: what ENCODE_FOR_URI leaves as they are
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
def resolve_iri(base: str, reference: str) -> str:
    """``reference`` resolved against ``base`` (RFC 3986 §5.2, as the parser resolves relative
    ``<iri>`` references: ``urllib.parse.urljoin``)."""
    from urllib.parse import urldefrag, urljoin

    return urldefrag(base)[0] if reference == "" else urljoin(base, reference)   # urljoin keeps the fragment


#: an absolute IRI IRI() accepts: a scheme, no character N-Triples forbids in an IRI
ABSOLUTE_IRI = r"^[A-Za-z][A-Za-z0-9+.\-]*:[^<>\"{}|^`\\\x00-\x20]*$"


def term_builtin(name, values):
    """§17.4.2-17.4.6: terms from strings (LANGMATCHES, STRDT, STRLANG, IRI, ENCODE_FOR_URI, the
    hash functions) and a dateTime's time zone (TIMEZONE, TZ)."""
    import hashlib

    if name in ("TIMEZONE", "TZ"):                               # §17.4.5.8-9
        lit = literal_of(values[0])
        m = re.match(DATETIME_PATTERN, lit[0]) if lit is not None and lit[2] == XSD_DATETIME else None
        if m is None:
            return ERROR
        zone = m.group(3)
        if name == "TZ":
            return f'"{zone or ""}"'
        if zone is None:
            return ERROR
        if zone == "Z":
            return f'"PT0S"^^<{XSD_DAYTIMEDURATION}>'
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        text = ("-" if zone[0] == "-" and (hours or minutes) else "") + "PT" + (f"{hours}H" if hours else "") + (
            f"{minutes}M" if minutes else "") + ("" if hours or minutes else "0S")
        return f'"{text}"^^<{XSD_DAYTIMEDURATION}>'
    if name in ("IRI", "URI"):                                   # §17.4.2.8
        term = term_of(values[0])
        if isinstance(term, str) and term.startswith("<"):
            return term
        lex = simple_string(term) if isinstance(term, str) else None
        if lex is not None and len(values) > 1 and not re.match(ABSOLUTE_IRI, lex):
            lex = resolve_iri(values[1][1:-1], lex)             # the query's BASE (cep.lowering.common adds it)
        return f"<{lex}>" if lex is not None and re.match(ABSOLUTE_IRI, lex) else ERROR
    a = string_literal(values[0])
    if a is None:
        return ERROR
    if name == "ENCODE_FOR_URI":                                 # §17.4.3.11
        return '"' + "".join(ch if ch in _UNRESERVED else "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
                             for ch in a[0]) + '"'
    if name in _HASHES:                                          # §17.4.6: simple literals and xsd:strings
        if a[1] is not None:
            return ERROR
        return f'"{hashlib.new(_HASHES[name], a[0].encode("utf-8")).hexdigest()}"'
    b = term_of(values[1])
    if name == "LANGMATCHES":                                    # §17.4.3.16, RFC 4647 basic filtering
        tag, lrange = (a[0] if a[1] is None else None), (simple_string(b) if isinstance(b, str) else None)
        if tag is None or lrange is None:
            return ERROR
        if lrange == "*":
            return tag != ""
        return tag.lower() == lrange.lower() or tag.lower().startswith(lrange.lower() + "-")
    if a[1] is not None:                                         # STRDT, STRLANG: a simple literal
        return ERROR
    if name == "STRDT":                                          # §17.4.3.17
        if not (isinstance(b, str) and b.startswith("<")):
            return ERROR
        return f'"{_escape(a[0])}"' + ("" if b == f"<{XSD_STRING}>" else f"^^{b}")
    lang = simple_string(b) if isinstance(b, str) else None    # STRLANG, §17.4.3.18
    if not lang or not re.fullmatch(r"[a-zA-Z]+(-[a-zA-Z0-9]+)*", lang):
        return ERROR
    return f'"{_escape(a[0])}"@{lang.lower()}'


def _integer(value):
    """An xsd:integer argument (SUBSTR's, §17.4.3.3) as an int, else None (a computed number: when
    an xsd:integer, as a stored one)."""
    if isinstance(value, Number):
        return int(value.value) if value.kind == "integer" else None
    lit = literal_of(value)
    if lit is None or number_kind(lit[2]) != "integer":
        return None
    n = float_value(value)
    return None if n is None or not float(n).is_integer() else int(n)


def _understood(term: str) -> bool:
    """Whether a literal's value is known (a string, a valid boolean / number / time), so that a
    different literal is known to be a different value; an IRI or blank node always is. Two
    different literals compare as an error (RDFterm-equal, §17.4.1.7) unless both are understood
    or one has a language tag (a language-tagged string equals no other kind of literal)."""
    lit = parse_literal(term)
    if lit is None:
        return True
    if lit[2] in STRINGS:
        return True
    if lit[2] == XSD_BOOLEAN:
        return lit[0] in ("true", "false", "1", "0")
    if lit[2] in NUMERIC_DATATYPES:
        return numeric_value(term) is not None
    return temporal_value(term) is not None


def temporal(value):
    if isinstance(value, Temporal):
        return value
    if isinstance(value, str):
        found = temporal_value(value)
        return None if found is None else Temporal(*found)
    return None


def _compare(op, a, b):
    if a is ERROR or b is ERROR:
        return ERROR
    ta, tb = temporal(a), temporal(b)
    if isinstance(a, Temporal) or isinstance(b, Temporal) or (ta is not None and tb is not None):
        if ta is None or tb is None or ta.kind != tb.kind:
            return ERROR
        x, y = ta.seconds, tb.seconds
        return {"=": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
    na, nb = comparable(a), comparable(b)
    if na is not None and nb is not None:   # exact unless a double is involved (XPath's promotion)
        exact = na[0] in ("integer", "decimal") and nb[0] in ("integer", "decimal")
        x, y = (na[1], nb[1]) if exact else (float(na[1]), float(nb[1]))
    else:
        sa, sb = simple_string(term_of(a)), simple_string(term_of(b))
        if sa is not None and sb is not None:
            x, y = sa, sb
        elif op in ("=", "!="):
            ta, tb = term_of(a), term_of(b)
            if ta is None or tb is None:
                return ERROR
            la, lb = parse_literal(ta), parse_literal(tb)
            if ta != tb and la is not None and lb is not None and not (la[1] or lb[1]) \
                    and not (_understood(ta) and _understood(tb)):
                return ERROR   # RDFterm-equal (§17.4.1.7): two literals it cannot tell apart
            return (ta == tb) if op == "=" else (ta != tb)
        else:
            return ERROR
    return {"=": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]


def order_key(value) -> tuple:
    """The ascending ORDER BY key of an expression's value (SPARQL 1.1 §15.1, ``A.Modifiers``):
    (rank, kind, number, seconds, text); rank 0 error / unbound, 1 blank node, 2 IRI, 3 literal;
    for literals kind 0 number (by value), 1 boolean, 2 dateTime, 3 duration, 4 simple or
    xsd:string (by lexical form), 5 other (by text)."""
    zero = _ZERO
    if value is ERROR or value is None:
        return (0, 0, 0.0, zero, "")
    if isinstance(value, bool):
        return (3, 1, float(value), zero, "")
    if isinstance(value, Number):
        return (3, 0, float(value.value), zero, "")
    if isinstance(value, Temporal):
        return (3, 2 if value.kind == "dateTime" else 3, 0.0, value.seconds, "")
    if value.startswith("_:"):
        return (1, 0, 0.0, zero, value)
    if value.startswith("<"):
        return (2, 0, 0.0, zero, value)
    number = float_value(value)
    if number is not None:
        return (3, 0, number, zero, value)
    lit = parse_literal(value)
    if lit is not None and lit[2] == XSD_BOOLEAN:
        return (3, 1, 1.0 if lit[0] in ("true", "1") else 0.0, zero, value)
    found = temporal(value)
    if found is not None:
        return (3, 2 if found.kind == "dateTime" else 3, 0.0, found.seconds, value)
    simple = simple_string(value)
    if simple is not None:
        return (3, 4, 0.0, zero, simple)
    return (3, 5, 0.0, zero, value)


_ZERO = Decimal(0)


def term_value(e, mu: dict, interval: tuple | None = None, unit: str = "ms", exists=None) -> str | None:
    """The term ``e`` evaluates to under ``mu`` (variable name → term), or None (an error).
    ``interval``: the solution's (t1, t2) in ``unit`` ticks, which getDURATION() / getSTARTTIME() /
    getENDTIME() read as FILTER reads them (``cep.terms.values.eval_expr``)."""
    value = eval_expr(e, mu, interval, unit, None, exists)
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^<{XSD_BOOLEAN}>'
    if isinstance(value, Number):
        return value.term()
    if isinstance(value, str):
        return value
    if isinstance(value, Temporal):
        return temporal_term(value.kind, value.seconds)
    return None   # an error


def fresh_blank(label: str, mu: TMapping, t1: int, t2: int) -> str:
    """The blank node a CONSTRUCT template's ``_:label`` stands for in the solution ⟨μ, [t1, t2]⟩
    (SPARQL 1.1 §16.2: fresh per solution): ``_:label_`` + 16 hex digits of XXH64 chained, as
    Spark's ``xxhash64(cols...)`` chains (seed 42; a null skipped), over the ids of μ's terms by
    variable name and then t1 and t2. The same solution always gives the same node, so a replayed
    or re-evaluated answer is the same triple, and ``cep.engines.spark.evaluate`` names it alike."""
    return fresh_blank_of_ids(label, {name: None if term is None else term_id(term) for name, term in mu.items()},
                              t1, t2)


def fresh_blank_of_ids(label: str, ids: TMapping, t1: int, t2: int) -> str:
    """:func:`fresh_blank` from the ids of the solution's terms ({variable name: id or None})."""
    h = hash_longs(*(ids[name] for name in sorted(ids)), t1, t2)
    return f"_:{label}_{h & 0xFFFFFFFFFFFFFFFF:016x}"
