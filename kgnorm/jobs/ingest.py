"""Ingest as a library: loader → OntologyGraph → store.load_ontology (an atomic replace of an
ontology of the same name). `kgnorm ingest FORMAT` and `Workbench.ingest` call `ingest`; the
formats are the loaders of kgnorm.ontologies.registry (LOADERS)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import OntologyGraph
from kgnorm.progress import note
from kgnorm.jobs.store import open_writer
from kgnorm.ontologies.registry import LOADERS, loader
from kgnorm.stores import LoadSummary, check_store_uri, open_store, store_exists

__all__ = ["ingest", "dry_run_lines", "LOADERS"]


def ingest(fmt: str, path: str | Path, name: str | None = None, allow_dangling: bool = False,
           store: str | None = None, lock_timeout: float = 30.0, quiet: bool = False,
           dry_run: bool = False, **options: Any) -> LoadSummary:
    """Load the ontology at ``path`` (a ``fmt`` file or directory) into the store, replacing one of
    the same name; a file that does not parse, or holds no concept, leaves the store as it was.
    `dry_run`: parse, then say what the replace would do (a read-only look at the store)."""
    loader(fmt)  # an unknown format fails first, naming the registered ones
    path = Path(path)
    uri = check_store_uri(store)  # a malformed store URI fails before the parse, not after it
    if not path.exists():
        raise InputError("no such file or directory", path=path)
    if dry_run:
        return _dry_run(fmt, path, name, allow_dangling, uri, quiet, **options)
    # An existing store is locked before the parse, so a second writer waits (or fails) before
    # it parses; readers are not blocked. A new store is made only once the file has parsed.
    st = open_writer(uri, lock_timeout=lock_timeout) if store_exists(uri) else None
    try:
        graph = _parse(fmt, path, name, allow_dangling, quiet, **options)
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


def _parse(fmt: str, path: Path, name: str | None, allow_dangling: bool, quiet: bool, **options: Any) -> OntologyGraph:
    graph = loader(fmt)(path, name, allow_dangling=allow_dangling, **options)
    for warning in graph.warnings:
        note(f"warning: {warning}", quiet)
    if not graph.concepts:
        raise InputError(f"no concepts found; is this a {fmt} file?", path=path)
    return graph


def _dry_run(fmt: str, path: Path, name: str | None, allow_dangling: bool, uri: str, quiet: bool,
             **options: Any) -> LoadSummary:
    """`ingest --dry-run`: the report of a replace, printed even when quiet; nothing written,
    the store opened read-only only for the reads the plan needs (and not made when missing)."""
    graph = _parse(fmt, path, name, allow_dangling, quiet, **options)
    if store_exists(uri):
        with open_store(uri, read_only=True) as st:
            summary = st.plan_load(graph)
    else:
        summary = LoadSummary(graph.name, len(graph.concepts), len(graph.is_a), 0, False, dry_run=True,
                              added_concepts=sorted(graph.concepts))
    for line in dry_run_lines(graph, summary):
        note(line)
    return summary


def dry_run_lines(graph: OntologyGraph, summary: LoadSummary, show: int = 10) -> list[str]:
    """The lines `ingest --dry-run` prints: links kept/moved/orphaned, concepts added/removed/merged."""
    head = (f"dry run: {'replacing' if summary.replaced else 'loading'} {graph.name} {graph.version}".rstrip()
            + f" ({len(graph.concepts):,} concepts, {len(graph.is_a):,} IS_A); nothing written")
    if not summary.replaced:
        return [head, f"  new ontology: {len(summary.added_concepts):,} concept(s) added"]
    gone = [u for u in summary.removed_concepts if u not in summary.merged]

    def some(uids: list[str]) -> str:
        return (": " + ", ".join(uids[:show]) + (f" (and {len(uids) - show:,} more)" if len(uids) > show else "")
                if uids else "")

    merged = [f"{u} -> {n}" for u, n in sorted(summary.merged.items())]
    return [head,
            f"  links: {summary.links_kept:,} kept, {summary.links_moved:,} moved, {summary.links_orphaned:,} "
            f"orphaned ({summary.orphan_mentions:,} mention(s)), {summary.predictions_removed:,} PREDICTED_IS_A "
            "removed",
            f"  concepts: {len(summary.added_concepts):,} added{some(summary.added_concepts)}",
            f"  concepts: {len(gone):,} removed{some(gone)}",
            f"  concepts: {len(merged):,} merged into a successor{some(merged)}",
            f"  retired ids kept resolvable: {len(summary.retired):,}"]
