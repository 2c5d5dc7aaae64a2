"""An encoder pretrained on the graph itself: contrastive self-alignment on the ontologies'
synonym sets (and optionally their hierarchy), written as a plain Hugging Face encoder
directory that every ``--encoder`` option takes.

:func:`pretrain` is what ``kgnorm pretrain`` runs: it reads the ontologies' names from the
store (never evaluation mentions), groups them by concept and trains (:mod:`.train`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["pretrain", "read_pretrain_data", "build_pretrain_data", "pretrain_encoder", "PretrainConfig",
           "PretrainData", "META_FILE"]

# imported on use, so that `kgnorm pretrain --help` (built from recipe.Options) does not load torch
_WHERE = {"build_pretrain_data": "data", "PretrainData": "data", "pretrain_encoder": "train",
          "PretrainConfig": "train", "META_FILE": "train"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


def read_pretrain_data(store, ontologies: Sequence[str], hierarchy: bool = False,
                       min_concepts: int = 2) -> Any:
    """The named ontologies' names (normalized like linking's dictionary) out of an open store."""
    from kgnorm.graph.views import read_ontology
    from kgnorm.text.pipeline import TextPipeline

    from .data import build_pretrain_data

    snapshots = [read_ontology(store, o, with_edges=hierarchy) for o in ontologies]
    return build_pretrain_data(snapshots, TextPipeline().normalize_name, min_concepts=min_concepts,
                               with_hierarchy=hierarchy)


def pretrain(store, ontologies: Sequence[str], out_dir: str | Path, encoder: str | Path | None = None,
             config: Any = None, resume: bool = True, progress: bool = False,
             on_log: Callable[[dict], None] | None = None) -> Any:
    """Pretrain an encoder on ontologies of an open graph store (``kgnorm.stores.open_store``);
    ``config``: a :class:`PretrainConfig`; the loop's ``TrainResult``."""
    from .train import PretrainConfig, pretrain_encoder

    cfg = config or PretrainConfig()
    cfg.check()
    data = read_pretrain_data(store, ontologies, hierarchy=cfg.hierarchy, min_concepts=cfg.concepts_per_batch)
    return pretrain_encoder(data, out_dir, encoder, cfg, resume=resume, progress=progress, on_log=on_log)
