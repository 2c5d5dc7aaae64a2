"""Model directories (DESIGN.md section 6).

Every trained model is a directory with a ``kgnorm-model.json`` describing it; the generic
:func:`read_model_meta`/:func:`write_model_meta` are shared by all methods. A BioSyn model::

    kgnorm-model.json     method "biosyn", encoder settings, lambda, hyper-parameters,
                          ontology name + version, metrics, library versions
    encoder/              save_pretrained: config.json, model.safetensors, tokenizer files
    sparse/               sparse.json, vocabulary.json, idf.npy, names.npz
    names/                names.tsv, alt_ids.tsv
    index/                names.faiss, index.json
"""
from __future__ import annotations

import datetime as _dt
import json
import platform
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError

META_FILE = "kgnorm-model.json"
FORMAT_VERSION = 1


def library_versions() -> dict[str, str]:
    """Versions of the libraries a model depends on (recorded in the meta file)."""
    out: dict[str, str] = {"python": platform.python_version()}
    import importlib

    for mod in ("kgnorm", "torch", "transformers", "faiss", "numpy", "scipy", "sklearn",
                "safetensors", "tokenizers"):
        try:
            m = importlib.import_module(mod)
            out[mod] = str(getattr(m, "__version__", "unknown"))
        except Exception:  # noqa: BLE001 - optional libraries
            continue
    return out


def write_model_meta(directory: str | Path, meta: dict[str, Any]) -> Path:
    """Write ``kgnorm-model.json`` atomically; fills ``format_version``, ``created_at`` and
    ``library_versions`` when absent. ``meta`` needs a ``method``."""
    if not meta.get("method"):
        raise KgnormError("model meta needs a 'method'")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    full = {"format_version": FORMAT_VERSION, **meta}
    full.setdefault("created_at", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    full.setdefault("library_versions", library_versions())
    tmp = d / (META_FILE + ".tmp")
    try:
        tmp.write_text(json.dumps(full, indent=2, sort_keys=False, default=_json_default) + "\n",
                       encoding="utf-8")
    except TypeError as e:
        raise KgnormError(f"model meta is not JSON serializable: {e}") from None
    tmp.replace(d / META_FILE)
    return d / META_FILE


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def read_model_meta(directory: str | Path) -> dict[str, Any]:
    """The parsed ``kgnorm-model.json`` of a model directory."""
    d = Path(directory)
    path = d / META_FILE
    if not d.is_dir():
        raise KgnormError(f"model directory {d} does not exist")
    if not path.is_file():
        raise KgnormError(f"{d} is not a kgnorm model directory (no {META_FILE})")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise KgnormError(f"{path}: unreadable model meta ({e})") from None
    if not isinstance(meta, dict) or "method" not in meta:
        raise KgnormError(f"{path}: model meta has no 'method'")
    if int(meta.get("format_version", 1)) > FORMAT_VERSION:
        raise KgnormError(f"{path}: format_version {meta['format_version']} is newer than "
                          f"this kgnorm understands ({FORMAT_VERSION})")
    return meta


# ---------------------------------------------------------------------- BioSyn
def save_biosyn(model, directory: str | Path, ontology: dict | None = None,
                metrics: dict | None = None, hyper_parameters: dict | None = None,
                extra: dict | None = None) -> Path:
    """Write a BioSyn model directory (builds the dense index first if needed)."""
    from kgnorm.methods.biosyn.model import BioSynModel

    if not isinstance(model, BioSynModel):
        raise KgnormError("save_biosyn expects a BioSynModel")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    dictionary = model._need_dictionary()
    if model.index is None:
        model.build_index()
    enc = model.encoder
    enc.save(d / "encoder")
    model.sparse.save(d / "sparse")
    dictionary.save(d / "names")
    model.index.save(d / "index")
    meta: dict[str, Any] = {
        "method": "biosyn",
        "encoder": {"path": "encoder", "base": str(getattr(enc, "base", enc.path)),
                    "dim": enc.dim, **enc.config()},
        "sparse_weight": model.lam,
        "sparse": {"path": "sparse", **model.sparse.config()},
        "names": {"path": "names", "count": len(dictionary),
                  "concepts": dictionary.concept_count,
                  "mention_names": int(sum(dictionary.is_mention))},
        "index": {"path": "index", "kind": model.index.kind, "fp16": model.index.fp16},
        "link": {"k_sparse": model.k_sparse, "k_dense": model.k_dense},
        "hyper_parameters": dict(hyper_parameters or {}),
        "ontology": dict(ontology or {}),
        "metrics": dict(metrics or {}),
    }
    if extra:
        meta.update(extra)
    write_model_meta(d, meta)
    return d


def load_biosyn(directory: str | Path, device: str | None = None,
                use_gpu: bool | str = "auto"):
    """Load a BioSyn model directory written by :func:`save_biosyn`."""
    from kgnorm.methods.biosyn.model import BioSynModel
    from kgnorm.encoders.dense import DenseEncoder
    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.linking.index import NameIndex
    from kgnorm.linking.sparse import SparseScorer

    d = Path(directory)
    meta = read_model_meta(d)
    if meta["method"] != "biosyn":
        raise KgnormError(f"{d} holds a {meta['method']!r} model, not a BioSyn one")
    e = meta.get("encoder", {})
    encoder = DenseEncoder(d / e.get("path", "encoder"), pooling=e.get("pooling", "cls"),
                           max_length=e.get("max_length", 25), device=device,
                           normalize=e.get("normalize", False))
    encoder.base = e.get("base", str(d / "encoder"))
    dictionary = NameDictionary.load(d / meta.get("names", {}).get("path", "names"))
    sparse = SparseScorer.load(d / meta.get("sparse", {}).get("path", "sparse"))
    index = NameIndex.load(d / meta.get("index", {}).get("path", "index"), use_gpu=use_gpu)
    if not (sparse.n_names == len(dictionary) == index.ntotal):
        raise KgnormError(f"{d}: names ({len(dictionary)}), sparse matrix ({sparse.n_names}) "
                          f"and index ({index.ntotal}) disagree")
    if index.dim != encoder.dim:
        raise KgnormError(f"{d}: index dimension {index.dim} != encoder dimension {encoder.dim}")
    link = meta.get("link", {})
    model = BioSynModel(encoder, dictionary, sparse=sparse,
                        sparse_weight=float(meta.get("sparse_weight", 1.0)),
                        index_kind=index.kind, index_fp16=index.fp16,
                        k_sparse=link.get("k_sparse", 20), k_dense=link.get("k_dense", 20))
    model.index = index
    model.meta = meta
    return model
