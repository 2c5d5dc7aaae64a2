"""OBO loader on small hp.obo-shaped fixtures (the real HPO is only a manual check)."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from kgnorm.errors import InputError
from kgnorm.ontologies import obo

FIX = Path(__file__).parent / "fixtures" / "obo"


@pytest.fixture(scope="module")
def hp():
    return obo.load(FIX / "hp_mini.obo")


def test_header_gives_name_version_format(hp):
    assert hp.name == "hp"  # from `ontology: hp.obo`
    assert hp.version == "hp/releases/2099-01-01"
    assert hp.format == "obo"
    assert obo.load(FIX / "hp_mini.obo", name="myhp").name == "myhp"


def test_obsolete_terms_and_their_alt_ids_make_no_node(hp):
    assert set(hp.concepts) == {"HP:0000001", "HP:0000118", "HP:9990010", "HP:9990020",
                                "HP:9990001", "HP:9990003"}
    assert "HP:9990002" not in hp.concepts  # obsolete stanza
    assert "HP:9990099" not in hp.concepts  # obsolete stanza that is also an alt_id


def test_term_fields(hp):
    c = hp.concepts["HP:9990001"]
    assert c.code == "9990001"
    assert c.name == "Fictional finger curl"
    assert c.definition == 'An invented finding used only in tests, with a "quoted" word.'
    assert dict(zip(c.synonyms, c.synonym_scopes)) == {
        "Curly finger": "EXACT", "Fictional finger curls": "EXACT", "Finger anomaly": "BROAD",
        "Hooked finger": "NARROW", "Finger bend": "RELATED"}
    assert sorted(c.alt_ids) == ["DO:DOID:9999001", "HP:9990099"]  # `\:` unescaped
    assert sorted(c.xrefs) == ["MEDDRA:19900301", "UMLS:C9999999"]
    assert c.ontology == "hp"
    assert hp.concepts["HP:9990020"].alt_ids == ["HP:9990098"]


def test_is_a_multi_parent_and_depth(hp):
    parents = hp.parents()
    assert sorted(parents["HP:9990001"]) == ["HP:9990010", "HP:9990020"]
    assert parents["HP:9990003"] == ["HP:9990001"]  # relationship: part_of is not IS_A
    assert "HP:0000001" not in parents
    assert len(hp.is_a) == 6
    depths = {u: c.depth for u, c in hp.concepts.items()}
    assert depths == {"HP:0000001": 0, "HP:0000118": 1, "HP:9990010": 2, "HP:9990020": 2,
                      "HP:9990001": 3, "HP:9990003": 4}
    assert hp.report.roots == 1 and hp.report.cycle_edges_removed == 0


def test_cycle_is_broken_and_counted():
    g = obo.load(FIX / "cycle.obo")
    assert g.name == "cyc"
    assert g.report.cycle_edges_removed == 1
    assert len(g.is_a) == 3
    assert any("cycle" in w for w in g.warnings)
    assert all(c.depth >= 0 for c in g.concepts.values())
    assert g.concepts["CYC:0000001"].depth == 0
    assert g.concepts["CYC:0000002"].depth == 1


def test_gzipped_file_loads(tmp_path):
    gz = tmp_path / "hp_mini.obo.gz"
    with open(FIX / "hp_mini.obo", "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    g = obo.load(gz)
    assert len(g.concepts) == 6 and g.name == "hp"


def test_latin1_file_falls_back(tmp_path):
    p = tmp_path / "lat.obo"
    p.write_bytes("format-version: 1.2\nontology: lat\n\n[Term]\nid: LAT:1\nname: caf\u00e9 au lait\n"
                  .encode("latin-1"))
    assert obo.load(p).concepts["LAT:1"].name == "caf\u00e9 au lait"


def test_default_name_without_header(tmp_path):
    p = tmp_path / "tiny.obo"
    p.write_text("format-version: 1.2\n\n[Term]\nid: T:1\nname: one\n")
    assert obo.load(p).name == "tiny"


def test_syntax_error_names_file_and_line():
    with pytest.raises(InputError) as err:
        obo.load(FIX / "bad_syntax.obo")
    assert err.value.path.endswith("bad_syntax.obo")
    assert err.value.line == 11
    assert "bad_syntax.obo:11" in str(err.value)


def test_undeclared_synonym_type_names_term():
    with pytest.raises(InputError) as err:
        obo.load(FIX / "undeclared_synonym_type.obo")
    assert err.value.record == "UND:0000002"
    assert err.value.line == 9
    assert "undeclared_type" in str(err.value)
    assert "undeclared_synonym_type.obo" in str(err.value)


def test_dangling_is_a_is_an_error_naming_the_line():
    with pytest.raises(InputError) as err:
        obo.load(FIX / "dangling.obo")
    assert err.value.path.endswith("dangling.obo")
    assert err.value.line == 13
    assert "DANG:0000404" in str(err.value)


def test_dangling_is_a_dropped_when_allowed():
    g = obo.load(FIX / "dangling.obo", allow_dangling=True)
    assert g.report.dangling_edges == 1
    assert g.report.dangling_examples == [("DANG:0000002", "DANG:0000404")]
    assert sorted(g.is_a) == [("DANG:0000002", "DANG:0000001"), ("DANG:0000003", "DANG:0000002")]
    assert g.concepts["DANG:0000003"].depth == 2
    assert g.version == "dang/2099-01-01"


def test_other_formats_are_rejected():
    with pytest.raises(InputError, match="MEDIC"):
        obo.load(Path(__file__).parent / "fixtures" / "medic" / "medic_01Jan2099.txt")
    with pytest.raises(InputError, match="MeSH"):
        obo.load(Path(__file__).parent / "fixtures" / "mesh" / "release" / "desc2099.xml")
    with pytest.raises(InputError, match="directory"):
        obo.load(FIX)
    with pytest.raises(InputError, match="does not exist"):
        obo.load(FIX / "nope.obo")


def test_is_a_to_obsolete_term_follows_replaced_by(tmp_path):
    p = tmp_path / "obs.obo"
    p.write_text("format-version: 1.2\nontology: obs\n\n"
                 "[Term]\nid: OBS:1\nname: new parent\n\n"
                 "[Term]\nid: OBS:2\nname: old parent\nis_obsolete: true\nreplaced_by: OBS:1\n\n"
                 "[Term]\nid: OBS:3\nname: gone parent\nis_obsolete: true\n\n"
                 "[Term]\nid: OBS:4\nname: child\nis_a: OBS:2\nis_a: OBS:3\n")
    g = obo.load(p)
    assert g.is_a == [("OBS:4", "OBS:1")]
    assert len(g.warnings) == 2


DUP_OBO = """format-version: 1.2
ontology: dup

[Term]
id: X:1
name: Root

[Term]
id: X:2
name: First name
synonym: "first syn" EXACT []
is_a: X:1 ! Root

[Term]
id: X:2
name: Second name
"""


def test_duplicate_stanzas_warn_with_lines_and_keep_both_names(tmp_path):
    from kgnorm.ontologies import obo as obo_loader

    f = tmp_path / "dup.obo"
    f.write_text(DUP_OBO)
    g = obo_loader.load(f)
    c = g.concepts["X:2"]
    assert {c.name, *c.synonyms} == {"First name", "Second name", "first syn"}
    assert any("X:2 has 2 [Term] stanzas (lines 9, 15)" in w for w in g.warnings), g.warnings


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_utf16_file_is_named_as_such(tmp_path, encoding):
    from kgnorm.errors import InputError
    from kgnorm.ontologies import medic, obo as obo_loader

    for loader, body, name in ((obo_loader, DUP_OBO, "x.obo"), (medic, "D900001||Fictional\n", "m.txt")):
        f = tmp_path / name
        f.write_bytes(body.encode(encoding))
        with pytest.raises(InputError, match=r"not UTF-8 \(looks like UTF-16\)"):
            loader.load(f)
