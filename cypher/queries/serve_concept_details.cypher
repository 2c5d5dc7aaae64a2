// Concepts by uid with their names, synonyms, definition and parents, one row per ontology and parent (kgnorm serve's candidate details).  Params: u (concept uids)
UNWIND $u AS x
MATCH (:ConceptId {uid: x})-[:IDENTIFIES]->(c:Concept)
OPTIONAL MATCH (c)-[:IS_A]->(p:Concept)
RETURN c.uid, c.ontology, c.name, c.synonyms, c.definition, p.uid, p.name;
