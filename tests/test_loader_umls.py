"""UMLS RRF loader on invented rows in the real layout (UMLS content cannot be shipped)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kgnorm.errors import InputError
from kgnorm.ontologies import umls

from cli_runner import run

RELEASE = Path(__file__).parent / "fixtures" / "umls" / "2099AA"
META = RELEASE / "META"


@pytest.fixture(scope="module")
def full():
    return umls.load(RELEASE)


@pytest.fixture()
def meta(tmp_path) -> Path:
    """A writable copy of the fixture's META folder."""
    return Path(shutil.copytree(META, tmp_path / "2099AA" / "META"))


def _edit(path: Path, lineno: int, line: str) -> None:
    """Insert `line` so that it becomes line `lineno`."""
    lines = path.read_text().splitlines()
    lines.insert(lineno - 1, line)
    path.write_text("\n".join(lines) + "\n")


def test_concepts_are_cuis_with_names_codes_types_and_definitions(full):
    assert sorted(full.concepts) == ["UMLS:C9000001", "UMLS:C9000002", "UMLS:C9000003", "UMLS:C9000005",
                                     "UMLS:C9000006"]  # C9000004 has only a suppressible name
    assert (full.name, full.format, full.version) == ("umls", "umls", "2099AA")
    c = full.concepts["UMLS:C9000002"]
    assert c.code == "C9000002"
    assert c.name == "Invented fever"  # MRRANK: SNOMEDCT_US PT (500) over MSH MH (400)
    assert c.synonyms == ["Fever, Invented", "Made-up pyrexia", "Invented fever attack"]  # no FRE, no suppressible
    assert c.alt_ids == ["MESH:D900002", "SNOMEDCT:900000002", "MEDDRA:10099001"]  # as MEDIC/SNOMED/MedDRA spell them
    assert c.level_label == "Disease or Syndrome|Sign or Symptom"
    assert c.definition == "An invented rise of body temperature, used only in tests."
    assert full.concepts["UMLS:C9000003"].alt_ids == ["MESH:D900003", "HP:9900003"]  # a CURIE code kept as is


def test_is_a_follows_mrrel_direction(full):
    # PAR: CUI2 is the parent of CUI1; CHD: its child; RELA isa: CUI2 isa CUI1; RB is not IS_A
    assert sorted(full.is_a) == [("UMLS:C9000002", "UMLS:C9000001"), ("UMLS:C9000003", "UMLS:C9000001"),
                                 ("UMLS:C9000005", "UMLS:C9000001"), ("UMLS:C9000006", "UMLS:C9000002")]
    assert full.concepts["UMLS:C9000006"].depth == 2
    assert any("1 IS_A row(s) to a concept without a kept name skipped" in w for w in full.warnings)


def test_sources_restrict_names_and_hierarchy():
    g = umls.load(META, sab="MSH,SNOMEDCT_US")
    assert "UMLS:C9000005" not in g.concepts  # NCI only
    assert ("UMLS:C9000005", "UMLS:C9000001") not in g.is_a and len(g.is_a) == 3
    assert g.concepts["UMLS:C9000002"].alt_ids == ["MESH:D900002", "SNOMEDCT:900000002"]
    assert any("3 from another source" in w for w in g.warnings)
    assert umls.load(META, sab=["MSH"]).is_a == [("UMLS:C9000002", "UMLS:C9000001")]


def test_without_mrrank_the_term_type_order_picks_the_name(meta):
    (meta / "MRRANK.RRF").unlink()
    g = umls.load(meta)
    assert g.concepts["UMLS:C9000002"].name == "Fever, Invented"  # MH before PT
    assert g.concepts["UMLS:C9000001"].name == "Invented Diseases"
    assert "Invented fever" in g.concepts["UMLS:C9000002"].synonyms


def test_suppressible_names_only_when_asked():
    g = umls.load(META, suppress=True)
    assert g.concepts["UMLS:C9000004"].name == "Retired invented disorder"
    assert "Pyrexias, Invented" in g.concepts["UMLS:C9000002"].synonyms
    assert ("UMLS:C9000004", "UMLS:C9000001") in g.is_a


def test_languages():
    fre = umls.load(META, lang="FRE")
    assert [c.name for c in fre.concepts.values()] == ["Fièvre inventée"] and fre.is_a == []
    assert "Fièvre inventée" in umls.load(META, lang="ALL").concepts["UMLS:C9000002"].synonyms


def test_wrong_column_count_names_file_and_line(meta):
    _edit(meta / "MRCONSO.RRF", 3, "C9000001|ENG|P|L9000001|PF|S9000002|Y|A9000002|SNOMEDCT_US|PT|Invented|")
    with pytest.raises(InputError) as err:
        umls.load(meta)
    assert err.value.path.endswith("MRCONSO.RRF") and err.value.line == 3
    assert "18 columns expected in MRCONSO, found 11" in str(err.value)


def test_mrrel_row_naming_an_unknown_cui_is_refused_unless_allowed(meta):
    _edit(meta / "MRREL.RRF", 2, "C9000002|A9000004|SCUI|PAR|C9999999|A9999999|SCUI||R9||MSH|MSH|||N||")
    with pytest.raises(InputError) as err:
        umls.load(meta)
    assert err.value.path.endswith("MRREL.RRF") and err.value.line == 2 and "C9999999" in str(err.value)
    g = umls.load(meta, allow_dangling=True)
    assert len(g.is_a) == 4
    assert any("MRREL.RRF:2: 1 IS_A row(s) naming a CUI that MRCONSO.RRF lacks skipped" in w for w in g.warnings)


def test_folder_without_mrconso(tmp_path):
    with pytest.raises(InputError, match="no MRCONSO.RRF"):
        umls.load(tmp_path)


def test_cli_and_workbench(capsys, tmp_path, meta):
    store = str(tmp_path / "graph")
    code, _, err = run(capsys, "ingest", "umls", str(RELEASE), "--sab", "MSH,SNOMEDCT_US", "--store", store)
    assert code == 0, err
    assert "4 concepts, 3 IS_A" in err
    q = ("MATCH (c:Concept) WHERE 'MESH:D900002' IN c.alt_ids "
         "RETURN c.uid AS uid, c.name AS name, c.level_label AS sty")
    code, out, _ = run(capsys, "query", q, "--format", "json", "--store", store)
    assert json.loads(out) == [{"uid": "UMLS:C9000002", "name": "Invented fever",
                                "sty": "Disease or Syndrome|Sign or Symptom"}]
    _edit(meta / "MRSTY.RRF", 1, "C9000001|T047|Disease or Syndrome|")
    code, _, err = run(capsys, "ingest", "umls", str(meta), "--suppress", "--store", store)
    assert code != 0 and len(err.strip().splitlines()) == 1 and "MRSTY.RRF:1" in err
    from kgnorm.api import Workbench

    wb = Workbench(store)
    assert wb.query("MATCH (c:Concept) RETURN count(c) AS n")["n"][0] == 4  # unchanged by the failure
    wb.ingest("umls", RELEASE, suppress=True, quiet=True)
    assert wb.query("MATCH (c:Concept) RETURN count(c) AS n")["n"][0] == 6


def test_umls_and_lenient_obo_load_into_a_bolt_server(bolt_server, monkeypatch):
    """The Neo4j leg: the same graphs through a live Bolt server."""
    from kgnorm.jobs.ingest import ingest
    from kgnorm.stores import open_store

    uri, database, _ = bolt_server
    if database:
        monkeypatch.setenv("KGNORM_NEO4J_DATABASE", database)
    with open_store(uri) as st:
        st.query("MATCH (n) DETACH DELETE n")
    assert ingest("umls", RELEASE, store=uri, quiet=True, sab="MSH,SNOMEDCT_US").concepts == 4
    odd = ingest("obo", Path(__file__).parent / "fixtures" / "obo" / "real_oddities.obo", store=uri, quiet=True)
    assert (odd.concepts, odd.is_a) == (4, 4)
    with open_store(uri) as st:
        rows = st.query("MATCH (c:Concept)-[:IS_A]->(p:Concept) WHERE c.ontology = 'umls' "
                        "RETURN c.uid AS c, p.uid AS p ORDER BY c", {}).rows
    assert [tuple(r) for r in rows] == [("UMLS:C9000002", "UMLS:C9000001"), ("UMLS:C9000003", "UMLS:C9000001"),
                                        ("UMLS:C9000006", "UMLS:C9000002")]


def test_sources_that_match_nothing_say_which_the_file_has():
    with pytest.raises(InputError, match=r"no name kept of 15: sources MESH.*the file's sources: HPO, MDR, MSH"):
        umls.load(META, sab="MESH")
