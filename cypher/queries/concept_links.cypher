// Mentions linked to a concept.  Params: $uid
MATCH (:ConceptId {uid: $uid})-[:IDENTIFIES]->(c:Concept)<-[l:LINKED_TO]-(m:Mention)
RETURN m.mention_id AS mention_id, m.text AS mention, m.doc_id AS doc_id, l.rank AS rank,
       l.score AS score, l.method AS method, l.run AS run
ORDER BY doc_id, mention_id, rank;
