"""Fusing the ranked concepts of several linkers for one query part into one ranking, one concept
per rank.

Two fusions, both over each member's top ``depth`` concepts (a concept a member did not rank there
gets nothing from it):

- ``rrf``, reciprocal-rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009): a concept at rank r
  of a member earns ``1 / (k + r)``, k = 60. Scaled here by ``(k + 1) / n_members``, so a concept
  every member ranks first scores 1.0 (the TSV shows a score a nil threshold can be read against;
  the order is RRF's). Ranks only: members whose scores live on different scales fuse as well.
- ``score``: each member's scores turned into probabilities by a softmax over its top ``depth``
  (``temperature`` divides the scores first), averaged over the members: a confident member counts
  more than a hesitant one.

Ties (two members that swap their top two concepts tie under RRF) are broken by the other fusion's
value, then by first appearance (rank 1 of every member in member order, then rank 2, ...), so the
order never depends on anything but the members' answers.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Hit

__all__ = ["FUSIONS", "RRF_K", "fuse", "member_probabilities"]

FUSIONS = ("rrf", "score")
RRF_K = 60


def member_probabilities(hits: Sequence[Hit], temperature: float = 1.0) -> list[float]:
    """Softmax of one member's scores (best first) over the hits given; a non-finite score gets 0."""
    finite = [h.score for h in hits if math.isfinite(h.score)]
    if not finite:
        return [0.0] * len(hits)
    top = max(finite)
    w = [math.exp((h.score - top) / temperature) if math.isfinite(h.score) else 0.0 for h in hits]
    total = sum(w)
    return [x / total for x in w]


def fuse(rankings: Sequence[Sequence[Hit]], fusion: str, top_k: int, *, depth: int | None = None,
         rrf_k: int = RRF_K, temperature: float = 1.0) -> list[Hit]:
    """The fused top ``top_k`` of one query part from each member's ranking (best first; the first
    ``depth`` hits of each are fused, all of them when None). A concept's name is the one of the
    member that ranks it best (the first such member on a tie)."""
    if fusion not in FUSIONS:
        raise KgnormError(f"unknown fusion {fusion!r} (known: {', '.join(FUSIONS)})")
    if not rankings:
        return []
    n = len(rankings)
    rrf: dict[str, list[float]] = {}   # summed with math.fsum: exact ties stay ties in any member order
    prob: dict[str, list[float]] = {}
    name: dict[str, tuple[int, str, str]] = {}  # uid -> (rank, name, ontology) of its best-ranking member
    order: dict[str, int] = {}
    cut = [list(r[:depth] if depth is not None else r) for r in rankings]
    probs = [member_probabilities(r, temperature) for r in cut]
    for rank in range(max(len(r) for r in cut)):
        for hits, ps in zip(cut, probs):
            if rank >= len(hits):
                continue
            h = hits[rank]
            order.setdefault(h.uid, len(order))
            rrf.setdefault(h.uid, []).append((rrf_k + 1) / (rrf_k + rank + 1))
            prob.setdefault(h.uid, []).append(ps[rank])
            if h.uid not in name:
                name[h.uid] = (rank, h.name, h.ontology)
    rrf_v = {u: math.fsum(v) / n for u, v in rrf.items()}
    prob_v = {u: math.fsum(v) / n for u, v in prob.items()}
    first, second = (rrf_v, prob_v) if fusion == "rrf" else (prob_v, rrf_v)
    ranked = sorted(order, key=lambda u: (-first[u], -second[u], order[u]))
    return [Hit(u, name[u][1], first[u], name[u][2]) for u in ranked[:max(0, int(top_k))]]
