// Which of the given uids exist as concepts (one primary-key lookup each).  Params: $uids (a list)
UNWIND $uids AS u
MATCH (i:ConceptId {uid: u})-[:IDENTIFIES]->(:Concept)
RETURN DISTINCT i.uid AS uid;
