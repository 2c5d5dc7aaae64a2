// The mentions of some surface forms that no one reviewed and the machine linked to nothing, as sure as $most or less and in a document up to $last; the columns of review_queue.  Params: forms (lower-cased texts), type ('' for every type), most, last
MATCH (m:Mention)
WHERE toLower(m.text) IN $forms AND ($type = '' OR m.type = $type) AND m.doc_id <= $last
  AND coalesce(m.confidence, 0.0) <= $most
  AND NOT EXISTS { MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true }
  AND NOT EXISTS { MATCH (m)-[l:LINKED_TO]->(:Concept) WHERE l.rank <= 2 }
RETURN m.uid AS uid, m.doc_id AS doc_id, m.start AS start, m.`end` AS `end`, m.text AS text, m.type AS type,
       m.confidence AS confidence, NULL AS s1, NULL AS s2, coalesce(m.confidence, 0.0) AS key;
