// Which of the given uids exist as concepts (one primary-key lookup each).  Params: $uids (a list)
UNWIND $uids AS u
MATCH (c:Concept {uid: u})
RETURN c.uid AS uid;
