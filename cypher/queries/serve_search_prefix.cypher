// Concept search, then: the concepts whose name starts with $lq (lower-cased), of ontology $o ('' for any), shortest names first.  Params: lq, o; slot limit
MATCH (c:Concept)
WHERE toLower(c.name) STARTS WITH $lq AND ($o = '' OR c.ontology = $o)
RETURN c.uid, c.name, c.ontology ORDER BY size(c.name), c.uid LIMIT {{limit:20}};
