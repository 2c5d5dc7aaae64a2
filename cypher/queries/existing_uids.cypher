// Which of the given uids exist as concepts.  Params: $uids (a list)
MATCH (c:Concept)
WHERE c.uid IN $uids
RETURN c.uid AS uid;
