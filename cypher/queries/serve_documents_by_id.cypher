// The documents with a plain doc id, the one with the most mentions first (kgnorm serve's document page, when no uid matched).  Params: d (doc id)
MATCH (d:Document) WHERE d.doc_id = $d
OPTIONAL MATCH (m:Mention)-[:`IN`]->(d)
RETURN d.uid, count(DISTINCT m) AS n ORDER BY n DESC, d.uid LIMIT 50;
