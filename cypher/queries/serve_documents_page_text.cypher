// The document list's page of the documents whose title or text has $lq (lower-cased; a scan of every text), as serve_documents_page.  Params: after, lq; slot limit
MATCH (d:Document) WHERE d.uid > $after AND (toLower(coalesce(d.title, '')) CONTAINS $lq OR toLower(coalesce(d.text, '')) CONTAINS $lq)
WITH d ORDER BY d.uid LIMIT {{limit:51}}
OPTIONAL MATCH (d)<-[:`IN`]-(m:Mention) WITH DISTINCT d, m
OPTIONAL MATCH (m)-[l:LINKED_TO]->(:Concept) WITH d, m, count(l) AS links
OPTIONAL MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true
RETURN d.uid, m.uid, links, r.decision, r.concept_uid, r.created_at, d.doc_id, d.title;
