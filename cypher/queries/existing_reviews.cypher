// Those of some reviews' uids that are in the store (a desk writes each journaled review once).  Params: u (review uids)
UNWIND $u AS x
MATCH (r:Review {uid: x})
RETURN r.uid;
