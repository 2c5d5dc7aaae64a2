// Every mention with a current review, with each run's rank-1 link of it and the review's decision and concept: whether people accepted a run's links.  Params: none
MATCH (m:Mention)-[:REVIEWED]->(rv:Review)
WHERE rv.current = true
MATCH (m)-[l:LINKED_TO]->(c:Concept)
WHERE l.rank = 1
RETURN m.uid AS mention_uid, l.run AS run, c.uid AS concept, rv.decision AS decision, rv.concept_uid AS reviewed_concept;
