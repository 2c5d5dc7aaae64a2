// The least sure mentions that no one reviewed and the machine linked to nothing (of some surface forms, lower-cased; [] for every form), the columns of review_queue_least, in its order.  Params: forms (lower-cased texts, or []); slot k (how many)
MATCH (m:Mention)
WHERE (size($forms) = 0 OR toLower(m.text) IN $forms)
  AND NOT EXISTS { MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true }
  AND NOT EXISTS { MATCH (m)-[l:LINKED_TO]->(:Concept) WHERE l.rank <= 2 }
WITH m.uid AS uid, coalesce(m.doc_id, '') AS doc_id, m.start AS start, m.`end` AS `end`, m.text AS text,
     m.type AS type, m.confidence AS confidence, coalesce(m.confidence, 0.0) AS key
RETURN uid, doc_id, start, `end`, text, type, confidence, NULL AS s1, NULL AS s2, key, coalesce(start, -1) AS at
ORDER BY key, doc_id, at, uid
LIMIT {{k:1000}};
