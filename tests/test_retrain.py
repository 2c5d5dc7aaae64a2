"""`kgnorm retrain` (issue 50, item 3): the journey annotate → reviews through the HTTP API → documents
marked done → retrain → annotate again with OUT/linker and OUT/ner, on LadybugDB and over Bolt; and
the pieces: which reviews teach the linker, which documents the detector, the held-back fifth, the
refusals before anything is written."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import quote

from starlette.testclient import TestClient

from annotate_fixtures import OBO, write_gold_pubtator
from cli_runner import run
from kgnorm.documents.readers import read_documents
from kgnorm.review.desk import ReviewDesk
from kgnorm.serve import create_app
from kgnorm.stores import open_store
from test_cli_journey import journey_store  # noqa: F401  (a fresh store of each kind)

TOKEN = "retrain-test-token-0123456789"
def _review(client: TestClient, corpus: Path, done_every: int) -> dict[str, int]:
    """A curator replaying the gold through the API: each found mention accepted, corrected or
    not-a-mention, each missed gold span added; every `done_every`-th document marked done."""
    gold = {d.doc_id: {(a.start, a.end): a.ids[0] for a in d.annotations} for d in read_documents(corpus, "pubtator")}
    counts = {"accept": 0, "concept": 0, "not_a_mention": 0, "added": 0, "done": 0}
    listed = client.get("/api/documents?limit=200").json()["documents"]
    for i, entry in enumerate(sorted(listed, key=lambda d: d["doc_id"])):
        doc = client.get(f"/api/documents/{quote(entry['uid'], safe='')}").json()
        spans = gold[doc["doc_id"]]
        for m in doc["mentions"]:
            want = spans.get((m["start"], m["end"]))
            body = ({"decision": "not_a_mention"} if want is None else {"decision": "accept"}
                    if want == m["machine_concept"] else {"decision": "concept", "concept": want})
            r = client.post(f"/api/mentions/{quote(m['uid'], safe='')}/review", json=body,
                            headers={"X-Kgnorm-Token": TOKEN})
            assert r.status_code == 200, r.text
            counts[body["decision"]] += 1
        found = {(m["start"], m["end"]) for m in doc["mentions"]}
        for (s, e), cid in spans.items():
            if (s, e) not in found:
                r = client.post(f"/api/documents/{quote(doc['uid'], safe='')}/mentions", headers={"X-Kgnorm-Token": TOKEN},
                                json={"start": s, "end": e, "concept": cid, "type": "Disease"})
                assert r.status_code == 201, r.text
                counts["added"] += 1
        if i % done_every == 0:
            r = client.post(f"/api/documents/{quote(doc['uid'], safe='')}/done", json={}, headers={"X-Kgnorm-Token": TOKEN})
            assert r.status_code == 200, r.text
            counts["done"] += 1
    return counts


def test_annotate_review_done_retrain_annotate_again(journey_store, tmp_path, tiny_bert_dir, capsys):  # noqa: F811
    from test_annotate_formats import _tiny_detector

    store = journey_store
    (tmp_path / "toyd.obo").write_text(OBO, encoding="utf-8")
    assert run(capsys, "ingest", "obo", str(tmp_path / "toyd.obo"), "--ontology", "toyd", "--store", store, "-q")[0] == 0
    model = tmp_path / "biosyn"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "toyd", "--out", str(model), "--encoder",
                       str(tiny_bert_dir), "--store", store, "-q")
    assert code == 0, err
    ner = _tiny_detector(tiny_bert_dir, tmp_path / "ner", silent=True)  # its levers find the multi-word names
    corpus = write_gold_pubtator(tmp_path / "corpus.pubtator", copies=5)
    code, _, err = run(capsys, "annotate", "--ner", str(ner), "--model", str(model), "--input", str(corpus),
                       "--input-format", "pubtator", "--output", str(tmp_path / "first.pubtator"), "--store", store, "-q")
    assert code == 0, err

    desk = ReviewDesk(store)
    try:
        counts = _review(TestClient(create_app(desk, TOKEN, reviewer="gold")), corpus, done_every=2)
    finally:
        desk.close()
    assert counts["done"] == 10 and counts["accept"] + counts["concept"] + counts["added"] > 40

    out = tmp_path / "retrained"
    code, _, err = run(capsys, "retrain", "--store", store, "--model", str(model), "--ner", str(ner), "--out", str(out),
                       "--linker-minutes", "1", "--ner-minutes", "0.5", "--threads", "1", "--partial", "--replay",
                       str(corpus))  # the detector's own corpus replayed beside the reviews
    assert code == 0, err
    base_meta = json.loads((model / "kgnorm-model.json").read_text(encoding="utf-8"))
    meta = json.loads((out / "linker" / "kgnorm-model.json").read_text(encoding="utf-8"))
    with open_store(store, read_only=True) as st:
        [(params, metrics)] = st.query("MATCH (r:Run) WHERE r.kind = 'retrain' RETURN r.params_json, r.metrics_json").rows
    params, metrics = json.loads(params), json.loads(metrics)
    assert meta["ontology"] == base_meta["ontology"] and meta["ontology_version"] == base_meta["ontology_version"]
    if "kept_given" in params["linker"]:  # the replayed documents did not support the retrained pair
        assert metrics["replay"]["kept"] in ("retrained detector, given linker", "given pair")
        assert _weights(out / "linker") == _weights(model) and meta["created_at"] == base_meta["created_at"]
    else:
        assert meta["method"] == "biosyn" and meta["finetuned_from"] == str(model.resolve())
        assert _weights(out / "linker") != _weights(model)  # trained from the base's weights, which moved
    ner_meta = json.loads((out / "ner" / "kgnorm-model.json").read_text(encoding="utf-8"))
    assert ner_meta["types"] == ["Disease"] and params["ner_training"]["documents"] == 10 - _held_back_done(store)
    if "kept_given" in params["ner_training"]:  # the held-back done documents did not support it
        assert "finetuned_from" not in ner_meta and _detector_bytes(out / "ner") == _detector_bytes(ner)
        assert "the retrained detector was not kept" in err
    else:
        assert ner_meta["finetuned_from"] == str(ner.resolve())
        trained = params["ner_training"]
        assert ner_meta["train_documents"] == trained["documents"] + trained["partial_texts"] + trained["replayed_documents"]
    # as many replayed documents as new texts (of the 10 of the corpus's 20 the guard does not tag), the
    # corpus named in the run, both detectors scored on the 10 others
    new = params["ner_training"]["documents"] + params["ner_training"]["partial_texts"]
    assert params["ner_training"]["replayed_documents"] == min(10, new)
    rp = metrics["replay"]
    assert rp["documents"] == 10 and "replayed corpus: detector span F1" in err
    if rp["spans_after"]["f1"] < rp["spans_before"]["f1"] - 0.005:
        assert "kept_given" in params["ner_training"]
    # then the pair OUT holds, annotated as annotate would run it, by document F1 on those 10
    assert rp["document_after"][2] >= rp["document_before"][2] - 0.005 and rp["kept"] in rp["document_tried"]
    assert f"OUT holds the {rp['kept']}" in err
    replay = {"path": str(corpus.resolve()), "sha256": hashlib.sha256(corpus.read_bytes()).hexdigest()}
    # the documents not marked done teach the detector their reviewed spans (partial labels)
    assert params["ner_labels"] == {"partial": True, "ner_context": None, "replay": replay}
    assert params["ner_training"]["partial_documents"] > 0 and params["ner_training"]["partial_spans"] > 0
    reviewed_mentions = counts["accept"] + counts["concept"] + counts["added"]  # not-a-mention teaches neither
    assert params["reviews"] == reviewed_mentions and params["done_documents"] == 10
    assert params["model"] == str(model.resolve()) and params["ner"] == str(ner.resolve())
    hb = metrics["held_back"]
    assert params["held_back_documents"] > 0 and hb["mentions"] > 0
    assert 0 <= hb["acc1_before"] <= 1 and 0 <= hb["acc1_after"] <= 1
    assert len(hb["document_before"]) == len(hb["document_after"]) == 3
    assert hb["spans"] > 0 and hb["spans_before"]["tp"] + hb["spans_before"]["fn"] > 0
    assert "held back: detector span P/R/F1" in err
    if metrics["calibration"]:  # refitted on the held-back done documents and the 10 replayed ones
        assert metrics["calibration"]["documents"]["replayed"] == 10
        assert "and 10 replayed one(s): threshold" in err
    assert f"held back: linker Acc@1 {hb['acc1_before']:.4f} -> {hb['acc1_after']:.4f}" in err

    # annotate again with the retrained pair: --model OUT/linker --ner OUT/ner
    code, _, err = run(capsys, "annotate", "--ner", str(out / "ner"), "--model", str(out / "linker"), "--input",
                       str(corpus), "--input-format", "pubtator", "--output", str(tmp_path / "again.jsonl"),
                       "--output-format", "jsonl", "--no-write", "--store", store)
    assert code == 0, err
    again = [m for d in read_documents(tmp_path / "again.jsonl", "jsonl") for m in d.annotations]
    assert again
    if metrics["calibration"]:  # refitted for the new pair: annotate finds it with no flag
        assert all(a.confidence is not None for a in again if a.ids)


def _weights(model_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((model_dir / "encoder").glob("*.safetensors")))


def _detector_bytes(ner_dir: Path) -> bytes:
    from kgnorm.methods.ner.model import HEAD_FILE

    return (ner_dir / HEAD_FILE).read_bytes() + _weights(ner_dir)


def _held_back_done(store: str) -> int:
    from kgnorm.jobs.retrain import held_back
    from kgnorm.review.done import done_documents

    with open_store(store, read_only=True) as st:
        return sum(held_back(d) for d in done_documents(st))


def test_retrain_refuses_before_writing(tmp_path, tiny_bert_dir, capsys):
    store = f"ladybug://{tmp_path}/graph"
    (tmp_path / "toyd.obo").write_text(OBO, encoding="utf-8")
    assert run(capsys, "ingest", "obo", str(tmp_path / "toyd.obo"), "--ontology", "toyd", "--store", store, "-q")[0] == 0
    model = tmp_path / "biosyn"
    assert run(capsys, "train", "biosyn", "--ontology", "toyd", "--out", str(model), "--encoder", str(tiny_bert_dir),
               "--store", store, "-q")[0] == 0
    out = tmp_path / "out"
    code, _, err = run(capsys, "retrain", "--store", store, "--model", str(model), "--out", str(out))
    assert code != 0 and "no reviewed mention" in err and not (out / "linker").exists()
    code, _, err = run(capsys, "retrain", "--store", store, "--model", str(tmp_path), "--out", str(out))
    assert code != 0 and "no model directory" in err
    code, _, err = run(capsys, "retrain", "--store", store, "--model", str(model), "--out", str(out), "--replay",
                       str(tmp_path / "toyd.obo"))
    assert code != 0 and "--replay" in err and "--ner" in err and not out.exists()
    (out / "linker").mkdir(parents=True)
    code, _, err = run(capsys, "retrain", "--store", store, "--model", str(model), "--out", str(out))
    assert code != 0 and "exists" in err


def test_replayed_documents_are_typed_as_the_detector_was_trained(tmp_path):
    """--replay: as many documents as new texts, a seeded draw apart from the documents the guard
    tags (half of a small corpus), their spans mapped through the detector's types_map and only of
    the types it tags; a missing file is one clear error."""
    import pytest

    from kgnorm.errors import InputError
    from kgnorm.jobs.retrain_replay import Replay, check_documents, replay_check, replay_split, replay_texts

    lines = []
    for i in range(12):
        lines += [f"{i}|t|Breast cancer and aspirin.", f"{i}|a|Nothing else.", f"{i}\t0\t13\tBreast cancer\tSpecificDisease\tD1",
                  f"{i}\t18\t25\taspirin\tChemical\tD2", ""]
    corpus = tmp_path / "train.pubtator"
    corpus.write_text("\n".join(lines), encoding="utf-8")
    replay = Replay.of(corpus)
    got = replay_texts(replay, {"SpecificDisease": "Disease"}, ("Disease",), 4, seed=0)
    assert len(got) == 4 and len({d.doc_id for d in got}) == 4
    assert all([(s.start, s.end, s.type) for s in d.spans] == [(0, 13, "Disease")] for d in got)
    assert [d.doc_id for d in got] == [d.doc_id for d in replay_texts(replay, {"SpecificDisease": "Disease"},
                                                                        ("Disease",), 4, seed=0)]
    assert len(replay_texts(replay, None, ("Disease",), 50, seed=1)) == 6  # fewer than asked: all of them
    check = replay_check(replay, {"SpecificDisease": "Disease"}, ("Disease",), seed=0)
    assert len(check) == 6 and not {d.doc_id for d in check} & {d.doc_id for d in got}
    # the same check documents with their gold concepts, for the confidence refit: typed as the detector
    split = replay_split(replay, {"SpecificDisease": "Disease"}, ("Disease",), seed=0)
    gold = check_documents(replay, split)
    assert sorted(d.doc_id for d, _ in gold) == sorted(d.doc_id for d in check)
    assert all([(a.start, a.end, a.type, a.ids) for a in anns] == [(0, 13, "Disease", ("D1",))] and not d.annotations
               for d, anns in gold)
    with pytest.raises(InputError, match="--replay"):
        Replay.of(tmp_path / "missing.pubtator")


def test_which_reviews_teach_what():
    """Linker pairs: accept and concept, not nil; detector gold: every reviewed mention of a done
    document (nil kept, a type the detector lacks mapped onto its only type)."""
    from kgnorm.jobs.retrain import done_texts, linker_pairs
    from kgnorm.review.export import ReviewedMention

    text = "Breast cancer and ovarian cancer and something"
    ms = [ReviewedMention("p1", 0, 13, "Breast cancer", "Disease", "accept", "TOYD:0002", doc_text=text),
          ReviewedMention("p1", 18, 32, "ovarian cancer", "SpecificDisease", "concept", "TOYD:0003", doc_text=text),
          ReviewedMention("p1", 37, 46, "something", "Disease", "nil", "", doc_text=text)]
    assert sorted((q, sorted(g)) for q, g in linker_pairs(ms)) == [("breast cancer", ["TOYD:0002"]),
                                                                   ("ovarian cancer", ["TOYD:0003"])]
    texts = {"d": ("p1", text), "empty": ("p2", "Nothing here.")}
    docs, dropped = done_texts(texts, [("d", f"m{i}", m) for i, m in enumerate(ms)], ("Disease",))
    assert [d.doc_id for d in docs] == ["p1", "p2"] and docs[1].spans == []  # a done document with no mention
    doc = docs[0]
    assert dropped == 0 and [(s.start, s.end, s.type) for s in doc.spans] == [(0, 13, "Disease"), (18, 32, "Disease"),
                                                                              (37, 46, "Disease")]
    docs, dropped = done_texts(texts, [("d", f"m{i}", m) for i, m in enumerate(ms)], ("Disease", "Chemical"))
    assert dropped == 1 and len(docs[0].spans) == 2


def test_a_retrained_detector_without_held_back_evidence_is_not_kept(tmp_path, tiny_bert_dir):
    """No held-back reviewed span to score it on: OUT/ner is the given detector again, said so."""
    from types import SimpleNamespace

    from test_annotate_formats import _tiny_detector

    from kgnorm.jobs.retrain import RetrainReport, _score_held_back

    ner = _tiny_detector(tiny_bert_dir, tmp_path / "ner", silent=False)
    out = tmp_path / "out"
    _tiny_detector(tiny_bert_dir, out / "ner", silent=True)  # stands for the retrained one: other weights
    assert _detector_bytes(out / "ner") != _detector_bytes(ner)
    report = RetrainReport(out, ner={"documents": 3, "spans": 4, "steps": 10, "seconds": 1.0})
    test = [("held-back-doc", "m1", SimpleNamespace(ids=()))]  # reviewed, in no stored document's text
    _score_held_back("unused://", tmp_path / "biosyn", ner, out, test, set(), report, 1, True)
    assert _detector_bytes(out / "ner") == _detector_bytes(ner)
    assert report.ner["kept_given"] == "no held-back reviewed span to check it on"
    assert report.held_back == {"mentions": 0, "spans": 0, "documents": 0}
    assert any("the retrained detector was not kept" in n for n in report.notes)


def test_too_few_done_documents_leave_the_detector_as_given(tmp_path, tiny_bert_dir):
    """Fewer done documents than --min-done-documents: no fine-tuning, OUT/ner is the given detector,
    said so; the CLI's default is the library's."""
    import inspect

    from test_annotate_formats import _tiny_detector

    from kgnorm.cli.retrain_cmds import retrain_cmd
    from kgnorm.jobs.retrain import MIN_DONE_DOCUMENTS, _detector
    from kgnorm.review.export import ReviewedMention

    ner = _tiny_detector(tiny_bert_dir, tmp_path / "ner", silent=True)
    text = "Breast cancer here."
    texts = {f"d{i}": (f"p{i}", text) for i in range(3)}
    train = [(f"d{i}", f"m{i}", ReviewedMention(f"p{i}", 0, 13, "Breast cancer", "Disease", "accept", "TOYD:0002",
                                                doc_text=text)) for i in range(3)]
    notes: list[str] = []
    info = _detector(ner, texts, train, tmp_path / "out", 0.1, 1, 0, True, notes, min_done=4)
    assert info == {} and _detector_bytes(tmp_path / "out") == _detector_bytes(ner)
    assert any("3 done document(s) outside the held-back fifth, fewer than 4" in n for n in notes)
    cli_default = inspect.signature(retrain_cmd).parameters["min_done_documents"].default
    assert cli_default == MIN_DONE_DOCUMENTS


def test_the_detector_starts_from_the_given_one(tmp_path, tiny_bert_dir):
    """Warm start: the encoder and the head are the trained detector's, not a fresh head."""
    import torch
    from test_annotate_formats import _tiny_detector

    from kgnorm.methods.ner.model import HEAD_FILE
    from kgnorm.methods.ner.train import NerConfig, build_detector

    base = _tiny_detector(tiny_bert_dir, tmp_path / "ner", silent=False)
    head = torch.load(base / HEAD_FILE, weights_only=True)
    det, _ = build_detector(None, ("Disease",), NerConfig(init_from=str(base), max_length=32, stride=8))
    assert torch.equal(det.net.classifier.weight, head["classifier.weight"])
    assert torch.equal(det.net.classifier.bias, head["classifier.bias"])
    fresh, _ = build_detector(tiny_bert_dir, ("Disease",), NerConfig(max_length=32, stride=8))
    assert not torch.equal(fresh.net.classifier.bias, head["classifier.bias"])


def test_the_linker_starts_from_the_base_index_vectors(tmp_path, tiny_bert_dir, capsys):
    """The base's flat index holds its encoder's vectors of its names: the fine-tuning's start
    vectors are those (only new texts encoded), equal to encoding every name again."""
    import numpy as np

    from kgnorm.methods.biosyn.finetune import base_vectors
    from kgnorm.methods.biosyn.model import load_biosyn

    store = f"ladybug://{tmp_path}/graph"
    (tmp_path / "toyd.obo").write_text(OBO, encoding="utf-8")
    assert run(capsys, "ingest", "obo", str(tmp_path / "toyd.obo"), "--ontology", "toyd", "--store", store, "-q")[0] == 0
    assert run(capsys, "train", "biosyn", "--ontology", "toyd", "--out", str(tmp_path / "m"), "--encoder",
               str(tiny_bert_dir), "--store", store, "-q")[0] == 0
    model = load_biosyn(tmp_path / "m", device="cpu")
    names = [*model.dictionary.names, "louis bar"]
    got = base_vectors(model, names, quiet=True)
    np.testing.assert_allclose(got, model.encode(names), rtol=1e-4, atol=1e-4)


def test_the_replayed_documents_judge_the_pair_out_would_ship(tmp_path, tiny_bert_dir, capsys):
    """--replay's last test: both pairs annotate the replayed check documents' raw text as annotate
    would and are scored by document F1 against their gold concepts. A pair that does not lose is
    kept; one whose detector finds nothing gives way to the given detector (the retrained linker
    kept); one whose linker links into another ontology too, to the given pair, which OUT then holds."""
    import shutil

    from test_annotate_formats import _tiny_detector

    from annotate_fixtures import build, write_gold_pubtator
    from kgnorm.jobs.retrain import RetrainReport
    from kgnorm.jobs.retrain_judge import judge_replayed_pair
    from kgnorm.jobs.retrain_replay import Replay, check_documents, replay_split
    from kgnorm.methods.mention_confidence import KEY, linker_identity, store_confidence
    from kgnorm.nil.confidence import FEATURES, MentionConfidence

    store = f"ladybug://{tmp_path}/graph"
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    given = _tiny_detector(tiny_bert_dir, tmp_path / "ner", silent=True)  # the dictionary lever finds the names
    replay = Replay.of(write_gold_pubtator(tmp_path / "corpus.pubtator", copies=2))
    check = check_documents(replay, replay_split(replay, None, ("Disease",), 0))
    assert check and all(anns for _, anns in check)

    def staged(name: str, linker: Path, levers: dict | None, threshold: float | None = None) -> tuple[Path, RetrainReport]:
        out = tmp_path / name
        shutil.copytree(linker, out / "linker")
        _tiny_detector(tiny_bert_dir, out / "ner", silent=True, levers=levers)
        report = RetrainReport(out, linker={"queries": 3, "pairs": 3, "epochs": 1, "seconds": 1.0},
                               ner={"documents": 2, "spans": 4, "steps": 3, "seconds": 1.0})
        if threshold is not None:  # a confidence "refitted" for OUT's pair: annotate drops what falls under it
            store_confidence(out / "ner", MentionConfidence(linker_identity(out / "linker"), (0.0,) * len(FEATURES), 0.0,
                                                            (0.0,) * len(FEATURES), (1.0,) * len(FEATURES), threshold))
            report.calibration = {"threshold": threshold, "fit": {}, "documents": {"held_back": 1, "replayed": len(check)}}
        judge_replayed_pair(store, model, given, out, check, report, 1, True)
        return out, report

    out, report = staged("same", model, None)  # what the given pair does: no loss
    rp = report.replay
    assert rp["kept"] == "retrained pair" and rp["documents"] == len(check) and rp["tolerance"] == 0.005
    assert rp["document_seconds"] > 0
    assert rp["document_before"][2] > 0.5 and rp["document_after"] == rp["document_before"]
    assert "kept_given" not in report.ner and "kept_given" not in report.linker and not report.notes
    assert "OUT holds the retrained pair" in "\n".join(report.summary())

    out, report = staged("strict", model, None, threshold=0.9)  # the pair is the given one, its threshold drops all
    rp = report.replay
    assert rp["document_tried"]["retrained pair"][2] == 0.0 and rp["kept"] == "retrained pair, no refitted threshold"
    assert rp["document_after"] == rp["document_before"] and report.calibration["dropped"]
    assert json.loads((out / "ner" / "kgnorm-model.json").read_text(encoding="utf-8"))[KEY] == []
    assert "kept_given" not in report.ner and "kept_given" not in report.linker
    assert "threshold 0.900 (not kept" in "\n".join(report.summary())

    out, report = staged("deaf", model, {})  # no lever: its detector finds nothing
    rp = report.replay
    assert rp["document_tried"]["retrained pair"][2] == 0.0
    assert rp["kept"] == "given detector, retrained linker" and rp["document_after"] == rp["document_before"]
    assert _detector_bytes(out / "ner") == _detector_bytes(given) and "kept_given" in report.ner
    assert "kept_given" not in report.linker and _weights(out / "linker") == _weights(model)
    assert any("OUT holds the given detector, retrained linker" in n for n in report.notes)

    # a linker over another ontology (the same names, other ids) with the deaf detector: every part loses
    other = tmp_path / "other"
    other.mkdir()
    (other / "toye.obo").write_text(OBO.replace("TOYD:", "TOYE:").replace("toyd", "toye"), encoding="utf-8")
    assert run(capsys, "ingest", "obo", str(other / "toye.obo"), "--ontology", "toye", "--store", store, "-q")[0] == 0
    assert run(capsys, "train", "biosyn", "--ontology", "toye", "--out", str(other / "biosyn"), "--encoder",
               str(tiny_bert_dir), "--store", store, "-q")[0] == 0
    out, report = staged("lost", other / "biosyn", {})
    rp = report.replay
    assert rp["kept"] == "given pair" and rp["document_after"] == rp["document_before"]
    assert rp["document_tried"]["given detector, retrained linker"][2] == 0.0
    assert rp["document_tried"]["retrained detector, given linker"][2] == 0.0
    assert _detector_bytes(out / "ner") == _detector_bytes(given) and report.linker["kept_given"]
    given_meta = json.loads((model / "kgnorm-model.json").read_text(encoding="utf-8"))
    meta = json.loads((out / "linker" / "kgnorm-model.json").read_text(encoding="utf-8"))
    assert meta["ontology"] == "toyd" and meta["created_at"] == given_meta["created_at"]
    assert "(not kept:" in "\n".join(report.summary())
