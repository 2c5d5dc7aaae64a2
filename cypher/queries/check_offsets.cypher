// kgnorm check: mentions whose offsets fall outside the text of the document they are in (documents
// stored without text, by stores made before documents kept it, are skipped).  Params: none
MATCH (m:Mention)-[:`IN`]->(d:Document)
WHERE coalesce(d.text, '') <> '' AND (m.start < 0 OR m.`end` < m.start OR m.`end` > size(d.text))
RETURN DISTINCT d.uid AS document_uid, d.doc_id AS doc_id, d.source AS source, m.uid AS mention_uid,
       m.start AS start, m.`end` AS `end`, size(d.text) AS text_length
ORDER BY source, doc_id, mention_uid;
