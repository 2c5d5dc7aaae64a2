// kgnorm check: mentions in no document that should be in one: a span a person added (source
// 'review'), or one read from a file whose documents the store keeps (its source is among $sources:
// annotate's inputs, PubTator files linked). Mentions of files without text (TSV, .concept) are in none.
// Params: $sources (a list)
MATCH (m:Mention)
WHERE NOT EXISTS { MATCH (m)-[:`IN`]->(:Document) }
  AND (m.source = 'review' OR m.source IN $sources)
RETURN m.uid AS mention_uid, m.doc_id AS doc_id, m.source AS source, m.text AS mention
ORDER BY source, doc_id, mention_uid;
