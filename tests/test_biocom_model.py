"""BioCoM encoder markers, Multi-Similarity loss and mining, batch sampler, kNN vote."""
from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import make_word_bert
from kgnorm.methods.biocom.linker import evaluate_rankings, knn_vote
from kgnorm.losses.multi_similarity import MultiSimilarityLoss, mine_pairs, ms_loss
from kgnorm.methods.biocom.model import END_ENT, ENT, BiocomEncoder, locate, mark
from kgnorm.samplers.concept_batch import ConceptBatchSampler
from kgnorm.errors import KgnormError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

os.environ.setdefault("HF_HUB_OFFLINE", "1")


WORDS = """the a of in with and was were had patients boys case cases family families
ovarian breast cancer carcinoma tumor tumour muscular dystrophy duchenne deficiency
glucose phosphate dehydrogenase disease diseases syndrome leukemia acute lymphoblastic
risk study studied rare common mutation mutations gene genes . , ( ) - ' 1 2 3 6""".split()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return make_word_bert(tmp_path_factory.mktemp("tiny-bert"), WORDS)


# --------------------------------------------------------------------------- markers

def test_mark_and_locate():
    s = "Boys with Duchenne muscular dystrophy were studied."
    assert mark(s, 10, 37) == "Boys with [ENT] Duchenne muscular dystrophy [/ENT] were studied."
    cut = mark("w " * 100 + "cancer" + " z" * 100, 200, 206, window_chars=10)
    assert cut.startswith("w") and len(cut) < 50 and "[ENT] cancer [/ENT]" in cut
    assert locate("DMD", "Boys with dmd.") == ("Boys with dmd.", 10, 13)
    assert locate("tumour", "No such word here.") == ("tumour", 0, 6)
    assert locate("tumour", None) == ("tumour", 0, 6)
    with pytest.raises(KgnormError):
        mark("short", 3, 9)


def test_markers_are_added_and_found(tiny, tmp_path):
    enc = BiocomEncoder(tiny, max_length=32)
    n_vocab = len(enc.tokenizer)
    assert enc.model.get_input_embeddings().num_embeddings == n_vocab
    assert enc.ent_id != enc.tokenizer.unk_token_id and enc.end_id != enc.ent_id
    items = [("Boys with Duchenne muscular dystrophy were studied.", 10, 37),
             ("breast cancer", 0, 13)]
    batch, pos = enc.tokenize(items)
    ids = batch["input_ids"]
    for r in range(2):
        toks = enc.tokenizer.convert_ids_to_tokens(ids[r].tolist())
        assert toks[int(pos[r])] == ENT and END_ENT in toks
        assert (ids[r] == enc.ent_id).sum() == 1 and (ids[r] == enc.end_id).sum() == 1
    assert enc.tokenizer.convert_ids_to_tokens(ids[0].tolist())[1:5] == [
        "boys", "with", ENT, "duchenne"]
    # the [ENT] hidden state is the representation; embed() L2-normalises it
    v = enc.embed(items)
    assert v.shape == (2, 32) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    with torch.no_grad():
        raw = enc.forward(items)
        hidden = enc.model(**batch).last_hidden_state
    assert torch.allclose(raw[1], hidden[1, int(pos[1])], atol=1e-6)
    # a mention past max_length falls back to the mention alone: [ENT] is never lost
    long = " ".join(["the"] * 60) + " ovarian cancer"
    _, p = BiocomEncoder(tiny, max_length=16, window_chars=1000).tokenize(
        [(long, len(long) - 14, len(long))])
    assert int(p[0]) == 1
    # saving keeps the markers: reloading adds nothing and gives the same vectors
    enc.save(tmp_path / "saved")
    again = BiocomEncoder(tmp_path / "saved", max_length=32)
    assert len(again.tokenizer) == n_vocab and again.ent_id == enc.ent_id
    assert np.allclose(again.embed(items), v, atol=1e-5)
    assert np.allclose(again.encode(["breast cancer"]), v[1:], atol=1e-5)


def test_missing_encoder_dir_is_a_kgnorm_error(tmp_path):
    with pytest.raises(KgnormError, match="not found"):
        BiocomEncoder(tmp_path / "nope")


# --------------------------------------------------------------------------- loss

def _unit(*xy):
    return torch.tensor(xy, dtype=torch.float64)


def test_ms_loss_hand_computed():
    # cos: S01=.8 S02=.6 S03=0 S12=.96 S13=.6 S23=.8; labels 0,0,1,1
    x = _unit((1.0, 0.0), (0.8, 0.6), (0.6, 0.8), (0.0, 1.0))
    y = torch.tensor([0, 0, 1, 1])
    loss, st = ms_loss(x, y, alpha=2, beta=50, lam=1, epsilon=0.1)
    # anchor 0: min pos .8, negatives .6/.0 fail S+.1 > .8 -> no mined negative: skipped
    # anchor 1: neg 2 (.96) kept, neg 3 (.6) dropped; pos 0 (.8) kept (.8-.1 < .96)
    # anchor 2: mirror of anchor 1; anchor 3: mirror of anchor 0 (skipped)
    l1 = 0.5 * math.log(1 + math.exp(-2 * (0.8 - 1))) + \
        (1 / 50) * math.log(1 + math.exp(50 * (0.96 - 1)))
    assert loss.item() == pytest.approx(2 * l1 / 4, rel=1e-9)
    assert (st.anchors, st.positives, st.negatives) == (2, 2, 2)
    # without mining every pair counts
    loss_all, st_all = ms_loss(x, y, 2, 50, 1, 0.1, mining=False)
    l0 = 0.5 * math.log(1 + math.exp(-2 * (0.8 - 1))) + \
        (1 / 50) * math.log(1 + math.exp(50 * (0.6 - 1)) + math.exp(50 * (0.0 - 1)))
    l1b = 0.5 * math.log(1 + math.exp(-2 * (0.8 - 1))) + \
        (1 / 50) * math.log(1 + math.exp(50 * (0.96 - 1)) + math.exp(50 * (0.6 - 1)))
    assert loss_all.item() == pytest.approx((2 * l0 + 2 * l1b) / 4, rel=1e-9)
    assert st_all.anchors == 4
    # unnormalised inputs are normalised first; the module gives the same value
    mod = MultiSimilarityLoss()
    assert mod(3 * x, y).item() == pytest.approx(loss.item(), rel=1e-9)
    assert mod.last_stats.anchors == 2


def test_ms_mining_rule():
    # anchor 0: positives 1 (.9), 2 (.5); negatives 3 (.45), 4 (.2)
    sim = torch.tensor([[1.0, 0.9, 0.5, 0.45, 0.2],
                        [0.9, 1.0, 0.4, 0.1, 0.1],
                        [0.5, 0.4, 1.0, 0.3, 0.3],
                        [0.45, 0.1, 0.3, 1.0, 0.8],
                        [0.2, 0.1, 0.3, 0.8, 1.0]])
    y = torch.tensor([0, 0, 0, 1, 1])
    pos, neg = mine_pairs(sim, y, epsilon=0.1)
    # negative kept when S_n + eps > min positive (.5): .45 yes, .2 no
    assert neg[0].tolist() == [False, False, False, True, False]
    # positive kept when S_p - eps < max negative (.45): .9 no (easy), .5 yes
    assert pos[0].tolist() == [False, False, True, False, False]
    assert not pos.diagonal().any()


def test_ms_loss_gradient_is_finite_when_nothing_is_mined():
    x = _unit((1.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (-1.0, 0.0)).requires_grad_()
    loss, st = ms_loss(x, torch.tensor([0, 0, 1, 1]))
    loss.backward()
    assert st.anchors == 0 and loss.item() == 0.0 and torch.isfinite(x.grad).all()


# --------------------------------------------------------------------------- sampler

def test_batches_are_16_concepts_by_2_with_positives():
    sizes = [1] + [2, 3, 5, 20] * 10          # 40 usable concepts, one with a single row
    groups, row = {}, 0
    for i, n in enumerate(sizes):
        groups[f"C{i}"] = list(range(row, row + n))
        row += n
    label = {r: c for c, rows in groups.items() for r in rows}
    s = ConceptBatchSampler(groups, 16, 2, seed=3)
    assert s.skipped == ["C0"]
    batches = s.plan(0)
    assert len(s) == len(batches) >= (row - 1) // 32
    used = Counter()
    for b in batches:
        assert len(b) == 32 and len(set(b)) == 32
        concepts = [label[r] for r in b]
        cnt = Counter(concepts)
        assert len(cnt) == 16 and set(cnt.values()) == {2}
        assert concepts[0::2] == concepts[1::2]      # concept-major pairs
        used.update(b)
    assert set(used) == set(range(1, row))          # every usable row appears in an epoch
    assert s.plan(0) == ConceptBatchSampler(groups, 16, 2, seed=3).plan(0)
    assert s.plan(1) != batches
    s.set_epoch(1)
    assert list(iter(s)) == s.plan(1)


def test_sampler_with_fewer_concepts_than_a_batch():
    s = ConceptBatchSampler({"A": [0, 1, 2], "B": [3, 4], "C": [5]}, 16, 2)
    for b in s:
        assert len(b) == 4 and {r // 3 if r < 3 else 1 for r in b} == {0, 1}
    with pytest.raises(KgnormError):
        ConceptBatchSampler({"A": [0, 1], "B": [2]}, 16, 2)


# --------------------------------------------------------------------------- vote

def test_knn_vote_majority_tie_break_and_fill():
    uids = ["A", "B", "B", "A", "C", "D", "B"]
    sims = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]
    assert knn_vote(uids, sims, 1)[0] == ("A", 1.0)
    # k=3: B has 2 votes
    assert knn_vote(uids, sims, 3, top_k=2) == [("B", 2 / 3), ("A", 1 / 3)]
    # k=4: A and B tie 2-2 in votes; B's summed similarity (.8+.75) beats A's (.9+.6)
    r = knn_vote(["A", "B", "B", "A"], [0.9, 0.8, 0.75, 0.6], 4)
    assert r == [("B", 0.5), ("A", 0.5)]
    # fillers after the voters, nearest first, score 0
    assert knn_vote(uids, sims, 1, top_k=4) == [("A", 1.0), ("B", 0.0), ("C", 0.0),
                                                ("D", 0.0)]
    assert knn_vote(["A"], [0.5], 10) == [("A", 1.0)]
    acc = evaluate_rankings([[("A", 1.0), ("B", 0.0)], [("C", 1.0)]], [{"B"}, "C"], (1, 2))
    assert acc == {"mentions": 2, "acc@1": 0.5, "acc@2": 1.0}


def test_evaluate_rankings_is_the_strict_scorer():
    """BioCoM's dev metric is the project's one scorer: a gold set is the concept's own ids
    (its uid and the alt id it came from); another concept earns nothing, one uid per rank."""
    from kgnorm.evaluation.link_accuracy import accuracy_at_k

    rankings = [[("MESH:D1", 1.0)], [("OMIM:2", 1.0), ("MESH:D2", 0.5)], [("MESH:D9", 1.0)]]
    gold = [{"MESH:D1", "OMIM:1"}, {"MESH:D2"}, {"MESH:D3"}]
    acc = evaluate_rankings(rankings, gold, (1, 5))
    assert acc == {"mentions": 3, "acc@1": 1 / 3, "acc@5": 2 / 3}
    strict = accuracy_at_k([[[u for u, _ in r]] for r in rankings], ["MESH:D1+OMIM:1", "MESH:D2", "MESH:D3"])
    assert (strict.acc1, strict.acc5) == (acc["acc@1"], acc["acc@5"])
