"""Throughput of `kgnorm.text.normalize.normalize` (BioSyn's TextPreprocess plus HTML entities).

Moved here from a timed assertion in tests/test_text_normalize.py (issue 30): a unit test does
not time things. Two inputs: 20,000 synthetic dictionary-style names, one in ten with an HTML
entity (what the test timed), and every name and synonym of the MEDIC dictionary in
DATA (`--data DIR`, default ../shared/data) when it is there. Best of `--repeats` passes; appends a
table to benchmarks/LOG.md.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir  # noqa: E402

DATA = data_dir()  # --data DIR, default ../shared/data

from kgnorm.text.normalize import normalize  # noqa: E402

MEDIC = DATA / "medic" / "medic_06Jul2012.txt"


def synthetic(n: int = 20_000) -> list[str]:
    return [f"Fictional{'&apos;s' if i % 10 == 0 else ''} Syndrome, Type {i} (FS-{i})" for i in range(n)]


def medic_names(path: Path) -> list[str]:
    """Names and synonyms of the DNorm pipe layout `IDS||NAMES` (docs/formats.md, "DNorm pipe file"), entities kept."""
    names: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        names.extend(n for n in line.split("||", 1)[1].split("|") if n)
    return names


def best_seconds(names: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for n in names:
            normalize(n)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_option(ap)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    inputs = {"synthetic, 1 in 10 with an entity": synthetic()}
    if MEDIC.exists():
        inputs["MEDIC names and synonyms"] = medic_names(MEDIC)
    rows = ["| input | names | best of {} passes | names/s | µs/name |".format(args.repeats),
            "|---|---:|---:|---:|---:|"]
    for label, names in inputs.items():
        s = best_seconds(names, args.repeats)
        rows.append(f"| {label} | {len(names):,} | {s:.3f} s | {len(names) / s:,.0f} | {1e6 * s / len(names):.1f} |")
    append("text normalize throughput (issue 30: moved out of the unit tests)",
           "\n".join(rows) + "\n\nOne process, one thread, on a shared machine where other work runs at the same "
           "time: figures are noisy. The unit test this replaces asserted 20,000 synthetic names in under 2 s.")


if __name__ == "__main__":
    main()
