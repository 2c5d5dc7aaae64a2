// A mention of a document with exactly the span $s-$e, if any (kgnorm serve refuses to add it twice).  Params: d (document uid), s, e
MATCH (d:Document {uid: $d})<-[:`IN`]-(m:Mention) WHERE m.start = $s AND m.`end` = $e
RETURN m.uid LIMIT 1;
