"""Name inputs from a frozen Hugging Face encoder, for the DAN in place of averaged word vectors.

Why: the DAN paper feeds averaged fastText vectors; on HPO those start far below an
off-the-shelf sentence encoder (MiniLM), and the DAN trained on top of them could not beat
MiniLM at the deeper levels. The same DAN network and losses trained on MiniLM's pooled name
vectors do (``kgnorm train dan --input encoder``; figures in benchmarks/LOG.md).

The encoder stays frozen, so the vectors of the names seen at training time (the whole level
split, test names included: they are features, not labels) are computed once and kept with
the model; other names are encoded on demand and not kept. Directory layout::

    <dir>/meta.json      {"format": "kgnorm-encoder-inputs", "pooling": ..., "max_length": ...}
    <dir>/encoder/       the Hugging Face model and tokenizer (save_pretrained)
    <dir>/names.txt      one name per line, row order of vectors.npy
    <dir>/vectors.npy    (names, dim) float32 pooled vectors (not normalised)
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.encoders.dense import DenseEncoder

__all__ = ["EncoderInputs", "load_name_inputs", "FORMAT"]

FORMAT = "kgnorm-encoder-inputs"


class EncoderInputs:
    """``inputs(names) -> (n, dim) float32``: the frozen encoder's pooled vector per name."""

    kind = "encoder"

    def __init__(self, dense: DenseEncoder, names: Sequence[str] = (),
                 vectors: np.ndarray | None = None, batch_size: int = 256) -> None:
        self.dense = dense
        self.batch_size = int(batch_size)
        self._rows: dict[str, int] = {}
        self._vectors = np.zeros((0, dense.dim), dtype=np.float32)
        if vectors is not None:
            if len(names) != len(vectors) or vectors.shape[1] != dense.dim:
                raise KgnormError(f"{len(names)} cached names but vectors of shape {vectors.shape} "
                                  f"(encoder dimension {dense.dim})")
            self._rows = {n: i for i, n in enumerate(names)}
            self._vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    @property
    def dim(self) -> int:
        return self.dense.dim

    @property
    def source(self) -> str:
        return str(self.dense.base)

    @property
    def info(self) -> dict:
        return {**self.dense.config(), "cached_names": len(self._rows)}

    def precompute(self, names: Iterable[str], progress: bool = False) -> int:
        """Encode and keep every name not kept yet; returns how many were encoded."""
        missing = [n for n in dict.fromkeys(names) if n not in self._rows]
        if missing:
            vecs = self.dense.encode(missing, batch_size=self.batch_size, normalize=False,
                                     progress=progress, desc="encode names (DAN input)")
            base = len(self._vectors)
            self._vectors = np.concatenate([self._vectors, vecs])
            self._rows.update((n, base + i) for i, n in enumerate(missing))
        return len(missing)

    def __call__(self, names: Sequence[str]) -> np.ndarray:
        names = list(names)
        out = np.empty((len(names), self.dim), dtype=np.float32)
        rows = [self._rows.get(n, -1) for n in names]
        known = [i for i, r in enumerate(rows) if r >= 0]
        if known:
            out[known] = self._vectors[[rows[i] for i in known]]
        unknown = [i for i, r in enumerate(rows) if r < 0]
        if unknown:
            out[unknown] = self.dense.encode([names[i] for i in unknown],
                                             batch_size=self.batch_size, normalize=False)
        return out

    def save(self, directory: str | os.PathLike) -> Path:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.dense.save(d / "encoder")
        keep = [(n, r) for n, r in self._rows.items() if "\n" not in n and "\r" not in n]
        np.save(d / "vectors.npy", self._vectors[[r for _, r in keep]].reshape(len(keep), self.dim),
                allow_pickle=False)
        (d / "names.txt").write_text("".join(n + "\n" for n, _ in keep), encoding="utf-8")
        meta = {"format": FORMAT, "dim": self.dim, "names": len(keep), "source": self.source,
                **self.dense.config()}
        tmp = d / "meta.json.tmp"
        tmp.write_text(json.dumps(meta, indent=2))
        os.replace(tmp, d / "meta.json")
        return d

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "EncoderInputs":
        d = Path(directory)
        try:
            meta = json.loads((d / "meta.json").read_text())
            if meta.get("format") != FORMAT:
                raise ValueError(f"format is {meta.get('format')!r}, expected {FORMAT!r}")
            names = (d / "names.txt").read_text(encoding="utf-8").split("\n")[:-1]
            vectors = np.load(d / "vectors.npy", allow_pickle=False)
        except (OSError, ValueError, KeyError) as e:
            raise KgnormError(f"cannot read encoder inputs in {d}: {type(e).__name__}: {e}") from None
        dense = DenseEncoder(d / "encoder", pooling=meta.get("pooling", "mean"),
                             max_length=int(meta.get("max_length", 25)))
        return cls(dense, names, vectors)


def load_name_inputs(directory: str | os.PathLike):
    """The DAN input saved in ``directory``: word vectors or encoder inputs."""
    from kgnorm.encoders.wordvectors import FORMAT as WV_FORMAT, WordVectors

    meta_p = Path(directory) / "meta.json"
    try:
        fmt = json.loads(meta_p.read_text()).get("format")
    except (OSError, ValueError) as e:
        raise KgnormError(f"cannot read the model's input description {meta_p}: {e}") from None
    if fmt == FORMAT:
        return EncoderInputs.load(directory)
    if fmt == WV_FORMAT:
        return WordVectors.load(directory)
    raise KgnormError(f"{meta_p}: unknown input format {fmt!r}")
