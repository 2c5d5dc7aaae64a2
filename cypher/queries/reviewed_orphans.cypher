// Reviewed mentions whose chosen concept a new ontology version removed: the review stays (it
// names the concept by uid), and the mention waits here, beside the ORPHAN_OF ones, for a person
// to settle.  Params: none
MATCH (m:Mention)-[:REVIEWED]->(r:Review)
WHERE r.current = true AND r.decision IN ['accept', 'concept']
  AND NOT EXISTS { MATCH (i:ConceptId)-[:IDENTIFIES]->(c:Concept) WHERE i.uid = r.concept_uid AND c.ontology = r.ontology }
RETURN m.uid AS mention_uid, m.doc_id AS doc_id, m.text AS mention, r.concept_uid AS was_reviewed_as,
       r.ontology AS ontology, r.reviewer AS reviewer, r.created_at AS created_at
ORDER BY doc_id, mention_uid;
