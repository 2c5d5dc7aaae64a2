// Some mentions by uid with their surface form (text lower-cased), type, confidence and first document: what the review queue takes off its counts for reviews not in the store yet.  Params: u (mention uids)
UNWIND $u AS x
MATCH (m:Mention {uid: x})
OPTIONAL MATCH (m)-[:`IN`]->(d:Document)
RETURN m.uid AS uid, toLower(m.text) AS form, m.type AS type, m.confidence AS confidence, min(d.uid) AS document_uid;
