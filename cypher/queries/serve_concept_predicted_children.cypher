// The concepts predicted to be a concept's children, PREDICTED_IS_A into it (kgnorm serve's concept page).  Params: k (concept key); slot limit
MATCH (x:Concept)-[e:PREDICTED_IS_A]->(c:Concept {key: $k})
RETURN x.uid, x.name, e.score, e.rank, e.run ORDER BY e.rank, e.score DESC LIMIT {{limit:500}};
