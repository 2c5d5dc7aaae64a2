"""How fast `kgnorm serve` answers on a big store (issue 40: a document page for an abstract with 30
mentions in <= 200 ms on 100,000 documents and 1 million mentions, 2 cores; issue 50: the review
queue in <= 200 ms there).

The store is built through the product's own write path (a StagedRun, as `annotate` writes): a
synthetic ontology of `--concepts` concepts (ingested with `kgnorm ingest obo`), `--documents`
documents of abstract length, one in ten with 30 mentions and the rest with enough to reach
`--mentions` in all, each mention LINKED_TO one concept (rank 1, as annotate writes by default).
Then the pages are asked for through the app itself (Starlette's test client: routing, the store
reads, the template, no network), each `--repeat` times on distinct documents, after one warm-up
request; the figure is the median and the 95th percentile per route. The review queue is timed
three ways in the same run: as kgnorm.review.queue computes it from the store on every call (what
the app did before it kept the queue; QUEUE_REPEAT times, as it scans every mention), the app's
first request once the server has been up long enough (the app builds the queue in the background as
it starts: create_app, ReviewDesk.build_queue), and the app's requests after it. Also timed: that
background build (from the app's creation until the queue is ready), the document JSON asked while
it runs (the pages it must not block), and, on a fresh app, a queue request sent at once as the
app starts (it waits for the build). Then, on a copy of the store, a curator's loop: `--reviews`
times, the queue's first mention reviewed and the queue asked again (the figure: that request). `--store DIR` keeps (and reuses) the built store; without
it the store lives in a temporary directory.
"""
from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append, record  # noqa: E402

QUEUE_REPEAT = 5
QUEUE = "/api/queue?limit=50"
QUEUE_LABEL = "review queue (/api/queue?limit=50)"
FIRST_LABEL = "review queue, the app's first request, the server up (queue built in the background)"
BUILD_LABEL = "review queue built in the background, from the app's start"
WORDS = ["heart", "attack", "kidney", "renal", "failure", "acute", "chronic", "disease", "syndrome",
         "infarction", "myocardial", "parkinson", "cancer", "tumor", "breast", "lung", "liver", "pain",
         "fever", "diabetes", "hyper", "tension", "neuro", "cardio", "gastro", "nephro", "hepato", "onco"]


def synthetic_obo(path: Path, n: int, rng: random.Random) -> None:
    lines = ["format-version: 1.2", "data-version: syn/1", "ontology: syn", ""]
    for i in range(n):
        name = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        lines += ["[Term]", f"id: SYN:{i:06d}", f"name: {name} {i}", f'synonym: "{name} variant {i}" EXACT []']
        lines += ([f"is_a: SYN:{(i - 1) // 8:06d}"] if i else []) + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def add_store_options(ap: argparse.ArgumentParser, repeat: int) -> None:
    """The options of a benchmark over a built review store (this script's, benchmarks/check_store.py's)."""
    ap.add_argument("--documents", type=int, default=100_000)
    ap.add_argument("--mentions", type=int, default=1_000_000)
    ap.add_argument("--concepts", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--store", type=Path, help="keep the built store here (reused when it exists)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-report", action="store_true", help="print, do not append to benchmarks/LOG.md")


def store_for(args: argparse.Namespace, tmp: Path) -> tuple[Path, float]:
    """(the store's path, seconds to build or find it): --store when given and there, else built."""
    path = args.store or tmp / "graph"
    t0 = time.perf_counter()
    if not path.exists():
        build_store(f"ladybug://{path}", tmp, args.documents, args.mentions, args.concepts, args.seed)
    return path, time.perf_counter() - t0


def build_store(uri: str, work: Path, n_docs: int, n_mentions: int, n_concepts: int, seed: int) -> None:
    from kgnorm.jobs.ingest import ingest
    from kgnorm.stores import DocumentRow, LinkEdge, MentionRow, RunRecord, open_store
    from kgnorm.stores.staged_run import StagedMention, StagedRun

    rng = random.Random(seed)
    obo = work / "syn.obo"
    synthetic_obo(obo, n_concepts, rng)
    ingest("obo", obo, "syn", False, uri, 30.0, True)
    big = n_docs // 10
    per_rest = max(1, (n_mentions - big * 30) // max(1, n_docs - big))
    run = RunRecord("bench-serve-annotate", "annotate", "synthetic", params={"documents": n_docs})
    with open_store(uri) as st, StagedRun(st, run, ontology="syn") as staged:
        pending: list[StagedMention] = []
        docs: list[DocumentRow] = []
        for d in range(n_docs):
            k = 30 if d % 10 == 0 else per_rest
            words = [rng.choice(WORDS) for _ in range(220)]
            text = " ".join(words)
            starts = [0]
            for w in words[:-1]:
                starts.append(starts[-1] + len(w) + 1)
            duid, doc_id = f"bench:{d:07d}", f"{d:07d}"
            docs.append(DocumentRow(duid, doc_id, "synthetic", text[:starts[12] - 1], text))
            for j, w in enumerate(sorted(rng.sample(range(220), k))):
                muid = f"bench:{d:07d}:{j}"
                c = f"SYN:{rng.randrange(n_concepts):06d}"
                row = MentionRow(muid, words[w], doc_id, starts[w], starts[w] + len(words[w]), "", str(j), "synthetic",
                                 rng.choice(["Disease", "Chemical"]))
                pending.append(StagedMention(row, [LinkEdge(muid, c, rng.random(), 1)], duid))
            if len(pending) >= 50_000:
                staged.add(pending, docs)
                pending, docs = [], []
                print(f"  {d + 1:,} documents written", file=sys.stderr, flush=True)
        staged.add(pending, docs)
        staged.publish()


def timed(client, path: str, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = client.get(path)
        out.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200, (path, r.status_code, r.text[:200])
    return out


def measure(uri: str, repeat: int, n_docs: int, seed: int) -> dict[str, list[float]]:
    from starlette.testclient import TestClient

    from kgnorm.review.desk import ReviewDesk
    from kgnorm.serve.app import create_app

    rng = random.Random(seed + 1)
    big_docs = [f"{d:07d}" for d in rng.sample(range(0, n_docs, 10), repeat + 1)]
    desk = ReviewDesk(uri)
    results: dict[str, list[float]] = {}
    try:
        t0 = time.perf_counter()
        with TestClient(create_app(desk, "benchmark-token-0123456789")) as client:
            results.update(during_build(client, desk, t0, big_docs))
            for label, paths in (("document page (HTML), 30 mentions", [f"/documents/{d}" for d in big_docs]),
                                 ("document JSON (/api/documents/ID), 30 mentions",
                                  [f"/api/documents/{d}" for d in big_docs]),
                                 ("documents list, first page (/api/documents?limit=50)",
                                  ["/api/documents?limit=50"] * (repeat + 1)),
                                 ("concept page (HTML)", [f"/concepts/SYN:{rng.randrange(1000):06d}"
                                                          for _ in range(repeat + 1)])):
                timed(client, paths[0], 1)  # warm-up
                results[label] = [t for p in paths[1:] for t in timed(client, p, 1)]
            results.update(measure_queue(client, desk, repeat))
    finally:
        desk.close()
    return results


def during_build(client, desk, t0: float, docs: list[str]) -> dict[str, list[float]]:
    """While the app builds the queue in the background (it began at `t0`, with the app): the document
    JSON, one document after another, until the queue is ready; then how long the build took."""
    during: list[float] = []
    while not desk.queue.wait_ready(0):
        during += timed(client, f"/api/documents/{docs[len(during) % len(docs)]}", 1)
    desk.queue.wait_ready(3600)
    return {BUILD_LABEL: [(time.perf_counter() - t0) * 1000],
            "document JSON (/api/documents/ID) while the queue is built": during}


def measure_queue(client, desk, repeat: int) -> dict[str, list[float]]:
    """The queue as kgnorm.review.queue computes it on every call (the app before it kept it), the
    app's first request (its queue built in the background as it started) and the requests after it."""
    from kgnorm.review.queue import queue_view

    before = []
    for _ in range(QUEUE_REPEAT):
        t0 = time.perf_counter()
        with desk.reading() as st:
            queue_view(st, 50, pending=desk.pending())
        before.append((time.perf_counter() - t0) * 1000)
    assert desk.queue.wait_ready(3600)
    return {"review queue, computed on every request (before)": before, FIRST_LABEL: timed(client, QUEUE, 1),
            QUEUE_LABEL: timed(client, QUEUE, repeat)}


def measure_start(uri: str) -> dict[str, list[float]]:
    """A fresh app's queue request sent at once as it starts: it waits for the build in the background."""
    from starlette.testclient import TestClient

    from kgnorm.review.desk import ReviewDesk
    from kgnorm.serve.app import create_app

    desk = ReviewDesk(uri)
    try:
        with TestClient(create_app(desk, "benchmark-token-0123456789")) as client:
            return {"review queue, first request at once as the app starts (waits for the build)":
                    timed(client, QUEUE, 1)}
    finally:
        desk.close()


def measure_review_loop(uri: str, reviews: int) -> dict[str, list[float]]:
    """A curator's loop on a copy of the store: the queue's first mention reviewed (nil), the queue
    asked again; the figure is the queue request after each review."""
    from starlette.testclient import TestClient

    from kgnorm.review.desk import ReviewDesk
    from kgnorm.serve.app import create_app

    token = "benchmark-token-0123456789"
    desk = ReviewDesk(uri)
    out: list[float] = []
    try:
        with TestClient(create_app(desk, token)) as client:
            top = client.get(QUEUE).json()["mentions"][0]
            for _ in range(reviews):
                r = client.post(f"/api/mentions/{quote(top['uid'], safe='')}/review", json={"decision": "nil"},
                                headers={"X-Kgnorm-Token": token})
                assert r.status_code == 200, r.text
                t0 = time.perf_counter()
                top = client.get(QUEUE).json()["mentions"][0]
                out.append((time.perf_counter() - t0) * 1000)
    finally:
        desk.close()
    return {"review queue after each review (review the first, ask again)": out}


# docs/results.md's row for each request (benchmarks/results.jsonl; _report.record)
RESULT_ROWS = {"document page (HTML), 30 mentions": "Document page (HTML, 30 mentions), 1M-mention store",
               "document JSON (/api/documents/ID), 30 mentions": "Document JSON (/api/documents/ID)",
               "documents list, first page (/api/documents?limit=50)": "Documents list, first page of 50",
               "concept page (HTML)": "Concept page (HTML)",
               QUEUE_LABEL: "Review queue, 50 texts least sure first (/api/queue)",
               "review queue, computed on every request (before)": "Review queue computed on every request (before)",
               "review queue after each review (review the first, ask again)": "Review queue after each review",
               FIRST_LABEL: "Review queue, first request, server up (queue built at start)",
               BUILD_LABEL: "Review queue built in the background as the server starts",
               "document JSON (/api/documents/ID) while the queue is built":
                   "Document JSON while the queue is built in the background",
               "review queue, first request at once as the app starts (waits for the build)":
                   "Review queue, first request as the server starts (waits)"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_store_options(ap, repeat=30)
    ap.add_argument("--reviews", type=int, default=20, help="reviews in the review loop (on a copy of the store)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgnorm-serve-bench-") as tmp:
        path, built = store_for(args, Path(tmp))
        results = measure(f"ladybug://{path}", args.repeat, args.documents, args.seed)
        results.update(measure_start(f"ladybug://{path}"))
        if args.reviews:
            shutil.copyfile(path, Path(tmp) / "loop")
            results.update(measure_review_loop(f"ladybug://{tmp}/loop", args.reviews))
    lines = [f"Store: {args.documents:,} documents, about {args.mentions:,} mentions (one document in ten with 30), "
             f"{args.concepts:,} concepts; built (or found) in {built:.0f} s through a StagedRun.", "",
             "| request | median ms | p95 ms | n |", "|---|---|---|---|"]
    results = {label: ms for label, ms in results.items() if ms}  # none: the build ended before a page was asked
    for label, ms in results.items():
        p95 = sorted(ms)[max(0, int(round(0.95 * len(ms))) - 1)]
        lines.append(f"| {label} | {statistics.median(ms):.1f} | {p95:.1f} | {len(ms)} |")
    body = "\n".join(lines)
    if args.no_report:
        print(body)
    else:
        append("kgnorm serve: page times on a big store", body)
        if (args.documents, args.mentions) == (100_000, 1_000_000):  # the rows of docs/results.md
            for label, ms in results.items():
                record("serve", RESULT_ROWS[label], f"{statistics.median(ms):.1f} ms median")


if __name__ == "__main__":
    main()
