"""`kgnorm corpus build` as a library call: the entity-linked sentences `train biocom` learns from
(Ujiie et al.), matched against the names of an ontology in the store."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # BioCoM (torch) loads on use
    from kgnorm.methods.biocom.corpus import CorpusSummary


def build_corpus(ontology: str, texts: Sequence[str | Path], out: str | Path, *, cap: int = 20, seed: int = 0,
                 abbreviations: bool = True, store: str | None = None) -> CorpusSummary:
    """Longest dictionary match over token boundaries in ``texts`` (PubTator or plain text);
    the store is read once and let go of."""
    from kgnorm.graph.views import read_ontology
    from kgnorm.methods.biocom.corpus import build_corpus as build
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        snap = read_ontology(st, ontology, with_edges=False)
    records = [{"uid": c.uid, "name": c.name, "synonyms": c.synonyms} for c in snap.concepts]
    return build(records, [Path(t) for t in texts], Path(out), ontology=ontology, version=snap.version, cap=cap,
                 seed=seed, abbreviations=abbreviations)
