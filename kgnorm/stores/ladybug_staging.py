"""LadybugDB's side of a run written in batches (kgnorm.stores.staged_run), kept flat in memory.

Three things keep a million-mention run's RSS flat on LadybugDB (benchmarks/LOG.md, "link memory"):
- The open database keeps what each COPY into a node table loaded (LadybugDB's primary-key
  index is not managed by its buffer pool, kuzudb/kuzu#4937): the database is closed and
  reopened after every batch, which returns it (the run's rows are committed by then).
- The mentions a run created are listed in a node table of their own (``STAGED_<hash>``,
  keyed by a SERIAL: no second string index to grow), read only to undo a failed run and
  dropped at the end in one cheap DDL statement instead of deleting a million rows in one
  transaction; a node table, not edges from the staging Run node, because every COPY into a
  relationship table rewrites the whole adjacency of so busy a node.
- A run whose uid is new in the store (no Run node, no edge carries it) stages its LINKED_TO
  edges under its final uid, so publishing writes the Run node and nothing else; only a
  re-run (whose previous copy must stay until the new one is complete) stages them under the
  staging uid and re-tags them on publish, in one transaction that grows with the run.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

import pandas as pd

from kgnorm.errors import StoreError
from kgnorm.graph.refs import ConceptRef
from kgnorm.stores.base import STALE_MENTIONS, DocumentRow, LinkEdge, MentionRow, RunRecord
from kgnorm.stores.stages import PUBLISHED, STAGING, stage_owner

MENTION_COLUMNS = ["uid", "text", "doc_id", "start", "end", "context", "mention_id", "source", "type", "confidence"]
DOCUMENT_COLUMNS = ["uid", "doc_id", "source", "title", "text"]


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


class LadybugStaging:
    """Mixed into LadybugStore (which supplies _conn, _transaction, _copy, _open, query)."""

    _conn: Any

    def staged_rel(self, stage: str) -> str:
        return "STAGED_" + hashlib.sha1(stage.encode("utf-8")).hexdigest()[:16]

    def _stage_node(self, stage: str) -> tuple[str, str] | None:
        """(kind, run uid its edges carry) of the staging node, None when there is none."""
        rows = self._conn.execute("MATCH (r:Run) WHERE r.uid = $s RETURN r.kind, r.metrics_json",
                                  {"s": stage}).get_all()
        if not rows:
            return None
        return rows[0][0], json.loads(rows[0][1] or "{}").get("edge_run", stage)

    def _has_table(self, name: str) -> bool:
        return any(r[1] == name for r in self._conn.execute("CALL show_tables() RETURN *").get_all())

    def stage_begin(self, run: RunRecord, stage: str) -> None:
        self._require_keys()
        self.stage_clear(stage)
        used = sum(self._conn.execute(q, {"r": run.uid}).get_all()[0][0] for q in (
            "MATCH (r:Run) WHERE r.uid = $r RETURN count(r)",
            "MATCH ()-[l:LINKED_TO]->() WHERE l.run = $r RETURN count(l)",
            "MATCH ()-[p:PREDICTED_IS_A]->() WHERE p.run = $r RETURN count(p)"))
        row = {**run.row(), "uid": stage, "kind": STAGING,
               "metrics_json": json.dumps({"edge_run": stage if used else run.uid, "owner": stage_owner()})}
        self._conn.execute(f"CREATE NODE TABLE {self.staged_rel(stage)}(id SERIAL PRIMARY KEY, uid STRING)")
        self._transaction(lambda: self._copy("Run", pd.DataFrame([row])))

    def stage_rows(self, stage: str, run: RunRecord, new: list[MentionRow], links: list[LinkEdge],
                   keys: dict[ConceptRef, str], documents: Sequence[DocumentRow] = (),
                   in_edges: Sequence[tuple[str, str]] = ()) -> None:
        tag = self._stage_node(stage)[1]

        def body() -> None:
            self._copy("Mention", pd.DataFrame([vars(m) for m in new], columns=MENTION_COLUMNS))
            self._copy("Document", pd.DataFrame([vars(d) for d in documents], columns=DOCUMENT_COLUMNS))
            # the staged table lists new mentions and new documents (told apart by their label on undo)
            self._copy(self.staged_rel(stage), pd.DataFrame({"uid": [m.uid for m in new] + [d.uid for d in documents]}))
            self._copy("`IN`", pd.DataFrame([(m, d, tag) for m, d in in_edges], columns=["from", "to", "run"]))
            self._copy("LINKED_TO", pd.DataFrame(
                [(e.mention_uid, keys[e.ref], float(e.score), int(e.rank), run.method, tag)
                 for e in links], columns=["from", "to", "score", "rank", "method", "run"]),
                ' (from="Mention", to="Concept")')

        try:
            self._transaction(body)
        except RuntimeError as exc:
            raise StoreError(f"writing run {run.uid} failed: {one_line(exc)}") from None
        self._reopen()

    def _reopen(self) -> None:
        """Close and reopen the database: returns what the batch's COPY left in memory."""
        self._conn.close()
        self._db.close()
        self._db, self._conn = self._open(self._lock_timeout)

    def stage_publish(self, run: RunRecord, stage: str) -> None:
        tag = self._stage_node(stage)[1]

        def body() -> None:
            if tag != run.uid:  # a re-run: the previous copy goes, the staged edges take its uid
                self._conn.execute("MATCH ()-[l:LINKED_TO]->() WHERE l.run = $r DELETE l", {"r": run.uid})
                self._conn.execute("MATCH ()-[p:PREDICTED_IS_A]->() WHERE p.run = $r DELETE p", {"r": run.uid})
                self._conn.execute("MATCH (r:Run) WHERE r.uid = $r DELETE r", {"r": run.uid})
                self._conn.execute(STALE_MENTIONS, {"r": run.uid})
                self._conn.execute("MATCH ()-[i:`IN`]->() WHERE i.run = $r DELETE i", {"r": run.uid})
                for rel in ("LINKED_TO", "`IN`"):
                    self._conn.execute(f"MATCH ()-[l:{rel}]->() WHERE l.run = $s SET l.run = $r",
                                       {"s": tag, "r": run.uid})
            self._copy("Run", pd.DataFrame([run.row()]))
            self._conn.execute("MATCH (r:Run) WHERE r.uid = $s SET r.kind = $k", {"s": stage, "k": PUBLISHED})

        try:
            self._transaction(body)
        except RuntimeError as exc:
            raise StoreError(f"publishing run {run.uid} failed: {one_line(exc)}") from None
        self.stage_clear(stage)

    def stage_clear(self, stage: str) -> None:
        node = self._stage_node(stage)
        table = self.staged_rel(stage)
        has_table = self._has_table(table)

        def body() -> None:
            if node is not None and node[0] == STAGING:  # unpublished: its new mentions and edges go too
                if has_table:
                    self._conn.execute(f"MATCH (s:{table}) WITH s.uid AS x "
                                       "MATCH (m:Mention {uid: x}) DETACH DELETE m")
                    self._conn.execute(f"MATCH (s:{table}) WITH s.uid AS x "
                                       "MATCH (d:Document {uid: x}) DETACH DELETE d")
                for rel in ("LINKED_TO", "`IN`"):
                    self._conn.execute(f"MATCH ()-[l:{rel}]->() WHERE l.run = $t DELETE l", {"t": node[1]})

        try:
            if node is not None and node[0] == STAGING:
                self._transaction(body)
            if has_table:
                self._conn.execute(f"DROP TABLE {table}")
            if node is not None:
                self._conn.execute("MATCH (r:Run) WHERE r.uid = $s DELETE r", {"s": stage})
        except RuntimeError as exc:
            raise StoreError(f"removing the staged rows of {stage} failed: {one_line(exc)}") from None
