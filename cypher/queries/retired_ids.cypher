// Ids of an ontology that are no longer concepts but resolve (OBO obsolete, SNOMED inactive,
// ids gone from a later version), with their stated successors.  Params: $ontology
MATCH (r:RetiredId)
WHERE r.ontology = $ontology
RETURN r.uid AS uid, r.name AS name, r.replaced_by AS replaced_by, r.consider AS consider
ORDER BY uid;
