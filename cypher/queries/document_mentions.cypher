// Mentions `kgnorm annotate` found, per document, with their rank-1 concept (none: nil).  Params: none
MATCH (m:Mention)-[:`IN`]->(d:Document)
OPTIONAL MATCH (m)-[l:LINKED_TO]->(c:Concept)
WHERE l.rank = 1
RETURN d.doc_id AS doc_id, d.source AS source, m.start AS start, m.`end` AS `end`, m.text AS mention,
       m.type AS type, c.uid AS concept, c.name AS concept_name, l.score AS score
ORDER BY doc_id, source, start;
