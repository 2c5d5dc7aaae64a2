"""Embedded LadybugDB backend: bulk loads with COPY inside one transaction.

COPY from a DataFrame loads ~1M nodes in seconds, while UNWIND … MERGE creates only a few
hundred nodes/s (DESIGN §4); so ingests and run writes delete-then-COPY inside an explicit
transaction that is rolled back on any failure, leaving the previous state intact.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import ladybug as lb
import pandas as pd
import pyarrow as pa

from kgnorm.cypher_files import schema_statements
from kgnorm.errors import StoreError
from kgnorm.ontology_graph import OntologyGraph
from kgnorm.stores.base import (CONCEPT_COLUMNS, GraphStore, LoadSummary, QueryResult, RunWrite,
                                concept_columns, ontology_record)


class LadybugStore(GraphStore):
    def __init__(self, path: str | Path, read_only: bool = False) -> None:
        self.path = Path(path)
        self.uri = f"ladybug://{self.path}"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = lb.Database(str(self.path), read_only=read_only)
            self._conn = lb.Connection(self._db)
        except RuntimeError as exc:
            raise StoreError(f"cannot open LadybugDB store at {self.path}: {exc}") from None
        if not read_only:
            for stmt in schema_statements("ladybug"):
                self._conn.execute(stmt)

    # -- reads ---------------------------------------------------------------------
    def query(self, cypher: str, params: dict[str, Any] | None = None) -> QueryResult:
        try:
            res = self._conn.execute(cypher, params or {})
        except RuntimeError as exc:
            raise StoreError(f"query failed: {_one_line(exc)}") from None
        if isinstance(res, list):  # several statements: keep the last result
            res = res[-1]
        columns = list(res.get_column_names())
        rows: list[list[Any]] = []
        while res.has_next():
            rows.append([_plain(v) for v in res.get_next()])
        return QueryResult(columns, rows)

    # -- writes --------------------------------------------------------------------
    def _transaction(self, body: Callable[[], Any]) -> Any:
        self._conn.execute("BEGIN TRANSACTION")
        try:
            out = body()
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")
        return out

    def _copy(self, table: str, frame: pd.DataFrame | pa.Table, options: str = "") -> None:
        if frame.shape[0] == 0:
            return
        # LadybugDB's Python API finds the DataFrame by its variable name in the caller's scope.
        self._conn.execute(f"COPY {table} FROM frame{options}")

    def load_ontology(self, graph: OntologyGraph) -> LoadSummary:
        t0 = time.perf_counter()
        replaced = self.ontology_info(graph.name) is not None
        # Arrow tables COPY faster than DataFrames of Python lists (list columns stay columnar).
        columns = concept_columns(graph)
        concepts = pa.Table.from_pydict({k: columns[k] for k in CONCEPT_COLUMNS})
        is_a = pa.Table.from_pydict({"from": [c for c, _ in graph.is_a], "to": [p for _, p in graph.is_a]})

        def body() -> int:
            self._conn.execute("MATCH (c:Concept) WHERE c.ontology = $o DETACH DELETE c", {"o": graph.name})
            self._conn.execute("MATCH (o:Ontology) WHERE o.name = $o DELETE o", {"o": graph.name})
            self._copy("Concept", concepts)
            self._copy("IS_A", is_a)
            xrefs = self.xref_edges_for(graph)
            self._copy("XREF", pd.DataFrame(xrefs, columns=["from", "to", "source"]))
            self._copy("Ontology", pd.DataFrame([ontology_record(graph)]))
            return len(xrefs)

        try:
            n_xref = self._transaction(body)
        except RuntimeError as exc:
            raise StoreError(f"loading ontology {graph.name} failed, store unchanged: {_one_line(exc)}") from None
        return LoadSummary(graph.name, concepts.num_rows, is_a.num_rows, n_xref, replaced, time.perf_counter() - t0)

    def write_run(self, write: RunWrite) -> None:
        run = write.run

        def body() -> None:
            self._conn.execute("MATCH ()-[l:LINKED_TO]->() WHERE l.run = $r DELETE l", {"r": run.uid})
            self._conn.execute("MATCH ()-[p:PREDICTED_IS_A]->() WHERE p.run = $r DELETE p", {"r": run.uid})
            self._conn.execute("MATCH (r:Run) WHERE r.uid = $r DELETE r", {"r": run.uid})
            self._copy("Run", pd.DataFrame([run.row()]))
            mentions = {m.uid: m for m in write.mentions}
            if mentions:
                have = {r[0] for r in self.query("MATCH (m:Mention) WHERE m.uid IN $u RETURN m.uid",
                                                 {"u": list(mentions)}).rows}
                new = [vars(m) for uid, m in mentions.items() if uid not in have]
                self._copy("Mention", pd.DataFrame(new, columns=["uid", "text", "doc_id", "start", "end", "context"]))
            if write.links:
                self._copy("LINKED_TO", pd.DataFrame(
                    [(e.mention_uid, e.concept_uid, float(e.score), int(e.rank), run.method, run.uid)
                     for e in write.links],
                    columns=["from", "to", "score", "rank", "method", "run"]), ' (from="Mention", to="Concept")')
            for from_mention, label in ((False, "Concept"), (True, "Mention")):
                rows = [(e.source_uid, e.hypernym_uid, float(e.score), int(e.rank), int(e.level), run.method, run.uid)
                        for e in write.predictions if e.source_is_mention == from_mention]
                self._copy("PREDICTED_IS_A", pd.DataFrame(
                    rows, columns=["from", "to", "score", "rank", "level", "method", "run"]),
                    f' (from="{label}", to="Concept")')

        try:
            self._transaction(body)
        except RuntimeError as exc:
            raise StoreError(f"writing run {run.uid} failed, store unchanged: {_one_line(exc)}") from None

    def close(self) -> None:
        try:
            self._conn.close()
            self._db.close()
        except Exception:  # closing twice is harmless
            pass


def _plain(value: Any) -> Any:
    """Nodes/rels come back as dicts with internal ids; drop those for users."""
    if isinstance(value, dict) and ("_ID" in value or "_id" in value):
        out = {k: v for k, v in value.items() if not k.startswith("_")}
        out["_label"] = value.get("_LABEL", value.get("_label", ""))
        return out
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())
