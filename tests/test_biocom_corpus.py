"""BioCoM corpus builder: longest dictionary match, per-concept cap, manifest, bad input."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from kgnorm.methods.biocom.corpus import (CORPUS_JSON, COUNTS_FILE, NAMES_FILE, SENTENCES_FILE,
                                  NameMatcher, build_corpus, check_corpus,
                                  dictionary_entries, load_corpus, name_tokens)
from kgnorm.errors import InputError, KgnormError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph


def spans(matcher: NameMatcher, text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(text[m.start:m.end], m.uids) for m in matcher.find(text)]


DICT = {
    "U:OC": ["Ovarian cancer", "ovarian carcinoma"],
    "U:BOC": ["Breast and ovarian cancer"],
    "U:C": ["Cancer"],
    "U:G6PD": ["Glucose-6-phosphate dehydrogenase deficiency", "G6PD deficiency"],
    "U:DMD": ["Duchenne muscular dystrophy", "DMD"],
    "U:ALL": ["Acute lymphoblastic leukemia", "ALL"],
    "U:AD": ["Alzheimer's disease"],
    "U:BC": ["breast cancer"],
}


@pytest.fixture(scope="module")
def matcher() -> NameMatcher:
    return NameMatcher(DICT.items())


def test_longest_match_wins_over_contained_names(matcher):
    got = spans(matcher, "Familial breast and ovarian cancer is rare.")
    assert got == [("breast and ovarian cancer", ("U:BOC",))]


def test_overlapping_matches_keep_the_longest_not_the_leftmost():
    m = NameMatcher({"U:AB": ["alpha beta"], "U:BCD": ["beta gamma delta"]}.items())
    assert spans(m, "x alpha beta gamma delta y") == [("beta gamma delta", ("U:BCD",))]
    # non-overlapping matches are all kept, in text order
    assert spans(m, "alpha beta and beta gamma delta") == [
        ("alpha beta", ("U:AB",)), ("beta gamma delta", ("U:BCD",))]


def test_whole_tokens_only_no_plural_or_substring(matcher):
    # decided: "ovarian cancer" does not match inside "ovarian cancers"
    assert spans(matcher, "Ovarian cancers were studied.") == []
    assert spans(matcher, "A precancerous lesion.") == []
    assert spans(matcher, "OVARIAN CANCER and ovarian carcinoma") == [
        ("OVARIAN CANCER", ("U:OC",)), ("ovarian carcinoma", ("U:OC",))]


def test_punctuation_inside_names_is_free_but_hard_gaps_block(matcher):
    text = "Red cells with glucose 6-phosphate dehydrogenase deficiency."
    assert spans(matcher, text) == [("glucose 6-phosphate dehydrogenase deficiency",
                                     ("U:G6PD",))]
    assert spans(matcher, "ALZHEIMER'S DISEASE") == [("ALZHEIMER'S DISEASE", ("U:AD",))]
    assert spans(matcher, "Alzheimer disease") == []
    # a comma / parenthesis between tokens stops a match (lists, inverted names)
    assert spans(matcher, "risk of breast, cancer") == [("cancer", ("U:C",))]
    assert spans(matcher, "breast (cancer)") == [("cancer", ("U:C",))]


def test_acronyms_match_their_capitalisation_only(matcher):
    assert spans(matcher, "Boys with DMD and ALL.") == [("DMD", ("U:DMD",)),
                                                        ("ALL", ("U:ALL",))]
    assert spans(matcher, "all dmd") == []


def test_ambiguous_names_take_their_span_without_a_label():
    m = NameMatcher([("U:1", ["cold sore"]), ("U:2", ["cold sore"]), ("U:3", ["sore"])])
    got = m.find("a cold sore today")
    assert [(g.uids, g.n_tokens) for g in got] == [(("U:1", "U:2"), 2)]
    assert m.ambiguous_names == 1


def test_dictionary_entries_accepts_graphs_records_and_pairs():
    g = OntologyGraph(name="toy", format="obo", source_path="x", version="v1")
    g.add_concept(Concept(uid="T:1", code="1", name="Foo", synonyms=["Bar"]))
    g.add_concept(Concept(uid="T:2", code="2", name="Old", obsolete=True))
    assert dictionary_entries(g) == [("T:1", ["Foo", "Bar"])]
    assert dictionary_entries([{"uid": "T:1", "name": "Foo", "synonyms": ["Bar"]}]) == \
        [("T:1", ["Foo", "Bar"])]
    assert dictionary_entries({"T:1": "Foo"}) == [("T:1", ["Foo"])]
    assert name_tokens("Fictional&apos;s Disease") == ("fictional", "s", "disease")


PUBTATOR = """\
100|t|Ovarian cancer in families.
100|a|We studied breast and ovarian cancer. G6PD deficiency was absent! Boys had DMD.
100\t0\t14\tOvarian cancer\tDisease\tD010051

200|t|A second title about ovarian carcinoma
200|a|Ovarian cancer again. Nothing else here.
"""


def test_build_corpus_rows_manifest_and_counts(tmp_path):
    pt = tmp_path / "docs.pubtator"
    pt.write_text(PUBTATOR, encoding="utf-8")
    txt = tmp_path / "plain.txt"
    txt.write_text("First line mentions Duchenne muscular dystrophy. Second one too.\n\n"
                   "Ovarian cancer in plain text.\n", encoding="utf-8")
    out = tmp_path / "corpus"
    s = build_corpus(DICT, [pt, txt], out, ontology="toy", version="2024-01")
    t = pq.read_table(out / SENTENCES_FILE).to_pylist()
    assert s.rows == len(t) and s.documents == 4
    for r in t:
        assert r["sentence"][r["start"]:r["end"]] == r["mention"]
    by = {(r["doc_id"], r["mention"]): r for r in t}
    # the title/abstract seam is a sentence break; offsets are within the sentence
    assert by[("100", "Ovarian cancer")]["sentence"] == "Ovarian cancer in families."
    assert by[("100", "breast and ovarian cancer")]["uid"] == "U:BOC"
    assert by[("100", "G6PD deficiency")]["name"] == "G6PD deficiency"
    assert by[("200", "ovarian carcinoma")]["name"] == "ovarian carcinoma"
    assert by[("plain.txt:1", "Duchenne muscular dystrophy")]["sentence"] == \
        "First line mentions Duchenne muscular dystrophy."
    assert ("plain.txt:3", "Ovarian cancer") in by
    man = json.loads((out / CORPUS_JSON).read_text())
    assert man["ontology"] == {"name": "toy", "version": "2024-01"}
    assert man["cap"] == 20 and man["seed"] == 0
    assert man["counts"]["concepts_matched"] == 4   # OC, BOC, G6PD, DMD
    assert man["counts"]["matches"] == len(t)
    counts = (out / COUNTS_FILE).read_text().splitlines()
    assert counts[0] == "uid\tmatches\tkept"
    assert counts[1] == "U:OC\t4\t4"          # most matches first
    names = pq.read_table(out / NAMES_FILE).to_pylist()
    assert {"uid": "U:OC", "name": "Ovarian cancer", "preferred": True} in names
    c = load_corpus(out, "toy", "2024-01")
    assert len(c) == len(t) and c.names["U:OC"] == ["Ovarian cancer", "ovarian carcinoma"]


def _many(tmp_path, n=30):
    p = tmp_path / "many.txt"
    p.write_text("".join(f"Case {i} had ovarian cancer.\n" for i in range(n)), encoding="utf-8")
    return p


def test_cap_per_concept_is_a_seeded_sample(tmp_path):
    p = _many(tmp_path)

    def kept(seed, out):
        s = build_corpus(DICT, [p], tmp_path / out, ontology="toy", cap=5, seed=seed)
        rows = pq.read_table(tmp_path / out / SENTENCES_FILE).to_pylist()
        assert s.matches == 30 and len(rows) == 5
        return sorted(r["doc_id"] for r in rows)

    a, b, c = kept(0, "a"), kept(0, "b"), kept(1, "c")
    assert a == b and a != c
    assert (tmp_path / "a" / COUNTS_FILE).read_text().splitlines()[1] == "U:OC\t30\t5"
    # cap=None keeps everything; the reservoir is not biased to the first lines
    build_corpus(DICT, [p], tmp_path / "all", ontology="toy", cap=None)
    assert pq.read_table(tmp_path / "all" / SENTENCES_FILE).num_rows == 30
    assert max(int(d.split(":")[1]) for d in a) > 5


def test_undecodable_text_names_file_and_line(tmp_path):
    p = tmp_path / "latin1.txt"
    p.write_bytes("ovarian cancer\nCaf\xe9 ovarian cancer\n".encode("latin-1"))
    with pytest.raises(InputError) as ei:
        build_corpus(DICT, [p], tmp_path / "out", ontology="toy")
    assert str(p) in str(ei.value) and ":2" in str(ei.value)
    assert not (tmp_path / "out" / CORPUS_JSON).exists()


def test_dictionary_matching_nothing_is_an_error(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("Nothing relevant in this sentence.\n", encoding="utf-8")
    with pytest.raises(KgnormError, match="matched nothing"):
        build_corpus(DICT, [p], tmp_path / "out", ontology="toy")
    with pytest.raises(InputError, match="not found"):
        build_corpus(DICT, [tmp_path / "missing.txt"], tmp_path / "out", ontology="toy")


def test_check_corpus_rejects_other_ontology_or_version(tmp_path):
    p = _many(tmp_path, 3)
    out = tmp_path / "c"
    build_corpus(DICT, [p], out, ontology="medic", version="06Jul2012")
    assert check_corpus(out, "medic", "06Jul2012")["counts"]["rows"] == 3
    with pytest.raises(KgnormError) as ei:
        check_corpus(out, "medic", "2024-01")
    assert "06Jul2012" in str(ei.value) and "2024-01" in str(ei.value)
    with pytest.raises(KgnormError, match="mesh"):
        check_corpus(out, "mesh", None)
    with pytest.raises(KgnormError, match="not a BioCoM corpus"):
        check_corpus(tmp_path, "medic", None)


def test_document_abbreviations_label_their_short_forms(tmp_path):
    """A definition `long form (SF)` whose long form is a dictionary name labels the SF in
    its own document only; a local definition beats a dictionary acronym of the same span;
    a longer dictionary match keeps its span; off, the matcher alone runs."""
    d = {**DICT, "U:DM": ["Dystrophia myotonica", "DM"], "U:DIAB": ["Diabetes mellitus"],
         "U:DMT": ["DM type 2"]}
    p = tmp_path / "abbr.pubtator"
    p.write_text("1|t|Ovarian carcinoma (OVC) and diabetes mellitus (DM).\n"
                 "1|a|OVC recurs. DM boys. OVCs and xOVC are not OVC tokens. DM type 2 here.\n\n"
                 "2|t|OVC elsewhere means nothing.\n"
                 "2|a|DM is dystrophia here.\n\n", encoding="utf-8")
    s = build_corpus(d, [p], tmp_path / "on", ontology="toy", cap=None)
    rows = pq.read_table(tmp_path / "on" / SENTENCES_FILE).to_pylist()
    got = sorted((r["doc_id"], r["sentence"][r["start"]:r["end"]], r["uid"], r["name"]) for r in rows)
    assert got == sorted([
        ("1", "Ovarian carcinoma", "U:OC", "ovarian carcinoma"),
        ("1", "OVC", "U:OC", "ovarian carcinoma"),                 # the definition site
        ("1", "diabetes mellitus", "U:DIAB", "Diabetes mellitus"),
        ("1", "DM", "U:DIAB", "Diabetes mellitus"),                # local beats the acronym
        ("1", "OVC", "U:OC", "ovarian carcinoma"),                 # "OVC recurs."
        ("1", "DM", "U:DIAB", "Diabetes mellitus"),                # "DM boys."
        ("1", "OVC", "U:OC", "ovarian carcinoma"),                 # "... not OVC tokens."
        ("1", "DM type 2", "U:DMT", "DM type 2"),                  # the longer match keeps its span
        ("2", "DM", "U:DM", "DM"),                                 # doc 2: the dictionary's acronym
    ])
    assert s.manifest["abbreviations"] is True
    assert s.manifest["counts"]["abbreviation_matches"] == 5
    s_off = build_corpus(d, [p], tmp_path / "off", ontology="toy", cap=None, abbreviations=False)
    off = pq.read_table(tmp_path / "off" / SENTENCES_FILE).to_pylist()
    assert sorted((r["sentence"][r["start"]:r["end"]], r["uid"]) for r in off) == sorted(
        [("Ovarian carcinoma", "U:OC"), ("diabetes mellitus", "U:DIAB"), ("DM", "U:DM"),
         ("DM", "U:DM"), ("DM type 2", "U:DMT"), ("DM", "U:DM")])
    assert s_off.manifest["counts"]["abbreviation_matches"] == 0
