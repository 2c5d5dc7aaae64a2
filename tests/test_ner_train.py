"""`kgnorm train ner`: a tiny random BERT (MiniLM's tokenizer) learns BIO tags from a hand PubTator
fixture; offsets round-trip; windows read a mention across their edge; bad input is refused."""
from __future__ import annotations

import json

import pytest

from kgnorm.errors import InputError, KgnormError
from kgnorm.ner.bio import LabelSet, make_windows, merge_windows, tags_to_spans, token_tags
from kgnorm.ner.corpus import parse_types, read_annotated
from kgnorm.ner.spans import Span
from tests.cli_runner import run

TYPES = "SpecificDisease=Disease,DiseaseClass=Disease"

_ABSTRACTS = [
    ("Breast cancer in women", "Breast cancer is common. Patients with lung cancer and diabetes were seen."),
    ("Renal failure", "Acute renal failure followed heart attack in most patients."),
    ("A study of fever", "Fever and chronic pain were reported with parkinson disease."),
    ("Liver disease", "Chronic liver disease and diabetes are linked to kidney disease."),
]
_MENTIONS = ["breast cancer", "lung cancer", "diabetes", "renal failure", "heart attack", "fever",
             "chronic pain", "parkinson disease", "liver disease", "kidney disease"]


def _pubtator(docs) -> str:
    """PubTator blocks with every occurrence of the mention list annotated (offsets computed)."""
    lines = []
    for i, (title, abstract) in enumerate(docs):
        pmid = str(1000 + i)
        text = f"{title} {abstract}"
        lines += [f"{pmid}|t|{title}", f"{pmid}|a|{abstract}"]
        low = text.lower()
        taken: list[tuple[int, int]] = []
        for m in sorted(_MENTIONS, key=len, reverse=True):
            start = low.find(m)
            while start >= 0:
                end = start + len(m)
                if all(end <= a or start >= b for a, b in taken):
                    taken.append((start, end))
                start = low.find(m, end)
        for k, (s, e) in enumerate(sorted(taken)):
            kind = "SpecificDisease" if k % 2 == 0 else "DiseaseClass"
            lines.append(f"{pmid}\t{s}\t{e}\t{text[s:e]}\t{kind}\tD000{k}")
        lines.append("")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def minilm_tiny_dir(tmp_path_factory):
    """A tiny random BERT (hidden 32, 2 layers) saved with the offline MiniLM's tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from kgnorm.encoders.dense import default_encoder_path

    d = tmp_path_factory.mktemp("tiny-minilm")
    tok = AutoTokenizer.from_pretrained(str(default_encoder_path()), local_files_only=True)
    tok.save_pretrained(str(d))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)
    BertModel(cfg).save_pretrained(str(d))
    return d


@pytest.fixture()
def corpus(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text(_pubtator(_ABSTRACTS * 3), encoding="utf-8")
    dev = tmp_path / "dev.txt"
    dev.write_text(_pubtator(_ABSTRACTS[:2]), encoding="utf-8")
    return train, dev


def _train_args(train, dev, out, encoder, *extra):
    return ("train", "ner", "--train", str(train), "--dev", str(dev), "--out", str(out), "--encoder", str(encoder),
            "--types", TYPES, "--max-length", "32", "--stride", "8", "--batch-size", "4", "--lr", "3e-3",
            "--threads", "1", "--quiet", *extra)


# ---------------------------------------------------------------------- BIO and windows
def test_tags_round_trip_offsets():
    from kgnorm.encoders.dense import default_encoder_path
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(default_encoder_path()), local_files_only=True)
    text = "Patients with  Huntington's disease and BRCA1-associated breast cancers (HD) were seen."
    a, b = text.index("Huntington"), text.index("breast")
    gold = [Span(a, a + 20, text[a:a + 20], "Disease"), Span(b, b + 14, text[b:b + 14], "Disease")]
    labels = LabelSet(("Disease",))
    [w] = make_windows(tok, [text], 64, 8)
    tags = token_tags(w.offsets, gold, labels)
    content = [i for i, (s, e) in enumerate(w.offsets) if s != e]
    spans = tags_to_spans(text, [w.offsets[i] for i in content], [tags[i] for i in content],
                          [1.0] * len(content), labels)
    assert [(s.start, s.end) for s in spans] == [(a, a + 20), (b, b + 14)]
    assert all(text[s.start:s.end] == s.text for s in spans)


def test_tags_to_spans_widens_half_words():
    labels = LabelSet(("Disease",))
    text = "two cancers here"
    offsets = [(0, 3), (4, 10), (10, 11), (12, 16)]
    spans = tags_to_spans(text, offsets, [0, labels.begin("Disease"), 0, 0], [0.9] * 4, labels)
    assert [(s.start, s.end, s.text) for s in spans] == [(4, 11, "cancers")]


def test_windows_read_a_mention_across_an_edge():
    """A mention whose tokens straddle two windows comes out whole from the merged windows."""
    from kgnorm.encoders.dense import default_encoder_path
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(default_encoder_path()), local_files_only=True)
    filler = "the patients were seen again . " * 6
    text = filler + "acute myocardial infarction occurred . " + filler
    start = text.index("acute")
    gold = [Span(start, start + 27, text[start:start + 27], "Disease")]
    labels = LabelSet(("Disease",))
    windows = make_windows(tok, [text], 24, 8)
    assert len(windows) > 3
    cut = [w for w in windows if any(s < start + 27 <= e or s <= start < e for s, e in w.offsets)
           and not (any(s == start for s, _ in w.offsets) and any(e == start + 27 for _, e in w.offsets))]
    assert cut, "the fixture must put the mention across a window edge"
    # each window tags only what it sees: a tag oracle per window, cut at its edges
    tags = [token_tags(w.offsets, gold, labels) for w in windows]
    merged = merge_windows(windows, tags, [[1.0] * len(t) for t in tags], 1)
    offs, t, s = merged[0]
    spans = tags_to_spans(text, offs, t, s, labels)
    assert [(x.start, x.end) for x in spans] == [(start, start + 27)]


# ---------------------------------------------------------------------- reading
def test_types_map_and_unknown_type(corpus):
    train, _ = corpus
    docs = read_annotated(train, parse_types(TYPES))
    assert {s.type for d in docs for s in d.spans} == {"Disease"}
    assert all(d.text[s.start:s.end] == s.text for d in docs for s in d.spans)
    with pytest.raises(InputError, match="Chemical: no document has this type"):
        read_annotated(train, parse_types("Chemical"))


def test_offset_mismatch_names_document(tmp_path, capsys, minilm_tiny_dir):
    bad = tmp_path / "bad.txt"
    bad.write_text("7|t|Renal failure\n7|a|Fever seen.\n7\t0\t5\tFever\tSpecificDisease\tD1\n\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.txt \(record 7\).*does not match"):
        read_annotated(bad, parse_types(None))
    out = tmp_path / "model"
    code, _, err = run(capsys, *_train_args(bad, bad, out, minilm_tiny_dir))
    assert code != 0 and "record 7" in err and "\n" not in err.strip()
    assert not out.exists()


def test_non_utf8_and_unknown_type_refused_before_writing(tmp_path, capsys, corpus, minilm_tiny_dir):
    train, dev = corpus
    raw = tmp_path / "latin1.txt"
    raw.write_bytes("9|t|Caf\u00e9 fever\n9|a|x\n".encode("latin-1"))
    out = tmp_path / "model"
    code, _, err = run(capsys, *_train_args(raw, dev, out, minilm_tiny_dir))
    assert code != 0 and "latin1.txt:1" in err and "UTF-8" in err
    code, _, err = run(capsys, "train", "ner", "--train", str(train), "--out", str(out), "--types", "Chemical",
                       "--encoder", str(minilm_tiny_dir), "--quiet")
    assert code != 0 and "Chemical" in err
    assert not out.exists()


def test_bioc_reader_matches_pubtator(tmp_path, corpus):
    import bioc
    from bioc import biocxml

    train, _ = corpus
    docs = read_annotated(train, parse_types(TYPES))
    coll = bioc.BioCCollection()
    for d in docs:
        doc = bioc.BioCDocument()
        doc.id = d.doc_id
        title_len = d.text.index(" ") if False else len(_ABSTRACTS[int(d.doc_id) % len(_ABSTRACTS)][0])
        for off, body in ((0, d.text[:title_len]), (title_len + 1, d.text[title_len + 1:])):
            p = bioc.BioCPassage()
            p.offset, p.text = off, body
            for s in d.spans:
                if off <= s.start and s.end <= off + len(body):
                    a = bioc.BioCAnnotation()
                    a.text, a.infons["type"] = s.text, "SpecificDisease"
                    a.add_location(bioc.BioCLocation(s.start, s.end - s.start))
                    p.add_annotation(a)
            doc.add_passage(p)
        coll.add_document(doc)
    path = tmp_path / "train.xml"
    with open(path, "w", encoding="utf-8") as fh:
        biocxml.dump(coll, fh)
    back = read_annotated(path, parse_types("SpecificDisease=Disease"))
    assert [(d.text, [(s.start, s.end) for s in d.spans]) for d in back] == \
        [(d.text, [(s.start, s.end) for s in d.spans]) for d in docs]


# ---------------------------------------------------------------------- training
def test_tiny_detector_learns_and_loads(tmp_path, capsys, corpus, minilm_tiny_dir):
    from kgnorm.methods.ner.model import load_ner
    from kgnorm.methods.registry import method

    train, dev = corpus
    out = tmp_path / "model"
    code, _, err = run(capsys, *_train_args(train, dev, out, minilm_tiny_dir, "--epochs", "12", "--no-refit"))
    assert code == 0, err
    meta = json.loads((out / "kgnorm-model.json").read_text())
    assert meta["method"] == "ner" and meta["types"] == ["Disease"] and meta["crf"] is False
    losses = [h["loss"] for h in meta["history"] if h.get("loss") is not None]
    assert losses[-1] < 0.5 * losses[0], losses
    assert meta["metrics"]["dev"]["f1"] > 0.5
    det = method("ner").load()(out)
    assert det is not None and load_ner(out).types == ("Disease",)
    texts = [f"{t} {a}" for t, a in _ABSTRACTS]
    found = det.detect(texts)
    for text, spans in zip(texts, found):
        assert all(text[s.start:s.end] == s.text and s.type == "Disease" for s in spans)
        assert all(a.end <= b.start for a, b in zip(spans, spans[1:]))
    assert any(found)
    assert not (out / "checkpoints").exists()


def test_crf_detector_trains(tmp_path, capsys, corpus, minilm_tiny_dir):
    train, dev = corpus
    out = tmp_path / "crf"
    code, _, err = run(capsys, *_train_args(train, dev, out, minilm_tiny_dir, "--epochs", "2", "--crf"))
    assert code == 0, err
    from kgnorm.methods.ner.model import load_ner

    det = load_ner(out)
    assert det.net.crf is not None
    long_text = " ".join(f"{t} {a}" for t, a in _ABSTRACTS) * 5
    [spans] = det.detect([long_text])
    assert all(long_text[s.start:s.end] == s.text for s in spans)


def test_resume_after_budget_stop(tmp_path, corpus, minilm_tiny_dir):
    """A run stopped by its time budget continues from its checkpoint to the same model as
    an uninterrupted run."""
    import torch

    from kgnorm.methods.registry import method

    recipe = method("ner").run_recipe

    train, dev = corpus
    # a constant rate: a linear one follows the budget each run is given, and these two differ
    common = dict(train=train, dev=dev, types=TYPES, encoder=minilm_tiny_dir, max_length=32, stride=8,
                  batch_size=4, lr=3e-3, epochs=2, threads=1, quiet=True, keep_checkpoints=True, refit=False,
                  lr_schedule="constant")
    full = recipe(tmp_path / "full", max_minutes=None, **common)
    part = tmp_path / "part"
    recipe(part, max_minutes=1e-6, **common)      # the budget stops it after its first step (always taken)
    ck = torch.load(part / "checkpoints" / "last.pt", weights_only=True)
    assert ck["stop_reason"] == "max_seconds" and ck["global_step"] == 1
    recipe(part, max_minutes=None, **common)
    a = torch.load(full / "checkpoints" / "last.pt", weights_only=True)["history"]
    b = torch.load(part / "checkpoints" / "last.pt", weights_only=True)["history"]
    assert b[0].get("partial") and [h["epoch"] for h in b[1:]] == [h["epoch"] for h in a]
    assert [h["loss"] for h in b[1:]] == pytest.approx([h["loss"] for h in a], rel=1e-4)
    assert [h["dev"]["f1"] for h in b[1:]] == pytest.approx([h["dev"]["f1"] for h in a])


def test_refit_on_train_and_dev_for_the_selected_fraction_of_an_epoch(tmp_path, corpus, minilm_tiny_dir):
    """With refit (asked for: off by default for `train ner`): the selection (here stopped by its step budget
    inside the first epoch) picks E; the refit trains E epochs' worth of steps on train + dev documents, no dev."""
    import math

    from kgnorm.methods.refit import SELECTION_DIR
    from kgnorm.methods.registry import method

    train, dev = corpus
    out = tmp_path / "refit"
    method("ner").run_recipe(out, train=train, dev=dev, types=TYPES, encoder=minilm_tiny_dir, max_length=32, stride=8,
                             batch_size=4, lr=3e-3, epochs=2, threads=1, quiet=True, max_minutes=1e-6, refit=True)
    meta = json.loads((out / "kgnorm-model.json").read_text())
    block = meta["refit"]
    e = block["epochs_selected"]
    assert 0 < e < 1 and block["selection"]["stop_reason"] == "max_seconds"  # one step of the first epoch
    assert block["selected_dev_metric"] == "f1" and block["selected_dev_held_out"] is not None
    assert meta["train_documents"] == 3 * len(_ABSTRACTS) + 2 and meta["dev_documents"] == 0
    from kgnorm.methods.ner.model import load_ner
    from kgnorm.ner.corpus import parse_types, read_annotated

    docs = [d.text for f in (train, dev) for d in read_annotated(f, parse_types(TYPES), None)]
    per_epoch = math.ceil(len(load_ner(out).windows(docs)) / 4)  # batches of 4 windows of train + dev
    assert meta["metrics"]["steps"] == max(1, round(e * per_epoch))  # E epochs' worth of refit steps
    assert block["complete"] and abs(block["epochs_trained"] - e) <= 1 / per_epoch
    assert not (out / SELECTION_DIR).exists()


def test_a_refit_budget_that_ends_early_keeps_the_last_step_and_says_so(tmp_path, capsys, corpus, minilm_tiny_dir):
    train, dev = corpus
    out = tmp_path / "short"
    args = _train_args(train, dev, out, minilm_tiny_dir, "--epochs", "1", "--refit", "--refit-minutes", "1e-6")
    code, _, err = run(capsys, *args)  # --quiet: the warning is still shown
    assert code == 0, err
    meta = json.loads((out / "kgnorm-model.json").read_text())
    block = meta["refit"]
    assert block["epochs_selected"] == 1 and not block["complete"] and meta["metrics"]["steps"] == 1
    assert "ended after" in block["note_budget"] and "of 1 epoch(s)" in block["note_budget"]
    assert "warning: the refit budget" in err
    from kgnorm.methods.refit import SELECTION_DIR

    # the dev-selected weights go, its metadata (E) stays: a rerun with more time does not select again
    assert [p.name for p in (out / SELECTION_DIR).iterdir()] == ["kgnorm-model.json"]
    args = _train_args(train, dev, out, minilm_tiny_dir, "--epochs", "1", "--refit", "--refit-minutes", "30")
    code, _, err = run(capsys, *(a for a in args if a != "--quiet"))
    assert code == 0 and "selection finished earlier" in err and "ner epoch 1:" in err
    assert json.loads((out / "kgnorm-model.json").read_text())["refit"]["complete"]
    assert not (out / SELECTION_DIR).exists()


def test_dictionary_features_from_the_store(tmp_path, capsys, minilm_tiny_dir):
    """--ontology: the ontology's names are matched in every window and fed as B/I/O tags."""
    from pathlib import Path

    from kgnorm.methods.ner.model import NAMES_FILE, load_ner

    fix = Path(__file__).parent / "fixtures" / "medic" / "CTD_diseases.tsv"
    store = f"ladybug://{tmp_path / 'graph'}"
    assert run(capsys, "ingest", "medic", str(fix), "--ontology", "medic", "--store", store, "-q")[0] == 0
    docs = [("Toe study", "Fictional syndrome of the toe was seen with fever."),
            ("Second", "Fever and fictional syndrome of the toe again.")]
    f = tmp_path / "train.txt"
    lines = []
    for i, (t, a) in enumerate(docs):
        text = f"{t} {a}"
        lines += [f"{i}|t|{t}", f"{i}|a|{a}"]
        s = text.lower().index("fictional")
        lines += [f"{i}\t{s}\t{s + 29}\t{text[s:s + 29]}\tDisease\tMESH:D900002", ""]
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "model"
    code, _, err = run(capsys, "train", "ner", "--train", str(f), "--dev", str(f), "--out", str(out),
                       "--encoder", str(minilm_tiny_dir), "--ontology", "medic", "--dictionary-features", "--store", store,
                       "--max-length", "32", "--stride", "8", "--epochs", "2", "--threads", "1", "--quiet")
    assert code == 0, err
    det = load_ner(out)
    assert det.net.match is not None and "Fictional Syndrome of the Toe" in (out / NAMES_FILE).read_text()
    text = "Fictional syndrome of the toe again."
    windows = det.windows([text])
    [tags] = det.match_tags([text], windows)
    matched = [windows[0].offsets[i] for i, t in enumerate(tags) if t > 0]
    assert matched[0][0] == 0 and matched[-1][1] == 29 and tags.count(1) == 1
    [spans] = det.detect([text])
    assert all(text[s.start:s.end] == s.text for s in spans)


def test_train_ner_does_not_refit_unless_asked(tmp_path, capsys, corpus, minilm_tiny_dir):
    """`train ner` keeps the dev-selected detector by default (its 30-minute target has no room for a refit)."""
    train, dev = corpus
    out = tmp_path / "plain"
    code, _, err = run(capsys, *_train_args(train, dev, out, minilm_tiny_dir, "--epochs", "1"))
    assert code == 0, err
    meta = json.loads((out / "kgnorm-model.json").read_text())
    assert meta["refit"]["refit"] is False and meta["refit"]["dev_held_out"] is True


def test_layers_keeps_the_first_layers_and_loading_rebuilds_that_shape(tmp_path, capsys, corpus, minilm_tiny_dir):
    """`--layers 1` trains on the encoder's first layer only; the directory records it (config and
    metadata) and loads into the same 1-layer network, tagging as the trained one did."""
    from transformers import AutoModel

    from kgnorm.methods.ner.model import load_ner

    train, dev = corpus
    out = tmp_path / "one-layer"
    code, _, err = run(capsys, *_train_args(train, dev, out, minilm_tiny_dir, "--epochs", "2", "--layers", "1"))
    assert code == 0, err
    meta = json.loads((out / "kgnorm-model.json").read_text())
    assert meta["layers"] == 1 and meta["hyper_parameters"]["layers"] == 1
    det = load_ner(out, precision="fp32")
    assert len(det.net.encoder.encoder.layer) == 1 and det.net.encoder.config.num_hidden_layers == 1
    full = AutoModel.from_pretrained(str(minilm_tiny_dir))
    assert len(full.encoder.layer) == 2
    # the kept layer started from the pretrained first layer: same shapes, weights moved by training
    kept, first = det.net.encoder.encoder.layer[0].state_dict(), full.encoder.layer[0].state_dict()
    assert kept.keys() == first.keys() and all(kept[k].shape == first[k].shape for k in kept)
    texts = [f"{t} {a}" for t, a in _ABSTRACTS]
    assert det.tag(texts) == load_ner(out, precision="fp32").tag(texts)
    bad = tmp_path / "three"
    capsys.readouterr()
    code, _, err = run(capsys, *_train_args(train, dev, bad, minilm_tiny_dir, "--epochs", "1", "--layers", "3"))
    assert code != 0 and len(err.strip().splitlines()) == 1 and "--layers" in err and "2 layers" in err
    assert not (bad / "kgnorm-model.json").exists()


def test_distillation_starts_from_the_teacher_and_learns_its_tags(tmp_path, capsys, corpus, minilm_tiny_dir):
    """`--teacher DIR --layers 1`: the student starts from the teacher's encoder (its first layer),
    trains on gold + soft tags, records its teacher, and loads as a 1-layer detector; the soft loss
    is zero where the student's emissions are the teacher's; a teacher of other types is refused."""
    import torch

    from kgnorm.methods.ner.distill import distill_loss, load_teacher, teacher_emissions
    from kgnorm.methods.ner.model import load_ner

    train, dev = corpus
    teacher = tmp_path / "teacher"
    # runs of a few steps, shorter than the warm-up: a constant rate, so they learn enough to compare
    code, _, err = run(capsys, *_train_args(train, dev, teacher, minilm_tiny_dir, "--epochs", "6", "--no-refit",
                                            "--lr-schedule", "constant"))
    assert code == 0, err
    student = tmp_path / "student"
    code, _, err = run(capsys, "train", "ner", "--train", str(train), "--dev", str(dev), "--out", str(student),
                       "--teacher", str(teacher), "--layers", "1", "--types", TYPES, "--max-length", "32",
                       "--stride", "8", "--batch-size", "4", "--lr", "3e-3", "--epochs", "3", "--threads", "1",
                       "--quiet", "--no-refit", "--lr-schedule", "constant")
    assert code == 0, err
    meta = json.loads((student / "kgnorm-model.json").read_text())
    assert meta["layers"] == 1 and meta["hyper_parameters"]["teacher"] == str(teacher.resolve())
    assert meta["base_encoder"] == str(teacher / "encoder")
    det = load_ner(student, precision="fp32")
    assert len(det.net.encoder.encoder.layer) == 1
    assert meta["metrics"]["dev"]["f1"] > 0.3
    # the loss: the teacher's own emissions as the student's give a KL term of zero
    t = load_teacher(teacher, ["Disease"])
    windows = t.windows([f"{a} {b}" for a, b in _ABSTRACTS[:2]])
    soft = teacher_emissions(t, windows)
    width = max(len(w.input_ids) for w in windows)
    em = torch.zeros(len(windows), width, 3)
    tags = torch.full((len(windows), width), -100)
    for i, s in enumerate(soft):
        em[i, :s.shape[0]] = s
        tags[i, 1:s.shape[0] - 1] = s[1:-1].argmax(-1)
    assert distill_loss(em, soft, tags, 0.0, 2.0).item() == pytest.approx(0.0, abs=1e-5)
    assert distill_loss(torch.zeros_like(em), soft, tags, 0.0, 2.0).item() > 0.0
    with pytest.raises(KgnormError, match="detects Disease, not Chemical"):
        load_teacher(teacher, ["Chemical"])


def test_linear_schedule_ends_at_zero_where_the_run_ends(tmp_path, corpus, minilm_tiny_dir):
    """--lr-schedule linear falls to 0 at the run's end, whichever bound ends it (epochs here, a
    step cap in the refit); constant keeps the rate after the warm-up."""
    import torch

    from kgnorm.methods.registry import method

    recipe = method("ner").run_recipe
    train, dev = corpus
    common = dict(train=train, dev=dev, types=TYPES, encoder=minilm_tiny_dir, max_length=32, stride=8,
                  batch_size=4, lr=3e-3, epochs=2, threads=1, quiet=True, keep_checkpoints=True, refit=False,
                  max_minutes=None)
    rates = {}
    for schedule in ("constant", "linear"):
        out = tmp_path / schedule
        recipe(out, lr_schedule=schedule, **common)
        ck = torch.load(out / "checkpoints" / "last.pt", weights_only=True)
        steps = ck["global_step"]
        rates[schedule] = (ck["optimizer"]["param_groups"][0]["lr"], steps)
    lr, steps = rates["linear"]
    assert steps == rates["constant"][1] > 2
    assert rates["constant"][0] == pytest.approx(3e-3 * min(1.0, (steps + 1) / 50))  # the next step's: warm-up
    assert lr == pytest.approx(0.0, abs=1e-12)  # the last step's rate is applied after it: 1 - steps/steps
    with pytest.raises(KgnormError, match="lr-schedule"):
        recipe(tmp_path / "bad", lr_schedule="cosine", **common)
    with pytest.raises(KgnormError, match="--device"):
        recipe(tmp_path / "bad", device="tpu:9", **common)
    if not torch.cuda.is_available():
        with pytest.raises(KgnormError, match="no CUDA device"):
            recipe(tmp_path / "bad", device="cuda", **common)


@pytest.mark.parametrize("forced, evaluated", [("fp32", "fp32"), ("bf16", "bf16"), ("int8", "fp32")])
def test_dev_evaluations_tag_on_the_path_annotate_takes(tmp_path, monkeypatch, corpus, minilm_tiny_dir,
                                                         forced, evaluated):
    """The dev F1 that selects comes from the precision annotate would run (KGNORM_NER_PRECISION forces
    it here, the CPU flags choose it otherwise); int8 needs a saved model's export, so it evaluates in
    fp32. The model records which, and its recorded F1 is what that path gives on dev."""
    from kgnorm.evaluation.annotate_eval import strict_span_prf
    from kgnorm.methods.ner.model import load_ner
    from kgnorm.methods.registry import method

    monkeypatch.setenv("KGNORM_NER_PRECISION", forced)
    train, dev = corpus
    out = tmp_path / forced
    method("ner").run_recipe(out, train=train, dev=dev, types=TYPES, encoder=minilm_tiny_dir, max_length=32,
                             stride=8, batch_size=4, lr=3e-3, epochs=2, threads=1, quiet=True, refit=False,
                             max_minutes=None)
    meta = json.loads((out / "kgnorm-model.json").read_text())
    assert meta["dev_precision"] == evaluated
    docs = read_annotated(dev, parse_types(TYPES), None, require_types=False)
    det = load_ner(out, precision=evaluated)
    got = strict_span_prf([d.spans for d in docs], det.detect([d.text for d in docs]))
    assert round(got["f1"], 4) == meta["metrics"]["dev"]["f1"]
