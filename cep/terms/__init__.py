"""Literals and values: the XPath / SPARQL value semantics every engine uses (``literals``: the
XSD datatypes and literal syntax; ``numbers``: computed numbers typed as XPath types them;
``aggregates``: C-SPARQL's aggregate functions over terms)."""
