// A concept's mappings to other ontologies (kgnorm match), both directions: `direction` is "out" where
// the concept is the subject (its rows first), "in" where another ontology's concept maps to it.  Params: $uid
MATCH (:ConceptId {uid: $uid})-[:IDENTIFIES]->(c:Concept)-[m:MAPS_TO]->(o:Concept)
RETURN c.uid AS uid, c.ontology AS ontology, "out" AS direction, m.predicate AS predicate, o.uid AS other_uid,
       o.name AS other_name, o.ontology AS other_ontology, m.confidence AS confidence,
       m.justification AS justification, m.run AS run
UNION ALL
MATCH (:ConceptId {uid: $uid})-[:IDENTIFIES]->(c:Concept)<-[m:MAPS_TO]-(o:Concept)
RETURN c.uid AS uid, c.ontology AS ontology, "in" AS direction, m.predicate AS predicate, o.uid AS other_uid,
       o.name AS other_name, o.ontology AS other_ontology, m.confidence AS confidence,
       m.justification AS justification, m.run AS run;
