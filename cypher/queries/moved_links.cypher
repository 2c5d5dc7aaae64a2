// Links a re-ingest moved from a merged or replaced concept to its successor.  Params: $ontology
MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept)
WHERE c.ontology = $ontology AND coalesce(l.moved_from, '') <> ''
RETURN m.mention_id AS mention_id, m.text AS mention, l.moved_from AS moved_from, c.uid AS concept,
       l.rank AS rank, l.run AS run
ORDER BY mention_id, rank;
