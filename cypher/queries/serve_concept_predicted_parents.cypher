// A concept's predicted hypernyms, PREDICTED_IS_A out of it (kgnorm serve's concept page).  Params: k (concept key); slot limit
MATCH (c:Concept {key: $k})-[e:PREDICTED_IS_A]->(x:Concept)
RETURN x.uid, x.name, e.score, e.rank, e.run ORDER BY e.rank, e.score DESC LIMIT {{limit:500}};
