"""What the model directories of the name-index linkers (BioSyn, DILBERT, BNE) share: the
dictionary in ``names/``, the FAISS index in ``index/``, their blocks of
``kgnorm-model.json`` around the method's own fields, and loading them back with the
checks that they agree -- written once here, so a sixth method writes only its own part."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.index import NameIndex
from kgnorm.methods.model_dir import META_FILE, write_model_meta

__all__ = ["save_names_and_index", "load_dense_encoder", "load_names_and_index",
           "selected_model"]


def save_names_and_index(model, directory: str | Path, own: dict[str, Any],
                         hyper_parameters: dict | None = None, ontology: dict | None = None,
                         metrics: dict | None = None, extra: dict | None = None) -> dict[str, Any]:
    """Write ``model``'s names and index (built first if needed) and ``kgnorm-model.json``
    (``own``: the method's fields, ``method`` first); the meta written."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    dictionary = model._need_dictionary()
    if model.index is None:
        model.build_index()
    dictionary.save(d / "names")
    model.index.save(d / "index")
    meta: dict[str, Any] = {
        **own,
        "names": {"path": "names", "count": len(dictionary), "concepts": dictionary.concept_count,
                  "mention_names": int(sum(dictionary.is_mention))},
        "index": {"path": "index", "kind": model.index.kind, "fp16": model.index.fp16},
        "hyper_parameters": dict(hyper_parameters or {}),
        "ontology": dict(ontology or {}),
        "metrics": dict(metrics or {}),
        **(extra or {}),
    }
    write_model_meta(d, meta)
    return meta


def load_dense_encoder(directory: str | Path, meta: dict[str, Any], device: str | None,
                       pooling: str):
    """The transformer encoder saved in the directory (``pooling``: the method's default)."""
    from kgnorm.encoders.dense import DenseEncoder

    d, e = Path(directory), meta.get("encoder", {})
    encoder = DenseEncoder(d / e.get("path", "encoder"), pooling=e.get("pooling", pooling),
                           max_length=e.get("max_length", 25), device=device,
                           normalize=e.get("normalize", False))
    encoder.base = e.get("base", str(d / "encoder"))
    return encoder


def load_names_and_index(directory: str | Path, meta: dict[str, Any],
                         use_gpu: bool | str = "auto") -> tuple[NameDictionary, NameIndex]:
    """The saved dictionary and index, refused when their sizes disagree."""
    d = Path(directory)
    dictionary = NameDictionary.load(d / meta.get("names", {}).get("path", "names"))
    index = NameIndex.load(d / meta.get("index", {}).get("path", "index"), use_gpu=use_gpu)
    if index.ntotal != len(dictionary):
        raise KgnormError(f"{d}: names ({len(dictionary)}) and index ({index.ntotal}) disagree")
    return dictionary, index


def selected_model(out: str | Path, load, trained, device: str):
    """What a trainer returns: the model directory it selected, loaded with ``load``, or the
    ``trained`` model itself when no epoch ran (nothing was written)."""
    return load(out, device=device) if (Path(out) / META_FILE).is_file() else trained
