// kgnorm check: the run tags the edges carry, with their counts (a tag that names no Run node is an
// edge a killed or broken write left behind; 'review' and '' are no run).  Params: none
MATCH ()-[l:LINKED_TO]->() RETURN 'LINKED_TO' AS edge, l.run AS run, count(*) AS n
UNION ALL
MATCH ()-[p:PREDICTED_IS_A]->() RETURN 'PREDICTED_IS_A' AS edge, p.run AS run, count(*) AS n
UNION ALL
MATCH ()-[i:`IN`]->() RETURN 'IN' AS edge, i.run AS run, count(*) AS n
UNION ALL
MATCH ()-[x:MAPS_TO]->() RETURN 'MAPS_TO' AS edge, x.run AS run, count(*) AS n;
