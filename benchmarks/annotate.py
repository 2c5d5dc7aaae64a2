"""`kgnorm annotate` on NCBI-disease and BC5CDR (disease) dev: NER strict-span, end-to-end mention and
document-level concept P/R/F1 (kgnorm eval annotate's scorer on the PubTator annotate wrote),
abstracts/s (detection and linking, no store write) and peak RSS; with and without document
consistency; the dictionary tagger over MEDIC, and a trained detector when --ner-model is given.

    python benchmarks/annotate.py [--work DIR] [--ner-model DIR] [--corpora ncbi,bc5cdr]
    python benchmarks/annotate.py --levers --ner-model ncbi=DIR,bc5cdr=DIR [--work DIR]
    python benchmarks/annotate.py --speed --ner-model ncbi=DIR,bc5cdr=DIR --linker ncbi=DIR,bc5cdr=DIR
        [--store URI] [--paths bf16-1t,bf16-overlap,...] [--small-ner ncbi=DIR]

--levers: the trained detectors' inference-time levers (kgnorm.ner.refine: BIO repair, span
propagation, abbreviation propagation, union with the MEDIC dictionary's multi-word matches),
each alone and every combination, NER strict-span P/R/F1 by `kgnorm eval annotate`'s scorer on
the PubTator of the spans (no linking); the detector runs once per corpus (its tags cached in
--work). --speed: the detector's inference paths (precision, threads), benchmarks/_annotate_speed.py.

Linker: the untrained BioSyn model over MEDIC 2012 (DATA/medic, `--data DIR`, default ../shared/data), built as
scripts/main_job.sh builds it (`kgnorm train biosyn --ontology medic`, no training data) into
--work if not there. Each configuration runs in a child process (1 torch thread); its peak RSS
is the child's VmHWM. Dev only: the test splits are never read."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir, f4, run_child  # noqa: E402

DATA = data_dir()  # --data DIR, default ../shared/data

CORPORA = {
    "ncbi": ("NCBI-disease dev", DATA / "ncbi-disease/NCBIdevelopset_corpus.txt", None),
    "bc5cdr": ("BC5CDR dev (Disease)", DATA / "bc5cdr/CDR_DevelopmentSet.PubTator.txt", ["Disease"]),
}
ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def kgnorm(*args: str, store: str) -> None:
    subprocess.run([sys.executable, "-m", "kgnorm.cli", *args, "--store", store, "-q"], check=True,
                   env={**os.environ, **ENV})


def prepare_store(work: Path) -> str:
    store = f"ladybug://{work}/graph"
    if not (work / "graph").exists():
        kgnorm("ingest", "medic", str(DATA / "medic/medic_06Jul2012.txt"), store=store)
    return store


def prepare(work: Path) -> tuple[str, Path]:
    store, model = prepare_store(work), work / "medic-biosyn"
    if not (model / "kgnorm-model.json").exists():
        kgnorm("train", "biosyn", "--ontology", "medic", "--out", str(model), "--threads", "1", store=store)
    return store, model


def child(args: argparse.Namespace) -> None:
    """One configuration, in its own process: annotate with no write, figures to --result."""
    import torch

    torch.set_num_threads(1)
    from kgnorm.jobs.annotate import annotate_documents

    rep = annotate_documents(args.ner, args.model, args.input, input_format="pubtator", output=args.output,
                             output_format="pubtator", store=args.store, write=False,
                             consistency=args.consistency == "on", progress=False, overlap=False)
    Path(args.result).write_text(json.dumps({"docs": rep.n_documents, "seconds": rep.seconds,
                                             "mentions": rep.n_mentions}))


def main() -> None:
    ap = argparse.ArgumentParser()
    add_data_option(ap)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "kgnorm-bench-annotate")
    ap.add_argument("--ner-model", type=Path, default=None, help="DIR, or with --levers ncbi=DIR,bc5cdr=DIR")
    ap.add_argument("--corpora", default="ncbi,bc5cdr")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for opt in ("--ner", "--model", "--input", "--output", "--store", "--result", "--consistency"):
        ap.add_argument(opt, help=argparse.SUPPRESS)
    ap.add_argument("--levers", action="store_true", help="the trained detectors' inference-time levers")
    ap.add_argument("--speed", action="store_true", help="a trained detector's inference paths: precision, threads")
    ap.add_argument("--paths", default=None, help="with --speed: which paths (benchmarks/_annotate_speed.py PATHS)")
    ap.add_argument("--linker", type=Path, default=None, help="the linking model (default: the untrained BioSyn "
                    "built in --work); with --speed ncbi=DIR,bc5cdr=DIR")
    ap.add_argument("--small-ner", type=Path, default=None, help="with --speed: a smaller detector for the "
                    "-small paths, ncbi=DIR[,bc5cdr=DIR]")
    ap.add_argument("--child-speed", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if args.child_speed:
        from _annotate_speed import speed_child

        return speed_child(args)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.levers:
        from _annotate_levers import levers

        return levers(args, prepare_store(args.work))
    if args.speed:
        from _annotate_speed import speed

        return speed(args, args.store or prepare_store(args.work))
    store, model = (prepare_store(args.work), args.linker) if args.linker else prepare(args.work)
    from kgnorm.jobs.eval_annotate import evaluate_annotations

    detectors = [("dictionary:medic", "dictionary (MEDIC names)")]
    if args.ner_model is not None:
        detectors.append((str(args.ner_model), f"trained ({args.ner_model.name})"))
    rows = []
    for key in args.corpora.split(","):
        name, gold, types = CORPORA[key]
        for ner, ner_name in detectors:
            for cons in ("off", "on"):
                out, result = args.work / f"{key}-{ner_name[:4]}-{cons}.pubtator", args.work / "result.json"
                wall, rss = run_child([sys.executable, __file__, "--child", "--ner", ner, "--model", str(model),
                                       "--input", str(gold), "--output", str(out), "--store", store,
                                       "--result", str(result), "--consistency", cons], env=ENV)
                r = json.loads(result.read_text())
                s = evaluate_annotations(gold, out, model=model, types=types, store=store)
                rows.append(f"| {name} | {ner_name} | {cons} | " + " | ".join(
                    f"{f4(s[m]['precision'])} / {f4(s[m]['recall'])} / **{f4(s[m]['f1'])}**"
                    for m in ("ner", "mention", "document"))
                    + f" | {r['docs']} | {r['docs'] / r['seconds']:.1f} | {wall:.0f} s | {rss:,.0f} MB |")
                print(rows[-1], flush=True)
    body = ("`kgnorm annotate --input-format pubtator --no-write` on the dev abstracts' raw text (title + abstract), "
            "then `kgnorm eval annotate` on the PubTator it wrote. Linker: "
            + (f"{args.linker}. " if args.linker else "the untrained BioSyn model over MEDIC 2012 (`kgnorm train "
               "biosyn --ontology medic`, no training data: char tf-idf + offline MiniLM), as scripts/main_job.sh "
               "builds it. ") + "NCBI-disease: all four gold types are disease (no --types); BC5CDR: "
            "`--types Disease`. Each cell P / R / **F1**, micro over mentions (ner: strict span; mention: span and "
            "concept set, alt ids count) or over (document, concept) pairs (document: BioCreative V DNER). "
            "abstracts/s: detection + abbreviations + linking + consistency + writing the PubTator, timed inside "
            "annotate (model loading excluded); wall and peak RSS (VmHWM) of the whole child process, dictionary "
            "building included. 1 torch thread. Other jobs may share the machine (load average in the "
            "header): speeds are noisy, lower bounds.\n\n"
            "| corpus | detector | consistency | ner P / R / F1 | mention P / R / F1 | document P / R / F1 | "
            "abstracts | abstracts/s | wall | peak RSS |\n|---|---|---|---|---|---|---:|---:|---:|---:|\n"
            + "\n".join(rows) + "\n")
    append("annotate: raw text to linked mentions on dev (issue 26)", body)


if __name__ == "__main__":
    main()
