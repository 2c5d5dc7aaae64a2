// Every review with its mention and the documents the mention is in (one row per review and document): what `kgnorm export reviewed` writes out, picking per mention its current review (or one reviewer's newest).  Params: none
MATCH (m:Mention)-[:REVIEWED]->(r:Review)
OPTIONAL MATCH (m)-[:`IN`]->(d:Document)
RETURN DISTINCT d.uid AS document_uid, d.doc_id AS doc_id, d.title AS title, d.text AS doc_text, m.uid AS mention_uid,
       m.doc_id AS mention_doc_id, m.start AS start, m.`end` AS `end`, m.text AS text, m.type AS type,
       r.decision AS decision, r.concept_uid AS concept_uid, r.ontology AS ontology, r.created_at AS created_at,
       r.reviewer AS reviewer, r.current AS current, r.uid AS review;
