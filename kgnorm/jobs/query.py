"""Cypher against the store, read-only unless asked: what `kgnorm query` / `kgnorm ontologies`
print and `Workbench.query` / `Workbench.ontologies` return as DataFrames."""
from __future__ import annotations

from typing import Any

from kgnorm.stores import QueryResult, open_store
from kgnorm.stores.cypher_files import fill_slots


def run_query(cypher: str, params: dict[str, Any] | None = None, *, write: bool = False,
              store: str | None = None, lock_timeout: float = 30.0) -> QueryResult:
    """One statement with its ``$params`` (and ``{{slot}}`` fills). Without ``write`` the store is
    opened read-only (LadybugDB read-only, Neo4j sessions in READ access mode), so a statement
    that would change it fails and changes nothing."""
    text, bound = fill_slots(cypher, dict(params or {}))
    with open_store(store, read_only=not write, lock_timeout=lock_timeout) as st:
        return st.query(text, bound)


def ontology_counts(store: str | None = None) -> QueryResult:
    """The ontologies in the store with their concept and edge counts."""
    with open_store(store, read_only=True) as st:
        return st.run_saved("ontology_counts")
