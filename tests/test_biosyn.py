import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Candidate
from kgnorm.methods.biosyn.model import BioSynModel
from kgnorm.encoders.dense import DenseEncoder
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.methods.biosyn.model import load_biosyn
from kgnorm.methods.model_dir import read_model_meta, write_model_meta
from kgnorm.methods.biosyn import train as tb
from kgnorm.losses.marginal_nll import marginal_nll
from kgnorm.methods.biosyn.train import BioSynConfig, train_biosyn

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ENTRIES = [
    ("heart attack", "MESH:D1"), ("myocardial infarction", "MESH:D1"),
    ("renal failure", "MESH:D2"), ("kidney failure", "MESH:D2"),
    ("acute kidney failure", "MESH:D3"), ("parkinson disease", "MESH:D4"),
    ("pd", "MESH:D4"), ("pd", "OMIM:168600"), ("pd", "MESH:D4"),
    ("breast cancer", "MESH:D5"), ("breast tumor", "MESH:D5"), ("lung cancer", "MESH:D6"),
    ("liver cancer", "MESH:D7"), ("fever", "MESH:D8"), ("type 2 diabetes", "MESH:D9"),
    ("diabetes", "MESH:D10"), ("hypertension", "MESH:D11"), ("hypotension", "MESH:D12"),
    ("toe pain", "MESH:D13"), ("finger pain", "MESH:D14"), ("chronic renal failure", "MESH:D15"),
]
ALT = {"MESH:D4": ["OMIM:168600"], "MESH:D2": ["OMIM:100000"]}
TRAIN = [("heart attacks", {"MESH:D1"}), ("kidney failures", {"MESH:D2"}),
         ("breast tumour", {"MESH:D5"}), ("parkinsons disease", {"MESH:D4"}),
         ("fevers", {"MESH:D8"}), ("diabetes type 2", {"MESH:D9"}),
         ("lung tumor", {"MESH:D6"}), ("pain of toe", {"MESH:D13"}),
         ("heart attacks", {"MESH:D1"}), ("liver tumor", {"MESH:D7"})]
DEV = [("heart attack acute", {"MESH:D1"}), ("renal failures", {"OMIM:100000"}),
       ("hypertensions", {"MESH:D11"})]


@pytest.fixture
def dictionary():
    return NameDictionary.from_entries(ENTRIES, alt_ids=ALT)


@pytest.fixture
def model(tiny_bert_dir, dictionary):
    torch.manual_seed(0)
    enc = DenseEncoder(tiny_bert_dir, pooling="cls", max_length=16, device="cpu")
    return BioSynModel(enc, dictionary, sparse_weight=1.0, k_sparse=5, k_dense=5)


# ---------------------------------------------------------------- dictionary
def test_dictionary_dedupe_multi_uid_and_round_trip(dictionary, tmp_path):
    assert len(dictionary) == 19
    i = dictionary.index_of("pd")
    assert dictionary.uids[i] == ("MESH:D4", "OMIM:168600")
    assert dictionary.rows_of("MESH:D4") == [dictionary.index_of("parkinson disease"), i]
    assert "OMIM:168600" in dictionary.expanded_uids(dictionary.index_of("parkinson disease"))
    d2 = dictionary.with_mentions([("heart attacks", "MESH:D1"), ("pd", ["MESH:D99"]),
                                   ("odd\tname\\x", "MESH:D1"), ("nil", "-1")])
    assert len(d2) == len(dictionary) + 2 and len(dictionary) == 19
    assert d2.is_mention[-1] and not d2.is_mention[i]
    assert d2.uids[i] == ("MESH:D4", "OMIM:168600", "MESH:D99")
    # a set of gold uids gives its uids sorted, whatever the process's hash seed
    script = ("from kgnorm.linking.dictionary import NameDictionary as D; "
              "print(D.from_entries([('a', 'X:1')]).with_mentions([('b', set('QWERTYUIOP'))]).uids[1])")
    outs = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert outs == {repr(tuple(sorted("QWERTYUIOP"))) + "\n"}
    d2.save(tmp_path / "names")
    d3 = NameDictionary.load(tmp_path / "names")
    assert d3.names == d2.names and d3.uids == d2.uids and d3.is_mention == d2.is_mention
    assert d3.alt_ids == d2.alt_ids
    with pytest.raises(KgnormError):
        NameDictionary(names=["a", "a"], uids=[("X",), ("Y",)])
    with pytest.raises(KgnormError):
        NameDictionary.from_entries([("a", "X|Y")])


# ---------------------------------------------------------------- linking
def test_link_returns_ranked_candidates(model, dictionary):
    res = model.link(["heart attack", "kidney failure acute", "zzz"], top_k=4)
    assert len(res) == 3 and all(len(r) == 4 for r in res)
    for row in res:
        assert all(isinstance(c, Candidate) for c in row)
        scores = [c.score for c in row]
        assert scores == sorted(scores, reverse=True)
        assert len({c.name_idx for c in row}) == len(row)
        for c in row:
            assert c.name == dictionary.names[c.name_idx] and c.uids == dictionary.uids[c.name_idx]
            assert c.score == pytest.approx(model.lam * c.sparse_score + c.dense_score, abs=1e-4)
    with torch.no_grad():
        model.sparse_weight.fill_(1000.0)  # sparse dominates: exact name first
    assert model.link(["heart attack"], top_k=1)[0][0].name == "heart attack"


def test_link_iter_and_scores_consistent(model):
    qs = ["heart attack", "pd", "breast tumour", "fever", "toe"]
    full = model.link(qs, top_k=3)
    streamed = [row for batch in model.link_iter([qs[:2], qs[2:]], top_k=3) for row in batch]
    assert [[c.name_idx for c in r] for r in full] == [[c.name_idx for c in r] for r in streamed]
    idx = np.array([[c.name_idx for c in r] for r in full])
    np.testing.assert_allclose(model.score_pairs(qs, idx),
                               [[c.score for c in r] for r in full], atol=1e-4)
    assert model.encode(["a b"]).shape == (1, 32)
    dup = model.link(["pd", "fever", "pd"], top_k=3)  # repeated texts linked once
    assert dup[0] == dup[2] == full[1] and dup[0] is not dup[2]


def test_forward_matches_inference_scores(model):
    qs = ["heart attack", "pd"]
    cands = [["heart attack", "fever"], ["pd", "heart attack"]]
    idx = np.array([[model.dictionary.index_of(c) for c in r] for r in cands])
    sparse = model.sparse.score_pairs(qs, idx)
    model.eval()
    with torch.no_grad():
        out = model(qs, cands, torch.from_numpy(sparse)).numpy()
    np.testing.assert_allclose(out, model.score_pairs(qs, idx), atol=1e-4)


def test_model_dir_round_trip(model, tmp_path):
    qs = ["heart attack", "renal failure acute", "parkinsons", "q"]
    before = model.link(qs, top_k=5)
    model.save(tmp_path / "m", ontology={"name": "medic", "version": "2012"},
               metrics={"dev": {"acc@1": 0.5}}, hyper_parameters={"epochs": 1})
    meta = read_model_meta(tmp_path / "m")
    assert meta["method"] == "biosyn" and meta["ontology"]["version"] == "2012"
    assert {"torch", "transformers", "faiss"} <= set(meta["library_versions"])
    assert meta["encoder"]["pooling"] == "cls" and meta["encoder"]["max_length"] == 16
    assert (tmp_path / "m" / "encoder" / "model.safetensors").is_file()
    loaded = load_biosyn(tmp_path / "m", device="cpu")
    after = loaded.link(qs, top_k=5)
    assert [[(c.name_idx, c.score) for c in r] for r in before] == \
           [[(c.name_idx, c.score) for c in r] for r in after]
    assert loaded.lam == model.lam


def test_model_meta_errors(tmp_path):
    with pytest.raises(KgnormError, match="not a kgnorm model"):
        read_model_meta(tmp_path)
    write_model_meta(tmp_path, {"method": "dan", "x": np.float32(1.5)})
    assert read_model_meta(tmp_path)["x"] == 1.5
    with pytest.raises(KgnormError, match="dan"):
        load_biosyn(tmp_path)
    with pytest.raises(KgnormError):
        write_model_meta(tmp_path, {"x": 1})


# ---------------------------------------------------------------- training
def test_marginal_nll_matches_biosyn():
    torch.manual_seed(0)
    s = torch.randn(4, 6)
    y = torch.tensor([[1, 0, 1, 0, 0, 0], [0] * 6, [0, 0, 0, 0, 0, 1], [1] * 6], dtype=torch.float)
    p = torch.softmax(s, -1)
    ref = -torch.log((p * y).sum(-1)[(p * y).sum(-1) > 0]).mean()
    assert torch.allclose(marginal_nll(s, y), ref, atol=1e-6)
    assert marginal_nll(s, torch.zeros_like(y)).item() == 0.0


def _cfg(**kw):
    base = dict(epochs=2, top_k=6, batch_size=4, learning_rate=1e-3, seed=3,
                encode_batch_size=8, eval_top_k=3)
    base.update(kw)
    return BioSynConfig(**base)


def _weights(m):
    return torch.cat([p.detach().flatten() for p in m.encoder.model.parameters()])


def test_training_runs_checkpoints_and_resumes(tiny_bert_dir, dictionary, tmp_path):
    train_dict = dictionary.with_mentions([(q, sorted(g)[0]) for q, g in TRAIN])

    def fresh():
        torch.manual_seed(0)
        enc = DenseEncoder(tiny_bert_dir, pooling="cls", max_length=16, device="cpu")
        return BioSynModel(enc, dictionary)

    # uninterrupted 2 epochs
    full = train_biosyn(fresh(), train_dict, TRAIN, DEV, tmp_path / "full", _cfg(),
                        progress=False)
    assert full.epochs_completed == 2 and len(full.history) == 2
    assert all(np.isfinite(h["loss"]) for h in full.history)
    assert full.info["n_queries"] == 9  # one duplicate dropped
    assert (tmp_path / "full" / "checkpoints" / "last.pt").is_file()
    assert (tmp_path / "full" / "kgnorm-model.json").is_file()
    assert full.best_epoch in (1, 2) and 0.0 <= full.best_value <= 1.0
    meta = read_model_meta(tmp_path / "full")
    assert meta["hyper_parameters"]["top_k"] == 6 and "dev" in meta["metrics"]
    assert full.model.link(["heart attack"], top_k=2)

    # 1 epoch, then resume to 2: same weights as the uninterrupted run
    m = fresh()
    part = train_biosyn(m, train_dict, TRAIN, DEV, tmp_path / "res", _cfg(epochs=1),
                        progress=False)
    assert part.epochs_completed == 1
    m2 = fresh()
    res = train_biosyn(m2, train_dict, TRAIN, DEV, tmp_path / "res", _cfg(), progress=False)
    assert res.resumed_from == {"epoch": 1, "step": 0}
    assert res.epochs_completed == 2 and len(res.history) == 2
    full_last = tb.torch.load(tmp_path / "full" / "checkpoints" / "last.pt", weights_only=True)
    res_last = tb.torch.load(tmp_path / "res" / "checkpoints" / "last.pt", weights_only=True)
    for k in full_last["model"]:
        assert torch.allclose(full_last["model"][k], res_last["model"][k], atol=1e-6), k
    assert torch.allclose(full_last["sparse_weight"], res_last["sparse_weight"])

    # already finished: nothing to do
    again = train_biosyn(fresh(), train_dict, TRAIN, DEV, tmp_path / "res", _cfg(),
                         progress=False)
    assert again.resumed_from == {"epoch": 2, "step": 0} and again.epochs_completed == 2

    # other settings -> refused
    with pytest.raises(KgnormError, match="other data or settings"):
        train_biosyn(fresh(), train_dict, TRAIN, DEV, tmp_path / "res", _cfg(top_k=5),
                     progress=False)


def test_mid_epoch_interruption_resumes_exactly(tiny_bert_dir, dictionary, tmp_path,
                                                monkeypatch):
    train_dict = dictionary.with_mentions([(q, sorted(g)[0]) for q, g in TRAIN])

    def fresh():
        torch.manual_seed(0)
        enc = DenseEncoder(tiny_bert_dir, pooling="mean", max_length=16, device="cpu")
        return BioSynModel(enc, dictionary)

    cfg = _cfg(epochs=1, batch_size=2, checkpoint_every_steps=1, initial_sparse_weight=0.0,
               dense_ratio=0.5)
    ref = train_biosyn(fresh(), train_dict, TRAIN, None, tmp_path / "ref", cfg, progress=False)
    assert ref.best_value is None and ref.best_epoch == 1

    calls = {"n": 0}
    real = tb.marginal_nll

    def boom(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(tb, "marginal_nll", boom)
    with pytest.raises(KeyboardInterrupt):
        train_biosyn(fresh(), train_dict, TRAIN, None, tmp_path / "cut", cfg, progress=False)
    monkeypatch.setattr(tb, "marginal_nll", real)
    res = train_biosyn(fresh(), train_dict, TRAIN, None, tmp_path / "cut", cfg, progress=False)
    assert res.resumed_from == {"epoch": 0, "step": 2}
    a = torch.load(tmp_path / "ref" / "checkpoints" / "last.pt", weights_only=True)
    b = torch.load(tmp_path / "cut" / "checkpoints" / "last.pt", weights_only=True)
    for k in a["model"]:
        assert torch.allclose(a["model"][k], b["model"][k], atol=1e-6), k
    assert a["history"] == b["history"][:1] or a["history"][0]["loss"] == pytest.approx(
        b["history"][0]["loss"])


def test_training_rejects_empty(dictionary, tmp_path, model):
    with pytest.raises(KgnormError, match="no training queries"):
        train_biosyn(model, dictionary, [("x", set()), ("y", {"-1"})], None, tmp_path,
                     _cfg(), progress=False)


def test_time_budget_stops_after_an_epoch_and_reports_each_epoch(tiny_bert_dir, dictionary, tmp_path):
    train_dict = dictionary.with_mentions([(q, sorted(g)[0]) for q, g in TRAIN])
    torch.manual_seed(0)
    model = BioSynModel(DenseEncoder(tiny_bert_dir, pooling="cls", max_length=16, device="cpu"), dictionary)
    seen: list[dict] = []
    res = train_biosyn(model, train_dict, TRAIN, DEV, tmp_path / "budget",
                       _cfg(epochs=3, max_seconds=0.0, initial_sparse_weight=7.0),
                       progress=False, on_epoch=seen.append)
    assert res.epochs_completed == 1 and [r["epoch"] for r in seen] == [1]
    assert "dev" in seen[0] and seen[0]["sparse_weight"] != 1.0
    assert abs(seen[0]["sparse_weight"] - 7.0) < 1.0  # started from the given lambda
    # a larger budget resumes where the budget stopped (the budget is not part of the fingerprint)
    res2 = train_biosyn(model, train_dict, TRAIN, DEV, tmp_path / "budget",
                        _cfg(epochs=2, initial_sparse_weight=7.0), progress=False)
    assert res2.resumed_from == {"epoch": 1, "step": 0} and res2.epochs_completed == 2


def test_exclude_query_name_keeps_the_query_out_of_its_candidates(tiny_bert_dir, dictionary, tmp_path):
    train_dict = dictionary.with_mentions([(q, sorted(g)[0]) for q, g in TRAIN])
    torch.manual_seed(0)
    model = BioSynModel(DenseEncoder(tiny_bert_dir, pooling="cls", max_length=16, device="cpu"), dictionary)
    cfg = _cfg(epochs=1, exclude_query_name=True, checkpoint_every_steps=1)
    seen: list[dict] = []
    res = train_biosyn(model, train_dict, TRAIN, DEV, tmp_path / "excl", cfg, progress=False, on_epoch=seen.append)
    assert res.epochs_completed == 1 and np.isfinite(seen[0]["loss"])
    # BioSyn's candidate merge skips the excluded row (query 0) and leaves the others alone
    cand = tb._combine(np.array([[0, 1, 2]] * 2), np.array([[2, 3, 4]] * 2), 3, 2, 5, exclude=[0, -1])
    assert 0 not in cand[0] and list(cand[1]) == [0, 1, 2]


def test_a_large_dictionary_re_encodes_only_its_pool_and_saves_an_exact_index(tiny_bert_dir, dictionary, tmp_path):
    """Past ``pool_above`` names (forced here at 5), epochs after the first encode only the names the
    queries reach; the saved model's index is still every name encoded with the selected weights."""
    train_dict = dictionary.with_mentions([(q, sorted(g)[0]) for q, g in TRAIN])
    torch.manual_seed(0)
    model = BioSynModel(DenseEncoder(tiny_bert_dir, pooling="cls", max_length=16, device="cpu"), dictionary)
    seen: list[dict] = []
    res = train_biosyn(model, train_dict, TRAIN, DEV, tmp_path / "pool", _cfg(epochs=2, pool_above=5, pool_depth=2),
                       progress=False, on_epoch=seen.append)
    assert res.epochs_completed == 2 and all(np.isfinite(r["loss"]) for r in seen)
    assert 0 < seen[0]["pool_names"] < len(train_dict)   # a pool, not the whole dictionary
    # the time the final index will take, kept free by the time budget, at the pool's pace
    assert all(r["seconds_final_index"] > 0 for r in seen)
    # the whole first encoding is one-off: reported in the first epoch only, so the budget does not expect it again
    assert seen[0]["seconds_once"] > 0 and "seconds_once" not in seen[1]
    meta = read_model_meta(tmp_path / "pool")
    assert meta["training"]["index"] == "whole"
    saved = load_biosyn(tmp_path / "pool", device="cpu")
    names = saved.dictionary.names
    exact = saved.encode(names, batch_size=8)
    assert np.allclose(saved.index.reconstruct(np.arange(len(names))), exact, atol=1e-4)
    # the vectors of the start were cached: a second run encodes the whole dictionary no more
    calls: list[int] = []
    again = BioSynModel(DenseEncoder(tiny_bert_dir, pooling="cls", max_length=16, device="cpu"), dictionary)
    real = again.encode
    again.encode = lambda texts, **kw: calls.append(len(texts)) or real(texts, **kw)
    train_biosyn(again, train_dict, TRAIN, DEV, tmp_path / "again", _cfg(epochs=1, pool_above=5, pool_depth=2,
                                                                         exact_index=False), progress=False)
    assert calls and max(calls) < len(train_dict)   # the pool, the queries: never every name
    assert "seconds_final_index" not in read_model_meta(tmp_path / "again")["training"]["history"][-1]
    assert read_model_meta(tmp_path / "again")["training"]["index"] == "pool"
    plain = train_biosyn(BioSynModel(DenseEncoder(tiny_bert_dir, pooling="cls", max_length=16, device="cpu"),
                                     dictionary), train_dict, TRAIN, DEV, tmp_path / "plain", _cfg(epochs=1),
                         progress=False)
    assert "index" not in read_model_meta(tmp_path / "plain")["training"] and plain.epochs_completed == 1


def test_pair_scores_do_not_depend_on_how_many_queries_are_read_at_a_time(model, monkeypatch):
    from kgnorm.methods.biosyn import retrieval

    rng = np.random.default_rng(0)
    qs = [ENTRIES[i][0] + " x" * (i % 3) for i in range(len(ENTRIES))]
    idx = rng.integers(0, len(model.dictionary), (len(qs), 7))
    idx[2, 4:] = -1  # a query with fewer candidates
    qv = model.encode(qs)
    got = []
    for rows in (1, 3, 10_000):  # the candidates' vectors read a query, three, or all at a time
        monkeypatch.setattr(retrieval, "PAIR_ROWS", rows)
        got.append(model._pair_scores(qs, idx, qv))
    for sparse, dense in got[1:]:
        assert np.array_equal(sparse, got[0][0]) and np.array_equal(dense, got[0][1])
    assert (got[0][1][2, 4:] == 0).all()
