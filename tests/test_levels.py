"""The DAN level protocol on the toy hierarchy of test_hierarchy.py."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_hierarchy import toy_hierarchy  # noqa: E402

from kgnorm.errors import KgnormError  # noqa: E402
from kgnorm.graph.levels import build_levels  # noqa: E402


def test_counts(split):
    # 32 level-5 concepts x 3 names + MULTI (2 names) + 4 level-6 concepts (1 name)
    assert len(split.items()) == 102
    assert len(split.test) == 16 and len(split.val) == 16 and len(split.train) == 70
    # dead-end branch DEAD -> DEAD2 -> DEAD3 is dropped on levels 1..3
    assert split.classes[1] == ["L1_0", "L1_1"]
    assert len(split.classes[2]) == 4 and "DEAD2" not in split.classes[2]
    assert len(split.classes[3]) == 8 and "DEAD3" not in split.classes[3]
    assert len(split.classes[4]) == 16
    assert split.dropped_dead_end == {1: 1, 2: 1, 3: 1, 4: 0}
    s = split.summary()
    assert [s[k]["classes"] for k in (1, 2, 3, 4)] == [2, 4, 8, 16]
    assert s[4]["names"] == 102 and s[4]["test"] == 16 and s[4]["concepts"] == 37
    assert s[4]["min_train_names_per_class"] >= 1
    assert "root R" in split.summary_table()
    assert split.class_names[1]["L1_0"] == ["cardiac abnormality", "abnormal cardiac"]


def test_labels(split):
    by = {(it.name, it.concept_uid): it for it in split.items()}
    multi = by[("calcified stenosis", "MULTI")]
    assert multi.labels[4] == {"L4_0", "L4_15"}
    assert multi.labels[1] == {"L1_0", "L1_1"}
    deep = by[("recurrent congenital stenosis of valve", "L6_0")]
    assert deep.labels == {1: {"L1_0"}, 2: {"L2_0"}, 3: {"L3_0"}, 4: {"L4_0"}}
    # the shortcut L5_0 -> L2_0 was removed: L5_0's names are level-5 names under L4_0
    l50 = [it for it in split.items() if it.concept_uid == "L5_0"]
    assert len(l50) == 3 and all(it.labels[4] == {"L4_0"} for it in l50)
    # no names of concepts at level <= 4
    assert not {it.concept_uid for it in split.items()} & {"L4_0", "L3_0", "R", "DEAD3"}


def test_held_out(split):
    key = lambda it: (it.name, it.concept_uid)  # noqa: E731
    tr, va, te = ({key(i) for i in part} for part in (split.train, split.val, split.test))
    assert not (tr & va) and not (tr & te) and not (va & te)
    for c in split.classes[4]:
        assert any(c in it.labels[4] for it in split.test)
        assert any(c in it.labels[4] for it in split.val)
        assert any(c in it.labels[4] for it in split.train)
    same = build_levels(toy_hierarchy(), "R", seed=0)
    assert [key(i) for i in same.test] == [key(i) for i in split.test]
    other = build_levels(toy_hierarchy(), "R", seed=1)
    assert {key(i) for i in other.test} != te


def test_small_classes_not_held_out():
    # under L2_0 with 3 levels: level-3 classes are L4_*; L5 names are level 4 names
    s = build_levels(toy_hierarchy(), "L2_0", n_levels=3, seed=0)
    assert s.classes[1] == ["L3_0", "L3_1"]
    # only L5_0 / L5_4 have a child (L6_0 / L6_1) below level 3 -> classes L4_0, L4_2;
    # each class has a single name (L6_0, L6_1), so nothing is held out
    assert s.classes[3] == ["L5_0", "L5_4"]
    assert s.test == [] and s.val == [] and len(s.train) == 2


def test_bad_input():
    h = toy_hierarchy()
    with pytest.raises(KgnormError, match="NOPE is not in the hierarchy"):
        build_levels(h, "NOPE")
    with pytest.raises(ValueError):
        build_levels(h, "NOPE")
    with pytest.raises(KgnormError, match="has only 4 level"):
        build_levels(h, "L2_0", n_levels=4)
    with pytest.raises(KgnormError, match="has only 0 level"):
        build_levels(h, "ISOLATED")
