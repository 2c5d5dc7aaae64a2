"""Hierarchy evaluation (DAN §4.3, Fivez et al. 2021) on a :class:`~kgnorm.graph.levels.LevelSplit`.

* Semantic similarity, mAP per level k: each query name (the test names by default) ranks
  all other names of the pool (train + test names) by cosine; a pool name is relevant when
  it shares a level-k class with the query; average precision per query, mean over queries
  (queries without any relevant pool name are skipped; a relevant name tied with an
  irrelevant one is ranked after it).
* Hypernym detection, MRR per level k: each query ranks the level-k classes (the split's
  non-dead-end classes) by cosine; reciprocal rank of the first correct class, mean over
  queries. Our choice: a class is scored by its BEST name among all its names (preferred
  name and synonyms), as :func:`kgnorm.linking.hypernyms.rank_hypernyms` does; pass
  ``class_names="preferred"`` to score only preferred names. An exact tie between the best
  correct class and wrong classes counts half of the tied wrong classes ahead of it.

Everything is vectorised in chunks of queries (``chunk_size`` x pool scores at a time), and
each distinct text is encoded once. ``encode_fn(list[str])`` may return a dense array or a
scipy sparse matrix (e.g. character tf-idf).
"""
from __future__ import annotations

import time
from typing import Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from kgnorm.errors import KgnormError
from kgnorm.linking.hypernyms import cosine_block, encode_unique, group_max
from kgnorm.graph.levels import LevelName, LevelSplit

__all__ = ["evaluate_hierarchy", "label_matrix", "mean_average_precision",
           "hypernym_mrr", "word_vector_encoder", "char_tfidf_encoder", "format_results"]

EncodeFn = Callable[[list[str]], object]


def label_matrix(items: Sequence[LevelName], level: int, classes: Sequence[str]) -> sp.csr_matrix:
    """(len(items), len(classes)) 0/1 matrix of level-``level`` class membership."""
    index = {c: i for i, c in enumerate(classes)}
    rows, cols = [], []
    for r, it in enumerate(items):
        for c in it.labels.get(level, ()):
            j = index.get(c)
            if j is not None:
                rows.append(r)
                cols.append(j)
    return sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                         shape=(len(items), len(classes)))


def mean_average_precision(q_emb: object, pool_emb: object,
                           q_labels: dict[int, sp.csr_matrix],
                           pool_labels: dict[int, sp.csr_matrix],
                           self_index: np.ndarray | None = None,
                           chunk_size: int = 256) -> dict[int, float]:
    """mAP per level. Embeddings are normalised rows; ``self_index[i]`` is the pool row of
    query i (excluded from its ranking) or -1.

    The i-th best relevant pool name has rank i + the number of irrelevant pool names scoring
    at least as high (a tie with an irrelevant name counts against it, ties among relevant
    names do not matter); each chunk of query rows is sorted once for all levels.
    """
    n_q = q_emb.shape[0]
    levels = list(q_labels)
    sums = {k: 0.0 for k in levels}
    counts = {k: 0 for k in levels}
    pool_t = {k: sp.csr_matrix(pool_labels[k].T) for k in levels}
    for s in range(0, n_q, chunk_size):
        e = min(n_q, s + chunk_size)
        scores = cosine_block(q_emb[s:e], pool_emb)
        rows = np.arange(e - s)
        ok = np.zeros(e - s, dtype=bool)
        if self_index is not None:
            si = np.asarray(self_index[s:e])
            ok = si >= 0
            scores[rows[ok], si[ok]] = -np.inf
        sorted_asc = np.sort(scores, axis=1)
        n_p = scores.shape[1] - ok.astype(np.int64)        # candidates per query
        width = scores.shape[1]
        for k in levels:
            rel = (q_labels[k][s:e] @ pool_t[k]).toarray() > 0
            if self_index is not None:
                rel[rows[ok], si[ok]] = False
            for r in range(e - s):
                hit_asc = np.sort(scores[r, rel[r]])
                if hit_asc.size == 0:
                    continue
                hit = hit_asc[::-1]
                # rank of the i-th relevant name = i + irrelevant names scoring >= it
                ge_all = width - np.searchsorted(sorted_asc[r], hit, side="left")
                ge_rel = hit.size - np.searchsorted(hit_asc, hit, side="left")
                pos = np.arange(1, hit.size + 1)
                rank = pos + np.maximum(ge_all - ge_rel, 0)
                rank = np.minimum(rank, n_p[r])
                ap = float((pos / rank).mean())
                sums[k] += ap
                counts[k] += 1
    return {k: (sums[k] / counts[k] if counts[k] else float("nan")) for k in levels}


def hypernym_mrr(q_emb: object, q_labels: dict[int, sp.csr_matrix],
                 class_emb: dict[int, object], class_starts: dict[int, np.ndarray],
                 chunk_size: int = 512) -> dict[int, float]:
    """MRR per level. ``class_emb[k]``: normalised rows of the level-k class names, grouped
    by class in the column order of ``q_labels[k]``; ``class_starts[k]`` the first row of
    each class."""
    out: dict[int, float] = {}
    n_q = q_emb.shape[0]
    for k in q_labels:
        total, n = 0.0, 0
        for s in range(0, n_q, chunk_size):
            e = min(n_q, s + chunk_size)
            conc = group_max(cosine_block(q_emb[s:e], class_emb[k]), class_starts[k])
            correct = q_labels[k][s:e].toarray() > 0
            has = correct.any(axis=1)
            best = np.where(correct, conc, -np.inf).max(axis=1, keepdims=True)
            wrong = ~correct
            ahead = (wrong & (conc > best)).sum(axis=1)
            ties = (wrong & (conc == best)).sum(axis=1)
            rank = 1.0 + ahead + 0.5 * ties
            total += float((1.0 / rank[has]).sum())
            n += int(has.sum())
        out[k] = total / n if n else float("nan")
    return out


def evaluate_hierarchy(encode_fn: EncodeFn, split: LevelSplit,
                       levels: Iterable[int] = (1, 2, 3, 4), queries: str = "test",
                       class_names: str = "all", metrics: Sequence[str] = ("map", "mrr"),
                       chunk_size: int = 256) -> dict:
    """Semantic-similarity mAP and hypernym-detection MRR per level (see module docstring).

    ``queries``: "test" (pool = train + test names) or "val" (pool = train + val names).
    Returns ``{"map": {k: float}, "mrr": {k: float}, "levels": [...], "queries": int,
    "pool": int, "class_names": str, "seconds": float}``.
    """
    t0 = time.perf_counter()
    levels = [int(k) for k in levels]
    for k in levels:
        if k not in split.classes:
            raise KgnormError(f"level {k} is not in the split (levels 1..{split.n_levels})")
    if queries not in ("test", "val"):
        raise KgnormError(f"queries must be 'test' or 'val' (got {queries!r})")
    if class_names not in ("all", "preferred"):
        raise KgnormError(f"class_names must be 'all' or 'preferred' (got {class_names!r})")
    q_items = split.test if queries == "test" else split.val
    if not q_items:
        raise KgnormError(f"the split has no {queries} names to evaluate")
    pool_items = list(split.train) + list(q_items)
    self_index = np.arange(len(split.train), len(pool_items), dtype=np.int64)

    texts = [it.name for it in pool_items]
    class_starts: dict[int, np.ndarray] = {}
    class_slices: dict[int, tuple[int, int]] = {}
    if "mrr" in metrics:
        for k in levels:
            starts = []
            lo = len(texts)
            for c in split.classes[k]:
                ns = split.class_names[k][c]
                ns = ns[:1] if class_names == "preferred" else ns
                starts.append(len(texts) - lo)
                texts.extend(ns)
            class_starts[k] = np.asarray(starts, dtype=np.int64)
            class_slices[k] = (lo, len(texts))
    emb, rows = encode_unique(encode_fn, texts)
    pool_emb = emb[rows[:len(pool_items)]]
    q_emb = pool_emb[len(split.train):]

    out: dict = {"levels": levels, "queries": len(q_items), "pool": len(pool_items),
                 "class_names": class_names}
    q_labels = {k: label_matrix(q_items, k, split.classes[k]) for k in levels}
    if "map" in metrics:
        pool_labels = {k: label_matrix(pool_items, k, split.classes[k]) for k in levels}
        out["map"] = mean_average_precision(q_emb, pool_emb, q_labels, pool_labels,
                                            self_index, chunk_size)
    if "mrr" in metrics:
        class_emb = {k: emb[rows[class_slices[k][0]:class_slices[k][1]]] for k in levels}
        out["mrr"] = hypernym_mrr(q_emb, q_labels, class_emb, class_starts, chunk_size)
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


# ---------------------------------------------------------------------- baselines
def word_vector_encoder(wordvecs) -> EncodeFn:
    """Baseline: the mean of a name's word vectors (:meth:`WordVectors.average`)."""
    return lambda names: wordvecs.average(list(names))


def char_tfidf_encoder(fit_texts: Iterable[str], ngram_range: tuple[int, int] = (2, 4),
                       analyzer: str = "char_wb", **kw) -> EncodeFn:
    """Baseline: character n-gram tf-idf (sklearn, sparse, L2-normalised), fitted on
    ``fit_texts`` (e.g. every name of the split)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(analyzer=analyzer, ngram_range=ngram_range, lowercase=True,
                          sublinear_tf=True, dtype=np.float32, **kw)
    vec.fit(list(fit_texts))
    fn = lambda names: vec.transform(list(names))  # noqa: E731
    fn.vectorizer = vec  # type: ignore[attr-defined]
    return fn


def format_results(results: dict[str, dict], levels: Sequence[int] | None = None) -> str:
    """A text table: one row per method, mAP and MRR columns per level."""
    if not results:
        return ""
    first = next(iter(results.values()))
    levels = list(levels or first["levels"])
    head = "method".ljust(14) + "".join(f"  mAP@{k}" for k in levels) + \
        "".join(f"  MRR@{k}" for k in levels)
    lines = [head]
    for name, r in results.items():
        row = name[:14].ljust(14)
        row += "".join(f"  {r.get('map', {}).get(k, float('nan')):.3f}" for k in levels)
        row += "".join(f"  {r.get('mrr', {}).get(k, float('nan')):.3f}" for k in levels)
        lines.append(row)
    return "\n".join(lines)
