"""`train biosyn --refit` (the default with --train and --dev): dev selection picks E, the same recipe
trains again on train + dev for E epochs into --out, the dictionary holds the dev mentions, the metadata
says what was selected and that dev is no longer held out, `eval` says so, an interrupted refit resumes
without redoing the selection; `--rerank` trains a reranker inside the directory that `link` ranks
through."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from cli_runner import ctd_mentions, exit_code, run
from kgnorm.methods.refit import SELECTION_DIR, file_sha256

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TRAIN = ("1||0|18||Disease||fictional syndrome||D900001\n"
         "1||20|31||Disease||toe disease||D900002\n"
         "2||0|4||Disease||fts2||999002\n"
         "2||5|24||Disease||made-up syndromes||D900001\n")
DEV = ("7||0|19||Disease||fictional syndromes||D900001\n"
       "7||20|28||Disease||toe pain||D900002\n"
       "8||0|22||Disease||toe syndrome fictional||999002\n")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return ctd_mentions(tmp_path_factory.mktemp("refit"), TRAIN, DEV)


def _train(world, encoder, out: Path, *extra: str) -> list[str]:
    return ["train", "biosyn", "--ontology", "ctd", "--out", str(out), "--train", str(world["train"]),
            "--dev", str(world["dev"]), "--encoder", str(encoder), "--epochs", "2", "--topk", "3",
            "--max-length", "12", "--store", world["store"], *extra]


def _meta(d: Path) -> dict:
    return json.loads((d / "kgnorm-model.json").read_text())


def _dictionary(d: Path):
    from kgnorm.linking.dictionary import NameDictionary

    return NameDictionary.load(d / "names")


@pytest.fixture(scope="module")
def refit_model(world, tiny_bert_dir):
    out = world["tmp"] / "refit"
    assert exit_code(_train(world, tiny_bert_dir, out, "-q")) == 0
    return out


def test_refit_trains_the_selected_epochs_on_train_and_dev(refit_model, world):
    meta = _meta(refit_model)
    block = meta["refit"]
    assert block["refit"] is True and block["complete"] is True
    e = block["epochs_selected"]
    sel_history = block["selection"]["history"]
    assert 1 <= e <= 2 and len(sel_history) == block["selection"]["epochs_run"]
    assert block["epochs_trained"] == e
    history = meta["training"]["history"]
    assert [r["epoch"] for r in history] == list(range(1, e + 1))  # E epochs, the last is the model
    assert all("dev" not in r for r in history) and "dev" not in meta["metrics"]
    # the queries are the train and the dev mentions; the dictionary holds the dev mentions
    assert meta["training"]["n_queries"] == 7
    d = _dictionary(refit_model)
    row = d.index_of("toe pain")
    assert row is not None and d.is_mention[row] and "MESH:D900002" in d.uids[row]
    assert not (refit_model / SELECTION_DIR).exists()  # the dev-selected model is not left behind
    assert not (refit_model / "checkpoints").exists()


def test_refit_metadata_records_selection_and_files(refit_model, world):
    block = _meta(refit_model)["refit"]
    best = max((r["dev"]["acc@1"] for r in block["selection"]["history"]), default=None)
    assert block["selected_dev_acc1_held_out"] == best
    assert block["dev_file"] == {"path": str(world["dev"].resolve()), "sha256": file_sha256(world["dev"])}
    assert block["train_file"]["sha256"] == file_sha256(world["train"])
    assert block["dev_held_out"] is False and "not a held-out figure" in block["note"]
    assert block["budget_minutes"] == {"selection": 45.0, "refit": 45.0}


def test_no_refit_keeps_the_dev_selected_model(world, tiny_bert_dir, capsys):
    out = world["tmp"] / "norefit"
    code, _, err = run(capsys, *_train(world, tiny_bert_dir, out, "--no-refit"))
    assert code == 0, err
    meta = _meta(out)
    assert meta["refit"]["refit"] is False and meta["refit"]["dev_held_out"] is True
    assert "dev" in meta["metrics"] and meta["training"]["n_queries"] == 4
    assert _dictionary(out).index_of("toe pain") is None
    assert not (out / SELECTION_DIR).exists() and "refit epoch" not in err
    # eval on its dev file: a held-out figure, no warning
    code, stdout, err = run(capsys, "eval", "link", "--model", str(out), "--gold", str(world["dev"]),
                            "--format", "json", "--store", world["store"])
    assert code == 0 and json.loads(stdout)["gold_held_out"] is True and "not held out" not in err


def test_eval_link_says_a_refit_model_is_not_held_out(refit_model, world, capsys, tmp_path):
    code, stdout, err = run(capsys, "eval", "link", "--model", str(refit_model), "--gold", str(world["dev"]),
                            "--format", "json", "--store", world["store"])
    assert code == 0, err
    assert json.loads(stdout)["gold_held_out"] is False
    lines = [line for line in err.splitlines() if "not held out" in line]
    assert len(lines) == 1 and "dev file" in lines[0]
    code, stdout, err = run(capsys, "eval", "link", "--model", str(refit_model), "--gold", str(world["dev"]),
                            "--store", world["store"])
    assert code == 0 and "not held out" in err and "Acc@1" in stdout
    other = tmp_path / "other.concept"  # other mentions: held out
    other.write_text(DEV.splitlines(keepends=True)[1])
    code, stdout, err = run(capsys, "eval", "link", "--model", str(refit_model), "--gold", str(other),
                            "--format", "json", "--store", world["store"])
    assert code == 0 and json.loads(stdout)["gold_held_out"] is True and "not held out" not in err


def test_an_interrupted_refit_resumes_without_redoing_the_selection(world, tiny_bert_dir, monkeypatch):
    import kgnorm.methods.biosyn.recipe as recipe

    out = world["tmp"] / "interrupted"
    real_note, real_phase = recipe.note, recipe._train_phase
    phases: list[tuple[bool, dict | None]] = []

    def interrupting(message, quiet=False):
        if message.startswith("refit epoch 1:"):
            raise KeyboardInterrupt
        real_note(message, quiet)

    def spying(opts, snap, phase, quiet):
        res = real_phase(opts, snap, phase, quiet)
        phases.append((phase.refit, res.resumed_from))
        return res

    monkeypatch.setattr(recipe, "note", interrupting)
    monkeypatch.setattr(recipe, "_train_phase", spying)
    assert exit_code(_train(world, tiny_bert_dir, out, "-q")) == 130  # Ctrl-C
    assert [p[0] for p in phases] == [False]  # the selection finished, the refit did not
    assert _meta(out / SELECTION_DIR)["selection"]["epochs"] >= 1
    assert (out / "checkpoints" / "last.pt").is_file() and "refit" not in _meta(out)
    monkeypatch.setattr(recipe, "note", real_note)
    assert exit_code(_train(world, tiny_bert_dir, out, "-q")) == 0
    assert [p[0] for p in phases] == [False, True]  # no second selection
    assert phases[1][1] == {"epoch": 1, "step": 0}  # the refit continued from its checkpoint
    block = _meta(out)["refit"]
    assert block["complete"] and block["epochs_trained"] == block["epochs_selected"]
    assert not (out / SELECTION_DIR).exists()
    # a finished refit of the same options is not trained again
    assert exit_code(_train(world, tiny_bert_dir, out, "-q")) == 0 and len(phases) == 2


def test_rerank_inside_the_model_directory(world, tiny_bert_dir, capsys):
    from kgnorm.jobs.models import open_linker
    from kgnorm.methods.model_dir import write_model_meta
    from kgnorm.methods.rerank.linker import RerankLinker

    out = world["tmp"] / "reranked"
    code, _, err = run(capsys, *_train(world, tiny_bert_dir, out, "--epochs", "1", "--rerank", "-q"))
    assert code == 0, err
    meta = _meta(out)
    assert meta["reranker"]["path"] == "reranker" and meta["reranker"]["dev_selection"] is False  # refit: no dev
    assert [f["sha256"] for f in meta["reranker"]["trained_on"]] == [file_sha256(world["train"]),
                                                                    file_sha256(world["dev"])]
    linker, _ = open_linker(out)
    assert isinstance(linker, RerankLinker) and linker.depth == meta["reranker"]["top_k"]
    alone, _ = open_linker(out / "reranker")  # the reranker's own directory: its linker, reranked once
    assert isinstance(alone, RerankLinker) and not isinstance(alone.inner, RerankLinker)
    bare = world["tmp"] / "bare"  # the same linker without its reranker
    shutil.copytree(out, bare)
    write_model_meta(bare, {k: v for k, v in meta.items() if k != "reranker"})
    mentions = world["tmp"] / "m.tsv"
    mentions.write_text("id\ttext\tdoc_id\nm1\tFictional syndromes\td1\nm2\ttoe syndrome\td1\n")
    tables = []
    for model in (out, bare):
        tsv = world["tmp"] / f"{model.name}.tsv"
        code, _, err = run(capsys, "link", "--model", str(model), "--input", str(mentions), "--top-k", "3",
                           "--no-write", "--output", str(tsv), "--store", world["store"], "-q")
        assert code == 0, err
        tables.append(list(csv.DictReader(tsv.open(), delimiter="\t")))
    for rows in tables:
        for mid in ("m1", "m2"):
            uids = [r["concept_uids"] for r in rows if r["mention_id"] == mid]
            assert 1 <= len(uids) == len(set(uids))  # one concept per rank
    # the reranked scores are the linker's plus the cross-encoder's
    assert [r["score"] for r in tables[0]] != [r["score"] for r in tables[1]]
    code, stdout, err = run(capsys, "eval", "link", "--model", str(out), "--gold", str(world["dev"]),
                            "--format", "json", "--store", world["store"])
    assert code == 0 and json.loads(stdout)["full"]["n"] == 3 and "not held out" in err


def test_refit_needs_train_and_dev(world, tiny_bert_dir, capsys):
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "ctd", "--out", str(world["tmp"] / "x"),
                       "--train", str(world["train"]), "--refit", "--encoder", str(tiny_bert_dir),
                       "--store", world["store"])
    assert code != 0 and "--refit needs both --train and --dev" in err
    assert not (world["tmp"] / "x").exists()


def test_dilbert_refits_through_the_same_helper(world, tiny_bert_dir, capsys):
    out = world["tmp"] / "dilbert"
    code, _, err = run(capsys, "train", "dilbert", "--ontology", "ctd", "--out", str(out), "--train",
                       str(world["train"]), "--dev", str(world["dev"]), "--encoder", str(tiny_bert_dir),
                       "--epochs", "1", "--batch-size", "8", "--max-length", "12", "--store", world["store"])
    assert code == 0, err
    meta = _meta(out)
    block = meta["refit"]
    # the starting encoder competes as epoch 0 on dev: E is 0 or 1, and the refit writes E epochs
    assert block["refit"] and block["epochs_selected"] in (0, 1) and block["complete"]
    assert [r["epoch"] for r in meta["training"]["history"]] == list(range(0 if block["epochs_selected"] == 0 else 1,
                                                                          block["epochs_selected"] + 1))
    row = _dictionary(out).index_of("toe pain")
    assert row is not None and _dictionary(out).is_mention[row]
    assert "refit" in err and not (out / SELECTION_DIR).exists()


def test_eval_annotate_says_a_refit_model_is_not_held_out(world, tiny_bert_dir, capsys):
    tmp = world["tmp"]
    (tmp / "train.pubtator").write_text("1|t|Fictional syndrome study\n1|a|Toe disease was seen with fts2.\n"
                                        "1\t0\t18\tFictional syndrome\tDisease\tD900001\n"
                                        "1\t25\t36\tToe disease\tDisease\tD900002\n"
                                        "1\t51\t55\tfts2\tDisease\t999002\n\n")
    dev = tmp / "dev.pubtator"
    dev.write_text("2|t|Toe pain\n2|a|Fictional syndromes again.\n"
                   "2\t0\t8\tToe pain\tDisease\tD900002\n"
                   "2\t9\t28\tFictional syndromes\tDisease\tD900001\n\n")
    out = tmp / "pubtator_refit"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "ctd", "--out", str(out), "--train",
                       str(tmp / "train.pubtator"), "--dev", str(dev), "--encoder", str(tiny_bert_dir), "--epochs", "1",
                       "--topk", "3", "--max-length", "12", "--store", world["store"], "-q")
    assert code == 0, err
    assert _meta(out)["refit"]["dev_file"]["sha256"] == file_sha256(dev)
    code, stdout, err = run(capsys, "eval", "annotate", "--gold", str(dev), "--predictions", str(dev), "--model",
                            str(out), "--format", "json", "--store", world["store"])
    assert code == 0, err
    assert json.loads(stdout)["gold_held_out"] is False and "not held out" in err
