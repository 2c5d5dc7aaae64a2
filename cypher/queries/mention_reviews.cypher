// Every review of one mention, newest first (its history on the review page): who decided what and when, a withdrawal ending the review before it.  Params: m (the mention's uid)
MATCH (:Mention {uid: $m})-[:REVIEWED]->(r:Review)
RETURN r.decision AS decision, r.concept_uid AS concept, r.ontology AS ontology, r.reviewer AS reviewer,
       r.created_at AS created_at, r.uid AS review, r.propagated_from AS propagated_from, r.elapsed_ms AS elapsed_ms
ORDER BY created_at DESC, review;
