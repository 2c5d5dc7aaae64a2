"""Embedded LadybugDB backend: bulk loads with COPY inside one transaction.

COPY from a DataFrame loads ~1M nodes in seconds, while UNWIND … MERGE creates only a few
hundred nodes/s; so ingests and run writes delete-then-COPY inside an explicit
transaction that is rolled back on any failure, leaving the previous state intact.
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import ladybug as lb
import pandas as pd
import pyarrow as pa

from kgnorm.stores.cypher_files import schema_statements
from kgnorm.stores.ladybug_guard import not_writable, probe_recovery, require_room
from kgnorm.errors import StoreError
from kgnorm.graph.ontology_graph import OntologyGraph
from kgnorm.stores.reingest import RETIRED_COLUMNS
from kgnorm.stores.base import (CONCEPT_COLUMNS, GraphStore, LoadSummary, QueryResult, RunWrite, concept_columns,
                                concept_key, content_digest, ontology_record, redact, refused_read_only, retired_records)
from kgnorm.stores.ladybug_staging import MENTION_COLUMNS, LadybugStaging, one_line as _one_line


LOCK_POLL_S = 0.25
_WRITES_FILES = re.compile(r"\s*(COPY|EXPORT|IMPORT|INSTALL|ATTACH|DETACH\s+DATABASE|USE)\b", re.IGNORECASE)


def writer_elsewhere(path: str | Path) -> int | None:
    """The pid of another live process holding the store at `path` for writing, as the holder
    file its open wrote says; None when none is known (a killed writer's stale file included). A
    cheap look before an open that would fail at once: LadybugDB sets up its buffer pool before it
    finds the lock taken (tens of ms)."""
    try:
        pid = int(json.loads(Path(f"{path}.holder").read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid == os.getpid():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        pass
    return pid


class LadybugStore(LadybugStaging, GraphStore):
    """`create=False` refuses a missing store (a typo'd path is an error, not a new empty
    store); `read_only` opens share the store with other readers; a lock held by another
    process is waited for up to `lock_timeout` seconds, then its holder is named."""

    def __init__(self, path: str | Path, read_only: bool = False, create: bool = False,
                 lock_timeout: float = 30.0, buffer_pool_mb: int | None = None) -> None:
        self.path = Path(path)
        self.buffer_pool_mb = buffer_pool_mb  # None: LadybugDB's default, most of the RAM
        self.uri = f"ladybug://{self.path}"
        self.read_only = read_only
        self.created = not self.path.exists()
        if self.created and (read_only or not create):
            raise StoreError(f"no store at {redact(str(self.path))}: check --store (or KGNORM_STORE); "
                             "only `kgnorm ingest` creates a store")
        if self.created:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_timeout = lock_timeout
        self.recovery_note = probe_recovery(self.path) if not self.created else None
        if not read_only:
            require_room(self.path)
        self._db, self._conn = self._open(lock_timeout)
        self._holder = Path(f"{self.path}.holder")
        if not read_only:
            try:
                self._holder.write_text(json.dumps({"pid": os.getpid(), "command": " ".join(sys.argv)}),
                                        encoding="utf-8")
            except PermissionError as exc:  # the folder made read-only: found by the I/O-fault torture
                self._conn.close()
                self._db.close()
                raise not_writable(self.path, f"{exc.strerror}: {exc.filename}") from None
            for stmt in schema_statements("ladybug"):
                self._conn.execute(stmt)
            self.opened_for_writing()

    def _open(self, lock_timeout: float) -> tuple[Any, Any]:
        deadline = time.monotonic() + max(0.0, lock_timeout)
        recovered = False
        while True:
            try:
                db = lb.Database(str(self.path), read_only=self.read_only,
                                 buffer_pool_size=self.pool_mb() * 2**20)
                return db, lb.Connection(db)
            except RuntimeError as exc:
                # a read-only open just as another process commits finds its checkpoint under way
                # (recovery pending, or the log just emptied): transient, retried within the same
                # wait as a lock
                low = str(exc).lower()
                pending = self.read_only and ("recovery is pending" in low or
                                              ("reading past the end of the file" in low and ".wal" in low))
                if not self.read_only and "permission denied" in low:
                    raise not_writable(self.path, redact(_one_line(exc))) from None
                if "lock" not in str(exc).lower() and not pending:
                    raise StoreError(f"cannot open LadybugDB store at {redact(str(self.path))}: "
                                     f"{redact(_one_line(exc))}") from None
                if pending and not recovered and self._finish_recovery():
                    recovered = True
                    continue
                if time.monotonic() >= deadline:
                    if pending:
                        raise StoreError(f"store {self.path} has a checkpoint left to finish (a writer stopped "
                                         "during one, or another process is checkpointing it): any command that "
                                         f"writes the store finishes it; waited {lock_timeout:g} s "
                                         "(--lock-timeout)") from None
                    raise StoreError(f"store {self.path} is locked by {self._holder_text()}; waited "
                                     f"{lock_timeout:g} s (--lock-timeout)") from None
                time.sleep(LOCK_POLL_S)

    def _finish_recovery(self) -> bool:
        """A writer killed during a checkpoint leaves its recovery pending, and LadybugDB then refuses
        every read-only open until a read-write open finishes it (found by the crash torture: `kgnorm
        check`, `query` and serve's pages were refused after `kgnorm serve` was killed mid-review).
        Finish it as the next writer would, when no other process holds the store; False when one
        does (its own checkpoint is under way: waited for as a lock) or the store is not writable."""
        try:
            lb.Database(str(self.path), read_only=False, buffer_pool_size=self.pool_mb() * 2**20).close()
        except RuntimeError:
            return False
        return True

    def pool_mb(self) -> int:
        return pool_mb_for(self.buffer_pool_mb, self.path)

    def _holder_text(self) -> str:
        try:
            h = json.loads(Path(f"{self.path}.holder").read_text(encoding="utf-8"))
            return f"another process (pid {h['pid']}: {h['command']})"
        except (OSError, ValueError, KeyError):
            return "another process"

    # -- reads ---------------------------------------------------------------------
    def query(self, cypher: str, params: dict[str, Any] | None = None) -> QueryResult:
        if self.read_only and _WRITES_FILES.match(cypher):  # LadybugDB allows these on a read-only store
            raise StoreError("query failed: the store is opened read-only and this statement writes files or "
                             "changes the database: pass --write to run it")
        try:
            res = self._conn.execute(cypher, params or {"_kgnorm_single": 0})
        except RuntimeError as exc:
            msg = _one_line(exc)
            if "multiple statements" in msg:  # refused before any of them ran
                raise StoreError("query failed: give one statement at a time (several were given)") from None
            if "read-only" in msg:
                raise refused_read_only(msg) from None
            raise StoreError(f"query failed: {msg}") from None
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
            try:  # the store may already have rolled back itself: keep the real cause
                self._conn.execute("ROLLBACK")
            except RuntimeError:
                pass
            raise
        self._conn.execute("COMMIT")
        return out

    def write_statements(self, statements: Sequence[tuple[str, dict[str, Any]]], what: str) -> None:
        if self.read_only:
            raise refused_read_only(f"{what} writes")
        try:
            self._transaction(lambda: [self._conn.execute(q, p) for q, p in statements])
        except RuntimeError as exc:
            raise StoreError(f"{what} failed, store unchanged: {_one_line(exc)}") from None

    def _copy(self, table: str, frame: pd.DataFrame | pa.Table, options: str = "") -> None:
        if frame.shape[0] == 0:
            return
        if table == "LINKED_TO" and "moved_from" not in frame.columns:  # a new link comes from nowhere
            frame = frame.assign(moved_from="")
        # LadybugDB's Python API finds the DataFrame by its variable name in the caller's scope.
        self._conn.execute(f"COPY {table} FROM frame{options}")

    def load_ontology(self, graph: OntologyGraph) -> LoadSummary:
        """Replace the ontology's concepts and edges in one transaction, keeping every link
        (LINKED_TO, PREDICTED_IS_A) into a concept the new version still has and moving those
        into a merged concept to its successor (LoadSummary says what happens to the rest): the
        links are read out, the concepts replaced by a fast COPY, and the links copied back."""
        t0 = time.perf_counter()
        summary = LoadSummary(graph.name, len(graph.concepts), len(graph.is_a), 0,
                              self.ontology_info(graph.name) is not None)
        self._require_keys()
        self.reingest_plan(graph, summary)
        columns = concept_columns(graph)
        digest = content_digest(graph, columns)
        if self.unchanged(graph, summary, digest):
            rec = ontology_record(graph, digest)
            self.query("MATCH (o:Ontology) WHERE o.name = $name SET o.version = $version, "
                       "o.source_path = $source_path, o.format = $format, o.loaded_at = $loaded_at", rec)
            summary.unchanged = True
            summary.seconds = time.perf_counter() - t0
            return summary
        # Arrow tables COPY faster than DataFrames of Python lists (list columns stay columnar).
        concepts = pa.Table.from_pydict({k: columns[k] for k in CONCEPT_COLUMNS})
        prefix = concept_key(graph.name, "")
        is_a = pa.Table.from_pydict({"from": [prefix + c for c, _ in graph.is_a],
                                     "to": [prefix + p for _, p in graph.is_a]})
        keep = set(graph.concepts)
        retired = pd.DataFrame(retired_records(graph.name, summary.retired), columns=RETIRED_COLUMNS)

        def body() -> int:
            saved = self._links_into(graph.name, keep, summary.merged)
            orphans = self._orphan_rows(graph.name, keep, summary.merged)
            self._conn.execute("MATCH (c:Concept) WHERE c.ontology = $o DETACH DELETE c", {"o": graph.name})
            self._conn.execute("MATCH (o:Ontology) WHERE o.name = $o DETACH DELETE o", {"o": graph.name})
            self._conn.execute("MATCH (r:RetiredId) WHERE r.ontology = $o DELETE r", {"o": graph.name})
            self._copy("Concept", concepts)
            have: set[str] = set()
            if self._conn.execute("MATCH (i:ConceptId) RETURN count(i)").get_all()[0][0]:
                have = {r[0] for r in self._conn.execute(
                    "UNWIND $u AS x MATCH (i:ConceptId {uid: x}) RETURN i.uid", {"u": list(keep)}).get_all()}
            self._copy("ConceptId", pa.Table.from_pydict({"uid": sorted(keep - have)}))
            self._copy("IDENTIFIES", pa.Table.from_pydict({"from": columns["uid"], "to": columns["key"]}))
            self._copy("IS_A", is_a)
            xrefs = self.xref_edges_for(graph)
            self._copy("XREF", pd.DataFrame(xrefs, columns=["from", "to", "source"]))
            self._copy("Ontology", pd.DataFrame([ontology_record(graph, digest)]))
            self._copy("RetiredId", retired)
            self._copy("ORPHAN_OF", orphans)
            for table, frame, options in saved:
                self._copy(table, frame, options)
            return len(xrefs)

        try:
            summary.xrefs = self._transaction(body)
        except RuntimeError as exc:
            raise StoreError(f"loading ontology {graph.name} failed, store unchanged: {_one_line(exc)}") from None
        summary.seconds = time.perf_counter() - t0
        return summary

    def _links_into(self, ontology: str, keep: set[str],
                    moved: dict[str, str]) -> list[tuple[str, pd.DataFrame, str]]:
        """The LINKED_TO / PREDICTED_IS_A edges touching `ontology` whose ends in it stay in `keep`,
        and the LINKED_TO edges into a `moved` concept re-aimed at its successor (`moved_from` set),
        as frames to COPY back after its concepts are replaced."""
        o = {"o": ontology}
        links = []
        for *row, uid, was in self.query(
                "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) WHERE c.ontology = $o "
                "RETURN m.uid, c.key, l.score, l.rank, l.method, l.run, c.uid, l.moved_from", o).rows:
            if uid in keep:
                links.append([*row, was or ""])
            elif uid in moved:
                links.append([row[0], concept_key(ontology, moved[uid]), *row[2:], was or uid])
        out = [("LINKED_TO", pd.DataFrame(links, columns=["from", "to", "score", "rank", "method", "run",
                                                          "moved_from"]), ' (from="Mention", to="Concept")')]
        cols = ["from", "to", "score", "rank", "level", "method", "run"]
        from_mentions = [r[:7] for r in self.query(
            "MATCH (m:Mention)-[p:PREDICTED_IS_A]->(c:Concept) WHERE c.ontology = $o "
            "RETURN m.uid, c.key, p.score, p.rank, p.level, p.method, p.run, c.uid", o).rows if r[7] in keep]
        out.append(("PREDICTED_IS_A", pd.DataFrame(from_mentions, columns=cols), ' (from="Mention", to="Concept")'))
        from_concepts = [r[:7] for r in self.query(
            "MATCH (s:Concept)-[p:PREDICTED_IS_A]->(c:Concept) WHERE s.ontology = $o OR c.ontology = $o "
            "RETURN s.key, c.key, p.score, p.rank, p.level, p.method, p.run, s.ontology, c.ontology, s.uid, c.uid",
            o).rows if (r[7] != ontology or r[9] in keep) and (r[8] != ontology or r[10] in keep)]
        out.append(("PREDICTED_IS_A", pd.DataFrame(from_concepts, columns=cols), ' (from="Concept", to="Concept")'))
        maps = [r[:6] for r in self.query(  # `kgnorm match` edges: kept while both ends stay
            "MATCH (s:Concept)-[p:MAPS_TO]->(c:Concept) WHERE s.ontology = $o OR c.ontology = $o "
            "RETURN s.key, c.key, p.predicate, p.confidence, p.justification, p.run, s.ontology, c.ontology, s.uid, c.uid",
            o).rows if (r[6] != ontology or r[8] in keep) and (r[7] != ontology or r[9] in keep)]
        out.append(("MAPS_TO", pd.DataFrame(maps, columns=["from", "to", "predicate", "confidence", "justification",
                                                           "run"]), ""))
        return out

    def _orphan_rows(self, ontology: str, keep: set[str], moved: dict[str, str]) -> pd.DataFrame:
        """ORPHAN_OF rows of `ontology` to copy back: those already there and one per LINKED_TO
        edge into a concept that goes without a single successor."""
        o = {"o": ontology}
        rows = self.query("MATCH (m:Mention)-[r:ORPHAN_OF]->(o:Ontology) WHERE o.name = $o RETURN m.uid, o.name, "
                          "r.concept_uid, r.score, r.rank, r.method, r.run, r.version", o).rows
        rows += [r[:8] for r in self.query(
            "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept), (o:Ontology) WHERE c.ontology = $o AND o.name = $o "
            "RETURN m.uid, o.name, c.uid, l.score, l.rank, l.method, l.run, o.version", o).rows
            if r[2] not in keep and r[2] not in moved]
        return pd.DataFrame(rows, columns=["from", "to", "concept_uid", "score", "rank", "method", "run", "version"])

    def write_run(self, write: RunWrite) -> None:
        run = write.run
        self._require_keys()
        key = self.run_keys(write)
        self.mapping_keys(write)

        def body() -> None:
            self._conn.execute("MATCH ()-[l:LINKED_TO]->() WHERE l.run = $r DELETE l", {"r": run.uid})
            self._conn.execute("MATCH ()-[p:MAPS_TO]->() WHERE p.run = $r DELETE p", {"r": run.uid})
            self._conn.execute("MATCH ()-[p:PREDICTED_IS_A]->() WHERE p.run = $r DELETE p", {"r": run.uid})
            self._conn.execute("MATCH (r:Run) WHERE r.uid = $r DELETE r", {"r": run.uid})
            self._copy("Run", pd.DataFrame([run.row()]))
            if write.relinked:
                self._conn.execute("MATCH (m:Mention)-[r:ORPHAN_OF]->(o:Ontology) WHERE o.name = $o AND m.uid IN $u "
                                   "DELETE r", {"o": write.ontology, "u": write.relinked})
            mentions = {m.uid: m for m in write.mentions}
            if mentions:
                have = {r[0] for r in self.query("MATCH (m:Mention) WHERE m.uid IN $u RETURN m.uid",
                                                 {"u": list(mentions)}).rows}
                new = [vars(m) for uid, m in mentions.items() if uid not in have]
                self._copy("Mention", pd.DataFrame(new, columns=MENTION_COLUMNS))
            if write.links:
                self._copy("LINKED_TO", pd.DataFrame(
                    [(e.mention_uid, key[write.link_ref(e)], float(e.score), int(e.rank), run.method, run.uid)
                     for e in write.links],
                    columns=["from", "to", "score", "rank", "method", "run"]), ' (from="Mention", to="Concept")')
            for from_mention, label in ((False, "Concept"), (True, "Mention")):
                rows = [(e.source_uid if from_mention else key[write.ref(e.source_uid)], key[write.ref(e.hypernym_uid)],
                         float(e.score),
                         int(e.rank), int(e.level), run.method, run.uid)
                        for e in write.predictions if e.source_is_mention == from_mention]
                self._copy("PREDICTED_IS_A", pd.DataFrame(
                    rows, columns=["from", "to", "score", "rank", "level", "method", "run"]),
                    f' (from="{label}", to="Concept")')
            self._copy("MAPS_TO", pd.DataFrame(
                [(*e.keys(), e.predicate, float(e.confidence), e.justification, run.uid) for e in write.mappings],
                columns=["from", "to", "predicate", "confidence", "justification", "run"]))

        try:
            self._transaction(body)
        except RuntimeError as exc:
            raise StoreError(f"writing run {run.uid} failed, store unchanged: {_one_line(exc)}") from None

    def _require_keys(self) -> None:
        """Stores made before concepts were keyed by ontology + uid can be read, not written."""
        names = [r[1] for r in self.query("CALL TABLE_INFO('Concept') RETURN *").rows]
        if "key" not in names:
            raise StoreError(f"the store at {redact(str(self.path))} was made by an earlier kgnorm (one concept per "
                             "uid): it can be read and queried, but ingest and run writes need a new store")

    def close(self) -> None:
        try:
            self._conn.close()
            self._db.close()
        except Exception:  # closing twice is harmless
            pass
        if not self.read_only:
            try:  # a note for the lock message only: a folder made read-only meanwhile keeps it
                self._holder.unlink(missing_ok=True)
            except OSError:
                pass


def pool_mb_for(requested: int | None, path: Path) -> int:
    """The buffer pool to open a store with (0: LadybugDB's default, most of the RAM). A bound
    the caller sets is raised to the store file's size: a write's checkpoint needs pool pages
    in proportion to the tables it touches (at 3M mentions a 64 MB pool failed with "the buffer
    pool is full" and 192 MB did; benchmarks/LOG.md, "LadybugDB alone")."""
    if not requested:
        return 0
    size = path.stat().st_size if path.is_file() else 0
    return max(int(requested), -(-size // 2**20))


def _plain(value: Any) -> Any:
    """Nodes/rels come back as dicts with internal ids; drop those for users."""
    if isinstance(value, dict) and ("_ID" in value or "_id" in value):
        out = {k: v for k, v in value.items() if not k.startswith("_")}
        out["_label"] = value.get("_LABEL", value.get("_label", ""))
        return out
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
