"""The review loop of issue 50 over HTTP, on LadybugDB and over Bolt: the review queue (unreviewed
mentions, least confident first, one per surface form), a review applied to the same text, a
review withdrawn (a new Review, nothing deleted) with the mention's history, the page's time per
review and reviews per hour, and two reviewers' agreement and conflicts."""
from __future__ import annotations

from urllib.parse import quote

import pytest

from kgnorm.stores import open_store
from test_serve_http import TOKEN, _doc, _post, stores  # noqa: F401  (a store of each kind, built once here)


@pytest.fixture(params=["ladybug", "bolt"])
def served(request, stores):  # noqa: F811
    return stores(request.param)


def _review(c, uid: str, body: dict) -> dict:
    r = _post(c, f"/api/mentions/{quote(uid, safe='')}/review", body)
    assert r.status_code == 200, r.text
    return r.json()


def _mentions(c, text: str) -> list[dict]:
    """Every mention of `text` (case-insensitive) in the toy documents, in document order."""
    out = []
    for d in ("d1", "d2", "x1"):
        out += [m | {"doc_id": d} for m in _doc(c, d)["mentions"] if m["text"].lower() == text.lower()]
    return out


def _queue(c, **params) -> dict:
    r = c.get("/api/queue", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def _stored_reviews(s, uid: str) -> list[list]:
    with s.desk.reading() as st:
        return st.query("MATCH (:Mention {uid: $m})-[:REVIEWED]->(r:Review) RETURN r.decision, r.current, "
                        "r.reviewer, r.propagated_from, r.elapsed_ms ORDER BY r.created_at", {"m": uid}).rows


def test_queue_least_confident_first_one_per_surface_form(served):
    c = served.client
    every = [m for d in ("d1", "d2", "x1") for m in _doc(c, d)["mentions"]]
    todo = [m for m in every if m["review"] is None]
    q = _queue(c, limit=200)
    forms = {(m["text"].lower(), m["type"]) for m in todo}
    assert len(q["mentions"]) == q["forms"] == len(forms)
    assert {(m["text"].lower(), m["type"]) for m in q["mentions"]} == forms
    assert sum(1 + m["same_text"] for m in q["mentions"]) == len(todo) == q["progress"]["unreviewed"]
    assert q["progress"]["mentions"] == len(every) and q["progress"]["reviewed"] == len(every) - len(todo)
    bc = next(m for m in q["mentions"] if m["text"].lower() == "breast cancer")
    assert bc["same_text"] == len([m for m in todo if m["text"].lower() == "breast cancer"]) - 1 == 2
    # no calibrated confidence in this store, and only rank 1 stored (annotate's --top-k 1): no margin
    # either, so the rank-1 score orders the queue, least sure first
    assert all(m["confidence"] is None and m["margin"] is None for m in q["mentions"])
    assert [m["key"] for m in q["mentions"]] == sorted((m["score"] or 0.0) for m in q["mentions"])
    for m in q["mentions"]:  # each form's least sure mention stands for it
        same = [x for x in todo if (x["text"].lower(), x["type"]) == (m["text"].lower(), m["type"])]
        assert m["key"] == min(x["score"] or 0.0 for x in same) and m["concept"] == next(
            x["machine_concept"] for x in same if x["uid"] == m["uid"])
    doc_order = _queue(c, order="document", limit=200)["mentions"]
    assert [(m["doc_id"], m["start"]) for m in doc_order] == sorted((m["doc_id"], m["start"]) for m in doc_order)
    shuffled = _queue(c, order="random", seed=7, limit=200)["mentions"]
    assert shuffled == _queue(c, order="random", seed=7, limit=200)["mentions"]
    assert sorted(m["uid"] for m in shuffled) != [] and len(shuffled) == len(forms)
    assert len(_queue(c, limit=2)["mentions"]) == 2
    assert _queue(c, type="NoSuchType")["mentions"] == []
    assert c.get("/api/queue?order=sideways").status_code == 400
    # where annotate fitted a confidence, it orders the queue instead of the margin
    cc = next(m for m in todo if m["text"] == "colorectal cancer")
    with open_store(served.uri) as st:
        st.write_statements([("MATCH (m:Mention {uid: $m}) SET m.confidence = 0.01", {"m": cc["uid"]})], "confidence")
    q = _queue(c, limit=200)
    assert (q["mentions"][0]["uid"], q["mentions"][0]["confidence"]) == (cc["uid"], 0.01)
    assert q["progress"]["with_confidence"] == 1 and q["progress"]["predicted_wrong_share"] == pytest.approx(0.99)
    page = c.get("/queue")
    assert page.status_code == 200 and f'data-mention="{cc["uid"]}"' in page.text and "99%" in page.text


def test_a_review_applied_to_the_same_text(served):
    c = served.client
    first, *others = _mentions(c, "breast cancer")
    assert len(others) == 2
    at1, at2 = _mentions(c, "AT")
    _review(c, at1["uid"], {"decision": "nil", "reviewer": "ann"})  # reviewed already: not overwritten
    rec = _review(c, first["uid"], {"decision": "concept", "concept": "TOYD:0003", "reviewer": "ann",
                                    "apply_to_same_text": True})
    assert rec["propagated"] == 2 and rec["propagated_from"] == ""
    for m in others:
        now = next(x for x in _doc(c, m["doc_id"])["mentions"] if x["uid"] == m["uid"])
        assert (now["concept"], now["review"]["reviewer"]) == ("TOYD:0003", "ann")
        assert _stored_reviews(served, m["uid"]) == [["concept", True, "ann", rec["uid"], None]]
    assert "breast cancer" not in {m["text"].lower() for m in _queue(c, limit=200)["mentions"]}
    again = _review(c, at2["uid"], {"decision": "accept", "reviewer": "bob", "apply_to_same_text": True})
    assert again["propagated"] == 0 and _stored_reviews(served, at1["uid"])[-1][:3] == ["nil", True, "ann"]
    bad = _post(c, f"/api/mentions/{quote(at2['uid'], safe='')}/review", {"decision": "nil", "apply_to_same_text": 1})
    assert bad.status_code == 400


def test_withdraw_ends_a_review_and_the_history_keeps_it(served):
    c = served.client
    m = _mentions(c, "ovarian cancer")[-1]
    uid = quote(m["uid"], safe="")
    _review(c, m["uid"], {"decision": "not_a_mention", "reviewer": "cy"})
    assert _post(c, f"/api/mentions/{uid}/review", {"decision": "withdraw", "apply_to_same_text": True}).status_code == 400
    w = _review(c, m["uid"], {"decision": "withdraw", "reviewer": "dee"})
    assert (w["decision"], w["concept_uid"]) == ("withdraw", "")
    now = next(x for x in _doc(c, "d2")["mentions"] if x["uid"] == m["uid"])
    assert now["review"] is None and now["concept"] == m["machine_concept"] and "reviewed" not in now["classes"]
    assert [r[:3] for r in _stored_reviews(served, m["uid"])] == [["not_a_mention", False, "cy"],
                                                                  ["withdraw", False, "dee"]]  # nothing deleted
    panel = c.get(f"/api/mentions/{uid}").json()
    assert panel["review"] is None
    assert [(r["decision"], r["reviewer"]) for r in panel["reviews"]] == [("withdraw", "dee"), ("not_a_mention", "cy")]
    assert panel["reviews"][0]["created_at"] > panel["reviews"][1]["created_at"]
    assert m["uid"] in {x["uid"] for x in _queue(c, limit=200)["mentions"]} | {
        x["uid"] for x in _mentions(c, "ovarian cancer") if x["review"] is None}
    again = _post(c, f"/api/mentions/{uid}/review", {"decision": "withdraw"})
    assert again.status_code == 400 and "no review to withdraw" in again.json()["error"]
    _review(c, m["uid"], {"decision": "nil", "reviewer": "cy"})  # and it can be reviewed again
    assert next(x for x in _doc(c, "d2")["mentions"] if x["uid"] == m["uid"])["review"]["decision"] == "nil"


def test_time_per_review_and_reviews_per_hour(served):
    c = served.client
    m = _mentions(c, "colorectal cancer")[0]
    _review(c, m["uid"], {"decision": "nil", "reviewer": "tim", "elapsed_ms": 1800})
    _review(c, m["uid"], {"decision": "accept", "reviewer": "tim", "elapsed_ms": 1200})
    _review(c, m["uid"], {"decision": "accept", "reviewer": "tim"})  # not measured: counted, not timed
    assert [r[4] for r in _stored_reviews(served, m["uid"])] == [1800, 1200, None]
    tim = next(r for r in c.get("/api/runs").json()["reviewers"] if r["reviewer"] == "tim")
    assert (tim["reviews"], tim["timed"]) == (3, 2)
    assert tim["reviews_per_hour"] == pytest.approx(2 / (3000 / 3_600_000))
    page = c.get("/runs").text
    assert "Reviews per hour" in page and "2400" in page
    uid = quote(m["uid"], safe="")
    for bad in ("slow", -5, 10 ** 12, True):
        assert _post(c, f"/api/mentions/{uid}/review", {"decision": "nil", "elapsed_ms": bad}).status_code == 400


def test_two_reviewers_agreement_and_conflicts(served):
    c = served.client
    t1, t2 = _mentions(c, "ataxia telangiectasia")
    _review(c, t1["uid"], {"decision": "concept", "concept": "TOYD:0001", "reviewer": "rev1"})
    _review(c, t1["uid"], {"decision": "concept", "concept": "TOYD:0001", "reviewer": "rev2"})
    _review(c, t2["uid"], {"decision": "nil", "reviewer": "rev1"})
    _review(c, t2["uid"], {"decision": "concept", "concept": "TOYD:0001", "reviewer": "rev2"})
    pair = next(a for a in c.get("/api/runs").json()["agreement"] if a["reviewers"] == ["rev1", "rev2"])
    # answers rev1 [0001, nil], rev2 [0001, 0001]: p_o = 0.5, p_e = 0.5 * 1 = 0.5, kappa 0
    assert (pair["mentions"], pair["identical"], pair["identical_share"]) == (2, 1, 0.5)
    assert pair["kappa"] == pytest.approx(0.0)
    shown = {m["uid"]: m for m in _doc(c, "d1")["mentions"]}
    assert not shown[t1["uid"]]["conflict"] and shown[t2["uid"]]["conflict"]
    assert "conflict" in shown[t2["uid"]]["classes"]
    assert "conflict" in c.get("/documents/d1").text.split(f'data-mention="{t2["uid"]}"', 1)[1].split(">", 1)[0]
    assert c.get(f"/api/mentions/{quote(t2['uid'], safe='')}").json()["conflict"]
    _review(c, t2["uid"], {"decision": "withdraw", "reviewer": "rev1"})  # rev1 takes theirs back: no conflict
    assert not next(m for m in _doc(c, "d1")["mentions"] if m["uid"] == t2["uid"])["conflict"]
    assert "rev1 · rev2" in c.get("/runs").text


def test_a_pending_review_leaves_the_queue_at_once(stores, monkeypatch):  # noqa: F811
    """A review the desk could not write yet (another process holds the store) counts as made."""
    from kgnorm.review.records import Review, now

    lady = stores("ladybug")
    c = lady.client
    q = _queue(c, limit=200)
    top = q["mentions"][0]
    form = [m for m in _mentions(c, top["text"]) if m["review"] is None and m["type"] == top["type"]]
    mine = [Review(f"p{i}", m["uid"], "nil", reviewer="cy", created_at=now(), doc_id=m["doc_id"])
            for i, m in enumerate(form)]
    monkeypatch.setattr(lady.desk, "pending", lambda: mine)
    after = _queue(c, limit=200)
    assert top["uid"] not in {m["uid"] for m in after["mentions"]} and after["forms"] == q["forms"] - 1
    assert after["progress"]["reviewed"] == q["progress"]["reviewed"] + len(form)
    withdrawn = Review("p9", form[0]["uid"], "withdraw", reviewer="cy", created_at=now(), doc_id=form[0]["doc_id"])
    monkeypatch.setattr(lady.desk, "pending", lambda: [*mine, withdrawn])  # unreviewed again
    assert form[0]["uid"] in {m["uid"] for m in _queue(c, limit=200)["mentions"]}


ASKED = (("uncertain", 1, ""), ("document", 2, ""), ("uncertain", 3, ""), ("random", 3, ""), ("uncertain", 200, ""),
         ("document", 200, ""), ("uncertain", 200, "Disease"))


def _as_the_store_says(s, asked=ASKED) -> None:
    """The app's kept queue (kgnorm.review.queue_cache) answers as the store's queries do now."""
    from kgnorm.review.queue import queue_view

    for order, limit, typ in asked:
        kept = _queue(s.client, order=order, limit=limit, type=typ, seed=3)
        with s.desk.reading() as st:
            fresh = queue_view(st, limit, order, typ, 3, pending=s.desk.pending())
        wrong = [q["progress"].pop(k) for q in (kept, fresh) for k in ("predicted_wrong", "predicted_wrong_share")]
        assert kept == fresh, (order, limit, typ)
        assert wrong[:2] == pytest.approx(wrong[2:])


def test_the_kept_queue_follows_reviews_and_runs(served, monkeypatch):
    from kgnorm.review import queue_cache

    monkeypatch.setattr(queue_cache, "AHEAD", 3)  # reads ahead that run out: every way of reading is taken
    monkeypatch.setattr(queue_cache, "AHEAD_FORM", 1)
    c = served.client
    served.desk.queue = queue_cache.QueueCache()  # kept from now: only the forms asked for are read
    _as_the_store_says(served, (("uncertain", 1, ""),))
    for m in [m for d in ("d1", "d2", "x1") for m in _doc(c, d)["mentions"] if m["review"] is not None]:
        _review(c, m["uid"], {"decision": "withdraw", "reviewer": "kay"})  # every mention in the queue again
    for _ in range(4):  # the least sure each time, one by one: each form's next mention comes up
        top = _queue(c, limit=1)["mentions"][0]
        _review(c, top["uid"], {"decision": "nil", "reviewer": "kay"})
        _as_the_store_says(served, (("uncertain", 1, ""), ("document", 1, "")))
    _as_the_store_says(served)
    _review(c, top["uid"], {"decision": "withdraw", "reviewer": "kay"})  # back in the queue
    _as_the_store_says(served)
    first = _queue(c, order="document", limit=1)["mentions"][0]
    _review(c, first["uid"], {"decision": "not_a_mention", "reviewer": "kay", "apply_to_same_text": True})
    _as_the_store_says(served)
    doc = _doc(c, "d2")
    at = doc["text"].index("No link")
    r = _post(c, f"/api/documents/{quote(doc['uid'], safe='')}/mentions",
              {"start": at, "end": at + 7, "type": "Disease", "reviewer": "kay"})
    assert r.status_code == 201, r.text
    _as_the_store_says(served)  # a span a person added, reviewed: not in the queue, counted in all
    _review(c, r.json()["mention_uid"], {"decision": "withdraw", "reviewer": "kay"})
    _as_the_store_says(served)  # taken back: unreviewed, so in the queue
    some = next(m for m in _doc(c, "d1")["mentions"] if m["review"] is None)
    with open_store(served.uri) as st:  # a refit's confidences (not through the app): the queue is built again
        st.write_statements([("MATCH (m:Mention {uid: $m}) SET m.confidence = 0.002", {"m": some["uid"]})], "conf")
    _as_the_store_says(served)


def test_the_queue_is_built_as_the_server_starts(served, monkeypatch):
    """The app builds the kept queue in the background as it starts: meanwhile the other pages answer,
    a queue request waits for the build (past the wait it says so: 503, one line), then the queue is
    the store's."""
    import threading

    from starlette.testclient import TestClient

    from kgnorm.review import queue_cache
    from kgnorm.review.desk import ReviewDesk
    from kgnorm.serve import create_app, state
    from test_serve_http import TOKEN as token

    gate, started, build = threading.Event(), threading.Event(), queue_cache._build

    def held(*a, **kw):  # the build, held until the test lets it go (a big store's seconds)
        started.set()
        assert gate.wait(60)
        return build(*a, **kw)

    monkeypatch.setattr(queue_cache, "_build", held)
    desk = ReviewDesk(served.uri, read_only=True)
    try:
        c = TestClient(create_app(desk, token, read_only=True))
        assert started.wait(60) and not desk.queue.built
        assert c.get("/api/documents/d1").status_code == 200  # the desk's reader is free: pages answer
        assert c.get("/documents/d2").status_code == 200
        monkeypatch.setattr(state, "QUEUE_WAIT_S", 0.05)
        r = c.get("/api/queue")
        assert r.status_code == 503 and "still being built" in r.json()["error"] and r.headers["retry-after"]
        assert "still being built" in c.get("/queue").text
        monkeypatch.setattr(state, "QUEUE_WAIT_S", 60.0)
        got: dict = {}
        waiting = threading.Thread(target=lambda: got.update(r=TestClient(c.app).get("/api/queue?limit=200")))
        waiting.start()
        waiting.join(0.3)
        assert waiting.is_alive() and not got  # it waits for the build ...
        gate.set()
        waiting.join(60)
        assert got["r"].status_code == 200 and desk.queue.built  # ... and answers from it
        with desk.reading() as st:
            from kgnorm.review.queue import queue_view
            fresh = queue_view(st, 200, pending=desk.pending())
        kept = got["r"].json()
        for q in (kept, fresh):
            q["progress"].pop("predicted_wrong"), q["progress"].pop("predicted_wrong_share")
        assert kept == fresh
    finally:
        gate.set()
        desk.close()


def test_a_server_up_long_enough_answers_the_first_queue_request_from_what_it_built(served):
    from starlette.testclient import TestClient

    from kgnorm.review.desk import ReviewDesk
    from kgnorm.serve import create_app
    from test_serve_http import TOKEN as token

    desk = ReviewDesk(served.uri, read_only=True)
    try:
        c = TestClient(create_app(desk, token, read_only=True))
        assert desk.queue.wait_ready(60) and desk.queue.built  # built before any queue request
        built = desk.queue._built
        assert c.get("/api/queue").status_code == 200 and desk.queue._built is built  # not built again
    finally:
        desk.close()


def test_concept_search_by_uid_name_and_synonym_within_an_ontology(served):
    """The panel's concept search (serve_search_*.cypher): an exact uid, names starting with the
    text, then names and synonyms holding it; with `ontology`, that ontology's concepts only."""
    def hits(**params) -> list[tuple[str, str]]:
        r = served.client.get("/api/concepts", params=params)
        assert r.status_code == 200, r.text
        return [(h["uid"], h["ontology"]) for h in r.json()["concepts"]]

    assert hits(q="TOYD:0002") == hits(q="TOYD:0002", ontology="toyd") == [("TOYD:0002", "toyd")]
    assert hits(q="TOYD:0002", ontology="other") == []
    assert hits(q="Breast", ontology="toyd") == [("TOYD:0002", "toyd")]  # a name starts with it
    assert hits(q="louis-bar") == [("TOYD:0001", "toyd")]  # a synonym holds it
    assert hits(q="louis-bar", ontology="other") == []
    assert hits(q="cancer", limit=2) == [("TOYD:0002", "toyd"), ("TOYD:0003", "toyd")]  # shortest names first
