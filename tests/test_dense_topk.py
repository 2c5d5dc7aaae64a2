"""The bf16 pre-filter of the flat name index (kgnorm.linking.dense_topk) returns the exact top k:
the same rows as a float64 brute force, on unnormalized vectors (BioSyn's raw [CLS] products)."""
from __future__ import annotations

import numpy as np
import pytest

from kgnorm.errors import KgnormError
from kgnorm.linking.dense_topk import DENSE_PRECISION_ENV, Bf16Names, dense_uses_bf16
from kgnorm.linking.name_index import NameIndex


def _exact(xb: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    s = q.astype(np.float64) @ xb.astype(np.float64).T
    return np.lexsort((np.broadcast_to(np.arange(len(xb)), s.shape), -s), axis=-1)[:, :k]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_prefilter_finds_the_exact_top_k(seed):
    rng = np.random.default_rng(seed)
    xb = (rng.standard_normal((3000, 48)) * rng.uniform(0.5, 3, (3000, 1))).astype(np.float32)
    xb[100:140] = xb[7] + rng.standard_normal((40, 48)).astype(np.float32) * 1e-3  # near-ties
    q = rng.standard_normal((300, 48)).astype(np.float32) * 4
    q[:20] = xb[7] * 2  # queries whose top k sits among the near-ties
    for k in (1, 5, 20, 60):
        scores, rows = Bf16Names(xb).topk(q, k)
        want = _exact(xb, q, k)
        exact = np.take_along_axis(q.astype(np.float64) @ xb.astype(np.float64).T, want, 1)
        # the same scores (a row may swap with a tie within float32 rounding of the product)
        assert np.allclose(scores, exact, rtol=1e-5, atol=1e-4)
        assert (rows == want).mean() > 0.99
        assert (np.diff(scores, axis=1) <= 0).all()


def test_a_query_gets_the_same_answer_in_any_batch():
    rng = np.random.default_rng(5)
    xb = rng.standard_normal((2000, 32)).astype(np.float32)
    q = rng.standard_normal((70, 32)).astype(np.float32)
    names = Bf16Names(xb)
    s_all, r_all = names.topk(q, 10)
    for i in (0, 33, 69):
        s_one, r_one = names.topk(q[i:i + 1], 10)
        assert np.array_equal(r_one[0], r_all[i]) and np.array_equal(s_one[0], s_all[i])


def test_the_index_takes_the_path_the_cpu_declares(monkeypatch):
    rng = np.random.default_rng(9)
    xb = rng.standard_normal((500, 16)).astype(np.float32)
    q = rng.standard_normal((40, 16)).astype(np.float32)
    index = NameIndex.build(xb)
    monkeypatch.setenv(DENSE_PRECISION_ENV, "fp32")
    assert not dense_uses_bf16()
    s32, r32 = index.search(q, 8)
    monkeypatch.setenv(DENSE_PRECISION_ENV, "bf16")
    assert dense_uses_bf16()
    s16, r16 = index.search(q, 8)
    assert index._bf16_names is not None
    assert (r16 == r32).mean() > 0.99 and np.allclose(s16, s32, rtol=1e-5, atol=1e-5)
    monkeypatch.setenv(DENSE_PRECISION_ENV, "fp8")
    with pytest.raises(KgnormError, match=DENSE_PRECISION_ENV):
        index.search(q, 8)


def test_the_stored_flat_search_graph_is_the_one_the_onnx_package_builds():
    """OrtFlatSearch runs a stored serialization (no onnx import at link time): it must be the
    graph flat_topk_model() makes, and search exactly."""
    import base64

    import onnx

    from kgnorm.linking.dense_topk import FLAT_TOPK_ONNX, OrtFlatSearch, flat_topk_model

    assert onnx.load_from_string(base64.b64decode(FLAT_TOPK_ONNX)) == flat_topk_model()
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((300, 24)).astype(np.float32)
    q = rng.standard_normal((5, 24)).astype(np.float32)
    scores, rows = OrtFlatSearch(xb).topk(q, 4)
    exact = q @ xb.T
    assert np.array_equal(rows, np.argsort(-exact, axis=1, kind="stable")[:, :4])
    np.testing.assert_allclose(scores, np.take_along_axis(exact, rows, 1), rtol=1e-5)


def test_the_onnx_flat_search_answers_a_query_the_same_in_any_chunk(monkeypatch):
    """CHUNK (queries a Gemm) is a memory choice only: a query's top k and scores are the same
    whether it shares its product with other queries or not."""
    from kgnorm.linking import dense_topk
    from kgnorm.linking.dense_topk import OrtFlatSearch

    rng = np.random.default_rng(11)
    xb = rng.standard_normal((5000, 64)).astype(np.float32)
    q = rng.standard_normal((150, 64)).astype(np.float32)
    search = OrtFlatSearch(xb)
    got = []
    for chunk in (1, 7, 64, 256, 2):  # 1: each query alone
        monkeypatch.setattr(dense_topk, "CHUNK", chunk)
        got.append(search.topk(q, 20))
    for scores, rows in got[1:]:
        assert np.array_equal(scores, got[0][0]) and np.array_equal(rows, got[0][1])
