"""MedDRA MedAscii loader on an invented release (the layout of docs/formats.md, "MedDRA ASCII")."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kgnorm.errors import InputError
from kgnorm.ontologies import meddra

FIX = Path(__file__).parent / "fixtures" / "meddra" / "MedDRA_99_0_English"


@pytest.fixture()
def medascii(tmp_path: Path) -> Path:
    dst = tmp_path / "MedAscii"
    shutil.copytree(FIX / "MedAscii", dst)
    return dst


def test_levels_names_and_version():
    g = meddra.load(FIX)  # release folder: MedAscii found inside
    assert g.name == "meddra" and g.format == "meddra" and g.version == "99.0"
    labels = {c.code: c.level_label for c in g.concepts.values()}
    assert labels == {"19900001": "SOC", "19900002": "SOC", "19900101": "HLGT",
                      "19900102": "HLGT", "19900201": "HLT", "19900202": "HLT",
                      "19900301": "PT", "19900302": "PT"}
    assert g.concepts["MEDDRA:19900302"].name == "Confetti (patchy) rash, NOS"
    assert all("\r" not in c.name for c in g.concepts.values())


def test_multi_axial_hierarchy_and_depth():
    g = meddra.load(FIX / "MedAscii")
    assert sorted(g.parents()["MEDDRA:19900301"]) == ["MEDDRA:19900201", "MEDDRA:19900202"]
    assert g.parents()["MEDDRA:19900201"] == ["MEDDRA:19900101"]
    assert g.parents()["MEDDRA:19900101"] == ["MEDDRA:19900001"]
    assert len(g.is_a) == 7
    depth = {c.level_label: c.depth for c in g.concepts.values()}
    assert depth == {"SOC": 0, "HLGT": 1, "HLT": 2, "PT": 3}


def test_llts_current_only_by_default():
    pt = meddra.load(FIX).concepts["MEDDRA:19900301"]
    assert pt.synonyms == ["Sparkle rash"]
    assert pt.alt_ids == ["MEDDRA:19900401"]  # the PT's own LLT (same code) is not an alt id
    other = meddra.load(FIX).concepts["MEDDRA:19900302"]
    assert other.synonyms == ["Patient's confetti rash"]


def test_llts_noncurrent_option():
    pt = meddra.load(FIX, include_noncurrent=True).concepts["MEDDRA:19900301"]
    assert pt.synonyms == ["Sparkle rash", "Glittery dermatosis (obs.)"]
    assert pt.synonym_scopes == ["EXACT", "RELATED"]
    assert pt.alt_ids == ["MEDDRA:19900401", "MEDDRA:19900402"]


def test_mdhier_fallback_matches_link_files(medascii):
    for name in ("soc_hlgt.asc", "hlgt_hlt.asc", "hlt_pt.asc"):
        (medascii / name).unlink()
    g = meddra.load(medascii)
    ref = meddra.load(FIX)
    assert sorted(g.is_a) == sorted(ref.is_a)
    assert g.report.duplicate_edges == 0


def test_latin1_fallback(medascii):
    (medascii / "soc.asc").write_bytes("19900001$Invented organ disorders \u00e9$Inv$$$$$$$$\r\n"
                                       "19900002$Fictional tissue conditions$Fict$$$$$$$$\r\n"
                                       .encode("latin-1"))
    g = meddra.load(medascii)
    assert g.concepts["MEDDRA:19900001"].name == "Invented organ disorders \u00e9"
    assert any("not valid UTF-8" in w for w in g.warnings)


def test_wrong_column_count(medascii):
    with open(medascii / "hlt.asc", "ab") as fh:
        fh.write(b"19900203$Too short$$$\r\n")
    with pytest.raises(InputError) as err:
        meddra.load(medascii)
    assert err.value.line == 3 and err.value.path.endswith("hlt.asc")
    assert "expected 9" in str(err.value)


def test_dangling_link(medascii):
    with open(medascii / "hlt_pt.asc", "ab") as fh:
        fh.write(b"19900299$19900302$\r\n")
    with pytest.raises(InputError) as err:
        meddra.load(medascii)
    assert "hlt_pt.asc:4" in str(err.value)
    g = meddra.load(medascii, allow_dangling=True)
    assert g.report.dangling_edges == 1


def test_llt_with_unknown_pt(medascii):
    with open(medascii / "llt.asc", "ab") as fh:
        fh.write(b"19900499$Orphan rash$19900399$$$$$$$Y$$\r\n")
    with pytest.raises(InputError) as err:
        meddra.load(medascii)
    assert err.value.line == 6 and err.value.path.endswith("llt.asc")
    g = meddra.load(medascii, allow_dangling=True)
    assert any("LLT" in w for w in g.warnings)


def test_missing_files(medascii):
    (medascii / "llt.asc").unlink()
    (medascii / "mdhier.asc").unlink()
    (medascii / "hlt_pt.asc").unlink()
    with pytest.raises(InputError) as err:
        meddra.load(medascii)
    assert "llt.asc" in str(err.value) and "mdhier.asc" in str(err.value)


def test_wrong_input():
    root = Path(__file__).parent / "fixtures"
    with pytest.raises(InputError, match="got a file"):
        meddra.load(root / "obo" / "hp_mini.obo")
    with pytest.raises(InputError, match="no MedAscii"):
        meddra.load(root / "obo")
