"""Neo4j 5 backend through the official driver.

Writes follow what makes Neo4j fast (docs/architecture.md, "Stores"): uniqueness constraints first, then
`UNWIND $batch` of a few thousand rows with *labelled* MATCHes, inside one managed write
transaction (`execute_write`, retried by the driver) so that a failed ingest or run write
leaves the previous state intact. Reads use the same saved queries as LadybugDB.
"""
from __future__ import annotations

import json
import logging
import os
import time
from contextlib import contextmanager
from typing import Any, Iterator, Sequence
from urllib.parse import unquote, urlsplit, urlunsplit

from kgnorm.stores.bolt_read import ACCESS_MODE_ERROR, read_checked
from kgnorm.stores.cypher_files import schema_statements
from kgnorm.errors import StoreError
from kgnorm.graph.refs import ConceptRef
from kgnorm.graph.ontology_graph import OntologyGraph
from kgnorm.stores.base import (STALE_MENTIONS, DocumentRow, GraphStore, LinkEdge, LoadSummary, MentionRow,
                                QueryResult, RunRecord, RunWrite, concept_records, concept_key, ontology_record,
                                redact, refused_read_only, retired_records)
from kgnorm.stores.stages import PUBLISHED, STAGING, stage_owner

BATCH = 10_000


def _batches(rows: list[dict[str, Any]], size: int = BATCH) -> Iterator[list[dict[str, Any]]]:
    for i in range(0, len(rows), size):
        yield rows[i:i + size]


def split_credentials(uri: str) -> tuple[str, tuple[str, str] | None]:
    """Credentials from the URI (bolt://user:pass@host) or KGNORM_NEO4J_USER/PASSWORD."""
    parts = urlsplit(uri)
    user = unquote(parts.username) if parts.username else os.environ.get("KGNORM_NEO4J_USER")
    password = unquote(parts.password) if parts.password else os.environ.get("KGNORM_NEO4J_PASSWORD")
    host = parts.hostname or "localhost"
    netloc = f"{host}:{parts.port}" if parts.port else host
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    auth = (user or "neo4j", password) if password is not None else None
    return clean, auth


class Neo4jStore(GraphStore):
    """`read_only`: every session runs in READ access mode (Neo4j refuses writes there), each
    query in a transaction kgnorm checks and rolls back (kgnorm.stores.bolt_read: servers that
    ignore the access mode), and the schema DDL is not run, so readers never need write rights."""

    def __init__(self, uri: str, database: str | None = None, read_only: bool = False) -> None:
        import neo4j
        from neo4j.exceptions import AuthError, ServiceUnavailable

        clean, auth = split_credentials(uri)
        self.uri = clean
        self.read_only = read_only
        self._mode = neo4j.READ_ACCESS if read_only else neo4j.WRITE_ACCESS
        self.database = database or os.environ.get("KGNORM_NEO4J_DATABASE") or None
        try:
            with _quiet_driver():
                self._driver = neo4j.GraphDatabase.driver(clean, auth=auth)
                self._driver.verify_connectivity()
        except (ServiceUnavailable, AuthError, OSError, ValueError) as exc:
            raise StoreError(f"cannot reach Neo4j at {clean}: {redact(_cause(exc))}") from None
        if not read_only:
            with self._session() as session:
                for stmt in schema_statements("neo4j"):
                    session.run(stmt).consume()
            self.opened_for_writing()

    def _session(self) -> Any:
        kw: dict[str, Any] = {"default_access_mode": self._mode}
        if self.database:
            kw["database"] = self.database
        return self._driver.session(**kw)

    # -- reads ---------------------------------------------------------------------
    def query(self, cypher: str, params: dict[str, Any] | None = None) -> QueryResult:
        from neo4j.exceptions import Neo4jError

        try:
            with self._session() as session:
                if self.read_only:  # checked and rolled back by kgnorm, whatever the server does
                    return read_checked(session, cypher, params or {}, _plain)
                result = session.run(cypher, params or {})
                columns = list(result.keys())
                rows = [[_plain(v) for v in record.values()] for record in result]
        except Neo4jError as exc:
            msg = " ".join(str(exc.message or exc).split())
            if exc.code == ACCESS_MODE_ERROR:  # Neo4j 5 refused the write in a READ transaction
                raise refused_read_only(msg) from None
            raise StoreError(f"query failed: {msg}") from None
        return QueryResult(columns, rows)

    # -- writes --------------------------------------------------------------------
    def _write(self, work: Any, what: str) -> Any:
        from neo4j.exceptions import Neo4jError

        try:
            with self._session() as session:
                return session.execute_write(work)
        except Neo4jError as exc:
            raise StoreError(f"{what} failed, store unchanged: {' '.join(str(exc.message or exc).split())}") from None
        except StoreError as exc:
            raise StoreError(f"{what} failed, store unchanged: {exc}") from None

    def write_statements(self, statements: Sequence[tuple[str, dict[str, Any]]], what: str) -> None:
        if self.read_only:
            raise refused_read_only(f"{what} writes")
        self._write(lambda tx: [tx.run(q, p).consume() for q, p in statements], what)

    def load_ontology(self, graph: OntologyGraph) -> LoadSummary:
        """Update the ontology in place by uid: concepts still there keep their node and every
        link into it; links into a concept merged into a single successor move there; concepts
        gone from the new version are removed, their other links orphaned (LoadSummary)."""
        t0 = time.perf_counter()
        summary = LoadSummary(graph.name, len(graph.concepts), len(graph.is_a), 0,
                              self.ontology_info(graph.name) is not None)
        self.reingest_plan(graph, summary)
        if self.unchanged(graph, summary):
            self._write(lambda tx: tx.run("MATCH (o:Ontology {name: $name}) SET o = $row", name=graph.name,
                                          row=ontology_record(graph)).consume(), f"loading ontology {graph.name}")
            summary.unchanged = True
            summary.seconds = time.perf_counter() - t0
            return summary
        concepts = list(concept_records(graph))
        is_a = [{"c": concept_key(graph.name, c), "p": concept_key(graph.name, p)} for c, p in graph.is_a]
        onto = ontology_record(graph)
        moved = [{"old": concept_key(graph.name, u), "new": concept_key(graph.name, n), "uid": u}
                 for u, n in summary.merged.items()]
        orphaned = [{"old": concept_key(graph.name, u), "uid": u} for u in summary.removed_concepts
                    if u not in summary.merged]
        removed = [concept_key(graph.name, u) for u in summary.removed_concepts]
        retired = retired_records(graph.name, summary.retired)
        xrefs = [{"a": a, "b": b, "s": s} for a, b, s in self.xref_edges_for(graph)]

        def work(tx: Any) -> int:
            # Batched deletes: a large ontology does not build one huge delete state.
            while tx.run("MATCH (c:Concept {ontology: $o})-[r:IS_A|XREF]-() WITH DISTINCT r LIMIT 10000 "
                         "DELETE r RETURN count(*) AS n", o=graph.name).single()["n"]:
                pass
            for batch in _batches(concepts):
                tx.run("UNWIND $rows AS r MERGE (c:Concept {key: r.key}) SET c = r "
                       "MERGE (i:ConceptId {uid: r.uid}) MERGE (i)-[:IDENTIFIES]->(c)", rows=batch).consume()
            # before the removed concepts go: their links move to the successor, or leave orphans
            for batch in _batches(moved):
                tx.run("UNWIND $rows AS r MATCH (c:Concept {key: r.old}) MATCH (n:Concept {key: r.new}) "
                       "MATCH (m:Mention)-[l:LINKED_TO]->(c) CREATE (m)-[:LINKED_TO {score: l.score, rank: l.rank, "
                       "method: l.method, run: l.run, moved_from: coalesce(l.moved_from, r.uid)}]->(n)",
                       rows=batch).consume()
            for batch in _batches(orphaned):
                tx.run("UNWIND $rows AS r MATCH (c:Concept {key: r.old}) MATCH (o:Ontology {name: $o}) "
                       "MATCH (m:Mention)-[l:LINKED_TO]->(c) CREATE (m)-[:ORPHAN_OF {concept_uid: r.uid, "
                       "score: l.score, rank: l.rank, method: l.method, run: l.run, version: o.version}]->(o)",
                       rows=batch, o=graph.name).consume()
            for batch in _batches(removed):
                tx.run("UNWIND $u AS x MATCH (c:Concept {key: x}) DETACH DELETE c", u=batch).consume()
            for batch in _batches(is_a):
                _all_written(tx, tx.run("UNWIND $rows AS r MATCH (c:Concept {key: r.c}) MATCH (p:Concept {key: r.p}) "
                                        "CREATE (c)-[:IS_A]->(p) RETURN count(*) AS n", rows=batch), batch, "IS_A",
                             (("c", "Concept"), ("p", "Concept")))
            for batch in _batches(xrefs):
                tx.run("UNWIND $rows AS r MATCH (a:Concept {key: r.a}) MATCH (b:Concept {key: r.b}) "
                       "MERGE (a)-[x:XREF]->(b) SET x.source = r.s", rows=batch).consume()
            tx.run("MATCH (r:RetiredId {ontology: $o}) DELETE r", o=graph.name).consume()
            for batch in _batches(retired):
                tx.run("UNWIND $rows AS r CREATE (x:RetiredId) SET x = r", rows=batch).consume()
            tx.run("MERGE (o:Ontology {name: $name}) SET o = $row", name=graph.name, row=onto).consume()
            return len(xrefs)

        summary.xrefs = self._write(work, f"loading ontology {graph.name}")
        summary.seconds = time.perf_counter() - t0
        return summary

    def write_run(self, write: RunWrite) -> None:
        """All or nothing: a MATCH that misses an end creates no edge and raises no error in
        Neo4j, so every batch counts what it wrote and a shortfall rolls the run back."""
        run = write.run
        key = self.run_keys(write)
        maps = [{"s": s, "t": t, "p": e.predicate, "c": float(e.confidence), "j": e.justification}
                for e in write.mappings for s, t in [e.keys()]]
        mentions = [vars(m) for m in write.mentions]
        links = [{"m": e.mention_uid, "c": key[write.link_ref(e)], "score": float(e.score), "rank": int(e.rank)}
                 for e in write.links]
        preds = {flag: [{"s": e.source_uid if flag else key[write.ref(e.source_uid)], "h": key[write.ref(e.hypernym_uid)],
                         "score": float(e.score), "rank": int(e.rank), "level": int(e.level)}
                        for e in write.predictions if e.source_is_mention == flag]
                 for flag in (False, True)}

        def work(tx: Any) -> None:
            tx.run("MATCH ()-[l:LINKED_TO {run: $r}]->() DELETE l", r=run.uid).consume()
            tx.run("MATCH ()-[p:PREDICTED_IS_A {run: $r}]->() DELETE p", r=run.uid).consume()
            tx.run("MATCH ()-[p:MAPS_TO {run: $r}]->() DELETE p", r=run.uid).consume()
            tx.run("MERGE (r:Run {uid: $uid}) SET r = $row", uid=run.uid, row=run.row()).consume()
            for batch in _batches(write.relinked):
                tx.run("MATCH (o:Ontology {name: $o}) UNWIND $u AS x MATCH (m:Mention {uid: x})-[r:ORPHAN_OF]->(o) "
                       "DELETE r", o=write.ontology, u=batch).consume()
            for batch in _batches(mentions):
                tx.run("UNWIND $rows AS r MERGE (m:Mention {uid: r.uid}) SET m += r", rows=batch).consume()
            for batch in _batches(links):
                _all_written(tx, tx.run(
                    "UNWIND $rows AS r MATCH (m:Mention {uid: r.m}) MATCH (c:Concept {key: r.c}) "
                    "CREATE (m)-[:LINKED_TO {score: r.score, rank: r.rank, method: $method, run: $run}]->(c) "
                    "RETURN count(*) AS n", rows=batch, method=run.method, run=run.uid), batch, "LINKED_TO",
                    (("m", "Mention"), ("c", "Concept")))
            for flag, label in ((False, "Concept"), (True, "Mention")):
                for batch in _batches(preds[flag]):
                    _all_written(tx, tx.run(
                        f"UNWIND $rows AS r MATCH (s:{label} {{{'uid' if flag else 'key'}: r.s}}) "
                        "MATCH (h:Concept {key: r.h}) "
                        "CREATE (s)-[:PREDICTED_IS_A {score: r.score, rank: r.rank, level: r.level, "
                        "method: $method, run: $run}]->(h) RETURN count(*) AS n",
                        rows=batch, method=run.method, run=run.uid), batch, "PREDICTED_IS_A",
                        (("s", label), ("h", "Concept")))
            for batch in _batches(maps):
                _all_written(tx, tx.run(
                    "UNWIND $rows AS r MATCH (s:Concept {key: r.s}) MATCH (t:Concept {key: r.t}) "
                    "CREATE (s)-[:MAPS_TO {predicate: r.p, confidence: r.c, justification: r.j, run: $run}]->(t) "
                    "RETURN count(*) AS n", rows=batch, run=run.uid), batch, "MAPS_TO",
                    (("s", "Concept"), ("t", "Concept")))

        self._write(work, f"writing run {run.uid}")

    # -- a run written in batches (kgnorm.stores.staged_run) ------------------------
    def stage_begin(self, run: RunRecord, stage: str) -> None:
        self.stage_clear(stage)
        row = {**run.row(), "uid": stage, "kind": STAGING, "metrics_json": json.dumps({"owner": stage_owner()})}
        self._write(lambda tx: tx.run("CREATE (r:Run) SET r = $row", row=row).consume(), f"writing run {run.uid}")

    def stage_rows(self, stage: str, run: RunRecord, new: list[MentionRow], links: list[LinkEdge],
                   keys: dict[ConceptRef, str], documents: Sequence[DocumentRow] = (),
                   in_edges: Sequence[tuple[str, str]] = ()) -> None:
        mentions = [vars(m) for m in new]
        staged = [{"m": m.uid} for m in new]
        docs = [vars(d) for d in documents]
        joins = [{"m": m, "d": d} for m, d in in_edges]
        rows = [{"m": e.mention_uid, "c": keys[e.ref], "score": float(e.score), "rank": int(e.rank)}
                for e in links]

        def work(tx: Any) -> None:
            for batch in _batches(mentions):
                tx.run("UNWIND $rows AS r CREATE (m:Mention) SET m = r", rows=batch).consume()
            for batch in _batches(staged):
                tx.run("MATCH (s:Run {uid: $s}) UNWIND $rows AS r MATCH (m:Mention {uid: r.m}) "
                       "CREATE (s)-[:STAGED]->(m)", s=stage, rows=batch).consume()
            for batch in _batches(docs):
                tx.run("MATCH (s:Run {uid: $s}) UNWIND $rows AS r CREATE (d:Document) SET d = r "
                       "CREATE (s)-[:STAGED]->(d)", s=stage, rows=batch).consume()
            for batch in _batches(joins):
                tx.run("UNWIND $rows AS r MATCH (m:Mention {uid: r.m}) MATCH (d:Document {uid: r.d}) "
                       "CREATE (m)-[:`IN` {run: $s}]->(d)", s=stage, rows=batch).consume()
            for batch in _batches(rows):
                _all_written(tx, tx.run(
                    "UNWIND $rows AS r MATCH (m:Mention {uid: r.m}) MATCH (c:Concept {key: r.c}) "
                    "CREATE (m)-[:LINKED_TO {score: r.score, rank: r.rank, method: $method, run: $run}]->(c) "
                    "RETURN count(*) AS n", rows=batch, method=run.method, run=stage), batch, "LINKED_TO",
                    (("m", "Mention"), ("c", "Concept")))

        self._write(work, f"writing run {run.uid}")

    def stage_publish(self, run: RunRecord, stage: str) -> None:
        def work(tx: Any) -> None:
            tx.run("MATCH ()-[l:LINKED_TO {run: $r}]->() DELETE l", r=run.uid).consume()
            tx.run("MATCH ()-[p:PREDICTED_IS_A {run: $r}]->() DELETE p", r=run.uid).consume()
            tx.run("MATCH (r:Run {uid: $uid}) DELETE r", uid=run.uid).consume()
            tx.run(STALE_MENTIONS, r=run.uid).consume()
            tx.run("MATCH ()-[i:`IN` {run: $r}]->() DELETE i", r=run.uid).consume()
            for rel in ("LINKED_TO", "`IN`"):
                tx.run(f"MATCH ()-[l:{rel} {{run: $s}}]->() SET l.run = $r", s=stage, r=run.uid).consume()
            tx.run("CREATE (r:Run) SET r = $row", row=run.row()).consume()
            tx.run("MATCH (r:Run {uid: $s}) SET r.kind = $k", s=stage, k=PUBLISHED).consume()

        self._write(work, f"publishing run {run.uid}")
        self.stage_clear(stage)

    def stage_clear(self, stage: str) -> None:
        """In batches of 10,000 (each its own transaction): the staging node, deleted last, marks
        what is left should this be interrupted too."""
        rows = self.query("MATCH (r:Run {uid: $s}) RETURN r.kind", {"s": stage}).rows
        if not rows:
            return
        steps = ["MATCH (:Run {uid: $s})-[x:STAGED]->() WITH x LIMIT 10000 DELETE x RETURN count(*) AS n"]
        if rows[0][0] == STAGING:  # unpublished: its new mentions and its edges go too
            steps = ["MATCH (:Run {uid: $s})-[x:STAGED]->(m:Mention) WITH DISTINCT m LIMIT 10000 "
                     "DETACH DELETE m RETURN count(*) AS n",
                     "MATCH (:Run {uid: $s})-[x:STAGED]->(d:Document) WITH DISTINCT d LIMIT 10000 "
                     "DETACH DELETE d RETURN count(*) AS n",
                     "MATCH ()-[l:LINKED_TO {run: $s}]->() WITH l LIMIT 10000 DELETE l RETURN count(*) AS n",
                     "MATCH ()-[i:`IN` {run: $s}]->() WITH i LIMIT 10000 DELETE i RETURN count(*) AS n"] + steps
        for step in steps:
            while self._write(lambda tx: tx.run(step, s=stage).single()["n"], f"removing the staged rows of {stage}"):
                pass
        self._write(lambda tx: tx.run("MATCH (r:Run {uid: $s}) DETACH DELETE r", s=stage).consume(),
                    f"removing the staged rows of {stage}")

    def close(self) -> None:
        self._driver.close()


@contextmanager
def _quiet_driver() -> Iterator[None]:
    """The driver logs a routing failure to stderr itself; the error message carries it instead."""
    log = logging.getLogger("neo4j")
    handler, propagate = logging.NullHandler(), log.propagate
    log.addHandler(handler)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.propagate = propagate


def _cause(exc: BaseException) -> str:
    """The message plus the underlying failures (neo4j:// wraps them in 'Unable to retrieve routing …')."""
    parts = [" ".join(str(exc).split())]
    cause = exc.__cause__
    while cause is not None:
        inner = getattr(cause, "exceptions", None)
        for sub in inner or [cause]:
            text = " ".join(str(sub).split())
            if text and text not in parts:
                parts.append(text)
        cause = cause.__cause__ if not inner else None
    return ": ".join(parts)


def _all_written(tx: Any, result: Any, batch: list[dict[str, Any]], what: str,
                 ends: tuple[tuple[str, str], ...]) -> None:
    """Raise (rolling the transaction back) when a batch wrote fewer edges than it was given,
    naming a node that is missing; `ends`: (row key, label) of each edge end."""
    n = result.single()["n"]
    if n == len(batch):
        return
    missing = ""
    for field, label in ends:
        ids = sorted({r[field] for r in batch})
        prop = "key" if label == "Concept" else "uid"
        rows = tx.run(f"UNWIND $u AS x OPTIONAL MATCH (n:{label} {{{prop}: x}}) WITH x, n WHERE n IS NULL "
                      "RETURN x LIMIT 3", u=ids).values()
        if rows:
            missing = f": no {label} {', '.join(r[0] for r in rows)}"
            break
    raise StoreError(f"{len(batch) - n} of {len(batch)} {what} edge(s) name a node that is not in the store{missing}")


def _plain(value: Any) -> Any:
    """Driver graph objects → plain dicts, so JSON/CSV output matches the embedded backend."""
    from neo4j.graph import Node, Path, Relationship

    if isinstance(value, Node):
        out = dict(value)
        out["_label"] = next(iter(value.labels), "")
        return out
    if isinstance(value, Relationship):
        out = dict(value)
        out["_label"] = value.type
        return out
    if isinstance(value, Path):
        return [_plain(n) for n in value.nodes]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
