// Documents after a uid with a mention the machine linked to a concept (kgnorm serve's document list, ?concept=).  Params: c (concept uid), after; slot limit
MATCH (:ConceptId {uid: $c})-[:IDENTIFIES]->(:Concept)<-[:LINKED_TO]-(:Mention)-[:`IN`]->(d:Document) WHERE d.uid > $after
RETURN DISTINCT d.uid, d.doc_id, d.title ORDER BY d.uid LIMIT {{limit:50}};
