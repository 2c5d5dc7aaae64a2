"""Model directories: read `kgnorm-model.json` and load any trained encoder by its method.

Every trainer writes `kgnorm-model.json` with at least `method`; `link`, `embed` and
`hypernyms` only need the directory (DESIGN §6), so they go through `load_encoder`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kgnorm.errors import KgnormError

if TYPE_CHECKING:  # numpy only names a type here; importing it is left to the encoders
    import numpy as np

MODEL_JSON = "kgnorm-model.json"


class NameEncoder(Protocol):
    def encode(self, names: list[str]) -> np.ndarray: ...


def read_meta(model_dir: str | Path) -> dict[str, Any]:
    path = Path(model_dir) / MODEL_JSON
    if not path.is_file():
        raise KgnormError(f"{model_dir} is not a kgnorm model directory (no {MODEL_JSON}); "
                          f"train one with `kgnorm train …`")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise KgnormError(f"{path}: corrupt model description: {exc}") from None
    if "method" not in meta:
        raise KgnormError(f"{path}: no 'method' field")
    return meta


def update_meta(model_dir: str | Path, **extra: Any) -> dict[str, Any]:
    """Merge fields (ontology name/version, root, level …) into an existing description."""
    meta = read_meta(model_dir)
    meta.update(extra)
    path = Path(model_dir) / MODEL_JSON
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str), encoding="utf-8")
    tmp.replace(path)
    return meta


def load_encoder(model_dir: str | Path) -> Any:
    """The trained model behind `model_dir`; every one has `.encode(names) -> np.ndarray`."""
    method = read_meta(model_dir)["method"]
    if method == "dan":
        from kgnorm.methods.dan.model import load_dan
        return load_dan(model_dir)
    if method == "biosyn":
        from kgnorm.methods.biosyn.model_dir import load_biosyn
        return load_biosyn(model_dir)
    if method == "bne":
        from kgnorm.methods.bne.model import load_bne
        return load_bne(model_dir)
    if method == "dilbert":
        from kgnorm.methods.dilbert.model import load_dilbert
        return load_dilbert(model_dir)
    if method == "biocom":
        from kgnorm.methods.biocom.linker import load_biocom
        return load_biocom(model_dir)
    raise KgnormError(f"{model_dir}: unknown model method {method!r}")


def check_ontology_version(meta: dict[str, Any], ontology: str, version: str, warn: Any) -> None:
    """A model trained on another version of the ontology still runs, with a warning."""
    trained = meta.get("ontology_version")
    if trained is not None and meta.get("ontology") == ontology and str(trained) != str(version):
        warn(f"warning: model was trained on {ontology} version {trained!r}, the store holds {version!r}")
