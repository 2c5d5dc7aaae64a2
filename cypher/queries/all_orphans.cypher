// Mentions a re-ingest left without a concept, of every ontology, with the concept they had (the orphans page of `kgnorm serve`; at most limit rows).  Params: limit (an integer, default 501)
MATCH (m:Mention)-[r:ORPHAN_OF]->(o:Ontology)
RETURN m.uid AS uid, m.text AS mention, m.doc_id AS doc_id, r.concept_uid AS was_linked_to, o.name AS ontology,
       r.version AS version, r.run AS run, r.rank AS rank
ORDER BY doc_id, uid, rank
LIMIT {{limit:501}};
