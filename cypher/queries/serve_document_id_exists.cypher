// A document whose doc id or uid is $q, if any (kgnorm serve's document list: an id search before a text search).  Params: q
MATCH (d:Document) WHERE d.doc_id = $q OR d.uid = $q
RETURN d.uid LIMIT 1;
