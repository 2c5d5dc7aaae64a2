"""Hypernym ranking and the hierarchy evaluation (mAP / MRR per level)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parent))

from kgnorm.errors import KgnormError  # noqa: E402
from kgnorm.evaluation.hierarchy import (char_tfidf_encoder, evaluate_hierarchy,  # noqa: E402
                                         format_results, hypernym_mrr, label_matrix,
                                         mean_average_precision, word_vector_encoder)
from kgnorm.linking.hypernyms import rank_hypernyms  # noqa: E402
from kgnorm.encoders.wordvectors import tokenize  # noqa: E402


def bow_encoder(vocab):
    index = {w: i for i, w in enumerate(vocab)}

    def encode(names):
        out = np.zeros((len(names), len(vocab)), np.float32)
        for r, n in enumerate(names):
            for t in tokenize(n):
                if t in index:
                    out[r, index[t]] += 1
        return out
    return encode


def test_rank_hypernyms_best_name_and_order():
    enc = bow_encoder(["heart", "kidney", "valve", "liver", "rhythm"])
    uids = ["C:heart", "C:kidney", "C:liver", "C:empty"]
    names = {"C:heart": ["cardiac thing", "heart valve"], "C:kidney": ["kidney"],
             "C:liver": ["liver", "liver kidney"], "C:empty": []}
    hits = rank_hypernyms(enc, ["valve of heart", "kidney", "valve of heart"], uids, names,
                          top_k=5)
    first = [h for h in hits if h.query == "valve of heart"][:3]
    assert [h.rank for h in first] == [1, 2, 3]
    assert first[0].uid == "C:heart" and first[0].name == "heart valve"
    assert first[0].score == pytest.approx(1.0, abs=1e-6)
    assert len(hits) == 9                       # 3 named concepts per query; C:empty skipped
    k = [h for h in hits if h.query == "kidney"]
    assert k[0].uid == "C:kidney" and k[1].uid == "C:liver" and k[1].name == "liver kidney"
    assert [h.score for h in k] == sorted([h.score for h in k], reverse=True)
    assert [h.query for h in hits] == ["valve of heart"] * 3 + ["kidney"] * 3 + \
        ["valve of heart"] * 3
    # aligned sequence of names (bare strings allowed) and a sparse encoder give the same
    aligned = [["cardiac thing", "heart valve"], "kidney", ["liver", "liver kidney"]]
    sparse_enc = lambda n: sp.csr_matrix(enc(n))  # noqa: E731
    again = rank_hypernyms(sparse_enc, ["kidney"], uids[:3], aligned, top_k=2)
    assert [(h.uid, h.name) for h in again] == [(h.uid, h.name) for h in k[:2]]
    assert rank_hypernyms(enc, [], uids, names) == []
    with pytest.raises(KgnormError):
        rank_hypernyms(enc, ["x"], ["C:empty"], names)
    with pytest.raises(KgnormError):
        rank_hypernyms(enc, ["x"], uids, names, top_k=0)


def test_rank_hypernyms_many_queries():
    # speed is measured by benchmarks/hierarchy.py, not here: a loaded machine fails timed tests
    rng = np.random.default_rng(0)
    table = rng.normal(size=(5000, 64)).astype(np.float32)
    enc = lambda names: table[[int(n.split()[1]) % 5000 for n in names]]  # noqa: E731
    uids = [f"U{i}" for i in range(1000)]
    names = {u: [f"name {i}", f"syn {i + 1000}"] for i, u in enumerate(uids)}
    queries = [f"q {i}" for i in range(3000)]
    hits = rank_hypernyms(enc, queries, uids, names, top_k=10)
    assert len(hits) == 30000


def test_average_precision_against_bruteforce():
    from sklearn.metrics import average_precision_score
    rng = np.random.default_rng(1)
    q = rng.normal(size=(7, 5)).astype(np.float32)
    p = rng.normal(size=(30, 5)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    p[:7] = q                                           # queries are pool rows 0..6
    ql_d = rng.integers(0, 2, size=(7, 3)).astype(np.float32)
    pl_d = rng.integers(0, 2, size=(30, 3)).astype(np.float32)
    pl_d[:7] = ql_d
    ql, pl = sp.csr_matrix(ql_d), sp.csr_matrix(pl_d)
    got = mean_average_precision(q, p, {1: ql}, {1: pl}, np.arange(7), chunk_size=3)[1]
    aps = []
    for i in range(7):
        keep = np.arange(30) != i
        rel = (pl[keep] @ ql[i].T).toarray().ravel() > 0
        if rel.any():
            aps.append(average_precision_score(rel, p[keep] @ q[i]))
    assert got == pytest.approx(np.mean(aps), abs=1e-6)


def test_mrr_ties_and_groups():
    q = np.array([[1.0, 0.0]], np.float32)
    cls = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.6, 0.8]], np.float32)
    # classes: A = rows 0..1 (best 1.0), B = row 2 (1.0, tie), C = row 3
    starts = np.array([0, 2, 3])
    lab = sp.csr_matrix(np.array([[0, 0, 1]], np.float32))      # correct: C
    assert hypernym_mrr(q, {1: lab}, {1: cls}, {1: starts})[1] == pytest.approx(1 / 3)
    lab = sp.csr_matrix(np.array([[1, 0, 0]], np.float32))      # correct: A, tied with B
    assert hypernym_mrr(q, {1: lab}, {1: cls}, {1: starts})[1] == pytest.approx(1 / 1.5)


def test_evaluate_hierarchy_oracle_and_baselines(split):
    # oracle: a name's vector is the one-hot of its concept's level-4 class(es); class
    # names of every level are encoded through a lookup of their own uid's descendants
    uid_of = {}
    for it in split.items():
        uid_of.setdefault(it.name, set()).update(it.labels[4])
    c4 = {c: i for i, c in enumerate(split.classes[4])}
    l4_of_class = {c: {c} for c in split.classes[4]}
    for it in split.items():
        for k in (1, 2, 3):
            for c in it.labels[k]:
                l4_of_class.setdefault(c, set()).update(it.labels[4])
    name_to_classes = dict(uid_of)
    for k in (1, 2, 3, 4):
        for c, ns in split.class_names[k].items():
            for n in ns:
                name_to_classes.setdefault(n, set()).update(l4_of_class[c])

    def oracle(names):
        out = np.zeros((len(names), len(c4)), np.float32)
        for r, n in enumerate(names):
            for c in name_to_classes.get(n, ()):
                out[r, c4[c]] = 1
        return out

    res = evaluate_hierarchy(oracle, split)
    assert res["queries"] == len(split.test) and res["pool"] == len(split.train) + len(split.test)
    assert res["map"][4] > 0.95 and res["mrr"][4] > 0.95
    val = evaluate_hierarchy(oracle, split, levels=(2,), queries="val", metrics=("map",))
    assert set(val) >= {"map"} and "mrr" not in val and 0 < val["map"][2] <= 1
    tfidf = evaluate_hierarchy(char_tfidf_encoder([it.name for it in split.items()]), split,
                               class_names="preferred")
    assert all(0 < tfidf["map"][k] <= 1 and 0 < tfidf["mrr"][k] <= 1 for k in (1, 2, 3, 4))
    table = format_results({"oracle": res, "tfidf": tfidf})
    assert "mAP@4" in table and "oracle" in table
    with pytest.raises(KgnormError):
        evaluate_hierarchy(oracle, split, levels=(5,))
    with pytest.raises(KgnormError):
        evaluate_hierarchy(oracle, split, queries="train")


def test_label_matrix(split):
    m = label_matrix(split.train, 1, split.classes[1])
    assert m.shape == (len(split.train), 2)
    assert (np.asarray(m.sum(axis=1)).ravel() >= 1).all()


def test_word_vector_baseline(split):
    from kgnorm.encoders.wordvectors import WordVectors
    wv = WordVectors.train([it.name for it in split.items()], dim=8, epochs=1, bucket=100,
                           workers=1)
    res = evaluate_hierarchy(word_vector_encoder(wv), split, levels=(1, 4))
    assert set(res["map"]) == {1, 4}
