"""BioCoM: biomedical entity linking with contrastive context matching (Ujiie et al. 2021).

Its batches (16 concepts x 2 sentences, :class:`kgnorm.samplers.concept_batch.ConceptBatchSampler`)
and loss (Multi-Similarity, :mod:`kgnorm.losses.multi_similarity`) are shared with pretraining.
Pieces, in the order data flows through them:

* :mod:`.corpus`  -- dictionary matching over raw text -> entity-linked sentence corpus
  (``build_corpus``, ``check_corpus``, ``load_corpus``)
* :mod:`.model`   -- transformer encoder with ``[ENT]``/``[/ENT]`` markers (``BiocomEncoder``)
* :mod:`.data`    -- training rows, index rows and dev mentions from a corpus
* :mod:`.train`   -- ``train_biocom`` -> model directory
* :mod:`.linker`  -- kNN vote over the corpus index (``load_biocom`` -> ``BiocomLinker``)

Submodules import torch/transformers lazily from here, so ``import kgnorm.methods.biocom`` is cheap.
"""
from __future__ import annotations

from typing import Any

__all__ = [
    "build_corpus", "check_corpus", "load_corpus", "NameMatcher", "CorpusSummary",
    "BiocomEncoder",
    "BiocomConfig", "train_biocom", "BiocomLinker", "load_biocom",
    "knn_vote",
]

_WHERE = {
    "build_corpus": "corpus", "check_corpus": "corpus", "load_corpus": "corpus",
    "NameMatcher": "corpus", "CorpusSummary": "corpus",
    "BiocomEncoder": "model",
    "BiocomConfig": "train", "train_biocom": "train",
    "BiocomLinker": "linker", "load_biocom": "linker", "knn_vote": "linker",
}


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'kgnorm.methods.biocom' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{mod}"), name)
