"""Malformed requests to the review app (issue 52, "the page under load and abuse"), shared by
tests/test_serve_abuse.py (a short run through Starlette's test client) and benchmarks/serve_load.py
(1,000 against a real `kgnorm serve`).

A seeded generator (`probes`) draws requests from a dozen families: bodies that are not JSON or not
an object, fields too long, of the wrong type or missing, unknown and percent-encoded path-traversal
ids, missing, wrong and timing-probed tokens (the real token with its last characters changed),
foreign Host headers, wrong methods and content types. Many carry the real token and an otherwise
valid review, so that only the one fault stands between the request and a write. The contract:
every answer is 4xx, the server still answers, and the store and the review journal are unchanged
(`footprint`). `small_store` builds the store the requests go to through the product's own write
path (a StagedRun, as `annotate` writes)."""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

TOKEN_HEADER = "X-Kgnorm-Token"
WORDS = ["heart", "attack", "kidney", "renal", "failure", "acute", "chronic", "disease", "syndrome", "cancer",
         "tumor", "breast", "lung", "liver", "pain", "fever", "diabetes"]


@dataclass
class Target:
    """What a probe may aim at: the app's token, real mention and document uids, a real concept."""
    token: str
    mentions: list[str]
    documents: list[str]
    concept: str = "SYN:000001"


@dataclass
class Probe:
    family: str
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None


def small_store(uri: str, work: Path, n_docs: int = 20, per_doc: int = 5, n_concepts: int = 50,
                seed: int = 0) -> tuple[list[str], list[str]]:
    """An embedded store with a synthetic ontology and `n_docs` annotated documents of `per_doc`
    linked mentions each; (mention uids, document uids)."""
    from kgnorm.jobs.ingest import ingest
    from kgnorm.stores import DocumentRow, LinkEdge, MentionRow, RunRecord, open_store
    from kgnorm.stores.staged_run import StagedMention, StagedRun

    rng = random.Random(seed)
    obo = work / "syn.obo"
    lines = ["format-version: 1.2", "data-version: syn/1", "ontology: syn", ""]
    for i in range(n_concepts):
        lines += ["[Term]", f"id: SYN:{i:06d}", f"name: {' '.join(rng.sample(WORDS, 2))} {i}", ""]
    obo.write_text("\n".join(lines), encoding="utf-8")
    ingest("obo", obo, "syn", False, uri, 30.0, True)
    mentions, documents = [], []
    run = RunRecord(f"abuse-{seed}", "annotate", "synthetic")
    with open_store(uri) as st, StagedRun(st, run, ontology="syn") as staged:
        items, docs = [], []
        for d in range(n_docs):
            words = [rng.choice(WORDS) for _ in range(60)]
            text = " ".join(words)
            starts = [sum(len(w) + 1 for w in words[:j]) for j in range(len(words))]
            duid = f"syn:d{d:05d}"
            docs.append(DocumentRow(duid, f"d{d:05d}", "synthetic", text[:starts[6] - 1], text))
            documents.append(duid)
            for j, w in enumerate(sorted(rng.sample(range(1, len(words)), per_doc))):
                muid = f"syn:d{d:05d}:m{j}"
                row = MentionRow(muid, words[w], f"d{d:05d}", starts[w], starts[w] + len(words[w]), "", f"m{j}",
                                 "synthetic", "Disease")
                items.append(StagedMention(row, [LinkEdge(muid, f"SYN:{rng.randrange(n_concepts):06d}", 0.9, 1)],
                                           duid))
                mentions.append(muid)
        staged.add(items, docs)
        staged.publish()
    return mentions, documents


def footprint(uri: str) -> tuple[str, ...]:
    """What a write would change: the count of Review nodes and REVIEWED edges, of mentions, and
    the journal's bytes (a digest; "" when there is none)."""
    from kgnorm.stores import embedded_path, open_store

    with open_store(uri, read_only=True) as st:
        counts = [str(st.query(q).rows[0][0]) for q in ("MATCH (r:Review) RETURN count(r)",
                                                        "MATCH ()-[e:REVIEWED]->() RETURN count(e)",
                                                        "MATCH (m:Mention) RETURN count(m)")]
    path = embedded_path(uri)
    journal = Path(f"{path}.reviews.jsonl") if path is not None else None
    digest = hashlib.sha256(journal.read_bytes()).hexdigest() if journal and journal.exists() else ""
    return (*counts, digest)


def review_path(uid: str) -> str:
    return f"/api/mentions/{quote(uid, safe='')}/review"


def add_path(doc_uid: str) -> str:
    return f"/api/documents/{quote(doc_uid, safe='')}/mentions"


def _json(body: object) -> bytes:
    return json.dumps(body).encode()


def _write(t: Target, rng: random.Random, body: bytes | None = None, *, token: str | None = None,
           content_type: str | None = "application/json", family: str = "", path: str = "") -> Probe:
    """A review (or an added mention) that would be written but for what the caller changed."""
    headers = {TOKEN_HEADER: t.token if token is None else token}
    if content_type is not None:
        headers["Content-Type"] = content_type
    if not path:
        path = review_path(rng.choice(t.mentions)) if rng.random() < 0.7 else add_path(rng.choice(t.documents))
    if body is None:
        body = _json({"decision": "concept", "concept": t.concept, "reviewer": "abuse"} if "/review" in path else
                     {"start": 0, "end": 5, "concept": t.concept, "reviewer": "abuse"})
    return Probe(family, "POST", path, headers, body)


NOT_JSON = [b"{", b"{\"decision\":", b"nul", b"{'decision': 'nil'}", b"{\"decision\": \"nil\"} trailing", b"\x00",
            b"\xff\xfe\x00{", b"\xef\xbb\xbf{\"decision\": \"nil\"}", "{\"decision\": \"nil\"}".encode("utf-16"),
            b"{\"decision\": NaN}", b"{\"decision\": \"nil\",}", b"[" * 30_000 + b"]" * 30_000,
            b"{\"a\":" * 10_000 + b"1" + b"}" * 10_000, b"[1, 2]", b"\"nil\"", b"42", b"null", b"true",
            b"{\"decision\": \"nil\", \"reviewer\": \"\\ud800\"}", b"{\"start\": 1e999, \"end\": -1e999}",
            b"{\"start\": " + b"9" * 5000 + b", \"end\": 3}", b"{\"decision\": \"\\u0000\"}", b"\t \n"]


def _bad_json(t: Target, rng: random.Random) -> Probe:
    return _write(t, rng, rng.choice(NOT_JSON))


def _huge(t: Target, rng: random.Random) -> Probe:
    p = _write(t, rng)
    used = ["decision", "concept", "reviewer", "ontology"] + ([] if "/review" in p.path else ["type"])
    kind = rng.random()
    if kind < 0.6:  # one field past the API's 1,000 characters, or the body past its 64 KiB
        size = rng.choice([1001, 4000, 60_000, 70_000, 1_000_000])
        p.body = _json({**json.loads(p.body or b"{}"), rng.choice(used): "x" * size})
    elif kind < 0.8:  # many keys, none the route reads
        p.body = _json({f"k{i}": i for i in range(rng.choice([5_000, 20_000]))})
    else:  # a valid body padded past 64 KiB
        p.body = (p.body or b"{}") + b" " * rng.choice([70_000, 2_000_000])
    return p


def _fields(t: Target, rng: random.Random) -> Probe:
    review = [{}, {"decision": None}, {"decision": 5}, {"decision": ["nil"]}, {"decision": {"a": 1}},
              {"decision": "concept"}, {"decision": "concept", "concept": "NOPE:1"}, {"decision": "maybe"},
              {"decision": "accept", "concept": 7}, {"decision": "concept", "concept": t.concept, "reviewer": 3},
              {"decision": "concept", "concept": t.concept, "ontology": "nope"}, {"decision": "NIL"},
              {"decision": " concept ", "concept": "../../etc/passwd"}, {"decision": "concept", "concept": "\x00"},
              {"decision": True}]
    added = [{}, {"start": 0}, {"end": 5}, {"start": -1, "end": 5}, {"start": 5, "end": 2}, {"start": 3, "end": 3},
             {"start": True, "end": 3}, {"start": 0, "end": 10 ** 20}, {"start": "0", "end": "3"},
             {"start": 0.0, "end": 3.0}, {"start": 0, "end": 5, "concept": "NOPE:1"},
             {"start": 0, "end": 5, "decision": "maybe"}, {"start": None, "end": None},
             {"start": 0, "end": 5, "type": ["x"]}, {"start": 0, "end": 5, "decision": "accept"}]
    if rng.random() < 0.5:
        return _write(t, rng, _json(rng.choice(review)), path=review_path(rng.choice(t.mentions)))
    return _write(t, rng, _json(rng.choice(added)), path=add_path(rng.choice(t.documents)))


TRAVERSAL = ["../../etc/passwd", "..%2F..%2Fetc%2Fpasswd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "%252e%252e%252f",
             "..\\..\\windows\\win.ini", "%00", "x%00y", "%zz", "%ff%fe", "%c0%ae%c0%ae/", "....//....//",
             "/etc/passwd", "%2Fetc%2Fpasswd", "C:%5Cboot.ini", "%e2%80%ae", "\u202e", "a" * 5000, "%",
             "syn:d00000:m0/../../x", "%3Cscript%3E", "' OR 1=1 --", "\") RETURN 1 //", "{uid}", "null"]


def _uid(t: Target, rng: random.Random) -> Probe:
    uid = rng.choice(TRAVERSAL + [f"unknown:{rng.randrange(10 ** 9)}"])
    raw = rng.random() < 0.5  # as written (its % escapes reach the router) or percent-encoded once more
    part = uid if raw else quote(uid, safe="")
    where = rng.random()
    if where < 0.35:
        return _write(t, rng, path=f"/api/mentions/{part}/review")
    if where < 0.55:
        return _write(t, rng, path=f"/api/documents/{part}/mentions")
    page = rng.choice(["/api/mentions/", "/api/documents/", "/api/concepts/", "/documents/", "/concepts/",
                       "/static/", "/static/../", "/api/"])
    return Probe("", "GET", page + part)


def wrong_tokens(token: str, rng: random.Random) -> list[str]:
    """Tokens a guesser would send: none, empty, another, and the real one with the tail changed
    (what a timing attack tries one character at a time). Not the real one padded with spaces: HTTP
    drops a header value's surrounding whitespace, so that is the real token."""
    k = rng.randrange(len(token))
    other = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-_") for _ in range(len(token)))
    return ["", " ", other, token[:-1], token + "x", token[:k] + other[k:], token.upper() if token.upper() != token
            else token.lower() + "X", f"{token},{token}", "Bearer " + token, token[:k], token + "\t" + token]


def _token(t: Target, rng: random.Random) -> Probe:
    p = _write(t, rng, token=rng.choice(wrong_tokens(t.token, rng)))
    if rng.random() < 0.15:
        del p.headers[TOKEN_HEADER]
    return p


FOREIGN_HOSTS = ["evil.example", "127.0.0.1.nip.io", "localhost.evil.example", "attacker.test:8765", "0.0.0.0",
                 "127.0.0.2", "[::2]", "evil.example@127.0.0.1", "xn--80ak6aa92e.com", "LOCALHOST.evil", "*"]


def _host(t: Target, rng: random.Random) -> Probe:
    p = _write(t, rng) if rng.random() < 0.7 else Probe("", "GET", rng.choice(["/documents", "/api/documents"]))
    p.headers["Host"] = rng.choice(FOREIGN_HOSTS)
    return p


def _method(t: Target, rng: random.Random) -> Probe:
    p = _write(t, rng)
    if rng.random() < 0.6:
        p.method = rng.choice(["PUT", "DELETE", "PATCH"])
    else:
        p.method = "POST"
        p.path = rng.choice(["/api/documents", "/api/runs", "/api/reviews", "/api/orphans", "/documents", "/runs",
                             "/api/concepts", f"/api/mentions/{quote(rng.choice(t.mentions), safe='')}",
                             "/static/app.js", "/"])
    return p


def _content_type(t: Target, rng: random.Random) -> Probe:
    return _write(t, rng, content_type=rng.choice([None, "text/plain", "application/x-www-form-urlencoded",
                                                   "multipart/form-data; boundary=x", "text/html",
                                                   "application/jsonx", "application/xml", ""]))


FAMILIES = {"bad JSON": _bad_json, "huge field or body": _huge, "missing or wrong field": _fields,
            "unknown or traversal uid": _uid, "wrong or probed token": _token, "foreign Host": _host,
            "wrong method": _method, "wrong content type": _content_type}


def probes(t: Target, n: int, seed: int = 0) -> list[Probe]:
    """`n` malformed requests, the families in turn (each drawn with the same seeded generator)."""
    rng = random.Random(seed)
    out = []
    names = list(FAMILIES)
    for i in range(n):
        name = names[i % len(names)]
        p = FAMILIES[name](t, rng)
        p.family = name
        out.append(p)
    return out
