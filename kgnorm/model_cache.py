"""Files derived from a model directory once and cached per model content (an ONNX export of the
detector or of a query encoder): keyed by a digest of the directory's files, written atomically,
never into the model directory itself (it may be read-only, or shared by several users)."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from kgnorm.digests import update_with_file

__all__ = ["CACHE_ENV", "cache_dir", "model_digest", "cached_export", "cached_vectors"]

CACHE_ENV = "KGNORM_CACHE_DIR"


def cache_dir() -> Path:
    """``$KGNORM_CACHE_DIR``, else ``$XDG_CACHE_HOME/kgnorm``, else ``~/.cache/kgnorm``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kgnorm"


def model_digest(model_dir: str | Path) -> str:
    """sha1 of every file of the model directory (names and bytes): a retrained or edited model
    gets a new export, an unchanged one finds its cached export."""
    d = Path(model_dir)
    h = hashlib.sha1()
    for f in sorted(p for p in d.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(d)).encode("utf-8") + b"\0")
        update_with_file(h, f)
    return h.hexdigest()[:20]


def cached_export(kind: str, key: str, files: tuple[str, ...],
                  make: Callable[[Path], None]) -> Path:
    """The folder ``<cache>/<kind>/<key>/`` holding `files`; when one is missing, `make(tmp)`
    writes all of them into a fresh temporary folder beside it and each is renamed into place
    (atomic: a concurrent run sees a whole file or none; the last file named is renamed last, so
    its presence says the export is complete)."""
    target = cache_dir() / kind / key
    if all((target / f).exists() for f in files):
        return target
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target) as tmp:
        make(Path(tmp))
        for f in files:
            os.replace(Path(tmp) / f, target / f)
    return target


def cached_vectors(kind: str, key: str, texts: Sequence[str],
                   encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """``encode(texts)``, kept in ``<cache>/<kind>/<digest>.npy`` under `key` (what decides the vectors:
    a model's content, its pooling ...) and the set of texts: the same key and texts in any order find
    their vectors again, anything else encodes afresh. Written atomically; a broken or read-only cache
    only costs the encoding."""
    texts = list(texts)
    keys = sorted(set(texts))       # kept in sorted order: the same texts in another order hit
    row = {t: i for i, t in enumerate(keys)}
    order = np.fromiter((row[t] for t in texts), dtype=np.int64, count=len(texts))
    h = hashlib.sha1(key.encode("utf-8"))
    for t in keys:
        h.update(t.encode("utf-8") + b"\0")
    path = cache_dir() / kind / f"{h.hexdigest()[:24]}.npy"
    if path.is_file():
        try:
            vecs = np.load(path, mmap_mode="r")
            if vecs.shape[0] == len(keys):
                return np.asarray(vecs[order])
        except (OSError, ValueError):
            pass  # a broken cache file: encode again and replace it
    vecs = np.asarray(encode(keys), dtype=np.float32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, vecs)
        os.replace(tmp, path)
    except OSError:
        pass
    return vecs[order]
