"""Cypher against the store, read-only unless asked: what `kgnorm query` / `kgnorm ontologies`
print and `Workbench.query` / `Workbench.ontologies` return as DataFrames."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import InputError, KgnormError, StoreError
from kgnorm.jobs.store import open_writer
from kgnorm.stores import GraphStore, QueryResult, open_store
from kgnorm.stores.stages import PUBLISHED, STAGING, owner_is_gone
from kgnorm.stores.cypher_files import fill_slots, saved_query, saved_query_names


def run_query(cypher: str, params: dict[str, Any] | None = None, *, write: bool = False,
              store: str | None = None, lock_timeout: float = 30.0) -> QueryResult:
    """One statement with its ``$params`` (and ``{{slot}}`` fills). Without ``write`` the store is
    opened read-only (LadybugDB read-only, Neo4j sessions in READ access mode), so a statement
    that would change it fails and changes nothing."""
    text, bound = fill_slots(cypher, dict(params or {}))
    opened = open_writer(store, lock_timeout=lock_timeout) if write else _reader(store, lock_timeout)
    with opened as st:
        return st.query(text, bound)


def _reader(store: str | None, lock_timeout: float) -> GraphStore:
    """The store read-only, without what a process killed outright left half-written: a staged
    run whose process is gone (its mentions and edges are in the store until a writer rolls it
    back) is rolled back first, as the next writer would, when no other process holds the store
    (found by the crash torture: `kgnorm query` right after a killed `link` saw its half run)."""
    st = open_store(store, read_only=True, lock_timeout=lock_timeout)
    try:
        rows = st.query("MATCH (r:Run) WHERE r.kind = $k OR r.kind = $p RETURN r.metrics_json",
                        {"k": STAGING, "p": PUBLISHED}).rows
    except StoreError:  # a store of an earlier kgnorm, or one an ingest was killed in: nothing staged
        return st
    if not any(owner_is_gone(meta) for (meta,) in rows):
        return st
    st.close()
    try:
        open_writer(store, lock_timeout=0).close()
    except StoreError:  # another process holds it (its writer clears them), or it cannot be written
        pass
    return open_store(store, read_only=True, lock_timeout=lock_timeout)


def ontology_counts(store: str | None = None) -> QueryResult:
    """The ontologies in the store with their concept and edge counts."""
    with open_store(store, read_only=True) as st:
        return st.run_saved("ontology_counts")


def statement(cypher: str | None = None, file: str | Path | None = None, saved: str | None = None) -> str:
    """The statement to run: exactly one of the text, a .cypher file, or a saved query's name."""
    if len([x for x in (cypher, file, saved) if x]) != 1:
        raise KgnormError("give exactly one of CYPHER, --file F or --saved NAME")
    if file:
        try:
            return Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read query file: {exc}", path=file) from None
    return saved_query(saved) if saved else cypher or ""


def saved_queries() -> list[tuple[str, str]]:
    """(name, first line of its comment) of every shipped query (cypher/queries)."""
    return [(name, saved_query(name).splitlines()[0].lstrip("/ ").strip()) for name in saved_query_names()]
