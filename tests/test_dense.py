import numpy as np
import pytest

from kgnorm.errors import KgnormError
from kgnorm.encoders.dense import DenseEncoder
from kgnorm.linking.name_index import NameIndex

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXTS = ["heart attack of the left ventricle with acute failure", "pd", "renal failure",
         "a", "chronic kidney disease type 2", "fever", "breast cancer"]


@pytest.fixture(scope="module")
def enc(tiny_bert_dir):
    return DenseEncoder(tiny_bert_dir, pooling="cls", max_length=12, device="cpu")


def test_encode_shapes_and_order(enc):
    v = enc.encode(TEXTS, batch_size=2)
    assert v.shape == (len(TEXTS), enc.dim) == (len(TEXTS), 32)
    assert v.dtype == np.float32
    one_by_one = np.stack([enc.encode([t])[0] for t in TEXTS])
    np.testing.assert_allclose(v, one_by_one, atol=1e-5)
    assert enc.encode([]).shape == (0, 32)
    assert not enc.model.training


def test_pooling_and_normalize(tiny_bert_dir):
    mean = DenseEncoder(tiny_bert_dir, pooling="mean", max_length=12, device="cpu")
    norm = DenseEncoder(tiny_bert_dir, pooling="mean", max_length=12, device="cpu",
                        normalize=True)
    a, b = mean.encode(TEXTS), norm.encode(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(b, a / np.linalg.norm(a, axis=1, keepdims=True), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(mean.encode(TEXTS, normalize=True), axis=1), 1,
                               atol=1e-5)
    with pytest.raises(KgnormError):
        norm.encode(TEXTS, normalize=False)
    with pytest.raises(KgnormError):
        DenseEncoder(tiny_bert_dir, pooling="max")


def test_not_a_model_dir(tmp_path):
    with pytest.raises(KgnormError, match="nowhere"):
        DenseEncoder(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(KgnormError, match="empty"):
        DenseEncoder(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    with pytest.raises(KgnormError, match="bad"):
        DenseEncoder(bad)


def test_save_round_trip(enc, tmp_path):
    enc.save(tmp_path / "encoder")
    assert (tmp_path / "encoder" / "model.safetensors").is_file()
    again = DenseEncoder(tmp_path / "encoder", pooling="cls", max_length=12, device="cpu")
    np.testing.assert_array_equal(enc.encode(TEXTS), again.encode(TEXTS))


def test_flat_cpu_search_matches_faiss_across_name_blocks():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1000, 16)).astype(np.float32)
    q = rng.standard_normal((9, 16)).astype(np.float32)
    idx = NameIndex.build(x, use_gpu=False)
    ref_s, ref_i = idx.index.search(q, 200)  # faiss' own exact search
    for block in (64, 300, 4096):  # k larger than a block, uneven last block, one block
        s, i = idx._search_flat_cpu(q, 200, block=block)
        assert np.array_equal(i, ref_i), block
        np.testing.assert_allclose(s, ref_s, rtol=1e-5, atol=1e-5)


def test_index_exact_and_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 16)).astype(np.float32)
    q = rng.standard_normal((7, 16)).astype(np.float32)
    ref = q @ x.T
    ref_i = np.argsort(-ref, axis=1)[:, :5]
    idx = NameIndex.build(x)
    s, i = idx.search(q, 5)
    assert np.array_equal(i, ref_i)
    np.testing.assert_allclose(s, np.take_along_axis(ref, ref_i, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(idx.reconstruct(i), x[i])
    s2, i2 = idx.search(q, 1000)  # clipped to ntotal
    assert i2.shape == (7, 300)
    idx.save(tmp_path / "ix")
    again = NameIndex.load(tmp_path / "ix")
    assert np.array_equal(again.search(q, 5)[1], i)

    half = NameIndex.build(x, fp16=True)
    hs, hi = half.search(q, 5)
    np.testing.assert_allclose(hs, s, atol=1e-2)
    hnsw = NameIndex.build(x, kind="hnsw")
    assert (hnsw.search(q, 5)[1] == i).mean() > 0.8
    ivf = NameIndex.build(x, kind="ivf", nlist=4, nprobe=4)  # all lists probed: exact
    assert np.array_equal(ivf.search(q, 5)[1], i)
    with pytest.raises(KgnormError):
        NameIndex(16, kind="lsh")
    with pytest.raises(KgnormError):
        idx.search(np.zeros((1, 3), np.float32), 1)


def test_loaded_flat_index_is_mapped_and_add_copies_first(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((300, 16)).astype(np.float32)
    q = rng.standard_normal((4, 16)).astype(np.float32)
    idx = NameIndex.build(x, use_gpu=False)
    idx.save(tmp_path / "ix")
    again = NameIndex.load(tmp_path / "ix", use_gpu=False)
    assert again.mapped and not idx.mapped
    assert np.array_equal(again.search(q, 5)[1], idx.search(q, 5)[1])
    np.testing.assert_array_equal(again.reconstruct(np.array([3, 7])), x[[3, 7]])
    extra = rng.standard_normal((2, 16)).astype(np.float32)
    again.add(extra)  # would abort inside faiss on the mapped storage
    assert not again.mapped and again.ntotal == 302
    np.testing.assert_array_equal(again.reconstruct(np.array([0, 301])), np.stack([x[0], extra[1]]))
    assert NameIndex.load(tmp_path / "ix").ntotal == 300  # the file is unchanged
    half = NameIndex.build(x, fp16=True, use_gpu=False)
    half.save(tmp_path / "half")
    mapped_half = NameIndex.load(tmp_path / "half", use_gpu=False)
    assert mapped_half.mapped and mapped_half.storage == "fp16"  # scalar-quantizer codes are mapped too
    mapped_half.add(extra)
    assert not mapped_half.mapped and mapped_half.ntotal == 302
    assert NameIndex.load(tmp_path / "half").ntotal == 300
