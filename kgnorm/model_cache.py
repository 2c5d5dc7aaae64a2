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
    """``encode(texts)``, kept in ``<cache>/<kind>/<key digest>-<texts digest>.npy`` (with the texts
    beside it) under `key` (what decides the vectors: a model's content, its pooling ...) and the set
    of texts: the same key and texts in any order find their vectors again. Other texts under the same
    key reuse the rows of the cached set that shares most of them and encode only the rest (a
    dictionary with a corpus's mentions added, then its dev mentions: 565k names encode once, not
    three times). Written atomically; a broken or read-only cache only costs the encoding."""
    texts = list(texts)
    keys = sorted(set(texts))       # kept in sorted order: the same texts in another order hit
    row = {t: i for i, t in enumerate(keys)}
    order = np.fromiter((row[t] for t in texts), dtype=np.int64, count=len(texts))
    key_digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]
    h = hashlib.sha1(key.encode("utf-8"))
    for t in keys:
        h.update(t.encode("utf-8") + b"\0")
    folder = cache_dir() / kind
    path = folder / f"{key_digest}-{h.hexdigest()[:24]}.npy"
    vecs = _load_vectors(path, len(keys))
    if vecs is not None:
        return np.asarray(vecs[order])
    vecs = _reuse_and_encode(folder, key_digest, keys, encode)
    _save_vectors(path, keys, vecs)
    return vecs[order]


def _load_vectors(path: Path, rows: int) -> np.ndarray | None:
    try:
        vecs = np.load(path, mmap_mode="r")
        return vecs if vecs.shape[0] == rows else None
    except (OSError, ValueError):
        return None  # absent or broken: encode again and replace it


def _reuse_and_encode(folder: Path, key_digest: str, keys: list[str],
                      encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """The vectors of `keys`: rows of the cached set (same key) sharing most of them, the rest encoded."""
    best: tuple[int, Path, list[str]] | None = None
    wanted = set(keys)
    for tp in folder.glob(f"{key_digest}-*.texts") if folder.is_dir() else ():
        try:
            cached = tp.read_text(encoding="utf-8").split("\0")
        except (OSError, UnicodeDecodeError):
            continue
        shared = len(wanted.intersection(cached))
        if shared and (best is None or shared > best[0]):
            best = (shared, tp.with_suffix(".npy"), cached)
    old = _load_vectors(best[1], len(best[2])) if best is not None else None
    if old is None:
        return np.asarray(encode(keys), dtype=np.float32)
    at = {t: i for i, t in enumerate(best[2])}
    have = [i for i, t in enumerate(keys) if t in at]
    missing = [i for i, t in enumerate(keys) if t not in at]
    out = np.empty((len(keys), old.shape[1]), dtype=np.float32)
    out[have] = old[[at[keys[i]] for i in have]]
    if missing:
        out[missing] = np.asarray(encode([keys[i] for i in missing]), dtype=np.float32)
    return out


def _save_vectors(path: Path, keys: list[str], vecs: np.ndarray) -> None:
    """The vectors, then their texts (a set is found by its texts file: written last, both atomically)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, vecs)
        os.replace(tmp, path)
        tmp.write_text("\0".join(keys), encoding="utf-8")
        os.replace(tmp, path.with_suffix(".texts"))
    except OSError:
        pass
