"""Word vectors: tokenization, fastText training, save/load, user files, averaging."""
from __future__ import annotations

import numpy as np
import pytest

from kgnorm.errors import KgnormError
from kgnorm.encoders.wordvectors import WordVectors, tokenize

TEXTS = ["Abnormality of the heart", "Cardiac arrest", "Heart failure",
         "Renal failure", "Kidney disease", "Abnormal heart rhythm",
         "Chronic kidney disease stage 3"] * 20


@pytest.fixture(scope="module")
def wv():
    return WordVectors.train(TEXTS, dim=12, epochs=3, bucket=500, workers=1)


def test_tokenize():
    assert tokenize("Type_2 Diabetes-Mellitus (T2D), 3rd") == \
        ["type", "2", "diabetes", "mellitus", "t2d", "3rd"]
    assert tokenize("Ménière's disease") == ["ménière", "s", "disease"]
    assert tokenize("  --  ") == []


def test_train_average_and_subwords(wv):
    assert wv.kind == "fasttext" and wv.dim == 12 and "heart" in wv
    avg = wv.average(["Heart failure", "", "hearts!!"])
    assert avg.shape == (3, 12) and avg.dtype == np.float32
    exp = (wv.word_vector("heart") + wv.word_vector("failure")) / 2
    assert np.allclose(avg[0], exp, atol=1e-6)
    assert not avg[1].any()                       # no tokens -> zeros
    assert avg[2].any() and "hearts" not in wv    # OOV word from its n-grams
    assert wv.last_unknown == 0
    assert np.allclose(wv.word_vector("hearts"), wv.kv.get_vector("hearts"), atol=1e-6)


def test_save_load_roundtrip(wv, tmp_path):
    wv.save(tmp_path / "wv")
    assert not list((tmp_path / "wv").glob("*.pkl"))
    back = WordVectors.load(tmp_path / "wv")
    names = ["heart failure", "kidneys", "zzzz qqq"]
    assert back.kind == "fasttext"
    assert np.allclose(back.average(names), wv.average(names), atol=1e-6)
    assert back.info["tokens"] == wv.info["tokens"]
    assert WordVectors.from_file(tmp_path / "wv").dim == 12


def test_user_vec_file(tmp_path):
    p = tmp_path / "tiny.vec"
    p.write_text("3 2\nheart 1 0\nfailure 0 1\nkidney 1 1\n")
    wv = WordVectors.from_file(p)
    assert wv.kind == "plain" and wv.dim == 2
    avg = wv.average(["Heart failure", "heart unknownword", "nothing known"])
    assert np.allclose(avg[0], [0.5, 0.5])
    assert np.allclose(avg[1], [1, 0])           # unknown words left out of the mean
    assert not avg[2].any()
    assert wv.last_unknown == 3
    wv.save(tmp_path / "plain")
    back = WordVectors.load(tmp_path / "plain")
    assert back.kind == "plain" and np.allclose(back.average(["kidney"]), [[1, 1]])


def test_user_bin_file(wv, tmp_path):
    from gensim.models import FastText
    from gensim.models.fasttext import save_facebook_model
    m = FastText(sentences=[tokenize(t) for t in TEXTS], vector_size=8, min_count=1,
                 bucket=300, epochs=1, workers=1, seed=0)
    p = tmp_path / "model.bin"
    save_facebook_model(m, str(p))
    got = WordVectors.from_file(p)
    assert got.kind == "fasttext" and got.dim == 8
    assert got.average(["cardiomegaly"]).any()    # OOV through subwords


def test_missing_and_bad_files(tmp_path):
    with pytest.raises(KgnormError, match="nope.vec"):
        WordVectors.from_file(tmp_path / "nope.vec")
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"not a fasttext model")
    with pytest.raises(KgnormError, match="bad.bin"):
        WordVectors.from_file(bad)
    badvec = tmp_path / "bad.vec"
    badvec.write_text("2 3\nheart 1 x 0\n")
    with pytest.raises(KgnormError, match="bad.vec"):
        WordVectors.from_file(badvec)
    other = tmp_path / "vectors.xyz"
    other.write_text("x")
    with pytest.raises(KgnormError, match="vectors.xyz"):
        WordVectors.from_file(other)
    with pytest.raises(KgnormError, match="meta.json"):
        WordVectors.load(tmp_path)
    with pytest.raises(KgnormError):
        WordVectors.train(["", "  ,, "])


def test_static_vectors_from_an_encoder(tiny_bert_dir, tmp_path):
    from kgnorm.encoders.dense import DenseEncoder

    enc = DenseEncoder(tiny_bert_dir, pooling="mean")
    wv = WordVectors.from_encoder(enc, ["Heart failure", "renal failure", ""])
    assert wv.kind == "plain" and wv.dim == 32
    assert list(wv.kv.index_to_key) == ["failure", "heart", "renal"]
    # each word is the encoder's vector of the word alone
    assert np.allclose(wv.word_vector("heart"), enc.encode(["heart"])[0], atol=1e-5)
    assert wv.word_vector("kidney") is None                     # not in the texts: unknown
    avg = wv.average(["heart failure"])[0]
    assert np.allclose(avg, enc.encode(["heart", "failure"]).mean(axis=0), atol=1e-5)
    assert wv.info["words"] == 3 and wv.source.startswith("encoder:")
    back = WordVectors.load(wv.save(tmp_path / "wv"))
    assert back.kind == "plain" and np.allclose(back.word_vector("renal"), wv.word_vector("renal"))
    with pytest.raises(KgnormError, match="no text"):
        WordVectors.from_encoder(enc, ["", "--"])
