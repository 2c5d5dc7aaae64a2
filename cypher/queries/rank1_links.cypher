// Some mentions by uid with each run's rank-1 link of them.  Params: u (mention uids)
UNWIND $u AS x
MATCH (m:Mention {uid: x})-[l:LINKED_TO]->(c:Concept)
WHERE l.rank = 1
RETURN m.uid AS mention_uid, l.run AS run, c.uid AS concept;
