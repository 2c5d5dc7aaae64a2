// Descendants of a root down to depth N.  Params: $root, {{depth}} (an integer literal, default 3; set with --param depth=N).
MATCH (:ConceptId {uid: $root})-[:IDENTIFIES]->(r:Concept)
MATCH (d:Concept)-[:IS_A*1..{{depth:3}}]->(r)
RETURN DISTINCT d.uid AS uid, d.name AS name, d.depth AS depth
ORDER BY depth, uid;
