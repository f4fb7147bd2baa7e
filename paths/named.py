"""RDFS as nested regular expressions (Pérez, Arenas, Gutierrez, nSPARQL; DESIGN.md).

Named algebra values, with the full RDF/RDFS IRIs of ``rdfcore.vocab``. Every ``*`` here is
nSPARQL's, with the identity on voc(G) (``Domain.VOC``): a property is its own sub-property and a
class its own sub-class even when they occur only as predicates or objects.

* ``SC_STAR``  = ``(next::sc)*``                  reflexive-transitive rdfs:subClassOf
* ``SP_STAR``  = ``(next::sp)*``                  reflexive-transitive rdfs:subPropertyOf
* ``SC_PLUS``  = ``(next::sc)+``, ``SP_PLUS`` = ``(next::sp)+``   the transitive ones
* ``TYPE``     = ``next::type/(next::sc)*
                 | edge/(next::sp)*/next::dom/(next::sc)*
                 | node⁻¹/(next::sp)*/next::range/(next::sc)*``
  relates x to every class C such that (x, rdf:type, C) follows from G under the RDFS rules for
  rdf:type, subClassOf, subPropertyOf, domain and range; the reasoner's ``types`` table and this
  expression evaluated over the raw graph must agree (DESIGN.md).
* ``property_pairs(p)`` = ``next::[(next::sp)*/self::p]``: the pairs (x, y) with (x, q, y) ∈ G for
  some sub-property q of p (p included).
"""
from __future__ import annotations

from paths.algebra import (AxisKind, Domain, Path, Term, alt, axis, self_term, seq, star, plus)
from rdfcore.vocab import RDF_TYPE, RDFS_DOMAIN, RDFS_RANGE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF

__all__ = ["SC", "SP", "SC_STAR", "SP_STAR", "SC_PLUS", "SP_PLUS", "TYPE", "property_pairs"]

SC: Path = axis(AxisKind.NEXT, False, RDFS_SUBCLASSOF)
"""``next::sc``"""
SP: Path = axis(AxisKind.NEXT, False, RDFS_SUBPROPERTYOF)
"""``next::sp``"""

SC_STAR: Path = star(SC, Domain.VOC)
SP_STAR: Path = star(SP, Domain.VOC)
SC_PLUS: Path = plus(SC)
SP_PLUS: Path = plus(SP)

TYPE: Path = alt(
    seq(axis(AxisKind.NEXT, False, RDF_TYPE), SC_STAR),
    seq(axis(AxisKind.EDGE), SP_STAR, axis(AxisKind.NEXT, False, RDFS_DOMAIN), SC_STAR),
    seq(axis(AxisKind.NODE, inverse=True), SP_STAR, axis(AxisKind.NEXT, False, RDFS_RANGE),
        SC_STAR),
)


def property_pairs(prop: Term) -> Path:
    """``next::[(next::sp)*/self::prop]``: the triples of ``prop`` and of its sub-properties."""
    return axis(AxisKind.NEXT, False, seq(SP_STAR, self_term(prop)))
