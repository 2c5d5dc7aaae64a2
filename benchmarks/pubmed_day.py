"""PubMed in a day (issue 51, item 4): `kgnorm annotate` over every distinct abstract at hand, each
once (no cache sees a text twice), and the cores that 36M abstracts in 24 hours would take.

    python benchmarks/pubmed_day.py --model DIR --store URI [--ner dictionary:medic | --ner DETECTOR_DIR]
                                    [--data DIR] [--write] [--precisions onnx,bf16,...]

The abstracts: the title and abstract of every document of the NCBI-disease train and dev sets,
BC5CDR train and dev and GSC+ dev (PubTator files under `--data`, default ../shared/data; no test
split is read), kept once per PMID and once per text. --model: a linking model over MEDIC (e.g. the
untrained BioSyn of scripts/main_job.sh: `kgnorm train biosyn --ontology medic --out DIR`); --store:
a store holding MEDIC (the `dictionary:medic` tagger reads its names). Two child processes,
`kgnorm annotate … --input-format jsonl -q` (`--no-write` unless --write): one over the first
--probe abstracts (start-up: imports, model and dictionary loading) and one over all of them. Per
run: wall time, CPU time (user + sys) and peak RSS. The machine is shared with other jobs, so the
per-core rate is taken from CPU time, not wall time: abstracts per CPU-second, whole process
(start-up included) and marginal (the all-abstracts run minus the probe run, per abstract added),
and from it the cores for 36M abstracts in 24 hours (perfect scaling over processes assumed, one
start-up per core). --precisions runs the pair of children once per trained-detector path named
(KGNORM_NER_PRECISION in the child's environment: fp32, bf16, onnx, int8), one after the other in one
run, so the paths are measured side by side at the same load; the first named is the reference.
The figures are appended to benchmarks/LOG.md and recorded in results.jsonl.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import OFFLINE_ENV, add_data_option, append, record, run_child  # noqa: E402

CORPORA = ["ncbi-disease/NCBItrainset_corpus.txt", "ncbi-disease/NCBIdevelopset_corpus.txt",
           "bc5cdr/CDR_TrainingSet.PubTator.txt", "bc5cdr/CDR_DevelopmentSet.PubTator.txt",
           "gsc-plus/GSCplus_dev.pubtator"]
PUBMED = 36_000_000
DAY_S = 24 * 3600


def abstracts(data: Path) -> tuple[list[dict[str, str]], dict[str, int]]:
    """Every distinct document (by PMID, then by text) of CORPORA: {"id", "title", "abstract"};
    and how many each corpus added."""
    docs: dict[str, dict[str, str]] = {}
    texts: set[str] = set()
    added: dict[str, int] = {}
    for rel in CORPORA:
        found: dict[str, dict[str, str]] = {}
        for line in (data / rel).read_text(encoding="utf-8").splitlines():
            pmid, sep, rest = line.partition("|")
            kind, sep2, body = rest.partition("|")
            if sep and sep2 and kind in ("t", "a"):
                found.setdefault(pmid, {"id": pmid, "title": "", "abstract": ""})[
                    "title" if kind == "t" else "abstract"] = body
        added[rel] = 0
        for pmid, doc in found.items():
            text = doc["title"] + "\n" + doc["abstract"]
            if pmid in docs or text in texts:
                continue
            docs[pmid] = doc
            texts.add(text)
            added[rel] += 1
    return list(docs.values()), added


def annotate(args: argparse.Namespace, docs: list[dict[str, str]], work: Path, tag: str,
             precision: str = "") -> dict[str, float]:
    """One `kgnorm annotate` child over `docs` (`precision`: its KGNORM_NER_PRECISION, "" as the
    environment says): wall s, CPU s (user + sys), peak RSS MB, mentions."""
    src, out = work / f"{tag}.jsonl", work / f"{tag}.pubtator"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    cmd = [sys.executable, "-m", "kgnorm.cli", "annotate", "--ner", args.ner, "--model", args.model,
           "--input", str(src), "--input-format", "jsonl", "--output", str(out), "--output-format", "pubtator",
           "--store", args.store, "-q", "--write" if args.write else "--no-write"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**OFFLINE_ENV, **({"KGNORM_NER_PRECISION": precision} if precision else {})}
    wall, rss = run_child(cmd, env=env)  # peak RSS: the child's own VmHWM
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    mentions = sum(1 for ln in out.read_text(encoding="utf-8").splitlines() if ln.count("\t") >= 4)
    return {"docs": len(docs), "wall": wall, "mentions": mentions, "rss": rss,
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--model", required=True, help="linking model directory over MEDIC")
    ap.add_argument("--store", required=True, help="store holding MEDIC (ladybug://PATH)")
    ap.add_argument("--ner", default="dictionary:medic", help="dictionary:medic or a trained detector's directory")
    ap.add_argument("--probe", type=int, default=20, help="abstracts of the start-up run")
    ap.add_argument("--write", action="store_true", help="also write documents, mentions and links to the store")
    ap.add_argument("--precisions", default="", help="trained-detector paths to run side by side, comma-separated "
                    "(fp32, bf16, onnx, int8; the first is the reference); default: as the environment says")
    args = ap.parse_args()
    docs, added = abstracts(Path(args.data).resolve())
    paths = [p.strip() for p in args.precisions.split(",") if p.strip()] or [""]
    runs = {}
    with tempfile.TemporaryDirectory(prefix="kgnorm-pubmed-day-") as tmp:
        for p in paths:
            runs[p] = (annotate(args, docs[:args.probe], Path(tmp), f"probe{p}", p),
                       annotate(args, docs, Path(tmp), f"all{p}", p))
    load = os.getloadavg()[0]
    counts = ", ".join(f"{Path(k).name}: {v:,}" for k, v in added.items())
    named = f" on the paths {', '.join(paths)} (KGNORM_NER_PRECISION; run in that order)" if paths != [""] else ""
    rows = [
        f"{len(docs):,} distinct abstracts ({counts}); "
        f"detector `{args.ner}`{named}, linker `{args.model}`, {'written to the store' if args.write else '--no-write'}. "
        f"The machine's {os.cpu_count()} cores are shared with other jobs (1-min load average {load:.1f} at the end), "
        "so wall times are pessimistic and the per-core rates come from CPU time.", ""]
    for p, (small, full) in runs.items():
        rows += figures(args, p, small, full, len(docs))
    append(f"PubMed in a day: annotate every distinct abstract at hand ({args.ner})", "\n".join(rows))
    print("\n".join(rows))


def figures(args: argparse.Namespace, path: str, small: dict[str, float], full: dict[str, float], n: int) -> list[str]:
    """The two tables of one detector path (its probe and all-abstracts runs); its figure recorded."""
    whole = n / full["cpu"]  # abstracts per CPU-second, start-up included
    marginal = (n - small["docs"]) / max(full["cpu"] - small["cpu"], 1e-9)
    cores_whole, cores_marginal = PUBMED / DAY_S / whole, PUBMED / DAY_S / marginal
    label = f"`{path}` " if path else ""
    detector = args.ner if args.ner.startswith("dictionary:") else ("trained, " + path if path else "trained detector")
    record("speed", f"annotate per core, PubMed in a day ({detector})",
           f"{marginal:.1f} abstracts/CPU-s; {cores_marginal:.1f} cores for 36M in 24 h",
           command_line=(f"python benchmarks/pubmed_day.py --ner DET --precisions {args.precisions}" if path else
                         "python benchmarks/pubmed_day.py --model M --store S"
                         + ("" if args.ner.startswith("dictionary:") else " --ner DET")) + (" --write" if args.write else ""))
    return [
        "| run | abstracts | mentions | wall s | CPU s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
        *(f"| {label}{what} | {r['docs']:,} | {r['mentions']:,} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['rss']:,.0f} |"
          for what, r in (("start-up probe", small), ("all abstracts", full))),
        "",
        "| figure | value |",
        "|---|---|",
        f"| {label}abstracts/s, wall, whole process on this shared machine | {n / full['wall']:.1f} |",
        f"| {label}abstracts per CPU-second, whole process (start-up included) | {whole:.1f} |",
        f"| {label}abstracts per CPU-second, marginal (all minus the probe) | {marginal:.1f} |",
        f"| {label}**cores for 36M abstracts in 24 h**, from the marginal rate | **{cores_marginal:.1f}** |",
        f"| {label}same, from the whole-process rate (one {n:,}-abstract process per core-slice) | {cores_whole:.1f} |",
        "",
    ]

if __name__ == "__main__":
    main()
