// Concept search (kgnorm serve's type-ahead), first: the concepts whose uid is exactly $q, of ontology $o ('' for any).  Params: q, o
MATCH (:ConceptId {uid: $q})-[:IDENTIFIES]->(c:Concept)
WHERE $o = '' OR c.ontology = $o
RETURN c.uid, c.name, c.ontology;
