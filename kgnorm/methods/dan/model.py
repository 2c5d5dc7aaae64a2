"""DAN name encoder (Fivez et al. 2021): name input vector -> wide hidden layer -> d.

The input is the mean of the name's word vectors (the paper) or a frozen encoder's pooled
name vector (:mod:`kgnorm.encoders.encoder_inputs`, ``kgnorm train dan --input encoder``).

``load_dan(model_dir)`` reads a directory written by :func:`kgnorm.methods.dan.train.train_dan`:

    kgnorm-model.json     method "dan", hyper-parameters, metrics, library versions
    model.safetensors     the network weights (best validation epoch)
    wordvectors/          the input: word vectors (:class:`kgnorm.encoders.wordvectors.WordVectors`)
                          or encoder inputs (:class:`~kgnorm.encoders.encoder_inputs.EncoderInputs`)
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch import nn

from kgnorm.encoders.encoder_inputs import load_name_inputs
from kgnorm.errors import KgnormError
from kgnorm.encoders.wordvectors import WordVectors
from kgnorm.methods.model_dir import META_FILE as MODEL_JSON
from kgnorm.methods.model_dir import read_model_meta

__all__ = ["DAN", "DanEncoder", "load_dan", "MODEL_JSON", "WEIGHTS", "WORDVECTORS"]

WEIGHTS = "model.safetensors"
WORDVECTORS = "wordvectors"


class DAN(nn.Module):
    """Linear(d, hidden) -> ReLU -> Dropout -> Linear(hidden, d)."""

    def __init__(self, dim: int, hidden: int = 2048, dropout: float = 0.5) -> None:
        super().__init__()
        self.dim, self.hidden, self.dropout_p = int(dim), int(hidden), float(dropout)
        self.inp = nn.Linear(self.dim, self.hidden)
        self.act = nn.ReLU()
        self.dropout = nn.Dropout(self.dropout_p)
        self.out = nn.Linear(self.hidden, self.dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.dropout(self.act(self.inp(x))))


class DanEncoder:
    """Encodes names: input vectors (``inputs(names)``), run the DAN, L2-normalise (float32)."""

    def __init__(self, net: DAN, inputs, meta: dict | None = None,
                 model_dir: str | None = None) -> None:
        self.net = net.eval()
        self.inputs = inputs
        # the averaged-word-vector baseline of `eval hierarchy` exists only for word vectors
        self.wordvecs = inputs if isinstance(inputs, WordVectors) else None
        self.meta = dict(meta or {})
        self.model_dir = model_dir

    @property
    def dim(self) -> int:
        return self.net.dim

    def encode_inputs(self, x: np.ndarray, batch_size: int = 8192) -> np.ndarray:
        """Run the network on input vectors; L2-normalised float32 rows."""
        out = np.empty((len(x), self.net.dim), dtype=np.float32)
        with torch.inference_mode():
            for s in range(0, len(x), batch_size):
                y = self.net(torch.from_numpy(np.ascontiguousarray(x[s:s + batch_size],
                                                                   dtype=np.float32)))
                y = torch.nn.functional.normalize(y, dim=1)
                out[s:s + batch_size] = y.numpy()
        return out

    def encode(self, names: Sequence[str], batch_size: int = 8192) -> np.ndarray:
        """(len(names), dim) L2-normalised float32 embeddings."""
        if isinstance(names, str):
            raise KgnormError("encode() takes a list of names, not a single string")
        return self.encode_inputs(self.inputs(list(names)), batch_size)

    __call__ = encode


def load_dan(model_dir: str | os.PathLike) -> DanEncoder:
    """Load a DAN model directory (see the module docstring)."""
    from safetensors.torch import load_file

    d = Path(model_dir)
    meta = read_model_meta(d, "dan")
    w_p = d / meta.get("weights", WEIGHTS)
    if not w_p.exists():
        raise KgnormError(f"model weights not found: {w_p}")
    arch = meta.get("architecture", {})
    try:
        net = DAN(int(arch["dim"]), int(arch["hidden"]), float(arch.get("dropout", 0.5)))
        net.load_state_dict(load_file(str(w_p)))
    except Exception as e:
        raise KgnormError(f"cannot load DAN weights {w_p}: {type(e).__name__}: {e}") from e
    inputs = load_name_inputs(d / meta.get("word_vectors", WORDVECTORS))
    if inputs.dim != net.dim:
        raise KgnormError(f"{d}: the input vectors have {inputs.dim} dimensions, the DAN expects "
                          f"{net.dim}")
    return DanEncoder(net, inputs, meta, str(d))
