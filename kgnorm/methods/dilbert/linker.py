"""A saved DILBERT model for linking only: its queries encoded by ONNX Runtime
(kgnorm.encoders.onnx_query, the export cached per model content), so `link`, `annotate` and
`eval link` never import torch once the export is cached -- what BioSyn's
:class:`~kgnorm.methods.biosyn.retrieval.BioSynLinker` does for BioSyn.

Queries go through the fixed-shape calls of kgnorm.encoders.fixed_shape (a query's vector does not
depend on its batch), and a query that is a dictionary name takes the name's stored vector
(kgnorm.linking.stored_vectors). Ranking is the trainable model's: the same index, the same distance
space (kgnorm.linking.distance_space), the same candidates.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgnorm.encoders.fixed_shape import QueryVectors, default_workers
from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Candidate
from kgnorm.linking.cpu_features import query_path
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.distance_space import DistanceSpace, check_indexed_dim
from kgnorm.linking.name_index import IndexedNamesMixin, NameIndex
from kgnorm.linking.query_cache import link_each_text_once
from kgnorm.linking.stored_vectors import exact_name_rows, stored_name_vectors, stored_or_encoded
from kgnorm.methods.model_dir import load_names_and_index, read_model_meta

__all__ = ["DilbertLinker", "load_dilbert_linker"]


class DilbertLinker(DistanceSpace, IndexedNamesMixin):
    """Dictionary + saved index of a DILBERT model, queries encoded by an ONNX Runtime encoder."""

    engine = "onnx"

    def __init__(self, encoder: Any, dictionary: NameDictionary, index: NameIndex, distance: str,
                 meta: dict[str, Any]) -> None:
        self.encoder = encoder
        self.dictionary = dictionary
        self.index = index
        self.index_kind, self.index_fp16 = index.kind, index.fp16
        self.distance = distance
        self.meta = meta
        index.engine = self.engine
        _, rows = query_path(engine=self.engine)
        self.query_vectors = QueryVectors(encoder, rows=rows, workers=default_workers(), overlap=None)
        self.reuse_name_vectors = stored_name_vectors()
        self._rows: Mapping[str, int] | None = None

    def set_dictionary(self, dictionary: NameDictionary) -> None:
        """Search `dictionary` from now on (`eval link --nil-fraction` swaps in a reduced one): its
        index is built on the next link, from the query encoder's vectors of its names."""
        super().set_dictionary(dictionary)
        self._rows = None

    def build_index(self, vectors: np.ndarray | None = None, progress: bool = False,
                    batch_size: int = 512) -> NameIndex:
        self._rows = None   # the names are encoded, not taken from the index being replaced
        index = super().build_index(vectors, progress, batch_size)
        index.engine = self.engine
        return index

    def _stored_rows(self) -> Mapping[str, int] | None:
        """Name -> row of the index searched now, where its vectors are exact (kgnorm.linking.stored_vectors)."""
        if not self.reuse_name_vectors or self.index is None:
            return None
        if self._rows is None:
            self._rows = exact_name_rows(self.dictionary, self.index)
        return self._rows

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def encode(self, names: Sequence[str], batch_size: int = 256, progress: bool = False,
               desc: str = "encode") -> np.ndarray:
        """Query vectors: a name's stored vector where the index holds it exactly, else encoded."""
        return stored_or_encoded(names, self._stored_rows(), self.index, self.dim, self.query_vectors.take)

    def prefetch(self, queries: Sequence[str]) -> None:
        """Queries a later ``link`` will ask for: encoded as soon as their length group fills a call."""
        rows = self._stored_rows() or {}
        self.query_vectors.submit([q for q in queries if q not in rows])

    def link(self, queries: Sequence[str], top_k: int = 5, batch_size: int = 512,
             progress: bool = False) -> list[list[Candidate]]:
        """Ranked candidates per (normalized) query; repeated texts are linked once."""
        if isinstance(queries, str):
            raise KgnormError("link expects a sequence of query strings, not one string")

        def link_distinct(uniq: list[str]) -> list[list[Candidate]]:
            self.prefetch(uniq[:self.query_vectors.max_ready])
            return super(DilbertLinker, self).link(uniq, top_k=top_k, batch_size=batch_size, progress=progress)

        return link_each_text_once(queries, link_distinct)

    @classmethod
    def load(cls, directory: str | Path, threads: int = 1) -> DilbertLinker:
        from kgnorm.encoders.onnx_query import OnnxQueryEncoder

        d = Path(directory)
        meta = read_model_meta(d, "dilbert")
        dictionary, index = load_names_and_index(d, meta, use_gpu=False)
        distance = meta.get("distance", "euclidean")
        e = meta.get("encoder", {})
        encoder = OnnxQueryEncoder.for_encoder_dir(
            d / e.get("path", "encoder"), e.get("pooling", "mean"), e.get("max_length", 25),
            bool(e.get("normalize", False)) or distance == "cosine", threads, query_path(engine="onnx")[0])
        check_indexed_dim(d, index.dim, encoder.dim, distance)
        return cls(encoder, dictionary, index, distance, meta)


def load_dilbert_linker(directory: str | Path) -> Any:
    """The model `link`, `annotate` and `eval link` rank with: :class:`DilbertLinker` where the query
    engine is ``onnx`` (kgnorm.linking.cpu_features.query_engine), else the torch
    :class:`~kgnorm.methods.dilbert.model.DilbertModel`."""
    from kgnorm.linking.cpu_features import query_engine

    if query_engine() == "onnx":
        return DilbertLinker.load(directory)
    from kgnorm.methods.dilbert.model import load_dilbert

    return load_dilbert(directory)
