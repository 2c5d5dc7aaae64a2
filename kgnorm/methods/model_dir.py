"""Model directories (docs/architecture.md, "Model directories"): every trained model is a directory with a
``kgnorm-model.json`` naming its ``method``; reading and writing that file is shared by all
methods, so ``link``, ``embed`` and ``hypernyms`` need nothing but the directory.

The name-index linkers (BioSyn, DILBERT, BNE) also share the rest of their directory: the
dictionary in ``names/``, the FAISS index in ``index/`` (:mod:`kgnorm.linking.name_index`), their
blocks of ``kgnorm-model.json`` around the method's own fields, and loading them back with the
checks that they agree -- written once here, so another method writes only its own part."""
from __future__ import annotations

import datetime as _dt
import json
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgnorm.errors import InputError, KgnormError

if TYPE_CHECKING:
    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.linking.name_index import NameIndex

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


def read_dir_json(directory: str | Path, name: str, *, no_dir: str, no_file: str) -> Any:
    """``directory/name`` parsed (a model's meta, a corpus manifest): a missing directory
    (``no_dir``), a missing file (``no_file``) or bad JSON is one line naming it."""
    d = Path(directory)
    path = d / name
    if not d.is_dir():
        raise KgnormError(no_dir)
    if not path.is_file():
        raise KgnormError(no_file)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"unreadable {name} ({e})", path) from None
    except RecursionError:
        raise InputError(f"unreadable {name} (nested too deeply)", path) from None


def read_model_meta(directory: str | Path, method: str | None = None) -> dict[str, Any]:
    """The parsed ``kgnorm-model.json`` of a model directory; with ``method``, refused unless it
    names that method (every loader reads its directory through here)."""
    d = Path(directory)
    path = d / META_FILE
    meta = read_dir_json(d, META_FILE, no_dir=f"model directory {d} does not exist",
                         no_file=f"{d} is not a kgnorm model directory (no {META_FILE}); "
                                 f"train one with `kgnorm train …`")
    if not isinstance(meta, dict) or "method" not in meta:
        raise KgnormError(f"{path}: model meta has no 'method'")
    _check_fields(meta, path)
    if int(meta.get("format_version", 1)) > FORMAT_VERSION:
        raise KgnormError(f"{path}: format_version {meta['format_version']} is newer than "
                          f"this kgnorm understands ({FORMAT_VERSION})")
    if method is not None and meta["method"] != method:
        raise KgnormError(f"{d} holds a {meta['method']!r} model, not a {method} one")
    return meta


def _check_fields(meta: dict[str, Any], path: Path) -> None:
    """The fields every command reads before the weights, of the right type (a hand-edited or
    damaged file is one line, not a traceback deep in a loader)."""
    if not isinstance(meta["method"], str):
        raise InputError(f"'method' is {meta['method']!r}, not a method's name", path)
    version = meta.get("format_version", 1)
    number = isinstance(version, int) and not isinstance(version, bool)
    if not number and not (isinstance(version, str) and version.isascii() and version.isdigit()):
        raise InputError(f"'format_version' is {version!r}, not a whole number", path)
    if not isinstance(meta.get("text_pipeline", {}), dict):
        raise InputError(f"'text_pipeline' is {meta['text_pipeline']!r}, not an object of options", path)


def update_meta(model_dir: str | Path, **extra: Any) -> dict[str, Any]:
    """Merge fields (ontology name/version, root, level …) into an existing description."""
    meta = read_model_meta(model_dir)
    meta.update(extra)
    write_model_meta(model_dir, meta)
    return meta


def check_ontology_version(meta: dict[str, Any], ontology: str, version: str, warn: Any) -> None:
    """A model trained on another version of the ontology still runs, with a warning."""
    trained = meta.get("ontology_version")
    if trained is not None and meta.get("ontology") == ontology and str(trained) != str(version):
        warn(f"warning: model was trained on {ontology} version {trained!r}, the store holds {version!r}")


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
        "index": {"path": "index", "kind": model.index.kind, "storage": model.index.storage,
                  "fp16": model.index.fp16},
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
    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.linking.name_index import NameIndex

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
