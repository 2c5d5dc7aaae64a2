// A concept by uid, one row per ontology that has it (kgnorm serve's concept page).  Params: u (concept uid)
MATCH (:ConceptId {uid: $u})-[:IDENTIFIES]->(c:Concept)
RETURN c.key, c.uid, c.ontology, c.name, c.synonyms, c.definition, c.xrefs, c.alt_ids, c.obsolete ORDER BY c.ontology;
