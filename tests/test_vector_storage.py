"""Name vectors stored as float32, float16 or 8 bits (kgnorm.linking.vector_storage): each storage
forced, saved, mapped back and searched exactly over its stored vectors across name blocks; the
choice by size recorded in index.json and the model's meta; an index.json written before the
choice existed loads as it was; a BioSyn model saved with fp16 or 8-bit vectors links the same
top-1 names as the float32 one."""
from __future__ import annotations

import json

import numpy as np
import pytest

from kgnorm.errors import KgnormError
from kgnorm.linking import dense_topk
from kgnorm.linking.name_index import NameIndex
from kgnorm.linking.vector_storage import FP16_MAX_BYTES, FP32_MAX_BYTES, STORAGES, codes_view, storage_for

pytest.importorskip("onnxruntime")


def _vectors(n: int = 900, dim: int = 24, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Names in clusters (as sentence embeddings are) and queries near some of them."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(30, dim))
    x = (centres[rng.integers(0, 30, n)] + 0.3 * rng.normal(size=(n, dim))).astype(np.float32)
    q = (x[rng.integers(0, n, 60)] + 0.05 * rng.normal(size=(60, dim))).astype(np.float32)
    return x, q


def test_auto_chooses_by_the_size_of_the_float32_vectors():
    dim = 384
    assert storage_for(FP32_MAX_BYTES // (4 * dim), dim) == "fp32"
    assert storage_for(FP32_MAX_BYTES // (4 * dim) + 1, dim) == "fp16"
    assert storage_for(FP16_MAX_BYTES // (4 * dim), dim) == "fp16"
    assert storage_for(FP16_MAX_BYTES // (4 * dim) + 1, dim) == "sq8"
    assert storage_for(10**9, dim, "fp32") == "fp32"  # a forced choice stands
    with pytest.raises(KgnormError, match="unknown vector storage"):
        storage_for(10, dim, "pq")
    with pytest.raises(KgnormError, match="unknown vector storage"):
        NameIndex(8, storage="int4")
    x, _ = _vectors(300, 8)
    assert NameIndex.build(x, storage="auto").storage == "fp32"
    assert NameIndex.build(x).storage == "fp32"  # build's own default: exact (the trainer's indexes)


@pytest.mark.parametrize("storage", STORAGES)
def test_each_storage_round_trips_mapped_and_searches_its_stored_vectors_exactly(storage, tmp_path, monkeypatch):
    x, q = _vectors()
    built = NameIndex.build(x, storage=storage, use_gpu=False)
    assert built.storage == storage and built.fp16 == (storage == "fp16")
    built.save(tmp_path / "ix")
    assert json.loads((tmp_path / "ix" / "index.json").read_text())["storage"] == storage
    index = NameIndex.load(tmp_path / "ix", use_gpu=False)
    assert index.mapped and index.storage == storage
    stored = index.reconstruct(np.arange(len(x)))
    np.testing.assert_array_equal(stored, built.reconstruct(np.arange(len(x))))  # the same codes after the file
    if storage != "fp32":
        assert codes_view(index.index).nbytes == len(x) * x.shape[1] * (2 if storage == "fp16" else 1)
    tol = {"fp32": 0.0, "fp16": 1e-2, "sq8": 5e-2}[storage]
    assert np.abs(stored - x).max() <= tol * np.abs(x).max() + 1e-6
    monkeypatch.setattr(dense_topk, "NAME_BLOCK", 128)  # uneven blocks, k larger than one of them
    for engine in ("onnx", "torch"):
        index.engine, index._ort_flat = engine, None
        monkeypatch.setenv("KGNORM_DENSE_PRECISION", "fp32")
        s, i = index.search(q, 150)
        exact = q @ stored.T  # the scores of the stored vectors, best first, ties by row
        want = np.lexsort((np.broadcast_to(np.arange(len(x)), exact.shape), -exact), axis=-1)[:, :150]
        assert np.array_equal(i[:, :5], want[:, :5]), engine
        np.testing.assert_allclose(s, np.take_along_axis(exact, i, 1), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(s, np.take_along_axis(exact, want, 1), rtol=1e-4, atol=1e-4)


def test_an_index_json_from_before_the_storage_field_loads_as_it_was(tmp_path):
    x, q = _vectors(200, 8)
    for fp16 in (False, True):
        d = tmp_path / f"old{fp16}"
        NameIndex.build(x, fp16=fp16, use_gpu=False).save(d)
        meta = json.loads((d / "index.json").read_text())
        meta.pop("storage")  # what kgnorm wrote before
        (d / "index.json").write_text(json.dumps(meta))
        old = NameIndex.load(d, use_gpu=False)
        assert old.storage == ("fp16" if fp16 else "fp32") and old.fp16 == fp16 and old.mapped
        assert old.search(q, 3)[1].shape == (len(q), 3)


def test_an_index_json_that_names_another_storage_is_one_line(tmp_path):
    x, _ = _vectors(200, 8)
    NameIndex.build(x, storage="sq8", use_gpu=False).save(tmp_path / "ix")
    meta = json.loads((tmp_path / "ix" / "index.json").read_text())
    (tmp_path / "ix" / "index.json").write_text(json.dumps({**meta, "storage": "fp16", "fp16": False}))
    with pytest.raises(KgnormError, match="says fp16 vectors"):
        NameIndex.load(tmp_path / "ix", use_gpu=False)
    (tmp_path / "ix" / "index.json").write_text(json.dumps({**meta, "storage": "int4"}))
    with pytest.raises(KgnormError, match="unknown vector storage"):
        NameIndex.load(tmp_path / "ix", use_gpu=False)


@pytest.mark.parametrize("storage", ["fp16", "sq8"])
def test_a_biosyn_model_with_smaller_vectors_links_the_float32_top_1(tiny_bert_dir, tmp_path, monkeypatch, storage):
    from test_onnx_query import ENTRIES, MENTIONS

    from kgnorm.encoders.dense import DenseEncoder
    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.methods.biosyn.model import BioSynModel
    from kgnorm.methods.biosyn.retrieval import BioSynLinker
    from kgnorm.methods.model_dir import read_model_meta

    monkeypatch.setenv("KGNORM_CACHE_DIR", str(tmp_path / "cache"))
    encoder = DenseEncoder(tiny_bert_dir, pooling="mean", max_length=12, device="cpu")
    links = {}
    for s in ("fp32", storage):
        model = BioSynModel(encoder, NameDictionary.from_entries(ENTRIES), k_sparse=5, k_dense=5)
        model.index_storage = s
        model.save(tmp_path / s)
        meta = read_model_meta(tmp_path / s)
        assert meta["index"]["storage"] == s and meta["index"]["fp16"] == (s == "fp16")
        linker = BioSynLinker.load(tmp_path / s)
        assert linker.index.storage == s and linker.index.mapped
        assert linker._stored_rows() is not None  # a name as query takes its stored vector on any flat storage
        links[s] = linker.link(MENTIONS + [n for n, _ in ENTRIES], top_k=3)
    assert [r[0].name_idx for r in links[storage]] == [r[0].name_idx for r in links["fp32"]]
    for got, want in zip(links[storage], links["fp32"]):
        assert abs(got[0].score - want[0].score) < 0.05 * max(1.0, abs(want[0].score))
