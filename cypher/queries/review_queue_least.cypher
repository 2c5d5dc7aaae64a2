// The least sure mentions that no one reviewed and the machine linked (of some surface forms, lower-cased; [] for every form), the columns and key of review_queue, least sure first (then by document, start and uid): what the review queue's cache reads ahead.  Params: forms (lower-cased texts, or []), cap; slot k (how many)
MATCH (m:Mention)-[l:LINKED_TO]->(:Concept)
WHERE l.rank <= 2 AND (size($forms) = 0 OR toLower(m.text) IN $forms)
  AND NOT EXISTS { MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true }
WITH m.uid AS uid, coalesce(m.doc_id, '') AS doc_id, m.start AS start, m.`end` AS `end`, m.text AS text,
     m.type AS type, m.confidence AS confidence,
     max(CASE WHEN l.rank = 1 THEN l.score ELSE NULL END) AS s1, max(CASE WHEN l.rank = 2 THEN l.score ELSE NULL END) AS s2
WITH uid, doc_id, start, `end`, text, type, confidence, s1, s2,
     coalesce(confidence, CASE WHEN s1 IS NULL THEN 0.0 WHEN s2 IS NULL THEN s1 WHEN s1 - s2 > $cap THEN $cap ELSE s1 - s2 END) AS key
RETURN uid, doc_id, start, `end`, text, type, confidence, s1, s2, key, coalesce(start, -1) AS at
ORDER BY key, doc_id, at, uid
LIMIT {{k:1000}};
