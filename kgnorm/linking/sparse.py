"""BioSyn's sparse score: cosine similarity of character n-gram tf-idf vectors.

Features (what BioSyn does, ``src/biosyn/sparse_encoder.py``): scikit-learn's
``TfidfVectorizer(analyzer="char", ngram_range=(1, 2))`` fitted on the dictionary names --
character unigrams and bigrams over the whole string (spaces included, so word boundaries
show up as ``"a "``/``" b"`` bigrams; ``"char_wb"`` would pad each word instead), lowercase,
smooth idf, raw term counts, L2-normalized rows. The score of a query and a name is the dot
product of their vectors (= cosine). Both the analyzer and the n-gram range are options.

Exact top-k without a queries x names matrix: :mod:`kgnorm.linking.sparse_topk` (chunks, a dense
block for the common n-grams, a bf16 pre-filter where the CPU declares it).

Saved as plain files (no pickle): ``sparse.json`` (options), ``vocabulary.json``,
``idf.npy`` and the names' tf-idf matrix, so loading needs no re-transform: as counts, columns and
row norms (:mod:`kgnorm.linking.sparse_rows`, memory-mapped, bit-identical values), or in a model
saved before those, as the float matrix ``names.npz`` (still read).
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from kgnorm.errors import KgnormError
from kgnorm.linking.sparse_rows import CountRows, column_counts, float_blocks, tfidf_norms
from kgnorm.linking.sparse_topk import BF16_ERR, PRECISIONS, auto_uses_bf16, topk_chunk

__all__ = ["SparseScorer", "SPARSE_FILE", "PRECISIONS", "BF16_ERR", "auto_uses_bf16"]

SPARSE_FILE = "sparse.json"
# floats of one chunk's queries x names buffer, per thread: 16 MB (MEDIC: 58 queries a chunk). Models
# written before saved 1 << 24 (64 MB a thread, each thread's buffer and sparse product in `link`'s
# peak); a saved value above this is read as this, since the top-k does not depend on it
CHUNK_BUDGET = 1 << 22
# queries a chunk at least: a large dictionary's dense block is read once per chunk. 16 (was 32):
# each thread's chunk buffer over MeSH's 543k chemical names is 35 MB, not 70 MB, at the same speed
# with the dense block DENSE_BUDGET allows (benchmarks/LOG.md, "link peak memory")
MIN_CHUNK_ROWS = 16
# floats of the dense terms x names block at most: 128 MB. Models written before saved 1 << 27
# (512 MB; 145 terms, 300 MB over MeSH's chemical names, as fast as 61 terms and the rest sparse);
# a saved value above this is read as this. MEDIC's block (146 terms, 10M floats) is under it
DENSE_BUDGET = 1 << 25


_WHITE_SPACES = re.compile(r"\s\s+")  # what scikit-learn collapses before taking n-grams


def _char_counts(texts: list[str], vocabulary: dict[str, int], ngram_range: tuple[int, int],
                 lowercase: bool) -> sp.csr_matrix:
    """Counts of the vocabulary's character n-grams per text: the same matrix as
    scikit-learn's ``CountVectorizer(analyzer="char")`` with this vocabulary. Written out so
    that linking a few mentions needs no scikit-learn import (about a second of start-up)."""
    lo, hi = ngram_range
    indptr: list[int] = [0]
    indices: list[int] = []
    data: list[int] = []
    get = vocabulary.get
    for text in texts:
        if lowercase:
            text = text.lower()
        text = _WHITE_SPACES.sub(" ", text)
        row: dict[int, int] = {}
        for n in range(max(lo, 1), min(hi, len(text)) + 1):
            for i in range(len(text) - n + 1):
                j = get(text[i:i + n])
                if j is not None:
                    row[j] = row.get(j, 0) + 1
        cols = sorted(row)
        indices.extend(cols)
        indptr.append(len(indices))
        data.extend(row[c] for c in cols)
    return sp.csr_matrix((np.asarray(data, dtype=np.float32), np.asarray(indices, dtype=np.int32),
                          np.asarray(indptr, dtype=np.int64)), shape=(len(texts), len(vocabulary)))


class SparseScorer:
    """Character n-gram tf-idf scorer over a fixed list of names."""

    def __init__(self, analyzer: str = "char", ngram_range: tuple[int, int] = (1, 2),
                 lowercase: bool = True, dense_df_fraction: float | None = None,
                 max_dense_terms: int = 256, chunk_budget: int = CHUNK_BUDGET,
                 dense_budget: int = DENSE_BUDGET, precision: str = "auto",
                 n_threads: int | None = None) -> None:
        if analyzer not in ("char", "char_wb", "word"):
            raise KgnormError(f"unknown sparse analyzer {analyzer!r} (char, char_wb, word)")
        self.analyzer = analyzer
        self.ngram_range = (int(ngram_range[0]), int(ngram_range[1]))
        self.lowercase = lowercase
        self.dense_df_fraction = None if dense_df_fraction is None else float(dense_df_fraction)
        self.max_dense_terms = int(max_dense_terms)
        self.chunk_budget = int(chunk_budget)
        self.dense_budget = int(dense_budget)
        if precision not in PRECISIONS:
            raise KgnormError(f"unknown precision {precision!r} ({', '.join(PRECISIONS)})")
        self.precision = precision
        self.n_threads = n_threads
        self.vocabulary: dict[str, int] | None = None
        self.idf: np.ndarray | None = None
        self._counter = None  # scikit-learn's CountVectorizer for "char_wb"/"word" queries
        self._D: sp.csr_matrix | None = None  # the names' float tf-idf matrix (a model saved as names.npz)
        self._rows: CountRows | None = None   # or the same matrix as counts (what fit and set_names make)

    # ------------------------------------------------------------------ fitting
    def fit(self, names: Sequence[str]) -> SparseScorer:
        """Fit vocabulary and idf on ``names`` and index them (one analyzer pass; the idf is
        scikit-learn's smooth idf, ``ln((1 + n) / (1 + df)) + 1``)."""
        from sklearn.feature_extraction.text import CountVectorizer

        names = list(names)
        if len(names) == 0:
            raise KgnormError("cannot fit the sparse scorer on an empty name list")
        cv = CountVectorizer(analyzer=self.analyzer, ngram_range=self.ngram_range,
                             lowercase=self.lowercase, dtype=np.float32)
        try:
            X = cv.fit_transform(names).tocsr()
        except ValueError as e:  # e.g. only empty strings
            raise KgnormError(f"cannot fit the sparse scorer: {e}") from None
        n, v = X.shape
        df = np.bincount(X.indices, minlength=v).astype(np.float64)
        self.idf = (np.log((1.0 + n) / (1.0 + df)) + 1.0).astype(np.float32)
        self.vocabulary = {str(t): int(i) for t, i in cv.vocabulary_.items()}
        self._counter = None
        X.sort_indices()
        self._set_rows(CountRows.from_counts(X, self.idf))
        return self

    def set_names(self, names: Sequence[str]) -> SparseScorer:
        """Index a (new) list of names with the fitted vocabulary and idf."""
        if self.vocabulary is None or self.idf is None:
            raise KgnormError("the sparse scorer is not fitted")
        X = self._counts(list(names))
        X.sort_indices()
        self._set_rows(CountRows.from_counts(X, self.idf))
        return self

    def _set_matrix(self, D: sp.csr_matrix) -> None:
        """Index the float tf-idf matrix of a model saved as names.npz."""
        if D.dtype != np.float32:
            D = D.astype(np.float32)
        D.sort_indices()
        self._D, self._rows = D, None
        self._choose_terms(column_counts(D.indices, D.shape[1]))

    def _set_rows(self, rows: CountRows) -> None:
        self._D, self._rows = None, rows
        self._choose_terms(column_counts(rows.indices, rows.n_cols))

    def _take(self, rows: np.ndarray) -> sp.csr_matrix:
        """float32 tf-idf rows of these names (``names_matrix[rows]``, without the whole matrix)."""
        if self._rows is not None:
            return self._rows.take(rows, self.idf)
        return self._D[rows]

    def _blocks(self):
        """(rows, columns, values) of the names' matrix, a block of rows at a time."""
        return self._rows.blocks(self.idf) if self._rows is not None else float_blocks(self._D)

    def _choose_terms(self, df: np.ndarray) -> None:
        """Split the vocabulary into the dense block's terms and the rare ones (df: names a term)."""
        n, v = self.n_names, len(df)
        self._bf16 = self.precision == "bf16" or (self.precision == "auto" and auto_uses_bf16())
        frac = self.dense_df_fraction
        if frac is None:  # a cheaper dense product affords more dense terms
            frac = 1 / 64 if self._bf16 else 1 / 16
        order = np.argsort(-df, kind="stable")
        n_dense = int(np.sum(df > frac * n))
        n_dense = min(n_dense, self.max_dense_terms, self.dense_budget // max(n, 1))
        dense_terms = np.sort(order[:n_dense])
        is_dense = np.zeros(v, dtype=bool)
        is_dense[dense_terms] = True
        self._dense_terms = dense_terms
        self._df = df
        self._rare_terms = np.flatnonzero(~is_dense)
        self._DT_dense_cache: dict[int, tuple[np.ndarray, sp.csr_matrix]] = {}

    def _layout(self, k: int) -> tuple:
        """(block size, padded width, dense block fp32 or None, dense block bf16 or None,
        rare block) for this k; one layout is cached."""
        n = self.n_names
        bs = max(1, min(64, n // max(k, 1)))
        if bs in self._DT_dense_cache:
            return self._DT_dense_cache[bs]
        n_pad = -(-n // bs) * bs
        dt, rt = self._blocks_for(n_pad)
        dtb = None
        if len(self._dense_terms) and self._use_bf16(dt):
            import torch

            dtb = torch.from_numpy(dt).to(torch.bfloat16)
            dt = None  # the bf16 block replaces it
        self._DT_dense_cache = {bs: (bs, n_pad, dt, dtb, rt)}  # keep one layout (memory)
        return self._DT_dense_cache[bs]

    def _blocks_for(self, n_pad: int) -> tuple[np.ndarray, sp.csr_matrix]:
        """The dense terms x names float32 block and the rare terms x names CSR, `n_pad` columns,
        filled from the names' rows a block at a time (no whole-matrix copy or transpose)."""
        v = self.vocab_size
        where = np.full(v, -1, np.int64)
        where[self._dense_terms] = np.arange(len(self._dense_terms))
        where_rare = np.full(v, -1, np.int64)
        where_rare[self._rare_terms] = np.arange(len(self._rare_terms))
        dt = np.zeros((len(self._dense_terms), n_pad), dtype=np.float32)
        flat = dt.reshape(-1)  # a view: flat indices are cheaper than pairs
        n_rare = len(self._rare_terms)
        indptr = np.zeros(n_rare + 1, np.int64)
        np.cumsum(self._df[self._rare_terms], out=indptr[1:])
        r_data = np.empty(int(indptr[-1]), np.float32)
        r_rows = np.empty(int(indptr[-1]), np.int32)
        cursor = indptr[:-1].copy()  # next free slot of each rare term
        for rows, cols, vals in self._blocks():
            d = where[cols]
            dense = d >= 0
            flat[d[dense] * n_pad + rows[dense]] = vals[dense]
            rare = ~dense
            if rare.any():  # written in place, each term's rows in ascending order
                t = where_rare[cols[rare]]
                order = np.argsort(t, kind="stable")
                ts = t[order]
                pos = cursor[ts] + np.arange(len(ts)) - np.searchsorted(ts, ts)
                r_data[pos] = vals[rare][order]
                r_rows[pos] = rows[rare][order]
                cursor += np.bincount(ts, minlength=n_rare)
        rt = sp.csr_matrix((r_data, r_rows, indptr), shape=(n_rare, n_pad))
        return dt, rt

    def _use_bf16(self, dt: np.ndarray) -> bool:
        """Use the bf16 pre-filter when chosen and, checked on this dictionary's own rows,
        its error stays within half the bound the candidate margin assumes."""
        if not self._bf16:
            return False
        import torch

        rows = self._take(np.arange(min(64, self.n_names)))[:, self._dense_terms].toarray()
        ref = torch.from_numpy(rows) @ torch.from_numpy(dt)
        approx = torch.from_numpy(rows).to(torch.bfloat16) @ torch.from_numpy(dt).to(torch.bfloat16)
        if float((approx.float() - ref).abs().max()) > BF16_ERR / 2:  # pragma: no cover
            self._bf16 = False
        return self._bf16

    # ------------------------------------------------------------------ vectors
    @property
    def fitted(self) -> bool:
        return self.vocabulary is not None

    @property
    def n_names(self) -> int:
        if self._rows is not None:
            return self._rows.n_rows
        return 0 if self._D is None else self._D.shape[0]

    @property
    def vocab_size(self) -> int:
        return 0 if self.vocabulary is None else len(self.vocabulary)

    @property
    def names_matrix(self) -> sp.csr_matrix:
        """The names' float32 tf-idf matrix (built whole from the counts: tests, small dictionaries)."""
        self._check()
        return self._D if self._D is not None else self._rows.to_csr(self.idf)

    def _check(self) -> None:
        if self.vocabulary is None or (self._D is None and self._rows is None):
            raise KgnormError("the sparse scorer is not fitted")

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """L2-normalized float32 tf-idf rows (the same values as TfidfVectorizer's)."""
        if self.vocabulary is None or self.idf is None:
            raise KgnormError("the sparse scorer is not fitted")
        return self._weight(self._counts(list(texts)))

    def _counts(self, texts: list[str]) -> sp.csr_matrix:
        """Raw n-gram counts of the texts over the fitted vocabulary."""
        if self.analyzer == "char":
            return _char_counts(texts, self.vocabulary, self.ngram_range, self.lowercase)
        from sklearn.feature_extraction.text import CountVectorizer

        if self._counter is None:
            self._counter = CountVectorizer(analyzer=self.analyzer,
                                            ngram_range=self.ngram_range,
                                            lowercase=self.lowercase,
                                            vocabulary=self.vocabulary, dtype=np.float32)
        return self._counter.transform(texts).tocsr()

    def _weight(self, X: sp.csr_matrix) -> sp.csr_matrix:
        """Counts -> idf-weighted, L2-normalized float32 rows."""
        X = X.astype(np.float32, copy=False)
        X.data *= self.idf[X.indices]
        if X.nnz:
            X.data /= np.repeat(tfidf_norms(X.indptr, X.data), np.diff(X.indptr))
        X.sort_indices()
        return X

    def _as_matrix(self, queries: Sequence[str] | sp.spmatrix) -> sp.csr_matrix:
        if sp.issparse(queries):
            Q = sp.csr_matrix(queries, dtype=np.float32)
            if Q.shape[1] != self.vocab_size:
                raise KgnormError(f"query matrix has {Q.shape[1]} columns, "
                                  f"vocabulary has {self.vocab_size}")
            return Q
        if isinstance(queries, str):
            raise KgnormError("queries must be a sequence of strings, not one string")
        return self.transform(queries)

    # ------------------------------------------------------------------ scoring
    def topk(self, queries: Sequence[str] | sp.spmatrix, k: int,
             n_threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k names per query: ``(scores float32 [n,k], idx int64 [n,k])``,
        best first; k is clipped to the number of names."""
        self._check()
        if not sp.issparse(queries) and not isinstance(queries, str):
            queries = list(queries)
            uniq = dict.fromkeys(queries)
            if len(uniq) < len(queries):  # repeated mentions are scored once
                pos = {q: i for i, q in enumerate(uniq)}
                inv = np.fromiter((pos[q] for q in queries), np.int64, len(queries))
                sc, ix = self.topk(list(uniq), k, n_threads)
                return sc[inv], ix[inv]
        Q = self._as_matrix(queries)
        nq, n = Q.shape[0], self.n_names
        k = min(int(k), n)
        if k <= 0 or nq == 0:
            return (np.zeros((nq, max(k, 0)), np.float32), np.zeros((nq, max(k, 0)), np.int64))
        bs, n_pad, dt, dtb, rt = self._layout(k)
        chunk = int(max(1, min(1024, max(MIN_CHUNK_ROWS, self.chunk_budget // n_pad))))
        starts = list(range(0, nq, chunk))
        scores = np.empty((nq, k), np.float32)
        idx = np.empty((nq, k), np.int64)

        def work(s: int) -> None:
            e = min(s + chunk, nq)
            q = Q[s:e]
            qd = q[:, self._dense_terms].toarray() if len(self._dense_terms) else None
            sc, ix = topk_chunk(self._take, n, q, qd, q[:, self._rare_terms].tocsr(), dt, dtb, rt, k, bs, n_pad)
            scores[s:e] = sc
            idx[s:e] = ix

        threads = n_threads if n_threads is not None else self.n_threads
        if threads is None:
            threads = min(4, os.cpu_count() or 1)
        if threads <= 1 or len(starts) == 1:
            for s in starts:
                work(s)
        else:
            with ThreadPoolExecutor(threads) as ex:
                list(ex.map(work, starts))
        return scores, idx

    def score_pairs(self, queries: Sequence[str] | sp.spmatrix, idx: np.ndarray) -> np.ndarray:
        """Sparse scores of query i with names ``idx[i, j]`` (negative idx -> 0)."""
        self._check()
        Q = self._as_matrix(queries)
        idx = np.asarray(idx)
        if idx.ndim != 2 or idx.shape[0] != Q.shape[0]:
            raise KgnormError(f"idx must be [n_queries, m], got {idx.shape}")
        nq, m = idx.shape
        if nq == 0 or m == 0:
            return np.zeros((nq, m), np.float32)
        flat = idx.ravel()
        valid = flat >= 0
        rows = np.repeat(np.arange(nq), m)
        A = Q[rows[valid]]
        B = self._take(flat[valid])
        out = np.zeros(nq * m, np.float32)
        out[valid] = np.asarray(A.multiply(B).sum(axis=1), dtype=np.float32).ravel()
        return out.reshape(nq, m)

    # ------------------------------------------------------------------ files
    def config(self) -> dict:
        return {"analyzer": self.analyzer, "ngram_range": list(self.ngram_range),
                "lowercase": self.lowercase, "dense_df_fraction": self.dense_df_fraction,
                "max_dense_terms": self.max_dense_terms, "chunk_budget": self.chunk_budget,
                "dense_budget": self.dense_budget, "precision": self.precision}

    def save(self, directory: str | Path) -> None:
        self._check()
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / SPARSE_FILE).write_text(json.dumps(self.config(), indent=2), encoding="utf-8")
        (d / "vocabulary.json").write_text(json.dumps(self.vocabulary, ensure_ascii=False),
                                           encoding="utf-8")
        np.save(d / "idf.npy", self.idf)
        if self._rows is not None:
            self._rows.save(d)
            (d / "names.npz").unlink(missing_ok=True)  # the counts replace a float matrix saved before
        else:
            sp.save_npz(d / "names.npz", self._D, compressed=True)

    @classmethod
    def load(cls, directory: str | Path, n_threads: int | None = None,
             precision: str | None = None) -> SparseScorer:
        """`precision`: instead of the saved one (``fp32``: never the torch bf16 pre-filter)."""
        d = Path(directory)
        try:
            cfg = json.loads((d / SPARSE_FILE).read_text(encoding="utf-8"))
            vocab = json.loads((d / "vocabulary.json").read_text(encoding="utf-8"))
            idf = np.load(d / "idf.npy")
            rows = CountRows.load(d, len(vocab)) if CountRows.saved(d) else None
            D = sp.load_npz(d / "names.npz") if rows is None else None
        except (OSError, ValueError) as e:
            raise KgnormError(f"{d}: not a saved sparse scorer ({e})") from None
        try:  # a damaged or hand-edited file: one line, not a traceback
            obj = cls(analyzer=cfg["analyzer"], ngram_range=tuple(cfg["ngram_range"]),
                      lowercase=cfg.get("lowercase", True),
                      dense_df_fraction=cfg.get("dense_df_fraction"),
                      max_dense_terms=cfg.get("max_dense_terms", 256),
                      chunk_budget=min(cfg.get("chunk_budget", CHUNK_BUDGET), CHUNK_BUDGET),
                      dense_budget=min(cfg.get("dense_budget", DENSE_BUDGET), DENSE_BUDGET),
                      precision=precision or cfg.get("precision", "auto"), n_threads=n_threads)
            obj.vocabulary = {str(t): int(i) for t, i in vocab.items()}
        except KgnormError as e:  # an option the scorer refuses
            raise KgnormError(f"{d}: {SPARSE_FILE}: {e}") from None
        except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
            raise KgnormError(f"{d}: not a saved sparse scorer ({type(e).__name__}: {e})") from None
        obj.idf = np.asarray(idf, dtype=np.float32)
        cols = D.shape[1] if D is not None else len(obj.vocabulary)
        if cols != len(obj.vocabulary) or len(obj.idf) != len(obj.vocabulary) or (
                rows is not None and rows.nnz and int(np.max(rows.indices)) >= cols):
            raise KgnormError(f"{d}: sparse scorer files disagree on the vocabulary size")
        if rows is not None:
            obj._set_rows(rows)
        else:
            obj._set_matrix(D.tocsr())
        return obj
