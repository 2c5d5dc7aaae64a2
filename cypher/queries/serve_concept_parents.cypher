// A concept's parents by key (kgnorm serve's concept page).  Params: k (concept key); slot limit
MATCH (c:Concept {key: $k})-[:IS_A]->(x:Concept)
RETURN x.uid, x.name ORDER BY x.uid LIMIT {{limit:500}};
