"""Nil (out-of-KB) detection in one place: DILBERT's distance thresholds (`thresholds`), the
classifier on a mention's top hits (`classifier`), fitting either on dev mentions for a link
run (`fit`) and scoring every strategy on DILBERT's constructed dev set (`evaluation`).

Above `linking` and `evaluation` (it links dev mentions and scores them); below the jobs."""
