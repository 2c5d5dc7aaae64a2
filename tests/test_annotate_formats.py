"""annotate's documents: offsets round-trip through PubTator, BioC and JSONL; a 1 MB document;
Workbench.annotate's frame; bad input is one line naming file and line (or document), exit != 0,
nothing written; eval annotate against a hand computation."""
from __future__ import annotations

import json

import pytest

from annotate_fixtures import OBO, write_jsonl
from cli_runner import exit_code, run
from kgnorm.documents.readers import read_documents


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_bert_dir):
    tmp = tmp_path_factory.mktemp("annotate")
    store = f"ladybug://{tmp}/graph"
    (tmp / "toyd.obo").write_text(OBO, encoding="utf-8")
    assert exit_code(["ingest", "obo", str(tmp / "toyd.obo"), "--ontology", "toyd", "--store", store, "-q"]) == 0
    model = tmp / "biosyn"
    assert exit_code(["train", "biosyn", "--ontology", "toyd", "--out", str(model), "--encoder", str(tiny_bert_dir),
                      "--store", store, "-q"]) == 0
    return store, model


def _annotate(capsys, world, src, fmt_in, out, fmt_out, *extra):
    store, model = world
    return run(capsys, "annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(src),
               "--input-format", fmt_in, "--output", str(out), "--output-format", fmt_out, "--store", store,
               "--no-write", "-q", *extra)


def test_offsets_round_trip_every_format(capsys, tmp_path, world):
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a1.txt").write_text("Ataxia telangiectasia\n(AT) in Zürich: «breast cancer»,\r\nAT again.",
                                   encoding="utf-8")
    (folder / "a2.txt").write_text("colorectal cancer and ovarian cancer", encoding="utf-8")
    inputs = [(folder, "text"), (write_jsonl(tmp_path / "in.jsonl"), "jsonl")]
    for src, fmt_in in inputs:
        spans = {}
        for fmt in ("pubtator", "bioc", "jsonl"):
            out = tmp_path / f"out.{fmt}"
            code, _, err = _annotate(capsys, world, src, fmt_in, out, fmt)
            assert code == 0, err
            docs = list(read_documents(out, fmt))
            for d in docs:
                for a in d.annotations:
                    assert d.text[a.start:a.end] == a.text.replace("\r", " ").replace("\n", " ") or \
                        d.text[a.start:a.end] == a.text
            spans[fmt] = sorted((d.doc_id, a.start, a.end, a.ids) for d in docs for a in d.annotations)
        originals = {d.doc_id: d.text for d in read_documents(src, fmt_in)}
        assert spans["pubtator"] == spans["bioc"] == spans["jsonl"] and spans["jsonl"]
        for doc_id, start, end, _ in spans["jsonl"]:  # the offsets index the input's own text
            assert originals[doc_id][start:end].strip()
        # the BioC written is itself an input: read for its text, it gives the same mentions
        code, _, err = _annotate(capsys, world, tmp_path / "out.bioc", "bioc", tmp_path / "again.jsonl", "jsonl")
        assert code == 0, err
        again = sorted((d.doc_id, a.start, a.end, a.ids) for d in read_documents(tmp_path / "again.jsonl", "jsonl")
                       for a in d.annotations)
        assert again == spans["jsonl"]
        if fmt_in == "text":  # the short form after a line break, and the one after CR LF
            assert {("a1", 23, 25), ("a1", 56, 58)} <= {s[:3] for s in spans["jsonl"]}


def test_one_megabyte_document_and_frame(tmp_path, world):
    from kgnorm.api import Workbench

    store, model = world
    filler = "The patients were followed for several years without incident. "
    chunk = filler * 40 + "Breast cancer was seen. "
    text = chunk * (1_000_000 // len(chunk) + 1)
    (tmp_path / "big.txt").write_text(text, encoding="utf-8")
    assert len(text) >= 1_000_000
    frame = Workbench(store).annotate("dictionary:toyd", model, tmp_path / "big.txt", write=False)
    assert len(frame) == text.count("Breast cancer")
    assert all(text[s:e] == t for s, e, t in zip(frame["start"], frame["end"], frame["text"]))
    assert set(frame["doc_id"]) == {"big"}


def _one_line_error(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("case", ["bioc_no_passages", "not_utf8", "jsonl_no_id"])
def test_bad_input_one_line_nothing_written(capsys, tmp_path, world, case):
    store, model = world
    if case == "bioc_no_passages":
        src, fmt, where = tmp_path / "in.xml", "bioc", "record D9"
        src.write_text("<?xml version='1.0' encoding='utf-8'?><collection><source>x</source><date/><key/>"
                       "<document><id>D9</id></document></collection>", encoding="utf-8")
    elif case == "not_utf8":
        src, fmt, where = tmp_path / "in.txt", "text", "in.txt:2"
        src.write_bytes(b"breast cancer\nbad \xff byte\n")
    else:
        src, fmt, where = tmp_path / "in.jsonl", "jsonl", "in.jsonl:2"
        src.write_text(json.dumps({"id": "a", "text": "breast cancer"}) + "\n" + json.dumps({"text": "x"}) + "\n")
    out = tmp_path / "out.pubtator"
    before = run(capsys, "query", "MATCH (n) RETURN count(n) AS n", "--format", "json", "--store", store)[1]
    code, _, err = run(capsys, "annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(src),
                       "--input-format", fmt, "--output", str(out), "--store", store)
    assert code != 0
    assert where in _one_line_error(err)
    assert not out.exists() and not (tmp_path / "out.pubtator.partial").exists()
    assert run(capsys, "query", "MATCH (n) RETURN count(n) AS n", "--format", "json", "--store", store)[1] == before


GOLD = """g1|t|Breast cancer and ovarian cancer.
g1|a|Ataxia telangiectasia (AT) is rare.
g1\t0\t13\tBreast cancer\tSpecificDisease\tTOYD:0002
g1\t18\t32\tovarian cancer\tSpecificDisease\tTOYD:0903
g1\t34\t55\tAtaxia telangiectasia\tSpecificDisease\tTOYD:0001
g1\t57\t59\tAT\tSpecificDisease\tTOYD:0001

g2|t|Colorectal cancer.
g2|a|Nothing else.
g2\t0\t17\tColorectal cancer\tDiseaseClass\tTOYD:0004
g2\t0\t10\tColorectal\tChemical\tTOYD:0004

"""
PRED = """g1|t|Breast cancer and ovarian cancer.
g1|a|Ataxia telangiectasia (AT) is rare.
g1\t0\t13\tBreast cancer\tDisease\tTOYD:0002
g1\t18\t32\tovarian cancer\tDisease\tTOYD:0003
g1\t34\t55\tAtaxia telangiectasia\tDisease\tTOYD:0004
g1\t62\t66\trare\tDisease\t-1

g2|t|Colorectal cancer.
g2|a|Nothing else.
g2\t0\t10\tColorectal\tChemical\tTOYD:0004
g2\t11\t17\tcancer\tDisease\tTOYD:0004

"""


def test_eval_annotate_agrees_with_hand_computation(capsys, tmp_path, world):
    store, model = world
    (tmp_path / "gold.pubtator").write_text(GOLD, encoding="utf-8")
    (tmp_path / "pred.pubtator").write_text(PRED, encoding="utf-8")
    code, out, err = run(capsys, "eval", "annotate", "--gold", str(tmp_path / "gold.pubtator"), "--predictions",
                         str(tmp_path / "pred.pubtator"), "--ontology", "toyd", "--types",
                         "SpecificDisease,DiseaseClass", "--format", "json", "--store", store)
    assert code == 0, err
    got = json.loads(out)
    # By hand. Gold (types kept; the Chemical row dropped): g1 0-13, 18-32, 34-55, 57-59; g2 0-17 -> 5.
    # Predictions (the Chemical row dropped: Chemical is a gold type not selected): g1 0-13, 18-32,
    # 34-55, 62-66; g2 11-17 -> 5. Spans right: g1 0-13, 18-32, 34-55 -> 3: P = R = 3/5.
    # Mentions right: 0-13 (TOYD:0002), 18-32 (TOYD:0003 = gold's alt id TOYD:0903) -> 2: P = R = 2/5.
    # Documents: g1 gold {0002, 0003, 0001}, predicted {0002, 0003, 0004} -> 2 right; g2 gold {0004},
    # predicted {0004} -> 1 right; P = 3/4, R = 3/4.
    for key, p, r in (("ner", 3 / 5, 3 / 5), ("mention", 2 / 5, 2 / 5), ("document", 3 / 4, 3 / 4)):
        assert got[key]["precision"] == pytest.approx(p) and got[key]["recall"] == pytest.approx(r)
        assert got[key]["f1"] == pytest.approx(2 * p * r / (p + r))
    # a gold annotation whose offsets do not match its text: one line naming file and document
    (tmp_path / "bad.pubtator").write_text(GOLD.replace("g1\t18\t32\tovarian", "g1\t17\t31\tovarian"))
    code, out, err = run(capsys, "eval", "annotate", "--gold", str(tmp_path / "bad.pubtator"), "--predictions",
                         str(tmp_path / "pred.pubtator"), "--ontology", "toyd", "--store", store)
    assert code != 0 and not out
    assert "bad.pubtator" in _one_line_error(err) and "record g1" in err and "17-31" in err


class _InterruptedDetector:
    """The dictionary tagger, interrupted (as by Ctrl-C) while the second batch is detected."""

    def __init__(self, inner):
        self.inner, self.types, self.calls = inner, inner.types, 0

    def detect(self, texts):
        self.calls += 1
        if self.calls == 2:
            raise KeyboardInterrupt
        return self.inner.detect(texts)


def test_ctrl_c_leaves_store_and_output_unchanged(tmp_path, world):
    from kgnorm.api import Workbench
    from kgnorm.jobs.detectors import build_detector

    store, model = world
    wb = Workbench(store)
    count = "MATCH (n) RETURN count(n) AS n"
    before = wb.query(count)["n"][0]
    src = write_jsonl(tmp_path / "in.jsonl")
    detector = _InterruptedDetector(build_detector("dictionary:toyd", store)[0])
    with pytest.raises(KeyboardInterrupt):
        wb.annotate(detector, model, src, input_format="jsonl", batch_docs=1, write_batch=1,
                    output=tmp_path / "out.jsonl", output_format="jsonl")
    assert wb.query(count)["n"][0] == before
    assert not list(tmp_path.glob("out.jsonl*"))
    frame = wb.annotate(build_detector("dictionary:toyd", store)[0], model, src, input_format="jsonl", write=False)
    assert {"d1", "d2"} == set(frame["doc_id"]) and frame["concept_uids"].str.startswith("TOYD:").all()


def test_consistency_default_follows_the_detector(tmp_path, world):
    """On by default with the dictionary tagger, off with any other detector (what won on dev):
    a detector that finds one occurrence gets the other only with consistency on."""
    from kgnorm.api import Workbench
    from kgnorm.ner.spans import Span

    class FirstOnly:  # a trained detector's stand-in: finds the first "breast cancer" only
        types = ("Disease",)

        def detect(self, texts):
            out = []
            for t in texts:
                i = t.find("breast cancer")
                out.append([Span(i, i + 13, t[i:i + 13], "Disease")] if i >= 0 else [])
            return out

    store, model = world
    (tmp_path / "d.txt").write_text("Before breast cancer. After breast cancer again.", encoding="utf-8")
    wb = Workbench(store)
    assert len(wb.annotate(FirstOnly(), model, tmp_path / "d.txt", write=False)) == 1
    assert len(wb.annotate(FirstOnly(), model, tmp_path / "d.txt", write=False, consistency=True)) == 2
    assert len(wb.annotate("dictionary:toyd", model, tmp_path / "d.txt", write=False)) == 2


def _tiny_detector(tiny_bert_dir, out, *, silent: bool, levers: dict | None = None):
    """A trained detector's directory from the tiny random BERT (32-token windows, stride 8):
    `silent` zeroes the head (every token O); otherwise the random head tags freely."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from kgnorm.methods.ner.model import NerDetector, NerNet
    from kgnorm.ner.bio import LabelSet

    torch.manual_seed(1)
    net = NerNet(AutoModel.from_pretrained(str(tiny_bert_dir)), 3, crf=False, match_features=False)
    with torch.no_grad():
        if silent:
            net.classifier.weight.zero_()
            net.classifier.bias.copy_(torch.tensor([5.0, 0.0, 0.0]))
        else:
            net.classifier.bias.copy_(torch.tensor([0.0, 0.3, 0.3]))
    det = NerDetector(net, AutoTokenizer.from_pretrained(str(tiny_bert_dir)), LabelSet(("Disease",)), 32, 8)
    det.save(out, {"levers": levers} if levers is not None else {})
    return out


def test_trained_detector_levers_default_and_dictionary_union(tmp_path, world, tiny_bert_dir):
    """A detector loaded for annotate applies the default levers; the dictionary lever reads the
    linker's ontology from the store: a detector that finds nothing still gets the multi-word
    names, and the short form defined next to one (abbreviations lever)."""
    from kgnorm.api import Workbench
    from kgnorm.methods.ner.model import load_ner
    from kgnorm.ner.refine import TRAINED_DEFAULT, SpanRefinements

    store, model = world
    silent = _tiny_detector(tiny_bert_dir, tmp_path / "silent", silent=True)
    assert load_ner(silent).refinements == TRAINED_DEFAULT
    src = write_jsonl(tmp_path / "in.jsonl")
    wb = Workbench(store)
    frame = wb.annotate(str(silent), model, src, input_format="jsonl")
    got = sorted(zip(frame["doc_id"], frame["text"]))
    runs = wb.query("MATCH (r:Run) WHERE r.kind = 'annotate' RETURN r.params_json AS p")["p"]
    assert TRAINED_DEFAULT.label() in {json.loads(p).get("ner_levers") for p in runs}  # the Run records them
    assert got == sorted([("d1", "Ataxia telangiectasia"), ("d1", "breast cancer"), ("d1", "ataxia telangiectasia"),
                          ("d1", "AT"), ("d1", "breast cancer"), ("d1", "AT"), ("d2", "Ovarian cancer"),
                          ("d2", "ovarian cancer"), ("d2", "colorectal cancer")])
    pinned = _tiny_detector(tiny_bert_dir, tmp_path / "pinned", silent=True, levers={"repair": "lenient"})
    assert load_ner(pinned).refinements == SpanRefinements()
    assert len(Workbench(store).annotate(str(pinned), model, src, input_format="jsonl", write=False)) == 0


def test_trained_detector_output_does_not_depend_on_batching(capsys, tmp_path, world, tiny_bert_dir):
    """Windows of many documents are batched together, sorted by length: the PubTator written is
    the same byte for byte whether documents come one at a time or all in one batch."""
    det = _tiny_detector(tiny_bert_dir, tmp_path / "random", silent=False)
    docs = [{"id": f"p{i}", "title": f"Case {i} of breast cancer.",
             "abstract": " ".join(["Renal failure and the heart attack were seen with chronic pain."] * (i % 4 + 1))}
            for i in range(9)]
    src = write_jsonl(tmp_path / "many.jsonl", docs)
    store, model = world
    outs = []
    for size in ("1", "4", "32"):
        out = tmp_path / f"out{size}.pubtator"
        code, _, err = run(capsys, "annotate", "--ner", str(det), "--model", str(model), "--input", str(src),
                           "--input-format", "jsonl", "--output", str(out), "--store", store, "--no-write", "-q",
                           "--batch-size", size)
        assert code == 0, err
        outs.append(out.read_text(encoding="utf-8"))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0].count("\tDisease\t") >= 9  # the random head tags something in every document


def test_bf16_follows_the_declared_cpu_and_the_older_switch(monkeypatch, tmp_path, tiny_bert_dir):
    """By default the detector takes the path the CPU declares (kgnorm.methods.ner.runtime:
    bf16 where it has native bf16, else fp32); KGNORM_NER_BF16=1 still forces bfloat16
    autocast; spans still index their text."""
    from kgnorm.methods.ner.model import load_ner
    from kgnorm.methods.ner.runtime import PRECISION_ENV, resolve_precision

    monkeypatch.delenv(PRECISION_ENV, raising=False)
    monkeypatch.delenv("KGNORM_NER_BF16", raising=False)
    path = _tiny_detector(tiny_bert_dir, tmp_path / "random", silent=False)
    texts = ["Renal failure and the heart attack were seen with chronic pain. " * 3]
    assert load_ner(path).run.precision == resolve_precision("auto")
    monkeypatch.setenv("KGNORM_NER_BF16", "1")
    det = load_ner(path)
    assert det.run.precision == "bf16"
    spans = det.detect(texts)[0]
    assert spans and all(texts[0][s.start:s.end] == s.text for s in spans)


def test_annotate_takes_a_forced_detector_path_and_threads(capsys, monkeypatch, tmp_path, world, tiny_bert_dir):
    """`--ner-precision` and `--threads` reach the detector: the int8 path (ONNX Runtime, export
    cached under KGNORM_CACHE_DIR) annotates with offsets that index the text, like fp32."""
    monkeypatch.setenv("KGNORM_CACHE_DIR", str(tmp_path / "cache"))
    det = _tiny_detector(tiny_bert_dir, tmp_path / "random", silent=False)
    src = write_jsonl(tmp_path / "in.jsonl")
    store, model = world
    texts = {d.doc_id: d.text for d in read_documents(src, "jsonl")}
    for precision in ("fp32", "int8"):
        out = tmp_path / f"{precision}.pubtator"
        code, _, err = run(capsys, "annotate", "--ner", str(det), "--model", str(model), "--input", str(src),
                           "--input-format", "jsonl", "--output", str(out), "--store", store, "--no-write", "-q",
                           "--ner-precision", precision, "--threads", "1")
        assert code == 0, err
        rows = [ln.split("\t") for ln in out.read_text(encoding="utf-8").splitlines() if ln.count("\t") >= 4]
        assert rows and all(texts[r[0]][int(r[1]):int(r[2])] == r[3] for r in rows)
    assert list((tmp_path / "cache").glob("ner-onnx/*/*.onnx"))
