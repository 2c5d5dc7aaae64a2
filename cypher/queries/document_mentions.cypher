// Mentions `kgnorm annotate` found, per document and run, with their rank-1 concept of that run (none: nil).  Params: none
MATCH (m:Mention)-[i:`IN`]->(d:Document)
OPTIONAL MATCH (m)-[l:LINKED_TO]->(c:Concept)
WHERE l.rank = 1 AND (coalesce(i.run, '') = '' OR l.run = i.run)
RETURN d.doc_id AS doc_id, d.source AS source, m.start AS start, m.`end` AS `end`, m.text AS mention,
       m.type AS type, c.uid AS concept, c.name AS concept_name, l.score AS score, i.run AS run
ORDER BY doc_id, source, start, run;
