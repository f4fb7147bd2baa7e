"""DESIGN.md's running example (CQELS-CEP Example 6): the query is the file the product ships,
``ontologies/vienna_example_query.rq`` (the demo's and README's), read here — the tests keep no copy
of its text."""
from __future__ import annotations

from pathlib import Path

#: The shipped query file.
EXAMPLE_6_PATH = Path(__file__).resolve().parent.parent / "ontologies" / "vienna_example_query.rq"
#: Its namespaces: ``:`` (stops, connections, :delayAt, ...) and ``ex:`` (the map and the stream).
VIENNA = "http://example.org/vienna#"
EXAMPLE_ORG = "http://example.org/"
TRANSPORTATION_MAP = f"<{EXAMPLE_ORG}transportationMap>"
PUBLIC_TRANSPORT = f"<{EXAMPLE_ORG}publicTransport>"


def example_6_query() -> str:
    """The text of CQELS-CEP Example 6 with the prefixes the paper leaves out."""
    return EXAMPLE_6_PATH.read_text(encoding="utf-8")


EXAMPLE_6 = example_6_query()
