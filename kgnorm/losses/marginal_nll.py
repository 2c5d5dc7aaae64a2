"""BioSyn's synonym-marginalization loss (Sung et al. 2020), in the concept view the linker ranks."""
from __future__ import annotations

import torch

__all__ = ["marginal_nll"]


def marginal_nll(scores: torch.Tensor, labels: torch.Tensor,
                 multiplicity: torch.Tensor | None = None) -> torch.Tensor:
    """-log of the softmax mass on the gold concepts, mean over rows with a positive.

    Concept view (``multiplicity`` given): candidate j is a name standing for
    ``multiplicity[j]`` concepts, ``labels[j]`` of them gold, so the mass is
    ``sum_j labels_j e^s_j / sum_j multiplicity_j e^s_j``. Without ``multiplicity`` every
    candidate counts once and any ``labels > 0`` makes it positive (BioSyn's row view)."""
    pos = labels > 0
    has = pos.any(dim=1)
    if not bool(has.any()):
        return scores.sum() * 0.0
    s = scores[has]
    if multiplicity is None:
        w_pos, w_all = pos[has].to(s.dtype), torch.ones_like(s)
    else:
        w_pos, w_all = labels[has].to(s.dtype), multiplicity[has].to(s.dtype)
    lse_all = torch.logsumexp(s + torch.log(w_all), dim=1)
    lse_pos = torch.logsumexp(s.masked_fill(w_pos <= 0, float("-inf")) + torch.log(w_pos.clamp(min=1e-30)),
                              dim=1)
    return (lse_all - lse_pos).mean()
