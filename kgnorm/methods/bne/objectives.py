"""BNE's training objectives (Phan, Sun & Tay 2019) and the hierarchy terms added here.

With ``e(s)`` the network output (:class:`~kgnorm.methods.bne.model.BNE`) and ``P`` the
target map (:mod:`kgnorm.methods.bne.train`), for a batch of B anchors ``s_i`` of
concepts ``c_i``:

* synonym:     ``S_ij = e(s_i) . e(t_j)`` where ``t_i`` is another name of ``c_i`` drawn
  for this epoch (rows whose concept has a single training name are left out);
* conceptual:  ``S_ij = P e(s_i) . g(c_j)`` with ``g(c)`` the mean of ``q`` over the
  concept's training names;
* contextual:  ``S_ij = P e(s_i) . q(s_j)`` with ``q(s)`` the mean of the name's word
  vectors (Option 2 of the paper);

each a logistic loss with in-batch negatives (:func:`logistic_inbatch_loss`):
``mean_i [ -log sigma(S_ii) + mean_{j in N(i)} -log sigma(-S_ij) ]`` where ``N(i)`` are the
batch columns whose name/concept is not one of ``s_i``'s concepts (a synonym drawn for
another anchor of the same concept is no negative). ``q`` and ``g`` are L2-normalized so the
three scores live on the same scale.

Hierarchy terms (kgnorm's, off unless the trainer samples them; the paper has none):

* siblings (synonym objective): the anchor's sampled sibling-concept names ``n`` are hard
  negatives, ``mean_i mean_n -log sigma(-e(s_i) . e(n))`` over the anchors that got one;
  averaged on their own so that one hard negative is not drowned by B in-batch ones;
* parents (conceptual objective): the anchor's sampled parent-concept names ``p`` are
  positives, ``mean_i mean_p -log sigma(P e(s_i) . q(p))``.

loss = w_syn L_syn + w_con L_con + w_ctx L_ctx + w_sib L_sib + w_par L_par.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from kgnorm.errors import KgnormError

__all__ = ["inbatch_scores", "logistic_inbatch_loss", "pair_loss", "prototypes", "l2_rows",
           "BatchData", "batch_loss"]


def inbatch_scores(anchors: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``[B, B']`` dot products: row i = anchor i against every target of the batch."""
    return anchors @ targets.T


def logistic_inbatch_loss(scores: torch.Tensor, negative_mask: torch.Tensor | None = None
                          ) -> torch.Tensor:
    """``mean_i [softplus(-S_ii) + mean_{j: mask_ij} softplus(S_ij)]`` for a square score
    matrix whose diagonal holds the positives. ``negative_mask [B, B]`` (bool) says which
    off-diagonal cells are negatives (default: all); the diagonal is never a negative. A
    row without negatives contributes its positive term only."""
    B = scores.shape[0]
    if scores.ndim != 2 or scores.shape[1] != B:
        raise KgnormError(f"logistic_inbatch_loss expects a square score matrix, got "
                          f"{tuple(scores.shape)}")
    if B == 0:
        return scores.sum() * 0.0
    eye = torch.eye(B, dtype=torch.bool, device=scores.device)
    mask = ~eye if negative_mask is None else (negative_mask.to(scores.device) & ~eye)
    pos = F.softplus(-scores.diagonal())
    negs = F.softplus(scores) * mask
    cnt = mask.sum(dim=1)
    neg = negs.sum(dim=1) / cnt.clamp(min=1)
    return (pos + neg).mean()


def pair_loss(anchors: torch.Tensor, others: torch.Tensor, rows: torch.Tensor,
              positive: bool) -> torch.Tensor:
    """``mean_i mean_{p: rows_p = i} -log sigma(+-anchors_i . others_p)`` over the anchors
    that own at least one pair (``rows [P]`` = the anchor row of each ``others`` row);
    ``positive`` pulls the pairs together, otherwise they are pushed apart."""
    if len(rows) == 0:
        return anchors.sum() * 0.0
    s = (anchors[rows] * others).sum(dim=-1)
    per_pair = F.softplus(-s if positive else s)
    n = anchors.shape[0]
    total = per_pair.new_zeros(n).index_add(0, rows, per_pair)
    cnt = torch.bincount(rows, minlength=n)
    have = cnt > 0
    return (total[have] / cnt[have]).mean()


def l2_rows(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(n > 0, n, 1.0)).astype(np.float32)


def prototypes(q: np.ndarray, concept_of: Sequence[int], n_concepts: int) -> np.ndarray:
    """``g(c)`` = mean of ``q`` over the names of concept c, L2-normalized (zeros stay 0)."""
    q = np.asarray(q, np.float32)
    g = np.zeros((n_concepts, q.shape[1]), np.float64)
    np.add.at(g, np.asarray(concept_of, np.int64), q)
    cnt = np.bincount(np.asarray(concept_of, np.int64), minlength=n_concepts).astype(np.float64)
    g /= np.maximum(cnt, 1)[:, None]
    return l2_rows(g.astype(np.float32))


@dataclass
class BatchData:
    """What :func:`batch_loss` reads: the training names (item i = ``names[i]`` of concept
    ``concept[i]``), every concept carrying each name, the fixed targets ``q`` (per item) and
    ``g`` (per concept), and the loss weights."""

    names: list[str]
    concept: list[int]
    name_concepts: dict[str, set[int]]
    q: torch.Tensor
    g: torch.Tensor
    weights: dict[str, float]


def batch_loss(model, data: BatchData, sel: np.ndarray, syn: np.ndarray,
               siblings: Sequence[Sequence[int]] | None = None,
               parents: Sequence[Sequence[int]] | None = None
               ) -> tuple[torch.Tensor, dict[str, float]]:
    """The weighted sum of the objectives for anchors ``sel`` (item indices). ``syn[i]``: the
    synonym item drawn for item i this epoch (-1: none); ``siblings[i]`` / ``parents[i]``: the
    sibling / parent items sampled for item i (None: that term is off)."""
    w = data.weights
    names, name_concepts = data.names, data.name_concepts
    has_syn = syn[sel] >= 0
    syn_rows = syn[sel][has_syn]
    anchor_c = [name_concepts[names[i]] for i in sel]
    # hard negatives: sibling items that carry none of the anchor's concepts
    sib_pairs = [] if siblings is None or not w["sib"] else [
        (r, j) for r, i in enumerate(sel) for j in siblings[i]
        if not (name_concepts[names[j]] & anchor_c[r])]
    texts = ([names[i] for i in sel] + [names[j] for j in syn_rows]
             + [names[j] for _, j in sib_pairs])
    emb = model.embed(texts)
    B = len(sel)
    a = emb[:B]
    dev = a.device
    parts: dict[str, torch.Tensor] = {}
    if len(syn_rows) >= 1 and w["syn"]:
        t = emb[B:B + len(syn_rows)]
        rows = np.flatnonzero(has_syn)
        S = inbatch_scores(a[torch.from_numpy(rows).to(dev)], t)
        mask = torch.tensor([[not (name_concepts[names[j]] & anchor_c[r]) for j in syn_rows]
                             for r in rows], dtype=torch.bool, device=dev)
        parts["syn"] = logistic_inbatch_loss(S, mask)
    if sib_pairs:
        rows_t = torch.tensor([r for r, _ in sib_pairs], dtype=torch.long, device=dev)
        parts["sib"] = pair_loss(a, emb[B + len(syn_rows):], rows_t, positive=False)
    net = model.net
    pa = net.target_proj(a) if net.target_proj is not None else a
    concept_ids = [data.concept[i] for i in sel]
    if w["con"]:
        S = inbatch_scores(pa, data.g[torch.tensor(concept_ids, device=dev)])
        mask = torch.tensor([[c not in anchor_c[r] for c in concept_ids]
                             for r in range(B)], dtype=torch.bool, device=dev)
        parts["con"] = logistic_inbatch_loss(S, mask)
    if parents is not None and w["par"]:
        par_pairs = [(r, j) for r, i in enumerate(sel) for j in parents[i]]
        if par_pairs:
            rows_t = torch.tensor([r for r, _ in par_pairs], dtype=torch.long, device=dev)
            cols = torch.tensor([j for _, j in par_pairs], dtype=torch.long, device=dev)
            parts["par"] = pair_loss(pa, data.q[cols], rows_t, positive=True)
    if w["ctx"]:
        S = inbatch_scores(pa, data.q[torch.from_numpy(np.asarray(sel)).to(dev)])
        mask = torch.tensor([[not (name_concepts[names[j]] & anchor_c[r]) for j in sel]
                             for r in range(B)], dtype=torch.bool, device=dev)
        parts["ctx"] = logistic_inbatch_loss(S, mask)
    if not parts:
        return a.sum() * 0.0, {}
    loss = sum(w[k] * v for k, v in parts.items())
    return loss, {k: float(v.detach()) for k, v in parts.items()}
