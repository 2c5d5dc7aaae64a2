"""How long `kgnorm retrain` takes for N reviews (issue 50: ≤ 10 min for 800 reviews on 2 cores).

    python benchmarks/retrain_time.py --model BIOSYN_DIR [--ner NER_DIR | --train-ner-minutes M]
        [--reviews 800] [--work DIR] [--threads 2] [--no-append]

1. MEDIC (medic_06Jul2012.txt) into a scratch store (reused from --work).
2. `kgnorm annotate` of NCBI-disease dev's raw text with --ner (a trained detector; or one trained
   here on NCBI train for --train-ner-minutes; without either, `dictionary:medic`, and retrain is
   then linker only) and the BioSyn --model (MEDIC).
3. A curator replaying the dev gold through the review app's HTTP API, document by document in
   file order: each found mention accepted, corrected or not-a-mention, each missed gold span
   added, the document marked done; stops after the document that reaches --reviews reviews. A
   composite gold (A|B, A+B) is left unreviewed, so its document is not done.
4. `kgnorm retrain --threads T` with the default budgets, timed (wall clock, with every other
   process this shared machine runs). Dev only: the test split is never read."""
from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, record  # noqa: E402

TITLE = "kgnorm retrain: wall time for N reviews (NCBI-disease dev reviewed, MEDIC BioSyn)"
NCBI_TYPES = "SpecificDisease=Disease,DiseaseClass=Disease,Modifier=Disease,CompositeMention=Disease"


def child_cpu() -> float:
    """CPU seconds (user + system) of the waited-for children so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def kgnorm(args: list[str], threads: int, log: Path) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kgnorm.cli", *args], env=env, capture_output=True, text=True)
    log.write_text(proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        raise SystemExit(f"kgnorm {' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    wall = time.perf_counter() - t0
    print(f"  kgnorm {args[0]}: {wall:.0f}s", file=sys.stderr, flush=True)
    return wall


def review(store: str, gold_file: Path, budget: int) -> dict[str, Any]:
    """Replay the gold through the HTTP API until `budget` reviews; counts and wall time."""
    from starlette.testclient import TestClient

    from kgnorm.documents.readers import read_documents
    from kgnorm.review.desk import ReviewDesk
    from kgnorm.serve.app import create_app

    gold = [(d.doc_id, {(a.start, a.end): a for a in d.annotations}) for d in read_documents(gold_file, "pubtator")]
    counts: dict[str, int] = {"reviews": 0, "done": 0, "composite_left": 0, "documents": 0}
    token, t0 = secrets.token_hex(16), time.perf_counter()
    desk = ReviewDesk(store)
    try:
        with TestClient(create_app(desk, token, reviewer="gold-replay")) as c:
            h = {"X-Kgnorm-Token": token}
            for doc_id, spans in gold:
                if counts["reviews"] >= budget:
                    break
                doc = c.get(f"/api/documents/{quote(doc_id, safe='')}").json()
                if "mentions" not in doc:
                    continue
                counts["documents"] += 1
                for m in doc["mentions"]:
                    g = spans.get((m["start"], m["end"]))
                    if g is not None and (len(g.ids) != 1 or "+" in g.ids[0]):
                        counts["composite_left"] += 1
                        continue
                    body = ({"decision": "not_a_mention"} if g is None else {"decision": "accept"}
                            if g.ids[0] == m["machine_concept"] else {"decision": "concept", "concept": g.ids[0]})
                    r = c.post(f"/api/mentions/{quote(m['uid'], safe='')}/review", json=body, headers=h)
                    counts[body["decision"]] = counts.get(body["decision"], 0) + 1
                    counts["reviews"] += r.status_code == 200
                    counts["refused"] = counts.get("refused", 0) + (r.status_code != 200)
                found = {(m["start"], m["end"]) for m in doc["mentions"]}
                for (s, e), g in spans.items():
                    if (s, e) in found or len(g.ids) != 1 or "+" in g.ids[0]:
                        continue
                    r = c.post(f"/api/documents/{quote(doc['uid'], safe='')}/mentions", headers=h,
                               json={"start": s, "end": e, "concept": g.ids[0], "type": "Disease"})
                    counts["added"] = counts.get("added", 0) + (r.status_code == 201)
                    counts["reviews"] += r.status_code == 201
                r = c.post(f"/api/documents/{quote(doc['uid'], safe='')}/done", json={}, headers=h)
                counts["done"] += r.status_code == 200
    finally:
        desk.close()
    counts["wall"] = round(time.perf_counter() - t0, 1)
    return counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(p, help="holds ncbi-disease/ and medic/ (default: ../shared/data)")
    p.add_argument("--model", type=Path, required=True, help="a BioSyn model trained on MEDIC 2012 (ontology medic)")
    p.add_argument("--ner", type=Path, help="a trained detector (kgnorm train ner)")
    p.add_argument("--train-ner-minutes", type=float, help="without --ner: train one on NCBI train for M minutes")
    p.add_argument("--reviews", type=int, default=800)
    p.add_argument("--work", type=Path, default=Path("/tmp/kgnorm-retrain-time"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-append", action="store_true")
    args = p.parse_args()
    work, data = args.work.resolve(), args.data.resolve()
    work.mkdir(parents=True, exist_ok=True)
    store = f"ladybug://{work}/graph"
    if not (work / "graph").exists():
        kgnorm(["ingest", "medic", str(data / "medic/medic_06Jul2012.txt"), "--ontology", "medic", "--store", store,
                "-q"], args.threads, work / "ingest.log")
    ner = args.ner
    if ner is None and args.train_ner_minutes:
        ner = work / "ner"
        if not (ner / "kgnorm-model.json").exists():
            kgnorm(["train", "ner", "--train", str(data / "ncbi-disease/NCBItrainset_corpus.txt"), "--types", NCBI_TYPES,
                    "--out", str(ner), "--max-minutes", str(args.train_ner_minutes), "--threads", str(args.threads)],
                   args.threads, work / "train_ner.log")
    dev = data / "ncbi-disease/NCBIdevelopset_corpus.txt"
    state = work / "review.json"
    if not state.exists():
        kgnorm(["annotate", "--ner", str(ner or "dictionary:medic"), "--model", str(args.model), "--input", str(dev),
                "--input-format", "pubtator", "--output", str(work / "annotated.pubtator"), "--threads",
                str(args.threads), "--store", store, "-q"], args.threads, work / "annotate.log")
        state.write_text(json.dumps(review(store, dev, args.reviews)), encoding="utf-8")
    counts = json.loads(state.read_text(encoding="utf-8"))
    out = work / f"retrained-{int(time.time())}"
    cmd = ["retrain", "--store", store, "--model", str(args.model), "--out", str(out), "--threads", str(args.threads)]
    cpu0, load = child_cpu(), os.getloadavg()[0]
    wall = kgnorm(cmd + (["--ner", str(ner)] if ner else []), args.threads, work / "retrain.log")
    cpu, load = child_cpu() - cpu0, (load + os.getloadavg()[0]) / 2
    lines = [ln for ln in (work / "retrain.log").read_text(encoding="utf-8").splitlines() if not ln.startswith("Writ")]
    body = "\n".join([
        f"Reviews through the HTTP API ({counts['wall']:.0f}s): {counts['reviews']:,} in {counts['documents']} NCBI "
        f"dev documents ({counts['done']} marked done): accept {counts.get('accept', 0)}, concept "
        f"{counts.get('concept', 0)}, not_a_mention {counts.get('not_a_mention', 0)}, added {counts.get('added', 0)}; "
        f"composite gold left {counts['composite_left']}; refused {counts.get('refused', 0)}.",
        f"Detector: {'`' + str(ner) + '`' if ner else 'dictionary:medic (retrain is linker only)'}; linker "
        f"`{args.model}`.", "",
        f"**`kgnorm retrain --threads {args.threads}` (default budgets): {wall / 60:.1f} min wall, {cpu / 60:.1f} "
        f"CPU-min** for {counts['reviews']:,} reviews; 1-min load average about {load:.0f} on this shared "
        f"machine while it ran. Its report:", "", "```", *[ln for ln in lines if ln.strip()][-12:], "```"])
    if args.no_append:
        print(body)
        return
    append(TITLE, body)
    record("speed", f"kgnorm retrain, {counts['reviews']} reviews (NCBI dev), " + ("linker + detector" if ner else
                                                                                  "linker only"),
           f"{wall / 60:.1f} min wall ({cpu / 60:.1f} CPU-min, load ~{load:.0f})")


if __name__ == "__main__":
    main()
