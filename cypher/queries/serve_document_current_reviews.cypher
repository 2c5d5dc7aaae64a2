// The current review of each reviewed mention of a document (kgnorm serve's document page).  Params: d (document uid)
MATCH (d:Document {uid: $d})<-[:`IN`]-(m:Mention)-[:REVIEWED]->(r:Review) WHERE r.current = true
RETURN DISTINCT m.uid, r.decision, r.concept_uid, r.ontology, r.reviewer, r.created_at;
