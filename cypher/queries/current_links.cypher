// The current link of every mention: a person's review wins over the machine. source is 'review'
// (the mention's current review decided: accept/concept give its concept, nil and not_a_mention
// none; one row) or 'machine' (its best LINKED_TO: rank 1, a row for every run that linked it).  Params: none
MATCH (m:Mention)
OPTIONAL MATCH (m)-[:REVIEWED]->(r:Review)
WHERE r.current = true
OPTIONAL MATCH (m)-[l:LINKED_TO]->(c:Concept)
WHERE l.rank = 1
WITH m, r, c, l
WHERE r IS NOT NULL OR c IS NOT NULL
RETURN DISTINCT m.doc_id AS doc_id, m.uid AS mention_uid, m.start AS start, m.`end` AS `end`, m.text AS mention,
       CASE WHEN r IS NULL THEN c.uid WHEN r.decision IN ['accept', 'concept'] THEN r.concept_uid ELSE NULL END AS concept,
       CASE WHEN r IS NULL THEN 'machine' ELSE 'review' END AS source,
       r.decision AS decision, r.reviewer AS reviewer,
       CASE WHEN r IS NULL THEN l.score ELSE NULL END AS score, CASE WHEN r IS NULL THEN l.run ELSE NULL END AS run
ORDER BY doc_id, start, mention_uid;
