// Concept definitions of an ontology (extra text for the word vectors DAN and BNE start from).  Params: $ontology
MATCH (c:Concept)
WHERE c.ontology = $ontology AND c.definition IS NOT NULL AND c.definition <> ''
RETURN c.definition AS definition
ORDER BY c.uid;
