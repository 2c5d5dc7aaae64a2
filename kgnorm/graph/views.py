"""Read what trainers and linkers need out of a graph store, once, with the saved queries.

This is the only bridge from the store to the in-memory world of dictionaries and
hierarchy views (docs/architecture.md, "Data flow"): everything downstream works on plain Python data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kgnorm.errors import KgnormError

if TYPE_CHECKING:  # the store is only read through its methods: graph sits below stores
    from kgnorm.stores import GraphStore


@dataclass
class ConceptNames:
    uid: str
    name: str
    synonyms: list[str]
    alt_ids: list[str]

    def all_names(self) -> list[str]:
        return [n for n in [self.name, *self.synonyms] if n]


@dataclass
class OntologySnapshot:
    """An ontology's names (and optionally IS_A edges) as read from the store."""

    name: str
    version: str
    concepts: list[ConceptNames]
    is_a: list[tuple[str, str]]

    def names_by_uid(self) -> dict[str, list[str]]:
        return {c.uid: c.all_names() for c in self.concepts}

    def alt_ids(self) -> dict[str, list[str]]:
        return {c.uid: list(c.alt_ids) for c in self.concepts if c.alt_ids}


def read_ontology(store: GraphStore, ontology: str, with_edges: bool = True) -> OntologySnapshot:
    info = store.ontology_info(ontology)
    if info is None:
        known = ", ".join(o["ontology"] for o in store.ontologies()) or "none"
        raise KgnormError(f"unknown ontology {ontology!r} in {store.uri} (loaded: {known}); "
                          f"run `kgnorm ingest` first")
    concepts = [ConceptNames(r["uid"], r["name"] or "", list(r["synonyms"] or []), list(r["alt_ids"] or []))
                for r in store.run_saved("ontology_names", {"ontology": ontology}).records()]
    if not any(c.all_names() for c in concepts):
        raise KgnormError(f"ontology {ontology!r} has no concept names: the dictionary would be empty")
    edges = [(c, p) for c, p in store.run_saved("ontology_is_a", {"ontology": ontology}).rows] if with_edges else []
    return OntologySnapshot(ontology, info.get("version") or "", concepts, edges)


def read_definitions(store: GraphStore, ontology: str) -> list[str]:
    """Definitions of the ontology's concepts, in uid order (the snapshot carries names only)."""
    return [r[0] for r in store.run_saved("ontology_definitions", {"ontology": ontology}).rows if r[0]]


def hierarchy_from_store(store: GraphStore, ontology: str):  # -> Hierarchy
    from kgnorm.graph.hierarchy import Hierarchy

    snap = read_ontology(store, ontology)
    return Hierarchy.from_edges(snap.names_by_uid(), snap.is_a), snap
