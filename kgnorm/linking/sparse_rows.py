"""The names' tf-idf matrix of :class:`kgnorm.linking.sparse.SparseScorer`, stored compactly.

A tf-idf value is ``count * idf[term] / norm[row]`` in float32 (``SparseScorer._weight``), so the
matrix is kept as its raw counts (uint8 where every count fits, else uint16), its column indices
(uint16 where the vocabulary fits) and one float32 norm a row: 3 bytes a non-zero instead of 8
(MeSH's chemical vocabulary, 20M non-zeros: 60 MB instead of 154 MB). Any row is rebuilt with the
same float32 operations, in the same order, as the weighting that made it, so the values (and
every score computed from them) are bit-identical to the float matrix's.

Saved as plain ``.npy`` files (``names_indptr``, ``names_indices``, ``names_counts``,
``names_norms``) and memory-mapped on load: nothing is copied into the heap, and after the
scorer's blocks are built only the rows a query's candidates need are paged in.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

FILES = ("names_indptr", "names_indices", "names_counts", "names_norms")
ROW_BLOCK = 1 << 14  # names a block when the scorer's blocks are built (bounds the temporaries)
ENTRY_BLOCK = 1 << 20  # entries a step when columns are counted


def column_counts(indices: np.ndarray, n_cols: int) -> np.ndarray:
    """Entries a column (document frequency), counted a block at a time: np.bincount would copy
    all the indices into one int64 array first (160 MB for MeSH's chemical vocabulary)."""
    df = np.zeros(n_cols, np.int64)
    for a in range(0, len(indices), ENTRY_BLOCK):
        df += np.bincount(indices[a:a + ENTRY_BLOCK], minlength=n_cols)
    return df


def tfidf_norms(indptr: np.ndarray, weighted: np.ndarray) -> np.ndarray:
    """float32 L2 norm of each row of idf-weighted float32 values (1 for an empty row): the
    weighting's own formula, shared so that rebuilt rows divide by the very same numbers."""
    n = len(indptr) - 1
    rows = np.repeat(np.arange(n), np.diff(indptr))
    sq = np.bincount(rows, weights=weighted.astype(np.float64) ** 2, minlength=n)
    return np.sqrt(np.where(sq > 0, sq, 1.0)).astype(np.float32)


def _smallest(values: np.ndarray, dtypes: tuple) -> type:
    top = int(values.max()) if values.size else 0
    return next(t for t in dtypes if top <= np.iinfo(t).max)


@dataclass
class CountRows:
    """Counts, columns and row norms of the names' tf-idf matrix (CSR layout)."""

    indptr: np.ndarray   # int64 [n + 1]
    indices: np.ndarray  # uint16 or int32 [nnz], sorted within a row
    counts: np.ndarray   # uint8 or uint16 [nnz]
    norms: np.ndarray    # float32 [n]
    n_cols: int

    @classmethod
    def from_counts(cls, counts: sp.csr_matrix, idf: np.ndarray) -> CountRows:
        """From a raw count matrix (float or int, CSR with sorted indices)."""
        c = counts.data
        if c.size and (np.any(c != np.rint(c)) or c.min() < 0):  # pragma: no cover - counts are counts
            raise ValueError("the count matrix holds non-integer values")
        c = c.astype(np.int64)
        indices = counts.indices.astype(_smallest(np.asarray(counts.shape[1] - 1), (np.uint16, np.int32)))
        weighted = c.astype(np.float32) * idf[counts.indices]
        return cls(indptr=counts.indptr.astype(np.int64), indices=indices,
                   counts=c.astype(_smallest(c, (np.uint8, np.uint16, np.uint32))),
                   norms=tfidf_norms(counts.indptr, weighted), n_cols=int(counts.shape[1]))

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def values(self, start: int, stop: int, idf: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """float32 tf-idf values of entries start:stop (``rows``: their row numbers), exactly as
        the weighting computed them: ``count * idf``, then divided by the row's norm."""
        v = self.counts[start:stop].astype(np.float32)
        v *= idf[self.indices[start:stop]]
        v /= self.norms[rows]
        return v

    def take(self, rows: np.ndarray, idf: np.ndarray) -> sp.csr_matrix:
        """float32 CSR of the given rows (in that order): the same matrix as ``D[rows]``."""
        rows = np.asarray(rows, dtype=np.int64)
        starts = np.asarray(self.indptr[rows])
        lens = np.asarray(self.indptr[rows + 1]) - starts
        indptr = np.zeros(len(rows) + 1, np.int64)
        np.cumsum(lens, out=indptr[1:])
        pos = np.repeat(starts - indptr[:-1], lens) + np.arange(indptr[-1])
        data = self.counts[pos].astype(np.float32)
        cols = self.indices[pos].astype(np.int32)
        data *= idf[cols]
        data /= np.repeat(self.norms[rows], lens)
        return sp.csr_matrix((data, cols, indptr), shape=(len(rows), self.n_cols))

    def blocks(self, idf: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(row numbers, columns, float32 values) of the entries, ROW_BLOCK rows at a time."""
        for a in range(0, self.n_rows, ROW_BLOCK):
            b = min(a + ROW_BLOCK, self.n_rows)
            s, e = int(self.indptr[a]), int(self.indptr[b])
            rows = np.repeat(np.arange(a, b), np.diff(np.asarray(self.indptr[a:b + 1])))
            yield rows, np.asarray(self.indices[s:e]), self.values(s, e, idf, rows)

    def to_csr(self, idf: np.ndarray) -> sp.csr_matrix:
        """The whole float32 matrix (tests, small dictionaries)."""
        return self.take(np.arange(self.n_rows), idf)

    def save(self, directory: Path) -> None:
        for name, arr in zip(FILES, (self.indptr, self.indices, self.counts, self.norms)):
            tmp = directory / f"{name}.tmp.npy"
            np.save(tmp, arr)
            tmp.replace(directory / f"{name}.npy")  # a new file: a process mapping the old one keeps it

    @classmethod
    def load(cls, directory: Path, n_cols: int) -> CountRows:
        """Memory-mapped from `directory` (read-only)."""
        indptr, indices, counts, norms = (np.load(directory / f"{name}.npy", mmap_mode="r") for name in FILES)
        if len(norms) != len(indptr) - 1 or len(indices) != len(counts) or int(indptr[-1]) != len(indices):
            raise ValueError("the names' count files disagree on their sizes")
        return cls(indptr=indptr, indices=indices, counts=counts, norms=norms, n_cols=int(n_cols))

    @staticmethod
    def saved(directory: Path) -> bool:
        return all((directory / f"{name}.npy").is_file() for name in FILES)


def float_blocks(D: sp.csr_matrix) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:meth:`CountRows.blocks` of a float matrix (a model saved before the counts: names.npz)."""
    for a in range(0, D.shape[0], ROW_BLOCK):
        b = min(a + ROW_BLOCK, D.shape[0])
        s, e = int(D.indptr[a]), int(D.indptr[b])
        rows = np.repeat(np.arange(a, b), np.diff(D.indptr[a:b + 1]))
        yield rows, D.indices[s:e], D.data[s:e]
