"""`kgnorm annotate`: raw text in, annotated documents out and Document / Mention / IN / LINKED_TO
into the store, on LadybugDB and over Bolt; re-annotating replaces; two inputs that reuse a
document id stay apart; offsets round-trip through every output format."""
from __future__ import annotations

import json

from annotate_fixtures import build, write_jsonl
from cli_runner import run
from kgnorm.documents.readers import read_documents
from test_cli_journey import journey_store as store  # noqa: F401  (a fresh store of each kind)


def _json(capsys, store: str, *args: str) -> list[dict]:
    code, out, err = run(capsys, "query", *args, "--format", "json", "--store", store)
    assert code == 0, err
    return json.loads(out)


def _counts(capsys, store):
    return {name: _json(capsys, store, q)[0]["n"] for name, q in (
        ("docs", "MATCH (d:Document) RETURN count(d) AS n"),
        ("mentions", "MATCH (m:Mention) RETURN count(m) AS n"),
        ("in", "MATCH (:Mention)-[r:`IN`]->(:Document) RETURN count(r) AS n"),
        ("links", "MATCH (:Mention)-[l:LINKED_TO]->(:Concept) RETURN count(l) AS n"),
        ("runs", "MATCH (r:Run) RETURN count(r) AS n"))}


def test_annotate_write_query_replace_and_keep_apart(capsys, tmp_path, store, tiny_bert_dir):
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    src = write_jsonl(tmp_path / "docs.jsonl")
    out = tmp_path / "out.pubtator"
    args = ["annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(src),
            "--input-format", "jsonl", "--output", str(out), "--store", store]
    code, _, err = run(capsys, *args)
    assert code == 0, err
    assert "1 empty document(s) skipped" in err
    written = {d.doc_id: d for d in read_documents(out, "pubtator")}
    assert sorted(written) == ["d1", "d2"]
    rows = _json(capsys, store, "--saved", "document_mentions")
    # the graph holds exactly the output's mentions and their rank-1 concepts
    assert sorted((r["doc_id"], r["start"], r["end"], r["mention"], r["concept"] or "-1") for r in rows) == sorted(
        (d.doc_id, a.start, a.end, a.text, "|".join(a.ids) or "-1") for d in written.values() for a in d.annotations)
    texts = {r["mention"] for r in rows}
    assert {"ataxia telangiectasia", "breast cancer", "Ovarian cancer", "colorectal cancer"} <= texts
    assert "AT" in texts  # the short form the document defines, tagged by document-level consistency
    assert all(r["source"] == str(src) for r in rows) and all(r["type"] == "Disease" for r in rows)
    first = _counts(capsys, store)
    assert first["docs"] == 2 and first["in"] == first["mentions"] == len(rows) and first["runs"] == 1
    # the same call again replaces its run: one copy
    code, _, err = run(capsys, *args, "-q")
    assert code == 0, err
    assert _counts(capsys, store) == first
    # another file reusing the document ids (other text): its own documents and mentions
    other = write_jsonl(tmp_path / "other.jsonl", [{"id": "d1", "text": "Breast cancer only."}])
    code, _, err = run(capsys, "annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(other),
                       "--input-format", "jsonl", "--output", str(tmp_path / "o2.jsonl"), "--output-format", "jsonl",
                       "--store", store, "-q")
    assert code == 0, err
    after = _counts(capsys, store)
    assert after["docs"] == 3 and after["mentions"] == first["mentions"] + 1 and after["runs"] == 2
    d1 = _json(capsys, store, "MATCH (m:Mention)-[:`IN`]->(d:Document) WHERE d.doc_id = 'd1' "
                              "RETURN d.source AS source, count(m) AS n ORDER BY source")
    assert [r["source"] for r in d1] == sorted([str(src), str(other)]) and 1 in [r["n"] for r in d1]


def test_reannotate_with_changed_dictionary_leaves_no_stale_mention(capsys, tmp_path, store, tiny_bert_dir):
    """A new release of the dictionary's ontology no longer names "colorectal cancer": annotating the
    same input again with the same command replaces the run's mentions of each document (the one it
    no longer finds goes), while another run that still has that mention keeps it."""
    from annotate_fixtures import OBO

    model = build(tmp_path, capsys, store, tiny_bert_dir)
    src = write_jsonl(tmp_path / "docs.jsonl")
    base = ["annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(src),
            "--input-format", "jsonl", "--store", store, "-q"]
    args = [*base, "--output", str(tmp_path / "a.pubtator")]
    assert run(capsys, *args)[0] == 0
    # another run (consistency off: another run key) on the same input shares the mention nodes
    assert run(capsys, *base, "--no-consistency", "--output", str(tmp_path / "other.pubtator"))[0] == 0
    assert "colorectal cancer" in {r["mention"] for r in _json(capsys, store, "--saved", "document_mentions")}
    obo = tmp_path / "toyd2.obo"
    obo.write_text(OBO.replace("toyd/2099-01-01", "toyd/2099-02-01")
                   .replace("name: colorectal cancer", "name: colorectal neoplasm"), encoding="utf-8")
    code, _, err = run(capsys, "ingest", "obo", str(obo), "--ontology", "toyd", "--store", store, "-q")
    assert code == 0, err
    code, _, err = run(capsys, *args)
    assert code == 0, err
    again = {d.doc_id: d for d in read_documents(tmp_path / "a.pubtator", "pubtator")}
    assert "colorectal cancer" not in {a.text for d in again.values() for a in d.annotations}
    runs = _json(capsys, store, "MATCH (r:Run) WHERE r.kind = 'annotate' RETURN r.uid AS uid ORDER BY uid")
    assert len(runs) == 2  # the re-run replaced its earlier copy
    rows = _json(capsys, store, "--saved", "document_mentions")
    # per run: exactly what that run's output holds
    for out in ("a.pubtator", "other.pubtator"):
        docs = list(read_documents(tmp_path / out, "pubtator"))
        want = sorted((d.doc_id, a.start, a.end, a.text) for d in docs for a in d.annotations)
        got = sorted({(r["doc_id"], r["start"], r["end"], r["mention"]) for r in rows if r["run"] == _run_of(
            capsys, store, out, runs)})
        assert got == want, out
    # the mention only the other run has is still there; no mention is left in no run
    texts = [r["text"] for r in _json(capsys, store, "MATCH (m:Mention) RETURN m.text AS text")]
    assert texts.count("colorectal cancer") == 1
    orphans = _json(capsys, store, "MATCH (m:Mention) WHERE NOT EXISTS { MATCH (m)-[:`IN`]->(:Document) } "
                                   "RETURN count(m) AS n")
    assert orphans[0]["n"] == 0


def _run_of(capsys, store: str, output: str, runs: list[dict]) -> str:
    """The uid of the annotate run whose consistency setting wrote `output` (a.pubtator: on)."""
    rows = _json(capsys, store, "MATCH (r:Run) WHERE r.kind = 'annotate' RETURN r.uid AS uid, "
                                "r.params_json AS params")
    want = output == "a.pubtator"
    return next(r["uid"] for r in rows if json.loads(r["params"])["consistency"] is want)
