"""Document-level consistency in annotate: spans propagated (kgnorm.ner.propagate) and one concept
per document for mentions that say the same thing (kgnorm.linking.consistency.harmonize_document)."""
from __future__ import annotations

from kgnorm.linking.candidates import Hit, LinkedMention
from kgnorm.linking.consistency import harmonize_document
from kgnorm.mentions.types import Mention
from kgnorm.ner.propagate import propagate_spans
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


def test_linked_mentions_of_one_document_agree_unless_the_linker_is_confident():
    a = _lm("x", [("A", 0.90), ("B", 0.85)])
    b = _lm("x", [("A", 2.00), ("B", 0.50)])
    weak = _lm("x", [("B", 0.70), ("A", 0.65)])  # top-1 probability 0.51 < 0.9: adopts A
    sure = _lm("x", [("C", 5.00), ("A", 0.50)])  # top-1 probability 0.99: keeps C
    nil = _lm("x", [("A", 0.10)], nil=True)
    alone = _lm("y", [("B", 0.5)])
    alone.queries = ["other"]
    assert harmonize_document([a, b, weak, sure, nil, alone]) == 1
    assert [lm.parts[0][0].uid for lm in (a, b, weak, sure, nil, alone)] == ["A", "A", "A", "C", "A", "B"]
    assert nil.nil
    assert [h.uid for h in weak.parts[0]] == ["A", "B"]  # one concept per rank, same length
