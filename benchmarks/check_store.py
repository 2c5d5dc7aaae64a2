"""How long `kgnorm check` takes to read a big embedded store (issue 52: the first thing to run
after a crash should not take longer than the crash cost).

The store is the one benchmarks/serve_pages.py builds through the product's own write path (a
StagedRun, as `annotate` writes): `--documents` documents of abstract length with their text,
about `--mentions` mentions IN them, each LINKED_TO one of `--concepts` concepts. `kgnorm check
--format json` then runs as a user runs it (a child process), `--repeat` times; the figure is the
median wall time and the child's peak RSS. The store must be found sound. `--store DIR` keeps
(and reuses) the built store.

    python benchmarks/check_store.py [--documents 100000 --mentions 1000000] [--store DIR]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import OFFLINE_ENV, append, record, run_child  # noqa: E402
from serve_pages import add_store_options, store_for  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_store_options(ap, repeat=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgnorm-check-bench-") as tmp:
        path, built = store_for(args, Path(tmp))
        cmd = [sys.executable, "-m", "kgnorm.cli", "check", "--format", "json", "--store", str(path)]
        report = json.loads(subprocess.run(cmd, capture_output=True, text=True).stdout)
        if not report["sound"]:
            sys.exit(f"the built store is not sound: {report['findings'][:3]}")
        runs = [run_child(cmd, OFFLINE_ENV) for _ in range(args.repeat)]
    wall = statistics.median(s for s, _ in runs)
    rss = max(m for _, m in runs)
    read = ", ".join(f"{n:,} {label}" for label, n in report["read"].items())
    body = (f"Store: {read}; built (or found) in {built:.0f} s through a StagedRun.\n\n"
            f"`kgnorm check --format json`: sound; {wall:.1f} s median wall of {args.repeat} runs "
            f"({', '.join(f'{s:.1f}' for s, _ in runs)} s), peak RSS {rss:.0f} MB.\n")
    if args.no_report:
        print(body)
        return
    append("kgnorm check: time to read a big store", body)
    if (args.documents, args.mentions) == (100_000, 1_000_000):
        docs, mentions = report["read"]["Document"], report["read"]["Mention"]
        record("reliability", f"kgnorm check, {docs / 1000:.0f}k documents and {mentions / 1000:.0f}k mentions (LadybugDB)",
               f"{wall:.1f} s, peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
