"""Pretraining on ontology synonyms (kgnorm.methods.pretrain): the data, the mining, the loss going
down, resuming, and `kgnorm pretrain` end to end with its one-line errors that write nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from cli_runner import exit_code, run
from test_cli_encoders import TINY_OBO  # 8 concepts, 7 with two or more names, an IS_A tree
from kgnorm.losses.multi_similarity import mine_pairs, ms_loss
from kgnorm.errors import KgnormError
from kgnorm.graph.views import ConceptNames, OntologySnapshot
from kgnorm.methods.pretrain import (META_FILE, PretrainConfig, build_pretrain_data, pretrain, pretrain_encoder,
                                read_pretrain_data)
from kgnorm.methods.pretrain.train import CHECKPOINT
from kgnorm.stores import open_store
from kgnorm.text.pipeline import TextPipeline

torch.set_num_threads(1)

FEW_OBO = """format-version: 1.2
ontology: few

[Term]
id: FW:1
name: breast cancer
synonym: "breast tumor" EXACT []

[Term]
id: FW:2
name: fever

[Term]
id: FW:3
name: pain
"""


def cfg(**kw) -> PretrainConfig:
    base = dict(concepts_per_batch=3, names_per_concept=2, lr=1e-3, epochs=3, bucket=4, log_steps=1,
                checkpoint_steps=2, max_length=16, seed=3)
    base.update(kw)
    return PretrainConfig(**base)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("pre")
    store = f"ladybug://{d}/graph"
    (d / "tiny.obo").write_text(TINY_OBO)
    (d / "tiny2.obo").write_text(TINY_OBO.replace("TY:", "TZ:").replace("ontology: tiny", "ontology: tiny2"))
    (d / "few.obo").write_text(FEW_OBO)
    for path, name in ((d / "tiny.obo", "tiny"), (d / "tiny2.obo", "tiny2"), (d / "few.obo", "few")):
        assert exit_code(["ingest", "obo", str(path), "--ontology", name, "--store", store, "-q"]) == 0
    with open_store(store) as st:
        data = read_pretrain_data(st, ["tiny"])
    return {"dir": d, "store": store, "data": data}


def _weights(directory: Path) -> dict[str, torch.Tensor]:
    from transformers import AutoModel

    return {k: v.clone() for k, v in AutoModel.from_pretrained(str(directory)).state_dict().items()}


def _data_loss(encoder_dir: Path, data) -> float:
    """MS loss over every name of every multi-name concept at once, no dropout, no mining."""
    from kgnorm.encoders.dense import DenseEncoder

    enc = DenseEncoder(encoder_dir, pooling="mean", max_length=16, device="cpu")
    rows = sorted(r for rs in data.groups.values() for r in rs)
    with torch.no_grad():
        x = enc.embed([data.names[r] for r in rows])
        loss, _ = ms_loss(x, torch.tensor([data.labels[r] for r in rows]), 1.0, 60.0, 0.5, mining=False)
    return float(loss)


# --------------------------------------------------------------------------- data

def test_names_are_normalized_grouped_per_concept_and_counted():
    snap = OntologySnapshot("o", "v1", [
        ConceptNames("A", "Heart Attack", ["heart attack", "Myocardial  Infarction"], []),
        ConceptNames("B", "Fever", [], []),
        ConceptNames("C", "Renal failure", ["Kidney failure"], []),
    ], [])
    norm = TextPipeline().normalize_name
    data = build_pretrain_data([snap], norm)
    assert sorted(data.groups) == ["o\tA", "o\tC"]            # B has one name: no positive
    assert [data.names[r] for r in data.groups["o\tA"]] == [norm("Heart Attack"), norm("Myocardial  Infarction")]
    assert data.ontologies == [{"name": "o", "version": "v1", "concepts": 3, "multi_name_concepts": 2,
                                "names": 5}]
    with pytest.raises(KgnormError, match=r"o: 2 of 3.*at least 5"):
        build_pretrain_data([snap], norm, min_concepts=5)


def test_two_ontologies_keep_their_concepts_apart(world):
    with open_store(world["store"]) as st:
        data = read_pretrain_data(st, ["tiny", "tiny2"])
    assert len(data.groups) == 2 * len(world["data"].groups)
    assert {o["name"] for o in data.ontologies} == {"tiny", "tiny2"}


# --------------------------------------------------------------------------- mining

def test_mining_keeps_only_the_hardest_pairs():
    # concept 0 = rows 0,1,2; concept 1 = rows 3,4; concept 2 = row 5
    sim = torch.tensor([[1.00, 0.95, 0.40, 0.50, 0.10, 0.15],
                        [0.95, 1.00, 0.90, 0.20, 0.10, 0.85],
                        [0.40, 0.90, 1.00, 0.30, 0.35, 0.10],
                        [0.50, 0.20, 0.30, 1.00, 0.30, 0.25],
                        [0.05, 0.05, 0.35, 0.30, 1.00, 0.90],
                        [0.15, 0.85, 0.10, 0.25, 0.90, 1.00]])
    y = torch.tensor([0, 0, 0, 1, 1, 2])
    pos, neg = mine_pairs(sim, y, epsilon=0.2)
    # row 0: hardest positive .40, hardest negative .50. A negative is kept when s + .2 > .40: .50 only;
    # a positive when s - .2 < .50: .40 yes, the easy .95 no
    assert neg[0].tolist() == [False, False, False, True, False, False]
    assert pos[0].tolist() == [False, False, True, False, False, False]
    # row 1: hardest positive .90, hardest negative .85: both positives are hard, the negative .85 only
    assert pos[1].tolist() == [True, False, True, False, False, False]
    assert neg[1].tolist() == [False, False, False, False, False, True]
    # row 4: positive .30 below the negative .90: kept; negatives above .30 - .2: .35 and .90
    assert pos[4].tolist() == [False, False, False, True, False, False]
    assert neg[4].tolist() == [False, False, True, False, False, True]
    # row 5 has no positive: it mines nothing and adds nothing to the loss
    assert not pos[5].any()


# --------------------------------------------------------------------------- training

def test_loss_decreases_and_a_plain_encoder_directory_is_written(world, tiny_bert_dir, tmp_path):
    out = tmp_path / "enc"
    res = pretrain_encoder(world["data"], out, tiny_bert_dir, cfg(epochs=8))
    assert res.complete and res.epochs_completed == 8 and res.global_step > 8
    assert not (out / CHECKPOINT).exists()                    # finished: checkpoint deleted
    assert _data_loss(out, world["data"]) < 0.8 * _data_loss(tiny_bert_dir, world["data"])
    log = res.info["log"]
    first, last = log[0]["loss"], sum(h["loss"] for h in log[-3:]) / 3
    assert last < first
    meta = json.loads((out / META_FILE).read_text())
    assert meta["ontologies"][0]["name"] == "tiny" and meta["steps"] == res.global_step and meta["complete"]
    from transformers import AutoModel, AutoTokenizer

    AutoModel.from_pretrained(str(out)), AutoTokenizer.from_pretrained(str(out))


def test_api_reads_the_store_and_trains(world, tiny_bert_dir, tmp_path):
    with open_store(world["store"]) as st:
        res = pretrain(st, ["tiny", "tiny2"], tmp_path / "api", tiny_bert_dir, cfg(epochs=1))
    meta = json.loads((tmp_path / "api" / META_FILE).read_text())
    assert res.complete and [o["name"] for o in meta["ontologies"]] == ["tiny", "tiny2"]
    assert meta["concepts"] == 14 and meta["base_encoder"] == str(Path(tiny_bert_dir).resolve())


def test_workbench_pretrain_is_the_cli_run(world, tiny_bert_dir, tmp_path, capsys):
    """Workbench.pretrain and `kgnorm pretrain` with the same options write the same weights."""
    from kgnorm import Workbench

    opts = dict(epochs=2, concepts_per_batch=3, lr=1e-3, seed=5)
    out = Workbench(world["store"]).pretrain("tiny", tmp_path / "api", encoder=tiny_bert_dir, threads=1, **opts)
    assert out == tmp_path / "api" and json.loads((out / META_FILE).read_text())["epochs_completed"] == 2
    code, _, err = run(capsys, "pretrain", "--ontology", "tiny", "--out", str(tmp_path / "cli"), "--encoder",
                       str(tiny_bert_dir), "--epochs", "2", "--concepts-per-batch", "3", "--lr", "1e-3",
                       "--seed", "5", "--threads", "1", "--store", world["store"], "-q")
    assert code == 0, err
    api, cli = _weights(out), _weights(tmp_path / "cli")
    assert api.keys() == cli.keys() and all(torch.equal(api[k], cli[k]) for k in api)
    with pytest.raises(KgnormError, match="unknown pretraining option"):
        Workbench(world["store"]).pretrain("tiny", tmp_path / "x", encoder=tiny_bert_dir, learning_rate=1)
    with pytest.raises(KgnormError, match="Workbench's store"):
        Workbench(world["store"]).pretrain("tiny", tmp_path / "x", store=world["store"])
    assert not (tmp_path / "x").exists()


def test_hierarchy_term_uses_parent_names(world, tiny_bert_dir, tmp_path):
    with open_store(world["store"]) as st:
        data = read_pretrain_data(st, ["tiny"], hierarchy=True)
    assert set(data.hierarchies["tiny"].parents("TY:0000011")) == {"TY:0000010"}
    # margin 1: every (name, parent name) pair below cosine 1 adds to the loss
    res = pretrain_encoder(data, tmp_path / "h", tiny_bert_dir, cfg(hierarchy=True, hierarchy_margin=1.0, epochs=2))
    assert res.complete and all(h["parent_pairs"] >= 1 for h in res.info["log"])
    assert all(h["hierarchy_loss"] > 0 for h in res.info["log"])
    with open_store(world["store"]) as st:
        both = read_pretrain_data(st, ["tiny", "few"], hierarchy=True)   # "few" has no IS_A edge
    assert set(both.hierarchies) == {"tiny"} and both.ontologies[1]["is_a_edges"] == 0
    flat = OntologySnapshot("flat", "1", [ConceptNames("A", "a b", ["b a"], []), ConceptNames("B", "c", ["d"], [])], [])
    with pytest.raises(KgnormError, match=r"\(flat\) has IS_A edges"):
        build_pretrain_data([flat], str.lower, with_hierarchy=True)
    with pytest.raises(KgnormError, match="with_hierarchy"):
        pretrain_encoder(world["data"], tmp_path / "h2", tiny_bert_dir, cfg(hierarchy=True))


def test_budget_stop_then_resume_replays_the_uninterrupted_run(world, tiny_bert_dir, tmp_path):
    full = pretrain_encoder(world["data"], tmp_path / "full", tiny_bert_dir, cfg())
    part = tmp_path / "part"
    stopped = pretrain_encoder(world["data"], part, tiny_bert_dir, cfg(max_steps=3))
    assert not stopped.complete and stopped.global_step == 3 and (part / CHECKPOINT).exists()
    resumed = pretrain_encoder(world["data"], part, tiny_bert_dir, cfg())
    assert resumed.resumed and resumed.complete and resumed.global_step == full.global_step
    a, b = _weights(tmp_path / "full"), _weights(part)
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


# --------------------------------------------------------------------------- CLI

def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()} if d.exists() else {}


def _error(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.startswith("kgnorm: error")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_cli_pretrain_then_train_from_it(capsys, world, tiny_bert_dir, tmp_path):
    out = tmp_path / "pre"
    code, _, err = run(capsys, "pretrain", "--ontology", "tiny", "--out", str(out), "--encoder", str(tiny_bert_dir),
                       "--epochs", "2", "--concepts-per-batch", "3", "--lr", "1e-3", "--threads", "1",
                       "--store", world["store"])
    assert code == 0, err
    assert "step" in err and "encoder →" in err
    assert json.loads((out / META_FILE).read_text())["epochs_completed"] == 2
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "tiny", "--out", str(tmp_path / "m"),
                       "--encoder", str(out), "--store", world["store"], "-q")
    assert code == 0, err


def test_cli_too_few_multi_name_concepts(capsys, world, tiny_bert_dir, tmp_path):
    out = tmp_path / "x"
    code, _, err = run(capsys, "pretrain", "--ontology", "few", "--out", str(out), "--encoder", str(tiny_bert_dir),
                       "--store", world["store"], "-q")
    assert code == 1 and "few: 1 of 3" in _error(err) and not out.exists()


def test_cli_encoder_that_is_not_a_model(capsys, world, tmp_path):
    bogus = tmp_path / "bogus"
    bogus.mkdir()
    (bogus / "notes.txt").write_text("hello")
    out = tmp_path / "x"
    code, _, err = run(capsys, "pretrain", "--ontology", "tiny", "--out", str(out), "--encoder", str(bogus),
                       "--concepts-per-batch", "3", "--store", world["store"], "-q")
    assert code == 1 and "not a Hugging Face model" in _error(err) and not out.exists()


def test_cli_resume_with_other_ontologies_or_encoder_is_refused(capsys, world, tiny_bert_dir, tmp_path):
    out = tmp_path / "run"
    stopped = pretrain_encoder(world["data"], out, tiny_bert_dir, cfg(max_steps=1))
    assert not stopped.complete
    before = _files(out)
    code, _, err = run(capsys, "pretrain", "--ontology", "tiny2", "--out", str(out), "--encoder", str(tiny_bert_dir),
                       "--concepts-per-batch", "3", "--store", world["store"], "-q")
    assert code == 1 and "ontologies tiny, not tiny2" in _error(err)
    other = tmp_path / "other-bert"
    import shutil
    shutil.copytree(tiny_bert_dir, other)
    code, _, err = run(capsys, "pretrain", "--ontology", "tiny", "--out", str(out), "--encoder", str(other),
                       "--concepts-per-batch", "3", "--store", world["store"], "-q")
    assert code == 1 and "from encoder" in _error(err)
    assert _files(out) == before


def test_cli_refuses_a_directory_that_is_not_a_run(capsys, world, tiny_bert_dir, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.txt").write_text("precious")
    code, _, err = run(capsys, "pretrain", "--ontology", "tiny", "--out", str(out), "--encoder", str(tiny_bert_dir),
                       "--concepts-per-batch", "3", "--store", world["store"], "-q")
    assert code == 1 and "not empty" in _error(err) and _files(out) == {"thesis.txt": b"precious"}
