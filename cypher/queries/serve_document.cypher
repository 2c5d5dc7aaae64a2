// A document by uid with its text (kgnorm serve's document page).  Params: d (document uid)
MATCH (d:Document {uid: $d})
RETURN d.uid, d.doc_id, d.title, d.text;
