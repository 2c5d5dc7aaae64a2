// Every done mark (a person said a document's mentions are all reviewed and the missed ones added), with its document.  Params: none
MATCH (d:Document)-[:MARKED_DONE]->(x:DocumentDone)
RETURN x.uid, d.uid, x.doc_id, x.reviewer, x.created_at, x.mentions;
