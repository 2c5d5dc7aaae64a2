"""Annotate's confidence in a found mention: the probability that the concept it is linked to is one
of its document's concepts, from both stages.

Why: on raw text most wrong document concepts come from spans that are not mentions at all
("red", "Classical", "deficiency of"), each linked to the nearest concept, and both stages already
know they are unsure: the detector's span probability is low, or the linker's best score is low
and close to the runner-up. One logistic regression over those signals, fitted on dev documents
for one (detector, linker) pair (`kgnorm calibrate`), turns them into a probability; `annotate`
drops the mentions below the threshold that gave the best document-level F1 on that dev set.

Features (:data:`FEATURES`): the detector's span score (0 for a span an inference-time lever
added: its score of 1.0 says nothing), whether a lever added it, the linker's rank-1 score (the
lowest over a composite's parts) and its margin over the rank-2 concept (capped). They are
standardised with the dev set's mean and deviation, stored beside the weights."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

FEATURES = ("span_score", "added_by_lever", "top_score", "margin")
MARGIN_CAP = 10.0  # a margin this large is as sure as any (one candidate only counts as this)


def mention_features(span_score: float, span_source: str, parts: Sequence[Sequence[Any]]) -> tuple[float, ...]:
    """:data:`FEATURES` of one linked mention (`parts`: per composite part its hits, best first,
    each with ``score``)."""
    lever = span_source != "detector"
    tops = [p[0].score for p in parts if p]
    top = min(tops) if tops else 0.0
    margins = [min(p[0].score - p[1].score, MARGIN_CAP) if len(p) > 1 else MARGIN_CAP for p in parts if p]
    return (0.0 if lever else float(span_score), float(lever), float(top), float(min(margins) if margins else 0.0))


@dataclass(frozen=True)
class MentionConfidence:
    """A fitted confidence for one (detector, linker) pair; `linker` identifies the linking model
    (its resolved path and creation time), `threshold` is the probability below which annotate
    drops a mention, `fit` what the dev set said (sizes, document-level P/R/F1 before and after)."""

    linker: dict[str, str]
    coef: tuple[float, ...]
    intercept: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    threshold: float
    features: tuple[str, ...] = FEATURES
    fit: dict[str, Any] = field(default_factory=dict)
    type: str = ""  # the mention type it was fitted on ("": all the types the linker links)

    def probability(self, features: Sequence[float]) -> float:
        z = self.intercept + sum(c * (x - m) / s for c, x, m, s in zip(self.coef, features, self.mean, self.scale))
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def to_meta(self) -> dict[str, Any]:
        out = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @classmethod
    def from_meta(cls, entry: Mapping[str, Any]) -> MentionConfidence:
        if tuple(entry.get("features", ())) != FEATURES:
            raise ValueError(f"mention confidence over {entry.get('features')}, this kgnorm reads {FEATURES}")
        return cls(dict(entry["linker"]), tuple(entry["coef"]), float(entry["intercept"]), tuple(entry["mean"]),
                   tuple(entry["scale"]), float(entry["threshold"]), FEATURES, dict(entry.get("fit", {})),
                   str(entry.get("type", "")))


def confidence_for(confidences: Mapping[str, MentionConfidence | None] | None,
                   mention_type: str) -> MentionConfidence | None:
    """The confidence of a mention of `mention_type` (a run routed by type: each type's linker and
    detector scores differ): its type's own (keys casefolded), else the one of every other type
    (key "")."""
    if not confidences:
        return None
    key = mention_type.strip().casefold()
    return confidences[key] if key in confidences else confidences.get("")


@dataclass
class DevMention:
    """One mention annotate found in a dev document: its features and its rank-1 concepts
    (canonical ids; empty when nil)."""

    doc_id: str
    features: tuple[float, ...]
    concepts: frozenset[str]


def document_prf(mentions: Sequence[DevMention], gold: Mapping[str, frozenset[str]],
                 keep: Callable[[int], bool]) -> tuple[float, float, float]:
    """Document-level precision, recall, F1 (as `kgnorm eval annotate` counts them) of the
    mentions `keep` (by index) lets through."""
    predicted: dict[str, set[str]] = {}
    for i, m in enumerate(mentions):
        if keep(i) and m.concepts:
            predicted.setdefault(m.doc_id, set()).update(m.concepts)
    tp = fp = fn = 0
    for doc_id, concepts in gold.items():
        p = predicted.get(doc_id, set())
        tp += len(p & concepts)
        fp += len(p - concepts)
        fn += len(concepts - p)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)


def fit_confidence(mentions: Sequence[DevMention], gold: Mapping[str, frozenset[str]],
                   linker: dict[str, str], mention_type: str = "") -> MentionConfidence:
    """Fit the logistic regression (label: every rank-1 concept of the mention is one of its
    document's gold concepts) and choose the threshold with the best document-level F1 on the same
    documents (ties: the lower threshold, which keeps more)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from kgnorm.errors import KgnormError

    linked = [m for m in mentions if m.concepts]
    labels = np.array([bool(m.concepts) and m.concepts <= gold.get(m.doc_id, frozenset()) for m in linked])
    if len(linked) < 20 or labels.all() or not labels.any():
        of = f" of type {mention_type}" if mention_type else ""
        raise KgnormError(f"calibrating needs dev documents with right and wrong links: {len(linked)} linked "
                          f"mention(s){of}, {int(labels.sum())} right")
    x = np.array([m.features for m in linked], dtype=np.float64)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(max_iter=1000).fit((x - mean) / scale, labels)
    fitted = MentionConfidence(linker, tuple(float(c) for c in model.coef_[0]), float(model.intercept_[0]),
                               tuple(float(v) for v in mean), tuple(float(v) for v in scale), 0.0)
    probs = [fitted.probability(m.features) for m in mentions]
    before = document_prf(mentions, gold, lambda i: True)
    best = (before[2], 0.0, before)
    for t in sorted({round(p, 3) for p in probs}):
        prf = document_prf(mentions, gold, lambda i: probs[i] >= t)
        if prf[2] > best[0] + 1e-12:
            best = (prf[2], t, prf)
    fit = {"dev_documents": len(gold), "dev_mentions": len(mentions), "dev_linked": len(linked),
           "dev_right": int(labels.sum()), "document_before": [round(v, 4) for v in before],
           "document_after": [round(v, 4) for v in best[2]]}
    return MentionConfidence(linker, fitted.coef, fitted.intercept, fitted.mean, fitted.scale, best[1], FEATURES, fit,
                             mention_type)
