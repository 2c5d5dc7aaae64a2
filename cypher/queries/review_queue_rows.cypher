// Some mentions by uid with the review queue's columns (review_queue's, the key computed as there, linked or not) and where they came from (source 'review': a span a person added).  Params: u (mention uids), cap
UNWIND $u AS x
MATCH (m:Mention {uid: x})
OPTIONAL MATCH (m)-[l:LINKED_TO]->(:Concept)
WHERE l.rank <= 2
WITH m.uid AS uid, m.doc_id AS doc_id, m.start AS start, m.`end` AS `end`, m.text AS text, m.type AS type,
     m.confidence AS confidence, m.source AS source,
     max(CASE WHEN l.rank = 1 THEN l.score ELSE NULL END) AS s1, max(CASE WHEN l.rank = 2 THEN l.score ELSE NULL END) AS s2
RETURN uid, doc_id, start, `end`, text, type, confidence, s1, s2,
       coalesce(confidence, CASE WHEN s1 IS NULL THEN 0.0 WHEN s2 IS NULL THEN s1 WHEN s1 - s2 > $cap THEN $cap ELSE s1 - s2 END) AS key,
       source;
