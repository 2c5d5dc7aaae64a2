// Mentions the machine linked to a concept, by key (kgnorm serve's concept page).  Params: k (concept key); slot limit
MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept {key: $k})
RETURN m.uid, m.text, m.doc_id, l.score, l.rank ORDER BY m.doc_id, m.uid LIMIT {{limit:501}};
