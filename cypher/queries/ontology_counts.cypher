// Per-ontology counts: concepts, IS_A edges and the Ontology record.
MATCH (o:Ontology)
OPTIONAL MATCH (c:Concept {ontology: o.name})
WITH o, count(c) AS concepts
OPTIONAL MATCH (a:Concept {ontology: o.name})-[:IS_A]->(:Concept)
RETURN o.name AS ontology, o.version AS version, o.format AS format, concepts,
       count(a) AS is_a_edges, o.loaded_at AS loaded_at, o.source_path AS source_path
ORDER BY ontology;
