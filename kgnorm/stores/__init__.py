"""Graph stores: `open_store(uri)` picks the backend from the URI (docs/architecture.md, "Stores")."""
from __future__ import annotations

import os
import re
from pathlib import Path

from kgnorm.errors import KgnormError
from kgnorm.stores.base import (DocumentRow, GraphStore, LinkEdge, LoadSummary, MentionRow, PredictionEdge,
                                QueryResult, RunRecord, RunWrite, redact)

DEFAULT_STORE = "./kgnorm-data/graph"
NEO4J_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


_SCHEME_NAMES = re.compile(r"^(bolt|neo4j|ladybug)(\+[a-z]*)?(?!://)[:/]", re.IGNORECASE)


def resolve_store_uri(uri: str | None) -> str:
    return uri or os.environ.get("KGNORM_STORE") or DEFAULT_STORE


def check_store_uri(uri: str | None) -> str:
    """The resolved URI, or a clear error before anything touches the disk: an unknown scheme,
    or a misspelt known one (`bolt//…`, `neo4j:/…`) that would otherwise become a local path."""
    uri = resolve_store_uri(uri)
    if uri.startswith(NEO4J_SCHEMES) or uri.startswith("ladybug://"):
        return uri
    if "://" in uri:
        raise KgnormError(f"unknown store URI scheme in {redact(uri)!r}: use ladybug:///path, a path, "
                          f"or one of {', '.join(NEO4J_SCHEMES)}")
    if _SCHEME_NAMES.match(uri):
        raise KgnormError(f"malformed store URI {redact(uri)!r}: a scheme is followed by '://' "
                          "(bolt://host:7687, ladybug:///path)")
    return uri


def embedded_path(uri: str | None) -> Path | None:
    """The path of an embedded (LadybugDB) store, None for a Neo4j URI."""
    uri = check_store_uri(uri)
    if uri.startswith(NEO4J_SCHEMES):
        return None
    return Path(uri[len("ladybug://"):] if uri.startswith("ladybug://") else uri)


def store_exists(uri: str) -> bool:
    """A Neo4j URI names a server (always there to try); an embedded store is a path."""
    path = embedded_path(uri)
    return path is None or path.exists()


def open_store(uri: str | None = None, read_only: bool = False, create: bool = False,
               lock_timeout: float = 30.0, buffer_pool_mb: int | None = None) -> GraphStore:
    """`ladybug:///path`, a plain path, or a Neo4j URI (bolt://, neo4j://, neo4j+s://).

    Only `create=True` (ingest) makes a new embedded store; readers pass `read_only=True`
    (LadybugDB opened read-only, Neo4j sessions in READ access mode) and share the store.
    `buffer_pool_mb` bounds LadybugDB's page cache (by default most of the RAM, and it grows
    with writes); a Neo4j server manages its own memory."""
    uri = check_store_uri(uri)
    path = embedded_path(uri)
    if path is None:
        from kgnorm.stores.neo4j_store import Neo4jStore
        return Neo4jStore(uri, read_only=read_only)
    from kgnorm.stores.ladybug_store import LadybugStore
    return LadybugStore(path, read_only=read_only, create=create, lock_timeout=lock_timeout,
                        buffer_pool_mb=buffer_pool_mb)


__all__ = ["DocumentRow", "GraphStore", "LinkEdge", "LoadSummary", "MentionRow", "PredictionEdge", "QueryResult",
           "RunRecord", "RunWrite", "check_store_uri", "embedded_path", "open_store", "store_exists", "redact", "resolve_store_uri", "DEFAULT_STORE"]
