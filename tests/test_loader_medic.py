"""MEDIC loader: CTD TSV/CSV report and the DNorm `IDS||NAMES` pipe file."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from kgnorm.errors import InputError
from kgnorm.ontologies import medic

FIX = Path(__file__).parent / "fixtures" / "medic"


def test_ctd_tsv():
    g = medic.load(FIX / "CTD_diseases.tsv")
    assert g.name == "medic" and g.format == "medic"
    assert g.version == "Thu Jan 01 00:00:00 EST 2099"
    assert set(g.concepts) == {"MESH:D900000", "MESH:D900001", "MESH:D900002", "OMIM:999002"}
    assert sorted(g.is_a) == sorted([("MESH:D900001", "MESH:D900000"),
                                     ("MESH:D900002", "MESH:D900001"),
                                     ("OMIM:999002", "MESH:D900002")])
    c = g.concepts["MESH:D900001"]
    assert c.name == "Fictional Syndromes" and c.code == "D900001"
    assert c.alt_ids == ["DO:DOID:9999001"]
    assert c.synonyms == ["Syndromes, Fictional", "Made-up Syndrome"]
    assert c.definition == "Invented conditions used only in tests."
    assert g.concepts["OMIM:999002"].synonyms == ["FTS2", "Toe syndrome, fictional, type 2"]
    assert [g.concepts[u].depth for u in ("MESH:D900000", "MESH:D900001", "MESH:D900002",
                                          "OMIM:999002")] == [0, 1, 2, 3]


def test_ctd_csv_quoting_multi_parent_and_synthetic_root():
    g = medic.load(FIX / "CTD_diseases.csv")
    c = g.concepts["MESH:D900001"]
    assert c.definition == "Invented conditions, used only in tests."
    assert c.synonyms == ["Syndromes, Fictional", 'Made-up "Syndrome"']
    assert sorted(g.parents()["MESH:D900002"]) == ["MESH:D900000", "MESH:D900001"]
    assert g.concepts["MESH:C"].name == "Diseases"
    assert g.concepts["MESH:D900002"].depth == 2  # shortest path: C -> D900000 -> D900002
    assert any("synthetic root" in w for w in g.warnings)


def test_ctd_tsv_gzipped(tmp_path):
    gz = tmp_path / "CTD_diseases.tsv.gz"
    gz.write_bytes(gzip.compress((FIX / "CTD_diseases.tsv").read_bytes()))
    assert len(medic.load(gz).concepts) == 4


def test_ctd_eight_columns_and_crlf(tmp_path):
    lines = (FIX / "CTD_diseases.tsv").read_text().splitlines()
    eight = [ln if ln.startswith("#") else ln.rsplit("\t", 1)[0] for ln in lines]
    p = tmp_path / "CTD_diseases_DNorm.tsv"
    p.write_bytes(("\r\n".join(eight) + "\r\n").encode())
    g = medic.load(p)
    assert len(g.concepts) == 4
    assert g.concepts["OMIM:999002"].synonyms[-1] == "Toe syndrome, fictional, type 2"


def test_pipe_layout():
    g = medic.load(FIX / "medic_01Jan2099.txt")
    assert g.version == "01Jan2099"
    assert set(g.concepts) == {"MESH:D900001", "MESH:D900002", "OMIM:999003", "MESH:C",
                               "MESH:C900004"}
    toe = g.concepts["MESH:D900002"]
    assert toe.alt_ids == ["OMIM:999002"]
    assert toe.synonyms == ["FTS2", "Fictional's toe syndrome"]  # &apos; unescaped
    assert g.concepts["OMIM:999003"].name == "FICTIONAL SYNDROME 3"
    assert g.concepts["MESH:C"].name == "Diseases"
    three = g.concepts["MESH:C900004"]
    assert three.alt_ids == ["MESH:D900002", "OMIM:999004"]
    assert three.synonyms == ["Toe & finger syndrome 4"]
    assert g.is_a == [] and all(c.depth == 0 for c in g.concepts.values())


def test_pipe_malformed_line_names_file_and_line():
    with pytest.raises(InputError) as err:
        medic.load(FIX / "bad_line.txt")
    assert err.value.line == 3 and err.value.path.endswith("bad_line.txt")


def test_pipe_bad_id(tmp_path):
    p = tmp_path / "m.txt"
    p.write_text("D900001||Fictional Syndromes\nD90?001||Broken\n")
    with pytest.raises(InputError) as err:
        medic.load(p)
    assert err.value.line == 2


def test_ctd_wrong_column_count():
    with pytest.raises(InputError) as err:
        medic.load(FIX / "short_row.tsv")
    assert err.value.line == 3 and "found 7" in str(err.value)


def test_dangling_parent():
    with pytest.raises(InputError) as err:
        medic.load(FIX / "dangling.tsv")
    assert "dangling.tsv:3" in str(err.value) and "MESH:D909404" in str(err.value)
    g = medic.load(FIX / "dangling.tsv", allow_dangling=True)
    assert g.report.dangling_edges == 1
    assert g.is_a == [("MESH:D900002", "MESH:D900001")]


def test_other_formats_are_rejected():
    root = Path(__file__).parent / "fixtures"
    with pytest.raises(InputError, match="OBO"):
        medic.load(root / "obo" / "hp_mini.obo")
    with pytest.raises(InputError, match="MeSH XML"):
        medic.load(root / "mesh" / "release" / "desc2099.xml")
    with pytest.raises(InputError, match="directory"):
        medic.load(FIX)


def test_normalize_id():
    assert medic.normalize_id("D001") == "MESH:D001"
    assert medic.normalize_id("C567755") == "MESH:C567755"
    assert medic.normalize_id("613097") == "OMIM:613097"
    assert medic.normalize_id("MESH:D001") == "MESH:D001"
    assert medic.normalize_id("DO:DOID:1234") == "DO:DOID:1234"
    assert medic.normalize_id("C") == "MESH:C"
    assert medic.normalize_id("x y") is None


# the line of Diabetes Mellitus, Type 2 in medic_06Jul2012.txt (OMIM first), names shortened
T2D_LINE = ("125853|D003924||Diabetes Mellitus, Type 2|Adult-Onset Diabetes Mellitus|NIDDM|"
            "Type 2 Diabetes Mellitus\n")


def test_pipe_line_listing_omim_first_takes_the_mesh_id(tmp_path):
    f = tmp_path / "medic_06Jul2012.txt"
    f.write_text("D003920||Diabetes Mellitus\n" + T2D_LINE)
    g = medic.load(f)
    t2d = g.concepts["MESH:D003924"]
    assert t2d.name == "Diabetes Mellitus, Type 2" and t2d.alt_ids == ["OMIM:125853"]
    assert "OMIM:125853" not in g.concepts


def test_ctd_row_with_omim_id_and_mesh_alt_takes_the_mesh_id(tmp_path):
    f = tmp_path / "CTD_diseases.tsv"
    f.write_text("# Fields:\n# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\t"
                 "ParentTreeNumbers\tSynonyms\tSlimMappings\n"
                 "Diseases X\tMESH:D900000\t\t\t\t\t\t\t\n"
                 "Parent thing\tOMIM:125853\tMESH:D003924|DO:DOID:9352\t\tMESH:D900000\t\t\t\t\n"
                 "Child thing\tMESH:D900005\t\t\tOMIM:125853\t\t\t\t\n")
    g = medic.load(f)
    assert g.concepts["MESH:D003924"].alt_ids == ["OMIM:125853", "DO:DOID:9352"]
    assert ("MESH:D900005", "MESH:D003924") in g.is_a and "OMIM:125853" not in g.concepts
