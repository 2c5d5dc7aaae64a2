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
