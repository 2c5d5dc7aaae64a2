// Names of concepts given by bare uid, through ConceptId (kgnorm serve names the first ontology's when several have a uid).  Params: u (concept uids)
UNWIND $u AS x
MATCH (:ConceptId {uid: x})-[:IDENTIFIES]->(c:Concept)
RETURN c.uid, c.name, c.ontology ORDER BY c.ontology DESC;
