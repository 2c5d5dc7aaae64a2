"""Dictionary + FAISS index + ``link`` for any name encoder with ``encode(names)``.

BNE (:mod:`kgnorm.methods.bne.model`) and DILBERT (:mod:`kgnorm.methods.dilbert.model`)
share it: a subclass gives ``encode`` and, when its metric is not the inner product of the
encoded vectors, the metric hooks below.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Candidate
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.index import NameIndex
from kgnorm.progress import progress_bar

__all__ = ["IndexedNamesMixin"]


class IndexedNamesMixin:
    """Dictionary + FAISS index + ``link`` for any encoder with ``encode(names)``.

    Subclasses provide ``encode(names, batch_size=..., progress=...)`` and may override
    :meth:`_index_vectors` / :meth:`_query_vectors` / :meth:`_scores` / :meth:`_pair_scores` to
    search a metric other than the inner product of the encoded vectors.
    """

    dictionary: NameDictionary | None
    index: NameIndex | None
    index_kind: str = "flat"
    index_fp16: bool = False

    def set_dictionary(self, dictionary: NameDictionary) -> None:
        if len(dictionary) == 0:
            raise KgnormError("the name dictionary is empty")
        self.dictionary = dictionary
        self.index = None

    def _need_dictionary(self) -> NameDictionary:
        if self.dictionary is None:
            raise KgnormError("the model has no name dictionary")
        return self.dictionary

    def _index_vectors(self, vectors: np.ndarray) -> np.ndarray:
        return vectors

    def _query_vectors(self, vectors: np.ndarray) -> np.ndarray:
        return vectors

    def _scores(self, inner: np.ndarray, query_vectors: np.ndarray) -> np.ndarray:
        return inner

    def _pair_scores(self, query_vectors: np.ndarray, indexed: np.ndarray) -> np.ndarray:
        """Score of query i with the indexed vectors ``indexed[i, j]`` (as stored: ``_index_vectors``)."""
        return np.einsum("nd,nmd->nm", query_vectors, indexed)

    def _exact(self, query_vectors: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores of the retrieved rows recomputed one (query, name) pair at a time from the stored
        vectors, best first (ties by row). A matrix product's last bits depend on how many queries
        it holds, and a Euclidean distance near 0 magnifies them (``sqrt(|q|^2 - 2 ip)``); computed
        pair by pair, a query's scores and order are the same in any batch, as `link` promises."""
        safe = np.where(idx >= 0, idx, 0)
        scores = self._pair_scores(query_vectors, self.index.reconstruct(safe)).astype(np.float32)
        scores[idx < 0] = -np.inf
        order = np.lexsort((np.where(idx >= 0, idx, np.iinfo(np.int64).max), -scores), axis=-1)
        return np.take_along_axis(scores, order, 1), np.take_along_axis(idx, order, 1)

    def build_index(self, vectors: np.ndarray | None = None, progress: bool = False,
                    batch_size: int = 512) -> NameIndex:
        """Index the dictionary names (``vectors``: their ``encode`` output, if known)."""
        d = self._need_dictionary()
        if vectors is None:
            vectors = self.encode(d.names, batch_size=batch_size, progress=progress)
        if len(vectors) != len(d):
            raise KgnormError(f"{len(vectors)} vectors for {len(d)} dictionary names")
        self.index = NameIndex.build(self._index_vectors(np.asarray(vectors, np.float32)),
                                     kind=self.index_kind, fp16=self.index_fp16)
        return self.index

    def retrieve(self, queries: Sequence[str], top_k: int = 5, batch_size: int = 512,
                 query_vectors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(scores float32 [n, k], rows int64 [n, k])``, best first; -1 rows past the
        dictionary's end."""
        self._need_dictionary()
        if self.index is None:
            self.build_index()
        qv = (self.encode(list(queries), batch_size=batch_size) if query_vectors is None
              else np.asarray(query_vectors, np.float32))
        k = max(1, int(top_k))
        inner, idx = self.index.search(self._query_vectors(qv), k)
        if self.index.kind == "flat":
            scores, idx = self._exact(qv, idx)
        else:
            scores = self._scores(inner, qv).astype(np.float32)
        if idx.shape[1] < k:
            pad = k - idx.shape[1]
            idx = np.pad(idx, ((0, 0), (0, pad)), constant_values=-1)
            scores = np.pad(scores, ((0, 0), (0, pad)), constant_values=-np.inf)
        return scores, idx

    def link(self, queries: Sequence[str], top_k: int = 5, batch_size: int = 512,
             progress: bool = False) -> list[list[Candidate]]:
        """Ranked :class:`Candidate` rows (best first) for each (normalized) query."""
        if isinstance(queries, str):
            raise KgnormError("link expects a sequence of query strings, not one string")
        d = self._need_dictionary()
        if self.index is None:
            self.build_index(progress=progress)
        queries = list(queries)
        out: list[list[Candidate]] = []
        bar = progress_bar(total=len(queries), desc="link", unit="mention") if progress else None
        try:
            for s in range(0, len(queries), batch_size):
                part = queries[s:s + batch_size]
                scores, idx = self.retrieve(part, top_k, batch_size=batch_size)
                for i in range(len(part)):
                    row = []
                    for j in range(idx.shape[1]):
                        c = int(idx[i, j])
                        if c < 0:
                            break
                        sc = float(scores[i, j])
                        row.append(Candidate(c, d.uids[c], d.names[c], sc, 0.0, sc))
                    out.append(row)
                if bar is not None:
                    bar.update(len(part))
        finally:
            if bar is not None:
                bar.close()
        return out
