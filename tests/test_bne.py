"""BNE: network shapes, the three objectives, hold-out dev, training, resume, model dir."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from kgnorm.methods.bne.model import (BNE, BneModel, as_name_dictionary, build_char_vocab,
                                 concept_names, load_bne)
from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import Candidate
from kgnorm.methods.model_dir import read_model_meta
from kgnorm.methods.bne.train import (BneConfig, hold_out_synonyms, inbatch_scores,
                                 logistic_inbatch_loss, prototypes, train_bne)
from kgnorm.encoders.wordvectors import WordVectors

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONCEPTS = {
    "MESH:D1": ["heart attack", "myocardial infarction", "cardiac infarction"],
    "MESH:D2": ["renal failure", "kidney failure", "renal insufficiency"],
    "MESH:D3": ["breast cancer", "breast tumor", "mammary carcinoma"],
    "MESH:D4": ["fever", "pyrexia", "high temperature"],
    "MESH:D5": ["lung cancer", "lung tumor", "pulmonary carcinoma"],
    "MESH:D6": ["hypertension", "high blood pressure"],
    "MESH:D7": ["diabetes"],
}
TINY = dict(char_dim=8, char_hidden=8, word_hidden=8, out_dim=12, dropout=0.0, batch_size=8)


@pytest.fixture(scope="module")
def wv():
    names = [n for ns in CONCEPTS.values() for n in ns]
    return WordVectors.train(names * 10, dim=10, epochs=3, bucket=500, workers=1, seed=0)


def _model(wv, **kw):
    names = [n for ns in CONCEPTS.values() for n in ns]
    chars = build_char_vocab(names)
    torch.manual_seed(0)
    net = BNE(len(chars), wv.dim, **{"char_dim": 8, "char_hidden": 8, "word_hidden": 8,
                                     "out_dim": 12, "dropout": 0.0, **kw})
    return BneModel(net, wv, chars, as_name_dictionary(CONCEPTS))


# ---------------------------------------------------------------- network
def test_featurize_and_forward_shapes(wv):
    m = _model(wv)
    f = m.featurize(["heart attack", "heart", "", "xyz!! heart"])
    assert f["char_ids"].shape[0] == 4                   # heart, attack, "", xyz: deduplicated
    assert f["name_tokens"].shape == (4, 2)
    assert f["name_lens"].tolist() == [2, 1, 1, 2]
    assert f["word_vecs"].shape == (4, wv.dim)
    out = m.net(**f)
    assert out.shape == (4, 12) and torch.isfinite(out).all()
    v = m.encode(["heart attack", "Heart   attack!", ""])
    assert v.shape == (3, 12) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.allclose(v[0], v[1], atol=1e-6)            # same tokens -> same vector
    # batch order does not matter
    big = m.encode(["fever", "heart attack", "lung tumor of the left side"], batch_size=1)
    assert np.allclose(big[1], v[0], atol=1e-5)
    with pytest.raises(KgnormError):
        m.encode("fever")


def test_char_vocab_reserved():
    chars = build_char_vocab(["ab c", "ca"])
    assert chars == ["<pad>", "<unk>", "a", "b", "c"]


# ---------------------------------------------------------------- objectives
def test_inbatch_shapes_and_logistic_loss_by_hand():
    a = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    t = torch.tensor([[2.0, 0.0], [0.0, 3.0], [0.0, 0.0]])
    S = inbatch_scores(a, t)
    assert S.shape == (3, 3)
    assert torch.allclose(S, a @ t.T)
    sp = torch.nn.functional.softplus
    # all off-diagonal cells are negatives
    exp = torch.stack([sp(-S[i, i]) + sp(S[i, [j for j in range(3) if j != i]]).mean()
                       for i in range(3)]).mean()
    assert torch.allclose(logistic_inbatch_loss(S), exp)
    # masked: row 0 has no negative left, row 1 keeps column 2 only
    mask = torch.tensor([[True, False, False], [False, False, True], [True, True, False]])
    exp = torch.stack([sp(-S[0, 0]), sp(-S[1, 1]) + sp(S[1, 2]),
                       sp(-S[2, 2]) + sp(S[2, [0, 1]]).mean()]).mean()
    assert torch.allclose(logistic_inbatch_loss(S, mask), exp)
    with pytest.raises(KgnormError):
        logistic_inbatch_loss(torch.zeros(2, 3))


def test_prototypes_are_normalized_means():
    q = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 4.0]], np.float32)
    g = prototypes(q, [0, 0, 1], 3)
    assert np.allclose(g[0], [2 ** -0.5, 2 ** -0.5], atol=1e-6)
    assert np.allclose(g[1], [0.6, 0.8], atol=1e-6)
    assert not g[2].any()


@pytest.mark.parametrize("objective", ["w_synonym", "w_concept", "w_context"])
def test_each_objective_finite_and_decreasing(wv, tmp_path, objective):
    weights = {"w_synonym": 0.0, "w_concept": 0.0, "w_context": 0.0, objective: 1.0}
    cfg = BneConfig(**TINY, **weights, max_epochs=12, patience=100, learning_rate=1e-2,
                    dev_fraction=0.1, seed=1)
    r = train_bne(CONCEPTS, wv, tmp_path / objective, config=cfg, progress=False)
    losses = [h["loss"] for h in r.history]
    assert all(np.isfinite(losses))
    assert losses[-1] < losses[0] - 0.05, losses


# ---------------------------------------------------------------- data
def test_hold_out_synonyms_guarantees():
    c = dict(CONCEPTS)
    c["MESH:D8"] = ["fever", "shared name"]               # "fever" is carried by two concepts
    train, dev = hold_out_synonyms(c, fraction=0.5, max_names=4, seed=3)
    assert 1 <= len(dev) <= 4
    assert dev == hold_out_synonyms(c, fraction=0.5, max_names=4, seed=3)[1]
    for name, gold in dev:
        (uid,) = gold
        assert name not in train[uid] and name in c[uid]
        assert train[uid]                                 # the concept keeps a name
        assert name != "fever"                            # shared names are never held out
    assert train["MESH:D7"] == ["diabetes"]


def test_projection_choices(wv, tmp_path):
    with pytest.raises(KgnormError, match="identity"):
        train_bne(CONCEPTS, wv, tmp_path / "x", config=BneConfig(**TINY, projection="identity"),
                  progress=False)
    with pytest.raises(KgnormError, match="projection"):
        train_bne(CONCEPTS, wv, tmp_path / "y", config=BneConfig(**TINY, projection="nope"),
                  progress=False)
    cfg = BneConfig(**{**TINY, "out_dim": wv.dim}, max_epochs=1)
    r = train_bne(CONCEPTS, wv, tmp_path / "z", config=cfg, progress=False)
    assert r.model.net.target_proj is None                # same dimension: compared directly
    assert read_model_meta(tmp_path / "z")["training"]["target_projection"] == "identity"


# ---------------------------------------------------------------- training / model dir
def test_train_link_save_load_and_resume(wv, tmp_path):
    dev = [("cardiac infarction", {"MESH:D1"}), ("kidney failures", ["MESH:D2"])]
    cfg = BneConfig(**TINY, max_epochs=2, patience=5, seed=0)
    r = train_bne(CONCEPTS, wv, tmp_path / "a", dev=dev, config=cfg, progress=False,
                  ontology={"name": "toy"})
    assert r.info["dev_source"] == "given" and r.info["n_dev"] == 2 and r.epochs_completed == 2
    assert r.best_value is not None and len(r.history) == 2
    meta = read_model_meta(tmp_path / "a")
    assert meta["method"] == "bne" and meta["ontology"] == {"name": "toy"}
    assert meta["names"]["count"] == sum(len(v) for v in CONCEPTS.values())
    for f in ("model.safetensors", "chars.json", "wordvectors/meta.json", "names/names.tsv",
              "index/names.faiss"):
        assert (tmp_path / "a" / f).is_file(), f
    m = load_bne(tmp_path / "a")
    res = m.link(["heart attack", "pyrexia"], top_k=3)
    assert len(res) == 2 and all(len(x) == 3 for x in res)
    assert isinstance(res[0][0], Candidate)
    assert res[0][0].name == "heart attack" and res[0][0].uids == ("MESH:D1",)
    assert res[0][0].score >= res[0][1].score >= res[0][2].score
    assert np.allclose(m.encode(["fever"]), r.model.encode(["fever"]), atol=1e-6)

    # resume: 2 epochs, then continue to 3 == 3 epochs straight
    cfg3 = BneConfig(**TINY, max_epochs=3, patience=5, seed=0)
    r2 = train_bne(CONCEPTS, wv, tmp_path / "a", dev=dev, config=cfg3, progress=False)
    assert r2.resumed_from == {"epoch": 2, "step": 0} and r2.epochs_completed == 3
    straight = train_bne(CONCEPTS, wv, tmp_path / "b", dev=dev, config=cfg3, progress=False)
    assert [h["loss"] for h in straight.history] == pytest.approx(
        [h["loss"] for h in r2.history], rel=1e-5)
    with pytest.raises(KgnormError, match="other data or settings"):
        train_bne(CONCEPTS, wv, tmp_path / "a", dev=dev,
                  config=BneConfig(**{**TINY, "batch_size": 4}, max_epochs=3), progress=False)


def test_budget_stop_then_resume_replays_the_straight_run_exactly(wv, tmp_path):
    """The loop's budget stops after one epoch; resuming to 4 epochs gives the weights, losses,
    dev Acc@1 per evaluation (inside epochs too) and selection of 4 epochs straight -- with
    dropout on, so the torch RNG state must be carried over the checkpoint."""
    dev = [("cardiac infarction", {"MESH:D1"}), ("kidney failures", ["MESH:D2"]),
           ("mammary tumor", {"MESH:D3"}), ("lung carcinoma", {"MESH:D5"})]
    cfg = BneConfig(**{**TINY, "dropout": 0.5}, max_epochs=4, patience=100, eval_every_steps=1,
                    checkpoint_every_steps=2, learning_rate=2e-2, seed=4)
    first = train_bne(CONCEPTS, wv, tmp_path / "r", dev=dev, progress=False,
                      config=BneConfig(**{**cfg.to_dict(), "max_seconds": 0.0}))
    assert first.epochs_completed == 1 and first.stop_reason == "max_seconds"
    assert not first.stopped_early
    resumed = train_bne(CONCEPTS, wv, tmp_path / "r", dev=dev, config=cfg, progress=False)
    straight = train_bne(CONCEPTS, wv, tmp_path / "s", dev=dev, config=cfg, progress=False)
    assert resumed.resumed_from == {"epoch": 1, "step": 0} and resumed.stop_reason == "epochs"
    assert resumed.epochs_completed == straight.epochs_completed == 4
    assert [(h["epoch"], h["loss"], h["dev"]["acc@1"]) for h in resumed.history] == \
        [(h["epoch"], h["loss"], h["dev"]["acc@1"]) for h in straight.history]
    assert len(straight.history) == 4 * 3                 # 3 batches an epoch, each evaluated
    assert (resumed.best_epoch, resumed.best_value) == (straight.best_epoch, straight.best_value)
    a, b = resumed.model.net.state_dict(), straight.model.net.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoint_of_the_old_trainer_is_refused(wv, tmp_path):
    """A last.pt of the trainer before the shared loop: one line saying to rerun with --no-resume."""
    ck = tmp_path / "o" / "checkpoints" / "last.pt"
    ck.parent.mkdir(parents=True)
    torch.save({"fingerprint": "0" * 40, "epoch": 1, "step": 0, "model": {}, "optimizer": {},
                "history": [], "best_acc": 0.5, "best_epoch": 1.0, "evals_since_best": 0,
                "stopped": False, "rng": {}}, ck)
    cfg = BneConfig(**TINY, max_epochs=1)
    with pytest.raises(KgnormError, match="older kgnorm's BNE trainer.*--no-resume") as e:
        train_bne(CONCEPTS, wv, tmp_path / "o", config=cfg, progress=False)
    assert "\n" not in str(e.value)
    r = train_bne(CONCEPTS, wv, tmp_path / "o", config=cfg, progress=False, resume=False)
    assert r.epochs_completed == 1 and r.resumed_from is None


def test_held_out_dev_and_early_stopping(wv, tmp_path):
    cfg = BneConfig(**TINY, max_epochs=30, patience=1, dev_fraction=0.2, seed=2)
    r = train_bne(CONCEPTS, wv, tmp_path / "h", config=cfg, progress=False)
    assert r.info["dev_source"] == "held_out" and r.info["n_dev"] >= 1
    assert r.stopped_early and r.epochs_completed < 30
    # the saved model indexes every name, held-out ones included
    d = r.model.dictionary
    assert len(d) == sum(len(v) for v in CONCEPTS.values())


def test_concept_names_round_trip():
    d = as_name_dictionary(CONCEPTS, alt_ids={"MESH:D1": ["OMIM:1"]})
    back = concept_names(d)
    assert back == {u: list(v) for u, v in CONCEPTS.items()}
    assert d.alt_ids == {"MESH:D1": ["OMIM:1"]}
    with pytest.raises(KgnormError):
        as_name_dictionary(["not", "a", "mapping"])
