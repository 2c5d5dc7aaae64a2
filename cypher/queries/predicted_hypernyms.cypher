// Predicted hypernyms of a concept (or of every concept when $uid is "").  Params: $uid
MATCH (c:Concept)-[p:PREDICTED_IS_A]->(h:Concept)
WHERE $uid = "" OR c.uid = $uid
RETURN c.uid AS uid, c.name AS name, p.rank AS rank, h.uid AS hypernym_uid,
       h.name AS hypernym_name, p.score AS score, p.level AS level, p.run AS run
ORDER BY uid, rank;
