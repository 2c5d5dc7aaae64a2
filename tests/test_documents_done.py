"""Documents done (issue 50, item 2) over HTTP on LadybugDB and over Bolt: refused with the list of
unreviewed mentions (409) until each found mention has a current review, then recorded in the store
as a DocumentDone node the document points at; pending reviews count; on LadybugDB a mark made while
another process holds the store waits in its journal and reaches the store once it is free."""
from __future__ import annotations

import subprocess
import sys
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from annotate_fixtures import OBO
from kgnorm.review.desk import ReviewDesk
from kgnorm.review.done import done_documents
from kgnorm.serve import create_app
from test_cli_journey import journey_store  # noqa: F401  (a fresh store of each kind)
from test_serve_http import _build as build_served_store

TOKEN = "done-test-token-0123456789"
DOCS = [{"id": "a1", "title": "Breast cancer", "abstract": "Ovarian cancer and breast carcinoma were seen."},
        {"id": "a2", "title": "Colorectal cancer", "abstract": "No ataxia telangiectasia here."}]


@pytest.fixture
def served(journey_store, tmp_path, tiny_bert_dir):
    uri = journey_store
    build_served_store(tmp_path, uri, tiny_bert_dir, OBO, DOCS)
    desk = ReviewDesk(uri)
    try:
        yield desk, TestClient(create_app(desk, TOKEN))
    finally:
        desk.close()


def _post(c: TestClient, path: str, body: dict) -> object:
    return c.post(path, json=body, headers={"X-Kgnorm-Token": TOKEN})


def test_done_refused_until_every_mention_is_reviewed(served):
    desk, c = served
    doc = c.get("/api/documents/a1").json()
    uids = [m["uid"] for m in doc["mentions"]]
    assert len(uids) >= 3 and doc["done"] is None
    done = f"/api/documents/{quote(doc['uid'], safe='')}/done"
    assert c.post(done, json={}).status_code == 403  # the token first
    r = _post(c, done, {"reviewer": "ann"})
    assert r.status_code == 409 and sorted(r.json()["unreviewed"]) == sorted(uids)
    for i, uid in enumerate(uids[:-1]):
        body = {"decision": "accept"} if i else {"decision": "not_a_mention"}
        assert _post(c, f"/api/mentions/{quote(uid, safe='')}/review", body).status_code == 200
    r = _post(c, done, {"reviewer": "ann"})
    assert r.status_code == 409 and r.json()["unreviewed"] == [uids[-1]]
    with desk.reading() as st:
        assert done_documents(st) == {}
    assert _post(c, f"/api/mentions/{quote(uids[-1], safe='')}/review", {"decision": "nil"}).status_code == 200
    r = _post(c, done, {"reviewer": "ann"})
    assert r.status_code == 200, r.text
    mark = r.json()
    assert (mark["doc_id"], mark["reviewer"], mark["mentions"], mark["pending"]) == ("a1", "ann", len(uids), False)
    with desk.reading() as st:
        stored = done_documents(st)
    assert list(stored) == [doc["uid"]] and stored[doc["uid"]].uid == mark["uid"]
    assert c.get("/api/documents/a1").json()["done"]["uid"] == mark["uid"]
    assert "done: marked by ann" in c.get("/documents/a1").text
    assert _post(c, "/api/documents/nope/done", {}).status_code == 404


HOLD = """
import sys
from kgnorm.stores import open_store
st = open_store(sys.argv[1])
print("held", flush=True)
sys.stdin.readline()
st.close()
"""


def test_done_mark_waits_in_the_journal_while_the_store_is_held(tmp_path, tiny_bert_dir):
    uri = f"ladybug://{tmp_path}/graph"
    build_served_store(tmp_path, uri, tiny_bert_dir, OBO, DOCS)
    desk = ReviewDesk(uri, lock_timeout=0.2, retry_s=3600)
    writer = subprocess.Popen([sys.executable, "-c", HOLD, uri], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        c = TestClient(create_app(desk, TOKEN))
        doc = c.get("/api/documents/a2").json()
        assert writer.stdout.readline().strip() == "held"  # reviews and the mark stay pending
        for m in doc["mentions"]:
            r = _post(c, f"/api/mentions/{quote(m['uid'], safe='')}/review", {"decision": "accept"})
            assert r.json()["pending"]
        mark = _post(c, f"/api/documents/{quote(doc['uid'], safe='')}/done", {}).json()
        assert mark["pending"] and c.get("/api/documents/a2").json()["done"]["pending"]
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.wait(timeout=60) == 0
        assert desk.flush() == len(doc["mentions"]) + 1
        with desk.reading() as st:
            assert list(done_documents(st)) == [doc["uid"]]
        assert (tmp_path / "graph.done.jsonl").read_text(encoding="utf-8").count("\n") == 1
    finally:
        if writer.poll() is None:
            writer.kill()
        desk.close()
