"""Corrections that teach (issue 50, the measurement): models trained on corpus A annotate corpus B's
train documents; a simulated curator reviews them through the HTTP API for a budget of reviewed
mentions in a chosen order; `kgnorm retrain`; B's dev and A's dev scored. Gap recovered = (after -
A-only) / (B-only - A-only), where B-only is given (--b-model/--b-ner), else not computed.

    python benchmarks/review_transfer.py --a-model DIR --a-ner DIR [--b-model DIR --b-ner DIR]
        [--direction bc5cdr-ncbi|ncbi-bc5cdr] [--budgets 0,50,100,200,400,800]
        [--orders document,random,uncertain,same-text] [--seeds 0,1,2] [--quick] [--work DIR] [--threads 2]
        [--no-append]
    python benchmarks/review_transfer.py --direction D --rows-from WORK1/rows.json WORK2/rows.json

--quick: one direction (BC5CDR-disease -> NCBI-disease), budgets 0,200,800, orders document,
uncertain and same-text, seed 0. The models of A are trained beforehand (`kgnorm train biosyn --ontology medic`,
`kgnorm train ner --types Disease`, on A's train only). Per (order, seed) a copy of the annotated
store is reviewed cumulatively, budget after budget; after each budget `kgnorm retrain` starts
again from A's models (not from the previous round's). Orders: document (B train's file order),
random (seeded), uncertain (least confident first: annotate's calibrated confidence where it has
one, else the linker's margin of rank 1 over rank 2). The curator: a found mention whose span is
gold is accepted or given the gold concept, else not_a_mention; once every found mention of a
document is decided, its missed gold spans are added (each counts as a review) and it is marked
done. A composite gold (A|B, A+B) is left unreviewed. Only dev files are scored; the held-out test
splits are never read. The fourth order, same-text: least confident first, one review per surface
form (case-insensitive text) sent with `apply_to_same_text`, so the server copies the decision to every
other unreviewed mention of that text; the budget counts the curator's reviews (the copies are counted
apart, as `copied`), and a copy can be wrong where the same text is gold in one place and not in
another, as it would be for a person. The score at budget 0 (A's models) is computed once and shared."""
from __future__ import annotations

import argparse
import json
import random
import secrets
import shutil
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, record  # noqa: E402
from retrain_time import kgnorm  # noqa: E402

TITLE = "Review transfer: A's models on B, reviewed budgets, retrain, B dev and A dev"
CORPORA = {  # name -> (train documents, dev documents, gold types eval annotate scores, dev mentions for eval link)
    "ncbi": ("ncbi-disease/NCBItrainset_corpus.txt", "ncbi-disease/NCBIdevelopset_corpus.txt", "",
             "ncbi-disease/NCBIdevelopset_corpus.txt"),
    "bc5cdr": ("bc5cdr/CDR_TrainingSet.PubTator.txt", "bc5cdr/CDR_DevelopmentSet.PubTator.txt", "Disease",
               "bc5cdr-disease/dev.concept"),
}


def _composite(ids: tuple[str, ...]) -> bool:
    return len(ids) != 1 or "+" in ids[0]


class Curator:
    """Reviews B train's annotated store from its gold, one budget after another (cumulative)."""

    def __init__(self, store: str, gold_file: Path, types: set[str], order: str, seed: int) -> None:
        from kgnorm.documents.readers import read_documents

        self.store, self.order, self.seed = store, order, seed
        self.gold = {d.doc_id: {(a.start, a.end): a.ids for a in d.annotations if a.type in types}
                     for d in read_documents(gold_file, "pubtator")}
        self.doc_order = list(self.gold)
        self.queue: list[tuple[str, str, int, int, str]] | None = None  # (doc id, mention uid, start, end, machine)
        self.left: dict[str, int] = {}   # doc id -> found mentions not yet decided
        self.reviews = 0

    def _build_queue(self) -> None:
        q = ("MATCH (m:Mention)-[:`IN`]->(d:Document) OPTIONAL MATCH (m)-[l:LINKED_TO]->(c:Concept) "
             "RETURN d.doc_id, d.uid, m.uid, m.start, m.`end`, m.confidence, l.rank, l.score, c.uid, m.text")
        from kgnorm.stores import open_store

        with open_store(self.store, read_only=True) as st:
            rows = st.query(q).rows
        found: dict[str, dict[str, Any]] = {}
        for doc_id, doc_uid, uid, s, e, conf, rank, score, concept, text in rows:
            m = found.setdefault(uid, {"doc": doc_id, "doc_uid": doc_uid, "start": int(s), "end": int(e), "conf": conf,
                                       "scores": [], "machine": "", "text": (text or "").lower()})
            if rank is not None:
                m["scores"].append(float(score))
                if rank == 1:
                    m["machine"] = concept or ""
        self.doc_uid = {m["doc"]: m["doc_uid"] for m in found.values()}
        items = list(found.items())
        if self.order == "document":
            pos = {d: i for i, d in enumerate(self.doc_order)}
            items.sort(key=lambda kv: (pos.get(kv[1]["doc"], 1 << 30), kv[1]["start"]))
        elif self.order == "random":
            random.Random(self.seed).shuffle(items)
        else:  # uncertain and same-text: calibrated confidence, else margin, least first
            def sureness(m: dict[str, Any]) -> float:
                if m["conf"] is not None:
                    return float(m["conf"])
                s = sorted(m["scores"], reverse=True)
                return (s[0] - s[1]) if len(s) > 1 else (s[0] if s else 0.0)
            items.sort(key=lambda kv: (sureness(kv[1]), kv[0]))
        self.queue = [(m["doc"], uid, m["start"], m["end"], m["machine"]) for uid, m in items]
        self.text = {uid: m["text"] for uid, m in items}
        for m in found.values():
            self.left[m["doc"]] = self.left.get(m["doc"], 0) + 1

    def review_until(self, budget: int) -> dict[str, int]:
        """Review through the HTTP API until `budget` reviews in all (cumulative)."""
        from starlette.testclient import TestClient

        from kgnorm.review.desk import ReviewDesk
        from kgnorm.serve.app import create_app

        if self.queue is None:
            self._build_queue()
        token, counts = secrets.token_hex(16), {"done": 0}
        desk = ReviewDesk(self.store)
        try:
            with TestClient(create_app(desk, token, reviewer=f"sim-{self.order}")) as c:
                h = {"X-Kgnorm-Token": token}
                while self.queue and self.reviews < budget:
                    doc, uid, s, e, machine = self.queue.pop(0)
                    ids = self.gold.get(doc, {}).get((s, e))
                    self.left[doc] -= 1
                    if ids is not None and _composite(ids):
                        if self.left[doc] == 0:
                            self._finish_document(c, h, doc, counts)
                        continue
                    body: dict[str, Any] = ({"decision": "not_a_mention"} if ids is None else {"decision": "accept"}
                                            if ids[0] == machine else {"decision": "concept", "concept": ids[0]})
                    same = self.order == "same-text"
                    if same:
                        body["apply_to_same_text"] = True
                    r = c.post(f"/api/mentions/{quote(uid, safe='')}/review", json=body, headers=h)
                    self.reviews += r.status_code == 200
                    counts[body["decision"]] = counts.get(body["decision"], 0) + (r.status_code == 200)
                    finished = [doc] if self.left[doc] == 0 else []
                    if same and r.status_code == 200:
                        finished += self._copied(uid, int(r.json().get("propagated", 0)), counts)
                    for d in finished:
                        self._finish_document(c, h, d, counts)
        finally:
            desk.close()
        counts["reviews"] = self.reviews
        return counts

    def _copied(self, uid: str, told: int, counts: dict[str, int]) -> list[str]:
        """The server copied `uid`'s decision to the other queued mentions of its text: take them out
        of the queue (the server's count must agree) and return the documents that are now decided."""
        text = self.text[uid]
        gone = [q for q in self.queue if self.text[q[1]] == text]
        if len(gone) != told:
            print(f"  same-text copies of {text!r}: server {told}, curator {len(gone)}", file=sys.stderr)
        self.queue = [q for q in self.queue if self.text[q[1]] != text]
        counts["copied"] = counts.get("copied", 0) + len(gone)
        finished = []
        for doc, *_ in gone:
            self.left[doc] -= 1
            if self.left[doc] == 0:
                finished.append(doc)
        return finished

    def _finish_document(self, c: Any, h: dict[str, str], doc: str, counts: dict[str, int]) -> None:
        """Every found mention decided: add the missed gold spans, then mark the document done."""
        view = c.get(f"/api/documents/{quote(self.doc_uid[doc], safe='')}").json()
        found = {(m["start"], m["end"]) for m in view["mentions"]}
        for (s, e), ids in self.gold.get(doc, {}).items():
            if (s, e) in found or _composite(ids):
                continue
            r = c.post(f"/api/documents/{quote(view['uid'], safe='')}/mentions", headers=h,
                       json={"start": s, "end": e, "concept": ids[0], "type": "Disease"})
            self.reviews += r.status_code == 201
            counts["added"] = counts.get("added", 0) + (r.status_code == 201)
        r = c.post(f"/api/documents/{quote(view['uid'], safe='')}/done", json={}, headers=h)
        counts["done"] += r.status_code == 200


def score(ner: Path, linker: Path, corpus: str, data: Path, store: str, work: Path, threads: int) -> dict[str, Any]:
    """A corpus's dev: annotate's document-level F1 from raw text, and Acc@1 with gold spans."""
    _, dev, types, mentions = CORPORA[corpus]
    out = work / f"annotated-{corpus}.pubtator"
    kgnorm(["annotate", "--ner", str(ner), "--model", str(linker), "--input", str(data / dev), "--input-format",
            "pubtator", "--output", str(out), "--no-write", "--threads", str(threads), "--store", store, "-q"],
           threads, work / f"annotate-{corpus}.log")
    doc = _eval_json(["eval", "annotate", "--gold", str(data / dev), "--predictions", str(out), "--model", str(linker),
                      *(["--types", types] if types else []), "--format", "json", "--store", store])
    link = _eval_json(["eval", "link", "--model", str(linker), "--gold", str(data / mentions), "--format", "json",
                       "--allow-unknown-gold", "--store", store, "-q"])
    return {"document_f1": doc["document"]["f1"], "acc1": link["full"]["acc1"]}


def _eval_json(args: list[str]) -> dict[str, Any]:
    from _report import kgnorm_stdout

    return json.loads(kgnorm_stdout(*args))


def run_order(args: argparse.Namespace, base_store: Path, order: str, seed: int,
              a_only: dict[str, Any]) -> list[dict[str, Any]]:
    """One (order, seed): a copy of the annotated store reviewed budget after budget, each retrained."""
    a, b = args.direction.split("-")
    work = args.work / f"{order}-s{seed}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for f in base_store.parent.glob(base_store.name + "*"):  # the store file and what sits beside it (wal, journal)
        (shutil.copytree if f.is_dir() else shutil.copy2)(f, work / ("graph" + f.name[len(base_store.name):]))
    store = f"ladybug://{work}/graph"
    curator = Curator(store, args.data / CORPORA[b][0], {"SpecificDisease", "DiseaseClass", "Modifier",
                                                         "CompositeMention", "Disease"}, order, seed)
    rows = []
    for budget in args.budgets:
        counts = curator.review_until(budget) if budget else {"reviews": 0}
        if budget:
            out = work / f"b{budget}"
            t0 = time.perf_counter()
            kgnorm(["retrain", "--store", store, "--model", str(args.a_model), "--ner", str(args.a_ner), "--out",
                    str(out), "--threads", str(args.threads), *args.retrain_option], args.threads,
                   work / f"retrain-{budget}.log")
            wall, ner, linker = time.perf_counter() - t0, out / "ner", out / "linker"
        else:
            wall, ner, linker = 0.0, args.a_ner, args.a_model
        if budget:
            sdir = work / f"score-{budget}"
            sdir.mkdir()
            scores = {"b_dev": score(ner, linker, b, args.data, store, sdir, args.threads),
                      "a_dev": score(ner, linker, a, args.data, store, sdir, args.threads)}
        else:
            scores = a_only
        rows.append({"order": order, "seed": seed, "budget": budget, "counts": counts, "retrain_s": round(wall, 1),
                     **scores})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict[str, Any]], b_only: dict[str, Any] | None) -> str:
    a_only = {r["order"]: r for r in rows if r["budget"] == 0}
    lines = ["| order | seed | reviews | B dev doc F1 | B dev Acc@1 | A dev doc F1 | gap recovered | retrain |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        base = a_only[r["order"]]["b_dev"]["document_f1"]
        gap = ((r["b_dev"]["document_f1"] - base) / (b_only["document_f1"] - base)
               if b_only and b_only["document_f1"] != base else None)
        copied = f" (+{r['counts']['copied']} copied)" if r["counts"].get("copied") else ""
        lines.append(f"| {r['order']} | {r['seed']} | {r['counts'].get('reviews', 0)}{copied} | {r['b_dev']['document_f1']:.4f} | "
                     f"{r['b_dev']['acc1']:.4f} | {r['a_dev']['document_f1']:.4f} | "
                     f"{'' if gap is None else f'{gap:.0%}'} | {r['retrain_s'] / 60:.1f} min |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(p, help="holds ncbi-disease/, bc5cdr/ and medic/ (default: ../shared/data)")
    p.add_argument("--a-model", type=Path, help="BioSyn on MEDIC trained on A's train (required to run)")
    p.add_argument("--a-ner", type=Path, help="detector trained on A's train (required to run)")
    p.add_argument("--b-model", type=Path, help="B-only reference linker (trained on B's train)")
    p.add_argument("--b-ner", type=Path, help="B-only reference detector")
    p.add_argument("--direction", default="bc5cdr-ncbi", choices=["bc5cdr-ncbi", "ncbi-bc5cdr"])
    p.add_argument("--budgets", default="0,50,100,200,400,800")
    p.add_argument("--orders", default="document,random,uncertain,same-text")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--quick", action="store_true", help="bc5cdr-ncbi, budgets 0,200,800, document, uncertain and same-text, seed 0")
    p.add_argument("--work", type=Path, default=Path("/tmp/kgnorm-review-transfer"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--retrain-option", action="append", default=[],
                   help="passed on to every `kgnorm retrain` (repeat it: --retrain-option=--partial)")
    p.add_argument("--no-append", action="store_true")
    p.add_argument("--rows-from", type=Path, nargs="+", help="record the rows.json of earlier runs (--work's), "
                   "one table, later files winning per (order, seed, budget): budgets run apart, e.g. 800 after 200")
    p.add_argument("--label", default="", help="with --rows-from: a word added to the rows' names and the plot's file "
                   "(e.g. the code change the runs measure)")
    args = p.parse_args()
    if args.rows_from:
        return record_saved(args)
    if not (args.a_model and args.a_ner):
        p.error("--a-model and --a-ner are required (unless --rows-from)")
    if args.quick:
        args.direction, args.budgets, args.orders, args.seeds = "bc5cdr-ncbi", "0,200,800", "document,uncertain,same-text", "0"
    args.budgets = sorted(int(x) for x in args.budgets.split(","))
    args.data, args.work = args.data.resolve(), args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    b = args.direction.split("-")[1]
    base = args.work / "annotated-store"
    if not base.exists():  # MEDIC, then B train annotated by A's models: the store every order copies
        store = f"ladybug://{base}"
        kgnorm(["ingest", "medic", str(args.data / "medic/medic_06Jul2012.txt"), "--ontology", "medic", "--store",
                store, "-q"], args.threads, args.work / "ingest.log")
        kgnorm(["annotate", "--ner", str(args.a_ner), "--model", str(args.a_model), "--input",
                str(args.data / CORPORA[b][0]), "--input-format", "pubtator", "--output", str(args.work / "b-train.pubtator"),
                "--threads", str(args.threads), "--store", store, "-q"], args.threads, args.work / "annotate.log")
    a, _ = args.direction.split("-")
    zero = args.work / "a-only"
    zero.mkdir(exist_ok=True)
    cached = zero / "scores.json"  # A's models scored once per --work
    a_only = json.loads(cached.read_text(encoding="utf-8")) if cached.exists() else {
        "b_dev": score(args.a_ner, args.a_model, b, args.data, f"ladybug://{base}", zero, args.threads),
        "a_dev": score(args.a_ner, args.a_model, a, args.data, f"ladybug://{base}", zero, args.threads)}
    cached.write_text(json.dumps(a_only), encoding="utf-8")
    print(json.dumps({"a_only": a_only}), file=sys.stderr, flush=True)
    rows = [r for order in args.orders.split(",") for seed in map(int, args.seeds.split(","))
            for r in run_order(args, base, order, seed, a_only)]
    b_only = None
    if args.b_model and args.b_ner:  # scored last: the reference may still be training when the rows begin
        ref = args.work / "b-only"
        ref.mkdir(exist_ok=True)
        b_only = score(args.b_ner, args.b_model, b, args.data, f"ladybug://{base}", ref, args.threads)
    body = (f"Direction {args.direction}; budgets {args.budgets}; A's models `{args.a_model}`, `{args.a_ner}`"
            + (f"; B-only doc F1 {b_only['document_f1']:.4f}, Acc@1 {b_only['acc1']:.4f}" if b_only else
               "; no B-only reference given (gap recovered not computed)") + ".\n\n" + table(rows, b_only))
    (args.work / "rows.json").write_text(json.dumps({"rows": rows, "b_only": b_only}, indent=1), encoding="utf-8")
    if args.no_append:
        print(body)
        return
    append(TITLE, body)
    record_rows(args, rows, b_only)


def record_saved(args: argparse.Namespace) -> None:
    """One table and one set of results rows from the rows.json of several runs of the same models."""
    rows: dict[tuple[str, int, int], dict[str, Any]] = {}
    b_only = None
    for f in args.rows_from:
        saved = json.loads(f.read_text(encoding="utf-8"))
        b_only = saved.get("b_only") or b_only
        rows.update({(r["order"], r["seed"], r["budget"]): r for r in saved["rows"]})
    ordered = sorted(rows.values(), key=lambda r: (r["order"], r["seed"], r["budget"]))
    body = (f"Direction {args.direction}; rows of {', '.join(f'`{f}`' for f in args.rows_from)}"
            + (f"; B-only doc F1 {b_only['document_f1']:.4f}, Acc@1 {b_only['acc1']:.4f}" if b_only else "")
            + ".\n\n" + table(ordered, b_only))
    append(TITLE, body)
    record_rows(args, ordered, b_only)


def _gap(f1: float, base: float, b_only: dict[str, Any] | None) -> str:
    if not b_only or b_only["document_f1"] == base:
        return ""
    return f"{(f1 - base) / (b_only['document_f1'] - base):.0%}"


def _at_budget(f1s: list[float], base: float, b_only: dict[str, Any] | None) -> str:
    """One budget's B dev document F1: the mean over seeds and its gap recovered."""
    mean = sum(f1s) / len(f1s)
    gap = _gap(mean, base, b_only)
    return f"{mean:.3f}" + (f" ({gap})" if gap else "")


def record_rows(args: argparse.Namespace, rows: list[dict[str, Any]], b_only: dict[str, Any] | None) -> None:
    """docs/results.md: per order, B dev document F1 (and gap recovered) by budget; A dev's largest
    fall; the plot (matplotlib, a benchmark-only dependency: pip install matplotlib)."""
    a, b = args.direction.split("-")
    label = getattr(args, "label", "")
    tag = f", {label}" if label else ""
    cmd = f"python benchmarks/review_transfer.py --direction {args.direction} …"
    base = rows[0]["b_dev"]["document_f1"] if rows else 0.0
    by_order: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_order.setdefault(r["order"], []).append(r)
    for order, rs in by_order.items():
        budgets = sorted({r["budget"] for r in rs})
        seeds = len({r["seed"] for r in rs})
        fig = " / ".join(_at_budget([r["b_dev"]["document_f1"] for r in rs if r["budget"] == x], base,
                                    b_only if x else None) for x in budgets)
        many = f", {seeds} seeds" if seeds > 1 else ""  # means over the seeds
        record("serve", f"{b} dev doc F1, {'/'.join(map(str, budgets))} reviews ({a}, {order}{tag}{many})", fig, cmd)
        if seeds > 1:  # the seeds' spread beside the means
            spread = [[r["b_dev"]["document_f1"] for r in rs if r["budget"] == x] for x in budgets if x]
            record("serve", f"{b} dev doc F1, the seeds' range at {'/'.join(map(str, budgets[1:]))} ({a}, {order}{tag})",
                   " / ".join(f"{min(v):.3f}-{max(v):.3f}" for v in spread), cmd)
    a_base = rows[0]["a_dev"]["document_f1"] if rows else 0.0
    fall = min((r["a_dev"]["document_f1"] - a_base for r in rows if r["budget"]), default=0.0)
    record("serve", f"{a} dev doc F1, largest change after a retrain ({args.direction}{tag})", f"{fall:+.4f}", cmd)
    if b_only:
        record("serve", f"{b} dev doc F1, {a}-only vs {b}-only models", f"{base:.3f} vs {b_only['document_f1']:.3f}", cmd)
    plot = plot_curves(by_order, b_only, base, args.direction, label)
    if plot:
        record("serve", f"review transfer curves ({args.direction}{tag})", f"[plot]({plot.relative_to(ROOT / 'docs')})",
               cmd)


ROOT = Path(__file__).resolve().parent.parent


def plot_curves(by_order: dict[str, list[dict[str, Any]]], b_only: dict[str, Any] | None, base: float,
                direction: str, label: str = "") -> Path | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)", file=sys.stderr)
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for order, rs in by_order.items():
        budgets = sorted({r["budget"] for r in rs})
        mean = [sum(r["b_dev"]["document_f1"] for r in rs if r["budget"] == x) / sum(1 for r in rs if r["budget"] == x)
                for x in budgets]
        low = [m - min(r["b_dev"]["document_f1"] for r in rs if r["budget"] == x) for m, x in zip(mean, budgets)]
        high = [max(r["b_dev"]["document_f1"] for r in rs if r["budget"] == x) - m for m, x in zip(mean, budgets)]
        ax.errorbar(budgets, mean, yerr=[low, high], marker="o", capsize=3, label=order)  # the seeds' range
    ax.axhline(base, color="grey", linestyle=":", label="A only")
    if b_only:
        ax.axhline(b_only["document_f1"], color="black", linestyle="--", label="B only")
    a, b = direction.split("-")
    ax.set(xlabel="reviewed mentions", ylabel=f"{b} dev document F1",
           title=f"{a} models reviewed on {b} train" + (f" ({label})" if label else ""))
    ax.legend()
    out = ROOT / "docs" / f"review-transfer-{direction}{'-' + label if label else ''}.png"
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    return out


if __name__ == "__main__":
    main()
