"""Neo4j 5 backend through the official driver.

Writes follow what makes Neo4j fast (DESIGN §4, §9): uniqueness constraints first, then
`UNWIND $batch` of a few thousand rows with *labelled* MATCHes, inside one managed write
transaction (`execute_write`, retried by the driver) so that a failed ingest or run write
leaves the previous state intact. Reads use the same saved queries as LadybugDB.
"""
from __future__ import annotations

import os
import time
from typing import Any, Iterator
from urllib.parse import unquote, urlsplit, urlunsplit

from kgnorm.cypher_files import schema_statements
from kgnorm.errors import StoreError
from kgnorm.ontology_graph import OntologyGraph
from kgnorm.stores.base import (GraphStore, LoadSummary, QueryResult, RunWrite, concept_records,
                                ontology_record)

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
    def __init__(self, uri: str, database: str | None = None) -> None:
        import neo4j
        from neo4j.exceptions import AuthError, ServiceUnavailable

        clean, auth = split_credentials(uri)
        self.uri = clean
        self.database = database or os.environ.get("KGNORM_NEO4J_DATABASE") or None
        try:
            self._driver = neo4j.GraphDatabase.driver(clean, auth=auth)
            self._driver.verify_connectivity()
        except (ServiceUnavailable, AuthError, OSError, ValueError) as exc:
            raise StoreError(f"cannot reach Neo4j at {clean}: {' '.join(str(exc).split())}") from None
        with self._session() as session:
            for stmt in schema_statements("neo4j"):
                session.run(stmt).consume()

    def _session(self) -> Any:
        return self._driver.session(database=self.database) if self.database else self._driver.session()

    # -- reads ---------------------------------------------------------------------
    def query(self, cypher: str, params: dict[str, Any] | None = None) -> QueryResult:
        from neo4j.exceptions import Neo4jError

        try:
            with self._session() as session:
                result = session.run(cypher, params or {})
                columns = list(result.keys())
                rows = [[_plain(v) for v in record.values()] for record in result]
        except Neo4jError as exc:
            raise StoreError(f"query failed: {' '.join(str(exc.message or exc).split())}") from None
        return QueryResult(columns, rows)

    # -- writes --------------------------------------------------------------------
    def _write(self, work: Any, what: str) -> Any:
        from neo4j.exceptions import Neo4jError

        try:
            with self._session() as session:
                return session.execute_write(work)
        except Neo4jError as exc:
            raise StoreError(f"{what} failed, store unchanged: {' '.join(str(exc.message or exc).split())}") from None

    def load_ontology(self, graph: OntologyGraph) -> LoadSummary:
        t0 = time.perf_counter()
        replaced = self.ontology_info(graph.name) is not None
        concepts = list(concept_records(graph))
        is_a = [{"c": c, "p": p} for c, p in graph.is_a]
        xrefs = [{"a": a, "b": b, "s": s} for a, b, s in self.xref_edges_for(graph)]
        onto = ontology_record(graph)

        def work(tx: Any) -> None:
            # Delete in batches so a large ontology does not build one huge delete state.
            while tx.run("MATCH (c:Concept {ontology: $o}) WITH c LIMIT 10000 DETACH DELETE c "
                         "RETURN count(*) AS n", o=graph.name).single()["n"]:
                pass
            tx.run("MATCH (o:Ontology {name: $o}) DELETE o", o=graph.name).consume()
            for batch in _batches(concepts):
                tx.run("UNWIND $rows AS r CREATE (c:Concept) SET c = r", rows=batch).consume()
            for batch in _batches(is_a):
                tx.run("UNWIND $rows AS r MATCH (c:Concept {uid: r.c}) MATCH (p:Concept {uid: r.p}) "
                       "CREATE (c)-[:IS_A]->(p)", rows=batch).consume()
            for batch in _batches(xrefs):
                tx.run("UNWIND $rows AS r MATCH (a:Concept {uid: r.a}) MATCH (b:Concept {uid: r.b}) "
                       "MERGE (a)-[x:XREF]->(b) SET x.source = r.s", rows=batch).consume()
            tx.run("CREATE (o:Ontology) SET o = $row", row=onto).consume()

        self._write(work, f"loading ontology {graph.name}")
        return LoadSummary(graph.name, len(concepts), len(is_a), len(xrefs), replaced, time.perf_counter() - t0)

    def write_run(self, write: RunWrite) -> None:
        run = write.run
        mentions = [vars(m) for m in write.mentions]
        links = [{"m": e.mention_uid, "c": e.concept_uid, "score": float(e.score), "rank": int(e.rank)}
                 for e in write.links]
        preds = {flag: [{"s": e.source_uid, "h": e.hypernym_uid, "score": float(e.score), "rank": int(e.rank),
                         "level": int(e.level)} for e in write.predictions if e.source_is_mention == flag]
                 for flag in (False, True)}

        def work(tx: Any) -> None:
            tx.run("MATCH ()-[l:LINKED_TO {run: $r}]->() DELETE l", r=run.uid).consume()
            tx.run("MATCH ()-[p:PREDICTED_IS_A {run: $r}]->() DELETE p", r=run.uid).consume()
            tx.run("MERGE (r:Run {uid: $uid}) SET r = $row", uid=run.uid, row=run.row()).consume()
            for batch in _batches(mentions):
                tx.run("UNWIND $rows AS r MERGE (m:Mention {uid: r.uid}) SET m += r", rows=batch).consume()
            for batch in _batches(links):
                tx.run("UNWIND $rows AS r MATCH (m:Mention {uid: r.m}) MATCH (c:Concept {uid: r.c}) "
                       "CREATE (m)-[:LINKED_TO {score: r.score, rank: r.rank, method: $method, run: $run}]->(c)",
                       rows=batch, method=run.method, run=run.uid).consume()
            for flag, label in ((False, "Concept"), (True, "Mention")):
                for batch in _batches(preds[flag]):
                    tx.run(f"UNWIND $rows AS r MATCH (s:{label} {{uid: r.s}}) MATCH (h:Concept {{uid: r.h}}) "
                           "CREATE (s)-[:PREDICTED_IS_A {score: r.score, rank: r.rank, level: r.level, "
                           "method: $method, run: $run}]->(h)", rows=batch, method=run.method, run=run.uid).consume()

        self._write(work, f"writing run {run.uid}")

    def close(self) -> None:
        self._driver.close()


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
