"""The review page under load and abuse (issue 52, item 5), against a real `kgnorm serve` process on
an embedded LadybugDB store.

    python benchmarks/serve_load.py [--reviewers 8] [--reviews 500] [--malformed 1000] [--seed 0] [--no-report]

1. The store: a synthetic ontology and `--documents` annotated documents written through a StagedRun
   (tests/serve_abuse.py), a tiny random BERT BioSyn over it (`kgnorm train biosyn`), made here: no
   downloaded model.
2. `kgnorm serve --port 0` on it (the CLI's defaults: loopback, --lock-timeout 2).
3. Abuse: `--malformed` seeded malformed requests (tests/serve_abuse.py: bad JSON, huge or missing
   fields, unknown and percent-encoded path-traversal uids, wrong and timing-probed tokens, foreign
   Host headers, wrong methods and content types), sent byte for byte over http.client (no client
   normalizes the path); every answer must be 4xx, the server must answer afterwards, and the store's
   Review and Mention counts and the journal's bytes must be unchanged. Then the timing probe: the
   median time of a refused write whose token shares nothing with the real one against one that
   differs only in its last character (interleaved, `--timing` each).
4. Load: `--reviewers` threads, each posting `--reviews` reviews (nil, concept, accept in turn, over
   the store's mentions) as fast as it is answered, while `kgnorm annotate` runs again and again on
   the same store (a new input each time), holding its write lock; the figure is each review's time
   from request to answer (p50, p95, max), and how many were answered pending (journaled, to be
   written when the store is free).
5. After the load, annotate stopped and the server stopped with Ctrl-C (it writes what is pending):
   every review answered 200/201 must be a Review node in the store (0 lost), and `kgnorm check`
   must pass.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _report import OFFLINE_ENV, append, record  # noqa: E402
from serve_abuse import TOKEN_HEADER, WORDS, Target, footprint, probes, review_path, small_store  # noqa: E402

ENV = {**os.environ, **OFFLINE_ENV, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def kgnorm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "kgnorm.cli", *args], env=ENV, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise SystemExit(f"kgnorm {' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()[-1500:]}")
    return proc


def tiny_bert(d: Path) -> Path:
    """A tiny random BERT (hidden 32, 2 layers) with a WordPiece vocabulary of the ontology's words."""
    import string

    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    d.mkdir(parents=True, exist_ok=True)
    chars = list(string.ascii_lowercase + string.digits)
    vocab = list(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars),
                                *WORDS, *("##" + w for w in WORDS), *string.punctuation]))
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(d / "vocab.txt"), do_lower_case=True).save_pretrained(str(d))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(str(d))
    return d


def annotate_input(path: Path, run: int, n_docs: int, rng: random.Random) -> Path:
    """Documents whose text names the synthetic concepts (the dictionary tagger finds them)."""
    names = [line[len("name: "):] for line in (path.parent / "syn.obo").read_text().splitlines()
             if line.startswith("name: ")]
    with path.open("w", encoding="utf-8") as fh:
        for d in range(n_docs):
            text = ". ".join(f"Patients with {rng.choice(names)} were seen" for _ in range(8)) + "."
            fh.write(json.dumps({"id": f"a{run}-{d}", "title": f"Report {run}-{d}", "abstract": text}) + "\n")
    return path


def start_server(uri: str) -> tuple[subprocess.Popen, str, str]:
    proc = subprocess.Popen([sys.executable, "-m", "kgnorm.cli", "serve", "--store", uri, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**ENV, "PYTHONUNBUFFERED": "1"})
    url = proc.stdout.readline().strip().split(": ", 1)[-1]
    token = proc.stdout.readline().strip().split(": ", 1)[-1]
    if not url.startswith("http://"):
        proc.kill()
        raise SystemExit(f"kgnorm serve did not start: {proc.stderr.read()[-1500:]}")
    return proc, url.rstrip("/"), token


def send(base: str, method: str, path: str, headers: dict[str, str], body: bytes | None,
         timeout: float = 30.0) -> tuple[int, float]:
    """(status, seconds) of one request sent as given: the path on the wire byte for byte (only
    spaces and non-ASCII percent-encoded), the Host header the caller's when it gives one."""
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    wire = quote(path, safe="".join(chr(c) for c in range(33, 127)))
    t0 = time.perf_counter()
    try:
        conn.request(method, wire, body=body, headers=headers)
        r = conn.getresponse()
        r.read()
        return r.status, time.perf_counter() - t0
    finally:
        conn.close()


def abuse(base: str, uri: str, target: Target, n: int, seed: int) -> dict:
    before = footprint(uri)
    codes: dict[str, dict[int, int]] = {}
    wrong: list[str] = []
    slowest = 0.0
    for p in probes(target, n, seed):
        try:
            status, secs = send(base, p.method, p.path, p.headers, p.body)
        except (OSError, http.client.HTTPException) as exc:  # a dropped connection is no answer
            status, secs = 0, 0.0
            wrong.append(f"{p.family}: {p.method} {p.path[:60]}: {type(exc).__name__}")
        slowest = max(slowest, secs)
        codes.setdefault(p.family, {}).setdefault(status, 0)
        codes[p.family][status] += 1
        if status and not 400 <= status < 500:
            wrong.append(f"{p.family}: {p.method} {p.path[:60]} -> {status}")
    alive = send(base, "GET", "/api/documents?limit=1", {}, None)[0] == 200
    return {"codes": codes, "wrong": wrong, "alive": alive, "unchanged": footprint(uri) == before,
            "slowest_s": slowest}


def timing(base: str, target: Target, n: int, rng: random.Random) -> tuple[float, float]:
    """Median ms of a refused write: a token sharing nothing with the real one, and one that
    differs only in its last character (interleaved, so load drifts alike on both)."""
    tok = target.token
    far = "".join("A" if c != "A" else "B" for c in tok)
    near = tok[:-1] + ("A" if tok[-1] != "A" else "B")
    times: dict[str, list[float]] = {"far": [], "near": []}
    body = json.dumps({"decision": "nil"}).encode()
    for i in range(2 * n):
        kind = ("far", "near")[(i + rng.randrange(2)) % 2]
        status, secs = send(base, "POST", review_path(rng.choice(target.mentions)),
                            {TOKEN_HEADER: far if kind == "far" else near, "Content-Type": "application/json"}, body)
        assert status == 403, status
        times[kind].append(secs * 1000)
    return statistics.median(times["far"]), statistics.median(times["near"])


@dataclass
class Annotating:
    """`kgnorm annotate` run again and again on the store until stopped (a new input each time)."""
    uri: str
    model: Path
    work: Path
    stop: threading.Event = field(default_factory=threading.Event)
    spans: list[tuple[float, float]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    pid: int = 0
    since: float = 0.0

    def loop(self) -> None:
        rng = random.Random(7)
        run = 0
        while not self.stop.is_set():
            src = annotate_input(self.work / f"annotate-{run}.jsonl", run, 150, rng)
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "kgnorm.cli", "annotate", "--ner", "dictionary:syn",
                                     "--model", str(self.model), "--input", str(src), "--input-format", "jsonl",
                                     "--output", str(self.work / "annotated.pubtator"), "--store", self.uri,
                                     "--lock-timeout", "60", "-q"], env=ENV, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            self.pid, self.since = proc.pid, t0
            _, err = proc.communicate()
            self.spans.append((t0, time.perf_counter()))
            if proc.returncode != 0:
                self.failures.append(err.strip()[-300:])
            run += 1

    def holds_store(self) -> bool:
        """Whether the running annotate holds the store's write lock (its holder file names it; on
        a Bolt server, which takes concurrent writes: once it has run for 10 s)."""
        if not self.uri.startswith("ladybug://"):
            return bool(self.pid) and time.perf_counter() - self.since > 10
        try:
            return json.loads(Path(f"{self.uri[len('ladybug://'):]}.holder").read_text())["pid"] == self.pid
        except (OSError, ValueError, KeyError):
            return False


@dataclass
class Answer:
    status: int
    ms: float
    uid: str = ""
    pending: bool = False
    error: str = ""


def reviewer(i: int, base: str, token: str, mentions: list[str], n: int, out: list[Answer]) -> None:
    import httpx

    rng = random.Random(100 + i)
    with httpx.Client(base_url=base, timeout=120) as client:
        for j in range(n):
            uid = mentions[(i * n + j) % len(mentions)]
            decision = ("nil", "concept", "accept")[j % 3]
            body = {"decision": decision, "reviewer": f"r{i}"}
            if decision == "concept":
                body["concept"] = f"SYN:{rng.randrange(50):06d}"
            t0 = time.perf_counter()
            try:
                r = client.post(review_path(uid), json=body, headers={TOKEN_HEADER: token})
            except httpx.HTTPError as exc:
                out.append(Answer(0, (time.perf_counter() - t0) * 1000, type(exc).__name__))
                continue
            ms = (time.perf_counter() - t0) * 1000
            data = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
            out.append(Answer(r.status_code, ms, data.get("uid", ""), bool(data.get("pending")),
                              str(data.get("error", ""))[:200]))


def overlap(spans: list[tuple[float, float]], t0: float, t1: float) -> float:
    """The share of [t0, t1] during which an annotate process ran."""
    return sum(max(0.0, min(b, t1) - max(a, t0)) for a, b in spans) / max(t1 - t0, 1e-9)


def stored_reviews(uri: str) -> set[str]:
    from kgnorm.stores import open_store

    with open_store(uri, read_only=True) as st:
        return {r[0] for r in st.query("MATCH (r:Review) RETURN r.uid").rows}


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q * len(s))) - 1))]


def load(base: str, token: str, uri: str, model: Path, work: Path, mentions: list[str], reviewers: int,
         reviews: int) -> dict:
    """The reviewers' answers while annotate writes; the reviews start once annotate holds the store."""
    ann = Annotating(uri, model, work)
    feeder = threading.Thread(target=ann.loop, daemon=True)
    feeder.start()
    waited = time.perf_counter()
    while not ann.holds_store() and time.perf_counter() - waited < 180 and not ann.failures:
        time.sleep(0.1)
    answers: list[list[Answer]] = [[] for _ in range(reviewers)]
    t0 = time.perf_counter()
    threads = [threading.Thread(target=reviewer, args=(i, base, token, mentions, reviews, answers[i]))
               for i in range(reviewers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t1 = time.perf_counter()
    ann.stop.set()
    feeder.join()
    return {"answers": [a for per in answers for a in per], "seconds": t1 - t0, "annotate_runs": len(ann.spans),
            "annotate_share": overlap(ann.spans, t0, t1), "annotate_failures": ann.failures}


def build(work: Path, n_docs: int, seed: int, uri: str) -> tuple[str, Target, Path]:
    """The store and the model; a --work folder that has them already is reused (its store as it is)."""
    model = work / "biosyn"
    if uri.startswith("ladybug://") and any(model.glob("*.json")):
        from kgnorm.stores import open_store

        with open_store(uri, read_only=True) as st:
            mentions = [r[0] for r in st.query("MATCH (m:Mention) WHERE m.source = 'synthetic' RETURN m.uid "
                                               "ORDER BY m.uid").rows]
            documents = [r[0] for r in st.query("MATCH (d:Document) WHERE d.source = 'synthetic' RETURN d.uid "
                                                "ORDER BY d.uid").rows]
        return uri, Target("", mentions, documents), model
    mentions, documents = small_store(uri, work, n_docs=n_docs, per_doc=10, seed=seed)
    kgnorm("train", "biosyn", "--ontology", "syn", "--out", str(model), "--encoder", str(tiny_bert(work / "bert")),
           "--store", uri, "-q")
    return uri, Target("", mentions, documents), model


def arcadedb(work: Path):
    """A throwaway ArcadeDB server; its database is passed to every child through the environment."""
    from bolt_server import ArcadeDBProcess

    (work / "arcadedb").mkdir(exist_ok=True)
    server = ArcadeDBProcess(work / "arcadedb")
    os.environ["KGNORM_NEO4J_DATABASE"] = ENV["KGNORM_NEO4J_DATABASE"] = server.database
    return server


def measure(args, uri: str, target: Target, model: Path, work: Path) -> tuple:
    """Abuse, the timing probe and the load against one `kgnorm serve`, stopped with Ctrl-C after."""
    server, base, token = start_server(uri)
    target.token = token
    try:
        bad = abuse(base, uri, target, args.malformed, args.seed)
        far, near = timing(base, target, args.timing, random.Random(args.seed))
        print(f"  abuse done: {len(bad['wrong'])} wrong", file=sys.stderr, flush=True)
        loaded = load(base, token, uri, model, work, target.mentions, args.reviewers, args.reviews)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()
    return bad, far, near, loaded, server.stderr.read()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reviewers", type=int, default=8)
    ap.add_argument("--reviews", type=int, default=500, help="per reviewer")
    ap.add_argument("--malformed", type=int, default=1000)
    ap.add_argument("--timing", type=int, default=200, help="refused writes per token kind in the timing probe")
    ap.add_argument("--documents", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, help="keep the store and the logs here (default: a temporary folder)")
    ap.add_argument("--bolt", action="store_true", help="a throwaway ArcadeDB server with its Bolt plugin "
                    "(tests/bolt_server.py, the arcadedb-embedded test extra) instead of an embedded LadybugDB store")
    ap.add_argument("--no-report", action="store_true", help="print, do not append to benchmarks/LOG.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgnorm-serve-load-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        bolt = arcadedb(work) if args.bolt else None
        try:
            t = time.perf_counter()
            uri, target, model = build(work, args.documents, args.seed,
                                       bolt.uri if bolt else f"ladybug://{work}/graph")
            print(f"  store and model built in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
            bad, far, near, loaded, serve_err = measure(args, uri, target, model, work)
            stored = stored_reviews(uri)
            check = kgnorm("check", "--store", uri, check=False)
        finally:
            if bolt:
                bolt.stop()
    report(args, bad, far, near, loaded, stored, check.returncode, serve_err)


def report(args, bad: dict, far: float, near: float, loaded: dict, stored: set[str], check_rc: int,
           serve_err: str) -> None:
    answers = loaded["answers"]
    acked = [a for a in answers if a.status in (200, 201)]
    lost = [a.uid for a in acked if a.uid not in stored]
    ms = [a.ms for a in answers]
    p50, p95 = statistics.median(ms), pct(ms, 0.95)
    pending = sum(a.pending for a in acked)
    others = {}
    for a in answers:
        if a.status not in (200, 201):
            others[a.status] = others.get(a.status, 0) + 1
    n_bad = sum(sum(c.values()) for c in bad["codes"].values())
    fams = "\n".join(f"| {fam} | {sum(c.values())} | {', '.join(f'{k}: {v}' for k, v in sorted(c.items()))} |"
                      for fam, c in bad["codes"].items())
    lines = [
        f"Store: {args.documents} synthetic documents of 10 mentions "
        f"({'ArcadeDB over Bolt' if args.bolt else 'LadybugDB, embedded'}), a real `kgnorm serve` "
        f"process (loopback, --lock-timeout 2).", "",
        f"**Load**: {args.reviewers} reviewers x {args.reviews} reviews in {loaded['seconds']:.0f} s "
        f"({len(answers) / loaded['seconds']:.1f} reviews/s) while `kgnorm annotate` wrote the same store "
        f"({loaded['annotate_runs']} runs of 150 documents, running {100 * loaded['annotate_share']:.0f}% of the "
        f"time; {len(loaded['annotate_failures'])} failed).", "",
        f"- review latency: p50 {p50:.0f} ms, p95 {p95:.0f} ms, max {max(ms):.0f} ms (target p95 <= 300 ms)",
        f"- answered 200/201: {len(acked)} of {len(answers)} ({pending} pending, written later); other answers: "
        f"{others or 'none'}",
        f"- acknowledged reviews lost: {len(lost)} (Review nodes in the store afterwards: {len(stored)}); "
        f"`kgnorm check` exit {check_rc}", "",
        f"**Abuse**: {n_bad} malformed requests: {n_bad - len(bad['wrong'])} answered 4xx, {len(bad['wrong'])} not; "
        f"server alive after: {'yes' if bad['alive'] else 'NO'}; store and journal unchanged: "
        f"{'yes' if bad['unchanged'] else 'NO'}; slowest answer {1000 * bad['slowest_s']:.0f} ms.", "",
        "| family | requests | answers |", "|---|---|---|", fams, "",
        f"Timing probe ({args.timing} each, interleaved): a refused write with a token sharing nothing with the "
        f"real one {far:.2f} ms median, one differing only in its last character {near:.2f} ms.",
    ]
    errors = sorted({f"{a.status}: {a.error}" for a in answers if a.status not in (200, 201)})
    if errors:
        lines += ["", "Reviews not acknowledged (distinct answers):", *(f"- {e}" for e in errors[:8])]
    if bad["wrong"]:
        lines += ["", "Not 4xx:", *(f"- {w}" for w in bad["wrong"][:20])]
    if loaded["annotate_failures"]:
        lines += ["", "annotate failures:", *(f"- {f}" for f in loaded["annotate_failures"][:5])]
    if serve_err.strip():
        lines += ["", "kgnorm serve's stderr (last lines):", "```", *serve_err.strip().splitlines()[-8:], "```"]
    body = "\n".join(lines)
    if args.no_report:
        print(body)
        return
    append("kgnorm serve under load and abuse", body)
    full = (args.reviewers, args.reviews) == (8, 500)
    if full:
        kind = "ArcadeDB over Bolt" if args.bolt else "LadybugDB"
        record("serve", f"8 reviewers x 500 reviews during annotate ({kind})",
               f"p50 {p50:.0f} ms, p95 {p95:.0f} ms; {len(lost)} of {len(acked)} lost")
    if args.malformed >= 1000:
        record("reliability", f"Malformed requests to kgnorm serve ({'Bolt' if args.bolt else 'LadybugDB'})",
               f"{len(bad['wrong'])} of {n_bad} not 4xx; {'nothing written' if bad['unchanged'] else 'WRITES'}, "
               f"server {'alive' if bad['alive'] else 'DOWN'}")


if __name__ == "__main__":
    main()
