"""Out-of-KB ("nil") decisions with a distance threshold chosen on dev (DILBERT, §
"out-of-KB"; docs/architecture.md, "Evaluation protocols").

A mention is **nil** when the distance of its best dictionary name is *greater* than the
threshold ``t`` (``distance > t``), and linked to its top-1 candidate otherwise. Distances are
"lower = closer"; linkers report scores ("higher = better"), so :func:`from_scores` uses
``distance = -score`` (any strictly decreasing map gives the same decisions; for a DILBERT
model ``DilbertModel.distance_of`` gives the true distance). A threshold ``t`` in distance
units is the score threshold ``-t``: ``kgnorm.linking.linker.link_stream(nil_threshold=-t)``
marks exactly the same mentions (score ``< -t``).

Dev results (:class:`NilExample`, one per mention): ``distance`` of the top-1 name,
``in_kb`` (the gold concept is in the dictionary) and ``correct`` (the top-1 carries the
gold). On dev:

* true positives  TP = in-KB mentions whose top-1 is correct;
* false positives FP = out-of-KB mentions (any link they get is wrong).

Strategies (:func:`choose_threshold`):

``"min_fp"`` -- minimum false-positive distance: ``t`` just below the smallest top-1
  distance of an out-of-KB mention (``nextafter(min_FP d, -inf)``), so every dev nil mention
  is declared nil (no dev false positive); needs at least one out-of-KB mention.
``"max_tp"`` -- maximum true-positive distance: ``t = max_TP d``, so every dev true positive
  stays linked; needs at least one true positive.
``"weighted"`` -- TP-weighted average of the two: ``t = (n_TP * t_max_tp + n_FP * t_min_fp) /
  (n_TP + n_FP)`` (with ``t_min_fp = min_FP d``): the side with more dev mentions pulls the
  threshold towards its own safe value; needs both kinds.
``"auto"`` -- the one of the three with the best dev nil accuracy (ties: min_fp, max_tp,
  weighted in that order); a dev set without any out-of-KB mention raises
  :class:`KgnormError` (build one with :func:`nil_dev_set`).
``"dev_accuracy"`` -- not DILBERT's: the cut with the best dev accuracy among all cuts
  between consecutive distinct dev distances (midpoint of the two; ties: the smallest
  threshold). The three heuristics above each pick one of these cuts, so on dev it is never
  worse; on new data it can overfit a small dev set. Needs out-of-KB mentions too.

:func:`nil_metrics` scores a threshold: nil precision / recall / F1 (the nil class),
accuracy (a nil mention declared nil, or an in-KB mention linked *correctly*), in-KB
accuracy and the nil rate.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.linking.dictionary import NameDictionary

__all__ = ["NilExample", "NilDevSet", "STRATEGIES", "from_scores", "choose_threshold",
           "threshold_candidates", "nil_metrics", "decision_metrics", "nil_dev_set", "is_nil",
           "without_concepts"]

STRATEGIES = ("min_fp", "max_tp", "weighted", "dev_accuracy", "auto")


@dataclass(frozen=True)
class NilExample:
    """One dev mention: top-1 ``distance`` (inf when nothing was retrieved), ``in_kb``
    (its gold is in the dictionary) and ``correct`` (top-1 right; False when not in_kb)."""

    distance: float
    in_kb: bool
    correct: bool = False


def from_scores(scores: Iterable[float], in_kb: Iterable[bool],
                correct: Iterable[bool]) -> list[NilExample]:
    """Examples from top-1 *scores* (higher = better): ``distance = -score``."""
    s, k, c = list(scores), list(in_kb), list(correct)
    if not len(s) == len(k) == len(c):
        raise KgnormError(f"from_scores: {len(s)} scores, {len(k)} in_kb flags, "
                          f"{len(c)} correct flags")
    return [NilExample(-float(x) if np.isfinite(x) else float("inf"), bool(i), bool(j) and bool(i))
            for x, i, j in zip(s, k, c)]


def _arrays(examples: Sequence[NilExample]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not examples:
        raise KgnormError("no dev examples to choose a nil threshold from")
    d = np.array([float(e.distance) for e in examples], dtype=np.float64)
    if np.isnan(d).any():
        raise KgnormError("a nil dev example has a NaN distance")
    kb = np.array([bool(e.in_kb) for e in examples])
    ok = np.array([bool(e.correct) and bool(e.in_kb) for e in examples])
    return d, kb, ok


def is_nil(distance: float | np.ndarray, threshold: float) -> bool | np.ndarray:
    """``distance > threshold``."""
    out = np.asarray(distance, dtype=np.float64) > float(threshold)
    return bool(out) if out.ndim == 0 else out


def threshold_candidates(examples: Sequence[NilExample]) -> dict[str, float]:
    """The thresholds of every strategy that the dev set supports (see module docstring)."""
    d, kb, ok = _arrays(examples)
    fp = d[~kb]
    tp = d[ok]
    out: dict[str, float] = {}
    if len(fp):
        out["min_fp"] = float(np.nextafter(fp.min(), -np.inf))
    if len(tp):
        out["max_tp"] = float(tp.max())
    if len(fp) and len(tp):
        n_tp, n_fp = len(tp), len(fp)
        if np.isfinite(tp.max()) and np.isfinite(fp.min()):
            out["weighted"] = float((n_tp * tp.max() + n_fp * fp.min()) / (n_tp + n_fp))
        else:
            out["weighted"] = float(fp.min() if not np.isfinite(tp.max()) else tp.max())
    return out


def choose_threshold(examples: Sequence[NilExample], strategy: str = "auto"
                     ) -> tuple[float, str]:
    """``(threshold, strategy used)`` -- see the module docstring."""
    if strategy not in STRATEGIES:
        raise KgnormError(f"unknown nil threshold strategy {strategy!r} "
                          f"(valid: {', '.join(STRATEGIES)})")
    d, kb, ok = _arrays(examples)
    n_nil, n_tp = int((~kb).sum()), int(ok.sum())
    if strategy in ("auto", "min_fp", "weighted", "dev_accuracy") and n_nil == 0:
        raise KgnormError(f"nil threshold strategy {strategy!r} needs dev mentions whose gold "
                          "is not in the dictionary, and this dev set has none; build one with "
                          "kgnorm.nil.thresholds.nil_dev_set or give the threshold explicitly")
    if strategy in ("max_tp", "weighted") and n_tp == 0:
        raise KgnormError(f"nil threshold strategy {strategy!r} needs dev mentions linked "
                          "correctly, and this dev set has none")
    if strategy == "dev_accuracy":
        return _best_cut(d, kb, ok), strategy
    cands = threshold_candidates(examples)
    if strategy != "auto":
        return cands[strategy], strategy
    best, best_acc = None, -1.0
    for name in ("min_fp", "max_tp", "weighted"):
        if name not in cands:
            continue
        acc = nil_metrics(examples, cands[name])["accuracy"]
        if acc > best_acc:
            best, best_acc = name, acc
    return cands[best], best


def _best_cut(d: np.ndarray, kb: np.ndarray, ok: np.ndarray) -> float:
    """The threshold of the most accurate cut (see ``"dev_accuracy"``)."""
    order = np.argsort(d, kind="stable")
    ds, nil, right = d[order], ~kb[order], ok[order]
    # linking the first k (sorted) mentions: right = TP among them + nil among the rest
    tp_prefix = np.concatenate([[0], np.cumsum(right)])
    nil_suffix = np.concatenate([np.cumsum(nil[::-1])[::-1], [0]])
    score = tp_prefix + nil_suffix
    # cuts only between distinct distances: k = 0, n, or where ds[k-1] < ds[k]
    k_ok = np.ones(len(ds) + 1, dtype=bool)
    k_ok[1:-1] = ds[:-1] < ds[1:]
    k = int(np.flatnonzero(k_ok)[np.argmax(score[k_ok])])
    if k == 0:
        return float(np.nextafter(ds[0], -np.inf))
    if k == len(ds) or not np.isfinite(ds[k]):
        return float(ds[k - 1])
    return float((ds[k - 1] + ds[k]) / 2.0)


def nil_metrics(examples: Sequence[NilExample], threshold: float) -> dict[str, float | int]:
    """Nil precision / recall / F1, overall accuracy, in-KB accuracy and counts at
    ``threshold`` (nil = ``distance > threshold``). Undefined ratios are NaN."""
    d, _, _ = _arrays(examples)
    return {"threshold": float(threshold), **decision_metrics(examples, d > float(threshold))}


def decision_metrics(examples: Sequence[NilExample], pred_nil: Sequence[bool] | np.ndarray
                     ) -> dict[str, float | int]:
    """:func:`nil_metrics` for any nil decisions (one flag per example), e.g. a
    :class:`~kgnorm.nil.classifier.NilClassifier`'s."""
    d, kb, ok = _arrays(examples)
    pred_nil = np.asarray(pred_nil, dtype=bool)
    if len(pred_nil) != len(d):
        raise KgnormError(f"{len(pred_nil)} nil decisions for {len(d)} examples")
    true_nil = ~kb
    tp_nil = int((pred_nil & true_nil).sum())
    n_pred, n_true = int(pred_nil.sum()), int(true_nil.sum())
    prec = tp_nil / n_pred if n_pred else float("nan")
    rec = tp_nil / n_true if n_true else float("nan")
    f1 = (2 * prec * rec / (prec + rec)) if n_pred and n_true and (prec + rec) > 0 else (
        0.0 if n_pred and n_true else float("nan"))
    right = (pred_nil & true_nil) | (~pred_nil & ok)
    n_kb = int(kb.sum())
    return {"n": len(d), "n_nil": n_true, "n_in_kb": n_kb,
            "predicted_nil": n_pred, "nil_precision": prec, "nil_recall": rec, "nil_f1": f1,
            "accuracy": float(right.mean()),
            "in_kb_accuracy": float((~pred_nil & ok)[kb].mean()) if n_kb else float("nan"),
            "nil_rate": n_pred / len(d)}


# ---------------------------------------------------------------------- constructed dev set
@dataclass
class NilDevSet:
    """A dictionary with some dev gold concepts removed, and the dev mentions labelled.

    ``in_kb[i]`` is False when every gold concept of mention i was removed. ``removed``
    are the removed (primary) concept uids."""

    dictionary: NameDictionary
    queries: list[str]
    golds: list[frozenset[str]]
    in_kb: list[bool]
    removed: list[str] = field(default_factory=list)
    source: list[int] = field(default_factory=list)   # index of each query in the dev input

    @property
    def n_nil(self) -> int:
        return sum(1 for x in self.in_kb if not x)


def _primary_map(dictionary: NameDictionary) -> dict[str, str]:
    """uid or alt id -> primary uid (the dictionary's own uids map to themselves)."""
    m: dict[str, str] = {}
    for u, alts in dictionary.alt_ids.items():
        for a in alts:
            m.setdefault(a, u)
    for us in dictionary.uids:
        for u in us:
            m[u] = u
    return m


def nil_dev_set(dictionary: NameDictionary,
                dev: Sequence[tuple[str, Iterable[str] | str]], fraction: float = 0.2,
                seed: int = 0) -> NilDevSet:
    """DILBERT's constructed out-of-KB dev set: ``fraction`` of the distinct gold concepts of
    ``dev`` (seeded draw, resolved to the dictionary's primary uids through ``alt_ids``) are
    removed from the dictionary -- the uid leaves every row, and a row left without uids is
    dropped, as are the concept's alt ids. Dev mentions whose golds are all removed become
    out-of-KB; golds unknown to the dictionary are out-of-KB from the start."""
    if not 0.0 < float(fraction) < 1.0:
        raise KgnormError(f"fraction must be between 0 and 1 (exclusive), got {fraction}")
    prim = _primary_map(dictionary)
    queries: list[str] = []
    golds: list[frozenset[str]] = []
    resolved: list[frozenset[str]] = []
    source: list[int] = []
    for i, item in enumerate(dev):
        try:
            text, gold = item
        except (TypeError, ValueError):
            raise KgnormError(f"dev item {item!r} is not a (query, gold uids) pair") from None
        gs = frozenset([gold] if isinstance(gold, str) else gold) - {"", "-1"}
        if not isinstance(text, str) or not text.strip() or not gs:
            continue
        queries.append(text)
        source.append(i)
        golds.append(gs)
        resolved.append(frozenset(prim[g] for g in gs if g in prim))
    concepts = sorted(set().union(*resolved)) if resolved else []
    if not concepts:
        raise KgnormError("no dev gold concept is in the dictionary")
    n_remove = max(1, int(round(float(fraction) * len(concepts))))
    if n_remove >= len(concepts):
        raise KgnormError(f"removing {n_remove} of {len(concepts)} dev concepts would leave "
                          "no in-KB mention; lower the fraction or add dev mentions")
    rng = np.random.default_rng(seed)
    removed = sorted(concepts[i] for i in rng.choice(len(concepts), n_remove, replace=False))
    gone = set(removed)
    in_kb = [bool(r - gone) for r in resolved]
    return NilDevSet(without_concepts(dictionary, gone), queries, golds, in_kb, removed, source)


def without_concepts(dictionary: NameDictionary, gone: set[str]) -> NameDictionary:
    """``dictionary`` with the (primary) uids ``gone`` removed: the uid leaves every row, a row left
    without uids is dropped, and so are the concept's alt ids."""
    names, uids, flags, counts = [], [], [], []
    for n, us, m, cs in zip(dictionary.names, dictionary.uids, dictionary.is_mention,
                            dictionary.counts):
        keep = [(u, c) for u, c in zip(us, cs) if u not in gone]
        if keep:
            names.append(n)
            uids.append(tuple(u for u, _ in keep))
            counts.append(tuple(c for _, c in keep))
            flags.append(m)
    return NameDictionary(names=names, uids=uids,
                          alt_ids={u: list(v) for u, v in dictionary.alt_ids.items() if u not in gone},
                          is_mention=flags, counts=counts)

