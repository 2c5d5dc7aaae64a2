// A concept by uid with its parents and children (one row per ontology that has the uid).  Params: $uid
MATCH (:ConceptId {uid: $uid})-[:IDENTIFIES]->(c:Concept)
OPTIONAL MATCH (c)-[:IS_A]->(p:Concept)
WITH c, collect(p.uid) AS parents
OPTIONAL MATCH (ch:Concept)-[:IS_A]->(c)
RETURN c.uid AS uid, c.name AS name, c.ontology AS ontology, c.depth AS depth,
       c.synonyms AS synonyms, c.alt_ids AS alt_ids, parents, collect(ch.uid) AS children;
