"""link memory: malloc arenas (issue 51). The whole `kgnorm link --no-write` on a dev set's mentions,
runs alternated: kgnorm's own cap on glibc's malloc arenas (kgnorm.process_memory, the default)
against glibc's default (``MALLOC_ARENA_MAX=16``: 8 per core on 2 cores, which a user's variable
makes kgnorm leave alone). Peak RSS is the child's VmHWM (benchmarks/_report.run_child).

    python benchmarks/link_arenas.py --model DIR [--gold FILE] [--repeats 2]

The machine is shared with other jobs: walls are noisy (load average in the section's header)."""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import OFFLINE_ENV, add_data_option, append, data_dir, record, run_child  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--gold", default="bc5cdr-disease/dev.concept", help="under the data folder")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    gold = data_dir() / args.gold
    variants = {"kgnorm's cap (2 arenas)": {}, "glibc default (MALLOC_ARENA_MAX=16)": {"MALLOC_ARENA_MAX": "16"}}
    got: dict[str, list[tuple[float, float]]] = {v: [] for v in variants}
    for _ in range(args.repeats):
        for name, extra in variants.items():
            got[name].append(run_child([sys.executable, "-m", "kgnorm.cli", "link", "--model", str(args.model),
                                        "--input", str(gold), "--output", "/dev/null", "--no-write", "-q"],
                                       env={**OFFLINE_ENV, "OMP_NUM_THREADS": "1", **extra}))
            print(name, got[name][-1], flush=True)
    rows = ["| malloc arenas | peak RSS (each run) | wall (each run) |", "|---|---|---|"]
    for name, runs in got.items():
        rows.append(f"| {name} | {', '.join(f'{r:,.0f} MB' for _, r in runs)} | {', '.join(f'{w:.1f} s' for w, _ in runs)} |")
    body = (f"`kgnorm link --no-write` on {args.gold} with {args.label or args.model}, whole process, runs "
            "alternated, 1 thread (OMP). Other jobs share the machine: walls are noisy.\n\n" + "\n".join(rows))
    append("link memory: malloc arenas (issue 51)", body)
    best = {n: statistics.median(r for _, r in runs) for n, runs in got.items()}
    record("memory", f"link {args.gold}, {args.label or args.model.name}: malloc arenas capped / glibc's",
           " / ".join(f"{v:,.0f} MB" for v in best.values()) + " peak RSS (median)",
           "python benchmarks/link_arenas.py --model DIR")


if __name__ == "__main__":
    main()
