// Concepts of other ontologies that carry xrefs (to resolve XREF edges at ingest).  Params: $ontology
MATCH (c:Concept)
WHERE c.ontology <> $ontology AND size(c.xrefs) > 0
RETURN c.key AS key, c.ontology AS ontology, c.xrefs AS xrefs;
