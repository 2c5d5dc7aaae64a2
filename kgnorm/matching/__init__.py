"""Ontology-to-ontology matching (issue 42): SSSOM files in and out, the matcher that decides
skos:exactMatch / broadMatch / narrowMatch between two ontologies' concepts, and the scores of a
mapping set or a placement against a reference. Plain data in, plain data out: no store, no method."""
