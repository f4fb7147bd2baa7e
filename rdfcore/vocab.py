"""RDF, RDFS and OWL terms in N-Triples form (the form every table of the project stores).

Terms are kept as N-Triples strings end to end (``<iri>``, ``_:label``, ``"lex"@lang``,
``"lex"^^<dt>``); ids are derived from exactly these strings (see ``rdfcore.dictionary``).
"""
from __future__ import annotations

RDF_NS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS_NS = "http://www.w3.org/2000/01/rdf-schema#"
OWL_NS = "http://www.w3.org/2002/07/owl#"
XSD_NS = "http://www.w3.org/2001/XMLSchema#"


def iri(value: str) -> str:
    """The N-Triples form of an absolute IRI."""
    return f"<{value}>"


RDF_TYPE = iri(RDF_NS + "type")
RDF_PROPERTY = iri(RDF_NS + "Property")
RDFS_SUBCLASSOF = iri(RDFS_NS + "subClassOf")
RDFS_SUBPROPERTYOF = iri(RDFS_NS + "subPropertyOf")
RDFS_DOMAIN = iri(RDFS_NS + "domain")
RDFS_RANGE = iri(RDFS_NS + "range")
RDFS_CLASS = iri(RDFS_NS + "Class")
RDFS_LABEL = iri(RDFS_NS + "label")
OWL_CLASS = iri(OWL_NS + "Class")
OWL_EQUIVALENTCLASS = iri(OWL_NS + "equivalentClass")
OWL_EQUIVALENTPROPERTY = iri(OWL_NS + "equivalentProperty")
OWL_INVERSEOF = iri(OWL_NS + "inverseOf")
OWL_SYMMETRICPROPERTY = iri(OWL_NS + "SymmetricProperty")
OWL_TRANSITIVEPROPERTY = iri(OWL_NS + "TransitiveProperty")
OWL_IMPORTS = iri(OWL_NS + "imports")
XSD_STRING = iri(XSD_NS + "string")
XSD_INTEGER = iri(XSD_NS + "integer")
XSD_DECIMAL = iri(XSD_NS + "decimal")
XSD_DOUBLE = iri(XSD_NS + "double")

#: Terms the entailment rules write even when the input never mentions them: the dictionary
#: always holds them so that every inferred triple decodes.
ENTAILMENT_VOCABULARY = (RDF_TYPE, RDFS_SUBCLASSOF, RDFS_SUBPROPERTYOF)
