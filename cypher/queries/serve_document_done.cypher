// A document's newest done mark, if any.  Params: d (document uid)
MATCH (d:Document {uid: $d})-[:MARKED_DONE]->(x:DocumentDone)
RETURN x.uid, x.doc_id, x.reviewer, x.created_at, x.mentions ORDER BY x.created_at DESC LIMIT 1;
