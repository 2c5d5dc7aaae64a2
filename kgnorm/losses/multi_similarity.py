"""Multi-Similarity loss with its pair mining (Wang et al., CVPR 2019), as BioCoM uses it.

For a batch of L2-normalised embeddings with cosine similarities ``S`` and labels ``y``, for
each anchor ``i``: positives ``P_i = {j != i : y_j = y_i}``, negatives ``N_i = {j : y_j != y_i}``.

Mining (ε = 0.1): keep a negative ``n`` when ``S_in + ε > min_{p in P_i} S_ip`` and a positive
``p`` when ``S_ip - ε < max_{n in N_i} S_in``. An anchor left without a mined positive or
without a mined negative contributes nothing (as in the authors' code).

Weighting::

    L_i = 1/α · log(1 + Σ_{p mined} exp(-α (S_ip - λ)))
        + 1/β · log(1 + Σ_{n mined} exp( β (S_in - λ)))
    L   = Σ_i L_i / batch size

Defaults α = 2, β = 50, λ = 1 (the BioCoM issue's values; the MS paper's base setting uses
λ = 0.5), all configurable. Computed with masked logsumexp + softplus, so large β does not
overflow.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

__all__ = ["MultiSimilarityLoss", "ms_loss", "mine_pairs", "MiningStats"]

_FILL = -1.0e4  # exp(_FILL) == 0 in float32: stands for "not in the sum"


@dataclass
class MiningStats:
    anchors: int           # anchors contributing (a mined positive and a mined negative)
    positives: int         # mined positive pairs
    negatives: int         # mined negative pairs


def mine_pairs(sim: torch.Tensor, labels: torch.Tensor, epsilon: float = 0.1
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Boolean (B, B) masks of the mined positive and negative pairs of each anchor (row)."""
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool, device=sim.device)
    pos = same & ~eye
    neg = ~same
    s = sim.detach()
    inf = torch.tensor(float("inf"), dtype=s.dtype, device=s.device)
    min_pos = torch.where(pos, s, inf).min(dim=1).values
    max_neg = torch.where(neg, s, -inf).max(dim=1).values
    neg_keep = neg & (s + epsilon > min_pos[:, None])
    pos_keep = pos & (s - epsilon < max_neg[:, None])
    return pos_keep, neg_keep


def ms_loss(embeddings: torch.Tensor, labels: torch.Tensor, alpha: float = 2.0,
            beta: float = 50.0, lam: float = 1.0, epsilon: float = 0.1, mining: bool = True,
            normalize: bool = True) -> tuple[torch.Tensor, MiningStats]:
    """The MS loss of a batch and what the mining kept; `labels` any integer tensor."""
    x = F.normalize(embeddings, dim=-1) if normalize else embeddings
    sim = x @ x.T
    if mining:
        pos, neg = mine_pairs(sim, labels, epsilon)
    else:
        same = labels[:, None] == labels[None, :]
        eye = torch.eye(len(labels), dtype=torch.bool, device=sim.device)
        pos, neg = same & ~eye, ~same
    valid = pos.any(dim=1) & neg.any(dim=1)
    fill = torch.full_like(sim, _FILL)
    pos_lse = torch.logsumexp(torch.where(pos, -alpha * (sim - lam), fill), dim=1)
    neg_lse = torch.logsumexp(torch.where(neg, beta * (sim - lam), fill), dim=1)
    per_anchor = F.softplus(pos_lse) / alpha + F.softplus(neg_lse) / beta
    per_anchor = torch.where(valid, per_anchor, torch.zeros_like(per_anchor))
    loss = per_anchor.sum() / max(len(labels), 1)
    stats = MiningStats(anchors=int(valid.sum()), positives=int((pos & valid[:, None]).sum()),
                        negatives=int((neg & valid[:, None]).sum()))
    return loss, stats


class MultiSimilarityLoss(torch.nn.Module):
    """Module form of :func:`ms_loss`; ``last_stats`` holds the last batch's mining counts."""

    def __init__(self, alpha: float = 2.0, beta: float = 50.0, lam: float = 1.0,
                 epsilon: float = 0.1, mining: bool = True) -> None:
        super().__init__()
        self.alpha, self.beta, self.lam = float(alpha), float(beta), float(lam)
        self.epsilon, self.mining = float(epsilon), bool(mining)
        self.last_stats: MiningStats | None = None

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        loss, self.last_stats = ms_loss(embeddings, labels, self.alpha, self.beta, self.lam,
                                        self.epsilon, self.mining)
        return loss
