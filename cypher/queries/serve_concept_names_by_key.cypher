// Names of concepts given by key (ontology + uid; index lookups).  Params: u (concept keys)
UNWIND $u AS x
MATCH (c:Concept {key: x})
RETURN c.key, c.name;
