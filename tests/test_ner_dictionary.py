"""The dictionary tagger on hand-made texts: what it must find, and what its guards keep out."""
from __future__ import annotations

from kgnorm.graph.views import ConceptNames, OntologySnapshot
from kgnorm.ner.dictionary import DictionaryDetector

NAMES = ["Alzheimer's disease", "breast cancer", "cancer", "breast cancer type 2", "ALL", "can",
         "MS", "multiple sclerosis", "ataxia-telangiectasia", "AT", "of", "the disease"]


def spans(detector: DictionaryDetector, text: str) -> list[tuple[int, int, str]]:
    (found,) = detector.detect([text])
    for s in found:
        assert text[s.start:s.end] == s.text  # offsets round-trip into the raw text
    return [(s.start, s.end, s.text) for s in found]


def test_longest_match_on_word_boundaries_with_punctuation_folded() -> None:
    d = DictionaryDetector(NAMES)
    text = "Familial breast  cancer type 2, breast-cancer and Alzheimer’s disease; cancers."
    got = spans(d, text)
    assert got == [(9, 30, "breast  cancer type 2"), (32, 45, "breast-cancer"),
                   (50, 69, "Alzheimer’s disease"), (71, 78, "cancers")]  # plurals fold: "cancers" is "cancer"
    assert spans(DictionaryDetector(NAMES, plurals=False), text)[-1] == (50, 69, "Alzheimer’s disease")


def test_short_names_keep_their_case_and_stop_words_are_never_names() -> None:
    d = DictionaryDetector(NAMES)
    text = "Children with ALL can walk; all of them. MS, ms and AT in Ataxia-Telangiectasia."
    got = [t for _, _, t in spans(d, text)]
    assert got == ["ALL", "MS", "AT", "Ataxia-Telangiectasia"]
    assert d.stats.stop_words == 1  # "can"; "the disease" is not all stop words
    assert d.stats.too_short == 1  # "of"


def test_overlaps_resolve_leftmost_then_longest() -> None:
    d = DictionaryDetector(["lung cancer", "cancer cell", "cancer cell line"])
    assert [t for _, _, t in spans(d, "lung cancer cell line")] == ["lung cancer"]
    assert [t for _, _, t in spans(d, "a cancer cell line")] == ["cancer cell line"]


def test_snapshot_names_and_empty_inputs() -> None:
    snap = OntologySnapshot("toy", "1", [ConceptNames("T:1", "Rett syndrome", ["RTT"], [])], [])
    d = DictionaryDetector.from_snapshot(snap, type="Disease")
    assert d.types == ("Disease",)
    out = d.detect(["RTT or Rett Syndrome", "", "nothing here"])
    assert [[(s.text, s.type) for s in doc] for doc in out] == [
        [("RTT", "Disease"), ("Rett Syndrome", "Disease")], [], []]
    assert DictionaryDetector([]).detect(["anything"]) == [[]]


def test_a_long_document_is_matched_in_one_pass() -> None:
    d = DictionaryDetector(NAMES)
    chunk = "No finding here. Multiple sclerosis was seen. "
    text = chunk * 20000  # ~1 MB
    found = d.detect([text])[0]
    assert len(found) == 20000
    assert all(text[s.start:s.end].lower() == "multiple sclerosis" for s in found)


def test_a_match_never_spans_a_bracket_or_a_clause_break() -> None:
    d = DictionaryDetector(["G6PD deficiency", "glucose-6-phosphate dehydrogenase deficiency", "fever"])
    text = "glucose-6-phosphate dehydrogenase (G6PD) deficiency; fever. G6PD deficiency"
    assert [t for _, _, t in spans(d, text)] == ["fever", "G6PD deficiency"]


def test_word_variants_learnt_from_the_ontology_meet_another_word_order() -> None:
    from kgnorm.graph.views import ConceptNames, OntologySnapshot

    # three concepts name the same organ by noun and adjective: "nasal" is a variant of "nose"
    concepts = [ConceptNames(f"X:{i}", f"Abnormality of the nose {w}", [f"Nasal {w} abnormality"], [])
                for i, w in enumerate(("tip", "bridge", "septum"))]
    concepts.append(ConceptNames("X:9", "Abnormality of the nose", [], []))
    d = DictionaryDetector.from_snapshot(OntologySnapshot("t", "1", concepts, []))
    assert [t for _, _, t in spans(d, "Two nasal abnormalities were seen.")] == ["nasal abnormalities"]
    plain = DictionaryDetector(n for c in concepts for n in c.all_names())  # no variants without concepts
    assert spans(plain, "Two nasal abnormalities were seen.") == []
