// One mention by uid, with its offsets, type, text and a document it is in.  Params: m (the mention's uid)
MATCH (m:Mention {uid: $m})
OPTIONAL MATCH (m)-[:`IN`]->(d:Document)
RETURN m.uid AS uid, m.start AS start, m.`end` AS `end`, m.type AS type, m.text AS text, m.doc_id AS doc_id,
       d.uid AS document_uid
LIMIT 1;
