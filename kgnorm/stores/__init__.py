"""Graph stores: `open_store(uri)` picks the backend from the URI (DESIGN §4)."""
from __future__ import annotations

import os
from pathlib import Path

from kgnorm.errors import KgnormError
from kgnorm.stores.base import (GraphStore, LinkEdge, LoadSummary, MentionRow, PredictionEdge,
                                QueryResult, RunRecord, RunWrite)

DEFAULT_STORE = "./kgnorm-data/graph"
NEO4J_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


def resolve_store_uri(uri: str | None) -> str:
    return uri or os.environ.get("KGNORM_STORE") or DEFAULT_STORE


def open_store(uri: str | None = None, read_only: bool = False, create: bool = False,
               lock_timeout: float = 30.0) -> GraphStore:
    """`ladybug:///path`, a plain path, or a Neo4j URI (bolt://, neo4j://, neo4j+s://).

    Only `create=True` (ingest) makes a new embedded store; readers pass `read_only=True`
    (LadybugDB opened read-only, Neo4j sessions in READ access mode) and share the store."""
    uri = resolve_store_uri(uri)
    if uri.startswith(NEO4J_SCHEMES):
        from kgnorm.stores.neo4j_store import Neo4jStore
        return Neo4jStore(uri, read_only=read_only)
    if uri.startswith("ladybug://"):
        path = uri[len("ladybug://"):]
    elif "://" in uri:
        raise KgnormError(f"unknown store URI scheme in {uri!r}: use ladybug:///path, a path, "
                          f"or one of {', '.join(NEO4J_SCHEMES)}")
    else:
        path = uri
    from kgnorm.stores.ladybug_store import LadybugStore
    return LadybugStore(Path(path), read_only=read_only, create=create, lock_timeout=lock_timeout)


__all__ = ["GraphStore", "LinkEdge", "LoadSummary", "MentionRow", "PredictionEdge", "QueryResult",
           "RunRecord", "RunWrite", "open_store", "resolve_store_uri", "DEFAULT_STORE"]
