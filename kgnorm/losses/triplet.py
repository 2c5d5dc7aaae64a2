"""Triplet loss over anchor/positive/negative vectors (DILBERT, Miftahutdinov et al. 2021),
with FaceNet's semi-hard mining as an option."""
from __future__ import annotations

import torch

from kgnorm.errors import KgnormError

__all__ = ["DISTANCES", "MININGS", "triplet_loss"]

DISTANCES = ("euclidean", "cosine")
MININGS = ("all", "semi-hard")


def triplet_loss(anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor,
                 margin: float = 1.0, distance: str = "euclidean",
                 mining: str = "all") -> torch.Tensor:
    """``mean(relu(d(a, p) - d(a, n) + margin))``; ``d`` Euclidean or ``1 - cosine``.

    ``mining="semi-hard"`` (FaceNet, Schroff et al. 2015) averages over the triplets whose
    negative is farther than the positive (``d(a, n) > d(a, p)``) only: a triplet whose
    negative is closer lowers its loss most easily by shrinking every distance, which
    with the hardest negatives drives the encoder towards a collapsed space."""
    if distance == "euclidean":
        dp = torch.nn.functional.pairwise_distance(anchor, positive)
        dn = torch.nn.functional.pairwise_distance(anchor, negative)
    elif distance == "cosine":
        dp = 1.0 - torch.nn.functional.cosine_similarity(anchor, positive)
        dn = 1.0 - torch.nn.functional.cosine_similarity(anchor, negative)
    else:
        raise KgnormError(f"unknown distance {distance!r} (choose from {', '.join(DISTANCES)})")
    losses = torch.relu(dp - dn + float(margin))
    if mining == "all":
        return losses.mean()
    if mining != "semi-hard":
        raise KgnormError(f"unknown triplet mining {mining!r} (choose from {', '.join(MININGS)})")
    keep = (dn > dp).detach()
    if not bool(keep.any()):
        return (losses * 0.0).sum()  # keeps the graph: a step with no semi-hard triplet is a no-op
    return losses[keep].mean()
