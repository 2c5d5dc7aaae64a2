"""The HPO recipe's annotate speed, this code beside an earlier commit's, in one run: `kgnorm annotate
--ner dictionary:hpo --model M --no-write` as a user runs it (one process per run, the tagger built
from the store, the model loaded), on three inputs, one .txt per abstract:

* GSC+ dev (22 abstracts), the set whose mention F1 benchmarks/hpo_recipe.py reports;
* its 20 copies under new names (440 abstracts): hpo_recipe.py's speed set;
* every distinct abstract of NCBI-disease train + dev and BC5CDR train + dev (text only: their
  annotations are not read), new text for the linker.

Each run's figures: abstracts/s as annotate reports it (detection + linking + writing, the model load
and the tagger build excluded: the issue's target), the whole process's wall time, and its CPU time
(user + sys of the child, resource.getrusage(RUSAGE_CHILDREN)): on a machine shared with other jobs
the CPU time is the steadier figure, so abstracts per CPU-second is reported beside wall. The two
codes alternate (who goes first flips per repeat); the medians are shown.

The earlier code is `--before REV`, a git revision extracted with `git archive` and installed the way
setup.py maps it (as benchmarks/same_outputs.py does): every command is `python -m kgnorm.cli ...`
with PYTHONPATH on that snapshot, run from a scratch folder (checked: kgnorm imports from there).
This checkout's working tree is snapshotted the same way. The outputs of the two codes must be
byte-identical on every input (the script stops without recording when one differs).
"""
from __future__ import annotations

import argparse
import io
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import OFFLINE_ENV, ROOT, add_data_option, append, data_dir, record  # noqa: E402

MAPPED = ("cli", "ontologies", "cypher")  # installed as kgnorm.cli, ... (setup.py)
CORPORA = ("ncbi-disease/NCBItrainset_corpus.txt", "ncbi-disease/NCBIdevelopset_corpus.txt",
           "bc5cdr/CDR_TrainingSet.PubTator.txt", "bc5cdr/CDR_DevelopmentSet.PubTator.txt")


def snapshot(site: Path, rev: str | None) -> None:
    """kgnorm as installed from `rev` (None: this working tree) into `site`."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    if rev is None:
        shutil.copytree(ROOT / "kgnorm", site / "kgnorm", ignore=ignore)
        for sub in MAPPED:
            shutil.copytree(ROOT / sub, site / "kgnorm" / sub, ignore=ignore)
        return
    raw = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "kgnorm", *MAPPED], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(raw.stdout)) as tar:
        tar.extractall(site / "tree", filter="data")
    shutil.move(str(site / "tree" / "kgnorm"), str(site / "kgnorm"))
    for sub in MAPPED:
        shutil.move(str(site / "tree" / sub), str(site / "kgnorm" / sub))
    shutil.rmtree(site / "tree")


def check_import(site: Path, cwd: Path) -> None:
    probe = subprocess.run([sys.executable, "-c", "import kgnorm.cli; print(kgnorm.__file__)"], cwd=cwd,
                           env={**os.environ, "PYTHONPATH": str(site)}, capture_output=True, text=True)
    if probe.returncode or not probe.stdout.strip().startswith(str(site) + "/"):
        sys.exit(f"the snapshot {site} is not what python imports: {probe.stdout}{probe.stderr}")


def write_inputs(work: Path, copies: int) -> dict[str, Path]:
    """The three input folders (module docstring)."""
    from kgnorm.documents.readers import read_documents

    data = data_dir()
    sets = {"GSC+ dev": work / "gsc", f"GSC+ dev x{copies}": work / "copies", "NCBI + BC5CDR abstracts": work / "distinct"}
    for folder in sets.values():
        folder.mkdir(parents=True)
    for doc in read_documents(data / "gsc-plus" / "GSCplus_dev.pubtator", "pubtator"):
        (sets["GSC+ dev"] / f"{doc.doc_id}.txt").write_text(doc.text, encoding="utf-8")
        for c in range(copies):
            (sets[f"GSC+ dev x{copies}"] / f"{doc.doc_id}_{c}.txt").write_text(doc.text, encoding="utf-8")
    seen: set[str] = set()
    for name in CORPORA:
        for doc in read_documents(data / name, "pubtator"):
            if doc.doc_id not in seen:
                seen.add(doc.doc_id)
                (sets["NCBI + BC5CDR abstracts"] / f"{doc.doc_id}.txt").write_text(doc.text, encoding="utf-8")
    return sets


def annotate(site: Path, cwd: Path, folder: Path, out: Path, model: Path, store: str) -> dict[str, float]:
    """One `kgnorm annotate` process: its reported rate, wall and CPU seconds."""
    argv = [sys.executable, "-m", "kgnorm.cli", "annotate", "--ner", "dictionary:hpo", "--model", str(model),
            "--input", str(folder), "--output", str(out), "--no-write", "--store", store]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **OFFLINE_ENV, "PYTHONPATH": str(site)})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        sys.exit(f"{' '.join(argv)} failed:\n{done.stderr}")
    m = re.search(r"annotated [\d,]+ document\(s\) \(([\d.,]+)/s\)", done.stderr + done.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rate": float(m.group(1).replace(",", "")) if m else float("nan"), "wall": wall, "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(ap)
    ap.add_argument("--store", required=True, help="store holding `kgnorm ingest obo hp.obo --ontology hpo`")
    ap.add_argument("--model", type=Path, required=True, help="the linking model (`kgnorm train biosyn --ontology hpo`)")
    ap.add_argument("--before", required=True, help="the git revision to compare with (e.g. main, a commit)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each code on each input (alternating)")
    ap.add_argument("--copies", type=int, default=20, help="copies of GSC+ dev in the second input")
    ap.add_argument("--no-log", action="store_true", help="print only (no LOG.md / results.jsonl)")
    args = ap.parse_args()
    before_rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.before], capture_output=True,
                                text=True, check=True).stdout.strip()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sites = {f"before ({before_rev})": work / "before", f"this code ({head} + working tree)": work / "after"}
        for site, rev in zip(sites.values(), (args.before, None)):
            snapshot(site, rev)
            check_import(site, work)
        sets = write_inputs(work / "inputs", args.copies)
        for label, folder in sets.items():
            n = len(list(folder.glob("*.txt")))
            runs: dict[str, list[dict[str, float]]] = {code: [] for code in sites}
            outputs: dict[str, bytes] = {}
            for r in range(args.repeats):
                for code in (list(sites) if r % 2 == 0 else list(sites)[::-1]):
                    out = work / "out.pubtator"
                    runs[code].append(annotate(sites[code], work, folder, out, args.model, args.store))
                    outputs.setdefault(code, out.read_bytes())
            same = len(set(outputs.values())) == 1
            print(f"{label}: {n} abstracts, outputs identical: {same}", file=sys.stderr)
            if not same:
                sys.exit(f"{label}: the two codes wrote different outputs; nothing recorded")
            for code, rs in runs.items():
                med = {k: statistics.median(r[k] for r in rs) for k in ("rate", "wall", "cpu")}
                results[(label, code)] = {**med, "n": n}
                rows.append(f"| {label} | {n:,} | {code} | {med['rate']:,.1f} | {med['wall']:.1f} | {med['cpu']:.1f} | "
                            f"{n / med['wall']:,.1f} | **{n / med['cpu']:,.1f}** |")
    head_row = ("| input | abstracts | code | abstracts/s (annotate's report) | wall s | CPU s | abstracts/s, whole "
                "process (wall) | abstracts per CPU-s, whole process |\n|---|---:|---|---:|---:|---:|---:|---:|\n")
    body = (f"`kgnorm annotate --ner dictionary:hpo --model {args.model} --no-write`, one process per run, the codes "
            f"alternating, medians of {args.repeats} runs each; outputs byte-identical between the two codes on every "
            f"input. CPU s: user + sys of the child process. 1-min load average {os.getloadavg()[0]:.1f} at the end "
            "(other jobs share the 2 cores: wall figures are noisy, CPU figures steadier).\n\n" + head_row + "\n".join(rows))
    if args.no_log:
        print(body)
        return
    append("annotate --ner dictionary:hpo speed, before and after", body)
    short = "python benchmarks/hpo_speed.py --store S --model M --before REV"
    after = [code for code in sites][1]
    copies = results[(f"GSC+ dev x{args.copies}", after)]
    distinct = results[("NCBI + BC5CDR abstracts", after)]
    # per CPU-second: annotate's own rate is wall time, which the other jobs on the cores decide here
    record("speed", f"annotate --ner dictionary:hpo, GSC+ dev x{args.copies} ({copies['n']:,} abstracts), abstracts per "
           "CPU-second, whole process", f"{copies['n'] / copies['cpu']:,.0f}", command_line=short)
    record("speed", f"annotate --ner dictionary:hpo, {distinct['n']:,} NCBI + BC5CDR abstracts, abstracts per CPU-second, "
           "whole process",
           f"{distinct['n'] / distinct['cpu']:,.0f}", command_line=short)


if __name__ == "__main__":
    main()
