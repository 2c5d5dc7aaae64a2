"""The exact sparse top-k kernel of :class:`kgnorm.linking.sparse.SparseScorer`.

Exact top-k without a queries x names matrix
--------------------------------------------
With character unigrams almost every name shares some n-gram with every query, so the sparse
product is nearly dense and a plain ``Q @ D.T`` + ``argsort`` is slow. :meth:`SparseScorer.topk`
works on a chunk of queries at a time (memory bounded by ``chunk_budget`` floats a thread, or
by 32 queries' rows where a dictionary is larger than that: kgnorm.linking.sparse.MIN_CHUNK_ROWS):

* the n-grams found in more than ``dense_df_fraction`` of the names (default 1/16, or 1/64
  with the bf16 pre-filter below; unigrams and the commonest bigrams; at most
  ``max_dense_terms``, and at most ``dense_budget`` floats in all: 128 MB) are scored with one
  dense product against a ``terms x names`` block;
* the remaining (rarer) n-grams are scored with a sparse x sparse product whose postings
  are short, written into the same chunk buffer;
* the top k of each row is found without sorting rows: the k-th largest of the maxima of
  fixed-size column blocks is a lower bound of the row's k-th score, so only the few entries
  at or above it are gathered and ordered (score descending, then name index ascending).

Where the CPU declares native bfloat16 arithmetic (the ``amx_bf16`` or ``avx512_bf16`` flag;
``precision="auto"`` reads the flags, never a timing run) the dense block is multiplied in bf16 as a *pre-filter*: with fp32
accumulation the bf16 partial score is within ``BF16_ERR`` (0.0125 > 3 * 2**-8) of the exact
one, so every name within ``2 * BF16_ERR`` of the k-th pre-filter score is kept and those
few candidates (about 45 per query on MEDIC) are rescored exactly in float32; names left out
provably score below the k-th. ``precision="fp32"`` always uses the float32 BLAS product.

The result is exact (the same scores as the brute-force product; ties broken by the lower
name index). Repeated query strings are scored once. Rows with fewer than k names sharing
any n-gram are filled with zero-score names in index order. Chunks run on ``n_threads``
threads (BLAS, torch and scipy release the GIL).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import sgemm

from kgnorm.linking.cpu_features import declared_bf16

try:  # accumulating CSR -> dense kernel (B += A); stable for years, private name
    from scipy.sparse._sparsetools import csr_todense as _csr_todense
except ImportError:  # pragma: no cover
    _csr_todense = None

_TINY = np.float32(np.finfo(np.float32).tiny)
PRECISIONS = ("auto", "fp32", "bf16")
# bf16 inputs and output with fp32 accumulation err by at most (3 * 2**-8 + 2**-16) ~ 0.0118
# on a partial cosine (<= 1); candidates are kept within twice this bound of the k-th score
BF16_ERR = 0.0125
# queries a sparse product of the rare part: its result holds (12 bytes) most of the names a row
# shares an n-gram with, so 32 queries over MeSH's chemical names made a 60 MB one a thread
RARE_ROWS = 8


def auto_uses_bf16() -> bool:
    """What ``precision="auto"`` resolves to: ``KGNORM_SPARSE_PRECISION=fp32|bf16`` when set
    (to force one path everywhere, e.g. a test run), else the CPU flags."""
    return declared_bf16("KGNORM_SPARSE_PRECISION")



def topk_chunk(take: Callable[[np.ndarray], sp.csr_matrix], n: int, q: sp.csr_matrix, qd: np.ndarray | None,
               qr: sp.csr_matrix, dt: np.ndarray | None, dtb, rt: sp.csr_matrix, k: int, bs: int, n_pad: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Top k of one chunk of queries over `n` names; ``take(rows)``: those names' float32 tf-idf
    rows (the bf16 pre-filter's candidates are rescored exactly from them)."""
    c = qr.shape[0]
    S = np.empty((c, n_pad), dtype=np.float32)
    margin = np.float32(0.0)
    if qd is None or not qd.size:
        S[...] = 0
    elif dtb is not None:
        # bf16 pre-filter: |approx - exact| <= BF16_ERR on the dense terms
        import torch

        torch.from_numpy(S).copy_(torch.from_numpy(qd).to(torch.bfloat16) @ dtb)
        margin = np.float32(2 * BF16_ERR)
    else:
        # S = qd @ dt, written straight into S (C-ordered S is Fortran S.T)
        sgemm(1.0, dt.T, np.ascontiguousarray(qd).T, beta=0.0, c=S.T, overwrite_c=1)
    # rare part: S += qr @ rt (exact)
    for a in range(0, c if qr.nnz else 0, RARE_ROWS):  # a few queries a product: its result is near dense
        R = qr[a:a + RARE_ROWS] @ rt
        if _csr_todense is not None:
            _csr_todense(R.shape[0], n_pad, R.indptr, R.indices, R.data, S[a:a + RARE_ROWS])
        else:  # pragma: no cover - scipy without the private kernel
            S[a:a + RARE_ROWS] += R.toarray()
    # lower bound of each row's k-th score: the k-th largest group maximum, where
    # group g holds the columns g, g + nb, g + 2 nb, ... (bs columns each); with the
    # bf16 pre-filter everything within 2 * margin of it is a candidate
    nb = n_pad // bs
    gmax = S.reshape(c, bs, nb).max(axis=1)
    if nb > k:
        th = np.partition(gmax, nb - k, axis=1)[:, nb - k] - margin
    else:
        th = np.zeros(c, np.float32)
    th = np.maximum(th, _TINY)
    r, g = np.nonzero(gmax >= th[:, None])
    cols = g[:, None] + nb * np.arange(bs)
    vals = S[r[:, None], cols]
    keep = vals >= th[r][:, None]
    r = np.broadcast_to(r[:, None], cols.shape)[keep]
    col, v = cols[keep], vals[keep]
    if margin > 0 and len(r):  # exact scores of the candidates
        v = np.asarray(q[r].multiply(take(col)).sum(axis=1), dtype=np.float32).ravel()
        pos_ = v > 0
        r, col, v = r[pos_], col[pos_], v[pos_]
    order = np.lexsort((col, -v, r))
    r, col, v = r[order], col[order], v[order]
    cnt = np.bincount(r, minlength=c)
    first = np.concatenate(([0], np.cumsum(cnt)[:-1]))
    full = cnt >= k
    if full.all():
        pos = first[:, None] + np.arange(k)
        return v[pos], col[pos].astype(np.int64)
    out_s = np.zeros((c, k), np.float32)
    out_i = np.zeros((c, k), np.int64)
    if full.any():
        pos = first[full][:, None] + np.arange(k)
        out_s[full] = v[pos]
        out_i[full] = col[pos]
    for i in np.flatnonzero(~full):  # fewer than k names share an n-gram with it
        m = int(cnt[i])
        got = col[first[i]:first[i] + m]
        out_s[i, :m] = v[first[i]:first[i] + m]
        out_i[i, :m] = got
        taken = np.zeros(n, bool)
        taken[got] = True
        out_i[i, m:] = np.flatnonzero(~taken)[:k - m]
    return out_s, out_i
