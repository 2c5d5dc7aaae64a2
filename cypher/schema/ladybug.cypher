// LadybugDB (Kùzu dialect) schema for the kgnorm graph model (docs/architecture.md, "Graph model").
// Statements end with ';'.
CREATE NODE TABLE IF NOT EXISTS Ontology(name STRING PRIMARY KEY, version STRING, source_path STRING, format STRING, loaded_at STRING, concept_count INT64);
ALTER TABLE Ontology ADD IF NOT EXISTS content_digest STRING DEFAULT '';
// A concept is keyed by ontology + uid (`ontology|uid`): ontologies that share CURIEs each keep their node.
CREATE NODE TABLE IF NOT EXISTS Concept(key STRING PRIMARY KEY, uid STRING, ontology STRING, code STRING, name STRING, synonyms STRING[], synonym_scopes STRING[], alt_ids STRING[], xrefs STRING[], definition STRING, depth INT64, level_label STRING, obsolete BOOLEAN);
// Concept ids: one node per CURIE, linked to the concept of every ontology that has it; LadybugDB
// indexes only primary keys, so a lookup by uid goes through this node's key.
CREATE NODE TABLE IF NOT EXISTS ConceptId(uid STRING PRIMARY KEY);
CREATE NODE TABLE IF NOT EXISTS Mention(uid STRING PRIMARY KEY, text STRING, doc_id STRING, start INT64, `end` INT64, context STRING);
// Added after 0.1 (stores made before get them, empty): the file's own id and the file.
ALTER TABLE Mention ADD IF NOT EXISTS mention_id STRING DEFAULT '';
ALTER TABLE Mention ADD IF NOT EXISTS source STRING DEFAULT '';
// Added with annotate (issue 26): the detector's label, and the documents mentions were found in.
ALTER TABLE Mention ADD IF NOT EXISTS type STRING DEFAULT '';
// annotate's confidence in a found mention and its link (null where none was fitted, and for `link`)
ALTER TABLE Mention ADD IF NOT EXISTS confidence DOUBLE;
CREATE NODE TABLE IF NOT EXISTS Document(uid STRING PRIMARY KEY, doc_id STRING, source STRING);
CREATE NODE TABLE IF NOT EXISTS Run(uid STRING PRIMARY KEY, kind STRING, method STRING, model_path STRING, params_json STRING, metrics_json STRING, created_at STRING);
CREATE REL TABLE IF NOT EXISTS IDENTIFIES(FROM ConceptId TO Concept);
CREATE REL TABLE IF NOT EXISTS IS_A(FROM Concept TO Concept);
CREATE REL TABLE IF NOT EXISTS XREF(FROM Concept TO Concept, source STRING);
CREATE REL TABLE IF NOT EXISTS LINKED_TO(FROM Mention TO Concept, score DOUBLE, rank INT64, method STRING, run STRING);
CREATE REL TABLE IF NOT EXISTS PREDICTED_IS_A(FROM Concept TO Concept, FROM Mention TO Concept, score DOUBLE, rank INT64, level INT64, method STRING, run STRING);
// Issue 27: a link moved by a re-ingest to the successor of its concept records the old uid;
// a link with no single successor leaves its mention an ORPHAN_OF the ontology (the old link's
// fields kept), and ids that are no longer concepts but resolve are RetiredId nodes.
ALTER TABLE LINKED_TO ADD IF NOT EXISTS moved_from STRING DEFAULT '';
CREATE NODE TABLE IF NOT EXISTS RetiredId(key STRING PRIMARY KEY, uid STRING, ontology STRING, name STRING, replaced_by STRING[], consider STRING[]);
CREATE REL TABLE IF NOT EXISTS ORPHAN_OF(FROM Mention TO Ontology, concept_uid STRING, score DOUBLE, rank INT64, method STRING, run STRING, version STRING);
// IN is a keyword of LadybugDB's Cypher: write it `IN` (backticks work on Neo4j too).
CREATE REL TABLE IF NOT EXISTS `IN`(FROM Mention TO Document);
// One IN edge per mention and run that found it, carrying the run (as LINKED_TO does): re-annotating a
// document replaces that run's mentions of it, nil mentions (no LINKED_TO) included.
ALTER TABLE `IN` ADD IF NOT EXISTS run STRING DEFAULT '';
// Issue 40 (kgnorm serve): documents keep their text (offsets index `text`; `title` is its first
// part, empty when the input had none); stores made before get both empty.
ALTER TABLE Document ADD IF NOT EXISTS title STRING DEFAULT '';
ALTER TABLE Document ADD IF NOT EXISTS text STRING DEFAULT '';
// A person's decision on a mention: (:Mention)-[:REVIEWED]->(:Review). Never edited, only added:
// the newest review of a mention has current = true, the ones before it false. decision is one of
// accept | concept | nil | not_a_mention | withdraw; concept_uid/ontology name the concept chosen (accept,
// concept), previous_concept_uid the concept the mention had before (machine or earlier review).
CREATE NODE TABLE IF NOT EXISTS Review(uid STRING PRIMARY KEY, mention_uid STRING, doc_id STRING, decision STRING, concept_uid STRING, ontology STRING, previous_concept_uid STRING, reviewer STRING, created_at STRING, current BOOLEAN, run STRING);
CREATE REL TABLE IF NOT EXISTS REVIEWED(FROM Mention TO Review);
// Issue 50: a review copied to the other mentions of its text names the one it copies
// (propagated_from, '' for one a person made); elapsed_ms: the page's time from opening the mention to
// deciding it (null when not measured). A withdrawal (decision withdraw) is never current.
ALTER TABLE Review ADD IF NOT EXISTS propagated_from STRING DEFAULT '';
ALTER TABLE Review ADD IF NOT EXISTS elapsed_ms INT64;
// Issue 42 (kgnorm match): a concept of one ontology mapped to a concept of another, as one Run;
// predicate is a SKOS CURIE (skos:exactMatch, skos:broadMatch, skos:narrowMatch), justification a semapv CURIE.
CREATE REL TABLE IF NOT EXISTS MAPS_TO(FROM Concept TO Concept, predicate STRING, confidence DOUBLE, justification STRING, run STRING);
// Issue 50: a document a person marked done (every found mention reviewed, missed spans added): the
// detector's training data. Added, never edited, as reviews are.
CREATE NODE TABLE IF NOT EXISTS DocumentDone(uid STRING PRIMARY KEY, document_uid STRING, doc_id STRING, reviewer STRING, created_at STRING, mentions INT64, run STRING);
CREATE REL TABLE IF NOT EXISTS MARKED_DONE(FROM Document TO DocumentDone);
