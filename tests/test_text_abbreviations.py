"""Schwartz-Hearst abbreviation detection; sentences are from the NCBI-disease train corpus."""
from __future__ import annotations

import pytest

from kgnorm.text.abbreviations import (abbreviations_from_mentions, best_long_form, document_abbreviations,
                                       expand, find_abbreviations)

APC = ("Most colon cancers arise from mutations in the gene encoding adenomatous polyposis coli "
       "(APC), a protein required for ubiquitin-mediated degradation of beta-catenin, but a small "
       "percentage of colon and some other cancers harbour beta-catenin-stabilizing mutations.")


@pytest.mark.parametrize("text,expected", [
    (APC, {"APC": "adenomatous polyposis coli"}),
    ("Familial Mediterranean fever (FMF) is a recessive disorder characterized by episodes of "
     "fever with serositis or synovitis.", {"FMF": "Familial Mediterranean fever"}),
    ("Autoimmune lymphoproliferative syndrome (ALPS) is a disorder of lymphocyte homeostasis and "
     "immunological tolerance.", {"ALPS": "Autoimmune lymphoproliferative syndrome"}),
    ("The presence of nebulin in a muscle specimen from a patient with Duchenne muscular "
     "dystrophy (DMD) due to a large deletion precludes the possibility that this protein is the "
     "DMD gene product.", {"DMD": "Duchenne muscular dystrophy"}),
    ("Three children are reported with typical cat eye syndrome (CES) and three more children "
     "with partial CES because of absence of coloboma.", {"CES": "cat eye syndrome"}),
    # hyphenated long form; the second parenthesis is not an abbreviation
    ("Mutations in the ATM gene are responsible for the autosomal recessive disorder "
     "ataxia-telangiectasia (A-T) (MIM 208900).", {"A-T": "ataxia-telangiectasia"}),
    # "SF (long form)" pattern
    ("Rearrangement of the BCL1 (B-cell lymphoma 1) region on chromosome 11q13 appears to be "
     "highly characteristic of centrocytic lymphoma.", {"BCL1": "B-cell lymphoma 1"}),
    ("Allelic loss occur in tumors in FAP (familial adenomatous polyposis).",
     {"FAP": "familial adenomatous polyposis"}),
])
def test_find_abbreviations_ncbi_train(text: str, expected: dict[str, str]) -> None:
    assert find_abbreviations(text) == expected


def test_rejections() -> None:
    # no matching letters ("C7" needs a 7), a parenthetical that is not an abbreviation, a long
    # form starting with a function word, and a case variant of the short form
    assert find_abbreviations("a complete absence of the seventh component of complement "
                              "(C7).") == {}
    assert find_abbreviations("The relatives (parents and one sister) had half-normal "
                              "levels.") == {}
    assert find_abbreviations("AMN (and its companion, adrenoleukodystrophy) occurs.") == {}
    assert find_abbreviations("mutations in ATP7B (Atp7b) cause it.") == {}
    assert find_abbreviations("no parentheses here") == {}
    assert find_abbreviations("unclosed (APC") == {}


def test_long_form_bounded_by_sentence_and_word_limit() -> None:
    text = "Colon cancer is common. Adenomatous polyposis coli (APC) is a gene."
    assert find_abbreviations(text) == {"APC": "Adenomatous polyposis coli"}
    # |SF| = 2 -> at most 4 words between the definition and the letters
    assert find_abbreviations("hereditary one two three four nonpolyposis (HN)") == {}


def test_first_definition_wins() -> None:
    text = ("familial adenomatous polyposis (FAP) is common. Later familial amyloidotic "
            "polyneuropathy (FAP) is unrelated.")
    assert find_abbreviations(text) == {"FAP": "familial adenomatous polyposis"}


def test_best_long_form_shortest_match_at_word_start() -> None:
    assert best_long_form("CES", "reported with typical cat eye syndrome") == "cat eye syndrome"
    # the published algorithm takes the shortest fit: both H's lie in one word
    assert best_long_form("HH", "patients with hereditary hemochromatosis") == "hemochromatosis"
    # the first SF character must start a word: the inner 'a' of "adenomatous" does not count
    assert best_long_form("AC", "adenomatous polyposis coli") == "adenomatous polyposis coli"
    assert best_long_form("XYZ", "nothing matches here") is None


def test_expand() -> None:
    abbr = find_abbreviations(APC)
    assert expand("APC", abbr) == "adenomatous polyposis coli"
    assert expand("APC tumor", abbr) == "adenomatous polyposis coli tumor"
    assert expand("familial APC", abbr) == "familial adenomatous polyposis coli"
    assert expand("APC-associated polyposis", abbr) == \
        "adenomatous polyposis coli-associated polyposis"
    # real NCBI train mention that spells the long form out already
    assert expand("adenomatous polyposis coli (APC) tumour", abbr) == \
        "adenomatous polyposis coli (APC) tumour"
    # whole tokens, case-sensitive
    assert expand("apc and CAPC", abbr) == "apc and CAPC"
    # a plural short form reads through its singular (issue 14)
    assert expand("APCs", abbr) == "adenomatous polyposis coli"
    assert expand("APC", None) == "APC" and expand("APC", {}) == "APC"


def test_expand_prefers_longer_short_form_and_is_single_pass() -> None:
    abbr = {"HD": "Huntington disease", "HD-like": "Huntington disease-like", "X": "HD"}
    assert expand("HD-like 2", abbr) == "Huntington disease-like 2"
    assert expand("X", abbr) == "HD"


# ------------------------------------------------- documents without text (BioSyn .concept)
# (text, start, end) of the mentions of BC5CDR-disease train documents

def test_mentions_definition_site_lf_sf() -> None:
    pmid_10091617 = [("postural hypotension", 19, 39), ("Parkinson's disease", 43, 62),
                     ("Parkinson's disease", 247, 266), ("PD", 268, 270), ("PD", 1035, 1037)]
    assert abbreviations_from_mentions(pmid_10091617) == {"PD": "Parkinson's disease"}
    pmid_11706060 = [("cardiomyopathy", 169, 183), ("CM", 185, 187), ("AIDS", 228, 232)]
    assert abbreviations_from_mentions(pmid_11706060) == {"CM": "cardiomyopathy"}


def test_mentions_long_form_inside_a_longer_mention() -> None:
    # "aneurysmal subarachnoid hemorrhage (SAH)": the long form is the mention's tail
    got = abbreviations_from_mentions([("aneurysmal subarachnoid hemorrhage", 327, 361),
                                       ("SAH", 363, 366), ("SAH", 605, 608)])
    assert got == {"SAH": "subarachnoid hemorrhage"}


def test_mentions_partly_annotated_definition() -> None:
    # "... mood disorder (CIMD)": only the head "mood disorder" is a disease mention
    pmid_10365197 = [("mood disorder", 16, 29), ("mood disorders", 232, 246),
                     ("mood disorder", 303, 316), ("CIMD", 318, 322)]
    assert abbreviations_from_mentions(pmid_10365197) == {"CIMD": "mood disorder"}
    # the head's initials must end the short form: "AIDS" is not "... cardiomyopathy"
    assert abbreviations_from_mentions([("cardiomyopathy", 10, 24), ("AIDS", 26, 30)]) == {}


def test_mentions_definition_site_by_first_letter() -> None:
    # chemical short forms spelled from another name: "cyclosporine (CsA)", "cisplatin (CDDP)"
    assert abbreviations_from_mentions([("cyclosporine", 210, 222), ("CsA", 224, 227),
                                        ("CsA", 487, 490)]) == {"CsA": "cyclosporine"}
    assert abbreviations_from_mentions([("cisplatin", 0, 9), ("CDDP", 11, 15)]) == {"CDDP": "cisplatin"}
    # a word is not a short form, nor a SF with another first letter
    assert abbreviations_from_mentions([("peripheral neurotoxicity", 0, 24), ("Pain", 26, 30)]) == {}
    assert abbreviations_from_mentions([("etoposide", 0, 9), ("VP-16", 11, 16)]) == {}
    text = "Patients on cyclosporine (CsA) were switched. CsA levels fell."
    spans = [("cyclosporine", 12, 24), ("CsA", 26, 29), ("CsA", 46, 49)]
    assert document_abbreviations("", text, spans)["CsA"] == "cyclosporine"


def test_mentions_far_from_definition_need_exact_initials() -> None:
    # a short form whose definition was not annotated next to it: the word initials of
    # exactly one other mention of the document
    got = abbreviations_from_mentions([("ventricular septal defects", 1474, 1500),
                                       ("midline defects", 1512, 1527), ("MDs", 1573, 1576),
                                       ("VSD", 1800, 1803)])
    assert got == {"MDs": "midline defects", "VSD": "ventricular septal defects"}
    # ambiguous initials resolve nothing; neither does a lower-case word or a far mention
    assert abbreviations_from_mentions([("myocardial infarction", 0, 21),
                                        ("mitral insufficiency", 40, 60), ("MI", 90, 92)]) == {}
    assert abbreviations_from_mentions([("renal failure", 0, 13), ("rf", 40, 42)]) == {}
    assert abbreviations_from_mentions([("renal failure", 0, 13), ("RF", 40, 42)]) == {"RF": "renal failure"}
    assert abbreviations_from_mentions([]) == {}


# ---- issue 14: classes Schwartz-Hearst misses (sentences from NCBI-disease train abstracts)
def test_reordered_letters() -> None:
    from kgnorm.text.abbreviations import find_abbreviations

    text = "Cis and trans effects of the myotonic dystrophy (DM) mutation in a cell culture model."
    assert find_abbreviations(text) == {"DM": "myotonic dystrophy"}
    # the letters must be exactly the initials: "cleft lip (PC)" defines nothing
    assert find_abbreviations("a cleft lip (PC) was seen") == {}


def test_several_short_forms_in_one_parenthesis() -> None:
    from kgnorm.text.abbreviations import find_abbreviations

    assert find_abbreviations("We studied over 300 patients suffering from Duchenne or Becker muscular "
                              "dystrophy (DMD or BMD) in this study.") == {
        "DMD": "Duchenne muscular dystrophy", "BMD": "Becker muscular dystrophy"}
    assert find_abbreviations("Deletions cause velo-cardio-facial syndrome/DiGeorge syndrome (VCFS/DGS) in "
                              "most patients.") == {"VCFS": "velo-cardio-facial syndrome", "DGS": "DiGeorge syndrome"}
    assert find_abbreviations("Spinocerebellar ataxia type-3 or Machado-Joseph disease (SCA3/MJD) is an "
                              "autosomal dominant disorder.") == {"SCA3": "Spinocerebellar ataxia type-3",
                                                                  "MJD": "Machado-Joseph disease"}


def test_plural_short_forms() -> None:
    from kgnorm.text.abbreviations import find_abbreviations

    got = find_abbreviations("Areas of congenital hypertrophy of the retinal pigment epithelium (CHRPEs) are "
                             "a marker.")
    lf = "congenital hypertrophy of the retinal pigment epithelium"
    assert got == {"CHRPEs": lf, "CHRPE": lf}
    assert expand("multiple CHRPEs", {"CHRPE": lf}) == "multiple " + lf
    assert expand("RCCs", {"RCC": "renal cell carcinoma"}) == "renal cell carcinoma"
    assert expand("RCCs", {}) == "RCCs"


def test_definition_in_the_title_or_another_mention() -> None:
    from kgnorm.text.abbreviations import document_abbreviations

    title = "Germ-line mutations of the adenomatous polyposis coli gene in familial polyposis."
    text = title + " Mutations of APC were found in 20 of 25 patients."
    assert document_abbreviations(title, text, [("APC", 96, 99)]) == {"APC": "adenomatous polyposis coli"}
    # an SF the text defines keeps the text's long form; an SF nobody spells stays unresolved
    text2 = title + " The adenomatous polyposis coli (APC) gene and VHL."
    got = document_abbreviations(title, text2, [("APC", 0, 3), ("VHL", 9, 12)])
    assert got == {"APC": "adenomatous polyposis coli"}
    # another mention's initials (the .concept rule) apply to documents with text too
    got = document_abbreviations("A title.", "A title. Ventricular septal defects were common; VSD was",
                                 [("Ventricular septal defects", 9, 35), ("VSD", 50, 53)])
    assert got == {"VSD": "Ventricular septal defects"}
