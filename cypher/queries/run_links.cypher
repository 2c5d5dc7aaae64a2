// Links written by one run.  Params: $run
MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept)
WHERE l.run = $run
RETURN m.mention_id AS mention_id, m.text AS mention, l.rank AS rank, c.uid AS concept, l.score AS score
ORDER BY mention_id, rank;
