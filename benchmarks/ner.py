"""The trained mention detector (`kgnorm train ner`, issue 26) on NCBI-disease and BC5CDR-disease
dev: strict-span precision / recall / F1 of the model selected on dev, training minutes (wall, the
whole command) and the command's peak RSS, per variant (CRF on/off, dictionary features on/off).

Each variant is one `kgnorm train ner` process under the same --max-minutes (the budget is the
training run's wall clock, dev evaluations included; reading the files and the process start come
on top). Figures are appended to benchmarks/LOG.md.

    python benchmarks/ner.py --corpus ncbi --variants plain,crf --max-minutes 20 --threads 1
    python benchmarks/ner.py --corpus bc5cdr --variants dict --ontology medic \
        --store ladybug:///tmp/nerbench/graph
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir, f4, run_child  # noqa: E402

DATA = data_dir()  # --data DIR, default ../shared/data

NCBI_TYPES = "SpecificDisease=Disease,DiseaseClass=Disease,Modifier=Disease,CompositeMention=Disease"
CORPORA = {
    "ncbi": ("NCBI-disease", DATA / "ncbi-disease/NCBItrainset_corpus.txt",
             DATA / "ncbi-disease/NCBIdevelopset_corpus.txt", NCBI_TYPES),
    "bc5cdr": ("BC5CDR-disease", DATA / "bc5cdr/CDR_TrainingSet.PubTator.txt",
               DATA / "bc5cdr/CDR_DevelopmentSet.PubTator.txt", "Disease"),
}
VARIANTS = {"plain": ["--no-crf", "--no-dictionary-features"], "crf": ["--crf", "--no-dictionary-features"],
            "dict": ["--no-crf", "--dictionary-features"], "crf+dict": ["--crf", "--dictionary-features"]}


def run_variant(corpus: str, variant: str, args) -> dict:
    _, train, dev, types = CORPORA[corpus]
    out = Path(args.out_root) / f"{corpus}-{variant}"
    cmd = [sys.executable, "-m", "kgnorm.cli", "train", "ner", "--train", str(train), "--dev", str(dev),
           "--out", str(out), "--types", types, "--max-minutes", str(args.max_minutes),
           "--threads", str(args.threads), "--no-resume", "--no-refit", *VARIANTS[variant]]  # dev F1 of the dev-selected model
    if "dict" in variant:
        cmd += ["--ontology", args.ontology] + (["--store", args.store] if args.store else [])
    if args.encoder:
        cmd += ["--encoder", args.encoder]
    if args.extra:
        cmd += args.extra.split()
    wall, rss = run_child(cmd)
    meta = json.loads((out / "kgnorm-model.json").read_text(encoding="utf-8"))
    dev_m = meta["metrics"]["dev"]
    last = meta["history"][-1] if meta.get("history") else {}
    return {"variant": variant, "precision": dev_m["precision"], "recall": dev_m["recall"], "f1": dev_m["f1"],
            "epoch": meta["metrics"]["epoch"], "steps": meta["metrics"].get("steps", "n/a"), "minutes": wall / 60, "rss": rss, "last": last}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(ap)
    ap.add_argument("--corpus", choices=sorted(CORPORA), required=True)
    ap.add_argument("--variants", default="plain", help=f"comma-separated: {', '.join(VARIANTS)}")
    ap.add_argument("--max-minutes", type=float, default=None, help="default: train ner's own default")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ontology", default="medic")
    ap.add_argument("--store", default="ladybug:///tmp/nerbench/graph")
    ap.add_argument("--encoder", default=None)
    ap.add_argument("--extra", default="", help="more `train ner` options, space-separated")
    ap.add_argument("--out-root", default="/tmp/nerbench/models")
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    if args.max_minutes is None:  # the budget a user gets, read from the recipe rather than copied here
        from kgnorm.methods.ner.recipe import Options

        args.max_minutes = Options.__dataclass_fields__["max_minutes"].default
    name = CORPORA[args.corpus][0]
    rows = [run_variant(args.corpus, v.strip(), args) for v in args.variants.split(",") if v.strip()]
    lines = [f"Trained mention detector (MiniLM-L6 default encoder unless --encoder), {name} dev, strict-span "
             f"NER; each variant one `kgnorm train ner` process with `--max-minutes {args.max_minutes:g} "
             f"--threads {args.threads}` (the budget is the training run's wall clock, dev evaluations "
             "included; the minutes below are the whole command's). Other jobs may share the 2-core "
             "machine: times are noisy.", "",
             "| variant | dev P | dev R | dev F1 | selected at epoch (steps) | train ner minutes | peak RSS MB |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['variant']} | {f4(r['precision'])} | {f4(r['recall'])} | {f4(r['f1'])} | "
                     f"{r['epoch']} ({r['steps']}) | {r['minutes']:.1f} | {r['rss']:.0f} |")
    body = "\n".join(lines)
    if args.no_append:
        print(body)
    else:
        append(f"Mention detector (train ner), {name} dev", body)


if __name__ == "__main__":
    main()
