"""Relatedness (Spearman, unencodable pairs counted) and synonym MAP / coverage."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from kgnorm.errors import InputError, KgnormError
from kgnorm.evaluation.relatedness import (RelatednessPair, load_umnsrs, spearman_on,
                                           spearman_relatedness, wordvector_can_encode)
from kgnorm.evaluation.synonyms import (average_precision, mean_coverage, sample_queries,
                                        synonym_retrieval_map)
from kgnorm.encoders.wordvectors import WordVectors

CSV = '''"Mean","Stdev","Term1","Term2","CUI1","CUI2"
1200,10.5,"Heart attack","Myocardial infarction","C1","C2"
900,20,"Kidney failure","Renal disease","C3","C4"
300,5,"Heart attack","Fever","C1","C5"
100,1,"Fever","Kidney failure","C5","C3"
700,1,"Zorblax","Heart attack","C9","C1"
50,1,"Quux","Fever","C8","C5"
'''


@pytest.fixture(scope="module")
def wv():
    texts = ["heart attack", "myocardial infarction heart", "kidney failure",
             "renal disease kidney", "fever", "high fever"] * 10
    return WordVectors.train(texts, dim=8, epochs=3, bucket=300, workers=1, seed=0)


def test_load_umnsrs(tmp_path):
    p = tmp_path / "u.csv"
    p.write_text(CSV, encoding="utf-8")
    pairs = load_umnsrs(p)
    assert len(pairs) == 6
    assert pairs[0] == RelatednessPair("Heart attack", "Myocardial infarction", 1200.0,
                                       "C1", "C2", 10.5)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match="missing column"):
        load_umnsrs(bad)
    with pytest.raises(KgnormError):
        load_umnsrs(tmp_path / "nope.csv")


def test_spearman_counts_unencodable_pairs(tmp_path, wv):
    p = tmp_path / "u.csv"
    p.write_text(CSV, encoding="utf-8")
    pairs = load_umnsrs(p)
    # averaged word vectors, in-vocabulary words only: zorblax / quux are all-OOV
    rep = spearman_relatedness(wv.average, pairs, can_encode=wordvector_can_encode(wv),
                               name="avg")
    assert rep.n_pairs == 6 and rep.n_unencodable == 2 and rep.n_used == 4
    assert {(x.term1, x.term2) for x in rep.unencodable} == {("Zorblax", "Heart attack"),
                                                              ("Quux", "Fever")}
    assert rep.encodable.tolist() == [True, True, True, True, False, False]
    assert np.isnan(rep.similarities[4:]).all()
    # rho over the used pairs equals scipy on them
    v = wv.average([x.term1.lower() for x in pairs[:4]])
    w = wv.average([x.term2.lower() for x in pairs[:4]])
    cos = (v * w).sum(1) / np.linalg.norm(v, axis=1) / np.linalg.norm(w, axis=1)
    exp = spearmanr(cos, [x.score for x in pairs[:4]]).statistic
    assert rep.spearman == pytest.approx(exp, abs=1e-6)
    # all pairs: unencodable ones get cosine 0
    exp_all = spearmanr(np.r_[cos, 0, 0], [x.score for x in pairs]).statistic
    assert rep.spearman_all == pytest.approx(exp_all, abs=1e-6)
    # with fastText subwords every term gets a vector: nothing is unencodable
    rep2 = spearman_relatedness(wv.average, pairs,
                                can_encode=wordvector_can_encode(wv, subwords=True))
    assert rep2.n_unencodable == 0 and rep2.n_used == 6


def test_zero_vectors_are_unencodable():
    pairs = [RelatednessPair("a", "b", 3.0), RelatednessPair("a", "c", 2.0),
             RelatednessPair("b", "c", 1.0), RelatednessPair("d", "a", 0.5)]
    table = {"a": [1.0, 0.0], "b": [0.9, 0.1], "c": [0.5, -0.5], "d": [0.0, 0.0]}
    rep = spearman_relatedness(lambda ts: np.array([table[t] for t in ts]), pairs)
    assert rep.n_unencodable == 1 and rep.unencodable[0].term1 == "d"
    assert rep.spearman == pytest.approx(1.0)
    assert spearman_on([1, 2], [1, 2]) != spearman_on([1, 2], [1, 2])   # NaN below 3 pairs
    with pytest.raises(KgnormError):
        spearman_relatedness(lambda ts: np.zeros((1, 2)), pairs)


# ---------------------------------------------------------------- synonyms
CONCEPTS = {
    "A": ["heart attack", "myocardial infarction", "cardiac infarction"],
    "B": ["heart failure", "cardiac failure"],
    "C": ["kidney failure", "renal failure", "renal insufficiency"],
    "D": ["hearts attacked"],
}


def _oracle(ts):
    """A perfect encoder: one-hot of the concept."""
    cid = {n: i for i, (u, ns) in enumerate(sorted(CONCEPTS.items())) for n in ns}
    out = np.zeros((len(ts), len(CONCEPTS)), np.float32)
    for r, t in enumerate(ts):
        out[r, cid[t]] = 1.0
    return out


def test_average_precision_by_hand():
    assert average_precision([True, False, True]) == pytest.approx((1 + 2 / 3) / 2)
    assert np.isnan(average_precision([False, False]))


def test_synonym_map_oracle_vs_lexical_and_coverage():
    lex = synonym_retrieval_map(CONCEPTS, None, max_queries=None, k_concepts=2)
    perfect = synonym_retrieval_map(CONCEPTS, _oracle, max_queries=None, k_concepts=2)
    assert perfect.value == pytest.approx(1.0)
    assert lex.value < 1.0 and lex.n_queries == perfect.n_queries == 8   # D has one name
    assert perfect.mean_candidates >= 2
    cov = mean_coverage(CONCEPTS, _oracle, k=2, max_queries=None)
    assert cov.value == pytest.approx(1.0) and cov.n_queries == 8
    rnd = mean_coverage(CONCEPTS, lambda ts: np.random.default_rng(0).normal(
        size=(len(ts), 16)), k=1, max_queries=None)
    assert 0.0 <= rnd.value < 1.0
    q = sample_queries(*zip(*[(n, frozenset([u])) for u, ns in CONCEPTS.items() for n in ns]),
                       max_queries=3, seed=1)
    assert len(q) == 3 and all(u != "D" for _, u in q)
    with pytest.raises(KgnormError):
        synonym_retrieval_map(CONCEPTS, None, queries=[("not a name", "A")])
