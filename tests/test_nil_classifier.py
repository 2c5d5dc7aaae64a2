"""Nil classifier: features by hand, fitting on a learnable dev set, cross-validation by
group, and the link_stream wiring (composites, output depth)."""
from __future__ import annotations

import numpy as np
import pytest

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Hit
from kgnorm.linking.linker import link_stream
from kgnorm.nil.classifier import (FEATURES, NilClassifier, cross_validated_accuracy, cv_folds,
                                           hit_features)
from kgnorm.mentions.types import Mention
from kgnorm.text.pipeline import TextPipeline


def test_hit_features_by_hand():
    f = dict(zip(FEATURES, hit_features("renal failure", [("kidney failure", -1.0),
                                                          ("renal cancer", -1.5)], depth=3)))
    assert f["d1"] == 1.0 and f["gap2"] == 0.5
    assert f["gap3"] == 0.5 and f["gap_last"] == 0.5          # a missing rank repeats the last
    assert f["exact"] == 0.0
    assert f["query_cover"] == 0.5 and f["name_cover"] == 0.5  # "failure" of two tokens each
    q, n = " renal failure ", " kidney failure "
    g1 = {q[i:i + 3] for i in range(len(q) - 2)}
    g2 = {n[i:i + 3] for i in range(len(n) - 2)}
    assert f["char3_jaccard"] == pytest.approx(len(g1 & g2) / len(g1 | g2))
    assert hit_features("x", [("x", 0.0)])[FEATURES.index("exact")] == 1.0
    assert np.isnan(hit_features("x", [])[0])


def _synthetic(n: int, seed: int):
    """In-KB mentions have a clear winner (big gap to the 2nd concept), out-of-KB ones not;
    the top-1 distance alone overlaps completely between the two."""
    rng = np.random.default_rng(seed)
    kb = rng.random(n) < 0.7
    d1 = rng.uniform(0.5, 2.0, n)
    gap = np.where(kb, rng.uniform(0.8, 1.5, n), rng.uniform(0.0, 0.3, n))
    X = np.column_stack([d1, gap, gap + 0.1, gap + 0.2, np.zeros(n), np.full(n, 0.5),
                         np.full(n, 0.5), np.full(n, 0.3)])
    correct = kb & (rng.random(n) < 0.9)
    return X, kb, correct


def test_fit_learns_what_a_distance_threshold_cannot():
    X, kb, ok = _synthetic(400, 0)
    clf = NilClassifier.fit(X, kb, ok)
    assert clf.n_fit == int((~kb | ok).sum()) and clf.n_fit_nil == int((~kb).sum())
    Xt, kbt, okt = _synthetic(400, 1)
    nil = clf.is_nil(Xt)
    acc = np.mean(np.where(nil, ~kbt, okt))
    # the best top-1 distance cut on the same test set, for comparison
    best_cut = max(np.mean(np.where(Xt[:, 0] > t, ~kbt, okt)) for t in np.unique(Xt[:, 0]))
    assert acc > 0.9 and acc > best_cut + 0.1
    p = clf.nil_probability(Xt)
    assert ((p > 0.5) == nil).all() and ((0 <= p) & (p <= 1)).all()


def test_fit_needs_both_kinds():
    X, kb, ok = _synthetic(50, 0)
    with pytest.raises(KgnormError, match="no out-of-KB"):
        NilClassifier.fit(X, np.ones(50, bool), ok | True)
    with pytest.raises(KgnormError, match="nothing to tell nil from"):
        NilClassifier.fit(X, kb, np.zeros(50, bool))
    with pytest.raises(KgnormError, match="features"):
        NilClassifier.fit(X[:, :3], kb, ok)


def test_cross_validated_accuracy_by_group():
    X, kb, ok = _synthetic(300, 2)
    groups = [f"doc{i // 6}" for i in range(300)]
    acc = cross_validated_accuracy(X, kb, ok, groups)
    assert acc is not None and acc > 0.9
    assert cross_validated_accuracy(X, kb, ok, ["one"] * 300) is None
    assert cv_folds(groups) == 5 and cv_folds(["a", "b", "a", "c"]) == 3  # the folds a report names


class _FakeLinker:
    """Stands in for a trained model (the classifier is what is tested): a fixed ranking
    per query, deep enough for the features."""

    method = "fake"

    def __init__(self):
        self.depths = []

    def link_parts(self, queries, mentions, whole, top_k):
        self.depths.append(top_k)
        out = []
        for q in queries:
            gap = 1.0 if "known" in q else 0.05
            out.append([Hit(f"C{r}", f"name {r}", -(1.0 + (gap * r if r else 0.0)))
                        for r in range(top_k)])
        return out


def test_link_stream_with_a_classifier():
    X, kb, ok = _synthetic(400, 0)
    clf = NilClassifier.fit(X, kb, ok)
    mentions = [(Mention("known disease", "d1", 0, 13, gold=[]), {}),
                (Mention("odd thing", "d1", 20, 29, gold=[]), {}),
                (Mention("known disease and odd thing", "d2", 0, 27, gold=[]), {})]
    linker = _FakeLinker()
    pipeline = TextPipeline(composites=True)
    out = list(link_stream(linker, pipeline, mentions, top_k=1, nil_classifier=clf))
    assert linker.depths == [clf.depth]            # fetched deep enough for the features
    assert all(len(p) == 1 for lm in out for p in lm.parts)   # output cut back to top_k
    assert [lm.nil for lm in out[:2]] == [False, True]
    assert len(out[2].queries) == 2 and out[2].nil  # a composite is nil when a part is


def test_document_halves_keep_documents_whole():
    from kgnorm.nil.evaluation import document_halves

    docs = [f"d{i % 7}" for i in range(40)]
    a, b = document_halves(docs, 0)
    assert sorted([*a, *b]) == list(range(40))
    assert not {docs[i] for i in a} & {docs[i] for i in b}
    assert len({docs[i] for i in a}) == 3
    assert (document_halves(docs, 0)[0] == a).all()
    assert any((document_halves(docs, s)[0].tolist() != a.tolist()) for s in range(1, 5))
    with pytest.raises(KgnormError, match="2 documents"):
        document_halves(["d"] * 5, 0)
