"""Sampler guarantees on the toy hierarchy of test_hierarchy.py."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parent))
from test_hierarchy import toy_hierarchy  # noqa: E402

from kgnorm.errors import KgnormError  # noqa: E402
from kgnorm.graph.levels import build_levels  # noqa: E402
from kgnorm.samplers import (LevelTripletSampler, ParentPositiveSampler,  # noqa: E402
                             RandomNegativeSampler, SiblingNegativeSampler,
                             distance_weighted_negatives)


@pytest.fixture(scope="module")
def hier():
    return toy_hierarchy()


@pytest.fixture(scope="module")
def split(hier):
    return build_levels(hier, "R", seed=0)


def _emb(n, seed=0, dim=16):
    return np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)


@pytest.mark.parametrize("level", [1, 2, 3, 4])
@pytest.mark.parametrize("with_emb", [False, True])
def test_level_triplets_guarantees(split, level, with_emb):
    s = LevelTripletSampler(split, level, seed=3, triplets_per_name=2)
    emb = _emb(len(split.train)) if with_emb else None
    for epoch in range(3):
        s.set_epoch(epoch)
        t = s.sample(emb)
        # anchors labelled with every class of the level (MULTI on level 1) have no negative
        full = sum(1 for i in s.anchors
                   if len(split.train[i].labels[level]) == len(split.classes[level]))
        assert t.shape[1] == 3 and len(t) == len(s) - 2 * full
        for a, p, n in t:
            A, P, N = split.train[a], split.train[p], split.train[n]
            assert a != p
            assert A.labels[level] & P.labels[level]          # positive shares a class
            assert not (A.labels[level] & N.labels[level])    # negative shares none
            assert A.concept_uid != N.concept_uid
        assert set(np.unique(t[:, 0])) <= set(s.anchors.tolist())


def test_level_triplets_reproducible(split):
    s = LevelTripletSampler(split, 4, seed=0)
    emb = _emb(len(split.train))
    for e in (None, emb):
        s.set_epoch(5)
        a = s.sample(e)
        b = LevelTripletSampler(split, 4, seed=0)
        b.set_epoch(5)
        assert np.array_equal(a, b.sample(e))
        assert np.array_equal(a, s.sample(e))              # same epoch, same triplets
        s.set_epoch(6)
        assert not np.array_equal(a, s.sample(e))          # next epoch differs
        c = LevelTripletSampler(split, 4, seed=1)
        c.set_epoch(5)
        assert not np.array_equal(a, c.sample(e))          # other seed differs
    names = list(LevelTripletSampler(split, 2, seed=0))
    assert names and isinstance(names[0].anchor, str)


def test_level_triplets_bad_level(split):
    with pytest.raises(KgnormError):
        LevelTripletSampler(split, 5)
    s = LevelTripletSampler(split, 1)
    with pytest.raises(KgnormError):
        s.sample(np.zeros((3, 4)))


def test_distance_weighted_prefers_close_negatives():
    # anchor 0 (class 0); candidates 1..40 in class 1; item 1 is close to the anchor,
    # items 2..40 are far (beyond the 1.4 cutoff)
    rng = np.random.default_rng(0)
    dim = 32
    anchor = np.zeros(dim, np.float32)
    anchor[0] = 1
    close = anchor.copy()
    close[1] = 0.6
    far = np.zeros((39, dim), np.float32)
    far[:, 0] = -1
    far += rng.normal(scale=0.05, size=far.shape)
    emb = np.vstack([anchor, close, far, anchor + 0.01])    # item 41: same class as anchor
    labels = sp.csr_matrix(np.array([[1, 0]] + [[0, 1]] * 40 + [[1, 0]], dtype=np.float32))
    picks = distance_weighted_negatives(emb, np.zeros(200, np.int64), labels, rng)
    assert (picks == 1).mean() > 0.95                      # far ones get zero weight
    assert not np.isin(picks, [0, 41]).any()               # never itself nor its class
    # everything beyond the cutoff -> uniform over valid candidates
    emb2 = np.vstack([anchor, far, far[:1]])
    labels2 = sp.csr_matrix(np.array([[1, 0]] + [[0, 1]] * 40, dtype=np.float32))
    picks2 = distance_weighted_negatives(emb2, np.zeros(400, np.int64), labels2, rng)
    assert len(np.unique(picks2)) > 20 and (picks2 > 0).all()
    # no valid candidate at all -> -1
    none = distance_weighted_negatives(emb[:2], np.array([0]), sp.csr_matrix(np.ones((2, 1))),
                                       rng)
    assert none.tolist() == [-1]


def test_parent_positives(hier, split):
    s = ParentPositiveSampler(hier, split, k=2, seed=0)
    pairs = s.sample()
    assert pairs
    for p in pairs:
        assert p.other_uid in hier.parents(p.anchor_uid)
        assert p.other in hier.all_names(p.other_uid)
    multi = [p for p in pairs if p.anchor_uid == "MULTI"]
    assert multi and all(len([q for q in multi if q.anchor == a]) <= 2
                         for a in {p.anchor for p in multi})
    # k larger than the pool -> the whole pool; MULTI has two one-name parents
    s5 = ParentPositiveSampler(hier, [("calcified stenosis", "MULTI")], k=5)
    assert {p.other_uid for p in s5.sample()} == {"L4_0", "L4_15"}
    # all names of the hierarchy by default; roots give nothing
    every = ParentPositiveSampler(hier, k=1).sample()
    assert not any(p.anchor_uid in ("R", "ISOLATED") for p in every)
    _check_epochs(ParentPositiveSampler(hier, split, k=1, seed=0))
    with pytest.raises(KgnormError):
        ParentPositiveSampler(hier, split, k=0)


def test_sibling_negatives(hier, split):
    s = SiblingNegativeSampler(hier, split, k=3, seed=0)
    pairs = s.sample()
    assert pairs
    for p in pairs:
        assert p.other_uid != p.anchor_uid
        assert p.other_uid in hier.siblings(p.anchor_uid)
        assert p.other_uid not in hier.ancestors(p.anchor_uid)
        assert p.anchor_uid not in hier.ancestors(p.other_uid)
        assert p.other not in hier.all_names(p.anchor_uid)
    assert {p.other_uid for p in pairs if p.anchor_uid == "MULTI"} <= \
        {"L5_0", "L5_1", "L5_30", "L5_31"}
    _check_epochs(SiblingNegativeSampler(hier, split, k=1, seed=0))


def test_random_negatives(hier, split):
    s = RandomNegativeSampler(hier, split, k=2, seed=0)
    pairs = s.sample()
    assert len(pairs) == 2 * len(split.train)
    for p in pairs:
        assert p.other_uid != p.anchor_uid
        assert p.other not in hier.all_names(p.anchor_uid)
        assert p.other_uid not in hier.ancestors(p.anchor_uid)
        assert p.anchor_uid not in hier.ancestors(p.other_uid)
    lv = RandomNegativeSampler(hier, split, k=2, seed=0, level=2)
    by = {(it.name, it.concept_uid): it for it in split.train}
    for p in lv.sample():
        assert not (by[(p.anchor, p.anchor_uid)].labels[2] & by[(p.other, p.other_uid)].labels[2])
    _check_epochs(RandomNegativeSampler(hier, split, k=1, seed=0))
    with pytest.raises(KgnormError):
        RandomNegativeSampler(hier, [("a", "L5_0")], level=2)


def _check_epochs(sampler):
    sampler.set_epoch(0)
    a = sampler.sample()
    assert a == sampler.sample()
    sampler.set_epoch(1)
    assert a != sampler.sample()


def test_level_triplets_preferred_positives(split):
    from dataclasses import replace
    n = len(split.train)
    ext = replace(split, train=list(split.train) + split.class_items(3))
    s = LevelTripletSampler(ext, 3, seed=0, preferred_positives=range(n, len(ext.train)),
                            preferred_prob=1.0)
    t = s.sample()
    for a, p, neg in t:
        A, P = ext.train[a], ext.train[p]
        assert A.labels[3] & P.labels[3] and a != p
        assert not (A.labels[3] & ext.train[neg].labels[3])
    plain = t[t[:, 0] < n]
    assert (plain[:, 1] >= n).all()          # every plain anchor gets a class-name positive
    assert {ext.train[p].concept_uid for p in plain[:, 1]} <= \
        set(split.classes[3]) | set(split.classes[4])
