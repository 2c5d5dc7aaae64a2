// The machine's links as the review queue's cache checks them before each use (kgnorm.review.queue_cache): how many, the lowest and highest score, and the runs that wrote anything.  No params
MATCH (:Mention)-[l:LINKED_TO]->(:Concept)
WITH count(l) AS links, min(l.score) AS lo, max(l.score) AS hi
OPTIONAL MATCH (r:Run)
RETURN links, lo, hi, count(r) AS runs, max(r.created_at) AS last_run;
