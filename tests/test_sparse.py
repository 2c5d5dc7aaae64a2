import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from kgnorm.errors import KgnormError
from kgnorm.linking import cpu_features
from kgnorm.linking.cpu_features import bf16_native
from kgnorm.linking.sparse import SparseScorer

NAMES = [
    "heart attack", "myocardial infarction", "renal failure", "kidney failure",
    "acute kidney failure", "chronic renal failure", "parkinson disease", "pd",
    "breast cancer", "breast tumor", "lung cancer", "liver cancer", "fever", "type 2 diabetes",
    "type 1 diabetes", "diabetes", "hypertension", "hypotension", "toe pain", "finger pain",
    "aaa", "aab", "aba", "baa",  # ties
]
QUERIES = ["heart attacks", "kidney failure acute", "parkinsons", "cancer of the breast",
           "diabetes type 2", "aa", "zzz", "###", "", "pain in the toe"]


def brute(names, queries, k):
    vec = TfidfVectorizer(analyzer="char", ngram_range=(1, 2), dtype=np.float32).fit(names)
    S = (vec.transform(queries) @ vec.transform(names).T).toarray().astype(np.float32)
    order = np.argsort(-S, axis=1, kind="stable")[:, :k]  # ties -> lower index
    return np.take_along_axis(S, order, 1), order


@pytest.mark.parametrize("k", [1, 3, 7, len(NAMES)])
@pytest.mark.parametrize("frac", [0.0, 1 / 16, 0.5, 2.0])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_topk_equals_brute_force(k, frac, precision):
    s = SparseScorer(dense_df_fraction=frac, precision=precision).fit(NAMES)
    scores, idx = s.topk(QUERIES, k)
    ref_s, ref_i = brute(NAMES, QUERIES, k)
    assert scores.shape == idx.shape == (len(QUERIES), k)
    np.testing.assert_allclose(scores, ref_s, atol=1e-6)
    # identical ranking except among exactly tied scores (ties broken by lower index)
    for i in range(len(QUERIES)):
        for j in range(k):
            if idx[i, j] != ref_i[i, j]:
                assert abs(scores[i, j] - ref_s[i, j]) < 1e-6
    assert np.all(np.diff(scores, axis=1) <= 1e-7)  # best first


def test_ties_and_zero_rows_are_deterministic():
    s = SparseScorer().fit(NAMES)
    scores, idx = s.topk(["zzz", ""], 4)
    assert np.all(scores == 0)
    assert idx.tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]  # zero-score fill in index order


def test_chunks_and_threads_do_not_change_results():
    rng = np.random.default_rng(0)
    letters = list("abcdefgh ")
    names = sorted({"".join(rng.choice(letters, size=rng.integers(2, 12))).strip() or "a"
                    for _ in range(600)})
    queries = ["".join(rng.choice(letters, size=rng.integers(1, 10))) for _ in range(50)]
    ref = SparseScorer(precision="fp32").fit(names).topk(queries, 10, n_threads=1)
    small = SparseScorer(chunk_budget=2000, precision="bf16").fit(names)  # several chunks
    got = small.topk(queries, 10, n_threads=3)
    np.testing.assert_allclose(got[0], ref[0], atol=1e-6)
    bs, bi = brute(names, queries, 10)
    np.testing.assert_allclose(got[0], bs, atol=1e-6)
    same = got[1] == bi
    assert np.all(same | (np.abs(got[0] - bs) < 1e-6))


def test_transform_matches_sklearn_and_score_pairs():
    s = SparseScorer().fit(NAMES)
    vec = TfidfVectorizer(analyzer="char", ngram_range=(1, 2)).fit(NAMES)
    a = s.transform(QUERIES).toarray()
    b = vec.transform(QUERIES).toarray()
    np.testing.assert_allclose(a, b, atol=1e-6)
    idx = np.array([[0, 5, 7], [3, 3, 1]])
    got = s.score_pairs(QUERIES[:2], idx)
    full = (s.transform(QUERIES[:2]) @ s.names_matrix.T).toarray()
    np.testing.assert_allclose(got, np.take_along_axis(full, idx, 1), atol=1e-6)
    assert s.score_pairs(QUERIES[:1], np.array([[-1]]))[0, 0] == 0


def test_k_larger_than_names_and_empty_queries():
    s = SparseScorer().fit(NAMES[:3])
    sc, ix = s.topk(["heart"], 10)
    assert ix.shape == (1, 3) and sorted(ix[0].tolist()) == [0, 1, 2]
    sc, ix = s.topk([], 5)
    assert sc.shape == (0, 3)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_save_load_round_trip(tmp_path, precision):
    s = SparseScorer(precision=precision).fit(NAMES)
    s.save(tmp_path / "sparse")
    t = SparseScorer.load(tmp_path / "sparse")
    assert t.precision == precision and t._bf16 == s._bf16
    a, b = s.topk(QUERIES, 5), t.topk(QUERIES, 5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])  # same path, same input
    assert not list((tmp_path / "sparse").glob("*.pkl"))


@pytest.mark.parametrize("analyzer", ["char", "word"])
def test_counts_rebuild_the_float_matrix_bit_for_bit(tmp_path, analyzer):
    """The names' matrix kept as counts (kgnorm.linking.sparse_rows) gives the very floats of the
    weighting; a model saved before, as the float matrix names.npz, loads and scores the same."""
    s = SparseScorer(analyzer=analyzer, precision="fp32").fit(NAMES)
    ref = s.transform(NAMES)
    got = s.names_matrix
    assert np.array_equal(got.indptr, ref.indptr) and np.array_equal(got.indices, ref.indices)
    assert got.dtype == np.float32 and np.array_equal(got.data, ref.data)
    rows = np.array([5, 0, 23, 5])
    assert np.array_equal(s._take(rows).toarray(), ref[rows].toarray())
    s.save(tmp_path / "new")
    assert not (tmp_path / "new" / "names.npz").exists()
    new = SparseScorer.load(tmp_path / "new")
    assert isinstance(new._rows.counts, np.memmap)  # memory-mapped, not read into the heap
    old = SparseScorer(analyzer=analyzer, precision="fp32").fit(NAMES)
    old._set_matrix(ref)  # what a model saved as names.npz holds
    old.save(tmp_path / "old")
    assert (tmp_path / "old" / "names.npz").exists()
    old = SparseScorer.load(tmp_path / "old")
    assert old._rows is None
    idx = np.array([[0, 5, 7], [3, 3, -1]])
    for k in (3, len(NAMES)):
        a, b = s.topk(QUERIES, k), old.topk(QUERIES, k)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        assert np.array_equal(new.topk(QUERIES, k)[1], a[1])
    assert np.array_equal(s.score_pairs(QUERIES[:2], idx), old.score_pairs(QUERIES[:2], idx))
    s.set_names(NAMES[::-1])
    assert np.array_equal(s.names_matrix.data, s.transform(NAMES[::-1]).data)


def test_counts_wider_than_a_byte(tmp_path):
    """A count above 255 (a long name repeating a character) is kept whole (uint16)."""
    names = NAMES + ["a" * 300 + " b"]
    s = SparseScorer(precision="fp32").fit(names)
    assert s._rows.counts.dtype == np.uint16
    assert np.array_equal(s.names_matrix.data, s.transform(names).data)
    s.save(tmp_path)
    t = SparseScorer.load(tmp_path)
    assert np.array_equal(t.topk(QUERIES, 3)[1], s.topk(QUERIES, 3)[1])


def test_errors(tmp_path):
    with pytest.raises(KgnormError):
        SparseScorer().topk(["x"], 1)
    with pytest.raises(KgnormError):
        SparseScorer().fit([])
    with pytest.raises(KgnormError):
        SparseScorer.load(tmp_path)
    with pytest.raises(KgnormError):
        SparseScorer().fit(NAMES).topk("heart", 2)


def assert_same_topk(got, ref):
    """Equal up to float32 rounding (BLAS sums in another order for another chunk shape);
    a differing index only between tied scores."""
    np.testing.assert_allclose(got[0], ref[0], atol=1e-6)
    assert np.all((got[1] == ref[1]) | (np.abs(got[0] - ref[0]) < 1e-6))


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_repeated_queries_scored_once_same_result(precision):
    s = SparseScorer(precision=precision).fit(NAMES)
    qs = QUERIES + QUERIES[::-1] + ["heart attacks"] * 3
    got = s.topk(qs, 4)
    assert_same_topk(got, s.topk(s.transform(qs), 4))  # matrix input: no dedupe
    assert_same_topk(got, brute(NAMES, qs, 4))


def test_auto_precision_follows_cpu_flags(monkeypatch):
    monkeypatch.delenv("KGNORM_SPARSE_PRECISION", raising=False)
    assert bf16_native(frozenset({"sse2", "avx512_bf16"}))
    assert bf16_native(frozenset({"amx_bf16"}))
    assert not bf16_native(frozenset({"sse2", "avx2", "avx512f"}))
    assert not bf16_native(frozenset())
    for flags, want in ((frozenset({"avx2"}), False), (frozenset({"amx_bf16", "avx2"}), True)):
        monkeypatch.setattr(cpu_features, "cpu_flags", lambda flags=flags: flags)
        s = SparseScorer(precision="auto").fit(NAMES)
        assert s._bf16 is want
        assert_same_topk(s.topk(QUERIES, 5), brute(NAMES, QUERIES, 5))
    # forced paths ignore the flags
    assert SparseScorer(precision="fp32").fit(NAMES)._bf16 is False
    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: frozenset())
    assert SparseScorer(precision="bf16").fit(NAMES)._bf16 is True


@pytest.mark.parametrize("forced", ["fp32", "bf16"])
def test_auto_precision_forced_by_environment(monkeypatch, forced):
    monkeypatch.setenv("KGNORM_SPARSE_PRECISION", forced)
    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: frozenset({"amx_bf16"}) if forced == "fp32"
                        else frozenset())
    s = SparseScorer().fit(NAMES)
    assert s._bf16 is (forced == "bf16")
    assert_same_topk(s.topk(QUERIES, 5), brute(NAMES, QUERIES, 5))
    monkeypatch.setenv("KGNORM_SPARSE_PRECISION", "fp16")
    with pytest.raises(KgnormError, match="KGNORM_SPARSE_PRECISION"):
        SparseScorer().fit(NAMES)


@pytest.mark.parametrize("ngram_range,lowercase", [((1, 2), True), ((1, 3), True), ((2, 2), True),
                                                   ((1, 2), False)])
def test_char_counts_match_sklearn(ngram_range, lowercase):
    """The written-out char analyzer (no scikit-learn import at link time) counts exactly
    what CountVectorizer(analyzer="char") counts."""
    from sklearn.feature_extraction.text import CountVectorizer

    from kgnorm.linking.sparse import _char_counts

    texts = NAMES + QUERIES + ["Heart  Attack", "tab\there", "a\t\t b\n\nc", "Ünïcode Éé", "x", "  lead",
                               "ends  ", "ΑΒΓ αβγ", "a-b_c.d"]
    cv = CountVectorizer(analyzer="char", ngram_range=ngram_range, lowercase=lowercase,
                         dtype=np.float32).fit(texts[: len(NAMES) + 3])
    vocab = {str(t): int(i) for t, i in cv.vocabulary_.items()}
    got = _char_counts(texts, vocab, ngram_range, lowercase)
    ref = CountVectorizer(analyzer="char", ngram_range=ngram_range, lowercase=lowercase, vocabulary=vocab,
                          dtype=np.float32).transform(texts)
    assert got.shape == ref.shape
    assert (got != ref).nnz == 0
