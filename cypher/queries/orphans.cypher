// Mentions a re-ingest left orphans of an ontology (their concept went without a single
// successor), with the link they had; `kgnorm link --model M --relink-orphans` links them again.  Params: $ontology
MATCH (m:Mention)-[r:ORPHAN_OF]->(o:Ontology)
WHERE o.name = $ontology
RETURN m.mention_id AS mention_id, m.text AS mention, m.doc_id AS doc_id, r.concept_uid AS was_linked_to,
       r.version AS version, r.run AS run, r.rank AS rank
ORDER BY doc_id, mention_id, rank;
