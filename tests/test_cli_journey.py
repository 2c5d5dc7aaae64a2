"""One user journey through the `kgnorm` command, on the embedded store and over bolt:// against
the live Bolt server of tests/conftest.py: ingest an HPO-like OBO file, link two mention files
that reuse the same ids, predict hypernyms, run saved queries, re-ingest. The graph must hold
exactly what the TSVs say, and the re-ingest must keep every link."""
from __future__ import annotations

import csv
import json

import pytest

from cli_runner import run
from test_cli_hierarchy import _toy_obo

FILE_A = "id\ttext\tdoc_id\nm1\ttoy anomaly\td1\nm2\ttoy root\td1\n"
FILE_B = "id\ttext\tdoc_id\nm1\ttoy root\td7\nm2\ttoy anomaly\td7\n"  # same ids, other texts


@pytest.fixture(params=["ladybug", "bolt"])
def journey_store(request, tmp_path, monkeypatch) -> str:
    if request.param == "ladybug":
        return f"ladybug://{tmp_path}/graph"
    uri, database, _ = request.getfixturevalue("bolt_server")
    if database:
        monkeypatch.setenv("KGNORM_NEO4J_DATABASE", database)
    from kgnorm.stores import open_store
    with open_store(uri) as st:
        st.query("MATCH (n) DETACH DELETE n")
    return uri


def _json(capsys, store: str, *args: str) -> list[dict]:
    code, out, err = run(capsys, "query", *args, "--format", "json", "--store", store)
    assert code == 0, err
    return json.loads(out)


def _top1(path) -> dict[str, str]:
    return {r["mention_id"]: (r["mention"], r["concept_uids"])
            for r in csv.DictReader(path.open(), delimiter="\t") if r["rank"] == "1"}


@pytest.mark.filterwarnings("ignore:.*duplicate PMID")  # the reader's own notice of the repeated document
def test_journey_ingest_link_hypernyms_queries_reingest(capsys, tmp_path, journey_store, tiny_bert_dir):
    store = journey_store
    obo = tmp_path / "toy.obo"
    _toy_obo(obo)
    code, _, err = run(capsys, "ingest", "obo", str(obo), "--ontology", "toy", "--store", store, "-q")
    assert code == 0, err
    train = tmp_path / "train.tsv"
    train.write_text("id\ttext\tgold\nt1\ttoy anomaly\tTOY:0001\nt2\ttoy root\tTOY:0000\n")
    model = tmp_path / "biosyn"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "toy", "--out", str(model), "--train", str(train),
                       "--encoder", str(tiny_bert_dir), "--epochs", "1", "--topk", "4", "--store", store, "-q")
    assert code == 0, err
    tsvs = {}
    for name, body in (("a", FILE_A), ("b", FILE_B)):
        mentions = tmp_path / f"{name}.tsv"
        mentions.write_text(body)
        tsvs[name] = tmp_path / f"{name}.links.tsv"
        code, _, err = run(capsys, "link", "--model", str(model), "--input", str(mentions), "--output",
                           str(tsvs[name]), "--store", store, "-q")
        assert code == 0, err
    # the graph holds exactly what each TSV says: same id in two files, two Mention nodes
    graph = _json(capsys, store, "MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) WHERE l.rank = 1 "
                                 "RETURN m.source AS source, m.mention_id AS id, m.text AS text, c.uid AS uid")
    for name, path in tsvs.items():
        src = str(tmp_path / f"{name}.tsv")
        assert {r["id"]: (r["text"], r["uid"]) for r in graph if r["source"] == src} == _top1(path)
    assert len(graph) == 4
    # hypernyms
    dan = tmp_path / "dan"
    code, _, err = run(capsys, "train", "dan", "--ontology", "toy", "--root", "TOY:0000", "--level", "1",
                       "--out", str(dan), "--hidden", "16", "--epochs", "1", "--threads", "1", "--store", store, "-q")
    assert code == 0, err
    names = tmp_path / "names.txt"
    names.write_text("toy anomaly thing\n")
    code, _, err = run(capsys, "hypernyms", "--model", str(dan), "--root", "TOY:0000", "--level", "1",
                       "--names", str(names), "--output", str(tmp_path / "h.tsv"), "--store", store, "-q")
    assert code == 0, err
    # saved queries
    assert _json(capsys, store, "--saved", "concept", "--param", "uid=TOY:0000")[0]["name"] == "toy root"
    assert _json(capsys, store, "--saved", "descendants", "--param", "root=TOY:0000", "--param", "depth=1")
    free = _json(capsys, store, "--saved", "mention_hypernyms", "--param", "run=")
    assert [r["name"] for r in free] == ["toy anomaly thing"]
    links_before = _json(capsys, store, "MATCH (:Mention)-[l:LINKED_TO]->(:Concept) RETURN count(l) AS n")[0]["n"]
    preds_before = _json(capsys, store, "MATCH ()-[p:PREDICTED_IS_A]->(:Concept) RETURN count(p) AS n")[0]["n"]
    # re-ingest the same file: every link stays, and the user is told
    code, _, err = run(capsys, "ingest", "obo", str(obo), "--ontology", "toy", "--store", store, "-q")
    assert code == 0, err
    assert f"kept {links_before + preds_before:,} link(s)" in err
    assert _json(capsys, store, "MATCH (:Mention)-[l:LINKED_TO]->(:Concept) RETURN count(l) AS n")[0]["n"] == links_before
    assert _json(capsys, store, "MATCH ()-[p:PREDICTED_IS_A]->(:Concept) RETURN count(p) AS n")[0]["n"] == preds_before
    # a PubTator file that repeats a document: the repeated mentions are stored once, with a warning
    doc = "11|t|toy anomaly here\n11|a|and the toy root.\n11\t0\t11\ttoy anomaly\tDisease\tTOY:0001\n\n"
    pub = tmp_path / "dup.pubtator"
    pub.write_text(doc + doc)
    code, _, err = run(capsys, "link", "--model", str(model), "--input", str(pub), "--output",
                       str(tmp_path / "dup.tsv"), "--store", store, "-q")
    assert code == 0 and "stored once" in err, err
    rows = _json(capsys, store, "MATCH (m:Mention)-[l:LINKED_TO]->(:Concept) WHERE m.source = $s "
                                "RETURN m.mention_id AS id, count(l) AS n", "--param", f"s={pub}")
    assert rows == [{"id": "11:0-11", "n": 1}]
