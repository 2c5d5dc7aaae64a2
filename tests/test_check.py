"""`kgnorm check` (issue 52): a store made by the real jobs (ingest, link --write of a PubTator file,
a review through the ReviewDesk) is sound on both stores; the same store broken by hand on purpose
(Cypher writes, a journal line) fails with a line for each thing broken, and the API says the same."""
from __future__ import annotations

import json
import os
import socket

import pytest

from annotate_fixtures import build, write_pubtator
from cli_runner import run
from kgnorm import Workbench
from kgnorm.review.desk import ReviewDesk
from kgnorm.review.journal import ReviewJournal
from kgnorm.review.records import Review
from kgnorm.stores import embedded_path
from test_cli_journey import journey_store as store  # noqa: F401  (a fresh store of each kind)

DOCS = [("1001", "Ataxia telangiectasia and breast cancer.",
         "Carriers of ataxia telangiectasia mutations have breast cancer more often.",
         [("Ataxia telangiectasia", "TOYD:0001"), ("breast cancer", "TOYD:0002")]),
        ("1002", "Ovarian cancer in families.", "No link between ovarian cancer and colorectal cancer was seen.",
         [("Ovarian cancer", "TOYD:0003"), ("colorectal cancer", "TOYD:0004")]),
        # characters that combine (LadybugDB's size() counts 2 where Python counts 6 before the mention)
        ("1003", "Cafe\u0301 \U0001F600\u200d\U0001F600 and breast cancer.", "",
         [("breast cancer", "TOYD:0002")])]


def _json(capsys, store: str, cypher: str, *params: str) -> list[dict]:
    code, out, err = run(capsys, "query", cypher, *params, "--format", "json", "--store", store)
    assert code == 0, err
    return json.loads(out)


def _write(capsys, store: str, cypher: str, *params: str) -> None:
    code, _, err = run(capsys, "query", cypher, *params, "--write", "--store", store)
    assert code == 0, err


def _check(capsys, store: str) -> tuple[int, str, dict]:
    code, out, err = run(capsys, "check", "--store", store)
    jcode, jout, jerr = run(capsys, "check", "--format", "json", "--store", store)
    assert code == jcode and not err and not jerr, (err, jerr)
    return code, out, json.loads(jout)


@pytest.fixture
def sound(capsys, tmp_path, store, tiny_bert_dir) -> dict:
    """The store after ingest, link --write of two documents and one review; what was reviewed."""
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    src = tmp_path / "docs.pubtator"
    write_pubtator(src, DOCS)
    code, _, err = run(capsys, "link", "--model", str(model), "--input", str(src), "--output",
                       str(tmp_path / "links.tsv"), "--store", store, "-q")
    assert code == 0, err
    mention = _json(capsys, store, "MATCH (m:Mention) WHERE m.text = 'breast cancer' AND m.doc_id = '1001' "
                    "RETURN m.uid AS uid")[0]["uid"]
    desk = ReviewDesk(store)
    try:
        review = desk.record(mention, "concept", "TOYD:0003", reviewer="ann")
    finally:
        desk.close()
    return {"store": store, "mention": mention, "review": review.uid, "model": model, "tmp": tmp_path}


def test_a_store_made_by_the_jobs_is_sound(capsys, sound):
    code, out, rep = _check(capsys, sound["store"])
    assert code == 0, out
    assert out.strip().splitlines() == [f"sound: 1 Ontology, 5 Concept, 5 Mention, 3 Document, 1 Review, "
                                        f"{rep['read']['Run']} Run"]
    assert rep["sound"] is True and rep["findings"] == []
    assert rep["read"]["Run"] >= 1
    assert Workbench(sound["store"]).check().sound
    # mentions of a file without text (a TSV with a type column) are in no document, and rightly so
    tsv = sound["tmp"] / "mentions.tsv"
    tsv.write_text("id\ttext\tdoc_id\ttype\nm1\tbreast carcinoma\t9\tDisease\n", encoding="utf-8")
    code, _, err = run(capsys, "link", "--model", str(sound["model"]), "--input", str(tsv), "--output",
                       str(sound["tmp"] / "tsv-links.tsv"), "--store", sound["store"], "-q")
    assert code == 0, err
    code, out, _ = _check(capsys, sound["store"])
    assert code == 0 and "6 Mention" in out, out


def test_a_store_broken_by_hand_fails_with_a_line_for_each_break(capsys, sound):
    store, mention = sound["store"], sound["mention"]
    # a document deleted under its mentions
    _write(capsys, store, "MATCH (d:Document) WHERE d.doc_id = '1002' DETACH DELETE d")
    # a mention offset past its document's text
    _write(capsys, store, "MATCH (m:Mention) WHERE m.text = 'Ataxia telangiectasia' SET m.`end` = 5000")
    # a staged run a process on another machine left behind, and edges of a run that is no Run
    _write(capsys, store, "CREATE (:Run {uid: 'link-left~staging', kind: 'staging', method: 'biosyn', "
                          "model_path: '', params_json: '{}', created_at: '2026-01-01T00:00:00+00:00', "
                          "metrics_json: '{\"owner\": {\"pid\": 1, \"host\": \"another-host\"}}'})")
    _write(capsys, store, "MATCH (m:Mention)-[l:LINKED_TO]->() WHERE m.text = 'Ovarian cancer' SET l.run = 'link-gone'")
    # a concept deleted, so the ontology holds fewer concepts than were loaded
    _write(capsys, store, "MATCH (c:Concept) WHERE c.uid = 'TOYD:0000' DETACH DELETE c")
    # the reviewed mention deleted under its review
    _write(capsys, store, "MATCH (m:Mention) WHERE m.uid = $m DETACH DELETE m", "--param", f"m={mention}")
    path = embedded_path(store)
    if path is not None:  # a journal line whose review is in no store (the embedded store's journal)
        journal = ReviewJournal.beside(path)
        journal.append(Review("f00d" * 8, "nowhere:m1", "nil", reviewer="bob",
                              created_at="2026-01-02T00:00:00+00:00", doc_id="1001"))
        with open(journal.path, "a", encoding="utf-8") as fh:  # a damaged line, then a torn last write
            fh.write('{"uid": "half"\n{"uid": "torn", "mention')
    code, out, rep = _check(capsys, store)
    assert code == 1 and rep["sound"] is False
    lines = out.strip().splitlines()
    assert lines[-1].startswith("not sound: ")
    problems = {f["check"]: f["message"] for f in rep["findings"] if f["problem"]}
    want = {"mention-without-document", "offsets", "staged-run", "edge-run", "ontology", "review"}
    assert set(problems) == want | ({"journal"} if path is not None else set())
    assert "'1002'" in problems["mention-without-document"] and "Ovarian cancer" in problems["mention-without-document"]
    assert "'1001'" in problems["offsets"] and "5000" in problems["offsets"]
    assert "link-left~staging" in problems["staged-run"] and "another-host" in problems["staged-run"]
    assert "'link-gone'" in problems["edge-run"] and "1 LINKED_TO" in problems["edge-run"]
    assert "toyd holds 4 concept(s), but 5 were loaded" in problems["ontology"]
    assert sound["review"] in problems["review"] and "the mention is gone" in problems["review"]
    if path is not None:
        journal_lines = [f["message"] for f in rep["findings"] if f["check"] == "journal"]
        assert len(journal_lines) == 2 and "line(s) 3" in journal_lines[0] and "damaged" in journal_lines[0]
        assert "f00d" * 8 in journal_lines[1] and "1 review(s)" in journal_lines[1]
    for f in rep["findings"]:  # one line each in the text report
        assert sum(1 for line in lines if line == f"problem: {f['check']}: {f['message']}") == 1
    report = Workbench(store).check()
    assert not report.sound and {f.check for f in report.problems()} == set(problems)


def test_orphans_are_notes_and_a_missing_store_is_an_error(capsys, tmp_path, sound):
    store = sound["store"]
    # the reviewed concept goes from the store: the review waits for a person, no fault
    _write(capsys, store, "MATCH (c:Concept) WHERE c.uid = 'TOYD:0003' SET c.ontology = 'elsewhere'")
    _write(capsys, store, "MATCH (o:Ontology) WHERE o.name = 'toyd' SET o.concept_count = 4")
    _write(capsys, store, "CREATE (:Ontology {name: 'elsewhere', version: '', source_path: '', format: 'obo', "
                          "loaded_at: '', concept_count: 1})")
    # a run being staged by a process that is alive on this host is work in progress, no fault
    owner = json.dumps({"owner": {"pid": os.getpid(), "host": socket.gethostname()}})
    _write(capsys, store, "CREATE (:Run {uid: 'link-now~staging', kind: 'staging', method: 'biosyn', "
                          "model_path: '', params_json: '{}', created_at: '', metrics_json: $o})", "--param",
           f"o={json.dumps(owner)}")
    assert _json(capsys, store, "MATCH (r:Run) WHERE r.kind = 'staging' RETURN r.uid AS uid") == [{"uid": "link-now~staging"}]
    code, out, rep = _check(capsys, store)
    assert code == 0, out
    notes = [f for f in rep["findings"] if not f["problem"]]
    assert [f["check"] for f in notes] == ["reviewed-orphan"] and "TOYD:0003" in notes[0]["message"]
    assert out.splitlines()[0].startswith("note: reviewed-orphan: ")
    code, _, err = run(capsys, "check", "--store", str(tmp_path / "nothing-here"))
    assert code == 1 and err.startswith("kgnorm: error: no store at")


def test_a_store_made_by_annotate_with_an_added_span_is_sound(capsys, tmp_path, store, tiny_bert_dir):
    from annotate_fixtures import write_jsonl
    from kgnorm.review.records import AddedMention

    model = build(tmp_path, capsys, store, tiny_bert_dir)
    src = write_jsonl(tmp_path / "docs.jsonl")
    args = ["annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(src), "--input-format",
            "jsonl", "--output", str(tmp_path / "out.pubtator"), "--store", store, "-q"]
    assert run(capsys, *args)[0] == 0
    doc = _json(capsys, store, "MATCH (d:Document) WHERE d.doc_id = 'd2' RETURN d.uid AS uid, d.text AS text")[0]
    start = doc["text"].index("link")
    desk = ReviewDesk(store)
    try:
        desk.record("", "concept", "TOYD:0002", reviewer="a", added=AddedMention(doc["uid"], start, start + 4, "link"))
    finally:
        desk.close()
    assert run(capsys, *args)[0] == 0  # annotating again keeps the added span in its document
    code, out, rep = _check(capsys, store)
    assert code == 0 and rep["findings"] == [], out
    _write(capsys, store, "MATCH (m:Mention)-[i:`IN`]->(:Document) WHERE m.text = 'link' DELETE i")
    code, out, rep = _check(capsys, store)
    assert code == 1 and [f["check"] for f in rep["findings"]] == ["mention-without-document"], out


def test_a_store_of_an_earlier_kgnorm_is_one_line_until_a_write_upgrades_it(capsys, tmp_path):
    import ladybug as lb
    from pathlib import Path

    from kgnorm.stores.cypher_files import split_statements

    path = tmp_path / "old"
    db = lb.Database(str(path))
    conn = lb.Connection(db)
    for stmt in split_statements((Path(__file__).parent / "fixtures/ladybug_schema_0_1.cypher").read_text()):
        conn.execute(stmt)
    conn.execute("CREATE (o:Ontology {name: 'medic', version: '1', concept_count: 0})")
    conn.close()
    db.close()
    code, out, err = run(capsys, "check", "--store", str(path))
    assert code == 1 and out == "" and len(err.strip().splitlines()) == 1
    assert "made by an earlier kgnorm" in err and "any command that writes the store" in err
    _write(capsys, str(path), "RETURN 1 AS x")
    code, out, _ = run(capsys, "check", "--store", str(path))
    assert code == 0 and out.startswith("sound: 1 Ontology, 0 Concept")


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_what_a_killed_process_left_is_a_note_and_the_next_reader_of_query_does_not_see_it(capsys, sound):
    """Right after a kill (found by the crash torture), before any writer reopened the store: a
    staged run whose process is gone and a journaled review not yet written are what the next
    writer (review desk) rolls back (writes): notes, exit 0. `kgnorm query` does not show the half
    run: it rolls it back first."""
    store, mention = sound["store"], sound["mention"]
    owner = json.dumps({"owner": {"pid": _dead_pid(), "host": socket.gethostname()}, "edge_run": "link-dead~staging"})
    # (the staging node last: a writer's open rolls back a stage whose process is gone)
    _write(capsys, store, "MATCH (m:Mention)-[l:LINKED_TO]->() WHERE m.text = 'Ovarian cancer' "
                          "SET l.run = 'link-dead~staging'")
    _write(capsys, store, "CREATE (:Run {uid: 'link-dead~staging', kind: 'staging', method: 'biosyn', "
                          "model_path: '', params_json: '{}', created_at: '', metrics_json: $o})", "--param",
           f"o={json.dumps(owner)}")
    path = embedded_path(store)
    if path is not None:
        ReviewJournal.beside(path).append(Review("beef" * 8, mention, "nil", reviewer="bob",
                                                 created_at="2026-01-02T00:00:00+00:00", doc_id="1001"))
    code, out, rep = _check(capsys, store)
    assert code == 0 and rep["sound"] is True, out
    notes = {f["check"]: f["message"] for f in rep["findings"] if not f["problem"]}
    assert "link-dead~staging" in notes["staged-run"] and "is gone" in notes["staged-run"]
    assert "rolls it back" in notes["staged-run"]
    if path is not None:
        assert "beef" * 8 in notes["journal"] and "writes them when it opens the store" in notes["journal"]
    assert out.splitlines()[-1].startswith("sound: ")
    # the half run's edge is not what `kgnorm query` shows: rolled back before it reads
    ovarian = "MATCH (m:Mention)-[l:LINKED_TO]->() WHERE m.text = 'Ovarian cancer' RETURN l.run AS run"
    assert _json(capsys, store, ovarian) == []
    assert _json(capsys, store, "MATCH (r:Run) WHERE r.kind = 'staging' RETURN r.uid AS uid") == []
    code, out, rep = _check(capsys, store)
    assert code == 0 and "staged-run" not in {f["check"] for f in rep["findings"]}, out
