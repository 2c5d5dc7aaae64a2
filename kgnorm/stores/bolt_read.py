"""Read-only on Bolt, enforced by kgnorm and not only by the server.

A store opened read-only runs each statement in an explicit READ transaction that is never
committed: it is always rolled back, and one whose result summary shows a write (query type
`w`/`rw`/`s`, or any update counter) is refused with the same line LadybugDB gives. Neo4j 5
refuses such a statement itself (error code `…Statement.AccessMode`), which maps to that line
too; ArcadeDB's Bolt plugin ignores the READ access mode but reports the write in its summary
(query type `w`, counters), so the rollback and the refusal are kgnorm's.

Schema statements (CREATE/DROP INDEX|CONSTRAINT) are refused before they are sent: ArcadeDB
applies schema changes outside the transaction, so a rollback would not undo them.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from kgnorm.stores.base import QueryResult, refused_read_only

_SCHEMA = re.compile(r"\s*(CREATE|DROP)\s+(\w+\s+)?(INDEX|CONSTRAINT)\b", re.IGNORECASE)
_EXPLAIN = re.compile(r"\s*EXPLAIN\b", re.IGNORECASE)
_WRITE_TYPES = ("w", "rw", "s")
_COUNTERS = ("nodes_created", "nodes_deleted", "relationships_created", "relationships_deleted", "properties_set",
             "labels_added", "labels_removed", "indexes_added", "indexes_removed", "constraints_added",
             "constraints_removed", "system_updates")
ACCESS_MODE_ERROR = "Neo.ClientError.Statement.AccessMode"


def read_checked(session: Any, cypher: str, params: dict[str, Any], plain: Callable[[Any], Any]) -> QueryResult:
    """Run one statement in a READ transaction that is rolled back; refuse it if it wrote.
    Raises the driver's Neo4jError for the caller to word."""
    if _SCHEMA.match(cypher):
        raise refused_read_only("this statement changes the schema")
    tx = session.begin_transaction()
    try:
        result = tx.run(cypher, params)
        columns = list(result.keys())
        rows = [[plain(v) for v in record.values()] for record in result]
        wrote = writes(result.consume(), planned_only=bool(_EXPLAIN.match(cypher)))
    finally:
        tx.close()  # a read never commits: close() rolls back what is still open
    if wrote:
        raise refused_read_only(f"this statement writes ({wrote}; rolled back)")
    return QueryResult(columns, rows)


def writes(summary: Any, planned_only: bool = False) -> str:
    """What a result summary says the statement wrote ("" for a read). `planned_only` (EXPLAIN,
    which plans and never runs the statement): judged by the counters alone, since ArcadeDB
    reports query type 'w' for the EXPLAIN of a read too."""
    counters = summary.counters
    done = [f"{name} {getattr(counters, name)}" for name in _COUNTERS if getattr(counters, name, 0)]
    if done:
        return ", ".join(done)
    if counters.contains_updates or counters.contains_system_updates:
        return "contains updates"
    if summary.query_type in _WRITE_TYPES and not planned_only:
        return f"query type {summary.query_type!r}"
    return ""
