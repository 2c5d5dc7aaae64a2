// How many reviews copy one review to the other mentions of its text (apply_to_same_text).  Params: r (the review's uid)
MATCH (x:Review)
WHERE x.propagated_from = $r
RETURN count(x) AS copies;
