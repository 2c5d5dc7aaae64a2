"""annotate's mention confidence: the regression and threshold (kgnorm.nil.confidence) on hand data;
`kgnorm calibrate` then `kgnorm annotate` with no flag on a tiny detector whose random head tags
junk beside the dictionary lever's right names: mentions under the threshold dropped, every kept
one's confidence written (JSONL, BioC, the Mention node on both stores), calibrate's reported dev
figure equal to `kgnorm eval annotate` of what annotate wrote, a number without a calibration refused."""
from __future__ import annotations

import json
import random

import pytest

from annotate_fixtures import OBO, write_gold_pubtator
from cli_runner import exit_code, run
from kgnorm.documents.readers import read_documents
from kgnorm.nil.confidence import FEATURES, DevMention, MentionConfidence, document_prf, fit_confidence, mention_features
from test_cli_journey import journey_store  # noqa: F401  (a fresh store of each kind)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

LINKER = {"method": "biosyn", "created_at": "2026-01-01T00:00:00+00:00", "ontology": "toyd", "path": "/x"}


class _Hit:
    def __init__(self, score: float) -> None:
        self.score = score


def test_features_of_detected_lever_and_composite_mentions():
    assert mention_features(0.9, "detector", [[_Hit(40.0), _Hit(35.0)]]) == (0.9, 0.0, 40.0, 5.0)
    # a lever's span: its score says nothing; one candidate only: the capped margin
    assert mention_features(1.0, "dictionary", [[_Hit(50.0)]]) == (0.0, 1.0, 50.0, 10.0)
    # a composite: its weakest part
    assert mention_features(0.8, "detector", [[_Hit(50.0), _Hit(20.0)], [_Hit(30.0), _Hit(29.0)]]) == \
        (0.8, 0.0, 30.0, 1.0)
    assert mention_features(0.7, "detector", []) == (0.7, 0.0, 0.0, 0.0)


def _dev(seed: int = 0) -> tuple[list[DevMention], dict[str, frozenset[str]]]:
    """Right links have high span and link scores, wrong ones low (with noise)."""
    rng = random.Random(seed)
    mentions, gold = [], {}
    for d in range(40):
        doc = f"d{d}"
        gold[doc] = frozenset({f"C{d}", f"C{d + 100}"})
        for c in gold[doc]:
            mentions.append(DevMention(doc, (rng.uniform(0.7, 1.0), 0.0, rng.uniform(40, 60), rng.uniform(2, 10)),
                                       frozenset({c})))
        mentions.append(DevMention(doc, (rng.uniform(0.3, 0.8), 0.0, rng.uniform(20, 45), rng.uniform(0, 3)),
                                   frozenset({f"X{d}"})))
    return mentions, gold


def test_fit_drops_the_unsure_and_round_trips():
    mentions, gold = _dev()
    fitted = fit_confidence(mentions, gold, LINKER)
    before, after = fitted.fit["document_before"], fitted.fit["document_after"]
    assert after[2] > before[2] and after[0] > before[0]
    assert 0.0 < fitted.threshold < 1.0
    probs = [fitted.probability(m.features) for m in mentions]
    # the figure it reports is the one its threshold gives
    assert [round(v, 4) for v in document_prf(mentions, gold, lambda i: probs[i] >= fitted.threshold)] == after
    again = MentionConfidence.from_meta(json.loads(json.dumps(fitted.to_meta())))
    assert again == fitted and again.features == FEATURES
    with pytest.raises(ValueError):
        MentionConfidence.from_meta({**fitted.to_meta(), "features": ["span_score"]})


def test_fit_refuses_dev_data_without_wrong_links():
    from kgnorm.errors import KgnormError

    mentions, gold = _dev()
    right = [m for m in mentions if m.concepts <= gold[m.doc_id]]
    with pytest.raises(KgnormError, match="right and wrong"):
        fit_confidence(right, gold, LINKER)


# ---------------------------------------------------------------------- through the CLI
def test_calibrate_then_annotate_drops_junk_and_writes_confidence(journey_store, tmp_path, tiny_bert_dir,  # noqa: F811
                                                                 capsys):
    from test_annotate_formats import _tiny_detector

    from kgnorm.api import Workbench

    store = journey_store
    (tmp_path / "toyd.obo").write_text(OBO, encoding="utf-8")
    assert exit_code(["ingest", "obo", str(tmp_path / "toyd.obo"), "--ontology", "toyd", "--store", store, "-q"]) == 0
    model = tmp_path / "biosyn"
    assert exit_code(["train", "biosyn", "--ontology", "toyd", "--out", str(model), "--encoder", str(tiny_bert_dir),
                      "--store", store, "-q"]) == 0
    ner = _tiny_detector(tiny_bert_dir, tmp_path / "ner", silent=False)
    dev = write_gold_pubtator(tmp_path / "dev.pubtator")

    # before calibrating: a number has nothing to compare with; auto keeps every mention
    capsys.readouterr()
    code, _, err = run(capsys, "annotate", "--ner", str(ner), "--model", str(model), "--input", str(dev),
                       "--input-format", "pubtator", "--no-write", "--output", str(tmp_path / "x.pubtator"),
                       "--min-confidence", "0.5", "--store", store, "-q")
    assert code != 0 and "kgnorm calibrate" in err and len(err.strip().splitlines()) == 1

    def annotate(out, fmt, *extra, write=False):
        code, _, err = run(capsys, "annotate", "--ner", str(ner), "--model", str(model), "--input", str(dev),
                           "--input-format", "pubtator", "--output", str(out), "--output-format", fmt,
                           "--store", store, *(() if write else ("--no-write",)), *extra)
        assert code == 0, err
        return err, {(d.doc_id, a.start, a.end): a for d in read_documents(out, fmt) for a in d.annotations}

    _, everything = annotate(tmp_path / "all.jsonl", "jsonl")
    assert everything and all(a.confidence is None for a in everything.values())

    code, _, err = run(capsys, "calibrate", "--ner", str(ner), "--model", str(model), "--dev", str(dev),
                       "--store", store)
    assert code == 0, err
    meta = json.loads((ner / "kgnorm-model.json").read_text(encoding="utf-8"))
    [entry] = meta["mention_confidence"]
    assert entry["linker"]["created_at"] == json.loads((model / "kgnorm-model.json").read_text())["created_at"]
    fitted = MentionConfidence.from_meta(entry)
    if store.startswith("ladybug://"):  # the Python API fits the same (and replaces the entry of this linker)
        again = Workbench(store).calibrate(ner, model, dev)
        assert again["threshold"] == fitted.threshold and again["document_after"] == fitted.fit["document_after"]
        assert len(json.loads((ner / "kgnorm-model.json").read_text(encoding="utf-8"))["mention_confidence"]) == 1

    log, kept = annotate(tmp_path / "kept.jsonl", "jsonl", write=True)
    dropped = len(everything) - len(kept)
    assert dropped > 0 and f"{dropped:,} mention(s) under the threshold dropped" in log
    assert set(kept) < set(everything)
    assert all(a.confidence is not None and a.confidence >= round(fitted.threshold, 4) - 1e-4 for a in kept.values()), \
        (fitted.threshold, sorted((a.confidence, a.text) for a in kept.values())[:5])
    _, bioc = annotate(tmp_path / "kept.bioc", "bioc")
    assert {k: round(a.confidence, 4) for k, a in bioc.items()} == {k: a.confidence for k, a in kept.items()}
    _, off = annotate(tmp_path / "off.jsonl", "jsonl", "--min-confidence", "off")
    assert set(off) == set(everything) and all(a.confidence is not None for a in off.values())

    # what calibrate reported for dev is what `eval annotate` says of what annotate wrote
    annotate(tmp_path / "kept.pubtator", "pubtator")
    code, out, err = run(capsys, "eval", "annotate", "--gold", str(dev), "--predictions", str(tmp_path / "kept.pubtator"),
                         "--model", str(model), "--format", "json", "--store", store)
    assert code == 0, err
    doc = json.loads(out)["document"]
    assert [round(doc["precision"], 4), round(doc["recall"], 4), round(doc["f1"], 4)] == fitted.fit["document_after"]

    # the store: every annotate mention carries its confidence, as the JSONL wrote it
    rows = Workbench(store).query("MATCH (m:Mention) RETURN m.doc_id AS d, m.start AS s, m.`end` AS e, "
                                  "m.confidence AS c")
    stored = {(r.d, int(r.s), int(r.e)): r.c for r in rows.itertuples()}
    assert set(stored) == set(kept)
    assert all(abs(stored[k] - kept[k].confidence) < 1e-4 for k in kept)
