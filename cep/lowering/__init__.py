"""Syntax tree → algebra, with the checks the grammar cannot do, for the four languages: the entry
points (``languages``: ``lower``, ``compile_query``, ``detect_language``), one module per language
(``cqels`` for CQELS-CEP, ``csparql`` for C-SPARQL, ``epsparql`` for EP-SPARQL, ``rsepql`` for
RSEP-QL) and what they share (``common``)."""
