"""The query encoder's fixed-shape path (kgnorm.encoders.fixed_shape) on fp32 and bf16: a text's
vector is bit-identical whatever else is encoded with it and whenever it is submitted, calls are
filled from texts submitted ahead, and the precision is chosen from declared CPU facts."""
from __future__ import annotations

import io
import random

import numpy as np
import pytest
import torch

from kgnorm.encoders.dense import DenseEncoder
from kgnorm.encoders.fixed_shape import PRECISIONS, WORKERS_ENV, QueryVectors, default_workers, encode_fixed_shape
from kgnorm.errors import KgnormError
from kgnorm.jobs.link import link_mentions
from kgnorm.linking.cpu_features import QUERY_PRECISION_ENV, query_path
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.methods.biosyn.model import BioSynModel
from conftest import takes_in_random_order

WORDS = ["heart", "attack", "renal", "kidney", "failure", "acute", "pd", "cancer", "breast", "lung", "fever",
         "type", "2", "diabetes", "toe", "pain", "hypertension", "chronic", "of", "x"]
ENTRIES = [("heart attack", "MESH:D1"), ("myocardial infarction", "MESH:D1"), ("renal failure", "MESH:D2"),
           ("kidney failure", "MESH:D2"), ("parkinson disease", "MESH:D4"), ("pd", "MESH:D4"),
           ("breast cancer", "MESH:D5"), ("lung cancer", "MESH:D6"), ("fever", "MESH:D8"),
           ("type 2 diabetes", "MESH:D9"), ("hypertension", "MESH:D11"), ("toe pain", "MESH:D13")]


@pytest.fixture(scope="module")
def encoder(tiny_bert_dir):
    n = torch.get_num_threads()
    torch.manual_seed(0)
    yield DenseEncoder(tiny_bert_dir, pooling="cls", max_length=16, device="cpu")
    torch.set_num_threads(n)


def _texts(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5))) for _ in range(n)]


@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_vector_does_not_depend_on_its_batch_or_when_it_was_submitted(encoder, precision):
    rng = random.Random(7)
    texts = list(dict.fromkeys(_texts(rng, 24)))
    for rows in (1, 4):
        alone = np.stack([encode_fixed_shape(encoder, [t], rows, precision)[0] for t in texts])
        assert alone.dtype == np.float32 and np.isfinite(alone).all()
        assert np.array_equal(encode_fixed_shape(encoder, texts, rows, precision), alone)
        for _ in range(2):  # random submissions ahead of need, random takes
            q = QueryVectors(encoder, rows, precision)
            takes_in_random_order(q, texts, alone, rng, step=7, most=9)
            assert not q.pending


@pytest.mark.parametrize("precision", PRECISIONS)
def test_calls_on_several_threads_give_the_same_bits(encoder, precision):
    texts = list(dict.fromkeys(_texts(random.Random(11), 60)))
    one = encode_fixed_shape(encoder, texts, 4, precision, workers=1)
    q = QueryVectors(encoder, 4, precision, workers=3)
    q.submit(texts)
    assert q._pool is not None and q.calls > 1  # the calls really ran on the pool
    assert np.array_equal(q.take(texts), one)
    assert np.array_equal(encode_fixed_shape(encoder, texts[::-1], 4, precision, workers=2), one[::-1])


def test_the_worker_count_is_declared(monkeypatch):
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    assert default_workers() == 1  # opt-in: two gained nothing measurable with MiniLM (benchmarks/LOG.md)
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert default_workers() == 3
    monkeypatch.setenv(WORKERS_ENV, "two")
    with pytest.raises(KgnormError, match=WORKERS_ENV):
        default_workers()


def test_the_two_precisions_differ_but_stay_close(encoder):
    texts = _texts(random.Random(3), 8)
    fp32, bf16 = (encode_fixed_shape(encoder, texts, 8, p) for p in PRECISIONS)
    cos = (fp32 * bf16).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(bf16, axis=1)
    assert not np.array_equal(fp32, bf16)  # bf16 autocast really ran
    assert cos.min() > 0.98


def test_taking_more_texts_than_are_kept_ready_still_gives_every_vector(encoder):
    """A dictionary larger than `max_ready` (32,768 by default: MEDIC has 72k names) encoded in one take,
    as the onnx linkers do when `eval link --nil-fraction` swaps in a reduced dictionary."""
    texts = list(dict.fromkeys(_texts(random.Random(3), 60)))
    want = encode_fixed_shape(encoder, texts, 4)
    q = QueryVectors(encoder, rows=4, max_ready=5)
    q.submit(texts[:9])   # some already ready, and dropped as the take fills the store
    assert np.array_equal(q.take(texts + texts[:3]), np.concatenate([want, want[:3]]))
    assert not q.pending and not q.length


def test_texts_submitted_ahead_fill_whole_calls(encoder):
    texts = [f"{w} {v}" for w in WORDS[:6] for v in WORDS[:6]]
    lengths = {len(ids) for ids in encoder.tokenizer(texts, padding=False)["input_ids"]}
    q = QueryVectors(encoder, rows=8)
    q.submit(texts)
    for n in lengths:
        assert len(q.pending.get(n, {})) < 8  # every group left holds less than a call
    q.take(texts)
    assert q.padded_rows < 8 * len(lengths)  # only each group's last call is filled with copies
    one_by_one = QueryVectors(encoder, rows=8)
    for t in texts:
        one_by_one.take([t])
    assert one_by_one.padded_rows == 7 * len(texts)
    assert q.calls < one_by_one.calls


def test_the_path_is_chosen_from_declared_cpu_facts(monkeypatch):
    monkeypatch.delenv(QUERY_PRECISION_ENV, raising=False)
    monkeypatch.delenv("KGNORM_QUERY_ROWS", raising=False)
    assert query_path("auto", frozenset({"avx512f", "amx_bf16"}))[0] == "bf16"
    assert query_path("auto", frozenset({"avx2"}))[0] == "fp32"
    assert query_path("FP32", frozenset({"amx_bf16"}))[0] == "fp32"
    monkeypatch.setenv(QUERY_PRECISION_ENV, "bf16")
    assert query_path(None, frozenset())[0] == "bf16"
    monkeypatch.setenv("KGNORM_QUERY_ROWS", "4")
    assert query_path()[1] == 4
    monkeypatch.setenv(QUERY_PRECISION_ENV, "fp16")
    with pytest.raises(KgnormError, match="KGNORM_QUERY_PRECISION"):
        query_path()


MENTIONS = ["heart attack", "Heart attacks", "renal failure", "pd", "kidney failures", "breast and lung cancer",
            "fever of", "type 2 diabetes", "toe pains", "acute renal failure", "chronic hypertension"] * 2


@pytest.mark.parametrize("precision", PRECISIONS)
def test_link_output_does_not_depend_on_batch_or_lookahead(encoder, tmp_path, monkeypatch, precision):
    monkeypatch.setenv(QUERY_PRECISION_ENV, precision)
    monkeypatch.setenv("KGNORM_QUERY_ROWS", "4")
    model = BioSynModel(encoder, NameDictionary.from_entries(ENTRIES), k_sparse=5, k_dense=5)
    model_dir = model.save(tmp_path / "model")

    def tsv(**kw) -> str:
        out = io.StringIO()
        link_mentions(model_dir, MENTIONS, write=False, output=out, progress=False, **kw)
        return out.getvalue()

    from kgnorm.linking import linker
    monkeypatch.setattr(linker, "LOOKAHEAD", 0)
    want = tsv(batch_size=1)
    assert want.count("\n") > len(MENTIONS)
    for batch, ahead in ((3, 7), (64, 0)):
        monkeypatch.setattr(linker, "LOOKAHEAD", ahead)
        assert tsv(batch_size=batch) == want, (batch, ahead)
