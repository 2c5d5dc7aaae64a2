// One ontology record.  Params: $name
MATCH (o:Ontology {name: $name})
RETURN o.name AS name, o.version AS version, o.format AS format, o.concept_count AS concept_count,
       o.loaded_at AS loaded_at, o.source_path AS source_path;
