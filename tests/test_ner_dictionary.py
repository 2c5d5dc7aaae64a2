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


def test_spans_say_which_concepts_their_name_names() -> None:
    d = DictionaryDetector([("Renal cyst", "X:1"), ("Kidney cyst", "X:1"), ("Fever", "X:2"), ("Fever", "X:3"),
                            ("Abnormality of the thumb", "X:4")], ontology="t")
    (found,) = d.detect(["Renal cysts, fever and thumb abnormalities."])
    got = [(s.text, [c.uid for c in s.concepts], s.name, s.exact) for s in found]
    assert got == [("Renal cysts", ["X:1"], "Renal cyst", True), ("fever", ["X:2", "X:3"], "Fever", True),
                   ("thumb abnormalities", ["X:4"], "Abnormality of the thumb", False)]
    assert {c.ontology for s in found for c in s.concepts} == {"t"}
    # names without their concepts: spans with none, as before
    assert [s.concepts for s in DictionaryDetector(["Fever"]).detect(["fever"])[0]] == [()]


def _snapshot(rows: list[tuple[str, str, list[str], str | None]]) -> OntologySnapshot:
    concepts = [ConceptNames(uid, name, syns, []) for uid, name, syns, _ in rows]
    return OntologySnapshot("t", "1", concepts, [(uid, parent) for uid, _, _, parent in rows if parent])


def test_a_modifier_the_ontology_puts_before_a_parent_name_may_be_left_out() -> None:
    snap = _snapshot([("X:0", "Abnormality", [], None),
                      ("X:1", "Fever", [], "X:0"), ("X:2", "Recurrent fever", [], "X:1"),
                      ("X:3", "Cough", [], "X:0"), ("X:4", "Recurrent cough", [], "X:3"),
                      ("X:5", "Skin abnormality", [], "X:0"), ("X:6", "Recurrent skin lesion", [], "X:5"),
                      ("X:7", "Recurrent kidney stone", [], "X:0"), ("X:8", "Kidney stone", [], "X:0")])
    d = DictionaryDetector.from_snapshot(snap, modifiers=False)
    assert d.learn_modifiers({c.uid: c.all_names() for c in snap.concepts}, snap.is_a, min_count=2) == ["recurrent"]
    (found,) = d.detect(["Skin lesions, kidney stones and recurrent coughs."])
    got = [(s.text, [c.uid for c in s.concepts], s.exact) for s in found]
    # "skin lesion" is no name: it is "Recurrent skin lesion" without its modifier; "kidney stone" is a name
    assert got == [("Skin lesions", ["X:6"], False), ("kidney stones", ["X:8"], True),
                   ("recurrent coughs", ["X:4"], True)]
    once = DictionaryDetector.from_snapshot(snap, modifiers=False)
    assert once.learn_modifiers({c.uid: c.all_names() for c in snap.concepts}, snap.is_a, min_count=3) == []


def test_a_name_of_a_concept_and_of_its_descendant_names_the_ancestor() -> None:
    snap = _snapshot([("X:1", "Abnormality of the ear", ["Ear anomaly"], None),
                      ("X:2", "Abnormality of the outer ear", ["Ear anomalies"], "X:1"),
                      ("X:3", "Otitis", ["Ear anomaly"], None)])
    d = DictionaryDetector.from_snapshot(snap)
    (found,) = d.detect(["ear anomalies"])
    # the child's synonym says no more than its parent's; an unrelated concept with the name stays
    assert [c.uid for c in found[0].concepts] == ["X:1", "X:3"]


def test_commas_hyphenated_acronyms_and_participles() -> None:
    d = DictionaryDetector(["Cleft lip", "Diabetes mellitus, type 2", "S4", "Bridged sella turcica", "Ordering"])
    text = "Clefts, lip pits and cleft lips; diabetes mellitus, type 2. L5-S4 spina bifida; an S4 gallop."
    assert [t for _, _, t in spans(d, text)] == ["cleft lips", "diabetes mellitus, type 2", "S4"]
    # a participle meets another in the other-word-order matching only (two content words or more)
    assert [t for _, _, t in spans(d, "Bridging of the sella turcica, in order.")] == ["Bridging of the sella turcica"]
    assert spans(DictionaryDetector(["Bridged sella turcica"], participles=False), "bridging of sella turcica") == []


def test_stop_words_are_scikit_learns_read_without_importing_it():
    """The guard's stop words are scikit-learn's list, read from its file: building a tagger (and
    checking annotate's detector precision) imports neither scikit-learn nor torch (1.1 CPU-s each)."""
    import subprocess
    import sys

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from kgnorm.ner.dictionary import _stop_words

    assert _stop_words() == frozenset(ENGLISH_STOP_WORDS)
    code = ("import sys; from kgnorm.ner.dictionary import DictionaryDetector; "
            "from kgnorm.methods.ner.precision import resolve_precision; resolve_precision('auto'); "
            "DictionaryDetector(['all', 'breast cancer']); "
            "print(sorted(m for m in ('sklearn', 'torch') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_match_inside_a_hyphenated_word_and_an_ing_adjective_are_no_mentions() -> None:
    d = DictionaryDetector(["Tooth disease", "Collecting", "Vomiting", "Kidney cyst", "Nervous system disease"])
    text = ("Charcot-Marie-Tooth disease; tooth disease. The collecting ducts, collecting system, kidney cysts; "
            "vomiting was frequent, vomiting 2 hours later.")
    # "collecting" qualifies a noun ("ducts"; "system", a stop word but a word of the names);
    # "vomiting" before a stop word ("was") stays a mention
    assert [t for _, _, t in spans(d, text)] == ["tooth disease", "kidney cysts", "vomiting", "vomiting"]


def test_a_prefix_matches_set_off_by_a_hyphen_or_joined() -> None:
    d = DictionaryDetector(["Preauricular pit", "Auricular pit", "Pre-eclampsia", "Eclampsia"])
    text = "Pre-auricular pits and auricular pits; preeclampsia and pre-eclampsia."
    assert [t for _, _, t in spans(d, text)] == ["Pre-auricular pits", "auricular pits", "preeclampsia",
                                                  "pre-eclampsia"]
    # the word after a prefix must be a word of the names: "pre" + "tty" is no spelling of "Pretty"
    assert spans(DictionaryDetector(["Pretty face"]), "pre-tty face") == []


def test_each_conjunct_of_a_coordination_makes_its_name_with_the_shared_words() -> None:
    snap = _snapshot([("X:1", "Plantar pits", [], None), ("X:2", "Palmar pits", [], None),
                      ("X:3", "Renal anomaly", [], None), ("X:4", "Branchial anomaly", [], None),
                      ("X:5", "Hypopigmentation of skin", [], None), ("X:6", "Hypopigmentation of hair", [], None),
                      ("X:7", "Posterior subcapsular cataract", [], None), ("X:8", "Capsular cataract", [], None),
                      ("X:9", "Patellar dysplasia", [], None), ("X:10", "Patellar abnormality", [], None)])
    d = DictionaryDetector.from_snapshot(snap)
    text = ("Palmar and plantar pits; branchial, otic and renal anomalies; hypopigmentation of skin or hair. "
            "Posterior subcapsular or capsular cataract; patellar dysplasia and abnormality of gait.")
    (found,) = d.detect([text])
    got = [(s.text, [c.uid for c in s.concepts], s.reading) for s in found]
    assert got == [("Palmar and plantar pits", ["X:2"], "Palmar pits"), ("plantar pits", ["X:1"], ""),
                   ("branchial, otic and renal anomalies", ["X:4"], "branchial anomalies"),
                   ("renal anomalies", ["X:3"], ""),
                   ("hypopigmentation of skin or hair", ["X:6"], "hypopigmentation of hair"),
                   ("hypopigmentation of skin", ["X:5"], ""),
                   ("Posterior subcapsular or capsular cataract", ["X:7"], "Posterior subcapsular cataract"),
                   ("capsular cataract", ["X:8"], ""),
                   ("patellar dysplasia", ["X:9"], "")]  # "abnormality" goes on: no conjunct of its own
    assert [s.text for s in DictionaryDetector.from_snapshot(snap, coordinations=False).detect([text])[0]] == \
        ["plantar pits", "renal anomalies", "hypopigmentation of skin", "capsular cataract", "patellar dysplasia"]


def test_generic_nouns_of_clinical_writing_read_as_the_ontologys_abnormality() -> None:
    # the ontology pairs "abnormality" with "anomaly" in three concepts: a word variant class
    snap = _snapshot([("X:1", "Skin abnormality", ["Skin anomaly"], None),
                      ("X:2", "Eye abnormality", ["Eye anomaly"], None),
                      ("X:3", "Ear abnormality", ["Ear anomaly"], None)])
    d = DictionaryDetector.from_snapshot(snap)
    (found,) = d.detect(["Skin manifestations and ocular signs; the features of the ear."])
    assert [(s.text, [c.uid for c in s.concepts]) for s in found] == [
        ("Skin manifestations", ["X:1"]), ("features of the ear", ["X:3"])]


def test_greek_neuters_fold_with_their_plurals_in_a() -> None:
    from kgnorm.text.inflection import singular

    assert {singular(w) for w in ("acrochordon", "acrochordons", "acrochorda")} == {"acrochorda"}
    assert singular("ganglion") == singular("ganglia")
    # short words and -tion/-sion nouns are kept apart from a word in -a
    assert singular("common") != singular("comma") and singular("serration") != singular("serratia")
    d = DictionaryDetector(["Acrochorda", "Ganglion cyst"])
    assert [t for _, _, t in spans(d, "Acrochordons and ganglia cysts.")] == ["Acrochordons", "ganglia cysts"]


def test_another_word_order_prefers_the_name_with_the_words_as_written_and_ends_its_phrase() -> None:
    # "malformation" joins "abnormality" in a variant class (three concepts pair them)
    snap = _snapshot([("X:1", "Abnormality of the kidney", [], None), ("X:2", "Kidney malformation", [], "X:1"),
                      ("X:3", "Abnormality of the eye", ["Eye malformation"], None),
                      ("X:4", "Abnormality of the ear", ["Ear malformation"], None),
                      ("X:5", "Abnormality of the hand", ["Hand malformation"], None),
                      ("X:6", "Abnormality of the thumb", [], None), ("X:7", "Thumb nail", [], None)])
    d = DictionaryDetector.from_snapshot(snap)
    (found,) = d.detect(["Malformations of the kidney, kidney abnormalities; thumb abnormalities, "
                         "an abnormality of thumb nail."])
    got = [(s.text, [c.uid for c in s.concepts]) for s in found]
    # the last: "abnormality of thumb" (another order: no "the") goes on into "nail", a word of the names: no match of its own
    assert got == [("Malformations of the kidney", ["X:2"]), ("kidney abnormalities", ["X:1"]),
                   ("thumb abnormalities", ["X:6"]), ("thumb nail", ["X:7"])]
