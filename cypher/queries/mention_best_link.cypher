// Some mentions by uid with the documents they are in and the machine's rank-1 links (one row per document and link): what the review queue shows of the mentions it lists.  Params: u (mention uids)
UNWIND $u AS x
MATCH (m:Mention {uid: x})
OPTIONAL MATCH (m)-[:`IN`]->(d:Document)
OPTIONAL MATCH (m)-[l:LINKED_TO]->(c:Concept)
WHERE l.rank = 1
RETURN m.uid AS uid, d.uid AS document_uid, c.uid AS concept, c.ontology AS ontology, c.name AS concept_name,
       l.score AS score;
