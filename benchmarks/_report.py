"""Append a benchmark's figures, machine and command to benchmarks/LOG.md, record headline figures
in benchmarks/results.jsonl (docs/results.md is generated from it by benchmarks/results.py), and
the one `--data DIR` option through which benchmarks find their data."""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import time
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "benchmarks" / "LOG.md"
RESULTS = ROOT / "benchmarks" / "results.jsonl"
# Where benchmarks read their data when --data is not given: ../shared/data beside the checkout.
# Product code and tests never read it; only benchmark scripts do, through add_data_option.
DEFAULT_DATA = ROOT.parent / "shared" / "data"


def add_data_option(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """Give a benchmark's parser `--data DIR` (default DEFAULT_DATA, i.e. ../shared/data)."""
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, metavar="DIR",
                        help=help or f"folder holding the benchmark data sets (default: {DEFAULT_DATA})")


def data_dir(argv: list[str] | None = None) -> Path:
    """The `--data DIR` of the command line, read before the script's own parser runs (for paths a
    module sets at import time); DEFAULT_DATA when the flag is not given. The script's parser
    must also call add_data_option, so that --help lists the flag and parse_args accepts it."""
    pre = argparse.ArgumentParser(add_help=False)
    add_data_option(pre)
    args, _ = pre.parse_known_args(sys.argv[1:] if argv is None else argv)
    return Path(args.data).resolve()


def f4(x: float | None) -> str:
    """A figure with 4 decimals, or n/a (None, NaN)."""
    return "n/a" if x is None or x != x else f"{x:.4f}"


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu


def machine_short() -> str:
    """A short machine label for docs/results.md: cores, CPU model and RAM, e.g.
    "2 cores, AMD EPYC 7B13, 24 GiB"."""
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores, {cpu_model()}, {mem_gb:.0f} GiB"


def machine() -> str:
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    cpu = cpu_model()
    load = os.getloadavg()[0]
    return (f"{os.cpu_count()} cores ({cpu}), {mem_gb:.0f} GiB RAM, Python {platform.python_version()}, "
            f"{platform.system()}; 1-min load average {load:.1f} when the section was written")


def peak_rss_mb(children: bool = False) -> float:
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def command() -> str:
    return "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]])


def append(title: str, body: str) -> None:
    """Append a dated section (title, machine, command, body) to benchmarks/LOG.md."""
    path = LOG
    if not path.exists():
        path.write_text("# kgnorm benchmarks\n\nEach section is appended by a script in `benchmarks/`; "
                        "newest last. Figures are measured, with the machine and command that produced them.\n")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n## {title} ({stamp})\n\n- machine: {machine()}\n- command: `{command()}`\n\n{body.rstrip()}\n")
    print(body)


def record(job: str, what: str, figure: str, command_line: str | None = None,
           machine_label: str | None = None, date: str | None = None) -> dict:
    """Add one measured figure to benchmarks/results.jsonl: `job` is a table of docs/results.md
    (linking, annotate, hierarchy, matching, speed, memory, serve), `what` the row, `figure` the
    value as it should read. The command defaults to this script's command line, the machine to
    this one's cores, CPU model and RAM, the date to today (UTC). The newest row per (job, what)
    is the one docs/results.md shows: run `python benchmarks/results.py` after recording."""
    row = {"job": job, "what": what, "figure": figure,
           "command": command_line or command(),
           "machine": machine_label or machine_short(),
           "date": date or datetime.now(timezone.utc).strftime("%Y-%m-%d")}
    with RESULTS.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return row


def run_child(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """Run a command to completion: (wall seconds, peak RSS in MB of that one child).

    The peak is the child's own VmHWM, polled from /proc: the rusage of a waited-for child
    also counts the parent's memory copied at fork time, which would report a big benchmark
    process's peak instead of the command's."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL)
    status = Path(f"/proc/{proc.pid}/status")
    peak_kb = 0
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak_kb = max(peak_kb, int(line.split()[1]))
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd!r} exited with {proc.returncode}")
    return time.perf_counter() - t0, peak_kb / 1024


OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def kgnorm_stdout(*args: object) -> str:
    """`kgnorm ARGS` offline, as a user runs it: its stdout; the script exits with its stderr if it fails."""
    argv = [str(a) for a in args]
    out = subprocess.run([sys.executable, "-m", "kgnorm.cli", *argv], capture_output=True, text=True,
                         env={**os.environ, **OFFLINE_ENV})
    if out.returncode:
        sys.exit(f"kgnorm {' '.join(argv)} failed:\n{out.stderr}")
    return out.stdout
