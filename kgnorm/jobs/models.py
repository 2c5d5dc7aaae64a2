"""A model directory opened for a job: the method's model behind it (through the registry) and,
for linking, the adapter that ranks concepts with it (kgnorm.linking.linker) -- wrapped by its
cross-encoder when the directory is a reranker (``method: rerank``, naming its linker) or holds one
(a ``reranker`` block: `train biosyn --rerank`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import PartLinker
from kgnorm.linking.linker import ContextLinker, DictionaryLinker


def _reranked(inner: PartLinker, scorer_dir: Path, top_k: int, max_length: int) -> PartLinker:
    from kgnorm.methods.rerank.linker import RerankLinker
    from kgnorm.methods.rerank.model import CrossScorer

    return RerankLinker(inner, CrossScorer.load(scorer_dir, max_length), top_k)


def model_meta(model_dir: str | Path) -> dict[str, Any]:
    """The meta :func:`open_linker` returns, without loading any weights (what a Ray driver needs:
    the text pipeline, the ontology, the method)."""
    from kgnorm.methods.model_dir import read_model_meta

    meta = read_model_meta(model_dir)
    if meta["method"] == "rerank":
        inner_meta = {k: v for k, v in model_meta(meta["linker"]).items() if k != "reranker"}
        return {**inner_meta, **meta}
    return meta


def linker_method(meta: dict[str, Any]) -> str:
    """The method a Run records: what :func:`open_linker`'s linker calls itself."""
    return "rerank" if meta["method"] == "rerank" or meta.get("reranker") else meta["method"]


def open_linker(model_dir: str | Path) -> tuple[PartLinker, dict[str, Any]]:
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import load_encoder

    meta = read_model_meta(model_dir)
    if meta["method"] == "rerank":  # a cross-encoder over the linker its directory names
        inner, inner_meta = open_linker(meta["linker"])
        if "reranker" in inner_meta:  # a directory that holds its own reranker: rerank its linker only
            inner = inner.inner
        return _reranked(inner, Path(model_dir), meta["top_k"], meta.get("max_length", 64)), model_meta(model_dir)
    model = load_encoder(model_dir)
    if meta["method"] == "biocom":
        return ContextLinker(model), meta
    if not hasattr(model, "link"):
        raise KgnormError(f"{model_dir}: a {meta['method']} model has no name index to link with")
    linker: PartLinker = DictionaryLinker(model, meta["method"])
    block = meta.get("reranker")
    if block:
        linker = _reranked(linker, Path(model_dir) / block["path"], block["top_k"], block.get("max_length", 64))
    return linker, meta
