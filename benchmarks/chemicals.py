"""Chemicals to MeSH, as a user runs it: MeSH's chemical vocabulary (descriptors of the D tree and the
supplementary records mapped into it, from the name tables `../shared/data/mesh/fetch.sh` prints)
into a fresh embedded store, BioSyn trained on BC5CDR-chemical train and selected on dev, then
`eval link` on dev (all mentions, and those whose gold concept is in the store) and the whole `link`
process on the dev mentions (time, peak RSS). Every step is the CLI; each is timed as its own process.

    python benchmarks/chemicals.py --mesh DIR --work DIR [--minutes 45] [--untrained] [--model DIR]

--untrained also scores the model built without training (MiniLM + tf-idf, the same dictionary;
with --minutes 0 alone);
--model DIR scores a model trained before instead of training one. Figures go to benchmarks/LOG.md
and benchmarks/results.jsonl (run `python benchmarks/results.py` after)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import OFFLINE_ENV, add_data_option, append, data_dir, kgnorm_stdout, record, run_child  # noqa: E402

DATA = data_dir()


def kgnorm(*args: object) -> tuple[float, float]:
    """(seconds, peak RSS MB) of one `kgnorm ARGS` process."""
    return run_child([sys.executable, "-m", "kgnorm.cli", *map(str, args)], env=OFFLINE_ENV)


def evaluate(model: Path, store: str, dev: Path, work: Path, label: str) -> dict:
    """eval link (all mentions, in the store) and the whole link process on the dev mentions."""
    rep = json.loads(kgnorm_stdout("eval", "link", "--model", model, "--gold", dev, "--allow-unknown-gold",
                                   "--store", store, "--format", "json", "--quiet"))
    seconds, rss = kgnorm("link", "--model", model, "--input", dev, "--output", work / f"{label}.tsv",
                          "--no-write", "--store", store, "--quiet")
    return {"all": rep["full"], "in_store": rep.get("in_store", rep["full"]), "unknown": rep["unknown_gold_mentions"],
            "link_seconds": seconds, "link_rss": rss}


def line(label: str, r: dict) -> str:
    return (f"| {label} | {r['all']['acc1']:.4f} (n={r['all']['n']}) | {r['in_store']['acc1']:.4f} "
            f"(n={r['in_store']['n']}) | {r['in_store']['acc5']:.4f} | {r['link_seconds']:.1f} s | "
            f"{r['link_rss']:.0f} MB |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--mesh", type=Path, required=True, help="the folder fetch.sh printed")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--minutes", type=float, default=45.0, help="train biosyn --max-minutes (selection); 0: no training")
    ap.add_argument("--untrained", action="store_true")
    ap.add_argument("--model", type=Path, default=None)
    args = ap.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    store = f"ladybug://{work / 'store' / 'graph'}"
    train, dev = DATA / "bc5cdr-chemical/train.concept", DATA / "bc5cdr-chemical/dev.concept"
    rows = ["| model | dev Acc@1, all mentions | Acc@1, gold in the store | Acc@5, in the store | link, whole process | link peak RSS |",
            "|---|---|---|---|---|---|"]
    steps = []
    if not (work / "store").exists():
        s, m = kgnorm("ingest", "mesh", args.mesh, "--branches", "D", "--ontology", "mesh", "--store", store, "--quiet")
        steps.append(f"- `kgnorm ingest mesh DIR --branches D --ontology mesh`: {s:.0f} s, peak RSS {m:.0f} MB")
    if args.untrained:
        s, _ = kgnorm("train", "biosyn", "--ontology", "mesh", "--train", train, "--epochs", "0", "--no-refit",
                      "--out", work / "untrained", "--store", store, "--quiet")
        steps.append(f"- untrained model (dictionary + index): {s:.0f} s")
        rows.append(line("untrained MiniLM + tf-idf", evaluate(work / "untrained", store, dev, work, "untrained")))
    model = args.model
    if model is None and args.minutes <= 0:
        append("Chemicals to MeSH (BC5CDR-chemical dev)", "\n".join(["BC5CDR-chemical dev (5,347 mentions), "
                                                                      "MeSH chemical vocabulary; gold spans.", "", *steps, "", *rows]))
        return
    if model is None:
        model = work / "biosyn"
        s, m = kgnorm("train", "biosyn", "--ontology", "mesh", "--train", train, "--dev", dev, "--no-refit",
                      "--max-minutes", args.minutes, "--out", model, "--store", store, "--quiet")
        steps.append(f"- `kgnorm train biosyn --ontology mesh --train train.concept --dev dev.concept --no-refit "
                     f"--max-minutes {args.minutes:g}`: {s / 60:.1f} min, peak RSS {m:.0f} MB")
    r = evaluate(model, store, dev, work, "biosyn")
    rows.append(line(f"BioSyn ({model.name})", r))
    meta = json.loads((model / "kgnorm-model.json").read_text())
    hist = (meta.get("training") or {}).get("history") or []
    epochs = ", ".join(f"epoch {h['epoch']}: dev {((h.get('dev') or {}).get('acc@1') or 0):.4f}, "
                       f"{h.get('seconds', 0):.0f} s (encode {h.get('seconds_encode', 0):.0f} s"
                       + (f", pool {h['pool_names']:,} names" if "pool_names" in h else "") + ")" for h in hist)
    body = "\n".join(["BC5CDR-chemical dev (5,347 mentions), MeSH chemical vocabulary; gold spans.", "",
                      *steps, f"- epochs: {epochs or 'n/a'}", "", *rows])
    append("Chemicals to MeSH (BC5CDR-chemical dev)", body)
    record("linking", "BioSyn, BC5CDR-chemical dev Acc@1, gold in the store (all mentions)",
           f"{r['in_store']['acc1']:.4f} ({r['all']['acc1']:.4f})",
           f"kgnorm train biosyn --ontology mesh --train train.concept --dev dev.concept --no-refit; {' '.join(sys.argv)}")
    record("speed", "link, BC5CDR-chemical dev mentions, MeSH chemicals, whole process",
           f"{r['link_seconds']:.1f} s, peak RSS {r['link_rss']:.0f} MB")


if __name__ == "__main__":
    main()
