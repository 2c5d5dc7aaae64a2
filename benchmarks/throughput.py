"""`kgnorm link` and `kgnorm annotate` throughput on one machine, start-up included: distinct
mentions per second (link) and abstracts per second (annotate, dictionary tagger + linking), for
the previous query-encoder path (torch fp32, 8-row fixed-shape calls, no lookahead), torch fp32 with
32-row calls filled by the lookahead, the torch query engine's defaults (bf16 where the CPU declares
it), the current defaults (the onnx query engine where onnxruntime is installed), the same with the
query calls on 2 threads (opt-in), and `--engine ray` at 1 and 2 workers, all in the
same run and against the same model; peak RSS per process (driver and largest Ray worker),
and whether each output is byte-identical to the first row of its query precision.

    python benchmarks/throughput.py --model DIR [--mentions N] [--workers 1,2] [--out DIR]
                                    [--annotate-store URI] [--ner DETECTOR_DIR] [--abstracts N]
                                    [--small-ner DETECTOR_DIR [--rounds R]]

--model: a BioSyn model directory (e.g. `kgnorm train biosyn --ontology medic --out DIR`). The
mentions are NCBI-disease train + dev and BC5CDR train + dev (PubTator, from `--data DIR`, default ../shared/data;
no test split), cut to the first --mentions documents' worth; annotate reads the same documents'
text. --annotate-store: a store holding the model's ontology (annotate's `dictionary:` tagger reads
it); without it annotate is not measured. --ner: a trained detector (`kgnorm train ner`) instead of
the dictionary tagger. --abstracts N: annotate a corpus of N abstracts, the documents repeated under new
ids (PMID-2, PMID-3, …) as often as needed (the shared data hold about 2,300 abstracts); the previous
path's row is then left out. --small-ner: a second detector (a smaller or distilled one) whose rows
alternate with --ner's, --rounds times, so the two are compared within the same minutes. Each run is
a fresh `kgnorm … --no-write -q` process.
Figures are appended to benchmarks/LOG.md.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir  # noqa: E402

DATA = data_dir()  # --data DIR, default ../shared/data

from kgnorm.linking.cpu_features import bf16_native, query_engine  # noqa: E402

CORPORA = ["ncbi-disease/NCBItrainset_corpus.txt", "ncbi-disease/NCBIdevelopset_corpus.txt",
           "bc5cdr/CDR_TrainingSet.PubTator.txt", "bc5cdr/CDR_DevelopmentSet.PubTator.txt"]


def corpus(path: Path, max_mentions: int) -> tuple[int, int]:
    """Concatenate the train/dev PubTator files, whole documents, up to `max_mentions` mentions;
    (mentions, distinct mention texts)."""
    n, texts, out = 0, set(), []
    for rel in CORPORA:
        for doc in (DATA / rel).read_text(encoding="utf-8").split("\n\n"):
            lines = [x for x in doc.strip("\n").splitlines() if x]
            ann = [x.split("\t") for x in lines if "\t" in x and len(x.split("\t")) >= 6]
            if not lines or n >= max_mentions:
                continue
            out.append("\n".join(lines) + "\n\n")
            n += len(ann)
            texts.update(a[3] for a in ann)
    path.write_text("".join(out), encoding="utf-8")
    return n, len(texts)


def repeated(src: Path, dst: Path, abstracts: int) -> int:
    """`src`'s documents repeated under new ids until `abstracts` of them; how many were written."""
    docs = [d.strip("\n") for d in src.read_text(encoding="utf-8").split("\n\n") if d.strip()]
    out = []
    for i in range(abstracts):
        doc, copy = docs[i % len(docs)], i // len(docs)
        if copy:
            pmid = doc.split("|", 1)[0]
            doc = "\n".join(f"{pmid}-{copy + 1}" + line[len(pmid):] for line in doc.splitlines())
        out.append(doc + "\n\n")
    dst.write_text("".join(out), encoding="utf-8")
    return len(out)


def link_workers() -> set[int]:
    """Ray's block actors on this machine (their process title is ``ray::_BlockWorker…``)."""
    out = set()
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmdline = (p / "cmdline").read_bytes()
                if b"_BlockWorker" in cmdline or b"_LinkWorker" in cmdline:
                    out.add(int(p.name))
            except OSError:
                continue
    return out


def timed(cmd: list[str], env: dict[str, str], ray: bool) -> tuple[float, float, float, float]:
    """(wall s, driver peak RSS MB, largest peak RSS MB of a link worker process, with `ray`; the
    driver's CPU s, user + system: less moved than the wall time by other jobs on a shared machine)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=subprocess.DEVNULL)
    peak: dict[int, int] = {}
    while proc.poll() is None:
        for pid in {proc.pid} | (link_workers() if ray else set()):
            try:
                st = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in st.splitlines():
                if line.startswith("VmHWM:"):
                    peak[pid] = max(peak.get(pid, 0), int(line.split()[1]))
        time.sleep(0.2)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd!r} exited with {proc.returncode}")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    workers = [kb for pid, kb in peak.items() if pid != proc.pid]
    return wall, peak.get(proc.pid, 0) / 1024, max(workers, default=0) / 1024, cpu


def measure(runs: list[tuple[str, list[str], dict[str, str]]], base: list[str], out: Path, name: str,
            count: int, distinct: int | None) -> list[str]:
    """One table row per run: wall s, items/s (and distinct/s), peak RSS, output = first row's."""
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    rows, refs = [], {}
    for label, extra, more in runs:
        result = out / f"{name}-{len(rows)}.out"
        wall, rss, worker_rss, cpu = timed(base + ["--output", str(result)] + extra, {**env, **more}, "ray" in extra)
        data = result.read_bytes()
        # bf16 and fp32 queries, torch and ONNX Runtime give different score digits: compare like with like
        engine = more.get("KGNORM_QUERY_ENGINE", query_engine())
        path = (more.get("KGNORM_QUERY_PRECISION", "auto") if engine == "torch"
                else "fp32 " + more.get("KGNORM_NAME_VECTORS", "stored"))
        detector = extra[extra.index("--ner") + 1] if "--ner" in extra else None  # annotate: its own output
        ref = refs.setdefault((engine, path, detector), data)
        rate = f"{count / wall:,.1f}" + (f" | {distinct / wall:,.0f}" if distinct is not None else "")
        rows.append(f"| {label} | {wall:.1f} | {cpu:.1f} | {rate} | {rss:,.0f} | "
                    f"{f'{worker_rss:,.0f}' if worker_rss else '-'} | {'yes' if data == ref else 'NO'} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(ap)
    ap.add_argument("--model", required=True)
    ap.add_argument("--mentions", type=int, default=20_000)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--out", default=None, help="keep the corpus and outputs here (default: a temp dir)")
    ap.add_argument("--annotate-store", default=None, help="a store with the model's ontology (for annotate)")
    ap.add_argument("--skip-link", action="store_true")
    ap.add_argument("--ner", default=None, help="a trained detector for annotate (default: the dictionary tagger)")
    ap.add_argument("--abstracts", type=int, default=None, help="annotate this many abstracts (documents repeated)")
    ap.add_argument("--small-ner", default=None,
                    help="a second detector (e.g. a distilled student) timed alternately with --ner")
    ap.add_argument("--rounds", type=int, default=1, help="with --small-ner: rounds of the two detectors")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="kgnorm-throughput-"))
    out.mkdir(parents=True, exist_ok=True)
    mentions = out / "mentions.pubtator"
    n, distinct = corpus(mentions, args.mentions)
    docs = sum(1 for d in mentions.read_text(encoding="utf-8").split("\n\n") if d.strip())
    kgnorm = str(Path(sys.executable).with_name("kgnorm"))
    workers = [int(x) for x in args.workers.split(",") if x]
    ray = [(f"--engine ray --workers {w}", ["--engine", "ray", "--workers", str(w)], {}) for w in workers]
    machine_note = ("**The 2 CPU cores are shared with other engineers' jobs: figures are noisy; compare rows of "
                    "one table only.** The rows that differ in query engine or precision write different scores (bf16 vs fp32, "
                    "torch vs ONNX Runtime query vectors): each output is compared with the first row of its own engine and "
                    "precision.")
    body = ""
    if not args.skip_link:
        base = [kgnorm, "link", "--model", args.model, "--input", str(mentions), "--no-write", "-q"]
        before = {"KGNORM_QUERY_ENGINE": "torch", "KGNORM_QUERY_PRECISION": "fp32", "KGNORM_QUERY_ROWS": "8",
                  "KGNORM_LINK_LOOKAHEAD": "0", "KGNORM_DENSE_PRECISION": "fp32"}
        torch_auto = "bf16" if bf16_native() else "fp32"
        encoded = ("in-process, as the current defaults with every query encoded (KGNORM_NAME_VECTORS=encode: "
                   "the onnx path before stored name vectors)")
        rows = measure([("in-process, previous path (torch, fp32 queries in 8-row calls, no lookahead; fp32 dense "
                         "search)", [], before),
                        ("in-process, torch, fp32 queries in 32-row calls, lookahead 8,192 mentions; fp32 dense search",
                         [], {"KGNORM_QUERY_ENGINE": "torch", "KGNORM_QUERY_PRECISION": "fp32",
                              "KGNORM_DENSE_PRECISION": "fp32"}),
                        (f"in-process, torch query engine with its defaults (KGNORM_QUERY_ENGINE=torch: {torch_auto} "
                         "queries, 32-row calls, lookahead; bf16 search pre-filters where declared)", [],
                         {"KGNORM_QUERY_ENGINE": "torch"}),
                        (encoded, [], {"KGNORM_NAME_VECTORS": "encode"}),
                        (f"in-process, current defaults (query engine {query_engine()}: ONNX Runtime fp32 queries in "
                         "32-row calls, lookahead, fp32 exact searches, no torch; a query that is a dictionary name "
                         "takes the name's stored vector; calls found ahead beside the search where 2 cores)", [], {}),
                        ("in-process, as the current defaults with the query calls on 2 threads "
                         "(KGNORM_QUERY_WORKERS=2, opt-in)", [], {"KGNORM_QUERY_WORKERS": "2"}),
                        ("in-process, as the current defaults with the calls found ahead forced beside the search "
                         "(KGNORM_QUERY_OVERLAP=1; the default where query encoding has 2 cores)", [],
                         {"KGNORM_QUERY_OVERLAP": "1"}),
                        ("in-process, as the current defaults with the overlap forced off (KGNORM_QUERY_OVERLAP=0)", [],
                         {"KGNORM_QUERY_OVERLAP": "0"}),
                        (encoded + ", again", [], {"KGNORM_NAME_VECTORS": "encode"})]
                       + ray,
                       base, out, "link", n, distinct)
        body += (f"`kgnorm link --no-write` on {n:,} mentions ({distinct:,} distinct texts) of NCBI-disease + BC5CDR "
                 f"train/dev, model {args.model} (BioSyn, sparse + dense). Wall time of the whole process, start-up "
                 "(imports, model load; for Ray its start and the actors' model loads) included; the driver's CPU seconds (user + "
                 "system) beside it, less moved by other jobs. " + machine_note +
                 "\n\n| run | wall s | driver CPU s | mentions/s | distinct/s | driver peak RSS MB | worker peak RSS MB | "
                 "TSV = first row of its query engine and precision |\n|---|---|---|---|---|---|---|---|\n"
                 + "\n".join(rows) + "\n")
    if args.annotate_store:
        import json

        onto = json.loads((Path(args.model) / "kgnorm-model.json").read_text(encoding="utf-8"))["ontology"]
        ner = args.ner or f"dictionary:{onto}"
        texts, what = mentions, "the same documents"
        if args.abstracts:
            texts = out / "abstracts.pubtator"
            what = f"the same documents repeated under new ids ({docs:,} distinct)"
            docs = repeated(mentions, texts, args.abstracts)
        base = [kgnorm, "annotate", "--model", args.model, "--input", str(texts),
                "--input-format", "pubtator", "--no-write", "-q", "--store", args.annotate_store]
        main_ner = ["--ner", ner]
        previous = [] if args.abstracts else [("in-process, previous path (KGNORM_LINK_CACHE=0)", main_ner,
                                               {"KGNORM_LINK_CACHE": "0"})]
        current = [("in-process, current", main_ner, {})]
        if args.small_ner:  # the two detectors alternated, so each has a baseline from the same minutes
            current = (current + [(f"in-process, --ner {args.small_ner}", ["--ner", args.small_ner], {})]) * args.rounds
        rows = measure(previous + current + [(label, main_ner + extra, more) for label, extra, more in ray],
                       base, out, "annotate", docs, None)
        small = (f" Rows `--ner {args.small_ner}`: that detector instead, alternated with the first over "
                 f"{args.rounds} round(s); each PubTator is compared with the first of its own detector."
                 if args.small_ner else "")
        body += (f"\n`kgnorm annotate --ner {ner} --no-write` (detection, linking, annotate's defaults otherwise; "
                 f"PubTator out) on {docs:,} abstracts of {what}, same model, start-up included.{small} "
                 + machine_note + "\n\n| run | wall s | driver CPU s | abstracts/s | driver peak RSS MB | worker peak RSS MB | "
                 "PubTator = first row of its detector |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    append("throughput: link and annotate, in-process and --engine ray", body)


if __name__ == "__main__":
    main()
