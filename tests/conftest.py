"""Shared pytest fixtures (and the tiny-model helpers more than one test file needs)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_WORDS = ["heart", "attack", "kidney", "renal", "failure", "acute", "chronic", "disease",
          "syndrome", "infarction", "myocardial", "parkinson", "cancer", "tumor", "breast",
          "lung", "liver", "pain", "fever", "diabetes", "type", "toe", "finger", "of", "the",
          "and", "or", "with", "hyper", "hypo", "tension", "itis", "osis", "emia", "pathy"]


def _make_tokenizer(cls, vocab_path, vocab):
    """transformers 5 takes ``vocab`` (dict or path); 4.x takes ``vocab_file``."""
    try:
        tok = cls(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True)
    except TypeError:
        tok = cls(vocab_file=str(vocab_path), do_lower_case=True)
    if tok.tokenize("heart")[0] == "[UNK]":
        tok = cls(vocab_file=str(vocab_path), do_lower_case=True)
    return tok


@pytest.fixture(scope="session", autouse=True)
def _export_cache(tmp_path_factory):
    """Exports made from model directories (the onnx query engine's, the int8 detector's) go to a
    folder of this test session, never to the user's ~/.cache (a test may still point elsewhere)."""
    if os.environ.get("KGNORM_CACHE_DIR"):
        yield
        return
    os.environ["KGNORM_CACHE_DIR"] = str(tmp_path_factory.mktemp("kgnorm-cache"))
    try:
        yield
    finally:
        os.environ.pop("KGNORM_CACHE_DIR", None)


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory):
    """A tiny random BERT (hidden 32, 2 layers, 2 heads) + fast WordPiece tokenizer saved
    with save_pretrained; a few hundred wordpieces, no network."""
    import string

    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    d = tmp_path_factory.mktemp("tiny-bert")
    chars = list(string.ascii_lowercase + string.digits)
    vocab = list(dict.fromkeys(_SPECIAL + chars + ["##" + c for c in chars] + _WORDS
                               + ["##" + w for w in _WORDS]
                               + [a + b for a in "aeiou" for b in "nrst"]
                               + ["##" + a + b for a in "aeiou" for b in "nrst"]
                               + list(string.punctuation)))
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = _make_tokenizer(BertTokenizerFast, d / "vocab.txt", vocab)
    tok.save_pretrained(str(d))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=64, type_vocab_size=2)
    BertModel(cfg).save_pretrained(str(d))
    return d


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny models run fastest on one intra-op thread and do not fight over a shared machine
    (a module asks for it with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``)."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def make_word_bert(path: Path, words: list[str], max_positions: int = 128) -> Path:
    """A random 2-layer BERT (hidden 32) whose vocabulary is ``words`` (word-level): offline,
    about a second to build (BioCoM's encoder tests)."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *dict.fromkeys(words)]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    # from the directory (transformers 5's constructor takes `vocab`, 4's `vocab_file`)
    tok = BertTokenizerFast.from_pretrained(str(path), do_lower_case=True)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=max_positions)
    BertModel(cfg).save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def split():
    """The level split of test_hierarchy's toy hierarchy under R (levels, DAN, hypernym tests)."""
    from test_hierarchy import toy_hierarchy

    from kgnorm.graph.levels import build_levels

    return build_levels(toy_hierarchy(), "R", seed=0)


# -- a live Bolt server for the Neo4j legs ----------------------------------------
@pytest.fixture(scope="session")
def bolt_server(tmp_path_factory):
    """(uri, database, kind) of a live Bolt server, or skip.

    KGNORM_TEST_NEO4J_URI names a disposable Neo4j 5 database (wiped by the tests);
    otherwise, when the `arcadedb-embedded` test extra is installed, an ArcadeDB server
    with its Bolt plugin is started on 127.0.0.1 with a throwaway password and stopped
    with `stop()` at the end of the session (tests/bolt_server.py)."""
    uri = os.environ.get("KGNORM_TEST_NEO4J_URI")
    if uri:
        yield uri, os.environ.get("KGNORM_NEO4J_DATABASE") or None, "neo4j"
        return
    try:
        import arcadedb_embedded  # noqa: F401  (its import starts no JVM)
    except ImportError:
        if os.environ.get("KGNORM_REQUIRE_BOLT"):
            pytest.fail("KGNORM_REQUIRE_BOLT is set but arcadedb-embedded is not installed")
        pytest.skip("no live Bolt server: set KGNORM_TEST_NEO4J_URI or install the test extra arcadedb-embedded")
    from bolt_server import ArcadeDBProcess

    server = ArcadeDBProcess(tmp_path_factory.mktemp("arcadedb"))
    try:
        yield server.uri, server.database, "arcadedb"
    finally:
        server.stop()


def takes_in_random_order(q, texts: list[str], want, rng, step: int, most: int) -> None:
    """Submit `texts` to the QueryVectors `q` `step` at a time in a random order, then take them back in
    random groups of 1..`most`: every vector must equal its row of `want` bit for bit."""
    import numpy as np

    order = rng.sample(range(len(texts)), len(texts))
    for s in range(0, len(order), step):
        q.submit([texts[i] for i in order[s:s + step]])
    left = list(range(len(texts)))
    rng.shuffle(left)
    while left:
        k = rng.randint(1, most)
        take, left = left[:k], left[k:]
        assert np.array_equal(q.take([texts[i] for i in take]), want[take])

