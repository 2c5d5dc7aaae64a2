// kgnorm check: every Run node, with its kind ('staging': a run being written, or left behind by a
// process killed before it published or rolled back; 'staged-published': published, its bookkeeping left).  Params: none
MATCH (r:Run)
RETURN r.uid AS uid, r.kind AS kind, r.method AS method, r.metrics_json AS metrics_json, r.created_at AS created_at
ORDER BY uid;
