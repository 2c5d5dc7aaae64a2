"""The one-pass OBO reader (ontologies/obo_fast.py) builds exactly the graph pronto's reading
builds, and hands every file outside its subset back to pronto (answers None)."""
from __future__ import annotations

import gzip
from dataclasses import asdict
from pathlib import Path

import pytest

from kgnorm.graph.ontology_graph import OntologyGraph
from kgnorm.ontologies import obo, obo_fast

FIX = Path(__file__).parent / "fixtures" / "obo"

WELL_FORMED = r"""format-version: 1.2
data-version: wf/releases/2099-01-01
date: 01:02:2099 03:04
subsetdef: core "Core terms"
synonymtypedef: layperson "layperson term"
synonymtypedef: abbreviation "abbreviation" EXACT
default-namespace: wf
idspace: dc http://purl.org/dc/elements/1.1/ 
remark: made for kgnorm's tests
ontology: wf.obo
property_value: dc:creator "Someone Köhler" xsd:string
property_value: IAO:0000700 WF:0000001
property_value: http://purl.org/dc/terms/license https://example.org/license
logical-definition-view-relation: has_part

[Term]
id: WF:0000001
name: All
comment: Root of all terms.
creation_date: 2008-02-27T02:20:00Z

[Term]
id: WF:0000002
name: Abnormality of the heart
is_a: WF:0000001 ! All
"""

TERMS = r"""
[Term]
id: WF:0000003
name: Heart defect  
alt_id: WF:0000903
alt_id: WF:0000901
def: "A \"defect\" of the heart,\nover two lines." [PMID:1, https://example.org/a#\:~\:text=x, url:http\://en.wikipedia.org/wiki/Heart, ISBN:978-0 "a book"]
comment: See also the valves. {xref="PMID:2"}
subset: core
synonym: "heart defects" EXACT layperson [] {source="WF:curator"}
synonym: "HD" EXACT abbreviation [PMID:3]
synonym: "cardiac defect" RELATED []
synonym: "cardiac defect" BROAD []
synonym: "Heart defect" EXACT []
xref: UMLS:C0000001 "Heart defect"
xref: ICD-O:M8272/0
xref: MSH:D000001 ! a comment
xref: UMLS:C0000001
is_a: WF:0000002 ! Abnormality of the heart
is_a: WF:0000002
is_a: WF:0000004 {source="old"}
is_a: WF:0000005
property_value: terms:creator https://orcid.org/0000-0001
property_value: IAO:0000233 "https://github.com/x/y/issues/1" xsd:anyURI
creation_date: 2010-01-01T10:00:00+01:00
namespace: wf

[Term]
id: WF:0000004
name: Old heart term
is_obsolete: true
replaced_by: WF:0000002
consider: WF:0000003
consider: WF:0000001

[Term]
id: WF:0000005
name: Older heart term
is_obsolete: true

[Term]
id: WF:0000006
is_a: WF:0000006

[Typedef]
id: part_of
name: part of
xref: BFO:0000050
is_transitive: true
holds_over_chain: part_of part_of

[Typedef]
id: has_part
name: has part
inverse_of: part_of
"""


def _graph(tmp_path: Path, text: str, name: str = "wf.obo") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _same(fast: OntologyGraph, ref: OntologyGraph) -> None:
    for field in ("name", "version", "format", "source_path", "warnings"):
        assert getattr(fast, field) == getattr(ref, field), field
    assert sorted(fast.is_a) == sorted(ref.is_a)
    assert {u: asdict(c) for u, c in fast.concepts.items()} == {u: asdict(c) for u, c in ref.concepts.items()}
    assert {u: asdict(r) for u, r in fast.retired.items()} == {u: asdict(r) for u, r in ref.retired.items()}
    assert asdict(fast.report) == asdict(ref.report)


def test_a_well_formed_file_gives_pronto_s_graph(tmp_path):
    p = _graph(tmp_path, WELL_FORMED + TERMS)
    assert obo_fast.read(p) is not None
    fast, ref = obo.load(p), obo.load(p, parser="pronto")
    _same(fast, ref)
    heart = fast.concepts["WF:0000003"]  # what the fixture is for, said plainly
    assert heart.name == "Heart defect"
    assert heart.definition == 'A "defect" of the heart,\nover two lines.'
    assert heart.synonyms == ["HD", "cardiac defect", "heart defects"]
    assert heart.synonym_scopes == ["EXACT", "BROAD", "EXACT"]
    assert heart.xrefs == ["ICD-O:M8272/0", "MSH:D000001", "UMLS:C0000001"]
    assert heart.alt_ids == ["WF:0000901", "WF:0000903"]
    assert sorted(fast.is_a) == [("WF:0000002", "WF:0000001"), ("WF:0000003", "WF:0000002")]
    assert fast.retired["WF:0000004"].consider == ["WF:0000001", "WF:0000003"]
    assert fast.version == "wf/releases/2099-01-01" and fast.name == "wf"


def test_gzipped_and_named(tmp_path):
    text = WELL_FORMED
    gz = tmp_path / "wf.obo.gz"
    gz.write_bytes(gzip.compress(text.encode("utf-8")))
    assert obo_fast.read(gz, "mine") is not None
    _same(obo.load(gz, "mine"), obo.load(gz, "mine", parser="pronto"))


@pytest.mark.parametrize("change", [
    ("name: Abnormality of the heart", "name: Abnormality of the heart ! why"),  # `!` in a name
    ("ontology: wf.obo", "import: http://example.org/other.obo\nontology: wf.obo"),
    ("ontology: wf.obo", "treat-xrefs-as-is_a: MSH\nontology: wf.obo"),
    ("is_a: WF:0000001 ! All", "is_a: WF:0000099"),  # no stanza for the parent
    ("is_a: WF:0000001 ! All", "relationship: part_of WF:0000001"),
    ("is_a: WF:0000001 ! All", 'synonym: "x" EXACT undeclared []'),
    ("is_a: WF:0000001 ! All", 'synonym: "x" EXACT'),  # no xref list
    ("is_a: WF:0000001 ! All", 'def: "x" [JA:Epilepsy Genetics Kiel, PMID:1]'),
    ("is_a: WF:0000001 ! All", "creation_date: 27/02/2008"),
    ("is_a: WF:0000001 ! All", "creation_date: 2010-01-01"),  # pronto warns: incomplete date
    ("is_a: WF:0000001 ! All", "alt_id: DO:DOID\\:9999001"),
    ("is_a: WF:0000001 ! All", "intersection_of: WF:0000001"),
    ("id: WF:0000002", "id: WF:0000001"),  # two stanzas for one id
    ("[Term]\nid: WF:0000002", "[Instance]\nid: WF:0000002"),
    ("name: All", "name: All\nname: Everything"),
])
def test_anything_outside_the_subset_goes_to_pronto(tmp_path, change):
    assert change[0] in WELL_FORMED
    p = _graph(tmp_path, WELL_FORMED.replace(*change, 1))
    assert obo_fast.read(p) is None


def test_crlf_bom_and_legacy_bytes_go_to_pronto(tmp_path):
    text = WELL_FORMED
    assert obo_fast.read(_graph(tmp_path, text)) is not None  # the same text as UTF-8 with LF is read
    for data in (text.replace("\n", "\r\n").encode(), b"\xef\xbb\xbf" + text.encode(), text.encode("latin-1")):
        p = tmp_path / "x.obo"
        p.write_bytes(data)
        assert obo_fast.read(p) is None


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIX.glob("*.obo")))
def test_each_fixture_either_reads_alike_or_goes_to_pronto(fixture):
    path = FIX / fixture
    fast = obo_fast.read(path)
    if fast is not None:
        fast.finalize()
        _same(fast, obo.load(path, parser="pronto"))


def test_a_file_without_live_terms_goes_to_pronto(tmp_path):
    assert obo_fast.read(_graph(tmp_path, WELL_FORMED.split("[Term]")[0])) is None


def test_the_cli_takes_the_parser(tmp_path, capsys):
    from cli_runner import run

    p = _graph(tmp_path, WELL_FORMED + TERMS)
    for parser in ("fast", "pronto"):
        code, out, err = run(capsys, "ingest", "obo", str(p), "--store", f"ladybug://{tmp_path / parser}",
                             "--parser", parser)
        assert code == 0, err
        assert "loaded wf wf/releases/2099-01-01: 4 concepts, 2 IS_A" in out + err
    code, out, err = run(capsys, "ingest", "obo", str(p), "--store", f"ladybug://{tmp_path / 'x'}", "--parser", "fastest")
    assert code != 0 and "unknown OBO parser 'fastest'" in err


def test_escapes_in_quoted_text_read_as_pronto_reads_them(tmp_path):
    p = _graph(tmp_path, 'format-version: 1.2\nontology: esc\n\n[Term]\nid: E:1\nname: one\n'
                         'def: "tab\\there, slash \\\\ end, quote \\" q, new\\nline" []\n'
                         'synonym: "a\\tb" EXACT []\nsynonym: "c\\\\d" EXACT []\n', "esc.obo")
    assert obo_fast.read(p) is not None
    fast, ref = obo.load(p), obo.load(p, parser="pronto")
    _same(fast, ref)
    assert fast.concepts["E:1"].definition == 'tab\there, slash \\ end, quote " q, new\nline'
    assert fast.concepts["E:1"].synonyms == ["a\tb", "c\\d"]
