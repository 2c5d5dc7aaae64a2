"""Append a benchmark's figures, machine and command to BENCHMARKS.md."""
from __future__ import annotations

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
SHARED = Path(os.environ.get("KGNORM_SHARED", ROOT.parent / "shared"))


def f4(x: float | None) -> str:
    """A figure with 4 decimals, or n/a (None, NaN)."""
    return "n/a" if x is None or x != x else f"{x:.4f}"


def machine() -> str:
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0]
    return (f"{os.cpu_count()} cores ({cpu}), {mem_gb:.0f} GiB RAM, Python {platform.python_version()}, "
            f"{platform.system()}; 1-min load average {load:.1f} when the section was written")


def peak_rss_mb(children: bool = False) -> float:
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def command() -> str:
    return "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]])


def append(title: str, body: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    if not path.exists():
        path.write_text("# kgnorm benchmarks\n\nEach section is appended by a script in `benchmarks/`; "
                        "newest last. Figures are measured, with the machine and command that produced them.\n")
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n## {title} ({stamp})\n\n- machine: {machine()}\n- command: `{command()}`\n\n{body.rstrip()}\n")
    print(body)


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
