// Mentions of one text (compared lower-cased) and type that no one reviewed (no current review), with each one's machine links at rank 1: where `kgnorm serve` copies a review to (apply_to_same_text).  Params: text (lower-cased), type, except (the reviewed mention's uid)
MATCH (m:Mention)
WHERE toLower(m.text) = $text AND coalesce(m.type, '') = $type AND m.uid <> $except
  AND NOT EXISTS { MATCH (m)-[:REVIEWED]->(r:Review) WHERE r.current = true }
OPTIONAL MATCH (m)-[l:LINKED_TO]->(c:Concept)
WHERE l.rank = 1
RETURN m.uid AS uid, m.doc_id AS doc_id, c.uid AS concept, c.ontology AS ontology, l.score AS score
ORDER BY uid;
