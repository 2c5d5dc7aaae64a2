// kgnorm check: each ontology's recorded concept count (at its load) beside the concepts the store
// holds for it, and the concepts of ontologies with no Ontology node (recorded -1).  Params: none
MATCH (o:Ontology)
OPTIONAL MATCH (c:Concept {ontology: o.name})
RETURN o.name AS ontology, o.concept_count AS recorded, count(c) AS stored
UNION ALL
MATCH (c:Concept)
WHERE NOT EXISTS { MATCH (o:Ontology) WHERE o.name = c.ontology }
RETURN c.ontology AS ontology, -1 AS recorded, count(c) AS stored;
