"""Readers for PubTator, .concept, TSV and name lists (fixtures: NCBI-disease train lines and
invented examples in the layouts of docs/formats.md; nothing is read from ../shared)."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from kgnorm.errors import InputError
from kgnorm.mentions.readers import (curie, doc_abbreviations, iter_lines, parse_gold,
                               read_concept, read_mentions, read_mentions_with_abbreviations,
                               read_names, read_pubtator, read_tsv, sentence_spans,
                               sniff_format)

# two real documents of the NCBI-disease training corpus (abstracts end with ".. ")
NCBI_TRAIN = (
    "1424237|t|Typical and partial cat eye syndrome: identification of the marker chromosome by FISH.\n"
    "1424237|a|Three children are reported with typical cat eye syndrome (CES) and three more "
    "children with partial CES because of absence of coloboma, in which the supernumerary marker "
    "chromosome was studied by FISH. Using a genomic library, and also a centromeric and "
    "particularly a cosmid probe of 22q11, partial tetrasomy was shown in all cases.. \n"
    "1424237\t20\t36\tcat eye syndrome\tSpecificDisease\tC535918|OMIM:115470\n"
    "1424237\t128\t144\tcat eye syndrome\tSpecificDisease\tC535918|OMIM:115470\n"
    "1424237\t146\t149\tCES\tSpecificDisease\tC535918|OMIM:115470\n"
    "1424237\t188\t191\tCES\tSpecificDisease\tC535918|OMIM:115470\n"
    "1424237\t388\t397\ttetrasomy\tDiseaseClass\tD058670\n"
    "\n"
    "2792129|t|Familial deficiency of the seventh component of complement associated with recurrent "
    "meningococcal infections.\n"
    "2792129|a|We describe an 11-year-old girl suffering from recurrent meningitis with a "
    "complete absence of the seventh component of complement (C7). Diagnosis was established by "
    "haemolytic titration and western blotting. The patients serum lacked the 85 kDa C7 chain. "
    "Haemolytic activity of serum was reconstituted with either pooled normal human serum or "
    "with purified C7. The relatives (parents and one sister) had half-normal levels of both "
    "immunochemically and functionally determined C7, indicating a heterozygous state for C7 "
    "deficiency.. \n"
    "2792129\t0\t58\tFamilial deficiency of the seventh component of complement\tSpecificDisease\tOMIM:610102\n"
    "2792129\t85\t109\tmeningococcal infections\tSpecificDisease\tD008589\n"
    "2792129\t158\t178\trecurrent meningitis\tSpecificDisease\tD008581+D012008\n"
    "2792129\t195\t240\tabsence of the seventh component of complemen\tSpecificDisease\tOMIM:610102\n"
    "2792129\t628\t641\tC7 deficiency\tSpecificDisease\tOMIM:610102\n"
)

# invented PubTator example: 7th column, -1, CID row, empty abstract, no final newline
FORMATS_PUBTATOR = (
    "99000001|t|Fictional syndrome and toe or finger syndrome in a made-up cohort.\n"
    "99000001|a|We describe invented patients treated with imaginol and glimmerex. "
    "Recurrent toe pain was common.\n"
    "99000001\t0\t18\tFictional syndrome\tDisease\tD900001\n"
    "99000001\t23\t45\ttoe or finger syndrome\tDisease\tD900002|D900003\ttoe syndrome|finger syndrome\n"
    "99000001\t110\t118\timaginol\tChemical\tC900009\n"
    "99000001\t123\t132\tglimmerex\tChemical\t-1\n"
    "99000001\t134\t152\tRecurrent toe pain\tDisease\tD900004+D900005\n"
    "99000001\tCID\tC900009\tD900001\n"
    "\n"
    "99000002|t|Another invented title.\n"
    "99000002|a|"
)

# invented .concept lines
CONCEPT = (
    "99000001||15|34||Disease||fictional syndrome||D900001\n"
    "99000001||40|62||Disease||toe or finger syndrome||D900002|D900003\n"
    "99000001||70|86||Disease||recurrent toe pain||D900004+D900005\n"
    "99000001||90|99||Disease||foo thing||-1\n"
)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8", newline="")
    return p


# ------------------------------------------------------------------ ids

@pytest.mark.parametrize("raw,expected", [
    ("D001943", "MESH:D001943"), ("C535918", "MESH:C535918"), ("C000656484", "MESH:C000656484"),
    ("OMIM:115470", "OMIM:115470"), ("MESH:D009369", "MESH:D009369"),
    ("mesh:D009369", "MESH:D009369"), ("MeSH:D009369", "MESH:D009369"), ("115470", "OMIM:115470"),
    ("C0011849", "UMLS:C0011849"), (" D001943 ", "MESH:D001943"), ("HP:0001250", "HP:0001250"),
    ("C", "MESH:C"), ("CHEBI:15377", "CHEBI:15377"),
])
def test_curie(raw: str, expected: str) -> None:
    assert curie(raw) == expected


@pytest.mark.parametrize("raw", ["", "-1", "MESH:"])
def test_curie_rejects(raw: str) -> None:
    with pytest.raises(ValueError):
        curie(raw)


def test_parse_gold() -> None:
    assert parse_gold("-1") == []
    assert parse_gold("") == []
    assert parse_gold("C535918|OMIM:115470") == ["MESH:C535918", "OMIM:115470"]
    assert parse_gold("D008581+D012008") == ["MESH:D008581+MESH:D012008"]
    assert parse_gold("D002544|-1") == ["MESH:D002544", "-1"]


# ------------------------------------------------------------------ PubTator

def test_read_pubtator_real_ncbi_lines(tmp_path: Path) -> None:
    docs = list(read_pubtator(write(tmp_path, "train.txt", NCBI_TRAIN)))
    assert [d.doc_id for d in docs] == ["1424237", "2792129"]
    d1, d2 = docs
    assert d1.abstract.endswith("cases.. ")  # trailing space kept: offsets depend on it
    assert len(d1.mentions) == 5 and len(d2.mentions) == 5
    for d in docs:
        for m in d.mentions:
            if m.text != "absence of the seventh component of complemen":
                assert d.text[m.start:m.end] == m.text
            assert m.doc_id == d.doc_id
            assert d.text[m.start:m.end] in m.context
    ces = d1.mentions[2]
    assert (ces.text, ces.start, ces.end, ces.type) == ("CES", 146, 149, "SpecificDisease")
    assert ces.gold == ["MESH:C535918", "OMIM:115470"]
    assert ces.mention_id == "1424237:146-149"
    assert ces.context.startswith("Three children are reported")
    assert ces.context.endswith("studied by FISH.")
    assert d1.mentions[0].context == ("Typical and partial cat eye syndrome: identification of "
                                      "the marker chromosome by FISH.")
    assert d2.mentions[2].gold == ["MESH:D008581+MESH:D012008"]
    assert d2.mentions[0].gold == ["OMIM:610102"]
    assert doc_abbreviations(d1) == {"CES": "cat eye syndrome"}


def test_read_pubtator_formats_example(tmp_path: Path) -> None:
    docs = list(read_pubtator(write(tmp_path, "x.pubtator", FORMATS_PUBTATOR)))
    assert len(docs) == 2
    d = docs[0]
    assert [m.text for m in d.mentions] == ["Fictional syndrome", "toe or finger syndrome",
                                            "imaginol", "glimmerex", "Recurrent toe pain"]
    assert all(d.text[m.start:m.end] == m.text for m in d.mentions)
    toe = d.mentions[1]
    assert toe.gold == ["MESH:D900002", "MESH:D900003"]
    assert toe.parts == ["toe syndrome", "finger syndrome"]
    assert d.mentions[3].gold == [] and d.mentions[3].is_nil
    assert d.mentions[4].gold == ["MESH:D900004+MESH:D900005"]
    assert d.mentions[4].context == "Recurrent toe pain was common."
    assert docs[1].abstract == "" and docs[1].mentions == []


def test_pubtator_annotation_lines_are_not_stripped(tmp_path: Path) -> None:
    # NCBI train PMID 10923035: the mention column ends in two spaces
    text = ("10923035|t|T.\n10923035|a|" + "x" * 760 + "\n"
            '10923035\t711\t761\tgeneralized epilepsy and febrile seizures " plus "  '
            "\tSpecificDisease\tD004829+D003294\n")
    (doc,) = read_pubtator(write(tmp_path, "p.txt", text))
    assert doc.mentions[0].text.endswith('" plus "  ')
    assert doc.mentions[0].gold == ["MESH:D004829+MESH:D003294"]


def test_pubtator_title_with_pipe_and_prefixed_ids(tmp_path: Path) -> None:
    text = ("5|t|A | B syndrome\n5|a|Text.\n"
            "5\t0\t1\tA\tDisease\tMESH:D000001\n")
    (doc,) = read_pubtator(write(tmp_path, "p.txt", text))
    assert doc.title == "A | B syndrome"
    assert doc.mentions[0].gold == ["MESH:D000001"]


def test_pubtator_duplicate_pmid_warns_and_keeps(tmp_path: Path) -> None:
    text = "7|t|One.\n7|a|\n\n7|t|Two.\n7|a|\n"
    with pytest.warns(UserWarning, match="duplicate PMID 7"):
        docs = list(read_pubtator(write(tmp_path, "p.txt", text)))
    assert [d.title for d in docs] == ["One.", "Two."]


@pytest.mark.parametrize("bad,line", [
    ("1|t|T\n1|a|abc\n1\t0\t1\tT\tDisease\n", 3),                   # 5 columns
    ("1|t|T\n1|a|abc\n1\tx\t1\tT\tDisease\tD1\n", 3),                # offset not an int
    ("1|t|T\n1|a|abc\n1\t0\t99\tT\tDisease\tD1\n", 3),               # span past the text
    ("1|t|T\n1|a|abc\n2\t0\t1\tT\tDisease\tD1\n", 3),                # wrong PMID
    ("1|t|T\n1|x|abc\n", 2),                                         # unknown header kind
    ("1|t|T\n2|a|abc\n", 2),                                         # abstract of another doc
    ("1|t|T\njust some text\n", 2),                                  # not a record
    ("1|t|T\n1|a|abc\n1\t0\t1\tT\tDisease\tD1|\n", 3),               # empty composite part
])
def test_pubtator_bad_lines(tmp_path: Path, bad: str, line: int) -> None:
    p = write(tmp_path, "bad.txt", bad)
    with pytest.raises(InputError) as exc:
        list(read_pubtator(p))
    assert exc.value.line == line and exc.value.path == str(p)
    assert f"bad.txt:{line}" in str(exc.value)


def test_pubtator_streams(tmp_path: Path) -> None:
    gen = read_pubtator(write(tmp_path, "p.txt", NCBI_TRAIN + "\nbroken line\n"))
    first = next(gen)  # the good document comes out before the bad line is reached
    assert first.doc_id == "1424237"
    next(gen)
    with pytest.raises(InputError):
        next(gen)


def test_sentence_spans() -> None:
    text = "Title without stop Body one. Body two.  Three"
    spans = sentence_spans(text, (18,))
    assert [text[s:e] for s, e in spans] == ["Title without stop", "Body one.", "Body two.",
                                             "Three"]


# ------------------------------------------------------------------ .concept

def test_read_concept(tmp_path: Path) -> None:
    ms = list(read_concept(write(tmp_path, "x.concept", CONCEPT)))
    assert len(ms) == 4
    assert (ms[0].doc_id, ms[0].start, ms[0].end, ms[0].type) == ("99000001", 15, 34, "Disease")
    assert ms[0].mention_id == "99000001:15-34"
    assert ms[1].gold == ["MESH:D900002", "MESH:D900003"] and ms[1].parts == []
    assert ms[2].gold == ["MESH:D900004+MESH:D900005"]
    assert ms[3].gold == []


def test_read_concept_composite_text_and_omim(tmp_path: Path) -> None:
    line = "-1||0|0||CompositeMention||breast cancer|ovarian cancer||D001943|OMIM:604370\n"
    (m,) = read_concept(write(tmp_path, "c.concept", line))
    assert m.parts == ["breast cancer", "ovarian cancer"]
    assert m.gold == ["MESH:D001943", "OMIM:604370"]
    assert m.doc_id == "-1"


@pytest.mark.parametrize("bad", [
    "1||15|34||Disease||fictional syndrome\n",          # 4 fields
    "1||15-34||Disease||fictional syndrome||D1\n",     # span without '|'
    "1||a|b||Disease||fictional syndrome||D1\n",       # span not ints
    "1||1|2||Disease||  ||D1\n",                       # empty mention
])
def test_read_concept_bad_lines(tmp_path: Path, bad: str) -> None:
    p = write(tmp_path, "bad.concept", CONCEPT + bad)
    with pytest.raises(InputError) as exc:
        list(read_concept(p))
    assert exc.value.line == 5 and "bad.concept:5" in str(exc.value)


# ------------------------------------------------------------------ TSV

def test_read_tsv(tmp_path: Path) -> None:
    text = ("id\ttext\tdoc_id\tcontext\tgold\n"
            "m1\tcat eye syndrome\t1424237\tTypical cat eye syndrome.\tC535918|OMIM:115470\n"
            "m2\ttetrasomy\t\t\t\n")
    ms = list(read_tsv(write(tmp_path, "m.tsv", text)))
    assert [m.mention_id for m in ms] == ["m1", "m2"]
    assert ms[0].gold == ["MESH:C535918", "OMIM:115470"] and ms[0].doc_id == "1424237"
    assert ms[0].context == "Typical cat eye syndrome."
    assert ms[1].gold == [] and ms[1].doc_id == ""


def test_read_tsv_minimal_header_and_quotes(tmp_path: Path) -> None:
    ms = list(read_tsv(write(tmp_path, "m.tsv", 'text\tid\n"odd" name\tq1\n')))
    assert ms[0].text == '"odd" name' and ms[0].id == "q1" and ms[0].gold == []


@pytest.mark.parametrize("text,line,match", [
    ("name\tid\nx\t1\n", 1, "lacks column"),
    ("id\ttext\n1\n", 2, "fields"),
    ("id\ttext\n1\t \n", 2, "empty text"),
    ("id\ttext\tgold\n1\tx\tMESH:\n", 2, "concept ID"),
])
def test_read_tsv_bad(tmp_path: Path, text: str, line: int, match: str) -> None:
    with pytest.raises(InputError, match=match) as exc:
        list(read_tsv(write(tmp_path, "m.tsv", text)))
    assert exc.value.line == line


# ------------------------------------------------------------------ dispatch

def test_read_mentions_sniffs(tmp_path: Path) -> None:
    pub = write(tmp_path, "corpus.txt", NCBI_TRAIN)
    con = write(tmp_path, "x.concept", CONCEPT)
    con_noext = write(tmp_path, "x.txt2", CONCEPT)
    tsv = write(tmp_path, "m.txt", "id\ttext\n1\tcat eye syndrome\n")
    assert sniff_format(pub) == "pubtator" and len(list(read_mentions(pub))) == 10
    assert sniff_format(con) == "concept" and len(list(read_mentions(con))) == 4
    assert sniff_format(con_noext) == "concept"
    assert sniff_format(tsv) == "tsv" and [m.text for m in read_mentions(tsv)] == ["cat eye syndrome"]
    assert len(list(read_mentions(pub, "pubtator"))) == 10
    assert len(list(read_mentions(con, fmt="CONCEPT"))) == 4


def test_read_mentions_with_abbreviations(tmp_path: Path) -> None:
    pairs = list(read_mentions_with_abbreviations(write(tmp_path, "c.txt", NCBI_TRAIN)))
    assert len(pairs) == 10
    assert pairs[2][0].text == "CES" and pairs[2][1] == {"CES": "cat eye syndrome"}
    assert pairs[5][1] == {}  # second document defines nothing the algorithm accepts
    tsv = write(tmp_path, "m.tsv", "id\ttext\tcontext\n1\tFMF\tFamilial Mediterranean fever "
                "(FMF) is a recessive disorder.\n2\tx\t\n")
    got = list(read_mentions_with_abbreviations(tsv, "tsv"))
    assert got[0][1] == {"FMF": "Familial Mediterranean fever"} and got[1][1] == {}
    assert [a for _, a in read_mentions_with_abbreviations(
        write(tmp_path, "x.concept", CONCEPT))] == [{}] * 4
    # .concept: no text, so each document's own mentions and offsets (BC5CDR train 11773892)
    doc = ("11773892||0|23||Disease||End-stage renal disease||D007676\n"
           "11773892||25|29||Disease||ESRD||D007676\n"
           "11773892||542|563||Disease||chronic renal failure||D007676\n"
           "11773892||565|568||Disease||CRF||D007676\n"
           "11706060||185|187||Disease||CM||D009202\n")
    got = list(read_mentions_with_abbreviations(write(tmp_path, "y.concept", doc)))
    assert got[1][1] == {"ESRD": "End-stage renal disease", "CRF": "chronic renal failure"}
    assert got[0][1] is got[3][1] and got[4][1] == {}  # one dict per document
    with pytest.raises(InputError, match="unknown mention format"):
        read_mentions_with_abbreviations(tsv, "xml")


def test_read_mentions_unknown_layout(tmp_path: Path) -> None:
    p = write(tmp_path, "notes.txt", "just some prose\nmore\n")
    with pytest.raises(InputError, match="tried concept.*pubtator.*tsv"):
        read_mentions(p)
    with pytest.raises(InputError, match="unknown mention format"):
        read_mentions(p, "bioc")
    with pytest.raises(InputError, match="not found"):
        read_mentions(tmp_path / "missing.txt")


# ------------------------------------------------------------------ names and encoding

def test_read_names(tmp_path: Path) -> None:
    p = write(tmp_path, "n.txt", "\ufeffcat eye syndrome\r\n  tetrasomy \nC7 deficiency")
    assert read_names(p) == ["cat eye syndrome", "  tetrasomy ", "C7 deficiency"]


def test_read_names_empty_line(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        read_names(write(tmp_path, "n.txt", "a\n\nb\n"))
    assert exc.value.line == 2 and "empty line" in str(exc.value)
    with pytest.raises(InputError, match="no names"):
        read_names(write(tmp_path, "e.txt", ""))


def test_read_names_not_utf8(tmp_path: Path) -> None:
    p = write(tmp_path, "n.txt", b"ok\nSj\xf6gren syndrome\n")
    with pytest.raises(InputError) as exc:
        read_names(p)
    msg = str(exc.value)
    assert exc.value.line == 2 and "n.txt:2" in msg
    assert "byte offset 5" in msg and "0xf6" in msg


def test_iter_lines_crlf(tmp_path: Path) -> None:
    p = write(tmp_path, "c.txt", "a\r\nb \r\n")
    assert list(iter_lines(p)) == [(1, "a"), (2, "b ")]


def test_no_warnings_on_clean_file(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(read_pubtator(write(tmp_path, "p.txt", NCBI_TRAIN)))
