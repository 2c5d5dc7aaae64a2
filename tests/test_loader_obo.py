"""OBO loader on small hp.obo-shaped fixtures (the real HPO is only a manual check)."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from kgnorm.errors import InputError
from kgnorm.ontologies import obo

from cli_runner import run

FIX = Path(__file__).parent / "fixtures" / "obo"
ODD = FIX / "real_oddities.obo"  # each oddity of docs/formats.md "What real releases carry", as releases have them


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


def test_synonym_without_xref_list_is_kept_with_a_warning_naming_the_line():
    g = obo.load(FIX / "bad_syntax.obo")  # fastobo refuses the file; the lenient reader mends line 11
    assert g.concepts["BAD:0000002"].synonyms == ["no xref list"]
    assert g.concepts["BAD:0000002"].synonym_scopes == ["EXACT"]
    assert any("bad_syntax.obo:11: 1 synonym(s) with a malformed scope or xref list" in w for w in g.warnings), g.warnings


def test_undeclared_synonym_type_is_accepted_with_a_warning():
    g = obo.load(FIX / "undeclared_synonym_type.obo")
    assert g.concepts["UND:0000002"].synonyms == ["typed"]
    [w] = [w for w in g.warnings if "does not declare" in w]
    assert "undeclared_synonym_type.obo:11:" in w and "undeclared_type ×1" in w


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
    assert "1 is_a edge(s) to obsolete terms redirected to replaced_by" in g.warnings
    assert "1 is_a edge(s) to obsolete terms without a single live replaced_by dropped" in g.warnings
    assert set(g.retired) == {"OBS:2", "OBS:3"}


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


# -- what real releases contain and fastobo refuses (docs/formats.md) ------------------------
@pytest.fixture(scope="module")
def odd():
    return obo.load(ODD)


def _warning(graph, text: str) -> str:
    found = [w for w in graph.warnings if text in w]
    assert len(found) == 1, graph.warnings
    return found[0]


def test_every_readable_term_loads(odd):
    assert sorted(odd.concepts) == ["ODD:0000001", "ODD:0000002", "ODD:0000003", "ODD:0000005"]
    assert sorted(odd.is_a) == [("ODD:0000002", "ODD:0000001"), ("ODD:0000003", "ODD:0000001"),
                                ("ODD:0000005", "ODD:0000002"), ("ODD:0000005", "ODD:0000003")]
    assert odd.version == "odd/releases/2099-01-01" and odd.name == "odd"


def test_malformed_definition_xrefs_keep_the_text(odd):
    assert odd.concepts["ODD:0000002"].definition == "A definition whose xref has spaces, as in DOID 2016."
    assert odd.concepts["ODD:0000005"].definition.startswith("Two malformed definitions")
    assert odd.concepts["ODD:0000003"].definition == "A definition with an xref without a prefix."
    w = _warning(odd, "definition(s) with malformed xrefs kept without their xrefs")
    assert w.startswith(f"{ODD}:18: 2 definition(s)") and "(line(s) 18, 53)" in w


def test_undeclared_synonym_types_accepted_with_a_count(odd):
    c = odd.concepts["ODD:0000002"]
    assert dict(zip(c.synonyms, c.synonym_scopes)) == {
        "IE": "EXACT", "epilepsy, invented": "RELATED", "invented seizure disorder": "EXACT"}
    w = _warning(odd, "synonym(s) of a type the header does not declare")
    assert "OMO:0003012 ×2" in w and w.startswith(f"{ODD}:19: 2 ")


def test_malformed_synonyms_keep_text_and_scope(odd):
    c = odd.concepts["ODD:0000003"]
    assert dict(zip(c.synonyms, c.synonym_scopes)) == {
        "synonym without its xref list": "EXACT", "synonym with a broken xref list": "RELATED"}
    assert "(line(s) 32, 33)" in _warning(odd, "synonym(s) with a malformed scope or xref list")


def test_escaped_colons_and_trailing_modifiers(odd):
    assert odd.concepts["ODD:0000002"].xrefs == ["MESH:D999001", "url:http://example.org/ie"]
    assert odd.concepts["ODD:0000001"].definition == "A root, defined with an escaped URL."


def test_unreadable_lines_and_stanzas_are_counted_not_silent(odd):
    assert _warning(odd, "header line(s) that are not OBO dropped").startswith(f"{ODD}:6: 1 ")
    assert _warning(odd, "property_value line(s) with an unquoted value").startswith(f"{ODD}:26: 1 ")
    assert _warning(odd, "creation_date line(s) that are not valid OBO dropped").startswith(f"{ODD}:34: 1 ")
    assert _warning(odd, "stanza(s) with an unreadable header or id dropped").startswith(f"{ODD}:38: 1 ")


def test_obsolete_terms_are_retired_not_concepts(odd):
    assert "ODD:0000004" not in odd.concepts
    r = odd.retired["ODD:0000004"]
    assert (r.name, r.replaced_by, r.consider) == ("obsolete invented disorder", ["ODD:0000002"], ["MONDO:9999999"])
    assert not any("obsolete" in w for w in odd.warnings)  # retired, not dropped: no warning


def test_hp_obsolete_ids_resolve_through_retired():
    g = obo.load(FIX / "hp_mini.obo")
    assert g.retired["HP:9990002"].replaced_by == ["HP:9990001"]
    assert all(uid not in g.concepts for uid in g.retired)


def _slim(tmp_path) -> Path:
    p = tmp_path / "slim.obo"
    p.write_text('format-version: 1.2\nontology: slim\n\n[Term]\nid: S:1\nname: root\n'
                 '! a comment line inside a stanza\n\n[Term]\nid: S:2\nname: child\n'
                 'synonym: "kid" EXACT\nis_a: S:1\nis_a: OUT:404 ! outside the slim\n')
    return p


def test_slim_with_is_a_outside_the_file(tmp_path):
    with pytest.raises(InputError) as err:
        obo.load(_slim(tmp_path))
    assert err.value.line == 14 and "OUT:404" in str(err.value) and "--allow-dangling" in str(err.value)
    g = obo.load(_slim(tmp_path), allow_dangling=True)
    assert g.is_a == [("S:2", "S:1")] and g.concepts["S:2"].synonyms == ["kid"]
    assert g.report.dangling_examples == [("S:2", "OUT:404")]
    assert any("slim.obo:7: 1 untagged line(s)" in w for w in g.warnings), g.warnings


@pytest.mark.parametrize("body, message, line", [
    ("<!DOCTYPE html>\n<html><head><title>Not found</title></head><body>404</body></html>\n", "HTML", None),
    ("hello world\nthese are notes\n", "no readable \\[Term\\] stanza", 1)])
def test_files_that_are_not_obo_fail_in_one_line(tmp_path, body, message, line):
    (tmp_path / "hp.obo").write_text(body)
    with pytest.raises(InputError, match=message) as err:
        obo.load(tmp_path / "hp.obo")
    assert err.value.line == line


def test_cli_loads_the_oddities_and_says_what_it_mended(capsys, tmp_path):
    store = str(tmp_path / "graph")
    code, out, err = run(capsys, "ingest", "obo", str(ODD), "--store", store)
    assert code == 0, err
    assert "2 definition(s) with malformed xrefs" in err and "4 concepts" in err
    code, out, _ = run(capsys, "query", "MATCH (c:Concept) RETURN count(c) AS n", "--format", "json", "--store", store)
    assert '"n": 4' in out
    page = tmp_path / "page.obo"
    page.write_text("<html><body>404</body></html>\n")
    code, _, err = run(capsys, "ingest", "obo", str(page), "--store", store)
    assert code != 0 and len(err.strip().splitlines()) == 1 and "page.obo" in err
