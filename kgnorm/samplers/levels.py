"""Level triplets for DAN-style training (Fivez et al. 2021).

Anchor: every training name of a :class:`~kgnorm.graph.levels.LevelSplit`; positive: another
name sharing one of the anchor's level-K classes; negative: a name sharing none of them,
drawn by distance-weighted sampling over the current embeddings (Wu et al. 2017, "Sampling
matters in deep embedding learning"), or uniformly at random when no embeddings are given.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import scipy.sparse as sp

from kgnorm.errors import KgnormError
from kgnorm.graph.levels import LevelSplit
from kgnorm.samplers.base import EpochSeeded, Triplet

__all__ = ["LevelTripletSampler", "distance_weighted_negatives"]


def distance_weighted_negatives(embeddings: np.ndarray, anchors: np.ndarray,
                                labels: sp.csr_matrix, rng: np.random.Generator,
                                cutoff: float = 0.5, nonzero_loss_cutoff: float = 1.4,
                                chunk_size: int = 256,
                                n_candidates: int | None = None) -> np.ndarray:
    """One negative per anchor, drawn with probability ∝ 1/q(d) (Wu et al. 2017).

    ``embeddings``: (n, dim) vectors of all items (L2-normalised here); ``anchors``: item
    indices; ``labels``: (n, C) 0/1 class membership — a candidate is valid when it shares
    no class with the anchor. ``q(d) ∝ d^(dim-2) (1 - d²/4)^((dim-3)/2)`` is the density of
    pairwise distances of uniform points on the unit sphere; distances are clipped below at
    ``cutoff`` and candidates farther than ``nonzero_loss_cutoff`` get weight 0. When no
    valid candidate is within that cutoff the draw is uniform over valid candidates.
    Returns negative indices (-1 where an anchor has no valid candidate at all).
    """
    emb = np.asarray(embeddings, dtype=np.float32)
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    emb = emb / np.maximum(norms, 1e-12)
    n, dim = emb.shape
    dim = max(dim, 4)
    anchors = np.asarray(anchors, dtype=np.int64)
    labels = sp.csr_matrix(labels, dtype=np.float32)
    labels_t = sp.csc_matrix(labels.T)
    c2 = np.float32(cutoff * cutoff)
    nz2 = np.float32(nonzero_loss_cutoff * nonzero_loss_cutoff)
    out = np.full(len(anchors), -1, dtype=np.int64)
    for s in range(0, len(anchors), chunk_size):
        a = anchors[s:s + chunk_size]
        if n_candidates is not None and n_candidates < n:
            cand = np.sort(rng.choice(n, size=n_candidates, replace=False))
        else:
            cand = np.arange(n)
        cos = emb[a] @ emb[cand].T
        d2 = np.clip(2.0 - 2.0 * cos, 0.0, 4.0, out=cos)              # squared distances
        share = (labels[a] @ labels_t[:, cand]).toarray() > 0
        valid = ~share & (a[:, None] != cand[None, :])
        near = valid & (d2 < nz2)
        # log(1/q(d)) with d clipped below at `cutoff`, computed on d² in float32
        d2c = np.maximum(d2, c2)
        logw = np.log(d2c)
        logw *= np.float32((2.0 - dim) / 2.0)
        logw -= np.float32((dim - 3) / 2.0) * np.log(np.maximum(1.0 - 0.25 * d2c, 1e-6))
        logw[~near] = -np.inf
        rowmax = logw.max(axis=1, keepdims=True)
        has_near = np.isfinite(rowmax[:, 0])
        rowmax[~has_near] = 0.0
        logw -= rowmax
        w = np.exp(logw, out=logw)
        # rows without any valid candidate in range: uniform over valid candidates
        w[~has_near] = valid[~has_near]
        cum = np.cumsum(w, axis=1, dtype=np.float64)
        tot = cum[:, -1]
        u = rng.random(len(a)) * tot
        idx = np.fromiter((np.searchsorted(cum[r], u[r], side="right") for r in range(len(a))),
                          dtype=np.int64, count=len(a))
        idx = np.minimum(idx, len(cand) - 1)
        idx = cand[idx]
        idx[tot <= 0] = -1
        out[s:s + chunk_size] = idx
    return out


class LevelTripletSampler(EpochSeeded):
    """(anchor, positive, negative) triplets over the training names of ``split`` at
    level ``level``.

    With ``preferred_prob`` > 0, that share of positives is drawn from the
    ``preferred_positives`` items of the anchor's class when it has any (DAN training uses it
    to pull names towards their class concept's own names).
    Distance-weighted negatives for a chunk of 256 anchors are drawn from ``n_candidates``
    random training names (None: all of them).
    ``sample(embeddings)`` returns an (m, 3) int array of indices into ``self.items``
    (``split.train``), ``triplets_per_name`` triplets per anchor in a shuffled order;
    anchors whose classes have no other training name are skipped. Iterating yields
    :class:`~kgnorm.samplers.base.Triplet` of names (uniform negatives).
    """

    def __init__(self, split: LevelSplit, level: int, seed: int = 0,
                 triplets_per_name: int = 1, cutoff: float = 0.5,
                 nonzero_loss_cutoff: float = 1.4, n_candidates: int | None = 1024,
                 preferred_positives: "np.ndarray | list[int] | None" = None,
                 preferred_prob: float = 0.0) -> None:
        super().__init__(seed)
        if level not in split.classes:
            raise KgnormError(f"level {level} is not in the split (levels 1..{split.n_levels})")
        self.level = int(level)
        self.items = list(split.train)
        self.triplets_per_name = int(triplets_per_name)
        self.cutoff = cutoff
        self.nonzero_loss_cutoff = nonzero_loss_cutoff
        self.n_candidates = n_candidates
        self.class_index = {c: i for i, c in enumerate(split.classes[level])}
        self.item_classes = [np.array(sorted(self.class_index[c] for c in it.labels[level]),
                                      dtype=np.int64) for it in self.items]
        n, C = len(self.items), len(self.class_index)
        rows = np.repeat(np.arange(n), [len(c) for c in self.item_classes])
        cols = np.concatenate(self.item_classes) if n else np.zeros(0, np.int64)
        self.labels = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, C))
        csc = self.labels.tocsc()
        self.members = [csc.indices[csc.indptr[c]:csc.indptr[c + 1]] for c in range(C)]
        # optional: with probability `preferred_prob` the positive is drawn from the
        # `preferred_positives` items of the anchor's class (e.g. the class concept's own names)
        self.preferred_prob = float(preferred_prob)
        pref = np.zeros(n, dtype=bool)
        if preferred_positives is not None:
            pref[np.asarray(preferred_positives, dtype=np.int64)] = True
        self.preferred = [m[pref[m]] for m in self.members]
        self.anchors = np.array([i for i in range(n)
                                 if any(len(self.members[c]) > 1 for c in self.item_classes[i])],
                                dtype=np.int64)

    def __len__(self) -> int:
        return len(self.anchors) * self.triplets_per_name

    def shares_class(self, i: int, j: int) -> bool:
        return bool(np.intersect1d(self.item_classes[i], self.item_classes[j]).size)

    def _positives(self, anchors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        pos = np.empty(len(anchors), dtype=np.int64)
        for t, a in enumerate(anchors):
            cls = [c for c in self.item_classes[a] if len(self.members[c]) > 1]
            c = cls[int(rng.integers(len(cls)))]
            mem = self.members[c]
            if self.preferred_prob > 0 and rng.random() < self.preferred_prob:
                pm = self.preferred[c]
                pm = pm[pm != a]
                if len(pm):
                    pos[t] = pm[int(rng.integers(len(pm)))]
                    continue
            j = int(rng.integers(len(mem) - 1))
            jj = mem[j]
            if jj == a:  # skip the anchor itself
                jj = mem[len(mem) - 1]
            pos[t] = jj
        return pos

    def _random_negatives(self, anchors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n = len(self.items)
        neg = np.full(len(anchors), -1, dtype=np.int64)
        for t, a in enumerate(anchors):
            for _ in range(64):
                j = int(rng.integers(n))
                if not self.shares_class(a, j):
                    neg[t] = j
                    break
            else:  # rejection failed: draw from the explicit set of valid names
                share = (self.labels[a] @ self.labels.T).toarray()[0] > 0
                valid = np.flatnonzero(~share)
                if len(valid):
                    neg[t] = int(valid[rng.integers(len(valid))])
        return neg

    def sample(self, embeddings: np.ndarray | None = None) -> np.ndarray:
        """Triplet indices for the current epoch (see :meth:`set_epoch`).

        ``embeddings``: current (n_items, dim) embeddings of ``self.items`` for
        distance-weighted negatives; ``None`` draws negatives uniformly among the names of
        other classes. Triplets without any valid negative are dropped.
        """
        rng = self.rng()
        anchors = np.tile(self.anchors, self.triplets_per_name)
        anchors = anchors[rng.permutation(len(anchors))]
        pos = self._positives(anchors, rng)
        if embeddings is None:
            neg = self._random_negatives(anchors, rng)
        else:
            if len(embeddings) != len(self.items):
                raise KgnormError(f"got {len(embeddings)} embeddings for {len(self.items)} names")
            neg = distance_weighted_negatives(embeddings, anchors, self.labels, rng,
                                              self.cutoff, self.nonzero_loss_cutoff,
                                              n_candidates=self.n_candidates)
            miss = neg < 0  # no valid candidate in the drawn subset: uniform fallback
            if miss.any():
                neg[miss] = self._random_negatives(anchors[miss], rng)
        keep = neg >= 0
        return np.stack([anchors[keep], pos[keep], neg[keep]], axis=1)

    def triplets(self, embeddings: np.ndarray | None = None) -> list[Triplet]:
        out = []
        for a, p, n in self.sample(embeddings):
            A, P, N = self.items[a], self.items[p], self.items[n]
            out.append(Triplet(A.name, P.name, N.name, A.concept_uid, P.concept_uid,
                               N.concept_uid))
        return out

    def __iter__(self) -> Iterator[Triplet]:
        return iter(self.triplets())
