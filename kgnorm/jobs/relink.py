"""`kgnorm link --model M --relink-orphans`: link again the mentions a re-ingest left orphans of
the model's ontology (their concept went without a single successor, issue 27).

The orphans are read from the store (their text, document and context are on the Mention
nodes), linked with the model like any input, and written as one run whose transaction also
removes their ORPHAN_OF edges: a failure leaves them orphans, a second attempt (same model,
same orphans: the same run uid) replaces the first."""
from __future__ import annotations

import csv
import hashlib
from contextlib import ExitStack
from pathlib import Path
from typing import TextIO

from kgnorm.errors import KgnormError
from kgnorm.jobs.link import LinkReport
from kgnorm.mentions.types import Mention


def relink_orphans(model: str | Path, *, store: str | None = None, top_k: int = 5, write_top_k: int = 1,
                   output: str | Path | TextIO | None = None, batch_size: int = 256, lock_timeout: float = 30.0) -> LinkReport:
    """Link the orphans of the model's ontology with the model; write the run (and the TSV rows
    to `output`, in `link`'s layout; a path is written as link writes it: complete or not at all)."""
    from kgnorm.jobs.link import open_output
    from kgnorm.jobs.models import open_linker
    from kgnorm.linking.linker import TSV_HEADER, edges_for, link_stream, pipeline_from_meta, tsv_rows
    from kgnorm.stores import LinkEdge, RunRecord, RunWrite, open_store
    from kgnorm.stores.run_ids import run_uid
    from kgnorm.text.abbreviations import find_abbreviations

    if top_k < 1 or write_top_k < 1:
        raise KgnormError("--top-k and --write-top-k must be >= 1")
    model = Path(model)
    linker, meta = open_linker(model)
    onto = meta.get("ontology") or ""
    if not onto:
        raise KgnormError(f"{model}: --relink-orphans needs a model built on an ontology of the store")
    pipeline = pipeline_from_meta(meta)
    report = LinkReport(None, top_k=top_k)
    with ExitStack() as stack:
        st = stack.enter_context(open_store(store, lock_timeout=lock_timeout))
        if st.ontology_info(onto) is None:
            raise KgnormError(f"the model's ontology {onto!r} is not in {st.uri}")
        rows = st.orphans(onto)
        if not rows:
            report.notes.append(f"no orphan mentions of {onto} in {st.uri}: nothing to relink")
            return report
        items = [(Mention(text=r.text, doc_id=r.doc_id, start=r.start, end=r.end, context=r.context,
                          id=r.mention_id or r.uid), find_abbreviations(r.context) if r.context else {})
                 for r in rows]
        digest = hashlib.sha1("\n".join(r.uid for r in rows).encode("utf-8")).hexdigest()
        uid = run_uid("link", model=str(model.resolve()), orphans_of=onto, input=digest, top_k=write_top_k)
        run = RunRecord(uid, "link", linker.method, str(model.resolve()),
                        params={"input": f"orphans of {onto}", "relink_orphans": len(rows),
                                "write_top_k": write_top_k})
        fh = open_output(stack, output)
        tsv = csv.writer(fh, delimiter="\t", lineterminator="\n") if fh is not None else None
        if tsv is not None:
            tsv.writerow(TSV_HEADER)
        links: list[LinkEdge] = []
        for row, lm in zip(rows, link_stream(linker, pipeline, items, top_k=max(top_k, write_top_k),
                                             batch_size=batch_size)):
            if tsv is not None:
                tsv.writerows(tsv_rows(lm, top_k))
            links += [LinkEdge(row.uid, c, score, rank) for c, rank, score in edges_for(lm, write_top_k)]
        have = st.concept_keys(sorted({e.concept_uid for e in links}), onto)
        skipped = [e for e in links if e.concept_uid not in have]  # a model built on the old version
        if skipped:
            links = [e for e in links if e.concept_uid in have]
            report.notes.append(f"{len(skipped):,} link(s) to concepts no longer in {onto} skipped (e.g. "
                                f"{skipped[0].concept_uid}): build the model on the new version")
        linked = {e.mention_uid for e in links}
        still = {e.mention_uid for e in skipped} - linked  # every link of theirs skipped: still orphans
        st.write_run(RunWrite(run, mentions=rows, links=links, ontology=onto,
                              relinked=[r.uid for r in rows if r.uid not in still]))
    report.run_uid, report.n_mentions, report.n_edges = uid, len(rows), len(links)
    report.edge_note = f" (the orphans of {onto}; {len(still):,} still orphans)" if still else \
        f" (the orphans of {onto})"
    return report
