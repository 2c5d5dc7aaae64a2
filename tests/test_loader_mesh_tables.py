"""`kgnorm ingest mesh DIR` on the MeSH name tables (ontologies/mesh_tables.py): the same concepts as the
XML form of the same records (uid, name, synonyms, parents), `--branches` on both forms, the folder
detection, and bad rows naming file and line. The fixtures are invented and written here."""
from __future__ import annotations

import json

import pytest

from cli_runner import run
from kgnorm.errors import InputError
from kgnorm.ontologies import mesh
from kgnorm.ontologies.mesh_tables import DESCRIPTORS, SUPPLEMENTARIES

# ui, name, entry terms, tree numbers
DESC = [("D900010", "Fictional Chemicals", ["Made-up Chemicals"], ["D99"]),
        ("D900011", "Fictional Acids", ["Invented Acids", "Acids, Fictional"], ["D99.100", "C99.200"]),
        ("D900012", "Fictional Amino Acids", [], ["D99.100.300.400"]),  # D99.100.300 unlisted: walked up
        ("D900020", "Fictional Disease", ["Made-up Disease"], ["C99"]),
        ("D900030", "Fictional Females", ["Females, Fictional"], [])]
# ui, name, synonyms, mapped descriptors
SUPP = [("C900100", "fictozine", ["FZ-1", "fictozine hydrochloride"], ["*D900012", "D900020"]),
        ("C900200", "made-up syndrome X", ["MSX"], ["D900020"])]


def _terms(ui: str, name: str, terms: list[str]) -> str:
    strings = "".join(f'<Term IsPermutedTermYN="N"><String>{t}</String></Term>' for t in [name, *terms])
    return (f'<ConceptList><Concept PreferredConceptYN="Y"><ConceptUI>M{ui[1:]}</ConceptUI>'
            f'<TermList>{strings}</TermList></Concept></ConceptList>')


def write_xml(folder):
    folder.mkdir()
    desc = "".join(
        f"<DescriptorRecord><DescriptorUI>{ui}</DescriptorUI><DescriptorName><String>{name}</String></DescriptorName>"
        + (f"<TreeNumberList>{''.join(f'<TreeNumber>{t}</TreeNumber>' for t in trees)}</TreeNumberList>" if trees else "")
        + _terms(ui, name, terms) + "</DescriptorRecord>\n" for ui, name, terms, trees in DESC)
    (folder / "desc2099.xml").write_text(f'<?xml version="1.0"?>\n<DescriptorRecordSet>\n{desc}</DescriptorRecordSet>\n')
    supp = "".join(
        f"<SupplementalRecord><SupplementalRecordUI>{ui}</SupplementalRecordUI><SupplementalRecordName><String>{name}"
        f"</String></SupplementalRecordName><HeadingMappedToList>"
        + "".join(f"<HeadingMappedTo><DescriptorReferredTo><DescriptorUI>{d}</DescriptorUI></DescriptorReferredTo>"
                  f"</HeadingMappedTo>" for d in mapped)
        + "</HeadingMappedToList>" + _terms(ui, name, syns) + "</SupplementalRecord>\n" for ui, name, syns, mapped in SUPP)
    (folder / "supp2099.xml").write_text(f'<?xml version="1.0"?>\n<SupplementalRecordSet>\n{supp}</SupplementalRecordSet>\n')
    return folder


def write_tables(folder, desc=True, supp=True):
    folder.mkdir()
    if desc:
        (folder / DESCRIPTORS).write_text("".join(f"{ui}\t{name}\t{'|'.join(terms)}\t{'|'.join(trees)}\t\n"
                                                  for ui, name, terms, trees in DESC))
    if supp:  # the mapped descriptors joined by commas, as the real table has them
        (folder / SUPPLEMENTARIES).write_text("".join(f"{ui}\t{name}\t{'|'.join(syns)}\t{','.join(mapped)}\n"
                                                      for ui, name, syns, mapped in SUPP))
    return folder


def concepts(graph) -> dict[str, tuple]:
    parents = graph.parents()
    return {uid: (c.code, c.name, c.synonyms, c.level_label, c.depth, sorted(parents.get(uid, [])))
            for uid, c in graph.concepts.items()}


@pytest.mark.parametrize("branches", [None, ["D"], ["C99"], ["D", "C"]])
def test_tables_give_the_concepts_the_xml_gives(tmp_path, branches):
    xml = mesh.load(write_xml(tmp_path / "xml"), branches=branches)
    tables = mesh.load(write_tables(tmp_path / "tables"), branches=branches)
    assert tables.format == xml.format == "mesh" and tables.name == "mesh"
    assert concepts(tables) == concepts(xml)
    assert [w for w in tables.warnings] == [w for w in xml.warnings]


def test_the_tables_concepts(tmp_path):
    g = mesh.load(write_tables(tmp_path / "tables"))
    got = concepts(g)
    assert got["MESH:D900011"] == ("D900011", "Fictional Acids", ["Invented Acids", "Acids, Fictional"], "", 2,
                                   ["MESH:D900010", "MESH:D900020"])  # D99.100 and C99.200
    assert got["MESH:D900012"][-1] == ["MESH:D900011"]  # walked up past the unlisted D99.100.300
    assert got["MESH:C900100"] == ("C900100", "fictozine", ["FZ-1", "fictozine hydrochloride"], "supplementary", 2,
                                   ["MESH:D900012", "MESH:D900020"])
    assert got["MESH:D"][1:] == ("Chemicals and Drugs", [], "category", 0, [])
    assert got["MESH:D900030"][-2:] == (0, [])  # no tree number: a root
    assert any("nearest listed ancestor" in w for w in g.warnings)


def test_branches(tmp_path):
    g = mesh.load(write_tables(tmp_path / "tables"), branches=["D"])
    assert sorted(g.concepts) == ["MESH:C900100", "MESH:D", "MESH:D900010", "MESH:D900011", "MESH:D900012"]
    p = g.parents()
    assert p["MESH:D900011"] == ["MESH:D900010"]  # its C tree number left with the C branch
    assert p["MESH:C900100"] == ["MESH:D900012"]  # mapped into D (and C): kept, under its D heading only
    g = mesh.load(write_tables(tmp_path / "c99"), branches=["C99"])
    assert sorted(g.concepts) == ["MESH:C", "MESH:C900100", "MESH:C900200", "MESH:D900011", "MESH:D900020"]
    assert g.parents()["MESH:D900011"] == ["MESH:D900020"]


def test_folder_detection(tmp_path):
    g = mesh.load(write_tables(tmp_path / "desc_only", supp=False))
    assert "MESH:D900012" in g.concepts and not any(c.level_label == "supplementary" for c in g.concepts.values())
    assert len(mesh.load(tmp_path / "desc_only" / DESCRIPTORS).concepts) == len(g.concepts)  # one table as a file
    folder = write_tables(tmp_path / "supp_only", desc=False)
    with pytest.raises(InputError, match=rf"{SUPPLEMENTARIES}:1: IS_A MESH:C900100 -> MESH:D900012 names unknown id"):
        mesh.load(folder)
    assert sorted(mesh.load(folder, allow_dangling=True).concepts) == ["MESH:C900100", "MESH:C900200"]
    (tmp_path / "nothing").mkdir()
    with pytest.raises(InputError, match="nor the MeSH name tables"):
        mesh.load(tmp_path / "nothing")


def test_a_quoted_cell_may_hold_a_tab(tmp_path):
    folder = write_tables(tmp_path / "t")
    with (folder / SUPPLEMENTARIES).open("a") as fh:  # one row of the real table is quoted this way
        fh.write('C900300\tAckr1 protein fictional\t"Dfy protein|ID: 1 ims\tatypical receptor"\tD900012,D900011\n')
    g = mesh.load(folder)
    assert g.concepts["MESH:C900300"].synonyms == ["Dfy protein", "ID: 1 ims\tatypical receptor"]
    assert sorted(g.parents()["MESH:C900300"]) == ["MESH:D900011", "MESH:D900012"]


@pytest.mark.parametrize("table,row,message", [
    (DESCRIPTORS, "D900040\tShort\n", "expected 4 TAB-separated columns (id, name, synonyms, tree numbers), found 2"),
    (DESCRIPTORS, "ui\tname\tterms\ttrees\t\n", "'ui' is not a MeSH descriptor id"),
    (SUPPLEMENTARIES, "C900400\t\tx\tD900010\n", "(record C900400): empty name"),
])
def test_bad_rows_name_file_and_line(tmp_path, table, row, message):
    folder = write_tables(tmp_path / "t")
    path = folder / table
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:1] + [row] + lines[1:]))
    with pytest.raises(InputError) as exc:
        mesh.load(folder)
    assert str(exc.value).startswith(f"{path}:2") and message in str(exc.value)


def test_cli_branches_repeatable(capsys, tmp_path):
    folder = write_tables(tmp_path / "t")
    store = f"ladybug://{tmp_path}/graph"
    code, _, err = run(capsys, "ingest", "mesh", str(folder), "--branches", "D", "--branches", "C99", "--ontology",
                       "chem", "--store", store)
    assert code == 0, err
    assert "loaded chem: 8 concepts" in err
    code, out, err = run(capsys, "query", "--saved", "concept", "--param", "uid=MESH:C900100", "--format", "json",
                         "--store", store)
    assert code == 0, err
    row = json.loads(out)[0]
    assert (row["name"], sorted(row["parents"])) == ("fictozine", ["MESH:D900012", "MESH:D900020"])
