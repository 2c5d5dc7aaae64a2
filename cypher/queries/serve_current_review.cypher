// A mention's current review, if any (kgnorm serve: what a new review replaces, and the current-link rule's first half).  Params: m (mention uid)
MATCH (m:Mention {uid: $m})-[:REVIEWED]->(r:Review)
WHERE r.current = true
RETURN r.uid, r.decision, r.concept_uid, r.ontology LIMIT 1;
