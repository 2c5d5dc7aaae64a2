"""Ingest as a library: loader → OntologyGraph → store.load_ontology (an atomic replace of an
ontology of the same name). `kgnorm ingest FORMAT` and `Workbench.ingest` call `ingest`."""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError, KgnormError
from kgnorm.progress import note
from kgnorm.jobs.store import open_writer
from kgnorm.stores import LoadSummary, check_store_uri, open_store, store_exists

FORMATS = ("obo", "mesh", "medic", "snomed", "meddra", "umls")


def ingest(fmt: str, path: str | Path, name: str | None = None, allow_dangling: bool = False,
           store: str | None = None, lock_timeout: float = 30.0, quiet: bool = False,
           **options: Any) -> LoadSummary:
    """Load the ontology at ``path`` (a ``fmt`` file or directory) into the store, replacing one of
    the same name; a file that does not parse, or holds no concept, leaves the store as it was."""
    if fmt not in FORMATS:
        raise KgnormError(f"unknown ontology format {fmt!r} (known: {', '.join(FORMATS)})")
    path = Path(path)
    uri = check_store_uri(store)  # a malformed store URI fails before the parse, not after it
    if not path.exists():
        raise InputError("no such file or directory", path=path)
    # An existing store is locked before the parse, so a second writer waits (or fails) before
    # it parses; readers are not blocked. A new store is made only once the file has parsed.
    st = open_writer(uri, lock_timeout=lock_timeout) if store_exists(uri) else None
    try:
        loader = importlib.import_module(f"kgnorm.ontologies.{fmt}")
        graph = loader.load(path, name, allow_dangling=allow_dangling, **options)
        for warning in graph.warnings:
            note(f"warning: {warning}", quiet)
        if not graph.concepts:
            raise InputError(f"no concepts found; is this a {fmt} file?", path=path)
        if st is None:
            st = open_store(uri, create=True, lock_timeout=lock_timeout)
        if getattr(st, "created", False):  # said even when quiet: a typo'd store path makes a new store
            note(f"kgnorm: creating a new store at {st.uri}")
        summary = st.load_ontology(graph)
    finally:
        if st is not None:
            st.close()
    verb = "replaced" if summary.replaced else "loaded"
    note(f"{verb} {graph.name} {graph.version}".rstrip() +
         f": {summary.concepts:,} concepts, {summary.is_a:,} IS_A, {summary.xrefs:,} XREF "
         f"({graph.report.cycle_edges_removed} cycle edge(s) broken, {graph.report.roots} root(s)) "
         f"into {st.uri} in {summary.seconds:.1f}s", quiet)
    if summary.replaced:
        note(f"kgnorm: {graph.name}: {summary.reingest_note()}")
    return summary
