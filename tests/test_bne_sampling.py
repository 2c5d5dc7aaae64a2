"""BNE with the shared samplers: sibling names as hard negatives, parent names as conceptual
positives, on a tiny hierarchy; determinism, resume and the CLI wiring."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import kgnorm.methods.bne.train as bne_train
from cli_runner import run
from kgnorm.encoders.wordvectors import WordVectors
from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.methods.bne.objectives import pair_loss
from kgnorm.methods.bne.sampling import HierarchyDraws, TrainingNames
from kgnorm.methods.bne.train import BneConfig, train_bne
from kgnorm.methods.model_dir import read_model_meta

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONCEPTS = {
    "X:CANCER": ["cancer", "malignant neoplasm"],
    "X:BREAST": ["breast cancer", "breast tumor", "mammary carcinoma"],
    "X:LUNG": ["lung cancer", "lung tumor", "pulmonary carcinoma"],
    "X:SKIN": ["skin cancer", "cutaneous carcinoma"],
    "X:HEART": ["heart disease", "cardiac disease"],
    "X:MI": ["heart attack", "myocardial infarction"],
    "X:ANGINA": ["angina", "angina pectoris", "chest angina"],
    "X:FEVER": ["fever", "pyrexia"],
}
IS_A = [("X:BREAST", "X:CANCER"), ("X:LUNG", "X:CANCER"), ("X:SKIN", "X:CANCER"),
        ("X:MI", "X:HEART"), ("X:ANGINA", "X:HEART")]
SIBLINGS = {"X:BREAST": {"X:LUNG", "X:SKIN"}, "X:LUNG": {"X:BREAST", "X:SKIN"},
            "X:SKIN": {"X:BREAST", "X:LUNG"}, "X:MI": {"X:ANGINA"}, "X:ANGINA": {"X:MI"}}
PARENT = {"X:BREAST": "X:CANCER", "X:LUNG": "X:CANCER", "X:SKIN": "X:CANCER",
          "X:MI": "X:HEART", "X:ANGINA": "X:HEART"}
TINY = dict(char_dim=8, char_hidden=8, word_hidden=8, out_dim=12, dropout=0.0, batch_size=6)


@pytest.fixture(scope="module")
def wv():
    names = [n for ns in CONCEPTS.values() for n in ns]
    return WordVectors.train(names * 10, dim=10, epochs=3, bucket=500, workers=1, seed=0)


@pytest.fixture(scope="module")
def hierarchy():
    return Hierarchy.from_edges(CONCEPTS, IS_A)


def _uid_of(name: str) -> str:
    (uid,) = [u for u, ns in CONCEPTS.items() if name in ns]
    return uid


# ---------------------------------------------------------------- the draws
def test_draws_are_siblings_and_parents_seeded_per_epoch(hierarchy):
    data = TrainingNames.build(CONCEPTS)
    draws = HierarchyDraws(data, hierarchy, siblings_k=2, parents_k=1, seed=3)
    sib0, par0 = draws.draw(0)
    for i, name in enumerate(data.names):
        uid = data.uids[data.concept[i]]
        assert {_uid_of(data.names[j]) for j in sib0[i]} <= SIBLINGS.get(uid, set())
        assert len(sib0[i]) == (2 if uid in SIBLINGS else 0)
        assert [_uid_of(data.names[j]) for j in par0[i]] == ([PARENT[uid]] if uid in PARENT else [])
    assert draws.draw(0) == (sib0, par0)                 # same epoch, same draw
    assert any(draws.draw(e)[0] != sib0 for e in range(1, 6))   # epochs differ
    assert draws.coverage() == {"items_with_siblings": 13, "items_with_parents": 13}


def test_held_out_names_are_never_drawn(hierarchy):
    train = {u: [n for n in ns if n != "lung tumor"] for u, ns in CONCEPTS.items()}
    data = TrainingNames.build(train)
    draws = HierarchyDraws(data, hierarchy, siblings_k=5, parents_k=5)
    for e in range(4):
        sib, _ = draws.draw(e)
        assert all(data.names[j] != "lung tumor" for js in sib for j in js)


def test_sampling_needs_edges_and_a_hierarchy(wv, tmp_path):
    flat = Hierarchy.from_edges(CONCEPTS, [])
    with pytest.raises(KgnormError, match="IS_A"):
        HierarchyDraws(TrainingNames.build(CONCEPTS), flat, siblings_k=1)
    with pytest.raises(KgnormError, match="hierarchy"):
        train_bne(CONCEPTS, wv, tmp_path / "x", config=BneConfig(**TINY, siblings_k=1),
                  progress=False)


# ---------------------------------------------------------------- the loss terms
def test_pair_loss_by_hand():
    a = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    o = torch.tensor([[3.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    rows = torch.tensor([0, 0, 1])
    sp = torch.nn.functional.softplus
    neg = ((sp(torch.tensor(3.0)) + sp(torch.tensor(1.0))) / 2 + sp(torch.tensor(2.0))) / 2
    assert torch.allclose(pair_loss(a, o, rows, positive=False), neg)
    pos = ((sp(torch.tensor(-3.0)) + sp(torch.tensor(-1.0))) / 2 + sp(torch.tensor(-2.0))) / 2
    assert torch.allclose(pair_loss(a, o, rows, positive=True), pos)
    assert float(pair_loss(a, o[:0], rows[:0], positive=True)) == 0.0


def test_trainer_feeds_the_sampled_siblings_and_parents(wv, hierarchy, tmp_path, monkeypatch):
    seen = []
    real = bne_train.batch_loss

    def spy(model, data, sel, syn, siblings=None, parents=None):
        loss, parts = real(model, data, sel, syn, siblings, parents)
        for i in sel:  # what each anchor of the batch got: names of its siblings / parent
            uid = _uid_of(data.names[i])
            seen.append((uid, {_uid_of(data.names[j]) for j in siblings[i]},
                         {_uid_of(data.names[j]) for j in parents[i]}, set(parts)))
        return loss, parts

    monkeypatch.setattr(bne_train, "batch_loss", spy)
    cfg = BneConfig(**TINY, max_epochs=1, siblings_k=1, parents_k=1, seed=0)
    train_bne(CONCEPTS, wv, tmp_path / "m", config=cfg, progress=False, hierarchy=hierarchy)
    assert len(seen) == sum(map(len, CONCEPTS.values())) - 1   # every training name, once
    for uid, sib, par, _ in seen:
        assert len(sib) == (uid in SIBLINGS) and sib <= SIBLINGS.get(uid, set())
        assert par == ({PARENT[uid]} if uid in PARENT else set())
    assert {"syn", "sib", "con", "par", "ctx"} <= set().union(*(t for *_, t in seen))
    meta = read_model_meta(tmp_path / "m")
    assert meta["hyper_parameters"]["siblings_k"] == 1 and meta["hyper_parameters"]["parents_k"] == 1
    assert meta["training"]["items_with_siblings"] > 0


def test_sampling_changes_training_and_is_deterministic(wv, hierarchy, tmp_path):
    dev = [("cardiac infarction", {"X:MI"}), ("lung neoplasm", {"X:LUNG"})]
    base = BneConfig(**TINY, max_epochs=2, patience=5, seed=0)
    on = BneConfig(**TINY, max_epochs=2, patience=5, seed=0, siblings_k=1, parents_k=1)
    off = train_bne(CONCEPTS, wv, tmp_path / "off", dev=dev, config=base, progress=False,
                    hierarchy=hierarchy)
    a = train_bne(CONCEPTS, wv, tmp_path / "a", dev=dev, config=on, progress=False,
                  hierarchy=hierarchy)
    b = train_bne(CONCEPTS, wv, tmp_path / "b", dev=dev, config=on, progress=False,
                  hierarchy=hierarchy)
    assert [h["loss"] for h in a.history] == [h["loss"] for h in b.history]
    assert np.array_equal(a.model.encode(["fever"]), b.model.encode(["fever"]))
    assert [h["loss"] for h in a.history] != pytest.approx([h["loss"] for h in off.history])

    # resume: 1 epoch, then on to 2 == 2 epochs straight
    one = BneConfig(**TINY, max_epochs=1, patience=5, seed=0, siblings_k=1, parents_k=1)
    train_bne(CONCEPTS, wv, tmp_path / "r", dev=dev, config=one, progress=False,
              hierarchy=hierarchy)
    r = train_bne(CONCEPTS, wv, tmp_path / "r", dev=dev, config=on, progress=False,
                  hierarchy=hierarchy)
    assert r.resumed_from == {"epoch": 1, "step": 0}
    assert [h["loss"] for h in r.history] == pytest.approx([h["loss"] for h in a.history],
                                                           rel=1e-5)
    # another IS_A graph is other data: refused on resume
    other = Hierarchy.from_edges(CONCEPTS, IS_A[:-1])
    with pytest.raises(KgnormError, match="other data or settings"):
        train_bne(CONCEPTS, wv, tmp_path / "r", dev=dev,
                  config=BneConfig(**TINY, max_epochs=3, patience=5, seed=0, siblings_k=1,
                                   parents_k=1), progress=False, hierarchy=other)


# ---------------------------------------------------------------- CLI wiring
TINY_OBO = "format-version: 1.2\nontology: tz\n\n" + "\n".join(
    f"[Term]\nid: TZ:{i:07d}\nname: {ns[0]}\n"
    + "".join(f'synonym: "{s}" EXACT []\n' for s in ns[1:])
    + "".join(f"is_a: TZ:{list(CONCEPTS).index(p):07d}\n" for c, p in IS_A if c == u)
    for i, (u, ns) in enumerate(CONCEPTS.items()))


def test_cli_train_bne_sibling_and_parent_options(tmp_path, capsys):
    (tmp_path / "tz.obo").write_text(TINY_OBO)
    store = f"ladybug://{tmp_path}/graph"
    code, _, err = run(capsys, "ingest", "obo", str(tmp_path / "tz.obo"), "--ontology", "tz",
                       "--store", store, "-q")
    assert code == 0, err
    out = tmp_path / "bne"
    code, _, err = run(capsys, "train", "bne", "--ontology", "tz", "--out", str(out), "--epochs", "1",
                       "--hidden", "8", "--dim", "8", "--batch-size", "4", "--siblings-k", "1",
                       "--parents-k", "1", "--threads", "1", "--store", store, "-q")
    assert code == 0, err
    meta = json.loads((out / "kgnorm-model.json").read_text())
    assert meta["hyper_parameters"]["siblings_k"] == 1 and meta["hyper_parameters"]["parents_k"] == 1
    assert meta["training"]["items_with_siblings"] > 0 and meta["training"]["items_with_parents"] > 0
    code, _, err = run(capsys, "train", "bne", "--ontology", "tz", "--out", str(tmp_path / "neg"),
                       "--siblings-k", "-1", "--store", store, "-q")
    assert code != 0 and "--siblings-k" in err and "Traceback" not in err
    assert not (tmp_path / "neg").exists()
