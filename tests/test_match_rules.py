"""The matcher's decision rules without a store or a model (a toy encoder): a source name that is a
target's preferred name maps there too, unless that target is a qualified, narrower name; where two
source concepts want one target by cosine the closer wins; `place` ranks the equivalent of the
nearest mapped ancestor first; the target's name vectors are cached on disk per model and names."""
from __future__ import annotations

import numpy as np

from kgnorm.jobs.place import exact_targets, rank_parents
from kgnorm.matching.matcher import Calibration, MatchSide, decide, narrower
from kgnorm.matching.sssom import EXACT


def _side(ontology: str, names: dict[str, list[str]], parents: dict[str, list[str]] | None = None) -> MatchSide:
    return MatchSide(ontology, {u: ns[0] for u, ns in names.items()}, names, parents or {})


def _exact(ds) -> set[tuple[str, str]]:
    return {(d.source_uid, d.target_uid) for d in ds if d.predicate == EXACT}


def test_preferred_name_rule_adds_the_broader_heading_not_the_qualified_one():
    src = _side("s", {"S:1": ["osteosarcoma", "bone tissue neoplasm"],
                      "S:2": ["prostate cancer", "familial prostate cancer"]})
    tgt = _side("t", {"T:1": ["Osteosarcoma"], "T:2": ["Neoplasms, Bone Tissue", "Bone Tissue Neoplasm"],
                      "T:3": ["Prostatic Neoplasms", "Prostate Cancer"], "T:4": ["Prostate cancer, familial"]})
    got = _exact(decide(src, tgt, {}, Calibration(), use_ids=False))
    assert {("S:1", "T:1"), ("S:1", "T:2"), ("S:2", "T:3")} <= got
    assert ("S:2", "T:4") not in got
    assert narrower("Prostate cancer, familial", "prostate cancer")
    assert not narrower("Prostatic Neoplasms", "prostate cancer")


def test_closest_source_wins_a_contested_target():
    src = _side("s", {"S:1": ["mixed germ cell tumour"], "S:2": ["germ cell cancer"]})
    tgt = _side("t", {"T:1": ["Germ Cell Tumor"]})
    cands = {"S:1": [("T:1", 0.90)], "S:2": [("T:1", 0.95)]}
    assert _exact(decide(src, tgt, cands, Calibration(threshold=0.87), use_ids=False)) == {("S:2", "T:1")}


def test_place_ranks_the_nearest_mapped_ancestors_equivalent_first():
    src = _side("s", {"S:0": ["neoplasm"], "S:1": ["odd tumour"], "S:2": ["odder tumour"]},
                {"S:1": ["S:0"], "S:2": ["S:1"]})
    tgt = _side("t", {"T:0": ["Neoplasms"], "T:1": ["Tumour, Odd-ish"]})
    vocab = sorted({n.lower() for side in (src, tgt) for ns in side.names.values() for n in ns})
    rng = np.random.default_rng(0)
    table = {n: rng.normal(size=8) for n in vocab}

    def encode(texts):
        return np.stack([table[t] for t in texts]) if len(texts) else np.zeros((0, 8))
    ranked = rank_parents(encode, src, tgt, 2, ["S:2"], mapped=exact_targets(decide(src, tgt, {}, use_ids=False)))
    assert ranked["S:2"][0][0] == "T:0" and ranked["S:2"][0][1] > 1.0   # S:1 has no equivalent, S:0 has


def test_target_vectors_are_cached_per_model_and_names(tmp_path, monkeypatch):
    from kgnorm.jobs.ontology_pair import disk_cached

    monkeypatch.setenv("KGNORM_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "model"
    model.mkdir()
    (model / "kgnorm-model.json").write_text('{"method": "biosyn"}')
    calls = []

    def encode(texts):
        calls.append(len(texts))
        return np.arange(len(texts) * 2, dtype=np.float32).reshape(len(texts), 2)
    names = [f"name {i}" for i in range(10)]
    first = disk_cached(encode, model, min_texts=5)(names)
    again = disk_cached(encode, model, min_texts=5)(names)
    assert calls == [10] and np.array_equal(first, again)            # read back, not encoded
    disk_cached(encode, model, min_texts=5)(names[:3])                # small calls are not cached
    backwards = disk_cached(encode, model, min_texts=5)(names[::-1])  # the same names in another order: read
    assert np.array_equal(backwards, first[::-1])
    disk_cached(encode, model, min_texts=5)(names + ["new"])          # more names: only the new one encoded
    (model / "kgnorm-model.json").write_text('{"method": "biosyn", "v": 2}')
    disk_cached(encode, model, min_texts=5)(names)                    # another model: encoded
    assert calls == [10, 3, 1, 10]
    monkeypatch.setenv("KGNORM_MATCH_CACHE", "0")
    disk_cached(encode, model, min_texts=5)(names)
    assert calls[-1] == 10 and len(calls) == 5
