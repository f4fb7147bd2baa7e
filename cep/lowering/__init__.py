"""Syntax tree → algebra, with the checks the grammar cannot do, for the four languages
(CQELS-CEP, C-SPARQL, EP-SPARQL, RSEP-QL)."""
