"""The onnx query engine's int8 path (kgnorm.encoders.int8_query), forced on a tiny random BERT:
vectors close to fp32's on this CPU's int8 kernel and on the AVX2-only kernel (forced under QEMU,
tests/cpu_models.py), independent of the batch (activations quantized per token), weights in two
7-bit passes; the quantized graph cached per model content; the path chosen from declared CPU flags;
and `link` on it writing the same TSV whatever the batch."""
from __future__ import annotations

import io
import random

import numpy as np
import pytest

from kgnorm.encoders.fixed_shape import encode_fixed_shape
from kgnorm.errors import KgnormError
from kgnorm.linking.cpu_features import (QUERY_ENGINE_ENV, QUERY_PRECISION_ENV, int8_native, query_engine,
                                         query_path)
from tests.cpu_models import CPU_MODELS, run_onnx

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")

WORDS = ["heart", "attack", "renal", "kidney", "failure", "acute", "pd", "cancer", "breast", "lung", "fever",
         "type", "2", "diabetes", "toe", "pain", "hypertension", "chronic", "of", "x"]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return list(dict.fromkeys(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(n)))


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def encoders(tiny_bert_dir):
    from kgnorm.encoders.onnx_query import OnnxQueryEncoder

    return {p: OnnxQueryEncoder.for_encoder_dir(tiny_bert_dir, "mean", 12, False, precision=p) for p in ("fp32", "int8")}


def test_int8_vectors_are_close_to_fp32_and_do_not_depend_on_the_batch(encoders):
    texts = _texts(3, 60)
    ref = encode_fixed_shape(encoders["fp32"], texts, 4)
    got = encode_fixed_shape(encoders["int8"], texts, 4)
    assert encoders["int8"].precision == "int8" and got.dtype == np.float32 and got.shape == ref.shape
    assert not np.array_equal(got, ref)  # the int8 graph ran
    assert _cos(got, ref).min() > 0.99
    alone = np.stack([encode_fixed_shape(encoders["int8"], [t], 4)[0] for t in texts])
    assert np.array_equal(alone, got)
    assert np.array_equal(encode_fixed_shape(encoders["int8"], texts[::-1], 4), got[::-1])


def test_the_two_weight_passes_hold_the_weight_to_about_14_bits():
    """The second 7-bit pass stores what the first one's rounding lost: each column comes back within
    half a step of the second pass, about 64 times closer than one pass alone."""
    from kgnorm.encoders.int8_query import WEIGHT_MAX, _weight_passes

    rng = np.random.default_rng(0)
    w = (rng.standard_t(3, size=(48, 20)) * rng.uniform(0.01, 1.0, size=20)).astype(np.float32)
    ints, scales = _weight_passes(w)
    assert ints.dtype == np.int8 and ints.shape == (48, 40) and int(np.abs(ints.astype(np.int32)).max()) <= WEIGHT_MAX
    first = ints[:, :20] * scales[:20]
    both = first + ints[:, 20:] * scales[20:]
    step = np.abs(w).max(axis=0) / WEIGHT_MAX
    assert (np.abs(w - first).max(axis=0) <= step / 2 + 1e-7).all()
    assert (np.abs(w - both).max(axis=0) <= step / WEIGHT_MAX / 4 + 1e-7).all()
    assert np.abs(w - both).max() < np.abs(w - first).max() / 30


@pytest.mark.parametrize("kernel", sorted(CPU_MODELS))
def test_int8_agrees_with_fp32_on_every_kernel(encoders, tmp_path, kernel):
    """The quantized graph run by ONNX Runtime's int8 kernel for this CPU and, forced under QEMU, by
    the AVX2-only kernel (u8 x s8 pairs summed in 16 bits: 7-bit weights cannot saturate them)."""
    import onnx
    from onnx import numpy_helper

    from kgnorm.encoders.onnx_query import GRAPH_FILES

    int8 = encoders["int8"]
    path = int8.folder / GRAPH_FILES["int8"]
    graph = onnx.load(str(path)).graph
    assert sum(n.op_type == "MatMulInteger" for n in graph.node) == 2 * 6  # 2 layers x (q, k, v, out, 2 ffn)
    weights = [numpy_helper.to_array(t) for t in graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert weights and max(int(np.abs(w.astype(np.int32)).max()) for w in weights) <= 64
    texts = [t for t in _texts(4, 80) if len(int8.token_ids([t])[0]) == 6][:5]
    ids = np.asarray(int8.token_ids(texts), dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "token_type_ids" in int8.inputs:
        feed["token_type_ids"] = np.zeros_like(ids)
    ref = encoders["fp32"].call(ids.tolist())
    got = run_onnx(path, feed, kernel, tmp_path)
    assert _cos(got, ref).min() > 0.99
    np.testing.assert_allclose(got, int8.call(ids.tolist()), atol=1e-4)  # as this CPU's session gives


def test_the_int8_graph_is_cached_per_model_content(tiny_bert_dir, tmp_path, monkeypatch):
    import json
    import shutil

    import kgnorm.encoders.int8_query as iq
    from kgnorm.encoders.onnx_query import GRAPH_FILES, query_export

    monkeypatch.setenv("KGNORM_CACHE_DIR", str(tmp_path / "cache"))
    made = []
    real = iq.quantize_query_graph
    monkeypatch.setattr(iq, "quantize_query_graph", lambda src, dst: made.append(dst) or real(src, dst))
    first = query_export(tiny_bert_dir, "mean", False, "int8")
    assert first == query_export(tiny_bert_dir, "mean", False)  # beside the fp32 export it was made from
    assert (first / GRAPH_FILES["int8"]).exists() and iq.INT8_SCHEME in GRAPH_FILES["int8"]
    import onnx

    bare = onnx.load(str(first / GRAPH_FILES["int8"]), load_external_data=False)  # tensors: mapped by ONNX Runtime
    big = [t for t in bare.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    assert big and not any(len(t.raw_data) > 1024 for t in bare.graph.initializer)
    assert (first / iq.external_data_file(GRAPH_FILES["int8"])).stat().st_size > 1024 * len(big) // 2
    stamp = (first / GRAPH_FILES["int8"]).stat().st_mtime_ns
    assert query_export(tiny_bert_dir, "mean", False, "int8") == first and len(made) == 1
    assert (first / GRAPH_FILES["int8"]).stat().st_mtime_ns == stamp
    other = shutil.copytree(tiny_bert_dir, tmp_path / "edited")
    cfg = json.loads((other / "config.json").read_text())
    cfg["layer_norm_eps"] = 1e-6  # another model: another quantized graph
    (other / "config.json").write_text(json.dumps(cfg))
    assert query_export(other, "mean", False, "int8") != first and len(made) == 2
    assert not any(p.name.startswith("tmp") for p in first.iterdir())
    with pytest.raises(KgnormError, match="fp32 or int8"):
        query_export(tiny_bert_dir, "mean", False, "int4")


def test_the_int8_path_is_chosen_from_declared_cpu_flags(monkeypatch):
    import kgnorm.linking.cpu_features as cf

    for name in (QUERY_ENGINE_ENV, QUERY_PRECISION_ENV, "KGNORM_QUERY_ROWS"):
        monkeypatch.delenv(name, raising=False)
    vnni, avx2 = frozenset({"avx2", "avx512_vnni"}), frozenset({"avx2", "fma"})
    assert int8_native(vnni) and int8_native(frozenset({"avx_vnni"})) and int8_native(frozenset({"amx_int8"}))
    assert not int8_native(avx2) and not int8_native(frozenset())
    assert cf.AUTO_INT8  # adopted: dev Acc@1 within 0.003 of fp32 queries (benchmarks/LOG.md, issue 51)
    assert query_path(engine="onnx", flags=vnni)[0] == "int8" and query_path(engine="onnx", flags=avx2)[0] == "fp32"
    assert query_path("fp32", flags=vnni, engine="onnx")[0] == "fp32"  # forced: fp32 on a VNNI CPU
    assert query_path("int8", flags=avx2, engine="onnx")[0] == "int8"  # forced: int8 on an AVX2-only CPU
    for adopted in (True, False):
        monkeypatch.setattr(cf, "AUTO_INT8", adopted)
        assert query_path(engine="onnx", flags=vnni)[0] == ("int8" if adopted else "fp32")
        assert query_path(engine="onnx", flags=avx2)[0] == "fp32"  # no int8 dot products: fp32
        assert query_path(engine="torch", flags=vnni)[0] == "fp32"
    monkeypatch.setenv(QUERY_PRECISION_ENV, "int8")  # asked for by name: honoured on any CPU
    assert query_path(engine="onnx", flags=avx2) == ("int8", 32)
    assert query_path(engine="torch", flags=vnni)[0] == "fp32"  # the trainer's torch model
    assert query_engine() == "onnx"
    monkeypatch.setattr(cf, "onnx_runtime_installed", lambda: False)
    assert query_engine() == "onnx"  # int8 has one engine (its error names the missing package)
    monkeypatch.setenv(QUERY_ENGINE_ENV, "torch")
    with pytest.raises(KgnormError, match="onnx query engine"):
        query_engine()
    monkeypatch.setenv(QUERY_PRECISION_ENV, "fp32")
    assert query_path("auto", flags=avx2, engine="onnx")[0] == "fp32"
    with pytest.raises(KgnormError, match="bf16"):
        query_path("bf16", engine="onnx")


def test_link_on_the_int8_path_ranks_like_fp32_and_ignores_the_batch(tiny_bert_dir, tmp_path, monkeypatch):
    from kgnorm.encoders.dense import DenseEncoder
    from kgnorm.jobs.link import link_mentions
    from kgnorm.linking import linker
    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.methods.biosyn.model import BioSynModel
    from kgnorm.methods.biosyn.retrieval import BioSynLinker

    names = _texts(5, 40)
    entries = [(n, f"MESH:D{i // 2}") for i, n in enumerate(names)]
    encoder = DenseEncoder(tiny_bert_dir, pooling="mean", max_length=12, device="cpu")
    model_dir = BioSynModel(encoder, NameDictionary.from_entries(entries), k_sparse=5, k_dense=5).save(tmp_path / "m")
    mentions = [t for t in _texts(6, 40) if t not in names][:20]
    monkeypatch.setenv(QUERY_ENGINE_ENV, "onnx")
    monkeypatch.setenv("KGNORM_QUERY_ROWS", "4")

    def tsv(batch: int) -> str:
        out = io.StringIO()
        link_mentions(model_dir, mentions, write=False, output=out, progress=False, batch_size=batch)
        return out.getvalue()

    monkeypatch.setenv(QUERY_PRECISION_ENV, "fp32")
    fp32 = [r.split("\t") for r in tsv(1).splitlines()[1:]]
    monkeypatch.setenv(QUERY_PRECISION_ENV, "int8")
    assert BioSynLinker.load(model_dir).encoder.precision == "int8"
    want = tsv(1)
    int8 = [r.split("\t") for r in want.splitlines()[1:]]
    assert len(int8) == len(fp32) and int8 != fp32
    top1 = [r[3] for r in fp32 if r[2] == "1"], [r[3] for r in int8 if r[2] == "1"]
    assert sum(a == b for a, b in zip(*top1)) >= 0.8 * len(top1[0])
    for batch, ahead in ((3, 7), (64, 0)):
        monkeypatch.setattr(linker, "LOOKAHEAD", ahead)
        assert tsv(batch) == want


def test_link_fast_takes_the_int8_path(tiny_bert_dir, tmp_path, monkeypatch, capsys):
    """`link --fast` is KGNORM_QUERY_PRECISION=int8 for the run (the int8 graph is made and run); a
    variable that says otherwise is refused, not overridden."""
    import os

    from cli_runner import run
    from kgnorm.encoders.dense import DenseEncoder
    from kgnorm.encoders.onnx_query import GRAPH_FILES
    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.methods.biosyn.model import BioSynModel

    names = _texts(7, 12)
    encoder = DenseEncoder(tiny_bert_dir, pooling="mean", max_length=12, device="cpu")
    model_dir = BioSynModel(encoder, NameDictionary.from_entries([(n, f"MESH:D{i}") for i, n in enumerate(names)]),
                            k_sparse=3, k_dense=3).save(tmp_path / "m")
    (tmp_path / "in.tsv").write_text("id\ttext\nm1\theart failure\nm2\tacute pain\n", encoding="utf-8")
    monkeypatch.setenv("KGNORM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(QUERY_ENGINE_ENV, "onnx")
    monkeypatch.setenv(QUERY_PRECISION_ENV, "auto")  # restored after the test: --fast sets it in-process
    args = ["link", "--model", str(model_dir), "--input", str(tmp_path / "in.tsv"), "--no-write", "-q"]
    code, out, err = run(capsys, *args, "--fast")
    assert code == 0, err
    assert out.count("\n") == 1 + 2 * 5 and os.environ[QUERY_PRECISION_ENV] == "int8"
    assert list((tmp_path / "cache").rglob(GRAPH_FILES["int8"]))
    monkeypatch.setenv(QUERY_PRECISION_ENV, "fp32")
    code, out, err = run(capsys, *args, "--fast")
    assert code != 0 and "contradicts" in err
    code, out, err = run(capsys, *args, "--fast", "--engine", "ray", "--ray-address", "127.0.0.1:1")
    assert code != 0 and "workers' environment" in err
