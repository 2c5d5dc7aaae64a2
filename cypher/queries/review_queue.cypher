// Mentions no one reviewed (no current review), for the review queue: each with its document, its calibrated confidence (null where annotate fitted none) and its machine links at ranks 1 and 2 (the linker's margin), one row per link.  Params: type ('' for every type)
MATCH (m:Mention)
WHERE ($type = '' OR m.type = $type)
  AND NOT EXISTS { MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true }
OPTIONAL MATCH (m)-[:`IN`]->(d:Document)
WITH m, min(d.uid) AS document_uid
OPTIONAL MATCH (m)-[l:LINKED_TO]->(c:Concept)
WHERE l.rank <= 2
RETURN m.uid AS uid, m.doc_id AS doc_id, document_uid, m.start AS start, m.`end` AS `end`, m.text AS text,
       m.type AS type, m.confidence AS confidence, l.run AS run, l.rank AS rank, l.score AS score,
       c.uid AS concept, c.ontology AS ontology, c.name AS concept_name;
