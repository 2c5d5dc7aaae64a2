// kgnorm check: mentions whose offsets may fall outside the text of the document they are in (documents
// stored without text, by stores made before documents kept it, are skipped); kgnorm check tests each
// again against the text's length in code points, since size() counts grapheme clusters on LadybugDB.  Params: none
MATCH (m:Mention)-[:`IN`]->(d:Document)
WHERE coalesce(d.text, '') <> '' AND (m.start IS NULL OR m.`end` IS NULL OR m.start < 0 OR m.`end` < m.start
                                     OR m.`end` > size(d.text))
RETURN DISTINCT d.uid AS document_uid, d.doc_id AS doc_id, d.source AS source, m.uid AS mention_uid,
       m.start AS start, m.`end` AS `end`, size(d.text) AS text_length
ORDER BY source, doc_id, mention_uid;
