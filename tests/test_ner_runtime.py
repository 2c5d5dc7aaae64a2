"""The trained detector's inference paths (kgnorm.methods.ner.runtime), each forced on a tiny random
BERT: float32, bfloat16 autocast, ONNX Runtime float32 and int8 (on this CPU's kernel and on the
AVX2-only kernel, forced under QEMU) give emissions close to float32's and spans
whose offsets round-trip; the int8 export is made once per model content and found again; the
path is chosen from declared facts (option, environment, CPU flags)."""
from __future__ import annotations

import pytest

from kgnorm.errors import KgnormError
from kgnorm.methods.ner.runtime import BF16_ENV, PRECISION_ENV, resolve_precision
from tests.cpu_models import CPU_MODELS, run_onnx

TEXTS = ["Breast cancer and lung cancer were seen in patients with diabetes .",
         "Fever and chronic pain were reported ; renal failure followed heart attack ."]
NAMES = ["breast cancer", "renal failure", "heart attack"]


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("KGNORM_CACHE_DIR", str(d))
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    monkeypatch.delenv(BF16_ENV, raising=False)
    return d


def _saved_detector(tiny_bert_dir, out, match_features: bool = False):
    """A random tiny detector with tags of some confidence, saved as `train ner` saves one."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from kgnorm.methods.ner.model import NerDetector, NerNet
    from kgnorm.ner.bio import LabelSet

    torch.manual_seed(3)
    net = NerNet(AutoModel.from_pretrained(str(tiny_bert_dir)), 3, crf=False, match_features=match_features)
    with torch.no_grad():
        net.classifier.weight.mul_(20.0)
        if match_features:
            net.match.weight.normal_(0.0, 1.0)
    det = NerDetector(net, AutoTokenizer.from_pretrained(str(tiny_bert_dir)), LabelSet(("Disease",)), 32, 8,
                      names=NAMES if match_features else None)
    det.save(out, {})
    return out


def _emissions(det):
    """The padded batch emissions of TEXTS on the detector's path."""
    windows = det.windows(TEXTS)
    batch = det.tensors(windows, det.match_tags(TEXTS, windows), list(range(len(windows))))
    return det.run(batch["input_ids"], batch["attention_mask"], batch["match_tags"]), batch["attention_mask"]


def test_resolve_precision_from_declared_facts(monkeypatch):
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    monkeypatch.delenv(BF16_ENV, raising=False)
    assert resolve_precision("auto", frozenset({"avx2", "amx_bf16"}), onnx=False) == "bf16"
    assert resolve_precision("auto", frozenset({"avx2", "avx512_bf16"}), onnx=False) == "bf16"
    assert resolve_precision("auto", frozenset({"avx2", "avx512f"}), onnx=False) == "fp32"
    assert resolve_precision(None, frozenset(), onnx=False) == "fp32"
    assert resolve_precision("auto", frozenset({"avx2", "avx512_vnni"}), onnx=True) == "onnx"   # no native bf16
    assert resolve_precision("auto", frozenset({"avx512_bf16"}), onnx=True) == "bf16"
    assert resolve_precision("fp32", frozenset({"amx_bf16"})) == "fp32"
    monkeypatch.setenv(BF16_ENV, "1")  # the older opt-in still forces bf16
    assert resolve_precision(None, frozenset()) == "bf16"
    monkeypatch.setenv(PRECISION_ENV, "int8")  # the new variable wins over it; the option over both
    assert resolve_precision(None, frozenset()) == "int8"
    assert resolve_precision("FP32", frozenset()) == "fp32"
    with pytest.raises(KgnormError, match="unknown detector precision 'fp16'"):
        resolve_precision("fp16")


def _close_to(got, ref, mask, tol):
    """`got` agrees with the float32 emissions `ref` where `mask` is on: max error under `tol` of
    the largest emission, and the same best tag for 80 % of the tokens."""
    on = mask.bool()
    err = (got[on] - ref[on]).abs().max().item()
    assert err < tol * ref[on].abs().max().item(), err
    assert (got[on].argmax(-1) == ref[on].argmax(-1)).float().mean() > 0.8


@pytest.mark.parametrize("match_features", [False, True])
def test_each_path_forced_agrees_with_float32(tmp_path, cache, tiny_bert_dir, match_features):
    import torch

    from kgnorm.methods.ner.model import load_ner

    model = _saved_detector(tiny_bert_dir, tmp_path / "ner", match_features)
    ref_det = load_ner(model, precision="fp32")
    ref, mask = _emissions(ref_det)
    assert ref_det.run.precision == "fp32" and ref.abs().max() > 1.0   # tags with some confidence
    for precision, tol in (("bf16", 0.15), ("onnx", 1e-4), ("int8", 0.25)):
        det = load_ner(model, precision=precision, threads=1)
        assert det.run.precision == precision
        got, _ = _emissions(det)
        assert got.dtype == torch.float32 and got.shape == ref.shape
        _close_to(got, ref, mask, tol)
        for text, spans in zip(TEXTS, det.detect(TEXTS)):
            assert all(text[s.start:s.end] == s.text for s in spans)


@pytest.mark.parametrize("kernel", sorted(CPU_MODELS))
def test_int8_same_on_every_kernel(tmp_path, cache, tiny_bert_dir, kernel):
    """The int8 export run by ONNX Runtime's kernel for this CPU and, forced under QEMU, by the
    AVX2-only kernel (u8s8 pairs summed in 16 bits, where full-range weights saturated: error 6.1 of
    16.9 against 0.3 on VNNI): both agree with float32 and give the same emissions, because the
    weights are quantized in 7 bits."""
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper

    from kgnorm.methods.ner.model import load_ner
    from kgnorm.methods.ner.runtime import int8_export

    model = _saved_detector(tiny_bert_dir, tmp_path / "ner", match_features=True)
    det = load_ner(model, precision="fp32")
    ref, mask = _emissions(det)
    path = int8_export(det.run.net, model)
    weights = [numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert weights and max(int(np.abs(w.astype(np.int32)).max()) for w in weights) <= 64
    windows = det.windows(TEXTS)
    batch = det.tensors(windows, det.match_tags(TEXTS, windows), list(range(len(windows))))
    feed = {k: batch[k].numpy() for k in ("input_ids", "attention_mask", "match_tags")}
    got = run_onnx(path, feed, kernel, tmp_path)
    _close_to(torch.from_numpy(got).float(), ref, mask, 0.05)
    here = load_ner(model, precision="int8", threads=1)   # the product's own session, on this CPU
    assert np.array_equal(here.run(batch["input_ids"], batch["attention_mask"], batch["match_tags"]).numpy(), got)


@pytest.mark.parametrize("precision, pattern", [("onnx", "emissions.fp32.onnx"), ("int8", "emissions.int8*.onnx")])
def test_onnx_exports_cached_by_model_content(tmp_path, cache, tiny_bert_dir, monkeypatch, precision, pattern):
    import torch

    from kgnorm.methods.ner.model import load_ner
    from kgnorm.methods.ner.runtime import model_digest

    model = _saved_detector(tiny_bert_dir, tmp_path / "ner")
    load_ner(model, precision=precision)
    [export] = list(cache.glob(f"ner-onnx/*/{pattern}"))
    assert export.parent.name == model_digest(model)
    stamp = export.stat().st_mtime_ns

    def no_export(*a, **k):
        raise AssertionError("re-exported an unchanged model")

    monkeypatch.setattr(torch.onnx, "export", no_export)
    again = load_ner(model, precision=precision)   # the cached export, not a new one
    assert export.stat().st_mtime_ns == stamp and again.detect(TEXTS) is not None
    head = model / "head.pt"
    head.write_bytes(head.read_bytes() + b"\0")   # changed content: a new digest, a new export
    with pytest.raises(AssertionError, match="re-exported"):
        load_ner(model, precision=precision)


def test_annotate_refuses_an_unknown_precision_in_one_line(tmp_path, cache, capsys, tiny_bert_dir):
    from tests.cli_runner import run

    model = _saved_detector(tiny_bert_dir, tmp_path / "ner")
    src = tmp_path / "doc.txt"
    src.write_text(TEXTS[0], encoding="utf-8")
    capsys.readouterr()   # what saving the fixture printed
    code, _, err = run(capsys, "annotate", "--ner", str(model), "--model", str(tmp_path / "nolinker"),
                       "--input", str(src), "--no-write", "--ner-precision", "fp16", "--quiet")
    assert code != 0 and "unknown detector precision 'fp16'" in err and "\n" not in err.strip()
