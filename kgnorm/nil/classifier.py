"""Out-of-KB ("nil") decisions learned on dev from the whole top of the ranking, not only the
top-1 distance (``kgnorm link --nil-threshold auto --nil-strategy classifier``).

Why: a distance threshold (:mod:`kgnorm.nil.thresholds`) can only say "far means nil". On the
constructed BC5CDR-disease dev set the best such cut still links only near-exact matches
(benchmarks/LOG.md): an out-of-KB mention often lies as close to a related concept as an in-KB
paraphrase lies to its gold. How the ranking looks around the top-1 tells them apart better:
a clear winner over the next concepts, and lexical agreement between the mention and the
top-1 name.

Features of one query (:data:`FEATURES`), from its top ``depth`` concept hits (name, score;
distance = ``-score``, so any linker works, and any strictly decreasing map of the scores
gives the same trees):

* ``d1`` -- the top-1 distance; ``gap2``, ``gap3``, ``gap_last`` -- the distances of the
  2nd, 3rd and ``depth``-th concept minus ``d1`` (a missing rank repeats the last one);
* ``exact`` -- the query equals the top-1 name;
* ``query_cover`` / ``name_cover`` -- the share of the query's / the top-1 name's tokens
  found in the other;
* ``char3_jaccard`` -- Jaccard similarity of their character trigrams.

Model: scikit-learn's HistGradientBoostingClassifier predicting "out-of-KB", fitted on the
dev mentions for which the decision matters -- out-of-KB mentions and in-KB mentions whose
top-1 is right (an in-KB mention with a wrong top-1 is wrong whether declared nil or not).
A mention is nil when the predicted probability exceeds 0.5: the decision with the higher
expected accuracy.

Measured (benchmarks/encoders.py, BC5CDR-disease constructed nil set, fitted and scored on
disjoint halves of the documents): 0.878 accuracy with the untrained MiniLM ranking, 0.875
with BioSyn, 0.848 with a one-epoch DILBERT, against 0.82 for the best distance cut.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgnorm.errors import KgnormError

__all__ = ["FEATURES", "DEFAULT_DEPTH", "hit_features", "NilClassifier", "cross_validated_accuracy", "cv_folds"]

FEATURES = ("d1", "gap2", "gap3", "gap_last", "exact", "query_cover", "name_cover",
            "char3_jaccard")
DEFAULT_DEPTH = 5


def _trigrams(s: str) -> set[str]:
    s = f" {s} "
    return {s[i:i + 3] for i in range(len(s) - 2)}


def hit_features(query: str, hits: Sequence[tuple[str, float]],
                 depth: int = DEFAULT_DEPTH) -> np.ndarray:
    """The :data:`FEATURES` of ``query`` given its ranked concept hits ``(name, score)``
    (best first, one per concept). No hit at all gives NaN distances (the trees route
    missing values)."""
    if not hits:
        return np.array([np.nan] * 4 + [0.0, 0.0, 0.0, 0.0])
    ds = [-float(s) for _, s in hits[:depth]]
    ds += [ds[-1]] * (depth - len(ds))
    name = hits[0][0]
    qt, nt = set(query.split()), set(name.split())
    common = len(qt & nt)
    g1, g2 = _trigrams(query), _trigrams(name)
    return np.array([ds[0], ds[1] - ds[0], ds[min(2, depth - 1)] - ds[0], ds[-1] - ds[0],
                     float(query == name), common / max(len(qt), 1), common / max(len(nt), 1),
                     len(g1 & g2) / max(len(g1 | g2), 1)])


@dataclass
class NilClassifier:
    """A fitted nil decision: :meth:`fit` on dev features, :meth:`is_nil` on new ones."""

    model: object
    depth: int = DEFAULT_DEPTH
    n_fit: int = 0
    n_fit_nil: int = 0

    @classmethod
    def fit(cls, features: np.ndarray, in_kb: Sequence[bool], correct: Sequence[bool],
            depth: int = DEFAULT_DEPTH, seed: int = 0) -> NilClassifier:
        from sklearn.ensemble import HistGradientBoostingClassifier

        X = np.asarray(features, dtype=np.float64)
        kb = np.asarray(in_kb, dtype=bool)
        ok = np.asarray(correct, dtype=bool)
        if X.ndim != 2 or X.shape[1] != len(FEATURES) or len(X) != len(kb) or len(kb) != len(ok):
            raise KgnormError(f"nil classifier: expected {len(FEATURES)} features and one "
                              f"in_kb/correct flag per row, got {X.shape}, {len(kb)}, {len(ok)}")
        use = ~kb | ok                      # the rows whose decision matters
        y = ~kb[use]
        if not y.any():
            raise KgnormError("nil classifier: the dev set has no out-of-KB mention "
                              "(gold -1 or a concept the dictionary lacks)")
        if y.all():
            raise KgnormError("nil classifier: no in-KB dev mention is linked correctly, "
                              "so there is nothing to tell nil from")
        model = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05,
                                               max_leaf_nodes=15, random_state=seed)
        model.fit(X[use], y)
        return cls(model, int(depth), int(use.sum()), int(y.sum()))

    def nil_probability(self, features: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(np.asarray(features, dtype=np.float64))
        return self.model.predict_proba(X)[:, 1]

    def is_nil(self, features: np.ndarray) -> np.ndarray:
        return self.nil_probability(features) > 0.5

    def decide(self, queries: Sequence[str], hits: Sequence[Sequence[tuple[str, float]]]
               ) -> list[bool]:
        """Nil flags for queries and their ranked ``(name, score)`` concept hits."""
        if not queries:
            return []
        X = np.vstack([hit_features(q, h, self.depth) for q, h in zip(queries, hits)])
        return self.is_nil(X).tolist()


def cross_validated_accuracy(features: np.ndarray, in_kb: Sequence[bool],
                             correct: Sequence[bool], groups: Sequence[str],
                             folds: int = 5, seed: int = 0) -> float | None:
    """Nil accuracy of classifiers fitted on the other folds (grouped, e.g. by document, so
    that a document's mentions never help decide their own case); None when the groups are
    too few or a fold's training part lacks a class."""
    from sklearn.model_selection import GroupKFold

    X = np.asarray(features, dtype=np.float64)
    kb = np.asarray(in_kb, dtype=bool)
    ok = np.asarray(correct, dtype=bool)
    g = np.asarray(groups)
    n_splits = cv_folds(g.tolist(), folds)
    if n_splits < 2:
        return None
    right = np.zeros(len(X), dtype=bool)
    for tr, te in GroupKFold(n_splits=n_splits).split(X, groups=g):
        try:
            clf = NilClassifier.fit(X[tr], kb[tr], ok[tr], seed=seed)
        except KgnormError:
            return None
        nil = clf.is_nil(X[te])
        right[te] = np.where(nil, ~kb[te], ok[te])
    return float(right.mean())


def cv_folds(groups: Sequence[str], folds: int = 5) -> int:
    """The folds :func:`cross_validated_accuracy` runs: `folds`, or one per group when there
    are fewer groups (so a report names the folds actually used)."""
    return min(folds, len(set(groups)))
