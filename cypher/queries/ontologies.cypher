// Every ontology loaded, with what was loaded, from where and when (an ingest writes no Run node: this is its record).  Params: none
MATCH (o:Ontology)
RETURN o.name AS name, o.format AS format, o.source_path AS source_path, o.version AS version,
       o.concept_count AS concept_count, o.loaded_at AS loaded_at;
