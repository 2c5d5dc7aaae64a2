"""Scores of a mapping set against a reference (`kgnorm eval match`) and of a placement
(`kgnorm eval place`). References are partial (an ontology's xrefs cover some of its concepts), so
a prediction is scored only when its subject has a reference mapping: the figure then says how
well the matcher recovers what the reference knows, not how many concepts it left unmapped."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from kgnorm.matching.sssom import MappingSet


@dataclass
class PredicateScore:
    predicate: str
    gold: int
    predicted: int       # scored predictions (subject in the reference)
    correct: int
    precision: float
    recall: float
    f1: float
    unscored: int = 0    # predictions whose subject the reference does not map
    negatives_hit: int = -1   # predictions the negatives file says are wrong (-1: no negatives given)
    judged_precision: float = float("nan")  # correct / (correct + negatives hit)

    def row(self) -> dict[str, object]:
        return asdict(self)


def prf(correct: int, predicted: int, gold: int) -> tuple[float, float, float]:
    p = correct / predicted if predicted else 0.0
    r = correct / gold if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score_pairs(predicate: str, gold: set[tuple[str, str]], predicted: set[tuple[str, str]],
                negatives: set[tuple[str, str]] | None = None) -> PredicateScore:
    subjects = {s for s, _ in gold}
    scored = {p for p in predicted if p[0] in subjects}
    correct = len(scored & gold)
    p, r, f = prf(correct, len(scored), len(gold))
    out = PredicateScore(predicate, len(gold), len(scored), correct, p, r, f, len(predicted) - len(scored))
    if negatives is not None:
        out.negatives_hit = len(predicted & negatives)
        judged = correct + out.negatives_hit
        out.judged_precision = correct / judged if judged else float("nan")
    return out


def score_mappings(gold: MappingSet, predictions: MappingSet, negatives: MappingSet | None = None,
                   ) -> list[PredicateScore]:
    """One score per predicate that the reference or the predictions use, reference's first."""
    preds = list(dict.fromkeys([m.predicate_id for m in gold.mappings] + [m.predicate_id for m in predictions.mappings]))
    neg = negatives.pairs() if negatives is not None else None
    return [score_pairs(p, gold.pairs(p), predictions.pairs(p), neg) for p in preds]


@dataclass
class PlacementScore:
    queries: int
    mrr: float
    hits_at_1: float
    hits_at_5: float
    unranked: int    # queries whose true parents are all missing from the ranking

    def row(self) -> dict[str, object]:
        return asdict(self)


def score_placement(ranked: dict[str, Sequence[str]], truth: dict[str, Iterable[str]]) -> PlacementScore:
    """MRR and Hits@1/5 of the first true parent in each query's ranking (every query of `truth`;
    one the ranking lacks counts 0)."""
    rr, h1, h5, missing = 0.0, 0, 0, 0
    for query, parents in truth.items():
        want = set(parents)
        rank = next((i + 1 for i, uid in enumerate(ranked.get(query, ())) if uid in want), 0)
        if not rank:
            missing += 1
            continue
        rr += 1.0 / rank
        h1 += rank == 1
        h5 += rank <= 5
    n = len(truth)
    return PlacementScore(n, rr / n if n else 0.0, h1 / n if n else 0.0, h5 / n if n else 0.0, missing)
