"""The review loop on NCBI-disease dev (issue 40, item 5): does training on the links people reviewed
help the next documents? The dev set's documents are split in two halves by file order; the first
half is annotated and reviewed (a curator replaying its gold annotations), the second is only scored.

    python benchmarks/review_loop.py [--data ../shared/data] [--work DIR] [--minutes 10] [--threads 2]

1. MEDIC (medic_06Jul2012.txt) into a scratch store; a base BioSyn trained on NCBItrainset with a
   short budget (`--max-minutes M --no-refit`), `--dev` = the first half (epoch selection only;
   the second half is never read by any training).
2. `kgnorm annotate --ner dictionary:medic --model BASE` of the first half's raw text (the PubTator
   read for its text only): Document and Mention nodes with the base model's links.
3. The review, through the review app's HTTP API (kgnorm.serve.app.create_app over a ReviewDesk,
   Starlette's TestClient): a detected mention whose offsets are a gold span's is accepted (the
   machine's link is the gold id) or given the gold concept; a detected span with no gold is
   not_a_mention; a gold span nothing detected is added with its concept, as a curator would. A
   composite gold (A|B, A+B) cannot be one review's concept: left unreviewed (counted); a gold id
   MEDIC 2012 lacks is refused by the API (counted).
4. `kgnorm export reviewed --format concept`; the same training again with `--reviewed FILE`
   (train + the reviewed first half, same budget and settings) -- its --dev selection is then not
   held out (the first half is in its training data), the second half still is.
5. `kgnorm eval link --model M --gold SECOND_HALF` for both models: Acc@1 before and after.
Stages whose output exists in --work are reused (rerun after a failure); each child runs with
--threads T. Dev only: the test split is never read."""
from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, f4  # noqa: E402

TITLE = "Review loop: NCBI-disease dev, first half reviewed, second half scored"


def kgnorm(args: list[str], threads: int, log: Path | None = None) -> tuple[float, str]:
    """Run `kgnorm ARGS` to completion: (wall seconds, its stderr); a failure ends the benchmark."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kgnorm.cli", *args], env=env, capture_output=True, text=True)
    if log is not None:
        log.write_text(proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        raise SystemExit(f"kgnorm {' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    print(f"  kgnorm {' '.join(args[:2])}: {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    return time.perf_counter() - t0, proc.stdout


def split_dev(dev: Path, work: Path) -> tuple[Path, Path, int, int]:
    """The dev file's document blocks (blank-line separated, as written) in two halves by order."""
    blocks = [b.strip("\n") for b in dev.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    half = (len(blocks) + 1) // 2
    first, second = work / "dev_first_half.pubtator", work / "dev_second_half.pubtator"
    first.write_text("\n\n".join(blocks[:half]) + "\n\n", encoding="utf-8")
    second.write_text("\n\n".join(blocks[half:]) + "\n\n", encoding="utf-8")
    return first, second, half, len(blocks) - half


def train(out: Path, args: argparse.Namespace, store: str, first: Path, reviewed: Path | None) -> dict[str, Any]:
    """`train biosyn` with the loop's budget (reused when OUT holds a model); its epochs and wall time."""
    log = out.with_suffix(".log")
    wall = None
    if not (out / "kgnorm-model.json").exists():
        train_file = args.data / "ncbi-disease/NCBItrainset_corpus.txt"
        cmd = ["train", "biosyn", "--ontology", "medic", "--train", str(train_file), "--dev", str(first), "--out", str(out), "--max-minutes", str(args.minutes), "--no-refit",
               "--threads", str(args.threads), "--store", store, *args.train_args]
        if reviewed is not None:
            cmd += ["--reviewed", str(reviewed)]
        wall, _ = kgnorm(cmd, args.threads, log)
    lines = [ln for ln in log.read_text(encoding="utf-8").splitlines() if ln.startswith(("trained ", "epoch "))]
    return {"wall": wall, "lines": lines}


def _stored_mentions(desk: Any) -> dict[str, list[tuple]]:
    """doc_id -> (document uid, mention uid, start, end, machine's rank-1 concept) of what annotate stored."""
    q = ("MATCH (m:Mention)-[:`IN`]->(d:Document) OPTIONAL MATCH (m)-[l:LINKED_TO]->(c:Concept) WHERE l.rank = 1 "
         "RETURN DISTINCT d.doc_id, d.uid, m.uid, m.start, m.`end`, c.uid")
    with desk.reading() as st:
        rows = st.query(q).rows
    out: dict[str, list[tuple]] = {}
    for doc_id, doc_uid, uid, start, end, concept in rows:
        out.setdefault(doc_id, []).append((doc_uid, uid, int(start), int(end), concept or ""))
    return out


def _post(client: Any, path: str, body: dict, token: str, counts: dict[str, int], errors: list[str]) -> bool:
    r = client.post(path, json=body, headers={"x-kgnorm-token": token})
    if r.status_code in (200, 201):
        return True
    counts["refused"] = counts.get("refused", 0) + 1
    message = f"{r.status_code} {r.json().get('error', '')}"
    if len(errors) < 5 and message not in errors:
        errors.append(message)
    return False


def _composite(gold: Any) -> bool:
    """Several ids (``A|B``) or one mention meaning both (``A+B``): no single concept a review can choose."""
    return len(gold.ids) != 1 or "+" in gold.ids[0]


def _review_document(client: Any, token: str, gold: dict[tuple[int, int], Any], found: list[tuple],
                     counts: dict[str, int], errors: list[str]) -> None:
    """One document: every detected mention decided, every gold span nothing detected added."""
    for doc_uid, uid, start, end, machine in found:
        g = gold.get((start, end))
        if g is not None and _composite(g):
            counts["composite_left"] = counts.get("composite_left", 0) + 1
            continue
        if g is None:
            body = {"decision": "not_a_mention"}
        elif g.ids[0] == machine:
            body = {"decision": "accept"}
        else:
            body = {"decision": "concept", "concept": g.ids[0]}
        if _post(client, f"/api/mentions/{quote(uid, safe='')}/review", body, token, counts, errors):
            counts[body["decision"]] = counts.get(body["decision"], 0) + 1
    detected = {(s, e) for _, _, s, e, _ in found}
    doc_uid = found[0][0] if found else None
    for (start, end), g in gold.items():
        if (start, end) in detected:
            continue
        if _composite(g):
            counts["composite_left"] = counts.get("composite_left", 0) + 1
            continue
        body = {"start": start, "end": end, "concept": g.ids[0], "type": g.type, "decision": "concept"}
        if doc_uid is not None and _post(client, f"/api/documents/{quote(doc_uid, safe='')}/mentions", body, token,
                                         counts, errors):
            counts["added"] = counts.get("added", 0) + 1
        elif doc_uid is None:
            counts["no_document"] = counts.get("no_document", 0) + 1


def review(store: str, first: Path) -> dict[str, Any]:
    """Replay the first half's gold as a curator through the HTTP API: counts, refusals, wall time."""
    from starlette.testclient import TestClient

    from kgnorm.documents.readers import read_documents
    from kgnorm.review.desk import ReviewDesk
    from kgnorm.serve.app import create_app

    gold = {d.doc_id: {(a.start, a.end): a for a in d.annotations} for d in read_documents(first, "pubtator")}
    counts: dict[str, int] = {}
    errors: list[str] = []
    t0 = time.perf_counter()
    desk = ReviewDesk(store)
    try:
        found = _stored_mentions(desk)
        token = secrets.token_hex(16)
        with TestClient(create_app(desk, token, reviewer="gold-replay")) as client:
            for doc_id, spans in gold.items():
                _review_document(client, token, spans, found.get(doc_id, []), counts, errors)
    finally:
        desk.close()
    return {"counts": counts, "errors": errors, "wall": time.perf_counter() - t0,
            "gold": sum(len(s) for s in gold.values()), "detected": sum(len(v) for v in found.values())}


def evaluate(model: Path, second: Path, args: argparse.Namespace, store: str) -> dict[str, Any]:
    cached = model.with_suffix(".eval.json")
    if not cached.exists():
        _, out = kgnorm(["eval", "link", "--model", str(model), "--gold", str(second), "--format", "json",
                         "--allow-unknown-gold", "--store", store, "-q"], args.threads)
        cached.write_text(out, encoding="utf-8")
    return json.loads(cached.read_text(encoding="utf-8"))


def headroom(train: Path, reviewed: Path, second: Path) -> tuple[int, int]:
    """(second-half mentions, those whose lower-cased text the reviewed first half has and NCBI train
    lacks): the mentions the reviews can teach something new about."""
    import warnings

    from kgnorm.mentions.readers import read_mentions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NCBI train repeats a PMID; the reader says so
        seen = {m.text.lower() for m in read_mentions(train, "pubtator")}
    new = {m.text.lower() for m in read_mentions(reviewed, "concept")} - seen
    held = [m.text.lower() for m in read_mentions(second, "pubtator")]
    return len(held), sum(t in new for t in held)


def loop(args: argparse.Namespace) -> dict[str, Any]:
    """Every stage in order; what the report needs."""
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    store = f"ladybug://{work}/graph"
    first, second, n1, n2 = split_dev(args.data / "ncbi-disease/NCBIdevelopset_corpus.txt", work)
    res: dict[str, Any] = {"docs": (n1, n2)}
    if not (work / "graph").exists():
        res["ingest"], _ = kgnorm(["ingest", "medic", str(args.data / "medic/medic_06Jul2012.txt"), "--ontology",
                                   "medic", "--store", store, "-q"], args.threads)
    base, retrained = work / "base", work / "retrained"
    res["base"] = train(base, args, store, first, None)
    reviewed = work / "reviewed.concept"
    if not reviewed.exists():
        res["annotate"], _ = kgnorm(["annotate", "--ner", "dictionary:medic", "--model", str(base), "--input",
                                     str(first), "--input-format", "pubtator", "--output",
                                     str(work / "annotated.pubtator"), "--threads", str(args.threads), "--store",
                                     store, "-q"], args.threads)
        res["review"] = review(store, first)
        _, _ = kgnorm(["export", "reviewed", "--format", "concept", "--ontology", "medic", "--output", str(reviewed),
                       "--store", store], args.threads, work / "export.log")
        (work / "review.json").write_text(json.dumps(res["review"]), encoding="utf-8")
    res["review"] = json.loads((work / "review.json").read_text(encoding="utf-8"))
    res["export"] = (work / "export.log").read_text(encoding="utf-8").strip()
    res["retrained"] = train(retrained, args, store, first, reviewed)
    res["eval"] = {name: evaluate(m, second, args, store) for name, m in (("base", base), ("retrained", retrained))}
    res["headroom"] = headroom(args.data / "ncbi-disease/NCBItrainset_corpus.txt", reviewed, second)
    return res


def report(res: dict[str, Any], args: argparse.Namespace) -> str:
    c, rv = res["review"]["counts"], res["review"]
    n1, n2 = res["docs"]
    ev = {k: v["full"] for k, v in res["eval"].items()}
    budget = f"`--max-minutes {args.minutes:g} --no-refit --threads {args.threads}`" + (
        f" + `{' '.join(args.train_args)}`" if args.train_args else "")
    lines = [f"Dev documents split by file order: first half {n1} documents (annotated, reviewed; the trainings' "
             f"--dev), second half {n2} (scored only). MEDIC 2012 as `medic`; BioSyn from MiniLM, default preset, "
             f"budget {budget} for both trainings.",
             "",
             f"- annotate (`--ner dictionary:medic`, base model's links): {rv['detected']:,} mentions detected; "
             f"gold spans {rv['gold']:,}",
             f"- review through the HTTP API (create_app + TestClient), {rv['wall']:.0f}s: "
             f"accept {c.get('accept', 0)}, "
             f"concept {c.get('concept', 0)}, not_a_mention {c.get('not_a_mention', 0)}, added {c.get('added', 0)}; "
             f"composite gold left unreviewed {c.get('composite_left', 0)}; refused {c.get('refused', 0)}"
             + (f" ({'; '.join(rv['errors'])})" if rv["errors"] else ""),
             f"- export: {res['export'].splitlines()[-1] if res['export'] else ''}",
             *(f"- {name} training: " + "; ".join(res[name]["lines"][-1:] or ["(reused)"])
               + (f" ({res[name]['wall'] / 60:.1f} min wall)" if res[name]["wall"] else "")
               for name in ("base", "retrained")),
             "",
             "| model (second half, strict scorer) | mentions | Acc@1 | Acc@5 |",
             "|---|---|---|---|",
             f"| base: NCBI train | {ev['base']['n']} | {f4(ev['base']['acc1'])} | {f4(ev['base']['acc5'])} |",
             f"| retrained: NCBI train + reviewed first half | {ev['retrained']['n']} | "
             f"**{f4(ev['retrained']['acc1'])}** | {f4(ev['retrained']['acc5'])} |",
             "",
             f"Acc@1 change on the held-out second half: {ev['retrained']['acc1'] - ev['base']['acc1']:+.4f}. "
             f"Of its {res['headroom'][0]} mentions, {res['headroom'][1]} have a text (lower-cased) the reviewed "
             "first half has and NCBI train lacks: what the reviews can teach beyond train. The "
             "retrained model's --dev (the first half) is in its training data, so its epoch selection is not held "
             "out; the second half is read by neither training."]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(p, help="holds ncbi-disease/ and medic/ (default: ../shared/data)")
    p.add_argument("--work", type=Path, default=Path("/tmp/kgnorm-review-loop"))
    p.add_argument("--minutes", type=float, default=10.0, help="--max-minutes of each training")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--train-arg", dest="train_args", action="append", default=[],
                   help="extra `train biosyn` argument (repeat; --train-arg=--max-steps-per-epoch=5: a smoke run)")
    p.add_argument("--no-append", action="store_true", help="print the section, leave benchmarks/LOG.md alone")
    args = p.parse_args()
    args.data, args.work = args.data.resolve(), args.work.resolve()
    t0 = time.perf_counter()
    res = loop(args)
    body = report(res, args) + f"\n\nWhole loop: {(time.perf_counter() - t0) / 60:.1f} min (stages reused from " \
                               f"--work not counted)."
    if args.no_append:
        print(f"## {TITLE}\n\n{body}")
    else:
        append(TITLE, body)


if __name__ == "__main__":
    main()
