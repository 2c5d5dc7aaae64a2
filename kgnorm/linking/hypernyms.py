"""Rank candidate hypernym concepts for free names by cosine similarity.

A concept is scored by its best-matching name (preferred name or synonym). Works with any
``encode_fn(list[str]) -> array`` (dense numpy, or scipy sparse such as a tf-idf matrix).
"""
from __future__ import annotations

from typing import Callable, Mapping, NamedTuple, Sequence

import numpy as np
import scipy.sparse as sp

from kgnorm.errors import KgnormError

__all__ = ["HypernymHit", "rank_hypernyms", "encode_unique", "normalize_rows", "cosine_block",
           "group_max"]

EncodeFn = Callable[[list[str]], object]


class HypernymHit(NamedTuple):
    query: str
    rank: int      # 1-based
    uid: str
    name: str      # the candidate's best-matching name
    score: float   # cosine


def normalize_rows(m: object) -> np.ndarray | sp.csr_matrix:
    """L2-normalise rows of a dense array (as float32) or a sparse matrix (zero rows stay 0)."""
    if sp.issparse(m):
        m = sp.csr_matrix(m, dtype=np.float32)
        n = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
        n[n == 0] = 1.0
        return sp.csr_matrix(sp.diags(1.0 / n).dot(m), dtype=np.float32)
    a = np.asarray(m, dtype=np.float32)
    if a.ndim != 2:
        raise KgnormError(f"an encoder returned an array of shape {a.shape}; expected 2-D")
    n = np.linalg.norm(a, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return a / n


def encode_unique(encode_fn: EncodeFn, texts: Sequence[str]) -> tuple[object, np.ndarray]:
    """Encode each distinct text once. Returns (normalised matrix of distinct texts,
    row index of each input text)."""
    index: dict[str, int] = {}
    rows = np.empty(len(texts), dtype=np.int64)
    uniq: list[str] = []
    for i, t in enumerate(texts):
        j = index.get(t)
        if j is None:
            j = index[t] = len(uniq)
            uniq.append(t)
        rows[i] = j
    if not uniq:
        return np.zeros((0, 1), np.float32), rows
    emb = encode_fn(uniq)
    if emb is None or emb.shape[0] != len(uniq):
        got = None if emb is None else emb.shape
        raise KgnormError(f"encoder returned {got} for {len(uniq)} texts")
    return normalize_rows(emb), rows


def cosine_block(q: object, c: object) -> np.ndarray:
    """Dense (len(q), len(c)) matrix of dot products of normalised rows."""
    if sp.issparse(q) or sp.issparse(c):
        q = sp.csr_matrix(q)
        c = sp.csr_matrix(c)
        return np.asarray((q @ c.T).toarray(), dtype=np.float32)
    return np.asarray(q, np.float32) @ np.asarray(c, np.float32).T


def group_max(scores: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Max over contiguous column groups beginning at ``starts`` (each group non-empty)."""
    return np.maximum.reduceat(scores, starts, axis=1)


def rank_hypernyms(encode_fn: EncodeFn, query_names: Sequence[str],
                   candidate_uids: Sequence[str],
                   candidate_names: Mapping[str, Sequence[str]] | Sequence[Sequence[str] | str],
                   top_k: int = 5, batch_size: int = 2048) -> list[HypernymHit]:
    """The ``top_k`` candidate concepts for each query name, best first.

    ``candidate_names``: per uid its names (a mapping uid -> names, or a sequence aligned
    with ``candidate_uids``; a bare string counts as one name). A concept's score is the
    cosine of its best name; concepts without names are skipped. Returns hits ordered by
    query (input order) then rank; each query gives ``min(top_k, concepts)`` hits.
    """
    if top_k < 1:
        raise KgnormError(f"top_k must be >= 1 (got {top_k})")
    uids: list[str] = []
    names: list[str] = []
    starts: list[int] = []
    for i, uid in enumerate(candidate_uids):
        ns = candidate_names.get(uid, ()) if isinstance(candidate_names, Mapping) \
            else candidate_names[i]
        if isinstance(ns, str):
            ns = [ns]
        ns = [n for n in ns if n]
        if not ns:
            continue
        uids.append(uid)
        starts.append(len(names))
        names.extend(ns)
    if not uids:
        raise KgnormError("no candidate concept has a name")
    queries = list(query_names)
    if not queries:
        return []
    cand_emb, cand_rows = encode_unique(encode_fn, names)
    q_emb, q_rows = encode_unique(encode_fn, queries)
    starts_a = np.asarray(starts, dtype=np.int64)
    bounds = np.append(starts_a, len(names))
    k = min(top_k, len(uids))
    # score against distinct candidate texts, then map back to the per-concept name columns
    out: list[HypernymHit] = []
    q_uniq_hits: dict[int, list[tuple[int, int, float]]] = {}
    n_q = q_emb.shape[0]
    for s in range(0, n_q, batch_size):
        block = cosine_block(q_emb[s:s + batch_size], cand_emb)[:, cand_rows]
        conc = group_max(block, starts_a)
        if k < conc.shape[1]:
            top = np.argpartition(-conc, k - 1, axis=1)[:, :k]
        else:
            top = np.tile(np.arange(conc.shape[1]), (conc.shape[0], 1))
        top_scores = np.take_along_axis(conc, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        top = np.take_along_axis(top, order, axis=1)
        for r in range(block.shape[0]):
            hits = []
            for c in top[r]:
                lo, hi = bounds[c], bounds[c + 1]
                j = lo + int(np.argmax(block[r, lo:hi]))
                hits.append((int(c), int(j), float(conc[r, c])))
            q_uniq_hits[s + r] = hits
    for qi, q in enumerate(queries):
        for rank, (c, j, score) in enumerate(q_uniq_hits[int(q_rows[qi])], start=1):
            out.append(HypernymHit(q, rank, uids[c], names[j], score))
    return out
