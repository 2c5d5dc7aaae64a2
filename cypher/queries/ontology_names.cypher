// Every concept of an ontology with its names (feeds dictionaries and hierarchy views).  Params: $ontology
MATCH (c:Concept)
WHERE c.ontology = $ontology
RETURN c.uid AS uid, c.name AS name, c.synonyms AS synonyms, c.alt_ids AS alt_ids, c.depth AS depth
ORDER BY uid;
