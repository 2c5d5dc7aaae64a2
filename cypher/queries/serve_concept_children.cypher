// A concept's children by key (kgnorm serve's concept page).  Params: k (concept key); slot limit
MATCH (x:Concept)-[:IS_A]->(c:Concept {key: $k})
RETURN x.uid, x.name ORDER BY x.uid LIMIT {{limit:500}};
