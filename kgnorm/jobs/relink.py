"""`kgnorm link --model M --relink-orphans`: link again the mentions a re-ingest left orphans of
the model's ontology (their concept went without a single successor, issue 27).

The orphans are read from the store (their text, document and context are on the Mention
nodes), linked with the model like any input, and written as one run whose transaction also
removes their ORPHAN_OF edges: a failure leaves them orphans, a second attempt (same model,
same orphans: the same run uid) replaces the first.

A model built on the old version still ranks the concepts the new one removed, often first (an
orphan's own concept is gone by definition). So each orphan's ranking is searched `depth` deep
(RELINK_DEPTH) and cut to the candidates still in the store: the concept itself, or the single
successor a re-ingest would have moved a link to (issue 40). Its best survivor is rank 1, in the
TSV and the LINKED_TO edges alike; only an orphan without a survivor in that depth stays one."""
from __future__ import annotations

import csv
import hashlib
from contextlib import ExitStack
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, TextIO

from kgnorm.errors import KgnormError
from kgnorm.jobs.run import LinkReport
from kgnorm.mentions.types import Mention

if TYPE_CHECKING:
    from kgnorm.graph.ontology_graph import RetiredId
    from kgnorm.linking.candidates import Hit, LinkedMention
    from kgnorm.stores.base import MentionRow

# candidates searched per orphan for one still in the ontology: deep enough for a model built on
# an old version (cheap: the linkers retrieve names by the hundred; a reranker rescores only its own top)
RELINK_DEPTH = 50


def relink_orphans(model: str | Path, *, store: str | None = None, top_k: int = 5, write_top_k: int = 1,
                   output: str | Path | TextIO | None = None, batch_size: int = 256, lock_timeout: float = 30.0,
                   depth: int = RELINK_DEPTH) -> LinkReport:
    """Link the orphans of the model's ontology with the model; write the run (and the TSV rows
    to `output`, in `link`'s layout; a path is written as link writes it: complete or not at all).
    Each orphan takes its best candidates among the model's top `depth` that are still concepts.
    On the job skeleton (kgnorm.jobs.run): the model opened first, the store once, its ontology
    checked as `link` checks it, the run named by the model."""
    from kgnorm.jobs.run import check_ontology, open_linking_model, open_output
    from kgnorm.linking.linker import TSV_HEADER, edges_for, tsv_rows
    from kgnorm.stores import LinkEdge, RunWrite
    from kgnorm.stores.session import StoreSession

    if top_k < 1 or write_top_k < 1:
        raise KgnormError("--top-k and --write-top-k must be >= 1")
    deep = max(depth, top_k, write_top_k)
    report = LinkReport(None, top_k=top_k)
    with ExitStack() as stack:
        session = stack.enter_context(StoreSession(store, write=True, lock_timeout=lock_timeout))
        linking = open_linking_model(model, store=session)
        onto = linking.ontology
        if not onto:
            raise KgnormError(f"{model}: --relink-orphans needs a model built on an ontology of the store")
        check_ontology(session, linking.meta, report.notes)
        st = session.get()
        rows = st.orphans(onto)
        if not rows:
            report.notes.append(f"no orphan mentions of {onto} in {st.uri}: nothing to relink")
            return report
        digest = hashlib.sha1("\n".join(r.uid for r in rows).encode("utf-8")).hexdigest()
        run = linking.run_record("link", dict(orphans_of=onto, input=digest, top_k=write_top_k),
                                 {"input": f"orphans of {onto}", "relink_orphans": len(rows),
                                  "write_top_k": write_top_k, "search_depth": deep})
        fh = open_output(stack, output)
        tsv = csv.writer(fh, delimiter="\t", lineterminator="\n") if fh is not None else None
        if tsv is not None:
            tsv.writerow(TSV_HEADER)
        links: list[LinkEdge] = []
        still: set[str] = set()
        past = 0  # orphans linked below the model's top candidate (it is no longer in the ontology)
        for row, lm, demoted in _surviving(st, onto, linking, rows, deep, batch_size):
            if tsv is not None:
                tsv.writerows(tsv_rows(lm, top_k))
            edges = [LinkEdge(row.uid, c.uid, score, rank, c.ontology) for c, rank, score in edges_for(lm, write_top_k)]
            links += edges
            if not edges:
                still.add(row.uid)
            past += bool(edges) and demoted
        report.notes += _notes(onto, past, len(still), deep)
        st.write_run(RunWrite(run, mentions=rows, links=links, ontology=onto,
                              relinked=[r.uid for r in rows if r.uid not in still]))
    report.run_uid, report.n_mentions, report.n_edges = run.uid, len(rows), len(links)
    report.edge_note = f" (the orphans of {onto}; {len(still):,} still orphans)" if still else \
        f" (the orphans of {onto})"
    return report


def _surviving(st: Any, onto: str, linking: Any, rows: list[MentionRow], depth: int,
               batch_size: int) -> Iterator[tuple[MentionRow, LinkedMention, bool]]:
    """(orphan, its ranking cut to the candidates still in `onto`, whether the model's top one
    was cut), `batch_size` orphans at a time: the store is asked about each batch's candidates
    once, and memory follows the batch, not the number of orphans."""
    from kgnorm.linking.linker import link_stream
    from kgnorm.text.abbreviations import find_abbreviations

    items = ((Mention(text=r.text, doc_id=r.doc_id, start=r.start, end=r.end, context=r.context,
                      id=r.mention_id or r.uid), find_abbreviations(r.context) if r.context else {})
             for r in rows)
    retired = st.retired_ids(onto)
    stream = zip(rows, link_stream(linking.linker, linking.pipeline, items, top_k=depth, batch_size=batch_size))
    while chunk := list(islice(stream, max(1, batch_size))):
        now = _current(st, onto, sorted({h.uid for _, lm in chunk for p in lm.parts for h in p}), retired)
        for row, lm in chunk:
            top = [p[0].uid for p in lm.parts if p]
            lm.parts = [_cut(p, now) for p in lm.parts]
            yield row, lm, top != [p[0].uid for p in lm.parts if p]


def _current(st: Any, onto: str, uids: list[str], retired: dict[str, RetiredId]) -> dict[str, str]:
    """Candidate uid -> the concept of `onto` it is now: itself when still a concept, else the
    single successor a re-ingest moves its links to (a merged id); uids with neither are absent."""
    from kgnorm.graph.versions import single_successor

    ahead = {t for u in uids if u in retired for t in retired[u].replaced_by}
    have = set(st.concept_keys(sorted(set(uids) | ahead), onto))
    now = {u: u for u in uids if u in have}
    for u in uids:
        if u not in now and u in retired:
            succ = single_successor(retired[u], have)
            if succ is not None:
                now[u] = succ
    return now


def _cut(hits: list[Hit], now: dict[str, str]) -> list[Hit]:
    """One part's hits cut to the surviving concepts, best first, each concept once (a merged id
    ranked above its successor takes the successor's place)."""
    out: list[Hit] = []
    seen: set[str] = set()
    for h in hits:
        uid = now.get(h.uid)
        if uid is not None and uid not in seen:
            seen.add(uid)
            out.append(h if uid == h.uid else replace(h, uid=uid))
    return out


def _notes(onto: str, past: int, still: int, depth: int) -> list[str]:
    """What the user must hear about a model that still ranks removed concepts."""
    notes = []
    if past:
        notes.append(f"{past:,} orphan(s) linked to their best candidate still in {onto}: the model's top one "
                     f"is no longer there (a model built on the new version ranks only current concepts)")
    if still:
        notes.append(f"{still:,} orphan(s) with no candidate in {onto} among the model's top {depth}: left "
                     f"orphans (build the model on the new version)")
    return notes
