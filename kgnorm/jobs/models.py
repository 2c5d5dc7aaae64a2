"""A model directory opened for a job: the method's model behind it (through the registry) and,
for linking, the adapter that ranks concepts with it (kgnorm.linking.linker)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import PartLinker
from kgnorm.linking.linker import ContextLinker, DictionaryLinker


def model_meta(model_dir: str | Path) -> dict[str, Any]:
    """What :func:`open_linker` returns as meta, without loading any weights (a Ray driver's
    view: the text pipeline, the ontology, the method)."""
    from kgnorm.methods.model_dir import read_model_meta

    meta = read_model_meta(model_dir)
    if meta["method"] == "rerank":  # a cross-encoder over the linker its directory names
        return {**model_meta(meta["linker"]), **meta}
    return meta


def open_linker(model_dir: str | Path) -> tuple[PartLinker, dict[str, Any]]:
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import load_encoder

    meta = read_model_meta(model_dir)
    if meta["method"] == "rerank":  # a cross-encoder over the linker its directory names
        from kgnorm.methods.rerank.linker import RerankLinker
        from kgnorm.methods.rerank.model import CrossScorer

        inner = open_linker(meta["linker"])[0]
        scorer = CrossScorer.load(model_dir, meta.get("max_length", 64))
        return RerankLinker(inner, scorer, meta["top_k"]), model_meta(model_dir)
    model = load_encoder(model_dir)
    if meta["method"] == "biocom":
        return ContextLinker(model), meta
    if not hasattr(model, "link"):
        raise KgnormError(f"{model_dir}: a {meta['method']} model has no name index to link with")
    return DictionaryLinker(model, meta["method"]), meta
