// One mention's machine links (every rank and run), with the concepts' names and ontologies.  Params: m (the mention's uid)
MATCH (:Mention {uid: $m})-[l:LINKED_TO]->(c:Concept)
RETURN c.uid AS concept, c.name AS name, l.score AS score, l.rank AS rank, l.run AS run, c.ontology AS ontology;
