// Case-insensitive name search over names and synonyms.  Params: $q, optional limit (integer literal, default 25).
WITH toLower($q) AS needle
MATCH (c:Concept)
WHERE toLower(c.name) CONTAINS needle
   OR any(s IN c.synonyms WHERE toLower(s) CONTAINS needle)
RETURN c.uid AS uid, c.name AS name, c.ontology AS ontology
ORDER BY size(c.name), uid
LIMIT {{limit:25}};
