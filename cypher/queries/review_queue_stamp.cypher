// What the review queue's cache of the machine's side checks before each use (kgnorm.review.queue_cache): the mentions, how many carry a confidence and its range (a refit writes them); with review_queue_stamp_links and the runs, a change here rebuilds the cache.  No params
MATCH (m:Mention)
RETURN count(m) AS mentions, count(m.confidence) AS n_confidence, min(m.confidence) AS lo, max(m.confidence) AS hi;
