// Those of some done marks' uids that are in the store (a desk writes each pending mark once).  Params: u (done mark uids)
UNWIND $u AS x
MATCH (r:DocumentDone {uid: x})
RETURN r.uid;
