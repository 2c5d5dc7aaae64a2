"""MeSH XML loader: descriptors, SCRs, tree-number hierarchy, bad input."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from kgnorm.errors import InputError
from kgnorm.ontologies import mesh

FIX = Path(__file__).parent / "fixtures" / "mesh"


@pytest.fixture(scope="module")
def release():
    return mesh.load(FIX / "release")


def test_folder_with_desc_and_supp(release):
    g = release
    assert g.name == "mesh" and g.format == "mesh" and g.version == "2099"
    assert set(g.concepts) == {"MESH:D900001", "MESH:D900002", "MESH:C900001", "MESH:C", "MESH:F"}
    # nested DescriptorUIs (SeeRelated, EntryCombination, PharmacologicalAction) are no concepts
    for decoy in ("MESH:D900096", "MESH:D900097", "MESH:D900098", "MESH:D900099"):
        assert decoy not in g.concepts


def test_descriptor_fields(release):
    c = release.concepts["MESH:D900001"]
    assert c.code == "D900001" and c.name == "Fictional Syndromes"
    assert c.definition == "Invented conditions used only in tests."
    # deduplicated, permuted term skipped, other concept's terms NARROW (ConceptRelation NRW)
    assert c.synonyms == ["Syndromes, Fictional", "Made-up Syndrome"]
    assert c.synonym_scopes == ["EXACT", "NARROW"]


def test_tree_hierarchy_and_category_roots(release):
    parents = release.parents()
    assert parents["MESH:D900002"] == ["MESH:D900001"]
    # C99 / F99 are listed by no record: walk up to the category roots
    assert sorted(parents["MESH:D900001"]) == ["MESH:C", "MESH:F"]
    assert release.concepts["MESH:C"].name == "Diseases"
    assert release.concepts["MESH:F"].level_label == "category"
    assert any("nearest listed ancestor" in w for w in release.warnings)


def test_supplementary_record(release):
    c = release.concepts["MESH:C900001"]
    assert c.name == "Fictional toe syndrome type 2"
    assert c.synonyms == ["FTS2"]
    assert c.level_label == "supplementary"
    assert sorted(release.parents()["MESH:C900001"]) == ["MESH:D900001", "MESH:D900002"]  # `*` stripped
    assert c.depth == 2


def test_tree_numbers_multi_parent_dedupe_and_depth():
    g = mesh.load(FIX / "desc_tree.xml")
    assert g.version == ""
    p = g.parents()
    assert p["MESH:D900000"] == ["MESH:C"]
    assert sorted(p["MESH:D900001"]) == ["MESH:D900000", "MESH:F"]
    assert p["MESH:D900002"] == ["MESH:D900001"]  # two tree numbers, one edge
    assert sorted(p["MESH:D900003"]) == ["MESH:D900000", "MESH:D900002"]
    assert p["MESH:D000900005"] == ["MESH:D900001"]  # C99.123.777 unlisted: walked up
    assert "MESH:D900006" not in p  # check tag without tree numbers: a root
    depth = {u: c.depth for u, c in g.concepts.items()}
    assert depth["MESH:C"] == 0 and depth["MESH:D900000"] == 1 and depth["MESH:D900003"] == 2
    assert g.concepts["MESH:D900003"].synonyms == ["Toe & Nail Syndrome, Fictional"]
    assert g.report.duplicate_edges == 0 and g.report.roots == 3


def test_single_gz_file_and_permuted_option(tmp_path):
    gz = tmp_path / "desc2098.xml.gz"
    with open(FIX / "release" / "desc2099.xml", "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    g = mesh.load(gz, name="mesh98", include_permuted=True)
    assert g.name == "mesh98" and g.version == "2098"
    assert "Fictional, Syndromes" in g.concepts["MESH:D900001"].synonyms


def test_supp_alone_is_dangling():
    with pytest.raises(InputError) as err:
        mesh.load(FIX / "release" / "supp2099.xml")
    assert "supp2099.xml:" in str(err.value)
    g = mesh.load(FIX / "release" / "supp2099.xml", allow_dangling=True)
    assert g.report.dangling_edges == 2
    assert list(g.concepts) == ["MESH:C900001"]


def test_truncated_xml_names_file_and_line(tmp_path):
    text = (FIX / "release" / "desc2099.xml").read_text()
    p = tmp_path / "desc2099.xml"
    p.write_text(text[: text.index("<DescriptorUI>D900002")])
    with pytest.raises(InputError) as err:
        mesh.load(p)
    assert err.value.path == str(p)
    assert err.value.line is not None and err.value.line >= 50
    assert "truncated" in str(err.value)


def test_truncated_gzip(tmp_path):
    gz = tmp_path / "desc2099.xml.gz"
    gz.write_bytes(gzip.compress((FIX / "release" / "desc2099.xml").read_bytes())[:700])
    with pytest.raises(InputError, match="truncated") as err:
        mesh.load(gz)
    assert err.value.path == str(gz)


def test_wrong_inputs():
    root = Path(__file__).parent / "fixtures"
    with pytest.raises(InputError, match="OBO"):
        mesh.load(root / "obo" / "hp_mini.obo")
    with pytest.raises(InputError, match="no descYYYY.xml"):
        mesh.load(root / "obo")


def test_other_xml_is_rejected(tmp_path):
    p = tmp_path / "qual2099.xml"
    p.write_text('<?xml version="1.0"?>\n<QualifierRecordSet LanguageCode="eng">\n</QualifierRecordSet>\n')
    with pytest.raises(InputError, match="not a MeSH XML record set"):
        mesh.load(p)
