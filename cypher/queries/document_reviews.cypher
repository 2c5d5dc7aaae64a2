// Every review of the mentions of one document (current or not): where two reviewers' answers on a mention differ, the review page marks a conflict.  Params: d (the document's uid)
MATCH (:Document {uid: $d})<-[:`IN`]-(m:Mention)-[:REVIEWED]->(r:Review)
RETURN DISTINCT m.uid AS mention_uid, r.decision AS decision, r.concept_uid AS concept_uid, r.reviewer AS reviewer,
       r.created_at AS created_at;
