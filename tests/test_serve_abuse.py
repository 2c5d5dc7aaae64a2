"""The review app under abuse (issue 52, item 5; the long run is benchmarks/serve_load.py): seeded
malformed requests (tests/serve_abuse.py) are all answered 4xx and write nothing, the app answers
after them, and every write route compares the token with hmac.compare_digest (constant time),
never with ==."""
from __future__ import annotations

import ast
import collections
import hmac
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from kgnorm.review.desk import ReviewDesk
from kgnorm.serve import create_app
from serve_abuse import FAMILIES, TOKEN_HEADER, Target, footprint, probes, small_store

TOKEN = "abuse-test-token-0123456789"
ROOT = Path(__file__).resolve().parent.parent
N_PROBES = 400


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve-abuse")
    uri = f"ladybug://{tmp}/graph"
    mentions, documents = small_store(uri, tmp)
    desk = ReviewDesk(uri)
    app = create_app(desk, TOKEN, allowed_hosts=["127.0.0.1", "localhost", "::1", "testserver"])
    client = TestClient(app, raise_server_exceptions=False)
    yield uri, client, Target(TOKEN, mentions, documents), app
    desk.close()


def test_malformed_requests_are_4xx_and_write_nothing(served):
    uri, client, target, _ = served
    before = footprint(uri)
    wrong = collections.Counter()
    for p in probes(target, N_PROBES, seed=0):
        r = client.request(p.method, p.path, headers=p.headers, content=p.body)
        if not 400 <= r.status_code < 500:
            wrong[(p.family, r.status_code, p.method, p.path[:80], (p.body or b"")[:60])] += 1
        elif r.request.url.path.startswith("/api/") and p.family != "foreign Host":  # that one: plain text
            assert list(r.json()) == ["error"] and "\n" not in r.json()["error"], (p.family, r.text[:200])
    assert not wrong, wrong
    assert footprint(uri) == before  # no Review, no added Mention, the journal as it was
    assert client.get("/api/documents?limit=1").status_code == 200
    ok = client.post(f"/api/mentions/{quote(target.mentions[0], safe='')}/review", json={"decision": "nil"},
                     headers={TOKEN_HEADER: TOKEN})
    assert ok.status_code == 200, ok.text  # the same app still takes a well-formed review
    assert footprint(uri) != before


def test_every_family_is_drawn():
    target = Target(TOKEN, ["m:1"], ["d:1"])
    assert {p.family for p in probes(target, 2 * len(FAMILIES))} == set(FAMILIES)


def test_content_type_and_encoding_are_checked(served):
    _, client, target, _ = served
    path = f"/api/mentions/{quote(target.mentions[1], safe='')}/review"
    body = '{"decision": "nil"}'
    for ctype, content, code in [("text/plain", body.encode(), 415), (None, body.encode(), 415),
                                 ("application/json", body.encode("utf-16"), 400),
                                 ("application/json", b"\xef\xbb\xbf" + body.encode(), 400),
                                 ("application/json", b"[" * 20_000, 400),
                                 ("application/json", b'{"decision": "nil", "reviewer": "\\ud800"}', 400),
                                 ("application/json", b'{"decision": "nil", "reviewer": "a\\u0000b"}', 400),
                                 ("application/json; charset=utf-8", body.encode(), 200)]:
        headers = {TOKEN_HEADER: TOKEN, **({"Content-Type": ctype} if ctype else {})}
        assert client.post(path, content=content, headers=headers).status_code == code, (ctype, content[:30])


def test_a_named_ontology_is_not_swapped(served):
    _, client, target, _ = served
    path = f"/api/mentions/{quote(target.mentions[2], safe='')}/review"
    r = client.post(path, json={"decision": "concept", "concept": target.concept, "ontology": "nope"},
                    headers={TOKEN_HEADER: TOKEN})
    assert r.status_code == 400 and "not in ontology 'nope'" in r.json()["error"]


def test_every_write_route_compares_the_token_with_hmac_compare_digest(served, monkeypatch):
    _, client, target, app = served
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    writes = [(r, m) for r in app.routes if isinstance(r, Route)
              for m in sorted(set(r.methods or ()) - {"GET", "HEAD"})]
    assert len(writes) >= 2
    for route, method in writes:
        path = route.path.replace("{uid:path}", quote(target.mentions[3], safe="")).replace(
            "{doc_id:path}", quote(target.documents[3], safe=""))
        calls.clear()
        guess = TOKEN[:-1] + ("x" if TOKEN[-1] != "x" else "y")
        r = client.request(method, path, json={"decision": "nil"}, headers={TOKEN_HEADER: guess})
        assert r.status_code == 403, (method, route.path, r.status_code)
        assert calls == [(guess.encode(), TOKEN.encode())], (method, route.path)


def _token_comparisons(path: Path) -> list[str]:
    """`a == b` / `a != b` where either side names a token: what a timing attack measures."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
            names = [ast.unparse(x) for x in [node.left, *node.comparators]]
            if any("token" in n.lower() for n in names):
                out.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_token_is_compared_with_eq():
    files = [*sorted((ROOT / "kgnorm" / "serve").glob("*.py")), ROOT / "cli" / "serve_cmds.py"]
    assert len(files) > 3
    assert [hit for f in files for hit in _token_comparisons(f)] == []


HOLD = """
import sys
from kgnorm.stores import open_store
st = open_store(sys.argv[1])
print("held", flush=True)
sys.stdin.readline()
st.close()
"""

TRY_WRITE = """
import sys
from kgnorm.errors import StoreError
from kgnorm.stores import open_store
try:
    open_store(sys.argv[1], lock_timeout=0).close()
    print("opened")
except StoreError as exc:
    print("locked" if "locked" in str(exc) else str(exc))
"""


@pytest.fixture
def own_store(tmp_path):
    uri = f"ladybug://{tmp_path}/graph"
    mentions, _ = small_store(uri, tmp_path, n_docs=3, per_doc=3)
    return uri, mentions


def test_a_review_never_waits_for_another_writer(own_store):
    """While another process writes the store, a review is journaled and answered at once (pending),
    not after --lock-timeout; the retry thread writes it once the store is free."""
    uri, mentions = own_store
    desk = ReviewDesk(uri, lock_timeout=5.0, retry_s=0.2)
    writer = subprocess.Popen([sys.executable, "-c", HOLD, uri], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert writer.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        review = desk.record(mentions[0], "nil", reviewer="ann")
        assert time.monotonic() - t0 < 2.0 and [r.uid for r in desk.pending()] == [review.uid]
        writer.communicate("\n", timeout=60)
        deadline = time.monotonic() + 30
        while desk.pending() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert desk.pending() == []
    finally:
        if writer.poll() is None:
            writer.kill()
        desk.close()


def test_no_other_process_can_write_while_the_desk_writes(own_store, monkeypatch):
    """LadybugDB's lock is a POSIX lock: closing the desk's reader while its writer is open would
    release it. A page asked for during a write (here: a reader whose store changed) is answered
    from the reader as it was, which is reopened only after the write."""
    import kgnorm.review.desk as desk_module

    uri, mentions = own_store
    desk = ReviewDesk(uri, retry_s=60)
    with desk.reading():
        pass
    seen: list[str] = []
    real = desk_module.apply_review

    def ask_a_page() -> None:
        with desk.reading():
            pass

    def during_the_write(st, review):
        desk._reader_stamp = ("changed",)  # a reader still open would be closed and reopened now
        page = threading.Thread(target=ask_a_page)
        page.start()
        page.join(timeout=30)
        assert not page.is_alive()  # pages are not held up by the write
        seen.append(subprocess.run([sys.executable, "-c", TRY_WRITE, uri], capture_output=True, text=True,
                                   timeout=60).stdout.strip())
        real(st, review)

    monkeypatch.setattr(desk_module, "apply_review", during_the_write)
    try:
        desk.record(mentions[1], "nil")
        assert seen == ["locked"]
    finally:
        desk.close()


def test_the_journal_reads_what_was_added_and_a_torn_line_loses_nothing(tmp_path):
    """reviews() reads only the lines added since it last read (any process may append), the whole
    file again when it was replaced; a review appended after a line a crash cut short is kept."""
    from kgnorm.review.journal import ReviewJournal
    from kgnorm.review.records import Review, now

    journal = ReviewJournal(tmp_path / "j.jsonl")
    review = [Review(f"u{i}", "m:1", "nil", created_at=now()) for i in range(4)]
    journal.append(review[0])
    assert [r.uid for r in journal.reviews()] == ["u0"]
    other = ReviewJournal(tmp_path / "j.jsonl")  # another process's desk
    other.append(review[1])
    with open(tmp_path / "j.jsonl", "ab") as fh:
        fh.write(b'{"uid": "torn", "mention')  # a write a crash cut short
    assert [r.uid for r in journal.reviews()] == ["u0", "u1"]
    journal.append(review[2])
    assert [r.uid for r in journal.reviews()] == ["u0", "u1", "u2"] == [r.uid for r in journal.scan()[0]]
    (tmp_path / "j.jsonl").write_text(json.dumps(review[3].record()) + "\n", encoding="utf-8")
    assert [r.uid for r in journal.reviews()] == ["u3"]
