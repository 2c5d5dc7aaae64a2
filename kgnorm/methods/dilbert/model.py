"""DILBERT linking model (Miftahutdinov et al. 2021): a transformer name encoder
(:class:`~kgnorm.encoders.dense.DenseEncoder`, mean pooling) whose names are ranked by
distance to the query.

``distance="euclidean"`` (the paper's triplet space): names are ranked by the Euclidean
distance of the raw pooled vectors; ``distance="cosine"``: vectors are L2-normalized and ranked by
cosine similarity. Both through the inner-product index (:class:`~kgnorm.linking.distance_space.DistanceSpace`).
`link` ranks with :class:`kgnorm.methods.dilbert.linker.DilbertLinker` (ONNX Runtime) where it can.

``Candidate.score`` is "higher is better" like every linker of kgnorm: ``-distance``
(euclidean) or the cosine similarity (cosine). For out-of-KB decisions use
:meth:`DilbertModel.distance_of` (``-score`` or ``1 - score``); see
:mod:`kgnorm.nil.thresholds`.

A model directory::

    kgnorm-model.json     method "dilbert", encoder settings, distance, hyper-parameters,
                          ontology, metrics, library versions
    encoder/              save_pretrained: config.json, model.safetensors, tokenizer files
    names/                names.tsv, alt_ids.tsv
    index/                names.faiss, index.json (augmented vectors for euclidean)
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.losses.triplet import DISTANCES
from kgnorm.encoders.dense import DenseEncoder
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.distance_space import DistanceSpace, check_indexed_dim
from kgnorm.linking.name_index import IndexedNamesMixin
from kgnorm.methods.model_dir import (load_dense_encoder, load_names_and_index, read_model_meta,
                                      save_names_and_index)

__all__ = ["DilbertModel", "load_dilbert", "DISTANCES"]



class DilbertModel(DistanceSpace, IndexedNamesMixin):
    """DenseEncoder + name dictionary + distance-ranked FAISS index."""

    def __init__(self, encoder: DenseEncoder, dictionary: NameDictionary | None = None,
                 distance: str = "euclidean", index_kind: str = "flat",
                 index_fp16: bool = False, meta: dict | None = None) -> None:
        if distance not in DISTANCES:
            raise KgnormError(f"unknown distance {distance!r} (choose from {', '.join(DISTANCES)})")
        if encoder.normalize and distance == "euclidean":
            pass  # allowed: euclidean on unit vectors ranks like cosine
        self.encoder = encoder
        self.distance = distance
        self.index_kind, self.index_fp16 = index_kind, bool(index_fp16)
        self.meta = dict(meta or {})
        self.dictionary = None
        self.index = None
        if dictionary is not None:
            self.set_dictionary(dictionary)

    @classmethod
    def create(cls, dictionary: NameDictionary | None = None,
               encoder: str | Path | DenseEncoder | None = None, max_length: int = 25,
               device: str | None = None, distance: str = "euclidean", **kw) -> DilbertModel:
        """A fresh model over ``encoder`` (a directory, default MiniLM; mean pooling)."""
        if not isinstance(encoder, DenseEncoder):
            encoder = DenseEncoder(encoder, pooling="mean", max_length=max_length, device=device)
        return cls(encoder, dictionary, distance=distance, **kw)

    @property
    def dim(self) -> int:
        return self.encoder.dim

    @property
    def device(self):
        return self.encoder.device

    # ------------------------------------------------------------------ vectors
    def encode(self, names: Sequence[str], batch_size: int = 256, progress: bool = False,
               desc: str = "encode") -> np.ndarray:
        """float32 ``[n, dim]`` in the model's metric space (raw pooled vectors for
        euclidean, L2-normalized for cosine)."""
        return self.encoder.encode(names, batch_size=batch_size,
                                   normalize=(self.distance == "cosine") or None,
                                   progress=progress, desc=desc)

    __call__ = encode

    # ------------------------------------------------------------------ files
    def save(self, directory: str | Path, hyper_parameters: dict | None = None,
             metrics: dict | None = None, ontology: dict | None = None,
             extra: dict | None = None) -> Path:
        d = Path(directory)
        enc = self.encoder
        enc.save(d / "encoder")
        self.meta = save_names_and_index(self, d, {
            "method": "dilbert",
            "encoder": {"path": "encoder", "base": str(getattr(enc, "base", enc.path)),
                        "dim": enc.dim, **enc.config()},
            "distance": self.distance,
            "score": "-euclidean distance" if self.distance == "euclidean" else "cosine",
        }, hyper_parameters, ontology, metrics, extra)
        return d


def load_dilbert(directory: str | os.PathLike, device: str | None = None,
                 use_gpu: bool | str = "auto") -> DilbertModel:
    """Load a DILBERT model directory written by :meth:`DilbertModel.save`."""
    d = Path(directory)
    meta = read_model_meta(d, "dilbert")
    encoder = load_dense_encoder(d, meta, device, pooling="mean")
    dictionary, index = load_names_and_index(d, meta, use_gpu)
    distance = meta.get("distance", "euclidean")
    check_indexed_dim(d, index.dim, encoder.dim, distance)
    model = DilbertModel(encoder, dictionary, distance=distance, index_kind=index.kind,
                         index_fp16=index.fp16, meta=meta)
    model.index = index
    return model
