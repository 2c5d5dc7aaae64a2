// The documents marked done, with their text (kgnorm retrain: complete training data for the detector).  Params: none
MATCH (d:Document)-[:MARKED_DONE]->(:DocumentDone)
RETURN DISTINCT d.uid, d.doc_id, d.text;
