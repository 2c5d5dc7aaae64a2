// Mentions whose current review names a concept of an ontology (kgnorm serve's concept page).  Params: u (concept uid), o (ontology); slot limit
MATCH (m:Mention)-[:REVIEWED]->(r:Review) WHERE r.current = true AND r.concept_uid = $u AND r.ontology = $o
RETURN m.uid, m.text, m.doc_id, r.decision, r.reviewer ORDER BY m.doc_id, m.uid LIMIT {{limit:501}};
