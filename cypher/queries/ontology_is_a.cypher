// IS_A edges (child, parent) of an ontology (feeds hierarchy views).  Params: $ontology
MATCH (c:Concept)-[:IS_A]->(p:Concept)
WHERE c.ontology = $ontology
RETURN c.uid AS child, p.uid AS parent;
