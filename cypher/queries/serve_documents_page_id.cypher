// The document list's page of the documents whose doc id or uid is $q, as serve_documents_page.  Params: after, q; slot limit
MATCH (d:Document) WHERE d.uid > $after AND (d.doc_id = $q OR d.uid = $q)
WITH d ORDER BY d.uid LIMIT {{limit:51}}
OPTIONAL MATCH (d)<-[:`IN`]-(m:Mention) WITH DISTINCT d, m
OPTIONAL MATCH (m)-[l:LINKED_TO]->(:Concept) WITH d, m, count(l) AS links
OPTIONAL MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true
RETURN d.uid, m.uid, links, r.decision, r.concept_uid, r.created_at, d.doc_id, d.title;
