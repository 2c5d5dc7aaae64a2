"""DAN encoder training on the toy hierarchy: files, loss, determinism, resume, loading."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from test_hierarchy import toy_data  # noqa: E402

from kgnorm.methods.dan.model import load_dan  # noqa: E402
from kgnorm.errors import KgnormError  # noqa: E402
from kgnorm.methods.dan.train import DanConfig, train_dan  # noqa: E402
from kgnorm.encoders.wordvectors import WordVectors  # noqa: E402


@pytest.fixture(scope="module")
def wv():
    names, _ = toy_data()
    texts = [n for ns in names.values() for n in ns]
    return WordVectors.train(texts, dim=16, epochs=10, bucket=1000, workers=1, seed=0)


def cfg(**kw):
    base = dict(hidden=32, max_epochs=4, patience=50, seed=0)
    base.update(kw)
    return DanConfig(**base)


def _weights(d):
    from safetensors.torch import load_file
    return load_file(str(Path(d) / "model.safetensors"))


def test_train_writes_model_dir(split, wv, tmp_path):
    r = train_dan(split, wv, 3, tmp_path / "m", cfg(max_epochs=12, lr=3e-3), progress=False)
    d = r.out_dir
    for f in ("kgnorm-model.json", "model.safetensors", "wordvectors/meta.json",
              "wordvectors/vectors.npy", "wordvectors/ngrams.npy", "checkpoints/last.pt"):
        assert (d / f).exists(), f
    meta = json.loads((d / "kgnorm-model.json").read_text())
    assert meta["method"] == "dan" and meta["architecture"] == {"dim": 16, "hidden": 32,
                                                                "dropout": 0.5}
    assert meta["hyper_parameters"]["level"] == 3 and meta["hyper_parameters"]["margin"] == 0.1
    assert {"torch", "numpy", "gensim", "kgnorm"} <= set(meta["versions"])
    assert meta["metrics"]["epochs_run"] == 12 == len(r.history) and not r.stopped_early
    assert set(meta["metrics"]["test"]["map"]) == {"1", "2", "3", "4"}
    assert 0 <= r.best_value <= 1 and r.history[int(r.best_epoch) - 1]["dev"]["map"] == r.best_value
    assert meta["metrics"]["best_epoch"] == r.best_epoch - 1    # the model directory counts from 0
    # the loss goes down
    first = np.mean([h["loss"] for h in r.history[:3]])
    last = np.mean([h["loss"] for h in r.history[-3:]])
    assert last < first
    enc = load_dan(d)
    e = enc.encode(["congenital valve stenosis", "unseen words entirely", ""])
    assert e.shape == (3, 16) and e.dtype == np.float32
    assert np.allclose(np.linalg.norm(e[:2], axis=1), 1, atol=1e-5)
    # the loaded model is the best epoch's model: it scores the best validation mAP again, which
    # the last epoch's weights do not (so keeping the last epoch would fail here)
    from kgnorm.evaluation.hierarchy import evaluate_hierarchy

    assert r.history[-1]["dev"]["map"] != pytest.approx(r.best_value, abs=1e-6)
    val = evaluate_hierarchy(enc.encode, split, levels=(3,), queries="val", metrics=("map",))["map"][3]
    assert val == pytest.approx(r.best_value, abs=1e-6)
    assert r.info["test_metrics"] is not None and set(r.info["test_metrics"]["map"]) == {1, 2, 3, 4}


def test_deterministic_and_resume(split, wv, tmp_path):
    full = train_dan(split, wv, 2, tmp_path / "full", cfg(max_epochs=4), progress=False)
    again = train_dan(split, wv, 2, tmp_path / "again", cfg(max_epochs=4), progress=False)
    assert [h["dev"] for h in full.history] == [h["dev"] for h in again.history]
    w1, w2 = _weights(full.out_dir), _weights(again.out_dir)
    assert all(torch.equal(w1[k], w2[k]) for k in w1)
    # "interrupted" after 2 epochs, then resumed to 4
    part = train_dan(split, wv, 2, tmp_path / "part", cfg(max_epochs=2), progress=False)
    assert part.epochs_completed == 2 and not part.resumed
    res = train_dan(split, wv, 2, tmp_path / "part", cfg(max_epochs=4), progress=False,
                    resume=True)
    assert res.resumed and res.epochs_completed == 4
    assert [h["loss"] for h in res.history] == pytest.approx([h["loss"] for h in full.history])
    assert [h["dev"]["map"] for h in res.history] == \
        pytest.approx([h["dev"]["map"] for h in full.history])
    ck_full = torch.load(full.out_dir / "checkpoints" / "last.pt", weights_only=True)
    ck_res = torch.load(res.out_dir / "checkpoints" / "last.pt", weights_only=True)
    assert all(torch.allclose(ck_full["model"][k], ck_res["model"][k], atol=1e-6)
               for k in ck_full["model"])
    # resuming a finished run does no more work
    done = train_dan(split, wv, 2, tmp_path / "part", cfg(max_epochs=4), progress=False,
                     resume=True)
    assert done.epochs_completed == 4
    # a checkpoint of another configuration is refused
    with pytest.raises(KgnormError, match="different configuration"):
        train_dan(split, wv, 2, tmp_path / "part", cfg(max_epochs=4, hidden=16),
                  progress=False, resume=True)


def test_early_stopping(split, wv, tmp_path):
    r = train_dan(split, wv, 4, tmp_path / "es", cfg(max_epochs=20, patience=2, lr=0.0,
                                                     negatives="random"), progress=False)
    assert r.stopped_early and r.epochs_completed == 3 and r.best_epoch == 1


def test_bad_input(split, wv, tmp_path):
    with pytest.raises(KgnormError, match="level 7"):
        train_dan(split, wv, 7, tmp_path / "x", cfg(), progress=False)
    with pytest.raises(KgnormError, match="negatives"):
        train_dan(split, wv, 2, tmp_path / "x", cfg(negatives="hard"), progress=False)
    with pytest.raises(KgnormError, match="nowhere does not exist"):
        load_dan(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(KgnormError, match="kgnorm-model.json"):
        load_dan(tmp_path / "empty")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "kgnorm-model.json").write_text('{"method": "biosyn"}')
    with pytest.raises(KgnormError, match="biosyn"):
        load_dan(tmp_path / "other")


def test_time_budget_and_preset(split, wv, tmp_path):
    r = train_dan(split, wv, 2, tmp_path / "tb", cfg(max_epochs=10, max_seconds=0.0,
                                                     evaluate_test=False), progress=False)
    assert r.epochs_completed == 1 and r.info["test_metrics"] is None
    meta = json.loads((tmp_path / "tb" / "kgnorm-model.json").read_text())
    assert meta["metrics"]["stop_reason"] == "max_seconds"
    fast = DanConfig.cpu_fast(max_epochs=3)
    assert fast.hidden == 1024 and fast.w_context == 0.3 and fast.max_epochs == 3
