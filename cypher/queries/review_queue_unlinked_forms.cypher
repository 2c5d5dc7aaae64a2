// The review queue's surface forms among the mentions no one reviewed that the machine linked to nothing (key: the calibrated confidence, else 0: as unsure as any); the columns of review_queue_forms.  Params: type ('' for every type)
MATCH (m:Mention)
WHERE ($type = '' OR m.type = $type)
  AND NOT EXISTS { MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true }
  AND NOT EXISTS { MATCH (m)-[l:LINKED_TO]->(:Concept) WHERE l.rank <= 2 }
RETURN toLower(m.text) AS form, m.type AS type, min(coalesce(m.confidence, 0.0)) AS key, min(m.doc_id) AS first_doc,
       count(*) AS n, count(m.confidence) AS n_confidence, sum(1.0 - coalesce(m.confidence, 1.0)) AS wrong;
