"""Name vectors that fit (issue 51): a linker's name index stored as float32, float16 or 8 bits a
dimension (kgnorm.linking.vector_storage), side by side in one run: dev Acc@1 (`kgnorm eval link`)
and the whole `kgnorm link` process (wall, peak RSS) for each storage.

    python benchmarks/name_vectors.py --model DIR --work DIR [--corpora ncbi,bc5cdr] [--link bc5cdr]

--before DIR: a checkout of kgnorm from before this change (`git archive BASE | tar -x -C DIR`, with
DIR/kgnorm/cli and DIR/kgnorm/ontologies linked to DIR/cli and DIR/ontologies) whose `link` runs the
given model first, with PYTHONPATH=DIR: the reference row of the same run.

--model: a BioSyn model directory whose index holds float32 vectors (e.g. the untrained MEDIC model
`kgnorm train biosyn --ontology medic` writes without training data). For each storage the model is
copied to WORK/STORAGE with its index rebuilt from those float32 vectors in that storage (the
encoder, dictionary and sparse scorer unchanged), so the rows differ only in how the vectors are
stored. `link` runs on the --link corpus's mentions with --no-write (no store), its output to
/dev/null; peak RSS is the child's VmHWM (benchmarks/_report.run_child). The machine is shared
with other jobs: walls are noisy; the load average is in the section's header.
Figures go to benchmarks/LOG.md and benchmarks/results.jsonl (run `python benchmarks/results.py` after)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import OFFLINE_ENV, add_data_option, append, data_dir, kgnorm_stdout, record, run_child  # noqa: E402

DATA = data_dir()
CORPORA = {"ncbi": ("NCBI-disease dev", "ncbi-disease/NCBIdevelopset_corpus.txt"),
           "bc5cdr": ("BC5CDR-disease dev", "bc5cdr-disease/dev.concept"),
           "bc5cdr-chemical": ("BC5CDR-chemical dev", "bc5cdr-chemical/dev.concept")}


def variant(src: Path, dst: Path, storage: str) -> dict:
    """`src` copied to `dst` with its index's float32 vectors stored as `storage`; the index meta."""
    import numpy as np

    from kgnorm.linking.name_index import NameIndex
    from kgnorm.methods.model_dir import read_model_meta, update_meta

    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("index"))
    meta = read_model_meta(src)
    index = NameIndex.load(src / meta["index"]["path"], use_gpu=False)
    if index.kind != "flat" or index.storage != "fp32":
        sys.exit(f"{src}: the index is a {index.kind} {index.storage} one; give a flat float32 model")
    vectors = index.reconstruct(np.arange(index.ntotal))
    rebuilt = NameIndex.build(vectors, storage=storage, use_gpu=False)
    rebuilt.save(dst / meta["index"]["path"])
    update_meta(dst, index={**meta["index"], "storage": rebuilt.storage, "fp16": rebuilt.fp16})
    return rebuilt.meta()


def evaluate(model: Path, gold: Path) -> dict:
    """`kgnorm eval link` of the model on a gold file (unknown gold ids count as misses)."""
    rep = json.loads(kgnorm_stdout("eval", "link", "--model", model, "--gold", gold, "--allow-unknown-gold",
                                   "--format", "json", "--quiet"))
    return rep["full"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--storages", default="fp32,fp16,sq8")
    ap.add_argument("--corpora", default="ncbi,bc5cdr", help=f"dev sets scored ({', '.join(CORPORA)})")
    ap.add_argument("--link", default="bc5cdr", help="the corpus whose mentions the timed `link` runs on")
    ap.add_argument("--label", default="", help="what the model is, short (e.g. 'MEDIC, untrained')")
    ap.add_argument("--before", type=Path, default=None, help="a checkout from before (see above): the reference row")
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {**OFFLINE_ENV, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    os.environ.update(env)
    corpora = [c for c in args.corpora.split(",") if c]
    head = " | ".join(f"{CORPORA[c][0]} Acc@1 / Acc@5" for c in corpora)
    rows = [f"| storage | index file | {head} | `link` {CORPORA[args.link][0]}: wall | peak RSS |",
            "|---|---:|" + "---|" * len(corpora) + "---:|---:|"]
    results = {}
    link_input = str(DATA / CORPORA[args.link][1])
    if args.before:
        before = args.before.resolve()
        wall, rss = run_child([sys.executable, "-m", "kgnorm.cli", "link", "--model", str(args.model.resolve()),
                               "--input", link_input, "--output", "/dev/null", "--no-write", "-q"],
                              env={**env, "PYTHONPATH": str(before)})
        rows.append(f"| before (the model as given, kgnorm {before.name}) | | " + " | " * len(corpora)
                    + f"{wall:.1f} s | {rss:,.0f} MB |")
        results["before"] = ({}, wall, rss)
        print(rows[-1], flush=True)
    for storage in args.storages.split(","):
        model = work / storage
        variant(args.model.resolve(), model, storage)
        size = sum(f.stat().st_size for f in (model / "index").iterdir()) / 2**20
        accs = {c: evaluate(model, DATA / CORPORA[c][1]) for c in corpora}
        wall, rss = run_child([sys.executable, "-m", "kgnorm.cli", "link", "--model", str(model), "--input",
                               link_input, "--output", "/dev/null", "--no-write", "-q"], env=env)
        results[storage] = (accs, wall, rss)
        cells = " | ".join(f"{a['acc1']:.4f} / {a['acc5']:.4f} (n={a['n']})" for a in accs.values())
        rows.append(f"| {storage} | {size:,.0f} MB | {cells} | {wall:.1f} s | {rss:,.0f} MB |")
        print(rows[-1], flush=True)
    base = results.get("fp32")
    notes = []
    if base:
        for storage, (accs, _, rss) in results.items():
            if storage not in ("fp32", "before"):
                deltas = ", ".join(f"{CORPORA[c][0]} {accs[c]['acc1'] - base[0][c]['acc1']:+.4f}" for c in corpora)
                notes.append(f"- {storage} against fp32: Acc@1 {deltas}; peak RSS {rss - base[2]:+,.0f} MB")
    if "before" in results:
        for storage, (_, wall, rss) in results.items():
            if storage != "before":
                notes.append(f"- {storage} against before: peak RSS {rss - results['before'][2]:+,.0f} MB")
    body = "\n".join([f"Model: {args.label or args.model}; each storage's index rebuilt from its float32 vectors "
                      "(kgnorm.linking.vector_storage), memory-mapped at link time. `kgnorm eval link` "
                      "(--allow-unknown-gold) on each dev set; `kgnorm link --no-write` on the "
                      f"{CORPORA[args.link][0]} mentions, whole process, 1 thread, output to /dev/null. "
                      "Other jobs share the machine (load average above): walls are noisy.", "",
                      *rows, "", *notes])
    if args.no_append:
        print(body)
        return
    append("Name vectors: float32, float16 and 8-bit storage (issue 51)", body)
    short = "python benchmarks/name_vectors.py --model DIR" + (" --before BASE" if args.before else "") + " …"
    label = args.label or args.model.name
    for storage, (accs, wall, rss) in results.items():
        for c, a in accs.items():
            record("linking", f"{label}, {storage} name vectors, {CORPORA[c][0]} Acc@1", f"{a['acc1']:.4f}", short)
        what = "before (fp32)" if storage == "before" else f"{storage} name vectors"
        record("memory", f"link {CORPORA[args.link][0]}, {label}, {what}",
               f"peak RSS {rss:,.0f} MB, {wall:.1f} s; shared machine", short)


if __name__ == "__main__":
    main()
