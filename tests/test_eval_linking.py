import math

import pytest

from kgnorm.evaluation.link_accuracy import (GoldMention, MentionPrediction, accuracy_at_k,
                                       refined_subset)


def P(*parts):
    """Prediction: per part a ranked list of uid sets given as 'A' or 'A,B'."""
    return [[set(c.split(",")) for c in part] for part in parts]


def test_simple_acc_at_k():
    preds = [P(["A", "B"]), P(["B", "C", "D", "E", "A"]), P(["X", "Y", "Z", "W", "V", "A"])]
    rep = accuracy_at_k(preds, ["A", "A", "A"], ks=(1, 5))
    assert rep.hits == {1: 1, 5: 2}
    assert rep.acc1 == pytest.approx(1 / 3) and rep.acc5 == pytest.approx(2 / 3)
    assert rep.ranks == [1, 5, 0]


def test_composite_counts_only_if_every_part_right():
    preds = [P(["A"], ["X", "Y", "B"])]
    rep = accuracy_at_k(preds, ["A|B"], ks=(1, 2, 3))
    assert rep.accuracy == {1: 0.0, 2: 0.0, 3: 1.0}
    # aligned by position: swapping the gold order makes both parts wrong
    assert accuracy_at_k(preds, ["B|A"], ks=(5,)).accuracy[5] == 0.0


def test_unsplit_composite_is_a_miss_and_parts_match_one_to_one():
    # one concept for a mention of two: wrong
    assert accuracy_at_k([P(["B"])], [["A", "B"]], ks=(1,)).acc1 == 0.0
    # one list holding both gold concepts is still one link, never two
    assert accuracy_at_k([P(["A", "B"])], [["A", "B"]], ks=(5,)).accuracy[5] == 0.0
    # three predicted parts for two gold parts: each gold part needs its own predicted part, any order
    rep = accuracy_at_k([P(["X", "B"], ["A"], ["Z"])], [["A", "B"]], ks=(1, 2))
    assert rep.accuracy == {1: 0.0, 2: 1.0}
    assert accuracy_at_k([P(["A"], ["A"], ["Z"])], [["A", "B"]], ks=(5,)).accuracy[5] == 0.0
    # alternative ids of one mention are a conjunction part: either is right
    assert accuracy_at_k([P(["B"])], [["A+B"]], ks=(1,)).acc1 == 1.0


def test_minus_one_skipped():
    preds = [P(["A"]), P(["A"]), P(["C"], ["A"])]
    rep = accuracy_at_k(preds, ["A", "-1", "-1|A"], ks=(1,))
    assert rep.n_total == 3 and rep.n_evaluated == 2 and rep.n_skipped == 1
    assert rep.ranks[1] is None
    assert rep.acc1 == 1.0  # the -1 part of the composite is ignored
    assert math.isnan(accuracy_at_k([P(["A"])], [""], ks=(1,)).acc1)


def test_alt_id_match_and_one_concept_per_rank():
    alt = {"MESH:D1": ["OMIM:100"]}
    assert accuracy_at_k([P(["MESH:D1"])], ["OMIM:100"], ks=(1,), alt_ids=alt).acc1 == 1.0
    assert accuracy_at_k([P(["MESH:D1"])], ["OMIM:100"], ks=(1,)).acc1 == 0.0
    # a rank holding two concepts (a name shared by both) is refused, not credited
    with pytest.raises(ValueError, match="one concept per rank"):
        accuracy_at_k([P(["MESH:D9,MESH:D1"])], ["MESH:D1"], ks=(1,))
    # the alt ids of another concept never give credit
    assert accuracy_at_k([P(["MESH:D9"])], ["OMIM:100"], ks=(1,), alt_ids=alt).acc1 == 0.0


def test_conjunction_any_piece():
    preds = [P(["A"]), P(["B"]), P(["C"])]
    rep = accuracy_at_k(preds, ["A+B", "A+B", "A+B"], ks=(1,))
    assert rep.ranks == [1, 1, 0]
    with pytest.raises(ValueError):
        accuracy_at_k(preds, ["A+B"] * 3, ks=(1,), conjunction="all")


def test_accepts_dataclasses_and_candidates():
    class C:
        uids = ("A",)
    rep = accuracy_at_k([MentionPrediction.parse([[C()]])], [GoldMention(("A",))], ks=(1,))
    assert rep.acc1 == 1.0
    with pytest.raises(ValueError):
        accuracy_at_k([P(["A"])], [], ks=(1,))


def test_refined_subset():
    train = ["heart attack", "pd"]
    test = ["heart attack", "renal failure", "renal failure", "renal failure", "pd", "fever"]
    gold = ["D1", "D2", "D2", "D3", "D4", "D5"]
    assert refined_subset(test, train, gold) == [1, 3, 5]
    assert refined_subset(test, train) == [1, 5]
    with pytest.raises(ValueError):
        refined_subset(test, train, gold[:2])
