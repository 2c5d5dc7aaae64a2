// Documents after a uid with a mention whose current review names a concept (kgnorm serve's document list, ?concept=).  Params: c (concept uid), after; slot limit
MATCH (m:Mention)-[:REVIEWED]->(r:Review) WHERE r.current = true AND r.concept_uid = $c
MATCH (m)-[:`IN`]->(d:Document) WHERE d.uid > $after
RETURN DISTINCT d.uid, d.doc_id, d.title ORDER BY d.uid LIMIT {{limit:50}};
