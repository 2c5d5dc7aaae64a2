"""The trained detector's inference-time levers (kgnorm.ner.refine) and BIO repair, on hand-made
texts, tags and spans."""
from __future__ import annotations

import pytest

from kgnorm.ner.bio import LabelSet, tags_to_spans
from kgnorm.ner.dictionary import DictionaryDetector
from kgnorm.ner.refine import SpanRefinements, abbreviation_spans, dictionary_union, refine_spans
from kgnorm.ner.spans import Span

LABELS = LabelSet(("Disease",))
B, I, O = LABELS.begin("Disease"), LABELS.inside("Disease"), 0


def _words(text: str) -> list[tuple[int, int]]:
    import re

    return [m.span() for m in re.finditer(r"\S+", text)]


@pytest.mark.parametrize("repair,want", [
    ("lenient", ["renal failure", "heart", "attack"]),   # the I after O starts a span
    ("drop", ["renal failure", "heart"]),                # ... or is read as O
    ("bridge", ["renal failure", "heart of attack"]),    # ... or joins the span one O before
])
def test_bio_repair_reads_an_ill_formed_i(repair, want):
    text = "renal failure and heart of attack"
    tags = [B, I, O, B, O, I]
    spans = tags_to_spans(text, _words(text), tags, [0.9] * 6, LABELS, repair)
    assert [s.text for s in spans] == want
    assert all(text[s.start:s.end] == s.text for s in spans)


def test_bio_repair_keeps_well_formed_sequences_and_refuses_unknown_modes():
    text = "acute renal failure"
    for repair in ("lenient", "drop", "bridge"):
        assert [s.text for s in tags_to_spans(text, _words(text), [B, I, I], [1.0] * 3, LABELS, repair)] == [text]
    with pytest.raises(ValueError, match="unknown BIO repair"):
        tags_to_spans(text, _words(text), [B, I, I], [1.0] * 3, LABELS, "fix")


def _span(text: str, sub: str, nth: int = 0) -> Span:
    start = -1
    for _ in range(nth + 1):
        start = text.index(sub, start + 1)
    return Span(start, start + len(sub), sub, "Disease")


def test_abbreviations_tag_defined_short_forms_and_long_forms_of_found_short_forms():
    text = "Carriers of ataxia telangiectasia (AT) are rare. AT is recessive; at home, AT worsens."
    got = abbreviation_spans(text, [_span(text, "ataxia telangiectasia")])
    assert [(s.text, s.start) for s in got] == [("ataxia telangiectasia", 12), ("AT", 35), ("AT", 49),
                                                ("AT", 75)]  # "at" (lower case) is not the short form
    # vice versa: only the short form was found; its long form (any case) is tagged too
    text2 = "Ataxia telangiectasia (AT) is rare; AT is recessive."
    got2 = abbreviation_spans(text2, [_span(text2, "AT", 1)])
    assert [s.text for s in got2] == ["Ataxia telangiectasia", "AT"]
    assert all(t[s.start:s.end] == s.text for t, ss in ((text, got), (text2, got2)) for s in ss)


def test_dictionary_union_adds_multiword_matches_that_overlap_nothing():
    text = "Breast cancer and renal failure, not fever, with heart attack."
    dictionary = DictionaryDetector(["breast cancer", "renal failure", "fever", "heart attack"])
    found = [_span(text, "renal")]  # the detector found half a name: its match overlaps, so it stays out
    got = dictionary_union(found, dictionary.detect([text])[0])
    assert [s.text for s in got] == ["Breast cancer", "renal", "heart attack"]  # one-word "fever" is not added


def test_refine_order_and_defaults():
    text = "Heart attack (HA) and heart attack again; HA twice."
    dictionary = DictionaryDetector(["heart attack"])
    none = refine_spans([text], [[]], SpanRefinements(), dictionary)
    assert none == [[]]  # the default levers change nothing
    # the dictionary adds the long form, then its defined short form and the repeats follow
    got = refine_spans([text], [[]], SpanRefinements(dictionary=True, abbreviations=True, propagate=True), dictionary)[0]
    assert [s.text for s in got] == ["Heart attack", "HA", "heart attack", "HA"]
    assert SpanRefinements("drop", abbreviations=True).label() == "bio:drop+abbreviations"
