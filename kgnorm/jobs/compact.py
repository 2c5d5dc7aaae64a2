"""`kgnorm compact` as a library call: reclaim the space an embedded store keeps after ontologies
were replaced (LadybugDB has no vacuum) by copying it into a fresh file that takes its place."""
from __future__ import annotations

from kgnorm.errors import KgnormError
from kgnorm.stores import NEO4J_SCHEMES, check_store_uri, store_exists
from kgnorm.stores.ladybug_compact import CompactSummary, compact


def compact_store(store: str | None = None, lock_timeout: float = 30.0) -> tuple[str, CompactSummary]:
    """(the store's URI, what compacting it did); a Neo4j URI or a missing store is one clear error."""
    uri = check_store_uri(store)
    if uri.startswith(NEO4J_SCHEMES):
        raise KgnormError("compact is for the embedded store; a Neo4j server manages its own space")
    if not store_exists(uri):
        raise KgnormError(f"no store at {uri}")
    return uri, compact(uri[len("ladybug://"):] if uri.startswith("ladybug://") else uri, lock_timeout=lock_timeout)
