// kgnorm check: the files the stored documents were read from.  Params: none
MATCH (d:Document)
RETURN DISTINCT d.source AS source
ORDER BY source;
