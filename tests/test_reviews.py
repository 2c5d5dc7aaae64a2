"""Reviews (issue 40): a person's decision is graph data beside the machine's link, "the current
link" (reviewed wins) is one saved query on both stores, a later annotate of the same documents
keeps the review and its mention, and a review made while another process writes an embedded
store waits in the journal and is written once the store is free."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from annotate_fixtures import build, write_jsonl
from cli_runner import run
from kgnorm.errors import InputError
from kgnorm.review.desk import ReviewDesk
from kgnorm.review.records import AddedMention
from test_cli_journey import journey_store as store  # noqa: F401  (a fresh store of each kind)


def _json(capsys, store: str, *args: str) -> list[dict]:
    code, out, err = run(capsys, "query", *args, "--format", "json", "--store", store)
    assert code == 0, err
    return json.loads(out)


def _annotate(capsys, tmp_path, store, model) -> None:
    src = tmp_path / "docs.jsonl"
    if not src.exists():
        write_jsonl(src)
    code, _, err = run(capsys, "annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(src),
                       "--input-format", "jsonl", "--output", str(tmp_path / "out.pubtator"), "--store", store, "-q")
    assert code == 0, err


def _mention(capsys, store, text: str) -> dict:
    rows = [r for r in _json(capsys, store, "--saved", "current_links") if r["mention"] == text]
    assert rows, text
    return rows[0]


def test_review_wins_over_the_machine_and_survives_a_second_annotate(capsys, tmp_path, store, tiny_bert_dir):
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    _annotate(capsys, tmp_path, store, model)
    docs = _json(capsys, store, "MATCH (d:Document) RETURN d.doc_id AS doc, d.title AS title, d.text AS text "
                 "ORDER BY doc")
    assert docs[0]["doc"] == "d1" and docs[0]["title"] == "Ataxia telangiectasia and breast cancer."
    assert docs[0]["text"].startswith(docs[0]["title"] + " Carriers of ataxia")  # what offsets index
    bc = _mention(capsys, store, "breast cancer")
    assert bc["source"] == "machine"
    other = "TOYD:0003" if bc["concept"] != "TOYD:0003" else "TOYD:0004"
    ov = _mention(capsys, store, "Ovarian cancer")
    desk = ReviewDesk(store)
    try:
        r1 = desk.record(bc["mention_uid"], "concept", other, reviewer="ann")
        r2 = desk.record(ov["mention_uid"], "not_a_mention", reviewer="ann")
        assert r1.previous_concept_uid == bc["concept"] and r1.ontology == "toyd"
        assert desk.pending() == []  # nobody else holds the store: written at once
    finally:
        desk.close()
    for _ in range(2):  # before and after annotating the same documents again
        now = _mention(capsys, store, "breast cancer")
        assert (now["concept"], now["source"], now["decision"], now["reviewer"]) == (other, "review", "concept", "ann")
        gone = _mention(capsys, store, "Ovarian cancer")
        assert (gone["concept"], gone["decision"]) == (None, "not_a_mention")
        # the machine's own link is still there, and both mentions are still in their documents
        machine = _json(capsys, store, "MATCH (m:Mention {uid: $m})-[l:LINKED_TO]->(c:Concept) WHERE l.rank = 1 "
                        "RETURN c.uid AS c", "--param", f"m={bc['mention_uid']}")
        assert [r["c"] for r in machine] == [bc["concept"]]
        placed = _json(capsys, store, "MATCH (m:Mention)-[:`IN`]->(d:Document) WHERE m.uid = $a OR m.uid = $b "
                       "RETURN DISTINCT d.doc_id AS doc ORDER BY doc",
                       "--param", f"a={bc['mention_uid']}", "--param", f"b={ov['mention_uid']}")
        assert [r["doc"] for r in placed] == ["d1", "d2"]
        _annotate(capsys, tmp_path, store, model)
    reviews = _json(capsys, store, "--saved", "reviews")
    assert sorted(r["decision"] for r in reviews) == ["concept", "not_a_mention"]


def test_newest_review_is_current_and_an_added_mention_is_kept(capsys, tmp_path, store, tiny_bert_dir):
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    _annotate(capsys, tmp_path, store, model)
    bc = _mention(capsys, store, "breast cancer")
    desk = ReviewDesk(store)
    try:
        desk.record(bc["mention_uid"], "nil", reviewer="a")
        second = desk.record(bc["mention_uid"], "accept", reviewer="b")
        # accepting after a nil accepts nothing the mention has now: it needs a concept
        assert second.concept_uid == bc["concept"] and second.previous_concept_uid == ""
        doc = _json(capsys, store, "MATCH (d:Document) WHERE d.doc_id = 'd2' RETURN d.uid AS uid, d.text AS text")[0]
        start = doc["text"].index("link")
        added = desk.record("", "concept", "TOYD:0002", reviewer="a",
                            added=AddedMention(doc["uid"], start, start + 4, "link", "Disease"))
        with pytest.raises(InputError, match="unknown decision"):
            desk.record(bc["mention_uid"], "maybe")
        with pytest.raises(InputError, match="no mention"):
            desk.record("nope", "nil")
        with pytest.raises(InputError, match="is not 'lnk'"):
            desk.record("", "nil", added=AddedMention(doc["uid"], start, start + 4, "lnk"))
        with pytest.raises(InputError, match="no concept"):
            desk.record(bc["mention_uid"], "concept", "TOYD:9999")
    finally:
        desk.close()
    states = _json(capsys, store, "MATCH (m:Mention)-[:REVIEWED]->(r:Review) WHERE m.uid = $m "
                   "RETURN r.decision AS d, r.current AS cur ORDER BY r.created_at", "--param", f"m={bc['mention_uid']}")
    assert [(s["d"], s["cur"]) for s in states] == [("nil", False), ("accept", True)]
    _annotate(capsys, tmp_path, store, model)
    row = _mention(capsys, store, "link")
    assert (row["mention_uid"], row["concept"], row["doc_id"]) == (added.mention_uid, "TOYD:0002", "d2")


HOLD = """
import sys, time
from kgnorm.stores import open_store
st = open_store(sys.argv[1])
print("held", flush=True)
sys.stdin.readline()
st.close()
"""


def test_a_review_made_while_another_process_writes_is_kept_then_written(capsys, tmp_path, tiny_bert_dir):
    store = f"ladybug://{tmp_path}/graph"
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    _annotate(capsys, tmp_path, store, model)
    bc = _mention(capsys, store, "breast cancer")
    writer = subprocess.Popen([sys.executable, "-c", HOLD, store], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    desk = ReviewDesk(store, lock_timeout=0.2, retry_s=0.2)
    try:
        assert writer.stdout.readline().strip() == "held"
        review = desk.record(bc["mention_uid"], "nil", reviewer="ann")  # read while the other process writes
        assert [r.uid for r in desk.pending()] == [review.uid]
        assert (tmp_path / "graph.reviews.jsonl").read_text().count(review.uid) == 1
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.wait(timeout=60) == 0
        deadline = time.monotonic() + 30
        while desk.pending() and time.monotonic() < deadline:  # the desk's retry thread writes it
            time.sleep(0.2)
        assert desk.pending() == []
    finally:
        if writer.poll() is None:
            writer.kill()
        desk.close()
    assert _mention(capsys, store, "breast cancer")["decision"] == "nil"


def test_workbench_review_and_reviews(capsys, tmp_path, tiny_bert_dir):
    from kgnorm import Workbench

    store = f"ladybug://{tmp_path}/graph"
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    _annotate(capsys, tmp_path, store, model)
    bc = _mention(capsys, store, "breast cancer")
    wb = Workbench(store)
    rec = wb.review(bc["mention_uid"], "concept", "TOYD:0004", reviewer="nb")
    frame = wb.reviews()
    assert frame[["review", "mention_uid", "decision", "concept", "reviewer", "current"]].values.tolist() == [
        [rec["uid"], bc["mention_uid"], "concept", "TOYD:0004", "nb", True]]
    with pytest.raises(InputError):
        wb.review(bc["mention_uid"], "concept", "")


PUBTATOR = """101|t|Ataxia telangiectasia and breast cancer.
101|a|Carriers have breast cancer more often.
101\t0\t21\tAtaxia telangiectasia\tDisease\tTOYD:0001
101\t26\t39\tbreast cancer\tDisease\tTOYD:0002

102|t|Ovarian cancer
102|a|No link with colorectal cancer.
102\t0\t14\tOvarian cancer\tDisease\tTOYD:0003
"""


def test_link_keeps_document_text_and_a_relink_or_reingest_keeps_the_review(capsys, tmp_path, store,
                                                                              tiny_bert_dir):
    from annotate_fixtures import OBO

    model = build(tmp_path, capsys, store, tiny_bert_dir)
    src = tmp_path / "m.pubtator"
    src.write_text(PUBTATOR, encoding="utf-8")
    link = ["link", "--model", str(model), "--input", str(src), "--output", str(tmp_path / "l.tsv"), "--store", store, "-q"]
    code, _, err = run(capsys, *link)
    assert code == 0, err
    docs = _json(capsys, store, "MATCH (m:Mention)-[:`IN`]->(d:Document) RETURN DISTINCT d.doc_id AS doc, "
                 "d.title AS title, d.text AS text, m.start AS s, m.`end` AS e, m.text AS m ORDER BY doc, s")
    assert [(r["doc"], r["text"][r["s"]:r["e"]]) for r in docs] == [
        ("101", "Ataxia telangiectasia"), ("101", "breast cancer"), ("102", "Ovarian cancer")]
    assert all(r["text"][r["s"]:r["e"]] == r["m"] for r in docs) and docs[0]["title"].startswith("Ataxia")
    bc = _mention(capsys, store, "breast cancer")
    desk = ReviewDesk(store)
    try:
        desk.record(bc["mention_uid"], "concept", "TOYD:0004", reviewer="ann")
    finally:
        desk.close()
    code, _, err = run(capsys, *link)  # the same link again replaces its run, not the review
    assert code == 0, err
    assert (_mention(capsys, store, "breast cancer")["concept"], _mention(capsys, store, "breast cancer")["source"]) == (
        "TOYD:0004", "review")
    # a new version drops the reviewed concept: the review stays and the mention is a reviewed orphan
    newer = tmp_path / "toyd2.obo"
    newer.write_text(OBO.replace("data-version: toyd/2099-01-01", "data-version: toyd/2100-01-01").replace(
        "[Term]\nid: TOYD:0004\nname: colorectal cancer\nis_a: TOYD:0000\n", ""), encoding="utf-8")
    code, _, err = run(capsys, "ingest", "obo", str(newer), "--ontology", "toyd", "--store", store, "-q")
    assert code == 0, err
    assert [r["decision"] for r in _json(capsys, store, "--saved", "reviews")] == ["concept"]
    orphans = _json(capsys, store, "--saved", "reviewed_orphans")
    assert [(o["mention_uid"], o["was_reviewed_as"]) for o in orphans] == [(bc["mention_uid"], "TOYD:0004")]


def test_a_one_megabyte_document_is_annotated_and_kept_whole(capsys, tmp_path, tiny_bert_dir):
    store = f"ladybug://{tmp_path}/graph"
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    filler = "Nothing to see in this sentence of filler text. " * 21000  # ~1 MB
    text = "Breast cancer at the start. " + filler + "Ovarian cancer at the end."
    src = write_jsonl(tmp_path / "big.jsonl", [{"id": "big", "text": text}])
    code, _, err = run(capsys, "annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(src),
                       "--input-format", "jsonl", "--output", str(tmp_path / "o.pubtator"), "--store", store, "-q")
    assert code == 0, err
    assert len(text.encode()) > 1_000_000
    doc = _json(capsys, store, "MATCH (d:Document) RETURN d.text AS text")[0]
    assert doc["text"] == text
    rows = _json(capsys, store, "--saved", "current_links")
    assert {(r["mention"], text[r["start"]:r["end"]]) for r in rows} >= {("Breast cancer", "Breast cancer"),
                                                                        ("Ovarian cancer", "Ovarian cancer")}


def test_a_store_made_before_reviews_is_upgraded_when_the_desk_opens_it(capsys, tmp_path, tiny_bert_dir):
    from kgnorm.review.views import document_view
    from kgnorm.stores import open_store

    store = f"ladybug://{tmp_path}/graph"
    model = build(tmp_path, capsys, store, tiny_bert_dir)
    _annotate(capsys, tmp_path, store, model)
    bc = _mention(capsys, store, "breast cancer")
    import ladybug as lb  # undo what this version's schema added: the store as an older kgnorm left it

    db = lb.Database(str(tmp_path / "graph"))
    conn = lb.Connection(db)
    for stmt in ("DROP TABLE REVIEWED", "DROP TABLE Review", "ALTER TABLE Document DROP title",
                 "ALTER TABLE Document DROP text"):
        conn.execute(stmt)
    conn.close()
    db.close()
    desk = ReviewDesk(store)
    try:
        with desk.reading() as st:
            view = document_view(st, "d1")
        assert view["text"] == "" and view["text_missing"] and view["mentions"]
        desk.record(bc["mention_uid"], "nil", reviewer="old")
    finally:
        desk.close()
    with open_store(store, read_only=True) as st:
        assert st.run_saved("reviews").rows[0][4] == "nil"
