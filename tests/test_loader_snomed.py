"""SNOMED CT RF2 Snapshot loader; the fixture tree is copied with CR LF line ends."""
from __future__ import annotations

from pathlib import Path

import pytest

from kgnorm.errors import InputError
from kgnorm.ontologies import snomed

FIX = Path(__file__).parent / "fixtures" / "snomed"
RELEASE = "SnomedCT_InternationalRF2_PRODUCTION_20990131T120000Z"
TERM = f"{RELEASE}/Snapshot/Terminology"


def _crlf_copy(dst: Path) -> Path:
    """Copy the fixture release, forcing CR LF on every line (RF2 rule) whatever git did."""
    for src in (FIX / RELEASE).rglob("*.txt"):
        out = dst / src.relative_to(FIX)
        out.parent.mkdir(parents=True, exist_ok=True)
        lines = src.read_bytes().decode("utf-8").splitlines()
        out.write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-8"))
    return dst / RELEASE


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    return _crlf_copy(tmp_path)


def _edit(path: Path, old: str, new: str) -> None:
    data = path.read_bytes().decode("utf-8")
    assert old in data
    path.write_bytes(data.replace(old, new).encode("utf-8"))


def test_release_root(release):
    assert b"\r\n" in (release / "Snapshot/Terminology/sct2_Concept_Snapshot_INT_20990131.txt").read_bytes()
    g = snomed.load(release)
    assert g.name == "snomedct" and g.format == "snomed" and g.version == "20990131"
    assert set(g.concepts) == {"SNOMEDCT:138875005", "SNOMEDCT:9990001007", "SNOMEDCT:9990002000"}
    toe = g.concepts["SNOMEDCT:9990002000"]
    assert toe.code == "9990002000"
    assert toe.name == "Left toe fictional disorder"
    assert toe.synonyms == ["Fictional disorder of left toe"]  # FSN without tag
    assert toe.level_label == "disorder"
    assert toe.definition == "An invented disorder (of the left toe) used only in tests."
    dis = g.concepts["SNOMEDCT:9990001007"]
    assert dis.name == "Fictional disorder"
    assert dis.synonyms == ['Made-up disease "MUD"']  # quote kept: no CSV quoting
    root = g.concepts["SNOMEDCT:138875005"]
    assert root.name == "SNOMED CT Concept" and root.level_label == "SNOMED RT+CTV3"
    assert root.synonyms == []
    assert all("\r" not in s for c in g.concepts.values() for s in c.names())


def test_is_a_inferred_active_only(release):
    g = snomed.load(release)
    # the inactive row to the root and the stated row are ignored
    assert sorted(g.is_a) == [("SNOMEDCT:9990001007", "SNOMEDCT:138875005"),
                              ("SNOMEDCT:9990002000", "SNOMEDCT:9990001007")]
    assert [g.concepts[u].depth for u in ("SNOMEDCT:138875005", "SNOMEDCT:9990001007",
                                          "SNOMEDCT:9990002000")] == [0, 1, 2]


@pytest.mark.parametrize("sub", ["Snapshot", "Snapshot/Terminology"])
def test_snapshot_and_terminology_folders(release, sub):
    g = snomed.load(release / sub, name="sct")
    assert g.name == "sct" and len(g.concepts) == 3
    assert g.concepts["SNOMEDCT:9990001007"].synonyms == ['Made-up disease "MUD"']


def test_gb_refset_option(release):
    g = snomed.load(release, language_refset="900000000000508004")
    # only `Made-up disease "MUD"` has a GB row (preferred) -> it becomes the name
    assert g.concepts["SNOMEDCT:9990001007"].name == 'Made-up disease "MUD"'


def test_missing_required_file(release):
    (release / "Snapshot/Refset/Language/der2_cRefset_LanguageSnapshot-en_INT_20990131.txt").unlink()
    with pytest.raises(InputError) as err:
        snomed.load(release)
    assert "language" in str(err.value) and "der2_cRefset_LanguageSnapshot" in str(err.value)


def test_text_definitions_are_optional(release):
    (release / "Snapshot/Terminology/sct2_TextDefinition_Snapshot-en_INT_20990131.txt").unlink()
    g = snomed.load(release)
    assert g.concepts["SNOMEDCT:9990002000"].definition == ""


def test_dangling_destination(release):
    rel = release / "Snapshot/Terminology/sct2_Relationship_Snapshot_INT_20990131.txt"
    _edit(rel, "9990002000\t9990001007\t0", "9990002000\t9990404000\t0")
    with pytest.raises(InputError) as err:
        snomed.load(release)
    assert "sct2_Relationship_Snapshot_INT_20990131.txt:2" in str(err.value)
    g = snomed.load(release, allow_dangling=True)
    assert g.report.dangling_edges == 1
    assert g.concepts["SNOMEDCT:9990002000"].depth == 0


def test_edge_to_inactive_concept_skipped(release):
    rel = release / "Snapshot/Terminology/sct2_Relationship_Snapshot_INT_20990131.txt"
    _edit(rel, "9990002000\t9990001007\t0", "9990002000\t9990003005\t0")
    g = snomed.load(release)
    assert ("SNOMEDCT:9990002000", "SNOMEDCT:9990003005") not in g.is_a
    assert any("inactive" in w for w in g.warnings)


def test_malformed_row(release):
    con = release / "Snapshot/Terminology/sct2_Concept_Snapshot_INT_20990131.txt"
    _edit(con, "9990002000\t20990131\t1", "9990002000\t20990131\t1\textra")
    with pytest.raises(InputError) as err:
        snomed.load(release)
    assert err.value.line == 4 and err.value.path.endswith("sct2_Concept_Snapshot_INT_20990131.txt")


def test_short_row(release):
    con = release / "Snapshot/Terminology/sct2_Concept_Snapshot_INT_20990131.txt"
    _edit(con, "9990002000\t20990131\t1\t900000000000207008\t900000000000073002",
          "9990002000\t20990131\t1")
    with pytest.raises(InputError) as err:
        snomed.load(release)
    assert err.value.line == 4


def test_wrong_header(release):
    con = release / "Snapshot/Terminology/sct2_Concept_Snapshot_INT_20990131.txt"
    _edit(con, "definitionStatusId", "somethingElse")
    with pytest.raises(InputError, match="header lacks definitionStatusId"):
        snomed.load(release)


def test_wrong_input():
    with pytest.raises(InputError, match="missing RF2 Snapshot"):
        snomed.load(Path(__file__).parent / "fixtures" / "medic")
    with pytest.raises(InputError, match="got a file"):
        snomed.load(Path(__file__).parent / "fixtures" / "medic" / "CTD_diseases.tsv")


def test_split_semantic_tag():
    assert snomed.split_semantic_tag("Fracture (of bone) (disorder)") == ("Fracture (of bone)", "disorder")
    assert snomed.split_semantic_tag("No tag") == ("No tag", "")
