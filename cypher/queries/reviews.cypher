// Every review people made (kgnorm serve, Workbench.review), newest first: the mention, its
// decision, the concept chosen and the one it had before, the review it copies (propagated_from:
// apply_to_same_text) and the time the page measured deciding it (elapsed_ms).  Params: none
MATCH (m:Mention)-[:REVIEWED]->(r:Review)
RETURN r.uid AS review, m.uid AS mention_uid, m.doc_id AS doc_id, m.text AS mention, r.decision AS decision,
       r.concept_uid AS concept, r.ontology AS ontology, r.previous_concept_uid AS previous_concept,
       r.reviewer AS reviewer, r.created_at AS created_at, r.current AS current,
       r.propagated_from AS propagated_from, r.elapsed_ms AS elapsed_ms
ORDER BY created_at DESC, review;
