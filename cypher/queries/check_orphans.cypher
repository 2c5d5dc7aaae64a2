// kgnorm check: mentions a re-ingest left orphans, per ontology (not a fault: `link --relink-orphans`
// or a person settles them).  Params: none
MATCH (m:Mention)-[:ORPHAN_OF]->(o:Ontology)
RETURN o.name AS ontology, count(DISTINCT m) AS mentions
ORDER BY ontology;
