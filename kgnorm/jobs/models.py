"""A model directory opened for a job: :func:`open_linker` and :func:`model_meta`
(kgnorm.methods.registry: the method's model behind its linking adapter, a reranker's cross-encoder
over its linker, an ensemble's fused members), the method a Run records, and the level split of a
hierarchy model (`hypernyms`, `eval hierarchy`)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgnorm.errors import KgnormError
from kgnorm.methods.registry import model_meta, open_linker, run_method

if TYPE_CHECKING:  # the split needs networkx (0.15 s, 6 MB), which `link` does not
    from kgnorm.graph.levels import LevelSplit

__all__ = ["open_linker", "model_meta", "linker_method", "model_split"]


def linker_method(meta: dict[str, Any]) -> str:
    """The method a Run records: what :func:`open_linker`'s linker calls itself (the registry decides
    by the method's kind, kgnorm.methods.registry.run_method)."""
    return run_method(meta)


def model_split(model: str | Path, root: str, ontology: str | None, seed: int | None,
                store: str | None) -> tuple[dict[str, Any], str, LevelSplit, Any]:
    """(the model's meta, the ontology, the level split under ``root``, the ontology's snapshot):
    the ontology and split seed default to the model's; the store is read and let go of."""
    from kgnorm.graph.levels import split_under
    from kgnorm.graph.views import hierarchy_from_store
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.stores import open_store

    meta = read_model_meta(model)
    onto = ontology or meta.get("ontology")
    if not onto:
        raise KgnormError("the model names no ontology: pass --ontology")
    with open_store(store, read_only=True) as st:
        hierarchy, snap = hierarchy_from_store(st, onto)
    split = split_under(hierarchy, onto, root, meta.get("split_seed", 0) if seed is None else seed)
    return meta, onto, split, snap
