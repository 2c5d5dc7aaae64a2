// Linked mentions of a document.  Params: $doc_id
MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept)
WHERE m.doc_id = $doc_id
RETURN m.mention_id AS mention_id, m.text AS mention, l.rank AS rank, c.uid AS concept,
       c.name AS concept_name, l.score AS score, l.method AS method, l.run AS run
ORDER BY m.start, rank;
