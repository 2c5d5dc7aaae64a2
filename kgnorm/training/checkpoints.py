"""What every resumable trainer shares: seeding, the full RNG state in a checkpoint, atomic
checkpoint files and content digests for fingerprints (a resumed run must replay the
uninterrupted one, and a checkpoint written for other data must be refused)."""
from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch


class ResumableConfig:
    """Mixin for a trainer's config dataclass: ``_RESUMABLE`` names the fields that may
    change between an interrupted run and its resumption (epochs, budgets, batch sizes of
    inference); every other field goes into the checkpoint's fingerprint."""

    _RESUMABLE: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)

    def fingerprint_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k not in self._RESUMABLE}


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def rng_state() -> dict:
    """Python, numpy, torch (and CUDA) generator states as tensors and plain values, so the
    checkpoint loads with ``weights_only=True``."""
    np_state = np.random.get_state()
    return {"python": random.getstate(), "torch": torch.get_rng_state(),
            "numpy": {"key": np_state[0], "state": torch.from_numpy(np_state[1].astype(np.int64)),
                      "pos": int(np_state[2]), "has_gauss": int(np_state[3]),
                      "cached": float(np_state[4])},
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_rng_state(st: dict) -> None:
    random.setstate(st["python"])
    torch.set_rng_state(st["torch"])
    n = st["numpy"]
    np.random.set_state((n["key"], n["state"].numpy().astype(np.uint32), n["pos"],
                         n["has_gauss"], n["cached"]))
    if st.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])


def atomic_save(obj: dict, path: Path) -> None:
    """torch.save through a temporary file: an interruption never leaves half a checkpoint."""
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def digest(items: Iterable[str]) -> str:
    """sha1 of a list of strings (order and boundaries included)."""
    h = hashlib.sha1()
    for s in items:
        h.update(s.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


# what a trainer leaves in its --out only to resume: `checkpoints/` (every method: the loop's
# `checkpoints/last.pt`), or `checkpoint.pt` of a DAN run before it; the model lives beside them
RESUME_FILES = ("checkpoints", "checkpoint.pt")


def drop_checkpoints(out: Path) -> int:
    """Delete a finished model's resume state (never the model); bytes freed. Why: a trained
    BioSyn directory otherwise carries 259 MB of optimizer state next to a 207 MB model."""
    import shutil

    freed = 0
    for name in RESUME_FILES:
        path = Path(out) / name
        if path.is_dir():
            freed += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            shutil.rmtree(path)
        elif path.is_file():
            freed += path.stat().st_size
            path.unlink()
    return freed
