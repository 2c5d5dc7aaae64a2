"""Document-level consistency (kgnorm.linking.doc_consistency) on hand-made spans and links."""
from __future__ import annotations

from kgnorm.linking.doc_consistency import harmonize, propagate_spans
from kgnorm.linking.candidates import Hit, LinkedMention
from kgnorm.mentions.types import Mention
from kgnorm.ner.spans import Span


def test_propagate_tags_other_occurrences_and_defined_short_forms():
    text = "Ataxia telangiectasia (AT) is rare. In AT, ataxia telangiectasia cells and ATM (not AT-rich) differ."
    first = Span(0, 21, "Ataxia telangiectasia", "Disease")
    out = propagate_spans(text, [first], {"AT": "ataxia telangiectasia"})
    got = [(s.start, s.end, s.text) for s in out]
    at = [i for i in range(len(text)) if text.startswith("AT", i)]
    # "AT" in "(AT)" and "In AT," are words; "ATM" is not; "AT-rich" is (a hyphen is a boundary);
    # the lower-case second long form differs in case from the detected one, so it is not added
    assert got == [(0, 21, "Ataxia telangiectasia"), (at[0], at[0] + 2, "AT"), (at[1], at[1] + 2, "AT"),
                   (at[3], at[3] + 2, "AT")]
    assert propagate_spans(text, [], {"AT": "x"}) == []


def _lm(text: str, hits: list[tuple[str, float]], nil: bool = False) -> LinkedMention:
    return LinkedMention(Mention(text=text), ["q"], [[Hit(u, u, s) for u, s in hits]], nil)


def test_harmonize_votes_by_summed_score_and_keeps_confident_members():
    a = _lm("x", [("A", 0.90), ("B", 0.85)])
    b = _lm("x", [("A", 0.80), ("B", 0.79)])
    weak = _lm("x", [("B", 0.70), ("A", 0.65)])  # margin 0.05 < 0.1: adopts A
    sure = _lm("x", [("C", 0.99), ("A", 0.50)])  # margin 0.49: keeps C
    nil = _lm("x", [("A", 0.10)], nil=True)
    alone = _lm("y", [("B", 0.5)])
    alone.queries = ["other"]
    assert harmonize([a, b, weak, sure, nil, alone], margin=0.1) == 2
    assert [lm.parts[0][0].uid for lm in (a, b, weak, sure, nil, alone)] == ["A", "A", "A", "C", "A", "B"]
    assert not nil.nil
