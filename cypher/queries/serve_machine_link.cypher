// A mention's best machine link (rank 1, highest score), if any: the current link when no review decides it.  Params: m (mention uid)
MATCH (m:Mention {uid: $m})-[l:LINKED_TO]->(c:Concept)
RETURN c.uid, c.ontology, l.rank, l.score ORDER BY l.rank, l.score DESC LIMIT 1;
