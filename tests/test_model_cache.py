"""Vectors cached per key and set of texts: a hit encodes nothing, a superset encodes only what is new."""
from __future__ import annotations

import numpy as np

from kgnorm.model_cache import CACHE_ENV, cached_vectors


def _encoder(calls: list[list[str]]):
    def encode(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)
    return encode


def _expected(texts: list[str]) -> np.ndarray:
    return np.array([[len(t), ord(t[0])] for t in texts], dtype=np.float32)


def test_a_set_is_encoded_once_and_a_superset_encodes_only_its_new_texts(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    calls: list[list[str]] = []
    names = ["aspirin", "caffeine", "heparin"]
    assert np.array_equal(cached_vectors("v", "model-1", names, _encoder(calls)), _expected(names))
    again = ["heparin", "aspirin", "caffeine"]   # the same set in another order: a hit
    assert np.array_equal(cached_vectors("v", "model-1", again, _encoder(calls)), _expected(again))
    assert calls == [sorted(names)]
    more = names + ["ASA", "morphine"]            # the dictionary with mentions added
    assert np.array_equal(cached_vectors("v", "model-1", more, _encoder(calls)), _expected(more))
    assert calls[-1] == ["ASA", "morphine"]
    most = more + ["naloxone"]                    # then dev mentions: reuses the larger set
    assert np.array_equal(cached_vectors("v", "model-1", most, _encoder(calls)), _expected(most))
    assert calls[-1] == ["naloxone"]
    cached_vectors("v", "model-2", names, _encoder(calls))   # another model shares nothing
    assert calls[-1] == sorted(names)


def test_a_broken_cache_file_only_costs_the_encoding(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    calls: list[list[str]] = []
    names = ["aspirin", "caffeine"]
    cached_vectors("v", "m", names, _encoder(calls))
    for f in (tmp_path / "v").glob("*.npy"):
        f.write_bytes(b"broken")
    assert np.array_equal(cached_vectors("v", "m", names + ["heparin"], _encoder(calls)),
                          _expected(names + ["heparin"]))
    assert calls[-1] == ["aspirin", "caffeine", "heparin"]
