// How many mentions there are (of one type): the review queue's "all".  Params: type ('' for every type)
MATCH (m:Mention)
WHERE $type = '' OR m.type = $type
RETURN count(m) AS mentions;
