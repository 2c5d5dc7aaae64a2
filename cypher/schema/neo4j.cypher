// Neo4j 5 schema for the kgnorm graph model (DESIGN §3): uniqueness constraints first,
// so that every labelled MATCH in the batched UNWIND writes is an index lookup.
CREATE CONSTRAINT kgnorm_ontology_name IF NOT EXISTS FOR (o:Ontology) REQUIRE o.name IS UNIQUE;
CREATE CONSTRAINT kgnorm_concept_uid IF NOT EXISTS FOR (c:Concept) REQUIRE c.uid IS UNIQUE;
CREATE CONSTRAINT kgnorm_mention_uid IF NOT EXISTS FOR (m:Mention) REQUIRE m.uid IS UNIQUE;
CREATE CONSTRAINT kgnorm_run_uid IF NOT EXISTS FOR (r:Run) REQUIRE r.uid IS UNIQUE;
CREATE INDEX kgnorm_concept_ontology IF NOT EXISTS FOR (c:Concept) ON (c.ontology);
CREATE INDEX kgnorm_mention_doc IF NOT EXISTS FOR (m:Mention) ON (m.doc_id);
