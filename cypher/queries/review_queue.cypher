// The mentions of some surface forms (texts lower-cased) that no one reviewed and the machine linked, as sure as $most or less (the key of review_queue_forms) and in a document up to $last: the review queue picks each form's first mention among them.  Params: forms (lower-cased texts), type ('' for every type), cap, most, last
MATCH (m:Mention)-[l:LINKED_TO]->(:Concept)
WHERE l.rank <= 2 AND toLower(m.text) IN $forms AND ($type = '' OR m.type = $type) AND m.doc_id <= $last
  AND NOT EXISTS { MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true }
WITH m.uid AS uid, m.doc_id AS doc_id, m.start AS start, m.`end` AS `end`, m.text AS text, m.type AS type,
     m.confidence AS confidence,
     max(CASE WHEN l.rank = 1 THEN l.score ELSE NULL END) AS s1, max(CASE WHEN l.rank = 2 THEN l.score ELSE NULL END) AS s2
WITH uid, doc_id, start, `end`, text, type, confidence, s1, s2,
     coalesce(confidence, CASE WHEN s1 IS NULL THEN 0.0 WHEN s2 IS NULL THEN s1 WHEN s1 - s2 > $cap THEN $cap ELSE s1 - s2 END) AS key
WHERE key <= $most
RETURN uid, doc_id, start, `end`, text, type, confidence, s1, s2, key;
