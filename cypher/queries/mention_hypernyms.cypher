// Predicted hypernyms of free names (Mention nodes), optionally of one run.  Params: $run ("" for all runs)
MATCH (m:Mention)-[p:PREDICTED_IS_A]->(h:Concept)
WHERE $run = "" OR p.run = $run
RETURN m.text AS name, p.rank AS rank, h.uid AS hypernym_uid, h.name AS hypernym_name,
       p.score AS score, p.level AS level, p.run AS run
ORDER BY name, rank;
