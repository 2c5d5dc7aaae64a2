// The review queue's surface forms: per text (lower-cased) and type, over the mentions no one reviewed (no current review) that the machine linked, how sure the least sure of them is (key: the calibrated confidence, else the margin of rank 1 over rank 2, capped at $cap, else the rank-1 score), the first document, how many there are, how many carry a confidence and the sum of (1 - confidence).  Params: type ('' for every type), cap
MATCH (m:Mention)-[l:LINKED_TO]->(:Concept)
WHERE l.rank <= 2 AND ($type = '' OR m.type = $type)
  AND NOT EXISTS { MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true }
WITH m.uid AS uid, toLower(m.text) AS form, m.type AS type, m.confidence AS confidence, m.doc_id AS doc_id,
     max(CASE WHEN l.rank = 1 THEN l.score ELSE NULL END) AS s1, max(CASE WHEN l.rank = 2 THEN l.score ELSE NULL END) AS s2
WITH form, type, confidence, doc_id,
     CASE WHEN s1 IS NULL THEN 0.0 WHEN s2 IS NULL THEN s1 WHEN s1 - s2 > $cap THEN $cap ELSE s1 - s2 END AS sure
RETURN form, type, min(coalesce(confidence, sure)) AS key, min(doc_id) AS first_doc, count(*) AS n,
       count(confidence) AS n_confidence, sum(1.0 - coalesce(confidence, 1.0)) AS wrong;
