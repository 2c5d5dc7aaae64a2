"""Out-of-KB thresholds on hand-made numbers, the constructed dev set, nil metrics."""
from __future__ import annotations

import numpy as np
import pytest

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Candidate
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.nil.evaluation import concept_hits, nil_examples
from kgnorm.nil.thresholds import (NilExample, choose_threshold, decision_metrics, from_scores, is_nil,
                                nil_dev_set, nil_metrics, threshold_candidates)

# distance, in_kb, correct
DEV = [NilExample(0.2, True, True), NilExample(0.5, True, True), NilExample(0.9, True, True),
       NilExample(0.4, True, False),                    # in KB but wrong: no TP
       NilExample(0.7, False), NilExample(1.5, False)]


def test_strategies_by_hand():
    c = threshold_candidates(DEV)
    assert c["max_tp"] == 0.9
    assert c["min_fp"] < 0.7 and c["min_fp"] == np.nextafter(0.7, -np.inf)
    # TP-weighted: (3 * 0.9 + 2 * 0.7) / 5
    assert c["weighted"] == pytest.approx((3 * 0.9 + 2 * 0.7) / 5)
    t, s = choose_threshold(DEV, "min_fp")
    assert s == "min_fp" and not is_nil(0.69, t) and is_nil(0.7, t)
    m = nil_metrics(DEV, t)
    assert m["nil_recall"] == 1.0                                     # both nil caught
    assert m["predicted_nil"] == 3                                    # and the TP at 0.9
    assert m["nil_precision"] == pytest.approx(2 / 3)
    assert m["accuracy"] == pytest.approx(4 / 6)                      # 0.2, 0.5 + 2 nil
    t, _ = choose_threshold(DEV, "max_tp")
    m = nil_metrics(DEV, t)
    assert m["nil_recall"] == 0.5 and m["nil_precision"] == 1.0       # only 1.5 is nil
    assert m["accuracy"] == pytest.approx(4 / 6)                      # 3 TP + 1 nil
    assert m["in_kb_accuracy"] == pytest.approx(3 / 4)
    t, _ = choose_threshold(DEV, "weighted")                          # 0.82
    m = nil_metrics(DEV, t)
    assert m["predicted_nil"] == 2 and m["nil_recall"] == 0.5 and m["nil_precision"] == 0.5
    assert m["accuracy"] == pytest.approx(3 / 6)
    t, s = choose_threshold(DEV, "auto")
    assert s == "min_fp"                                              # first of the ties


def test_dev_accuracy_cut_beats_or_ties_every_heuristic():
    t, s = choose_threshold(DEV, "dev_accuracy")
    assert s == "dev_accuracy"
    # sorted: 0.2 ok, 0.4 wrong, 0.5 ok, 0.7 nil, 0.9 ok, 1.5 nil -> the cut after 0.5 and the
    # cut after 0.9 both get 4 of 6 right; the smaller one is kept, halfway to the next distance
    assert t == pytest.approx((0.5 + 0.7) / 2)
    best = nil_metrics(DEV, t)["accuracy"]
    assert best == pytest.approx(4 / 6)
    for name in ("min_fp", "max_tp", "weighted"):
        assert nil_metrics(DEV, choose_threshold(DEV, name)[0])["accuracy"] <= best + 1e-12
    # every dev mention nil is best when nothing in the KB is linked right
    all_nil = [NilExample(0.3, False), NilExample(0.6, True, False), NilExample(0.8, False)]
    t, _ = choose_threshold(all_nil, "dev_accuracy")
    assert nil_metrics(all_nil, t)["predicted_nil"] == 3
    # a random dev set: the cut is as good as the best of every possible threshold
    rng = np.random.default_rng(0)
    ex = [NilExample(float(x), bool(k), bool(k and c)) for x, k, c in
          zip(rng.random(200), rng.random(200) < 0.8, rng.random(200) < 0.7)]
    t, _ = choose_threshold(ex, "dev_accuracy")
    brute = max(nil_metrics(ex, float(x))["accuracy"] for x in [-1.0] + [e.distance for e in ex])
    assert nil_metrics(ex, t)["accuracy"] == pytest.approx(brute)
    with pytest.raises(KgnormError, match="nil_dev_set"):
        choose_threshold([NilExample(0.1, True, True)], "dev_accuracy")


def test_auto_needs_nil_cases_and_unknown_strategy():
    only_kb = [NilExample(0.1, True, True), NilExample(0.3, True, False)]
    with pytest.raises(KgnormError, match="nil_dev_set"):
        choose_threshold(only_kb, "auto")
    with pytest.raises(KgnormError):
        choose_threshold(only_kb, "min_fp")
    assert choose_threshold(only_kb, "max_tp") == (0.1, "max_tp")
    with pytest.raises(KgnormError, match="correctly"):
        choose_threshold([NilExample(1.0, False), NilExample(0.2, True, False)], "max_tp")
    with pytest.raises(KgnormError, match="valid: min_fp, max_tp, weighted, dev_accuracy, auto"):
        choose_threshold(DEV, "median")
    with pytest.raises(KgnormError):
        choose_threshold([], "max_tp")


def test_from_scores_and_metrics_edge_cases():
    ex = from_scores([0.9, 0.1, float("-inf")], [True, False, True], [True, True, False])
    assert ex[0] == NilExample(-0.9, True, True)
    assert ex[1] == NilExample(-0.1, False, False)          # correct only counts in KB
    assert ex[2].distance == float("inf")
    m = nil_metrics(ex, threshold=10.0)                       # nothing is nil but the inf one
    assert m["predicted_nil"] == 1 and m["nil_recall"] == 0.0 and m["nil_precision"] == 0.0
    with pytest.raises(KgnormError):
        from_scores([1.0], [True, False], [True])


DICT = NameDictionary.from_entries(
    [("heart attack", "MESH:D1"), ("mi", "MESH:D1"), ("renal failure", "MESH:D2"),
     ("kidney failure", "MESH:D2"), ("fever", "MESH:D3"), ("pd", "MESH:D4"), ("pd", "MESH:D5"),
     ("parkinson disease", "MESH:D4"), ("tumor", "MESH:D5"), ("cough", "MESH:D6")],
    alt_ids={"MESH:D2": ["OMIM:2"]})
NDEV = [("heart attacks", {"MESH:D1"}), ("kidney failures", {"OMIM:2"}), ("fevers", "MESH:D3"),
        ("parkinsons", {"MESH:D4"}), ("tumour", {"MESH:D5"}), ("coughs", {"MESH:D6"}),
        ("nothing", {"-1"}), ("strange", {"MESH:D99"})]


def test_decision_metrics_agree_with_thresholds():
    rng = np.random.default_rng(3)
    ex = [NilExample(float(d), bool(k), bool(k and c)) for d, k, c in
          zip(rng.uniform(0, 2, 60), rng.random(60) < 0.7, rng.random(60) < 0.8)]
    for t in (0.3, 1.0, 1.7):
        m = nil_metrics(ex, t)
        assert m.pop("threshold") == t
        d = decision_metrics(ex, [e.distance > t for e in ex])
        assert d.keys() == m.keys()
        assert all(d[k] == m[k] or (d[k] != d[k] and m[k] != m[k]) for k in m)  # NaN == NaN
    with pytest.raises(KgnormError, match="decisions"):
        decision_metrics(ex, [True])


def test_nil_dev_set_is_seeded_and_consistent():
    s = nil_dev_set(DICT, NDEV, fraction=0.34, seed=0)
    assert len(s.removed) == 2                               # round(0.34 * 6 concepts)
    assert s.removed == nil_dev_set(DICT, NDEV, fraction=0.34, seed=0).removed
    assert any(nil_dev_set(DICT, NDEV, fraction=0.34, seed=k).removed != s.removed
               for k in range(1, 6))
    assert len(s.queries) == 7                               # "-1" skipped
    assert [NDEV[i][0] for i in s.source] == s.queries        # where each query came from
    gone = set(s.removed)
    remaining = {u for us in s.dictionary.uids for u in us}
    assert not gone & remaining
    for u in gone:
        assert u not in s.dictionary.alt_ids
    for q, gs, kb in zip(s.queries, s.golds, s.in_kb):
        resolved = {"OMIM:2": "MESH:D2"}
        g = {resolved.get(x, x) for x in gs}
        assert kb == bool(g & remaining), (q, gs)
    assert s.in_kb[s.queries.index("strange")] is False      # unknown gold: nil from the start
    # a shared name ("pd": D4 and D5) loses only the removed uid(s): seeds that remove one, the
    # other or neither are all checked, and each case must occur among them
    seen = set()
    for seed in range(20):
        d = nil_dev_set(DICT, NDEV, fraction=0.34, seed=seed)
        kept = tuple(u for u in ("MESH:D4", "MESH:D5") if u not in d.removed)
        seen.add(kept)
        if kept:
            assert d.dictionary.uids[d.dictionary.index_of("pd")] == kept, seed
    assert {("MESH:D5",), ("MESH:D4",), ("MESH:D4", "MESH:D5")} <= seen, seen
    with pytest.raises(KgnormError):
        nil_dev_set(DICT, NDEV, fraction=0.0)
    with pytest.raises(KgnormError):
        nil_dev_set(DICT, [("x", {"MESH:D1"})], fraction=0.5)


class _ToyLinker:
    """Exact string match scores 1, else 0.5 for a shared first letter, else 0."""

    def set_dictionary(self, d):
        self.d = self.dictionary = d

    def link(self, queries, top_k=1, batch_size=512):
        out = []
        for q in queries:
            sc = [(1.0 if n == q else 0.5 if n[0] == q[0] else 0.0, i)
                  for i, n in enumerate(self.d.names)]
            sc.sort(key=lambda x: (-x[0], x[1]))
            out.append([Candidate(i, self.d.uids[i], self.d.names[i], s)
                        for s, i in sc[:top_k]])
        return out


def test_evaluate_nil_end_to_end():
    s = nil_dev_set(DICT, [("heart attack", {"MESH:D1"}), ("fever", {"MESH:D3"}),
                           ("cough", {"MESH:D6"}), ("fevers", {"MESH:D3"})],
                    fraction=0.34, seed=1)
    model = _ToyLinker()
    model.set_dictionary(s.dictionary)
    ex, _ = nil_examples(s, concept_hits(model, s.queries))
    assert len(ex) == 4
    for e, kb in zip(ex, s.in_kb):
        assert e.in_kb == kb
        if not kb:
            assert not e.correct
    if any(not k for k in s.in_kb):
        t, _ = choose_threshold(ex, "auto")
        assert 0.0 <= nil_metrics(ex, t)["accuracy"] <= 1.0
