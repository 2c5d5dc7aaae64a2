"""The README's first command, timed, from a fresh clone in a fresh venv with nothing beside it.

    python benchmarks/main_job.py [--ref HEAD] [--work DIR] [--install "pip install torch==2.13.0"]

Clones this repository at --ref into an empty folder (no ../shared beside it), creates a
venv with the running Python, installs torch (--install: the README's CPU-index line where
the public index is reachable; the local mirror's pinned CPU wheel here), then
`pip install -e ".[test]"`, then runs `bash scripts/main_job.sh` under `time`. Step times
come from the timestamps main_job.sh prints. Figures are appended to benchmarks/LOG.md, with
the load average before and after (the machine may be shared).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import ROOT, append  # noqa: E402

STEP = re.compile(r"^== (.*) \((\d\d:\d\d:\d\d)\)$")


def sh(cmd: str, cwd: Path, log: Path, env: dict | None = None) -> float:
    """Run a shell line, output appended to log; wall seconds (raises on failure)."""
    t0 = time.perf_counter()
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"\n$ {cmd}\n")
        fh.flush()
        proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, stdout=fh, stderr=subprocess.STDOUT,
                              env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise SystemExit(f"{cmd!r} failed with {proc.returncode}; see {log}")
    return time.perf_counter() - t0


def step_times(output: str, end: float) -> list[tuple[str, float]]:
    """(step title, seconds until the next step) from main_job.sh's '== title (HH:MM:SS)' lines."""
    marks = []
    for line in output.splitlines():
        m = STEP.match(line.strip())
        if m:
            t = datetime.strptime(m.group(2), "%H:%M:%S")
            marks.append((m.group(1), t.hour * 3600 + t.minute * 60 + t.second))
    out = []
    for (title, t), nxt in zip(marks, marks[1:] + [(None, None)]):
        if nxt[1] is not None:
            out.append((title, (nxt[1] - t) % 86400))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("--work", type=Path, default=None, help="empty folder to clone into (default: a temp dir)")
    ap.add_argument("--install", default="pip install torch==2.13.0",
                    help="the torch install line (default: the local mirror's CPU wheel)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="kgnorm-fresh-"))
    work.mkdir(parents=True, exist_ok=True)
    log = work / "main_job.log"
    commit = subprocess.run(["git", "rev-parse", "--short", args.ref], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()
    load0 = os.getloadavg()
    clone = work / "kgnorm"
    t_clone = sh(f"git clone -q {shlex.quote(str(ROOT))} kgnorm && cd kgnorm && git checkout -q {commit}", work, log)
    assert not (work / "shared").exists()
    env = {"PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for var in ("KGNORM_SHARED", "KGNORM_STORE", "KGNORM_OUT", "VIRTUAL_ENV"):
        os.environ.pop(var, None)
    t_venv = sh(f"{shlex.quote(sys.executable)} -m venv .venv", clone, log, env)
    act = ". .venv/bin/activate && "
    t_torch = sh(act + args.install, clone, log, env)
    t_pip = sh(act + 'pip install -e ".[test]"', clone, log, env)
    before = log.read_text(encoding="utf-8")
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t_job = sh(act + "bash scripts/main_job.sh", clone, log, env)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    job_out = log.read_text(encoding="utf-8")[len(before):]
    load1 = os.getloadavg()
    steps = step_times(job_out, t_job)
    rows = [f"| clone | {t_clone:.0f} s |", f"| venv | {t_venv:.0f} s |",
            f"| `{args.install}` | {t_torch:.0f} s |", f"| `pip install -e \".[test]\"` | {t_pip:.0f} s |",
            f"| **`bash scripts/main_job.sh`** | **{t_job:.0f} s ({t_job / 60:.1f} min)** |",
            f"| CPU time of `main_job.sh` (user + sys of all its processes) | {cpu:.0f} s ({cpu / 60:.1f} min) |",
            f"| whole first command | {t_venv + t_torch + t_pip + t_job:.0f} s "
            f"({(t_venv + t_torch + t_pip + t_job) / 60:.1f} min) |"]
    step_rows = [f"| {title} | {sec:.0f} s |" for title, sec in steps]
    body = (f"Fresh clone of commit `{commit}` into an empty folder (no `../shared` beside it), fresh venv "
            f"(Python {sys.version.split()[0]}), no KGNORM_* variables. Load average (1/5/15 min) before: "
            f"{load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}, after: {load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f}"
            + (": the 2 cores were shared with other jobs, so a quiet machine is faster (the CPU time "
               "row is the work itself, whatever the load).\n\n" if max(load0[0], load1[0]) > 1.5 else
               " (a quiet machine).\n\n")
            + "| part | wall |\n|---|---|\n" + "\n".join(rows) + "\n\n"
            "Main job steps (from its own timestamps; whole seconds):\n\n"
            "| step | wall |\n|---|---|\n" + "\n".join(step_rows) + "\n")
    append("Main job from a fresh clone", body)
    print(f"log: {log}")


if __name__ == "__main__":
    main()
