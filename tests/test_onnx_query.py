"""The onnx query engine (kgnorm.encoders.onnx_query): the same token ids and (to float rounding) the
same vectors as the torch path, batch-independent vectors, an export made once per model content,
a `link` that never imports torch or transformers once the export is cached (BioSyn's and DILBERT's
linkers), and the engine chosen from declared facts."""
from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from kgnorm.encoders.dense import DenseEncoder
from kgnorm.encoders.fixed_shape import encode_fixed_shape
from kgnorm.encoders.onnx_query import OnnxQueryEncoder, query_export
from kgnorm.errors import KgnormError
from kgnorm.jobs.link import link_mentions
from kgnorm.linking.cpu_features import QUERY_ENGINE_ENV, QUERY_PRECISION_ENV, query_engine, query_path
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.methods.biosyn.model import BioSynModel
from conftest import takes_in_random_order

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")

WORDS = ["heart", "attack", "renal", "kidney", "failure", "acute", "pd", "cancer", "breast", "lung", "fever",
         "type", "2", "diabetes", "toe", "pain", "hypertension", "chronic", "of", "x", "Zürich", "naïve", "—"]
ENTRIES = [("heart attack", "MESH:D1"), ("myocardial infarction", "MESH:D1"), ("renal failure", "MESH:D2"),
           ("kidney failure", "MESH:D2"), ("parkinson disease", "MESH:D4"), ("pd", "MESH:D4"),
           ("breast cancer", "MESH:D5"), ("lung cancer", "MESH:D6"), ("fever", "MESH:D8"),
           ("type 2 diabetes", "MESH:D9"), ("hypertension", "MESH:D11"), ("toe pain", "MESH:D13")]
MENTIONS = ["heart attack", "Heart attacks", "renal failure", "pd", "kidney failures", "breast and lung cancer",
            "fever of", "type 2 diabetes", "toe pains", "acute renal failure", "chronic hypertension"]


def _texts(rng: random.Random, n: int, most: int = 5) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, most))) for _ in range(n)]


@pytest.fixture(scope="module")
def encoder(tiny_bert_dir):
    n = torch.get_num_threads()
    yield DenseEncoder(tiny_bert_dir, pooling="mean", max_length=12, device="cpu")
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def onnx_encoder(tiny_bert_dir):
    return OnnxQueryEncoder.for_encoder_dir(tiny_bert_dir, "mean", 12, False)


def test_token_ids_are_the_torch_paths(encoder, onnx_encoder):
    texts = _texts(random.Random(1), 40, most=9) + ["", "HEART  Attack!", "unknownword qqq", "x " * 30]
    want = encoder.tokenizer(texts, max_length=12, truncation=True, padding=False)["input_ids"]
    assert onnx_encoder.token_ids(texts) == want
    assert max(len(ids) for ids in want) == 12  # truncation was exercised


def test_vectors_match_torch_and_do_not_depend_on_the_batch(encoder, onnx_encoder):
    texts = list(dict.fromkeys(_texts(random.Random(2), 30)))
    ref = encode_fixed_shape(encoder, texts, 4, "fp32")
    got = encode_fixed_shape(onnx_encoder, texts, 4)
    assert got.dtype == np.float32 and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=1e-4)
    alone = np.stack([encode_fixed_shape(onnx_encoder, [t], 4)[0] for t in texts])
    assert np.array_equal(alone, got)
    assert np.array_equal(encode_fixed_shape(onnx_encoder, texts[::-1], 4), got[::-1])


def test_the_export_is_made_once_per_model_content(tiny_bert_dir, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("KGNORM_CACHE_DIR", str(tmp_path / "cache"))
    first = query_export(tiny_bert_dir, "cls", False)
    stamp = (first / "query.onnx").stat().st_mtime_ns

    def no_export(*a, **k):
        raise AssertionError("re-exported an unchanged model")

    monkeypatch.setattr(torch.onnx, "export", no_export)
    assert query_export(tiny_bert_dir, "cls", False) == first
    assert (first / "query.onnx").stat().st_mtime_ns == stamp
    monkeypatch.undo()
    monkeypatch.setenv("KGNORM_CACHE_DIR", str(tmp_path / "cache"))
    other = shutil.copytree(tiny_bert_dir, tmp_path / "edited")
    cfg = json.loads((other / "config.json").read_text())
    cfg["layer_norm_eps"] = 1e-6  # another model: another export
    (other / "config.json").write_text(json.dumps(cfg))
    assert query_export(other, "cls", False) != first
    assert query_export(tiny_bert_dir, "mean", False) != first  # the pooling is in the graph
    assert not any(p.name.startswith("tmp") for p in first.iterdir())  # nothing half-written left


# the methods whose `link` runs on the onnx engine: BioSyn, and DILBERT in both its distance spaces
METHODS = ["biosyn", "dilbert-euclidean", "dilbert-cosine"]


def _model_dir(encoder, path, method="biosyn"):
    if method.startswith("dilbert"):  # its link path: kgnorm.methods.dilbert.linker
        from kgnorm.methods.dilbert.model import DilbertModel

        distance = method.partition("-")[2]
        return DilbertModel(encoder, NameDictionary.from_entries(ENTRIES), distance=distance).save(path)
    return BioSynModel(encoder, NameDictionary.from_entries(ENTRIES), k_sparse=5, k_dense=5).save(path)


def _linker(model_dir):
    """The onnx engine's linker of a model directory, and its query vectors of some texts."""
    from kgnorm.methods.biosyn.retrieval import BioSynLinker
    from kgnorm.methods.dilbert.linker import DilbertLinker

    if (model_dir / "sparse").exists():
        linker = BioSynLinker.load(model_dir)
        return linker, linker._query_matrix, linker.index.dim
    linker = DilbertLinker.load(model_dir)
    return linker, linker.encode, linker.dim


def _tsv(model_dir, **kw) -> str:
    out = io.StringIO()
    link_mentions(model_dir, MENTIONS, write=False, output=out, progress=False, **kw)
    return out.getvalue()


@pytest.mark.parametrize("method", METHODS)
def test_both_engines_rank_alike_and_onnx_is_batch_independent(encoder, tmp_path, monkeypatch, method):
    model_dir = _model_dir(encoder, tmp_path / "model", method)
    monkeypatch.setenv(QUERY_PRECISION_ENV, "fp32")
    monkeypatch.setenv("KGNORM_QUERY_ROWS", "4")
    monkeypatch.setenv(QUERY_ENGINE_ENV, "torch")
    torch_rows = [r.split("\t") for r in _tsv(model_dir).splitlines()]
    monkeypatch.setenv(QUERY_ENGINE_ENV, "onnx")
    want = _tsv(model_dir, batch_size=1)
    onnx_rows = [r.split("\t") for r in want.splitlines()]
    assert [r[:4] for r in onnx_rows] == [r[:4] for r in torch_rows]  # same concepts at every rank
    assert all(abs(float(a[4]) - float(b[4])) < 2e-3 for a, b in zip(onnx_rows[1:], torch_rows[1:]))
    from kgnorm.linking import linker

    for batch, ahead in ((3, 7), (64, 0)):
        monkeypatch.setattr(linker, "LOOKAHEAD", ahead)
        assert _tsv(model_dir, batch_size=batch) == want


@pytest.mark.parametrize("method", ["biosyn", "dilbert-euclidean"])
def test_link_with_a_cached_export_imports_neither_torch_nor_transformers(encoder, tmp_path, method):
    model_dir = _model_dir(encoder, tmp_path / "model", method)
    env = {**os.environ, QUERY_ENGINE_ENV: "onnx", "KGNORM_CACHE_DIR": str(tmp_path / "cache")}
    env.pop(QUERY_PRECISION_ENV, None)
    probe = ("import io, sys, json\n"
             "from kgnorm.jobs.link import link_mentions\n"
             "out = io.StringIO()\n"
             f"link_mentions({str(model_dir)!r}, {MENTIONS!r}, write=False, output=out, progress=False)\n"
             "print(json.dumps({'torch': 'torch' in sys.modules, 'transformers': 'transformers' in sys.modules,\n"
             "                  'rows': out.getvalue().count(chr(10))}))\n")
    runs = [json.loads(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                      check=True).stdout.strip().splitlines()[-1]) for _ in range(2)]
    assert runs[0]["torch"]  # the first run made the export (torch and transformers needed)
    assert runs[1] == {"torch": False, "transformers": False, "rows": runs[0]["rows"]}
    assert runs[1]["rows"] > len(MENTIONS)


def test_the_engine_is_chosen_from_declared_facts(monkeypatch):
    import kgnorm.linking.cpu_features as cf

    for name in (QUERY_ENGINE_ENV, QUERY_PRECISION_ENV):
        monkeypatch.delenv(name, raising=False)
    assert query_engine() == "onnx"  # installed here
    assert query_engine("torch") == "torch"
    monkeypatch.setenv(QUERY_PRECISION_ENV, "bf16")  # bf16 asked for by name: a torch path
    assert query_engine() == "torch"
    assert query_engine("onnx") == "onnx"
    with pytest.raises(KgnormError, match="runs auto, fp32 or int8"):
        query_path(engine="onnx")
    monkeypatch.setenv(QUERY_PRECISION_ENV, "auto")
    assert query_path(engine="onnx", flags=frozenset({"amx_bf16"}))[0] == "fp32"
    monkeypatch.setattr(cf, "onnx_runtime_installed", lambda: False)
    assert query_engine() == "torch"
    monkeypatch.setenv(QUERY_ENGINE_ENV, "tensorflow")
    with pytest.raises(KgnormError, match=QUERY_ENGINE_ENV):
        query_engine()


def test_the_torch_free_flat_search_finds_the_torch_candidates():
    from kgnorm.linking.name_index import NameIndex

    rng = np.random.default_rng(0)
    names = rng.normal(size=(700, 16)).astype(np.float32)
    queries = rng.normal(size=(300, 16)).astype(np.float32)
    index = NameIndex.build(names, kind="flat")
    monkey = {"KGNORM_DENSE_PRECISION": "fp32"}
    old = {k: os.environ.get(k) for k in monkey}
    os.environ.update(monkey)
    try:
        want_s, want_i = index.search(queries, 9)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    index.engine = "onnx"
    got_s, got_i = index.search(queries, 9)
    assert got_i.dtype == np.int64 and got_s.dtype == np.float32
    assert np.array_equal(got_i, want_i)
    np.testing.assert_allclose(got_s, want_s, rtol=1e-5, atol=1e-5)


def test_overlapped_calls_give_the_same_bits_in_any_order(onnx_encoder):
    from kgnorm.encoders.fixed_shape import QueryVectors

    rng = random.Random(5)
    texts = list(dict.fromkeys(_texts(rng, 80)))
    want = encode_fixed_shape(onnx_encoder, texts, 4)
    for _ in range(3):
        q = QueryVectors(onnx_encoder, 4, overlap=True)
        assert q.overlap
        q.submit(texts[:40])
        assert q._jobs  # full calls went to the background thread
        takes_in_random_order(q, texts, want, rng, step=11, most=13)
        assert not q.pending and not q.inflight and not q.length


def test_overlap_is_declared_and_leaves_the_tsv_unchanged(encoder, tmp_path, monkeypatch):
    from kgnorm.encoders.fixed_shape import OVERLAP_ENV, default_overlap

    monkeypatch.setenv(OVERLAP_ENV, "maybe")
    with pytest.raises(KgnormError, match=OVERLAP_ENV):
        default_overlap()
    model_dir = _model_dir(encoder, tmp_path / "model")
    monkeypatch.setenv(QUERY_ENGINE_ENV, "onnx")
    monkeypatch.setenv("KGNORM_QUERY_ROWS", "2")
    monkeypatch.setenv(OVERLAP_ENV, "0")
    want = _tsv(model_dir, batch_size=3)
    monkeypatch.setenv(OVERLAP_ENV, "1")
    assert _tsv(model_dir, batch_size=3) == want


@pytest.mark.parametrize("method", METHODS)
def test_a_query_that_is_a_dictionary_name_takes_the_names_stored_vector(encoder, tmp_path, monkeypatch, method):
    model_dir = _model_dir(encoder, tmp_path / "model", method)
    monkeypatch.setenv("KGNORM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KGNORM_QUERY_ROWS", "2")
    names = ["heart attack", "pd", "type 2 diabetes"]
    others = ["kidney failures", "toe pains", "acute renal failure"]
    queries = [names[0], others[0], names[1], others[1], names[2], others[2], names[0]]

    reusing, query_matrix, dim = _linker(model_dir)
    encoded: list[str] = []
    token_ids = reusing.encoder.token_ids
    monkeypatch.setattr(reusing.encoder, "token_ids", lambda texts: encoded.extend(texts) or token_ids(texts))
    got = reusing.link(queries, top_k=3)
    assert sorted(set(encoded)) == sorted(others)  # the names were never sent to the encoder
    rows = [reusing.dictionary.names.index(n) for n in names]
    np.testing.assert_array_equal(query_matrix(names), reusing.index.reconstruct(np.array(rows))[:, :dim])

    monkeypatch.setenv("KGNORM_NAME_VECTORS", "encode")
    encoding = _linker(model_dir)[0]
    want = encoding.link(queries, top_k=3)
    assert [[c.name_idx for c in r] for r in got] == [[c.name_idx for c in r] for r in want]
    assert all(abs(a.score - b.score) < 1e-3 for r, s in zip(got, want) for a, b in zip(r, s))
    for q, r in zip(queries, got):  # the same answer alone as among the others
        assert [(c.name_idx, c.score) for c in reusing.link([q], top_k=3)[0]] == [(c.name_idx, c.score) for c in r]
    if method == "dilbert-euclidean":  # a name is its own nearest name, at distance 0
        assert all(r[0].name == q and abs(reusing.distance_of(r[0].score)) < 1e-3
                   for q, r in zip(queries, got) if q in names)


@pytest.mark.parametrize("method", METHODS)
def test_a_new_dictionary_is_searched_as_the_torch_model_searches_it(encoder, tmp_path, monkeypatch, method):
    """`eval link --nil-fraction` swaps in a reduced dictionary: the onnx linker indexes it (its
    names encoded, their vectors then taken for queries that are names) and ranks as torch does."""
    from kgnorm.methods.registry import load_encoder

    model_dir = _model_dir(encoder, tmp_path / "model", method)
    monkeypatch.setenv("KGNORM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(QUERY_PRECISION_ENV, "fp32")
    reduced = NameDictionary.from_entries([e for e in ENTRIES if e[1] not in ("MESH:D1", "MESH:D4")])
    queries = ["heart attack", "pd", "renal failure", "kidney failures", "toe pain"]
    linker = _linker(model_dir)[0]
    torch_model = load_encoder(model_dir)
    for m in (linker, torch_model):
        m.set_dictionary(reduced)
    got, want = linker.link(queries, top_k=3), torch_model.link(queries, top_k=3)
    assert [[c.name_idx for c in r] for r in got] == [[c.name_idx for c in r] for r in want]
    assert all(abs(a.score - b.score) < 2e-3 for r, s in zip(got, want) for a, b in zip(r, s))
    assert linker.index.engine == "onnx" and len(linker.index.reconstruct(np.arange(len(reduced)))) == len(reduced)


def test_stored_name_vectors_are_declared(monkeypatch):
    from kgnorm.linking.stored_vectors import NAME_VECTORS_ENV, stored_name_vectors

    monkeypatch.delenv(NAME_VECTORS_ENV, raising=False)
    assert stored_name_vectors()
    monkeypatch.setenv(NAME_VECTORS_ENV, "encode")
    assert not stored_name_vectors()
    monkeypatch.setenv(NAME_VECTORS_ENV, "sometimes")
    with pytest.raises(KgnormError, match=NAME_VECTORS_ENV):
        stored_name_vectors()


def test_the_overlap_default_follows_the_cores_query_encoding_has(onnx_encoder, monkeypatch):
    """Without KGNORM_QUERY_OVERLAP the calls found ahead overlap the search where query encoding has
    two cores: the affinity mask, or what a caller declared (annotate's linking stage, a Ray actor);
    decided at each submit, so a declaration made after the vectors object exists still counts."""
    import kgnorm.encoders.fixed_shape as fs
    from kgnorm.encoders.fixed_shape import OVERLAP_ENV, QueryVectors, default_overlap, query_cores

    monkeypatch.delenv(OVERLAP_ENV, raising=False)
    monkeypatch.setattr(fs.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert default_overlap()
    texts = list(dict.fromkeys(_texts(random.Random(7), 60)))
    q = QueryVectors(onnx_encoder, 2, overlap=None)
    with query_cores(1):
        assert not default_overlap() and not q.overlap
        q.submit(texts[:30])
        assert not q._jobs and not q.inflight  # encoded in the caller's thread
        with query_cores(2):
            assert q.overlap
        monkeypatch.setenv(OVERLAP_ENV, "1")  # the variable wins over a declaration
        assert q.overlap
        monkeypatch.delenv(OVERLAP_ENV)
    q.submit(texts[30:])
    assert q._jobs  # two cores again: the full calls went to the background thread
    assert np.array_equal(q.take(texts), encode_fixed_shape(onnx_encoder, texts, 2))
    monkeypatch.setattr(fs.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert not default_overlap()
    monkeypatch.setenv(OVERLAP_ENV, "0")
    assert not QueryVectors(onnx_encoder, 2, overlap=None).overlap
    assert QueryVectors(onnx_encoder, 2, overlap=True).overlap  # asked for by the caller
