"""Throughput paths of `link` give the in-process answer: the query cache never changes a rank
(random queries, random batches; `--engine ray`: tests/test_ray_engine.py)."""
from __future__ import annotations

import io
import random

import pytest
import torch

from kgnorm.encoders.dense import DenseEncoder
from kgnorm.jobs.link import link_mentions
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.linker import DictionaryLinker
from kgnorm.linking.query_cache import CachedLinker, with_cache
from kgnorm.mentions.types import Mention
from kgnorm.methods.biosyn.model import BioSynModel

ENTRIES = [("heart attack", "MESH:D1"), ("myocardial infarction", "MESH:D1"), ("renal failure", "MESH:D2"),
           ("kidney failure", "MESH:D2"), ("acute kidney failure", "MESH:D3"), ("parkinson disease", "MESH:D4"),
           ("pd", "MESH:D4"), ("pd", "OMIM:168600"), ("breast cancer", "MESH:D5"), ("lung cancer", "MESH:D6"),
           ("liver cancer", "MESH:D7"), ("fever", "MESH:D8"), ("type 2 diabetes", "MESH:D9"),
           ("hypertension", "MESH:D11"), ("toe pain", "MESH:D13"), ("chronic renal failure", "MESH:D15")]
WORDS = ["heart", "attack", "renal", "kidney", "failure", "acute", "pd", "cancer", "breast", "lung", "fever",
         "type", "2", "diabetes", "toe", "pain", "hyper", "tension", "chronic", "of"]


@pytest.fixture(scope="module")
def biosyn(tiny_bert_dir):
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    enc = DenseEncoder(tiny_bert_dir, pooling="cls", max_length=16, device="cpu")
    yield BioSynModel(enc, NameDictionary.from_entries(ENTRIES), sparse_weight=1.0, k_sparse=6, k_dense=6)
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def model_dir(biosyn, tmp_path_factory):
    return biosyn.save(tmp_path_factory.mktemp("scale") / "model")


def _queries(rng: random.Random, n: int) -> list[str]:
    pool = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 12))]
    return [rng.choice(pool) for _ in range(n)]


def test_the_cache_never_changes_a_rank(biosyn):
    plain = DictionaryLinker(biosyn, "biosyn")
    for seed in range(25):
        rng = random.Random(seed)
        cached = CachedLinker(plain, max_entries=rng.choice([1, 3, 1000]))
        for _ in range(rng.randint(1, 4)):
            qs = _queries(rng, rng.randint(1, 30))
            k = rng.choice([1, 3, 5])
            ms = [Mention(text=q, id=str(i)) for i, q in enumerate(qs)]
            want = plain.link_parts(qs, ms, [True] * len(qs), k)
            got = cached.link_parts(qs, ms, [True] * len(qs), k)
            assert [[h.uid for h in p] for p in got] == [[h.uid for h in p] for p in want], (seed, qs)
            assert [[h.score for h in p] for p in got] == [[h.score for h in p] for p in want]  # bit for bit
        assert len(cached.cache) <= max(cached.max_entries, 30)
    assert cached.hits > 0


def test_the_cache_is_skipped_when_off_or_for_context_linkers(biosyn, monkeypatch):
    plain = DictionaryLinker(biosyn, "biosyn")
    assert isinstance(with_cache(plain), CachedLinker)
    monkeypatch.setenv("KGNORM_LINK_CACHE", "0")
    assert with_cache(plain) is plain


MENTIONS = ["heart attack", "Heart attacks", "renal failure", "heart attack", "pd", "kidney failures",
            "breast and lung cancer", "pd", "fever of", "type 2 diabetes"] * 3


def _tsv(model_dir, **kw) -> str:
    out = io.StringIO()
    link_mentions(model_dir, MENTIONS, write=False, output=out, progress=False, **{"batch_size": 4, **kw})
    return out.getvalue()


def test_link_tsv_is_byte_identical_with_and_without_the_cache(model_dir, monkeypatch):
    monkeypatch.setenv("KGNORM_LINK_CACHE", "0")
    before = _tsv(model_dir)
    monkeypatch.setenv("KGNORM_LINK_CACHE", "1")
    assert _tsv(model_dir) == before
    assert _tsv(model_dir, batch_size=3) == before  # a query's scores do not depend on its batch
    assert before.count("\n") > len(MENTIONS)
