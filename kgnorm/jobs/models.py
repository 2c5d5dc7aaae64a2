"""A model directory opened for a job: :func:`open_linker` and :func:`model_meta`
(kgnorm.methods.registry: the method's model behind its linking adapter, a reranker's cross-encoder
over its linker, an ensemble's fused members), and the method a Run records."""
from __future__ import annotations

from typing import Any

from kgnorm.methods.registry import model_meta, open_linker, run_method

__all__ = ["open_linker", "model_meta", "linker_method"]


def linker_method(meta: dict[str, Any]) -> str:
    """The method a Run records: what :func:`open_linker`'s linker calls itself (the registry decides
    by the method's kind, kgnorm.methods.registry.run_method)."""
    return run_method(meta)
