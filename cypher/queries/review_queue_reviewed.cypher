// Every mention anyone reviewed, and whether a review of it is current (a withdrawal is never current): what the review queue's cache takes off (or puts back on) the counts it kept.  No params
MATCH (r:Review)
RETURN r.mention_uid AS uid, max(CASE WHEN r.current = true THEN 1 ELSE 0 END) AS current;
