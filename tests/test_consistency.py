"""Document consistency (kgnorm.linking.consistency): mentions of one document that share a key get one
concept by a score-weighted vote; a confident link keeps its own; other documents are untouched."""
from __future__ import annotations

import pytest

from kgnorm.linking.consistency import consistency_on, consistent_stream, harmonize
from kgnorm.linking.linker import Hit, LinkedMention
from kgnorm.mentions.types import Mention


def H(*pairs):
    return [Hit(uid, uid, score) for uid, score in pairs]


def test_vote_moves_the_unsure_and_keeps_one_concept_per_rank():
    rankings = [H(("A", 2.0), ("B", 1.5), ("C", 0.0)),   # unsure, A
                H(("B", 3.0), ("A", 0.5), ("D", 0.0)),   # fairly sure, B
                H(("B", 2.0), ("A", 1.9), ("E", 0.0)),   # unsure, B
                H(("X", 1.0), ("Y", 0.9))]               # another key
    out = harmonize([["sjs"], ["stevens johnson syndrome", "sjs"], ["stevens johnson syndrome"], ["other"]],
                    rankings)
    assert [r[0].uid for r in out] == ["B", "B", "B", "X"]
    assert [h.uid for h in out[0]] == ["B", "A", "C"]  # the winner moved up, nothing repeated, length kept
    assert out[0][0].score == 1.5  # the item's own score for it
    assert out[3] == rankings[3]


def test_confident_link_keeps_its_own_and_missing_winner_is_borrowed():
    rankings = [H(("A", 10.0), ("B", 0.0)), H(("B", 2.0), ("C", 1.9)), H(("B", 2.0), ("C", 1.0))]
    out = harmonize([["k"], ["k"], ["k"]], rankings, confident=0.9)
    assert out[0][0].uid == "A"  # p(A) ~ 1.0 >= 0.9
    assert [r[0].uid for r in out[1:]] == ["B", "B"]
    out = harmonize([["k"], ["k"], ["k"]], [H(("C", 1.0), ("D", 0.9)), H(("B", 5.0)), H(("B", 5.0))], confident=1.1)
    assert [h.uid for h in out[0]] == ["B", "C"]  # borrowed from another item, length kept
    with pytest.raises(ValueError):
        harmonize([["k"]], [])


def _lm(doc, text, query, ranked, nil=False):
    return LinkedMention(Mention(text=text, doc_id=doc, start=0, end=len(text)), [query], [ranked], nil)


def test_stream_works_per_document():
    a = _lm("1", "SJS", "stevens johnson syndrome", H(("A", 2.0), ("B", 1.8)))
    b = _lm("1", "Stevens-Johnson syndrome", "stevens johnson syndrome", H(("B", 3.0), ("A", 1.0)))
    c = _lm("2", "SJS", "stevens johnson syndrome", H(("A", 2.0), ("B", 1.8)))  # alone in its document
    d = _lm("", "SJS", "stevens johnson syndrome", H(("A", 2.0), ("B", 1.8)))   # no document
    e = _lm("3", "sjs", "sjs", H(("A", 2.0), ("B", 1.8)))
    f = _lm("3", "SJS", "sjs", H(("B", 2.0), ("A", 1.8)), nil=True)              # nil: no vote, unchanged
    out = list(consistent_stream([a, b, c, d, e, f]))
    assert out == [a, b, c, d, e, f]
    assert [lm.parts[0][0].uid for lm in out] == ["B", "B", "A", "A", "A", "B"]


def test_default_follows_flag_then_model():
    assert consistency_on(True, {}) and not consistency_on(False, {"consistency": True})
    assert consistency_on(None, {"consistency": True})
