"""`kgnorm serve` over HTTP (Starlette's test client): the JSON API and the pages on LadybugDB and
over Bolt, reviews posted with the token change what the document shows and the stored Review,
writes without the token or on a read-only app are refused, text and names from the store are
escaped in every page, bodies are bounded, unknown ids are 404, and the command starts and stops."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote, urlsplit

import httpx
import pytest
from starlette.testclient import TestClient

from annotate_fixtures import DOCS, OBO, write_jsonl
from cli_runner import exit_code
from kgnorm.review.desk import ReviewDesk
from kgnorm.review.records import AddedMention, Review, now
from kgnorm.serve import create_app
from kgnorm.stores import open_store

TOKEN = "serve-test-token-0123456789"
EVIL = '"><img src=x onerror=alert(1)>'
OBO_SERVE = OBO + f"\n[Term]\nid: TOYD:0005\nname: {EVIL}\nis_a: TOYD:0000\n"
DOCS_SERVE = [*DOCS, {"id": "x1", "title": "<script>alert(1)</script>", "abstract": "Breast cancer here."}]


def _build(tmp: Path, uri: str, bert: Path, obo: str = OBO_SERVE, docs: list[dict] = DOCS_SERVE) -> None:
    """The toy ontology (by default plus a concept with a hostile name), an untrained BioSyn, annotated documents."""
    (tmp / "toyd.obo").write_text(obo, encoding="utf-8")
    assert exit_code(["ingest", "obo", str(tmp / "toyd.obo"), "--ontology", "toyd", "--store", uri, "-q"]) == 0
    model = tmp / "biosyn"
    assert exit_code(["train", "biosyn", "--ontology", "toyd", "--out", str(model), "--encoder", str(bert),
                      "--store", uri, "-q"]) == 0
    src = write_jsonl(tmp / "docs.jsonl", docs)
    assert exit_code(["annotate", "--ner", "dictionary:toyd", "--model", str(model), "--input", str(src),
                      "--input-format", "jsonl", "--output", str(tmp / "out.pubtator"), "--store", uri, "-q"]) == 0


@pytest.fixture(scope="module")
def stores(request, tmp_path_factory, tiny_bert_dir):
    """kind -> an annotated store, its desk and a writing app's client (each built once, when asked)."""
    built: dict[str, SimpleNamespace] = {}
    env = pytest.MonkeyPatch()

    def get(kind: str) -> SimpleNamespace:
        if kind not in built:
            tmp = tmp_path_factory.mktemp(f"serve-{kind}")
            if kind == "ladybug":
                uri = f"ladybug://{tmp}/graph"
            else:
                uri, database, _ = request.getfixturevalue("bolt_server")
                if database:
                    env.setenv("KGNORM_NEO4J_DATABASE", database)
                with open_store(uri) as st:
                    st.query("MATCH (n) DETACH DELETE n")
            _build(tmp, uri, tiny_bert_dir)
            desk = ReviewDesk(uri)
            built[kind] = SimpleNamespace(kind=kind, uri=uri, desk=desk, client=TestClient(create_app(desk, TOKEN)),
                                          model=tmp / "biosyn")
        return built[kind]

    yield get
    for s in built.values():
        s.desk.close()
    env.undo()


@pytest.fixture(params=["ladybug", "bolt"])
def served(request, stores) -> SimpleNamespace:
    return stores(request.param)


@pytest.fixture
def lady(stores) -> SimpleNamespace:
    return stores("ladybug")


def _doc(client: TestClient, doc_id: str) -> dict:
    r = client.get(f"/api/documents/{doc_id}")
    assert r.status_code == 200, r.text
    return r.json()


def _mention(client: TestClient, doc_id: str, text: str) -> dict:
    return next(m for m in _doc(client, doc_id)["mentions"] if m["text"] == text)


def _post(client: TestClient, path: str, body: dict, token: str | None = TOKEN) -> httpx.Response:
    return client.post(path, json=body, headers={"X-Kgnorm-Token": token} if token is not None else {})


def test_documents_paging_search_and_offsets(served):
    c = served.client
    first = c.get("/api/documents?limit=2").json()
    assert len(first["documents"]) == 2 and first["next"]
    rest = c.get("/api/documents", params={"limit": 50, "after": first["next"]}).json()
    assert rest["next"] is None
    assert sorted(d["doc_id"] for d in first["documents"] + rest["documents"]) == ["d1", "d2", "x1"]
    assert [d["doc_id"] for d in c.get("/api/documents?q=colorectal").json()["documents"]] == ["d2"]
    assert {d["doc_id"] for d in c.get("/api/documents?concept=TOYD:0002").json()["documents"]} == {"d1", "x1"}
    d1 = next(d for d in first["documents"] + rest["documents"] if d["doc_id"] == "d1")
    doc = _doc(c, d1["uid"])
    assert doc["doc_id"] == "d1" and not doc["text_missing"] and len(doc["mentions"]) == d1["n_mentions"] >= 5
    for m in doc["mentions"]:
        assert doc["text"][m["start"]:m["end"]] == m["text"]
    assert {m["machine_concept"] for m in doc["mentions"]} >= {"TOYD:0001", "TOYD:0002"}


def test_review_with_token_changes_the_document_and_the_store(served):
    c = served.client
    m = _mention(c, "d1", "breast cancer")
    path = f"/api/mentions/{quote(m['uid'], safe='')}/review"
    body = {"decision": "concept", "concept": "TOYD:0003", "reviewer": "ann"}
    assert _post(c, path, body, token=None).status_code == 403
    assert _post(c, path, body, token="wrong").status_code == 403
    r = _post(c, path, body)
    assert r.status_code == 200, r.text
    rec = r.json()
    assert (rec["decision"], rec["concept_uid"], rec["previous_concept_uid"], rec["pending"]) == (
        "concept", "TOYD:0003", m["machine_concept"], False)
    now_ = next(x for x in _doc(c, "d1")["mentions"] if x["uid"] == m["uid"])
    assert (now_["concept"], now_["concept_name"], now_["review"]["reviewer"]) == ("TOYD:0003", "ovarian cancer", "ann")
    with served.desk.reading() as st:
        rows = st.query("MATCH (:Mention {uid: $m})-[:REVIEWED]->(r:Review) WHERE r.current = true "
                        "RETURN r.decision, r.concept_uid, r.reviewer", {"m": m["uid"]}).rows
    assert rows == [["concept", "TOYD:0003", "ann"]]
    panel = c.get(f"/api/mentions/{quote(m['uid'], safe='')}").json()
    assert panel["concept"] == "TOYD:0003" and panel["reviews"][0]["decision"] == "concept"
    assert panel["candidates"][0]["uid"] == m["machine_concept"] and "parents" in panel["candidates"][0]
    assert any(x["mention_uid"] == m["uid"] for x in c.get("/api/reviews").json()["reviews"])
    runs = c.get("/api/runs").json()["runs"]
    run = next(r for r in runs if r["kind"] == "annotate")
    assert run["reviewed"] >= 1 and run["accepted_share"] is not None
    ingest = next(r for r in runs if r["kind"] == "ingest")  # from the Ontology node an ingest writes
    assert ingest["params"]["ontology"] == "toyd" and ingest["metrics"]["concepts"] == 6


def test_every_page_and_read_route_answers(served):
    """Each view's queries in both Cypher dialects; no page shows the store's password."""
    c = served.client
    pages = ["/documents", "/documents?q=cancer", "/documents/d1", "/concepts/TOYD:0000", "/runs", "/orphans"]
    api = ["/api/concepts/TOYD:0000", "/api/concepts?q=canc", "/api/runs", "/api/orphans", "/api/reviews"]
    password = urlsplit(served.uri).password
    for path in pages + api:
        r = c.get(path)
        assert r.status_code == 200, (path, r.text[:300])
        assert not password or password not in r.text
    assert c.get("/", follow_redirects=False).headers["location"] == "/documents"
    concept = c.get("/api/concepts/TOYD:0000").json()
    assert {x["uid"] for x in concept["children"]} >= {"TOYD:0001", "TOYD:0002"}
    assert [h["uid"] for h in c.get("/api/concepts?q=louis").json()["concepts"]] == ["TOYD:0001"]


def test_pages_escape_text_and_names(lady):
    c = lady.client
    x1 = _mention(c, "x1", "Breast cancer")
    r = _post(c, f"/api/mentions/{quote(x1['uid'], safe='')}/review", {"decision": "concept", "concept": "TOYD:0005"})
    assert r.status_code == 200, r.text
    assert _mention(c, "x1", "Breast cancer")["concept_name"] == EVIL
    for path in ["/documents", "/documents/x1", "/concepts/TOYD:0005", "/concepts/TOYD:0000"]:
        body = c.get(path).text
        assert "<script>alert" not in body and "<img src=x" not in body, path
    page = c.get("/documents/x1").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x" in page
    assert f'<mark data-mention="{x1["uid"]}"' in page
    headers = c.get("/documents/x1").headers
    assert "script-src 'self'" in headers["content-security-policy"] and "access-control-allow-origin" not in headers


def test_document_page_marks_every_mention(lady):
    c = lady.client
    doc = _doc(c, "d1")
    page = c.get(f"/documents/{quote(doc['uid'], safe='')}").text
    for m in doc["mentions"]:
        assert f'data-mention="{m["uid"]}"' in page
    assert '<meta name="kgnorm-token" content="' + TOKEN + '">' in page and 'id="add-mention"' in page


def test_read_only_app_has_no_write_route(lady):
    c = TestClient(create_app(lady.desk, TOKEN, read_only=True))
    m = _mention(c, "d2", "colorectal cancer")
    r = _post(c, f"/api/mentions/{quote(m['uid'], safe='')}/review", {"decision": "nil"})
    assert r.status_code in (404, 405)
    assert _post(c, "/api/documents/d2/mentions", {"start": 0, "end": 3}).status_code in (404, 405)
    page = c.get("/documents/d2").text
    assert "kgnorm-token" not in page and TOKEN not in page and 'id="add-mention"' not in page
    assert _mention(c, "d2", "colorectal cancer")["review"] is None


def test_limits_and_errors(lady):
    c = lady.client
    m = _mention(c, "d2", "colorectal cancer")
    path = f"/api/mentions/{quote(m['uid'], safe='')}/review"
    big = {"decision": "nil", "reviewer": "x" * (70 * 1024)}
    assert _post(c, path, big).status_code == 413
    streamed = c.post(path, content=iter([b"{" + b" " * 40000, b" " * 40000 + b"}"]),
                      headers={"X-Kgnorm-Token": TOKEN, "Content-Type": "application/json"})
    assert streamed.status_code == 413
    bad = _post(c, path, {"decision": "maybe"})
    assert bad.status_code == 400 and "unknown decision" in bad.json()["error"] and "\n" not in bad.json()["error"]
    assert _post(c, path, {"decision": "concept", "concept": "NOPE:1"}).status_code == 400
    assert c.get("/api/documents/nope").status_code == 404 and "error" in c.get("/api/documents/nope").json()
    assert c.get("/documents/nope").status_code == 404
    assert c.get("/api/mentions/nope").status_code == 404 and c.get("/api/concepts/NOPE:1").status_code == 404
    assert len(c.get("/api/documents?limit=1").json()["documents"]) == 1
    assert c.get("/api/documents?limit=100000&after=" + "z" * 5000).status_code == 200
    assert _mention(c, "d2", "colorectal cancer")["review"] is None  # nothing refused was written
    hosts = TestClient(create_app(lady.desk, TOKEN, allowed_hosts=["127.0.0.1", "localhost"]),
                       base_url="http://evil.example")
    assert hosts.get("/documents").status_code == 400


def test_added_mention(lady):
    c = lady.client
    doc = _doc(c, "d2")
    start = doc["text"].index("No link")
    add = f"/api/documents/{quote(doc['uid'], safe='')}/mentions"
    body = {"start": start, "end": start + 7, "type": "Disease", "concept": "TOYD:0004", "reviewer": "bob"}
    assert _post(c, add, body, token=None).status_code == 403
    r = _post(c, add, body)
    assert r.status_code == 201, r.text
    uid = r.json()["mention_uid"]
    added = next(m for m in _doc(c, "d2")["mentions"] if m["uid"] == uid)
    assert (added["text"], added["concept"], added["review"]["reviewer"]) == ("No link", "TOYD:0004", "bob")
    assert f'data-mention="{uid}"' in c.get("/documents/d2").text
    taken = next(m for m in doc["mentions"] if m["text"] == "colorectal cancer")
    assert _post(c, add, {"start": taken["start"], "end": taken["end"]}).status_code == 400
    assert _post(c, add, {"start": 5, "end": 10 ** 6}).status_code == 400


def test_pending_reviews_are_shown_at_once(lady, monkeypatch):
    """Reviews the desk could not write yet (another process holds the store) overlay the stored ones."""
    c = lady.client
    doc = _doc(c, "d1")
    target = next(m for m in doc["mentions"] if m["text"] == "AT")
    mine = Review("p1", target["uid"], "nil", reviewer="cy", created_at=now(), doc_id="d1")
    a = AddedMention(doc["uid"], 0, 6, doc["text"][:6], "Disease")
    extra = Review("p2", a.uid, "not_a_mention", reviewer="cy", created_at=now(), doc_id="d1", added=a)
    monkeypatch.setattr(lady.desk, "pending", lambda: [mine, extra])
    shown = {m["uid"]: m for m in _doc(c, "d1")["mentions"]}
    assert shown[target["uid"]]["review"]["pending"] and shown[target["uid"]]["concept"] is None
    assert shown[a.uid]["review"]["decision"] == "not_a_mention"
    assert c.get(f"/api/mentions/{quote(a.uid, safe='')}").json()["text"] == doc["text"][:6]
    assert 'class="t0 reviewed pending nil"' in c.get("/documents/d1").text
    assert [r["uid"] for r in c.get("/api/reviews").json()["reviews"] if r["pending"]] == ["p1", "p2"]


def test_document_without_text_lists_its_mentions(lady):
    with open_store(lady.uri) as st:
        st.write_statements([
            ("CREATE (:Document {uid: 'old:d9', doc_id: 'd9', source: 'old', title: '', text: ''})", {}),
            ("CREATE (:Mention {uid: 'old:d9:m1', text: 'breast cancer', doc_id: 'd9', start: 0, `end`: 13, "
             "context: '', mention_id: 'm1', source: 'old', type: 'Disease'})", {}),
            ("MATCH (m:Mention {uid: 'old:d9:m1'}), (d:Document {uid: 'old:d9'}) CREATE (m)-[:`IN` {run: 'old'}]->(d)",
             {})], "an old document")
    c = lady.client
    doc = _doc(c, "d9")
    assert doc["text_missing"] and [m["uid"] for m in doc["mentions"]] == ["old:d9:m1"]
    page = c.get("/documents/d9")
    assert page.status_code == 200 and "no text for this document" in page.text
    assert 'data-mention="old:d9:m1"' in page.text


def test_model_candidates_and_orphans(lady):
    """With a model loaded the panel lists its candidates, and the orphans page asks it too."""
    bc = _mention(lady.client, "d2", "colorectal cancer")
    with open_store(lady.uri) as st:
        st.write_statements([("MATCH (m:Mention {uid: $m}), (o:Ontology {name: 'toyd'}) CREATE (m)-[:ORPHAN_OF "
                              "{concept_uid: 'TOYD:0099', score: 1.0, rank: 1, method: 'biosyn', run: 'r0', "
                              "version: 'toyd/2098'}]->(o)", {"m": bc["uid"]})], "an orphan")
    desk = ReviewDesk(lady.uri, read_only=True, model=str(lady.model))
    try:
        c = TestClient(create_app(desk, TOKEN, read_only=True))
        panel = c.get(f"/api/mentions/{quote(bc['uid'], safe='')}").json()
        assert panel["candidates_from"] == "model" and len(panel["candidates"]) >= 3
        assert all("parents" in x for x in panel["candidates"])
        orphans = c.get("/api/orphans").json()["orphans"]
        assert [(o["uid"], o["was"]) for o in orphans] == [(bc["uid"], "TOYD:0099")] and orphans[0]["candidates"]
        assert "TOYD:0099" in c.get("/orphans").text
    finally:
        desk.close()


def test_serve_command_prints_its_address_and_stops_on_ctrl_c(lady):
    proc = subprocess.Popen([sys.executable, "-m", "kgnorm.cli", "serve", "--store", lady.uri, "--port", "0",
                             "--read-only"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        url = proc.stdout.readline().strip()
        token = proc.stdout.readline().strip()
        assert url.startswith("kgnorm serve: http://127.0.0.1:") and token.startswith("token: ")
        page = httpx.get(url.split(": ", 1)[1] + "documents", timeout=10)
        assert page.status_code == 200 and "d1" in page.text and token.split()[1] not in page.text
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
        assert "stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
