// kgnorm check: mentions in no document that should be in one: a span a person added (source
// 'review'), one a detector found in a text (a type), or one read from a file whose documents the
// store keeps (its source is among $sources).  Params: $sources (a list)
MATCH (m:Mention)
WHERE NOT EXISTS { MATCH (m)-[:`IN`]->(:Document) }
  AND (m.source = 'review' OR coalesce(m.type, '') <> '' OR m.source IN $sources)
RETURN m.uid AS mention_uid, m.doc_id AS doc_id, m.source AS source, m.text AS mention
ORDER BY source, doc_id, mention_uid;
