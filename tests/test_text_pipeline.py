"""TextPipeline: each step and its switch."""
from __future__ import annotations

from pathlib import Path

import pytest

from kgnorm.errors import InputError
from kgnorm.mentions.types import Mention
from kgnorm.mentions.spelling import load_spelling
from kgnorm.text.pipeline import TextPipeline

ABBR = {"APC": "adenomatous polyposis coli", "CES": "cat eye syndrome"}


def test_defaults_normalize_expand_split() -> None:
    p = TextPipeline()
    assert p.prepare(Mention("APC tumor"), ABBR) == ["adenomatous polyposis coli tumor"]
    assert p.prepare(Mention("Breast and Ovarian Cancer")) == ["breast cancer", "ovarian cancer"]
    assert p.prepare(Mention("Cat-Eye Syndrome")) == ["cat eye syndrome"]
    assert p.normalize_name("Fictional&apos;s toe syndrome") == "fictional s toe syndrome"


def test_gold_parts_drive_the_split() -> None:
    p = TextPipeline()
    two = Mention("breast and ovarian cancer", gold=["MESH:D001943", "MESH:D010051"])
    one = Mention("breast and ovarian cancer", gold=["MESH:D061325"])
    assert p.prepare(two) == ["breast cancer", "ovarian cancer"]
    assert p.prepare(one) == ["breast and ovarian cancer"]
    # off: a single gold part no longer blocks the rules
    assert TextPipeline(single_gold_no_split=False).prepare(one) == ["breast cancer",
                                                                     "ovarian cancer"]
    # a two-part gold picks a split the rules alone would not make
    hyph = Mention("breast-ovarian cancer", gold=["MESH:D001943", "MESH:D010051"])
    assert p.prepare(hyph) == ["breast cancer", "ovarian cancer"]
    assert p.prepare(Mention("breast-ovarian cancer")) == ["breast ovarian cancer"]


def test_given_parts_win() -> None:
    m = Mention("toe or finger syndrome", gold=["MESH:D900002", "MESH:D900003"],
                parts=["toe syndrome", "Finger  syndrome"])
    assert TextPipeline().prepare(m) == ["toe syndrome", "finger syndrome"]


def test_abbreviations_applied_per_part() -> None:
    m = Mention("APC and CES", gold=["MESH:D011125", "MESH:C535918"])
    assert TextPipeline().prepare(m, ABBR) == ["adenomatous polyposis coli", "cat eye syndrome"]


def test_switches() -> None:
    m = Mention("APC and CES tumours")
    assert TextPipeline(abbreviations=False).prepare(m, ABBR) == ["apc tumours", "ces tumours"]
    assert TextPipeline(composites=False).prepare(m, ABBR) == [
        "adenomatous polyposis coli and cat eye syndrome tumours"]
    assert TextPipeline(composites=False, abbreviations=False, normalize=False).prepare(
        Mention("APC, Tumours")) == ["apc, tumours"]
    assert TextPipeline(composites=False, lowercase=False).prepare(
        Mention("APC, Tumours")) == ["APC Tumours"]
    raw = TextPipeline(lowercase=False, normalize=False, abbreviations=False, composites=False)
    assert raw.prepare(Mention("APC, Tumours"), ABBR) == ["APC, Tumours"]
    assert raw.normalize_name("Cat-Eye") == "Cat-Eye"
    assert TextPipeline(normalize=False).normalize_name("Cat-Eye") == "cat-eye"
    # no abbreviations for the document -> nothing to expand
    assert TextPipeline().prepare(Mention("APC")) == ["apc"]


def test_known_names_protect_real_concepts() -> None:
    m = Mention("Hand, foot and mouth disease")
    assert len(TextPipeline().prepare(m)) == 3
    p = TextPipeline(known_names={"hand foot and mouth disease"})
    assert p.prepare(m) == ["hand foot and mouth disease"]


def test_spelling(tmp_path: Path) -> None:
    f = tmp_path / "spell.tsv"
    f.write_text("# wrong\tright\ntumour\ttumor\nhaemangioblastoma\themangioblastoma\n\n"
                 "Carcinom||Carcinoma\n", encoding="utf-8")
    spelling = load_spelling(f)
    assert spelling["tumour"] == "tumor" and spelling["Carcinom"] == "Carcinoma"
    p = TextPipeline(spelling=load_spelling(f))
    assert p.prepare(Mention("cerebellar haemangioblastoma")) == ["cerebellar hemangioblastoma"]
    assert p.prepare(Mention("skin tumours")) == ["skin tumours"]  # whole tokens only
    assert p.prepare(Mention("skin Tumour")) == ["skin tumor"]
    assert p.prepare(Mention("breast carcinom")) == ["breast carcinoma"]
    assert p.normalize_name("skin tumour") == "skin tumour"  # dictionary names untouched
    assert TextPipeline(spelling={"ca": "cancer"}).prepare(Mention("ca breast")) == [
        "cancer breast"]


def test_spelling_bad_line(tmp_path: Path) -> None:
    f = tmp_path / "spell.tsv"
    f.write_text("tumour\ttumor\nonly-one-column\n", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_spelling(f)
    assert exc.value.line == 2
