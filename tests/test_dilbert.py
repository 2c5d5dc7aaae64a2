"""DILBERT: triplet loss, sampling strategies' guarantees, training, resume, model dir."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from kgnorm.methods.dilbert.model import DilbertModel, load_dilbert
from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.linking.candidates import Candidate
from kgnorm.encoders.dense import DenseEncoder
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.methods.model_dir import read_model_meta
from kgnorm.methods.dilbert.train import (STRATEGIES, DilbertConfig, DilbertSampler,
                                     make_triplets, synonym_anchor_pairs, train_dilbert,
                                     triplet_loss)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#            R
#        /       \
#      D1 (heart)  D2 (kidney)
#     /    \          |    \
#   D3      D4        D5    D6
NAMES = {
    "R": ["disease"],
    "D1": ["heart disease", "cardiac disease"],
    "D2": ["kidney disease", "renal disease"],
    "D3": ["heart attack", "myocardial infarction", "cardiac infarction"],
    "D4": ["heart failure", "cardiac failure"],
    "D5": ["renal failure", "kidney failure"],
    "D6": ["kidney cancer", "renal tumor"],
}
IS_A = [("D1", "R"), ("D2", "R"), ("D3", "D1"), ("D4", "D1"), ("D5", "D2"), ("D6", "D2")]
ENTRIES = [(n, "MESH:" + u) for u, ns in NAMES.items() for n in ns] + [("pd", "MESH:D6")]
ALT = {"MESH:D5": ["OMIM:5"]}
TRAIN = [("heart attacks", {"MESH:D3"}), ("kidney failures", {"OMIM:5"}),
         ("heart failures", {"MESH:D4"}), ("renal tumour", {"MESH:D6"}),
         ("unknown thing", {"MESH:D99"})]
DEV = [("cardiac infarctions", {"MESH:D3"}), ("renal failures", {"MESH:D5"})]


@pytest.fixture(scope="module")
def dictionary():
    return NameDictionary.from_entries(ENTRIES, alt_ids=ALT)


@pytest.fixture(scope="module")
def hierarchy():
    return Hierarchy.from_edges({"MESH:" + u: ns for u, ns in NAMES.items()},
                                [("MESH:" + c, "MESH:" + p) for c, p in IS_A])


def _sampler(dictionary, strategy, hierarchy=None, **kw):
    qs = [q for q, _ in TRAIN]
    gs = [frozenset(g) for _, g in TRAIN]
    return DilbertSampler(dictionary, qs, gs, strategy, hierarchy, seed=0, **kw)


def _gold_rows(dictionary, golds):
    out = set()
    for i, us in enumerate(dictionary.uids):
        ids = set(us) | {a for u in us for a in dictionary.alt_ids.get(u, ())}
        if ids & golds:
            out.add(i)
    return out


# ---------------------------------------------------------------- loss
def test_triplet_loss_by_hand():
    a = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    p = torch.tensor([[3.0, 4.0], [1.0, 0.0]])      # d(a, p) = 5, 1
    n = torch.tensor([[0.0, 1.0], [0.0, 3.0]])      # d(a, n) = 1, 3
    got = triplet_loss(a, p, n, margin=1.0)
    assert got.item() == pytest.approx(((5 - 1 + 1) + 0.0) / 2, abs=1e-4)
    a = torch.tensor([[1.0, 0.0]])
    got = triplet_loss(a, torch.tensor([[0.0, 2.0]]), torch.tensor([[3.0, 0.0]]),
                       margin=0.5, distance="cosine")
    assert got.item() == pytest.approx(1.0 - 0.0 + 0.5, abs=1e-5)
    with pytest.raises(KgnormError):
        triplet_loss(a, a, a, distance="manhattan")


def test_semi_hard_mining_drops_triplets_whose_negative_is_closer():
    a = torch.tensor([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    p = torch.tensor([[3.0, 4.0], [1.0, 0.0], [2.0, 0.0]], requires_grad=True)  # d(a, p) = 5, 1, 2
    n = torch.tensor([[0.0, 1.0], [0.0, 3.0], [0.0, 2.5]])                       # d(a, n) = 1, 3, 2.5
    # triplet 0 (negative closer: hard) is left out; 1 is easy (loss 0); 2 is semi-hard (0.5)
    got = triplet_loss(a, p, n, margin=1.0, mining="semi-hard")
    assert got.item() == pytest.approx((0.0 + 0.5) / 2, abs=1e-5)
    got.backward()
    assert torch.all(p.grad[0] == 0) and torch.any(p.grad[2] != 0)
    # only hard triplets: zero loss, still differentiable
    only_hard = triplet_loss(a[:1], p[:1].detach().requires_grad_(), n[:1], mining="semi-hard")
    assert only_hard.item() == 0.0 and only_hard.requires_grad
    with pytest.raises(KgnormError, match="semi-hard"):
        triplet_loss(a, p, n, mining="hardest")


# ---------------------------------------------------------------- sampling guarantees
def test_unknown_strategy_lists_the_valid_ones(dictionary):
    with pytest.raises(KgnormError) as e:
        _sampler(dictionary, "hardest")
    for s in STRATEGIES:
        assert s in str(e.value)
    with pytest.raises(KgnormError, match="hierarchy"):
        _sampler(dictionary, "random+parents")
    with pytest.raises(KgnormError, match="hierarchy"):
        _sampler(dictionary, "resampling+siblings")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_strategy_guarantees(dictionary, hierarchy, strategy):
    s = _sampler(dictionary, strategy, hierarchy, max_positives=2, n_negatives=3,
                 k_parents=2, k_siblings=2)
    assert len(s) == 4 and s.n_skipped == 1              # MESH:D99 is not in the dictionary
    rng = np.random.default_rng(0)
    # a fake current-model ranking: every row, in a random order per query
    ranked = np.stack([rng.permutation(len(dictionary)) for _ in range(len(s))])
    for epoch in range(3):
        s.set_epoch(epoch)
        samples = s.sample(ranked if s.needs_ranking else None)
        assert samples == s.sample(ranked if s.needs_ranking else None)  # per-epoch seeding
        for i, smp in enumerate(samples):
            gold_rows = _gold_rows(dictionary, smp.golds)
            gold_names = {dictionary.names[r] for r in gold_rows}
            syn = [p for p in smp.positives if p[2] == "synonym"]
            assert 1 <= len(syn) <= 2
            for name, uid, kind in smp.positives:
                assert name != smp.query
                if kind == "synonym":
                    assert name in gold_names             # shares the gold concept
                else:
                    assert kind == "parent" and strategy == "random+parents"
                    gold = s.items[i][1]
                    assert uid in hierarchy.parents(gold)
                    assert name in NAMES[uid.split(":")[1]]
            assert len([n for n in smp.negatives if n[2] != "sibling"]) == 3
            for name, uids, kind in smp.negatives:
                row = dictionary.index_of(name)
                assert row not in gold_rows               # never a gold uid
                assert not set(uids) & smp.golds
                if kind == "sibling":
                    assert strategy == "resampling+siblings"
                    assert uids[0] in hierarchy.siblings(s.items[i][1])
                if kind == "hard":
                    assert strategy.startswith("resampling")
            if strategy == "random+parents":
                assert any(p[2] == "parent" for p in smp.positives)
            if strategy == "resampling+siblings":
                assert any(n[2] == "sibling" for n in smp.negatives)
            if strategy.startswith("resampling"):
                # hard negatives = the names ranked above the first gold, hardest first
                order = [int(r) for r in ranked[i]]
                first = next(k for k, r in enumerate(order) if r in gold_rows)
                above = [dictionary.names[r] for r in order[:first]
                         if dictionary.names[r] != smp.query][:3]
                hard = [n[0] for n in smp.negatives if n[2] == "hard"]
                assert hard[:len(above)] == above
    if s.needs_ranking:
        with pytest.raises(KgnormError, match="ranking"):
            s.sample(None)
    else:
        s.set_epoch(0)
        a = s.sample()
        s.set_epoch(1)
        assert a != s.sample()


def test_make_triplets_pairings(dictionary):
    s = _sampler(dictionary, "random", max_positives=30, n_negatives=5)
    s.set_epoch(0)
    samples = s.sample()
    prod = make_triplets(samples, "product")
    cyc = make_triplets(samples, "cycle")
    assert len(prod) == sum(len(x.positives) * len(x.negatives) for x in samples)
    assert len(cyc) == sum(max(len(x.positives), len(x.negatives)) for x in samples)
    shuffled = make_triplets(samples, "product", np.random.default_rng(1))
    assert sorted(shuffled) == sorted(prod)
    with pytest.raises(KgnormError):
        make_triplets(samples, "zip")
    with pytest.raises(KgnormError, match="batching"):
        make_triplets(samples, "product", np.random.default_rng(1), batching="bucket")


def test_make_triplets_mention_batching_keeps_mentions_together(dictionary):
    s = _sampler(dictionary, "random", max_positives=30, n_negatives=5)
    s.set_epoch(0)
    samples = s.sample()
    prod = make_triplets(samples, "product")
    grouped = make_triplets(samples, "product", np.random.default_rng(1), batching="mention")
    assert sorted(grouped) == sorted(prod)
    anchors = [t[0] for t in grouped]
    runs = [a for i, a in enumerate(anchors) if i == 0 or anchors[i - 1] != a]
    assert sorted(runs) == sorted({x.query for x in samples if x.positives and x.negatives})
    # the mention order is shuffled with the seed
    orders = {tuple(dict.fromkeys(t[0] for t in make_triplets(samples, "product", np.random.default_rng(k),
                                                               batching="mention")))
              for k in range(6)}
    assert len(orders) > 1


# ---------------------------------------------------------------- training / model dir
def _encoder(path):
    torch.manual_seed(0)
    return DenseEncoder(path, pooling="mean", max_length=12, device="cpu")


def test_train_random_save_load_resume(tiny_bert_dir, dictionary, tmp_path):
    cfg = DilbertConfig(strategy="random", epochs=2, batch_size=8, learning_rate=1e-3,
                        max_positives=3, n_negatives=2, pairing="cycle", seed=0)
    r = train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "m",
                      config=cfg, progress=False, ontology={"name": "toy"})
    assert r.epochs_completed == 2 and r.info["n_queries"] == 4 and r.info["n_skipped"] == 1
    assert [h["epoch"] for h in r.history] == [0, 1, 2]      # 0: the starting encoder on dev
    assert all(np.isfinite(h["loss"]) for h in r.history[1:])
    meta = read_model_meta(tmp_path / "m")
    assert meta["method"] == "dilbert" and meta["distance"] == "euclidean"
    assert meta["encoder"]["pooling"] == "mean"
    m = load_dilbert(tmp_path / "m")
    res = m.link(["heart attack", "kidney failure"], top_k=4)
    assert all(isinstance(c, Candidate) for row in res for c in row)
    assert res[0][0].name == "heart attack"
    # score = -euclidean distance, checked against brute force
    q = m.encode(["kidney failure"])[0]
    X = m.encode(dictionary.names)
    d = np.linalg.norm(X - q, axis=1)
    order = np.argsort(d, kind="stable")[:4]
    assert [c.name_idx for c in res[1]] == order.tolist()
    # squared: near 0 a square root turns float32 cancellation (~1e-6) into ~1e-3
    assert [c.score ** 2 for c in res[1]] == pytest.approx((d[order] ** 2).tolist(), abs=1e-3)
    assert m.distance_of(res[1][0].score) ** 2 == pytest.approx(d[order[0]] ** 2, abs=1e-3)

    # resume to 3 epochs equals 3 epochs straight
    cfg3 = DilbertConfig(**{**cfg.to_dict(), "epochs": 3})
    r2 = train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "m",
                       config=cfg3, progress=False)
    assert r2.resumed_from == {"epoch": 2, "step": 0} and r2.epochs_completed == 3
    assert [h["epoch"] for h in r2.history] == [0, 1, 2, 3]  # epoch 0 is not evaluated again
    straight = train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "s",
                             config=cfg3, progress=False)
    assert [h["loss"] for h in straight.history[1:]] == pytest.approx(
        [h["loss"] for h in r2.history[1:]], rel=1e-4)
    with pytest.raises(KgnormError, match="other data or settings"):
        train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "m",
                      config=DilbertConfig(**{**cfg3.to_dict(), "margin": 2.0}),
                      progress=False)


def test_time_budget_through_the_loop_then_a_larger_one_resumes(tiny_bert_dir, dictionary, tmp_path):
    """max_seconds=0: the first epoch runs, no second starts; the budget is not fingerprinted,
    so the same run continues without it."""
    cfg = DilbertConfig(strategy="random", epochs=2, batch_size=8, learning_rate=1e-3,
                        max_positives=2, n_negatives=1, pairing="cycle", seed=0, max_seconds=0.0)
    r = train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "b",
                      config=cfg, progress=False)
    assert r.epochs_completed == 1 and r.stop_reason == "max_seconds"
    r = train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "b",
                      config=DilbertConfig(**{**cfg.to_dict(), "max_seconds": None}), progress=False)
    assert r.resumed_from == {"epoch": 1, "step": 0}
    assert r.epochs_completed == 2 and r.stop_reason == "epochs"
    assert [h["epoch"] for h in r.history] == [0, 1, 2]


def test_starting_encoder_competes_as_epoch_zero(tiny_bert_dir, dictionary, tmp_path):
    # lr 0: training leaves the weights as they were, so no epoch beats (ties with) epoch 0
    # and the model written is the starting encoder
    cfg = DilbertConfig(strategy="random", epochs=1, batch_size=8, learning_rate=0.0,
                        max_positives=2, n_negatives=1, pairing="cycle", seed=0)
    r = train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "z",
                      config=cfg, progress=False)
    assert r.best_epoch == 0 and r.history[0]["epoch"] == 0
    assert r.best_value == r.history[0]["dev"]["acc@1"] == r.history[1]["dev"]["acc@1"]
    assert read_model_meta(tmp_path / "z")["metrics"]["epoch"] == 0
    start = _encoder(tiny_bert_dir).embed(["heart attack"]).detach().numpy()
    assert np.allclose(load_dilbert(tmp_path / "z").encode(["heart attack"]), start, atol=1e-5)
    # without the epoch-0 candidate the trained epoch is the one written
    r = train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "n",
                      config=DilbertConfig(**{**cfg.to_dict(), "eval_initial": False}),
                      progress=False)
    assert r.best_epoch == 1 and [h["epoch"] for h in r.history] == [1]


def test_synonym_anchor_pairs(dictionary):
    # with a training mention merged in and a name shared by two concepts
    d = NameDictionary.from_entries(ENTRIES + [("cardiac failure", "MESH:D1")], alt_ids=ALT)
    d = d.with_mentions([("heart attacks", {"MESH:D3"})])
    pairs = synonym_anchor_pairs(d, 100, seed=0)
    uids = [next(iter(g)) for _, g in pairs]
    # one anchor per concept with two single-concept dictionary names; "R" has one name,
    # D4 keeps only "heart failure" once "cardiac failure" is shared
    assert sorted(uids) == sorted("MESH:" + u for u in ("D1", "D2", "D3", "D5", "D6"))
    for name, gold in pairs:
        row = d.index_of(name)
        assert d.uids[row] == tuple(gold) and not d.is_mention[row]
        assert name not in ("cardiac failure", "heart attacks")
    assert synonym_anchor_pairs(d, 100, seed=0) == pairs                      # seeded
    assert len(synonym_anchor_pairs(d, 2, seed=0)) == 2
    assert synonym_anchor_pairs(d, 0, seed=0) == []


def test_synonym_anchors_join_the_training_queries(tiny_bert_dir, dictionary, tmp_path):
    cfg = DilbertConfig(strategy="random", epochs=1, batch_size=8, learning_rate=1e-3,
                        max_positives=2, n_negatives=1, pairing="cycle", seed=0,
                        synonym_anchors=3, eval_initial=False)
    r = train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "a",
                      config=cfg, progress=False)
    assert r.info["n_queries"] == 4 + 3 and r.history[0]["triplets"] > 0
    with pytest.raises(KgnormError, match="other data or settings"):  # anchors change the data
        train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, DEV, tmp_path / "a",
                      config=DilbertConfig(**{**cfg.to_dict(), "epochs": 2, "synonym_anchors": 4}),
                      progress=False)


def test_train_resampling_siblings_cosine(tiny_bert_dir, dictionary, hierarchy, tmp_path):
    cfg = DilbertConfig(strategy="resampling+siblings", epochs=2, batch_size=16,
                        learning_rate=1e-3, max_positives=2, n_negatives=2, distance="cosine",
                        resample_depth=6, checkpoint_every_steps=1, seed=0)
    r = train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, None, tmp_path / "c",
                      config=cfg, hierarchy=hierarchy, progress=False)
    assert r.best_value is None and r.best_epoch == 2
    assert all(np.isfinite(h["loss"]) for h in r.history)
    m = load_dilbert(tmp_path / "c")
    assert m.distance == "cosine"
    res = m.link(["heart failure"], top_k=2)[0]
    assert res[0].score == pytest.approx(1.0, abs=1e-4)   # the exact name, cosine 1
    with pytest.raises(KgnormError, match="valid: random"):
        train_dilbert(_encoder(tiny_bert_dir), dictionary, TRAIN, None, tmp_path / "x",
                      config=DilbertConfig(strategy="nope"), progress=False)


def test_triplet_loss_decreases(tiny_bert_dir, dictionary):
    enc = _encoder(tiny_bert_dir)
    enc.model.train()
    s = _sampler(dictionary, "random", max_positives=3, n_negatives=2)
    s.set_epoch(0)
    trip = make_triplets(s.sample(), "cycle")
    opt = torch.optim.Adam(enc.model.parameters(), lr=1e-3)
    losses = []
    for _ in range(15):
        a = enc.embed([t[0] for t in trip])
        p = enc.embed([t[1] for t in trip])
        n = enc.embed([t[2] for t in trip])
        loss = triplet_loss(a, p, n)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_model_without_dictionary_and_bad_distance(tiny_bert_dir):
    m = DilbertModel(_encoder(tiny_bert_dir))
    with pytest.raises(KgnormError, match="dictionary"):
        m.link(["x"])
    with pytest.raises(KgnormError, match="distance"):
        DilbertModel(_encoder(tiny_bert_dir), distance="l1")
