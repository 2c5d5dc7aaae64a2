"""The registry's opener for a reranker directory (``method: rerank``, a ``wrapper`` kind in
kgnorm.methods.registry): the cross-encoder in the directory over the linker its metadata names,
and the meta a job needs without loading any weights. Imports nothing heavy: a Ray driver reads
:func:`rerank_meta` and loads no model."""
from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["open_rerank", "rerank_meta", "reranked", "load_rerank"]


def reranked(inner: Any, scorer_dir: Path, top_k: int, max_length: int) -> Any:
    """``inner`` (a PartLinker) reordered by the cross-encoder saved in ``scorer_dir``."""
    from kgnorm.methods.rerank.linker import RerankLinker
    from kgnorm.methods.rerank.model import CrossScorer

    return RerankLinker(inner, CrossScorer.load(scorer_dir, max_length), top_k)


def rerank_meta(model_dir: str | Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The linker's meta (less its own ``reranker`` block) under the reranker's."""
    from kgnorm.methods.registry import model_meta

    inner_meta = {k: v for k, v in model_meta(meta["linker"]).items() if k != "reranker"}
    return {**inner_meta, **meta}


def open_rerank(model_dir: str | Path, meta: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A cross-encoder over the linker its directory names; a linker directory that holds its own
    reranker (`train biosyn --rerank`) is reranked by this one only."""
    from kgnorm.methods.registry import open_linker

    inner, inner_meta = open_linker(meta["linker"])
    if "reranker" in inner_meta:
        inner = inner.inner
    return (reranked(inner, Path(model_dir), meta["top_k"], meta.get("max_length", 64)),
            rerank_meta(model_dir, meta))


def load_rerank(model_dir: str | Path) -> Any:
    """The registry's loader: a reranker has no encoder of its own."""
    from kgnorm.errors import KgnormError

    raise KgnormError(f"{model_dir} is a reranker over another linker: it links (`link`, `annotate`, `eval link`) "
                      "but has no encoder of its own; use its linker's directory here")
