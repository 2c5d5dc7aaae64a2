// Neo4j 5 schema for the kgnorm graph model (docs/architecture.md, "Graph model"): uniqueness constraints first,
// so that every labelled MATCH in the batched UNWIND writes is an index lookup.
CREATE CONSTRAINT kgnorm_ontology_name IF NOT EXISTS FOR (o:Ontology) REQUIRE o.name IS UNIQUE;
// A concept is keyed by ontology + uid (`ontology|uid`): ontologies that share CURIEs each keep
// their node. Stores made before keep their nodes: the uid constraint goes, each gets its key.
// A (:ConceptId {uid})-[:IDENTIFIES]->(:Concept) per concept serves lookups by uid (the saved
// queries are shared with LadybugDB, which indexes only primary keys).
DROP CONSTRAINT kgnorm_concept_uid IF EXISTS;
CREATE CONSTRAINT kgnorm_concept_key IF NOT EXISTS FOR (c:Concept) REQUIRE c.key IS UNIQUE;
CREATE CONSTRAINT kgnorm_conceptid_uid IF NOT EXISTS FOR (i:ConceptId) REQUIRE i.uid IS UNIQUE;
CREATE INDEX kgnorm_concept_uid_lookup IF NOT EXISTS FOR (c:Concept) ON (c.uid);
MATCH (c:Concept) WHERE c.key IS NULL SET c.key = c.ontology + '|' + c.uid MERGE (i:ConceptId {uid: c.uid}) CREATE (i)-[:IDENTIFIES]->(c);
CREATE CONSTRAINT kgnorm_mention_uid IF NOT EXISTS FOR (m:Mention) REQUIRE m.uid IS UNIQUE;
CREATE CONSTRAINT kgnorm_run_uid IF NOT EXISTS FOR (r:Run) REQUIRE r.uid IS UNIQUE;
CREATE INDEX kgnorm_concept_ontology IF NOT EXISTS FOR (c:Concept) ON (c.ontology);
CREATE INDEX kgnorm_mention_doc IF NOT EXISTS FOR (m:Mention) ON (m.doc_id);
// Issue 27: (:RetiredId {key: ontology|uid, uid, ontology, name, replaced_by[], consider[]}) for ids
// that are no longer concepts but resolve; LINKED_TO.moved_from and (:Mention)-[:ORPHAN_OF]->(:Ontology)
// need no DDL here.
CREATE CONSTRAINT kgnorm_retired_key IF NOT EXISTS FOR (r:RetiredId) REQUIRE r.key IS UNIQUE;
CREATE INDEX kgnorm_retired_ontology IF NOT EXISTS FOR (r:RetiredId) ON (r.ontology);
CREATE CONSTRAINT kgnorm_document_uid IF NOT EXISTS FOR (d:Document) REQUIRE d.uid IS UNIQUE;
// Issue 40 (kgnorm serve): Document.title/text need no DDL; documents are opened by doc_id,
// reviews by uid and (:Mention)-[:REVIEWED]->(:Review) from an indexed mention.
CREATE INDEX kgnorm_document_doc_id IF NOT EXISTS FOR (d:Document) ON (d.doc_id);
CREATE CONSTRAINT kgnorm_review_uid IF NOT EXISTS FOR (r:Review) REQUIRE r.uid IS UNIQUE;
// Issue 42 (kgnorm match): (:Concept)-[:MAPS_TO {predicate, confidence, justification, run}]->(:Concept)
// between two ontologies needs no DDL here; its ends are matched by the concept key constraint.
// Issue 50: (:Document)-[:MARKED_DONE]->(:DocumentDone): a document a person marked done.
CREATE CONSTRAINT kgnorm_document_done_uid IF NOT EXISTS FOR (x:DocumentDone) REQUIRE x.uid IS UNIQUE;
