"""Time `train biosyn`'s refit phase on real data without training the selection again.

Why: the whole default recipe (selection 45 min + refit) must fit issue 28's 90 minutes, and a
selection already trained with the same options, seed and data (a `--no-refit` run, or the
`selection/` a `--keep-checkpoints` run keeps) is exactly what the refit starts from. The
selection phase is replaced by a copy of that directory (its history gives E, as the product's
selection would); the refit phase is the product's own code (`_train_phase` with `phase.refit`).

    python benchmarks/refit_phase.py --selection DIR --out OUT --train F --dev F --store URI
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--selection", type=Path, required=True, help="a finished non-refit BioSyn directory")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--train", type=Path, required=True)
    ap.add_argument("--dev", type=Path, required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--ontology", default="medic")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import kgnorm.methods.biosyn.recipe as recipe
    from kgnorm.methods.registry import method

    real, timing = recipe._train_phase, {}

    def phase_fn(opts, snap, phase, quiet):
        if not phase.refit:
            shutil.copytree(args.selection, phase.out, dirs_exist_ok=True)
            hist = json.loads((args.selection / "kgnorm-model.json").read_text())["training"]["history"]
            best = max(hist, key=lambda r: (r["dev"]["acc@1"], -r["epoch"]))
            timing["selection"] = (best["epoch"], len(hist), best["dev"]["acc@1"])
            return SimpleNamespace(best_epoch=best["epoch"], best_value=best["dev"]["acc@1"],
                                   epochs_completed=len(hist), stop_reason="max_seconds", history=hist)
        t0 = time.perf_counter()
        res = real(opts, snap, phase, quiet)
        timing["refit_seconds"] = time.perf_counter() - t0
        return res

    recipe._train_phase = phase_fn
    method("biosyn").run_recipe(args.out, ontology=args.ontology, train=args.train, dev=args.dev,
                                threads=args.threads, store=args.store, quiet=False)
    block = json.loads((args.out / "kgnorm-model.json").read_text())["refit"]
    epoch, ran, acc = timing["selection"]
    epochs = [r for r in json.loads((args.out / "kgnorm-model.json").read_text())["training"]["history"]]
    body = (f"Selection reused from `{args.selection}` (epoch {epoch} of {ran} kept, held-out dev Acc@1 per part "
            f"{acc:.4f}); refit on `{args.train.name}` + `{args.dev.name}` with the default options, "
            f"{args.threads} thread(s).\n\n"
            "| epochs selected | epochs trained | complete | refit wall | refit epochs (s) | budget (min) |\n"
            "|---|---|---|---|---|---|\n"
            f"| {block['epochs_selected']} | {block['epochs_trained']} | {block['complete']} | "
            f"{timing['refit_seconds'] / 60:.1f} min | {', '.join(str(round(r['seconds'])) for r in epochs)} | "
            f"{block['budget_minutes']['refit']} |\n")
    append("Refit phase of train biosyn on real data (issue 28)", body)


if __name__ == "__main__":
    main()
