// Every mention in a stored document whose current review is one of $decisions, with the document (kgnorm retrain's training data).  Params: decisions
MATCH (m:Mention)-[:REVIEWED]->(r:Review) WHERE r.current = true AND r.decision IN $decisions
MATCH (m)-[:`IN`]->(d:Document)
RETURN DISTINCT d.uid, d.doc_id, d.title, d.text, m.uid, m.start, m.`end`, m.text, m.type,
       r.decision, r.concept_uid, r.created_at;
