// Every run but the staging and published records of a batched run, newest first: the runs page of `kgnorm serve`.  Params: staging, published (the kinds left out)
MATCH (r:Run)
WHERE r.kind <> $staging AND r.kind <> $published
RETURN r.uid AS uid, r.kind AS kind, r.method AS method, r.model_path AS model_path, r.params_json AS params_json,
       r.metrics_json AS metrics_json, r.created_at AS created_at
ORDER BY created_at DESC, uid;
