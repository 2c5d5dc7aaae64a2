// kgnorm check: reviews no mention leads to (the mention was deleted under them), or that a mention
// other than the one they name leads to.  Params: none
MATCH (r:Review)
OPTIONAL MATCH (m:Mention)-[:REVIEWED]->(r)
WITH r, collect(m.uid) AS mentions
WHERE size(mentions) = 0 OR any(x IN mentions WHERE x <> r.mention_uid)
RETURN r.uid AS review, r.mention_uid AS mention_uid, r.doc_id AS doc_id, r.decision AS decision,
       r.reviewer AS reviewer, r.created_at AS created_at, mentions
ORDER BY created_at, review;
