"""`kgnorm ingest table`: a vocabulary kept as a TSV/CSV table (ontologies/table.py). Columns by header
name or index, delimiters by extension or sniffed, quoted cells, prefixes; every bad row is one
InputError naming file and line, and through the CLI a non-zero exit that leaves the store as it was."""
from __future__ import annotations

import json

import pytest

from cli_runner import run
from kgnorm.errors import InputError
from kgnorm.ontologies import table

VOCAB = ("id\tname\tsynonyms\tparents\n"
         "1\tDisease\t\t\n"
         "2\tBreast Cancer\tbreast carcinoma|mammary cancer\t1\n"
         "3\tFever\tpyrexia\t1\n"
         "4\tInflammatory breast cancer\tIBC\t2|3\n")
COLUMNS = dict(synonyms_column="synonyms", parents_column="parents", prefix="V")


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_tsv_with_header_names(tmp_path):
    g = table.load(write(tmp_path, "myvocab.tsv", VOCAB), **COLUMNS)
    assert g.name == "myvocab" and g.format == "table"
    assert sorted(g.concepts) == ["V:1", "V:2", "V:3", "V:4"]
    c = g.concepts["V:2"]
    assert (c.code, c.name, c.synonyms, c.synonym_scopes) == ("2", "Breast Cancer", ["breast carcinoma", "mammary cancer"],
                                                              ["EXACT", "EXACT"])
    assert sorted(g.parents()["V:4"]) == ["V:2", "V:3"]
    assert [g.concepts[f"V:{i}"].depth for i in "1234"] == [0, 1, 1, 2]
    # the uids hang on the prefix only, not on the ontology's name
    assert sorted(table.load(tmp_path / "myvocab.tsv", "other", **COLUMNS).concepts) == sorted(g.concepts)


def test_csv_without_header_by_index_prefix_and_quoted_cells(tmp_path):
    text = ('HP:1,Root,,\n'
            '7,"Pain, chronic","long-lasting pain;ache\nof old",HP:1\n'  # a quoted comma and line break
            '8,Ache,,7\n')
    path = write(tmp_path, "v.csv", text)
    g = table.load(path, "pain", header=False, id_column="0", name_column="1", synonyms_column="2",
                   parents_column="3", separator=";", prefix="PAIN")
    assert sorted(g.concepts) == ["HP:1", "PAIN:7", "PAIN:8"]            # an id with a prefix keeps it
    assert g.concepts["PAIN:7"].name == "Pain, chronic"
    assert g.concepts["PAIN:7"].synonyms == ["long-lasting pain", "ache\nof old"]
    assert g.parents() == {"PAIN:7": ["HP:1"], "PAIN:8": ["PAIN:7"]}
    # a line after the quoted line break is numbered as the file's line
    bad = write(tmp_path, "bad.csv", text + "9,\n")
    with pytest.raises(InputError, match=r"bad\.csv:5 \(record PAIN:9\): empty name"):
        table.load(bad, header=False, prefix="PAIN")


@pytest.mark.parametrize("name,delim", [("v.txt", "\t"), ("v.txt", ";"), ("v.tsv.gz", "\t")])
def test_delimiter_by_extension_or_sniffed(tmp_path, name, delim):
    body = VOCAB.replace("\t", delim)
    path = tmp_path / name
    if name.endswith(".gz"):
        import gzip
        path.write_bytes(gzip.compress(body.encode()))
    else:
        path.write_text(body, encoding="utf-8")
    g = table.load(path, "v", **COLUMNS)
    assert len(g.concepts) == 4 and len(g.is_a) == 4


def test_header_lookup_is_case_insensitive_and_explicit_delimiter(tmp_path):
    path = write(tmp_path, "v.data", VOCAB.replace("|", ";").replace("\t", "|"))
    g = table.load(path, delimiter="pipe", separator=";", synonyms_column="SYNONYMS", parents_column="Parents",
                   prefix="V")
    assert g.name == "v.data" and g.concepts["V:2"].synonyms == ["breast carcinoma", "mammary cancer"]


def test_a_header_that_looks_like_a_concept_is_said(tmp_path):
    g = table.load(write(tmp_path, "v.tsv", VOCAB.split("\n", 1)[1]), prefix="V")  # no header row
    assert sorted(g.concepts) == ["V:2", "V:3", "V:4"]
    assert g.warnings == [f"{tmp_path / 'v.tsv'}:1: the first row ('1' …) was read as the header, not as a concept; "
                          "give --no-header if it is one"]
    assert table.load(tmp_path / "v.tsv", prefix="V", header=False).warnings == []
    assert table.load(write(tmp_path, "w.tsv", VOCAB), prefix="V").warnings == []


def test_repeated_id_with_the_same_name_merges(tmp_path):
    g = table.load(write(tmp_path, "v.tsv", VOCAB + "3\tFever\thyperthermia\t\n"), **COLUMNS)
    assert g.concepts["V:3"].synonyms == ["pyrexia", "hyperthermia"]


@pytest.mark.parametrize("extra,line,message", [
    ("5\tShort\n", 6, "expected at least 4 columns, found 2"),
    ("\tNo id\t\t1\n", 6, "empty id"),
    ("3\tHyperthermia\t\t1\n", 6, "id '3' is on line 4 already, named 'Fever', not 'Hyperthermia'"),
    ("5\tOrphan\t\t99\n", 6, "IS_A V:5 -> V:99 names unknown id V:99"),
])
def test_bad_rows_name_file_and_line(tmp_path, extra, line, message):
    path = write(tmp_path, "v.tsv", VOCAB + extra)
    with pytest.raises(InputError) as exc:
        table.load(path, **COLUMNS)
    assert str(exc.value).startswith(f"{path}:{line}: ") and message in str(exc.value)


def test_allow_dangling_drops_unknown_parents(tmp_path):
    g = table.load(write(tmp_path, "v.tsv", VOCAB + "5\tOrphan\t\t99\n"), allow_dangling=True, **COLUMNS)
    assert "V:5" not in g.parents() and g.report.dangling_edges == 1


def test_bad_options_and_wrong_files(tmp_path):
    path = write(tmp_path, "v.tsv", VOCAB)
    with pytest.raises(InputError, match=r"v\.tsv:1: no column 'syns' .*columns: id, name, synonyms, parents"):
        table.load(path, synonyms_column="syns", prefix="V")
    with pytest.raises(InputError, match=r"v\.tsv:2: id '1' has no prefix \(as in MYV:1\): give --prefix"):
        table.load(path)
    with pytest.raises(InputError, match="no header row"):
        table.load(path, header=False, synonyms_column="synonyms")
    with pytest.raises(InputError, match="not one character"):
        table.load(path, delimiter="::")
    obo = write(tmp_path, "x.tsv", "format-version: 1.2\n\n[Term]\nid: X:1\nname: x\n")
    with pytest.raises(InputError, match="looks like an OBO file"):
        table.load(obo)
    with pytest.raises(InputError, match="no rows below the header"):
        table.load(write(tmp_path, "empty.tsv", "id\tname\n"))


def _query(capsys, store, uid):
    code, out, err = run(capsys, "query", "--saved", "concept", "--param", f"uid={uid}", "--format", "json",
                         "--store", store)
    assert code == 0, err
    return json.loads(out)


def test_cli_journey_ingest_list_query_and_a_bad_row(capsys, tmp_path):
    src = write(tmp_path, "myvocab.tsv", VOCAB)
    store = f"ladybug://{tmp_path}/graph"
    # a bad row into a store that does not exist yet: no store is made
    bad = write(tmp_path, "bad.tsv", VOCAB + "2\tBreast Neoplasm\t\t1\n")
    code, _, err = run(capsys, "ingest", "table", str(bad), "--ontology", "myv", "--prefix", "MYV",
                       "--synonyms-column", "synonyms", "--parents-column", "parents", "--store", store)
    assert code == 1 and f"{bad}:6: id '2' is on line 3 already" in err
    assert not (tmp_path / "graph").exists()
    code, _, err = run(capsys, "ingest", "table", str(src), "--ontology", "myv", "--prefix", "MYV",
                       "--synonyms-column", "synonyms", "--parents-column", "parents", "--store", store)
    assert code == 0, err
    assert "loaded myv: 4 concepts, 4 IS_A" in err
    code, out, err = run(capsys, "ontologies", "--store", store)
    assert code == 0 and "myv" in out and "table" in out
    before = _query(capsys, store, "MYV:4")
    assert len(before) == 1 and sorted(before[0].pop("parents")) == ["MYV:2", "MYV:3"]
    assert before == [{"uid": "MYV:4", "name": "Inflammatory breast cancer", "ontology": "myv", "depth": 2,
                       "synonyms": ["IBC"], "alt_ids": [], "children": []}]
    # the same bad row as a re-ingest: exit 1, file and line, the stored version untouched
    code, _, err = run(capsys, "ingest", "table", str(bad), "--ontology", "myv", "--prefix", "MYV",
                       "--synonyms-column", "synonyms", "--parents-column", "parents", "--store", store)
    assert code == 1 and f"{bad}:6:" in err
    after = _query(capsys, store, "MYV:4")
    assert sorted(after[0].pop("parents")) == ["MYV:2", "MYV:3"] and after == before
    assert _query(capsys, store, "MYV:2")[0]["name"] == "Breast Cancer"
    code, out, _ = run(capsys, "query", "MATCH (c:Concept) WHERE c.ontology = 'myv' RETURN count(c) AS n",
                       "--format", "json", "--store", store)
    assert json.loads(out) == [{"n": 4}]
