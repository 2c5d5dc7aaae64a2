// A mention's document id, text, type and context (kgnorm serve: a review's checks, the same text's mentions, the model's candidates).  Params: m (mention uid)
MATCH (m:Mention {uid: $m})
RETURN m.doc_id, m.text, m.type, m.context;
