"""Strict-span scores of detected mentions against gold ones: a prediction counts only when its
start, end and type all equal a gold span's (the BioCreative / NCBI-disease NER measure)."""
from __future__ import annotations

from collections.abc import Sequence

from kgnorm.ner.spans import Span

__all__ = ["strict_span_prf"]


def strict_span_prf(gold: Sequence[Sequence[Span]], predicted: Sequence[Sequence[Span]]) -> dict[str, float]:
    """Micro precision, recall and F1 over all documents (and the counts behind them)."""
    tp = n_gold = n_pred = 0
    for g, p in zip(gold, predicted, strict=True):
        gs = {(s.start, s.end, s.type) for s in g}
        ps = {(s.start, s.end, s.type) for s in p}
        tp += len(gs & ps)
        n_gold += len(gs)
        n_pred += len(ps)
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "gold": n_gold,
            "predicted": n_pred}
