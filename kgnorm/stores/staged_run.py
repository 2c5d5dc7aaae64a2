"""A run written to the store in batches, still all or nothing.

`kgnorm link` on a million mentions cannot hold every Mention row and edge until one final
`write_run`: memory would follow the corpus. A `StagedRun` writes each batch at once, under
a staging Run node (uid ``<run uid>~staging``, kind ``staging``): the Mention nodes it creates
are listed under it (STAGED edges on Neo4j, a per-run table on LadybugDB), and its LINKED_TO
edges carry a staging tag as their `run`. `publish()` then swaps, in one transaction, the previous copy of the run (if any) for
the staged edges; on any failure or Ctrl-C, leaving the `with` block without publishing
removes what was staged, so the store is as it was. A process killed outright leaves the
staging node behind: the next writer to open the store on the same host (any command that
writes: GraphStore.opened_for_writing) clears it when the process recorded on it (pid and host)
is gone, and the next attempt at the same run uid in any case.

Repeated mention ids across batches: the run keeps a 63-bit hash of each mention uid it wrote
(kgnorm.mentions.seen_ids, 8 bytes per mention: 8 MB per million), and for an id it has seen
asks the store for the text that id was written with (an indexed lookup) to tell a repeat
(stored once) from a reused id (InputError). Asking the store instead of keeping the hashes
would need a second string-keyed index in the store, whose memory LadybugDB does not bound
(it grew the RSS more than the hashes do); a hash collision is told apart by that lookup.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from kgnorm.errors import InputError
from kgnorm.mentions.seen_ids import SeenIds
from kgnorm.stores.base import DocumentRow, GraphStore, LinkEdge, MentionRow, RunRecord


def staging_uid(run_uid: str) -> str:
    return f"{run_uid}~staging"


def abandoned_note(stages: list[str]) -> str:
    """The line a command prints when opening the store removed what killed link runs left."""
    return (f"removed what {len(stages)} earlier link run(s) left in the store when their process was killed: "
            f"{', '.join(stages)}")


@dataclass
class StagedMention:
    """One mention of a batch and its edges (to any concept, each of its own ontology or the run's:
    those not in the store are skipped)."""

    row: MentionRow
    links: list[LinkEdge] = field(default_factory=list)
    document: str = ""  # uid of the Document the mention is IN (annotate), "" for none


@dataclass
class BatchResult:
    accepted: list[StagedMention]  # the mentions written (a repeat of an earlier one is not)
    repeats: int
    links_written: int


class StagedRun:
    """``with StagedRun(store, run) as staged: staged.add(batch) …; staged.publish()``."""

    def __init__(self, store: GraphStore, run: RunRecord, ontology: str = "",
                 source: str | Path | None = None) -> None:
        self.store = store
        self.run = run
        self.ontology = ontology
        self.source = source  # named in the error about a reused id
        self.stage = staging_uid(run.uid)
        self.published = False
        self.seen = SeenIds()  # the mention uids of earlier batches, 8 bytes each
        self.abandoned: list[str] = []  # stages of killed processes cleared on entry

    def __enter__(self) -> "StagedRun":
        # what opening the store removed, and what a process killed since then left
        self.abandoned, self.store.abandoned = [*self.store.abandoned, *self.store.clear_abandoned_stages()], []
        self.store.stage_begin(self.run, self.stage)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if self.published:
            return
        try:
            self.store.stage_clear(self.stage)
        except Exception:
            if exc is None:
                raise  # otherwise the run's own failure is the one to report

    def add(self, items: list[StagedMention], documents: Sequence[DocumentRow] = ()) -> BatchResult:
        """Write one batch. A mention id seen before in this run is stored once when it is the
        same mention (a duplicated document), and an InputError when it names another text.
        `documents`: the Document nodes the batch's mentions are IN (those already stored are kept)."""
        first: dict[str, StagedMention] = {}
        earlier: list[StagedMention] = []  # ids an earlier batch (probably) gave
        repeats = 0
        for it in items:
            prev = first.get(it.row.uid)
            if prev is not None:
                self._same(prev.row.text, prev.row.doc_id, it.row)
                repeats += 1
            elif self.seen.add(it.row.uid):
                earlier.append(it)
            else:
                first[it.row.uid] = it
        stored = self.store.mention_texts(list(first) + [it.row.uid for it in earlier])
        for it in earlier:
            if it.row.uid in stored:  # written by an earlier batch: compare what it said
                self._same(*stored[it.row.uid], it.row)
                repeats += 1
            else:  # a hash collision, not a repeat
                first[it.row.uid] = it
        accepted = list(first.values())
        new = [it.row for it in accepted if it.row.uid not in stored]  # the others: nodes an earlier run made
        links = [e if e.ontology or not self.ontology else replace(e, ontology=self.ontology)
                 for it in accepted for e in it.links]  # an edge naming no ontology is of the run's
        keys = self.store.ref_keys(e.ref for e in links)
        kept = [e for e in links if e.ref in keys]
        if documents or any(it.document for it in accepted):
            have = self.store.document_uids(sorted({d.uid for d in documents}))
            docs = list({d.uid: d for d in documents if d.uid not in have}.values())
            # every mention of the run is IN its document under the run's tag (a node an earlier run
            # made too): what lets a re-run replace exactly this run's mentions of the document
            joins = [(it.row.uid, it.document) for it in accepted if it.document]
            self.store.stage_rows(self.stage, self.run, new, kept, keys, documents=docs, in_edges=joins)
        else:
            self.store.stage_rows(self.stage, self.run, new, kept, keys)
        return BatchResult(accepted, repeats, len(kept))

    def publish(self) -> None:
        self.store.stage_publish(self.run, self.stage)
        self.published = True

    def _same(self, text: str, doc_id: str, row: MentionRow) -> None:
        if (text, doc_id or "") != (row.text, row.doc_id or ""):
            raise InputError(f"mention id {row.mention_id} is given twice, for {text!r} and {row.text!r}; "
                             "each mention needs its own id", path=self.source)
