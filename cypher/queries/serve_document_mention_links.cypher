// A document's mentions with every machine link (kgnorm serve's document page keeps each mention's best: rank 1, highest score).  Params: d (document uid)
MATCH (d:Document {uid: $d})<-[:`IN`]-(m:Mention) WITH DISTINCT m
OPTIONAL MATCH (m)-[l:LINKED_TO]->(c:Concept)
RETURN m.uid, m.start, m.`end`, m.type, m.text, c.uid, c.name, l.score, l.rank, c.ontology;
