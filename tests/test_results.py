"""SPARQL 1.1 Query Results writers (jobs/results.py): TSV, CSV and JSON, no Spark."""
from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.results import parse_term, write_results
from rdfcore.terms import literal
from tests.hypothesis_profiles import examples

XSD_INT = "http://www.w3.org/2001/XMLSchema#integer"
ROWS = [
    {"start": "<http://ex/a>", "end": '"plain"'},
    {"start": "_:b0", "end": '"chat"@fr'},
    {"start": "<http://ex/a>", "end": f'"42"^^<{XSD_INT}>'},
    {"start": "<http://ex/c>", "end": None},           # unbound
    {"end": '"x, \\"y\\"\\nz"'},                        # start missing = unbound; comma, quotes, LF
]


def write(rows, fmt, variables=("start", "end")) -> str:
    out = io.StringIO()
    write_results(rows, list(variables), fmt, out)
    return out.getvalue()


def test_tsv_header_terms_and_unbound():
    text = write(ROWS, "tsv")
    assert text.split("\n") == [
        "?start\t?end",
        "<http://ex/a>\t\"plain\"",
        "_:b0\t\"chat\"@fr",
        f"<http://ex/a>\t\"42\"^^<{XSD_INT}>",
        "<http://ex/c>\t",
        '\t"x, \\"y\\"\\nz"',
        "",
    ]


def test_tsv_escapes_tab_and_newline_inside_literals():
    raw = '"a\tb\nc"'  # a term whose tab/newline were not escaped upstream
    text = write([{"start": raw, "end": "<http://ex/x>"}], "tsv")
    assert text.split("\n")[1] == '"a\\tb\\nc"\t<http://ex/x>'
    assert text.count("\t") == 2  # header separator + row separator only


def test_csv_plain_values_rfc4180_quoting_crlf():
    text = write(ROWS, "csv")
    assert text == (
        "start,end\r\n"
        "http://ex/a,plain\r\n"
        "_:b0,chat\r\n"
        "http://ex/a,42\r\n"
        "http://ex/c,\r\n"
        ',"x, ""y""\nz"\r\n'
    )
    # a standard CSV reader gets the values back
    parsed = list(csv.reader(io.StringIO(text, newline="")))
    assert parsed[0] == ["start", "end"]
    assert parsed[5] == ["", 'x, "y"\nz']


def test_json_types_lang_datatype_bnode_and_unbound():
    doc = json.loads(write(ROWS, "json"))
    assert doc["head"] == {"vars": ["start", "end"]}
    assert doc["results"]["bindings"] == [
        {"start": {"type": "uri", "value": "http://ex/a"}, "end": {"type": "literal", "value": "plain"}},
        {"start": {"type": "bnode", "value": "b0"},
         "end": {"type": "literal", "value": "chat", "xml:lang": "fr"}},
        {"start": {"type": "uri", "value": "http://ex/a"},
         "end": {"type": "literal", "value": "42", "datatype": XSD_INT}},
        {"start": {"type": "uri", "value": "http://ex/c"}},
        {"end": {"type": "literal", "value": 'x, "y"\nz'}},
    ]


def test_json_empty_result_is_valid():
    doc = json.loads(write([], "json"))
    assert doc == {"head": {"vars": ["start", "end"]}, "results": {"bindings": []}}


def test_unicode_escapes_are_decoded_for_csv_and_json():
    rows = [{"x": '"caf\\u00E9 \\U0001F600"@de-AT', "y": "<http://ex/\\u00E9>"}]
    assert write(rows, "csv", ("x", "y")).split("\r\n")[1] == "caf\u00e9 \U0001F600,http://ex/\u00e9"
    doc = json.loads(write(rows, "json", ("x", "y")))
    assert doc["results"]["bindings"][0]["x"] == {"type": "literal", "value": "caf\u00e9 \U0001F600",
                                                  "xml:lang": "de-at"}
    assert doc["results"]["bindings"][0]["y"] == {"type": "uri", "value": "http://ex/\u00e9"}


def test_variables_with_question_mark_and_extra_keys_ignored():
    text = write([{"s": "<http://ex/a>", "other": "<http://ex/z>"}], "tsv", ("?s",))
    assert text == "?s\n<http://ex/a>\n"


@pytest.mark.parametrize("bad", ["http://ex/a", '"open', "_:", "<a> <b>", 42, '"x"^^xsd:int'])
def test_bad_terms_are_rejected(bad):
    with pytest.raises(ValueError, match="N-Triples"):
        write([{"start": bad}], "json")


def test_unknown_format_and_bad_variable():
    with pytest.raises(ValueError, match="unknown results format 'xml'"):
        write([], "xml")
    with pytest.raises(ValueError, match="not a SPARQL variable name"):
        write([], "tsv", ("a b",))
    with pytest.raises(ValueError, match="duplicate"):
        write([], "tsv", ("a", "?a"))


_lexical = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=examples(200), deadline=None)
@given(lexical=_lexical, lang=st.sampled_from([None, "en", "de-at"]))
def test_roundtrip_through_json_and_csv(lexical, lang):
    term = literal(lexical, lang=lang)
    assert parse_term(term).value == lexical
    doc = json.loads(write([{"v": term}], "json", ("v",)))
    assert doc["results"]["bindings"][0]["v"]["value"] == lexical
    rows = list(csv.reader(io.StringIO(write([{"v": term}], "csv", ("v",)), newline="")))
    if lexical:
        assert rows[1] == [lexical]
    else:  # an empty value is an empty line: csv reads it as no field at all
        assert rows[1] in ([""], [])
    tsv_line = write([{"v": term}], "tsv", ("v",)).split("\n")
    assert len(tsv_line) == 3 and "\t" not in tsv_line[1]
