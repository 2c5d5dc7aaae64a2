"""link peak memory (issue 51): the whole `kgnorm link --no-write` on a dev set's mentions, before
against now, runs alternated in one run.

    python benchmarks/link_peak.py --model DIR --work DIR --before BASE [--gold FILE] [--repeats 2] [--write STORE]

--before BASE: a checkout of kgnorm from before the change (`git archive BASE | tar -x -C DIR`, with
DIR/kgnorm/cli and DIR/kgnorm/ontologies linked to DIR/cli and DIR/ontologies), run with
PYTHONPATH=DIR on the model as given. Now runs twice: on the model as given (a sparse scorer saved
as the float matrix names.npz) and on WORK/counts, a copy whose sparse scorer is saved as counts
(kgnorm.linking.sparse_rows; made here from the model's own dictionary, checked bit-identical to
the float matrix). Peak RSS is the child's VmHWM (benchmarks/_report.run_child); each run writes
its TSV under WORK, and the last run of each variant is compared byte for byte with before's.
`kgnorm eval link` (--allow-unknown-gold) on --eval (default: the same gold), before and now (counts),
gives Acc@1.
--write STORE: the default `link` that writes its run to a store, each run on a fresh copy of STORE
(an embedded LadybugDB file holding the model's ontology; copied outside the timed child), and one more
variant, now (counts) with the store's page cache (kgnorm.jobs.run.LINK_BUFFER_POOL_MB) at --small-pool
MB instead of its default, to show how much of the peak that cache is.
The machine is shared with other jobs: walls are noisy (load average in the section's header)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import OFFLINE_ENV, add_data_option, append, data_dir, record, run_child  # noqa: E402

ENV = {**OFFLINE_ENV, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def counts_copy(src: Path, dst: Path) -> None:
    """`src` copied to `dst` with its sparse scorer saved as counts (the same floats, checked)."""
    import numpy as np

    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.linking.sparse import SparseScorer
    from kgnorm.methods.model_dir import read_model_meta

    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("names.npz"))
    meta = read_model_meta(src)
    sparse_dir = meta.get("sparse", {}).get("path", "sparse")
    old = SparseScorer.load(src / sparse_dir)
    new = SparseScorer.load(src / sparse_dir)
    new.set_names(NameDictionary.load(src / meta.get("names", {}).get("path", "names")).names)
    a, b = old.names_matrix, new.names_matrix
    if not (np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data, b.data)):
        sys.exit(f"{src}: the counts do not rebuild the saved matrix bit for bit")
    new.save(dst / sparse_dir)


def fresh_store(src: Path, work: Path) -> Path:
    """A copy of the store `src` under `work`, nothing of an earlier run's left beside it."""
    home = work / "store"
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    shutil.copy2(src, home / src.name)
    return home / src.name


def link_cmd(model: Path, gold: Path, out: Path, store: Path | None, pool_mb: int | None) -> list[str]:
    """`kgnorm link` as a child: --no-write without a store; `pool_mb` sets the store's page cache."""
    opts = ["link", "--model", str(model), "--input", str(gold), "--output", str(out), "-q"]
    opts += ["--store", str(store)] if store is not None else ["--no-write"]
    if pool_mb is None:
        return [sys.executable, "-m", "kgnorm.cli", *opts]
    code = (f"import sys, kgnorm.jobs.run as r; r.LINK_BUFFER_POOL_MB = {pool_mb}; "
            f"sys.argv = ['kgnorm', *{opts!r}]; from kgnorm.cli.app import main; main()")
    return [sys.executable, "-c", code]


def acc1(model: Path, gold: Path, pythonpath: str | None) -> dict:
    env = {**ENV, **({"PYTHONPATH": pythonpath} if pythonpath else {})}
    out = subprocess.run([sys.executable, "-m", "kgnorm.cli", "eval", "link", "--model", str(model), "--gold",
                          str(gold), "--allow-unknown-gold", "--format", "json", "--quiet"],
                         env={**os.environ, **env}, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["full"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--gold", default="bc5cdr-disease/dev.concept", help="under the data folder")
    ap.add_argument("--eval", default=None, help="gold scored by `kgnorm eval link`, under the data folder "
                    "(default: --gold)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--label", default="")
    ap.add_argument("--write", type=Path, default=None, help="an embedded store holding the model's ontology: "
                    "runs write to a fresh copy of it (default: --no-write)")
    ap.add_argument("--small-pool", type=int, default=64, help="with --write: the page cache, MB, of the extra variant")
    ap.add_argument("--short", default="", help="the model in a few words, for docs/results.md (default: its folder)")
    args = ap.parse_args()
    gold, model, work = (data_dir() / args.gold).resolve(), args.model.resolve(), args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    # the children run from WORK: `python -m` puts the working directory first on sys.path, so from the
    # repository root "before" imported this checkout's kgnorm, not --before's (runs before 12:15 UTC
    # 2026-11-29 compared now with now)
    sys.argv[0] = str(Path(sys.argv[0]).resolve())  # the command LOG.md records stays relative to the repository
    os.chdir(work)
    counts_copy(model, work / "counts")
    before = str(args.before.resolve())
    variants = {"before (model as given)": (model, before), "now, model as given (names.npz)": (model, None),
                "now, sparse scorer as counts": (work / "counts", None)}
    if args.write is not None:
        variants[f"now, counts, store page cache {args.small_pool} MB"] = (work / "counts", None)
    store_src = args.write.resolve() if args.write is not None else None
    got: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for _ in range(args.repeats):
        for i, (name, (m, pp)) in enumerate(variants.items()):
            store = fresh_store(store_src, work) if store_src is not None else None
            cmd = link_cmd(m, gold, work / f"out{i}.tsv", store, args.small_pool if i == 3 else None)
            got[name].append(run_child(cmd, env={**ENV, **({"PYTHONPATH": pp} if pp else {})}))
            print(name, got[name][-1], flush=True)
    ref = (work / "out0.tsv").read_bytes()
    same = {name: (work / f"out{i}.tsv").read_bytes() == ref for i, name in enumerate(variants)}
    scored = args.eval or args.gold
    acc_before = acc1(model, (data_dir() / scored).resolve(), before)
    acc_now = acc1(work / "counts", (data_dir() / scored).resolve(), None)
    rows = ["| variant | peak RSS (each run) | wall (each run) | link output |", "|---|---|---|---|"]
    for name, runs in got.items():
        rows.append(f"| {name} | {', '.join(f'{r:,.0f} MB' for _, r in runs)} | "
                    f"{', '.join(f'{w:.1f} s' for w, _ in runs)} | {'reference' if name.startswith('before') else ('identical' if same[name] else 'DIFFERS')} |")
    label = args.label or model.name
    how = f"`kgnorm link` writing to a fresh copy of {args.write}" if args.write else "`kgnorm link --no-write`"
    body = (f"{how} on {args.gold} with {label}, whole process, runs alternated, 1 thread "
            "(OMP). Before: a checkout from before the change (PYTHONPATH). Other jobs share the machine: walls "
            "are noisy.\n\n" + "\n".join(rows) + "\n\n"
            f"- `kgnorm eval link` on {scored}: Acc@1 before {acc_before['acc1']:.4f}, now (counts) "
            f"{acc_now['acc1']:.4f}; Acc@5 {acc_before['acc5']:.4f} / {acc_now['acc5']:.4f} (n={acc_now['n']})")
    append("link peak memory: before / now (issue 51)", body)
    med = {n: statistics.median(r for _, r in runs) for n, runs in got.items()}
    wall = {n: min(w for w, _ in runs) for n, runs in got.items()}  # the warm run: the others wait on the disk
    names = list(variants)
    what = f"{'link+write' if args.write else 'link'} {Path(args.gold).parent.name} {Path(args.gold).stem}, " \
        f"{args.short or model.name}"
    cmd = "python benchmarks/link_peak.py " + ("… --write S" if args.write else "--model M --work W --before B")
    record("memory", f"{what}: peak RSS before / now",
           f"{med[names[0]]:,.0f} MB / {med[names[2]]:,.0f} MB (median of {args.repeats})", cmd)
    record("memory", f"{what}: fastest wall before / now",
           f"{wall[names[0]]:.0f} s / {wall[names[2]]:.0f} s (of {args.repeats})", cmd)
    if args.write is not None:
        from kgnorm.jobs.run import LINK_BUFFER_POOL_MB as LINK_POOL_DEFAULT

        record("memory", f"{what}: peak, page cache {LINK_POOL_DEFAULT} / {args.small_pool} MB",
               f"{med[names[2]]:,.0f} MB / {med[names[3]]:,.0f} MB (median of {args.repeats})", cmd)


if __name__ == "__main__":
    main()
