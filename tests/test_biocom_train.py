"""BioCoM training on a toy corpus with a tiny random BERT: a few steps, dev selection,
model directory, interruption + resume, and linking through load_biocom."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from conftest import make_word_bert
import kgnorm.methods.biocom.train as train_mod
from kgnorm.methods.biocom.corpus import build_corpus
from kgnorm.methods.biocom.linker import INDEX_FILE, MODEL_JSON, ROWS_FILE, load_biocom
from kgnorm.losses.multi_similarity import MultiSimilarityLoss
from kgnorm.methods.biocom.train import BiocomConfig, train_biocom
from kgnorm.errors import KgnormError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

os.environ.setdefault("HF_HUB_OFFLINE", "1")


NAMES = {
    "T:OC": ["ovarian cancer", "ovarian carcinoma"],
    "T:BC": ["breast cancer"],
    "T:DMD": ["duchenne muscular dystrophy"],
    "T:ALL": ["acute lymphoblastic leukemia"],
    "T:G6PD": ["glucose phosphate dehydrogenase deficiency"],
    "T:BT": ["breast tumor", "breast tumour"],       # seen once: pseudo-sentence pair
}
CONTEXTS = [("The patients had {}.", 2), ("A family with {} was studied.", 3),
            ("Boys in the study had {} and mutations.", 3), ("Risk of {} was rare.", 2),
            ("Cases of {} in families were common.", 2)]
WORDS = """the a of in with and was were had patients boys case cases family families
ovarian breast cancer carcinoma tumor tumour muscular dystrophy duchenne deficiency
glucose phosphate dehydrogenase disease leukemia acute lymphoblastic risk study studied
rare common mutation mutations gene . ,""".split()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("biocom")
    lines = []
    for uid, names in NAMES.items():
        if uid == "T:BT":
            lines.append("The patients had breast tumor.")
            continue
        for i, (ctx, _) in enumerate(CONTEXTS):
            lines.append(ctx.format(names[i % len(names)]))
    text = root / "corpus.txt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    build_corpus(NAMES, [text], root / "corpus", ontology="toy", version="v1", cap=20)
    dev = [("ovarian cancer", "Two families had ovarian cancer.", {"T:OC"}),
           ("DMD", "Boys had DMD.", {"T:DMD"}),              # not in context -> alone
           ("breast cancer", "", "T:BC")]
    return root, make_word_bert(root / "tiny", WORDS, max_positions=64), dev


def cfg(**kw) -> BiocomConfig:
    base = dict(concepts_per_batch=4, lr=1e-3, epochs=2, max_length=32, ks=(1, 3),
                infer_batch_size=16, seed=0)
    base.update(kw)
    return BiocomConfig(**base)


def test_train_with_dev_writes_a_linkable_model(setup, tmp_path):
    root, tiny, dev = setup
    out = tmp_path / "model"
    res = train_biocom(root / "corpus", out, tiny, dev=dev, config=cfg(),
                       ontology="toy", version="v1")
    for f in (MODEL_JSON, INDEX_FILE, ROWS_FILE, "encoder/model.safetensors",
              "encoder/tokenizer_config.json"):
        assert (out / f).exists(), f
    assert not (out / "checkpoints").exists()
    meta = json.loads((out / MODEL_JSON).read_text())
    assert meta["method"] == "biocom" and meta["k"] in (1, 3) and meta["k_source"] == "dev"
    assert meta["ontology"] == {"name": "toy", "version": "v1"}
    assert meta["hyper_parameters"]["alpha"] == 2.0 and meta["hyper_parameters"]["beta"] == 50
    assert meta["corpus"]["pseudo_training_rows"] == 1          # T:BT
    assert meta["metrics"]["dev"]["mentions"] == 3
    assert set(meta["metrics"]["dev"]["per_k"]) == {"1", "3"}
    assert "torch" in meta["versions"] and "transformers" in meta["versions"]
    assert res.global_step == meta["training"]["steps"] > 0 and res.info["k"] == meta["k"]

    linker = load_biocom(out)
    assert linker.index.ntotal == 26 and len(linker.uids) == 26
    ranked = linker.link([("ovarian cancer", "Two families had ovarian cancer."),
                          ("tumour", None)], top_k=4)
    assert len(ranked) == 2 and all(len(r) == 4 for r in ranked)
    for r in ranked:
        assert len({u for u, _ in r}) == 4 and all(u in NAMES for u, _ in r)
        assert r[0][1] > 0 and [s for _, s in r] == sorted((s for _, s in r), reverse=True)
    v = linker.encode(["ovarian cancer", "breast tumour"])
    assert v.shape == (2, 32) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert linker.link([]) == []


class _Interrupt(RuntimeError):
    pass


def test_interrupted_training_resumes_to_the_same_weights(setup, tmp_path, monkeypatch):
    root, tiny, _ = setup
    c = cfg(checkpoint_steps=2)
    ref = train_biocom(root / "corpus", tmp_path / "ref", tiny, config=c)
    assert ref.info["k"] == 1 and ref.epochs_completed == 2

    calls = {"n": 0}

    class Flaky(MultiSimilarityLoss):
        def forward(self, emb, labels):
            calls["n"] += 1
            if calls["n"] == 6:     # inside epoch 2, after the step-4 checkpoint
                raise _Interrupt("power cut")
            return super().forward(emb, labels)

    monkeypatch.setattr(train_mod, "MultiSimilarityLoss", Flaky)
    with pytest.raises(_Interrupt):
        train_biocom(root / "corpus", tmp_path / "run", tiny, config=c)
    assert (tmp_path / "run" / "checkpoints" / "last.pt").exists()
    assert not (tmp_path / "run" / MODEL_JSON).exists()
    monkeypatch.setattr(train_mod, "MultiSimilarityLoss", MultiSimilarityLoss)
    # another configuration refuses the checkpoint instead of mixing runs
    with pytest.raises(KgnormError, match="different BioCoM run"):
        train_biocom(root / "corpus", tmp_path / "run", tiny, config=cfg(lr=5e-4))
    res = train_biocom(root / "corpus", tmp_path / "run", tiny, config=c)
    assert res.resumed and res.global_step == ref.global_step

    from safetensors.torch import load_file
    a = load_file(str(tmp_path / "ref" / "encoder" / "model.safetensors"))
    b = load_file(str(tmp_path / "run" / "encoder" / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k], b[k], atol=1e-6), k
    items = [("ovarian cancer", "The patients had ovarian cancer.")]
    assert np.allclose(load_biocom(tmp_path / "ref").search(items, 5)[1],
                       load_biocom(tmp_path / "run").search(items, 5)[1], atol=1e-3)


def test_max_steps_stops_inside_an_epoch_and_a_bigger_budget_continues(setup, tmp_path):
    root, tiny, _ = setup
    out = tmp_path / "m"
    r1 = train_biocom(root / "corpus", out, tiny, config=cfg(max_steps=3, keep_checkpoint=True))
    assert r1.global_step == 3 and (out / MODEL_JSON).exists()
    r2 = train_biocom(root / "corpus", out, tiny, config=cfg(max_steps=None))
    assert r2.resumed and r2.epochs_completed == 2 and r2.global_step > 3


def test_corpus_of_another_version_is_refused(setup, tmp_path):
    root, tiny, _ = setup
    with pytest.raises(KgnormError, match="v2"):
        train_biocom(root / "corpus", tmp_path / "x", tiny, config=cfg(),
                     ontology="toy", version="v2")


def test_synonym_substitution_rows(setup, tmp_path):
    """Each corpus row gives up to n training rows with its mention replaced, in place, by
    other names of its concept (never one with the same tokens); index rows are untouched;
    the rows are seeded and training runs with them."""
    from kgnorm.methods.biocom.corpus import load_corpus, name_tokens

    root, bert, dev = setup
    corpus = load_corpus(root / "corpus", "toy", "v1")
    plain = train_mod._prepare(corpus, cfg())
    data = train_mod._prepare(corpus, cfg(substitutions=2))
    assert data.index_items == plain.index_items
    extra = data.train_items[len(plain.train_items):]
    assert len(extra) == data.substituted_rows > 0
    # every concept here has at most 2 names, so the substitute is the other one, in row order
    expected, labels = [], []
    for r in range(len(corpus)):
        sent, a, b, uid = corpus.sentences[r], corpus.starts[r], corpus.ends[r], corpus.uids[r]
        others = [n for n in corpus.names[uid] if name_tokens(n) != name_tokens(sent[a:b])]
        for n in others:
            expected.append((sent[:a] + n + sent[b:], a, a + len(n)))
            labels.append(plain.train_labels[r])
    assert extra == expected and data.train_labels[len(plain.train_items):] == labels
    again = train_mod._prepare(corpus, cfg(substitutions=2))
    assert again.train_items == data.train_items
    res = train_biocom(root / "corpus", tmp_path / "m", bert, config=cfg(substitutions=1, epochs=1),
                       ontology="toy", version="v1")
    meta = json.loads((tmp_path / "m" / MODEL_JSON).read_text())
    assert meta["corpus"]["substituted_training_rows"] > 0 and res.global_step > 0
    with pytest.raises(KgnormError, match="substitutions"):
        cfg(substitutions=-1).check()
