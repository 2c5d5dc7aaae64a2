"""A run written to the store in batches, still all or nothing.

`kgnorm link` on a million mentions cannot hold every Mention row and edge until one final
`write_run`: memory would follow the corpus. A `StagedRun` writes each batch at once, under
a staging Run node (uid ``<run uid>~staging``, kind ``staging``): new Mention nodes hang off it
by STAGED edges (``created: true``), and its LINKED_TO edges carry the staging uid as their
`run`. `publish()` then swaps, in one transaction, the previous copy of the run (if any) for
the staged edges; on any failure or Ctrl-C, leaving the `with` block without publishing
removes what was staged, so the store is as it was. A process killed outright leaves the
staging node behind, and the next attempt at the same run uid clears it first.

Repeated mention ids are found without holding the ids seen so far: each batch asks the store
which of its ids this run already staged (the STAGED edges), which keeps memory flat at the
cost of one indexed lookup per mention (a compact in-memory digest per id would still grow
with the corpus, ~16 bytes per mention at best).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError
from kgnorm.stores.base import GraphStore, LinkEdge, MentionRow, RunRecord


def staging_uid(run_uid: str) -> str:
    return f"{run_uid}~staging"


@dataclass
class StagedMention:
    """One mention of a batch and its edges (to any concept: those not in the store are skipped)."""

    row: MentionRow
    links: list[LinkEdge] = field(default_factory=list)


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

    def __enter__(self) -> "StagedRun":
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

    def add(self, items: list[StagedMention]) -> BatchResult:
        """Write one batch. A mention id seen before in this run is stored once when it is the
        same mention (a duplicated document), and an InputError when it names another text."""
        first: dict[str, StagedMention] = {}
        repeats = 0
        for it in items:
            prev = first.get(it.row.uid)
            if prev is None:
                first[it.row.uid] = it
                continue
            self._same(prev.row.text, prev.row.doc_id, it.row)
            repeats += 1
        stored = self.store.stage_lookup(self.stage, list(first))
        new: list[MentionRow] = []
        seen: list[str] = []
        accepted: list[StagedMention] = []
        for uid, it in first.items():
            hit = stored.get(uid)
            if hit is not None and hit[2]:  # an earlier batch of this run wrote it
                self._same(hit[0], hit[1], it.row)
                repeats += 1
                continue
            if hit is None:
                new.append(it.row)
            else:  # a node an earlier run made: kept as it is, marked as this run's
                seen.append(uid)
            accepted.append(it)
        links = [e for it in accepted for e in it.links]
        keys = self.store.concept_keys(sorted({e.concept_uid for e in links}), self.ontology)
        kept = [e for e in links if e.concept_uid in keys]
        self.store.stage_rows(self.stage, self.run, new, seen, kept, keys)
        return BatchResult(accepted, repeats, len(kept))

    def publish(self) -> None:
        self.store.stage_publish(self.run, self.stage)
        self.published = True

    def _same(self, text: str, doc_id: str, row: MentionRow) -> None:
        if (text, doc_id or "") != (row.text, row.doc_id or ""):
            raise InputError(f"mention id {row.mention_id} is given twice, for {text!r} and {row.text!r}; "
                             "each mention needs its own id", path=self.source)
