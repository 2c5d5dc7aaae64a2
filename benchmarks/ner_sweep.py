"""Learning rate and schedule of the mention detector (`train ner`, issue 26), chosen on dev.

Every configuration trains the plain detector for a fixed number of epochs (the loop's per-epoch
dev strict-span F1 is recorded, so one 8-epoch run also gives the 4- and 6-epoch figures of a
constant rate), in one process, on ``--device`` (a GPU where one is lent: a sweep that would
take a day on 2 cores takes minutes). The CPU recipe fits about 5 epochs (one thread) to 7 (two)
into `train ner`'s 25-minute budget, so what is compared is the dev F1 reached at those epoch
counts; the winner is then confirmed by a CPU `train ner` run (benchmarks/ner.py).

    python benchmarks/ner_sweep.py --corpus ncbi --corpus bc5cdr --device cuda \\
        --config constant:1e-4:8 --config linear:2e-4:6 --json-out sweep.json

Prints one markdown row per configuration; with --json-out also writes every epoch's figures.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option  # noqa: E402

NCBI_TYPES = "SpecificDisease=Disease,DiseaseClass=Disease,Modifier=Disease,CompositeMention=Disease"
CORPORA = {
    "ncbi": ("ncbi-disease/NCBItrainset_corpus.txt", "ncbi-disease/NCBIdevelopset_corpus.txt", NCBI_TYPES),
    "bc5cdr": ("bc5cdr/CDR_TrainingSet.PubTator.txt", "bc5cdr/CDR_DevelopmentSet.PubTator.txt", "Disease"),
}


def parse_config(text: str) -> tuple[str, float, float]:
    schedule, lr, epochs = text.split(":")
    return schedule, float(lr), float(epochs)


def run(corpus: str, schedule: str, lr: float, epochs: float, args) -> dict:
    from kgnorm.methods.ner.train import NerConfig, train_ner
    from kgnorm.ner.corpus import parse_types, read_annotated

    train_rel, dev_rel, types = CORPORA[corpus]
    root = args.data
    tmap = parse_types(types)
    train = read_annotated(root / train_rel, tmap)
    dev = read_annotated(root / dev_rel, tmap, require_types=False)
    cfg = NerConfig(learning_rate=lr, lr_schedule=schedule, epochs=epochs, batch_size=args.batch_size,
                    seed=args.seed, checkpoint_every_seconds=None, max_steps_per_epoch=args.max_steps_per_epoch)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.keep) / f"{corpus}-{schedule}-{lr:g}-{epochs:g}" if args.keep else Path(tmp) / "det"
        res = train_ner(train, dev, out, tmap.labels, args.encoder, cfg, resume=False,
                        progress=False, device=args.device)
    seconds = time.perf_counter() - t0
    per_epoch = [round(float((h.get("dev") or {}).get("f1", float("nan"))), 4) for h in res.history]
    return {"corpus": corpus, "schedule": schedule, "lr": lr, "epochs": epochs, "best_epoch": res.best_epoch,
            "best_f1": (res.best_metrics or {}).get("f1"), "per_epoch_f1": per_epoch,
            "steps": res.global_step, "seconds": round(seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", action="append", choices=sorted(CORPORA), required=True)
    ap.add_argument("--config", action="append", required=True, type=parse_config,
                    help="SCHEDULE:LR:EPOCHS, e.g. constant:1e-4:8 (repeatable)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--encoder", default=None, help="encoder directory (default: the offline MiniLM)")
    add_data_option(ap)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-steps-per-epoch", type=int, default=None, help="smoke runs")
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--keep", default=None, help="keep each trained detector in a folder here")
    args = ap.parse_args()
    rows = []
    print("| corpus | schedule | lr | epochs | dev F1 per epoch | best (epoch) | steps | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for corpus in args.corpus:
        for schedule, lr, epochs in args.config:
            r = run(corpus, schedule, lr, epochs, args)
            rows.append(r)
            print(f"| {corpus} | {schedule} | {lr:g} | {epochs:g} | {' '.join(f'{x:.4f}' for x in r['per_epoch_f1'])} "
                  f"| {r['best_f1']} ({r['best_epoch']}) | {r['steps']} | {r['seconds']} |", flush=True)
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
