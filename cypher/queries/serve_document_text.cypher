// A document's id and text by uid (kgnorm serve: a span a person adds is checked against it).  Params: d (document uid)
MATCH (d:Document {uid: $d})
RETURN d.doc_id, d.text;
