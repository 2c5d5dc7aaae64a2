"""A name index that ranks by Euclidean distance or cosine similarity through FAISS' inner product.

The FAISS index is inner-product only (:class:`~kgnorm.linking.name_index.NameIndex`). For
``distance="euclidean"`` names are indexed as ``[x, -|x|^2 / 2]`` and queries searched as
``[q, 1]``: the inner product ``q.x - |x|^2/2`` ranks exactly like ``-|q - x|^2``, and the reported
distance is ``sqrt(|q|^2 - 2 ip)``. For ``distance="cosine"`` the vectors are L2-normalized and the
inner product is the score. DILBERT's trainable model and its torch-free linker both search this way,
so the hooks live here, beside :class:`~kgnorm.linking.name_index.IndexedNamesMixin` whose search they adapt.
"""
from __future__ import annotations

import numpy as np

from kgnorm.errors import KgnormError

__all__ = ["DistanceSpace", "check_indexed_dim"]


def check_indexed_dim(directory: object, index_dim: int, dim: int, distance: str) -> None:
    """A saved index whose vectors are not the encoder's (plus the Euclidean column) is refused."""
    want = dim + (1 if distance == "euclidean" else 0)
    if index_dim != want:
        raise KgnormError(f"{directory}: index dimension {index_dim} != expected {want}")


class DistanceSpace:
    """The metric hooks of :class:`~kgnorm.linking.name_index.IndexedNamesMixin` for a ``distance``
    (``euclidean`` or ``cosine``); ``Candidate.score`` stays "higher is better": ``-distance`` or
    the cosine similarity."""

    distance: str = "euclidean"

    def _index_vectors(self, vectors: np.ndarray) -> np.ndarray:
        if self.distance == "cosine":
            return vectors
        sq = np.einsum("nd,nd->n", vectors, vectors, dtype=np.float64)
        return np.concatenate([vectors, (-0.5 * sq)[:, None].astype(np.float32)], axis=1)

    def _query_vectors(self, vectors: np.ndarray) -> np.ndarray:
        if self.distance == "cosine":
            return vectors
        return np.concatenate([vectors, np.ones((len(vectors), 1), np.float32)], axis=1)

    def _scores(self, inner: np.ndarray, query_vectors: np.ndarray) -> np.ndarray:
        if self.distance == "cosine":
            return inner
        qq = np.einsum("nd,nd->n", query_vectors, query_vectors, dtype=np.float64)
        d2 = np.maximum(qq[:, None] - 2.0 * inner.astype(np.float64), 0.0)
        return (-np.sqrt(d2)).astype(np.float32)

    def _pair_scores(self, query_vectors: np.ndarray, indexed: np.ndarray) -> np.ndarray:
        """Score of query i with indexed vectors ``indexed[i, j]``: the distance computed from the
        difference (no cancellation near 0) for euclidean, the inner product for cosine."""
        if self.distance == "cosine":
            return np.einsum("nd,nmd->nm", query_vectors, indexed)
        diff = indexed[..., :-1] - query_vectors[:, None, :]
        return -np.sqrt(np.einsum("nmd,nmd->nm", diff, diff))

    def distance_of(self, score: float | np.ndarray) -> float | np.ndarray:
        """The distance behind a ``Candidate.score`` (lower = closer)."""
        s = np.asarray(score, dtype=np.float64)
        d = -s if self.distance == "euclidean" else 1.0 - s
        return float(d) if d.ndim == 0 else d
