// Concept search, last: the concepts whose name or a synonym holds $lq (lower-cased), of ontology $o ('' for any), shortest names first.
// A parameter inside any() trips LadybugDB's parser: they are bound first (as search.cypher does).  Params: lq, o; slot limit
WITH $lq AS needle, $o AS o
MATCH (c:Concept)
WHERE (toLower(c.name) CONTAINS needle OR any(s IN c.synonyms WHERE toLower(s) CONTAINS needle)) AND (o = '' OR c.ontology = o)
RETURN c.uid, c.name, c.ontology ORDER BY size(c.name), c.uid LIMIT {{limit:20}};
