// Some documents by uid, each mention with its number of machine links and its current review (kgnorm serve's document list counts, ?concept=).  Params: u (document uids)
MATCH (d:Document) WHERE d.uid IN $u
OPTIONAL MATCH (d)<-[:`IN`]-(m:Mention) WITH DISTINCT d, m
OPTIONAL MATCH (m)-[l:LINKED_TO]->(:Concept) WITH d, m, count(l) AS links
OPTIONAL MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true
RETURN d.uid, m.uid, links, r.decision, r.concept_uid, r.created_at, d.doc_id, d.title;
