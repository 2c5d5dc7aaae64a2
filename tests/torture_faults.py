"""I/O faults for the torture harness (issue 52): a job run under a file size limit, with the store's
folder (or its outputs folder) made read-only midway, or on a nearly full filesystem; judged on its
error line, exit code, store and outputs. The jobs and the store helpers are torture_jobs'."""
from __future__ import annotations

import os
import resource
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kgnorm.errors import StoreError
from torture_jobs import KGNORM, Job, World, _writable, check, copy_store, reopen, snapshot, uri


@dataclass
class Fault:
    job: str
    how: str                 # "fsize" | "read-only" | "full-disk"
    code: int = 0
    stderr: str = ""
    same_store: bool = True  # the store holds what it held before the job
    sound: bool = True       # `kgnorm check` passes (after a writer reopened it)
    sound_before_reopen: bool = True
    out: str = "as before"   # the job's outputs folder: "as before", "staging left, named", "CHANGED", "written"
    ended_first: bool = False  # the job had ended before the read-only fault came: nothing was tested

    @property
    def one_line(self) -> bool:
        lines = [x for x in self.stderr.splitlines() if x.strip() and not x.startswith("kgnorm: ") or
                 x.startswith("kgnorm: error: ")]
        return len(lines) == 1 and lines[0].startswith("kgnorm: error: ") and "--debug" not in lines[0]

    @property
    def failed(self) -> bool:
        """A fault must end the job with one error line and a non-zero exit, the store as before
        (a job that still succeeded must leave a sound store with its full result)."""
        if self.code == 0:
            return not self.sound
        return not (self.one_line and self.same_store and self.sound and self.out in OUT_FINE)

    def line(self) -> str:
        err = next((x for x in self.stderr.splitlines() if x.startswith("kgnorm: error: ")), self.stderr[-300:])
        store = "as before" if self.same_store else "CHANGED"
        first = " (ended before the fault)" if self.ended_first else ""
        outputs = "" if self.out == "not judged" else f", outputs {self.out}"
        return (f"{self.job} under {self.how}{first}: exit {self.code}, store {store}{outputs}, "
                f"check {'passes' if self.sound else 'FAILS'}: {err.strip()}")


OUT_FINE = ("as before", "staging left, named", "not judged")


def read_only_binds() -> list[str] | None:
    """The command prefix under which a chmod binds the child: none for a user, `setpriv` dropping
    the capabilities that let root write through any mode; None where root has no setpriv."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def fault_cycle(w: World, job: Job, how: str, folder: Path, *, fsize: int | None = None, moment: float = 0.0,
                small_fs: Path | None = None, when: Callable[[Path], bool] | None = None) -> Fault:
    """Run `job` on a fresh copy of its base store under one fault: `fsize` (RLIMIT_FSIZE, bytes),
    the folder made read-only `moment` seconds after the start or once when(outputs folder) holds
    (how "read-only"; "read-only-out": the job's outputs folder instead, e.g. retrain's OUT), or the
    store on `small_fs` (a small filesystem already nearly full)."""
    if small_fs is not None:
        folder = small_fs / "store"
    copy_store(w.bases.get(job.base) if job.base else None, folder)
    out_dir = folder.parent / f"{folder.name}-out"
    if out_dir.exists():
        _writable(out_dir)
        shutil.rmtree(out_dir)
    out_dir.mkdir()
    before, out_before = snapshot(folder), tree(out_dir)
    f = Fault(job.name, how)
    prefix = (read_only_binds() or []) if how.startswith("read-only") else []
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HOME": str(out_dir)}

    def pre() -> None:
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    proc = subprocess.Popen([*prefix, *KGNORM, *job.args(out_dir), "--store", uri(folder)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, start_new_session=True, preexec_fn=pre, text=True)
    if how.startswith("read-only"):
        t0 = time.monotonic()
        while proc.poll() is None and not (when(out_dir) if when else time.monotonic() - t0 >= moment):
            time.sleep(0.01)
        f.ended_first = proc.poll() is not None
        target = out_dir if how == "read-only-out" else folder
        for p in [target, *target.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
    _, f.stderr = proc.communicate(timeout=1800)
    f.code = proc.returncode
    _writable(folder)
    _writable(out_dir)
    for p in folder.iterdir():
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    f.out = _out_state(out_dir, out_before, f) if job.outputs else "not judged"
    f.sound_before_reopen = not check(folder)
    try:
        reopen(folder)
    except StoreError:  # still no room to write (the full disk): judged as it is
        pass
    f.sound = not check(folder)
    f.same_store = snapshot(folder) == before
    return f


def tree(folder: Path) -> list[str]:
    """The paths under a folder (what a job wrote outside the store), but for its dot folders: the
    folder is the job's HOME too (caches)."""
    rel = (p.relative_to(folder) for p in folder.rglob("*"))
    return sorted(str(r) for r in rel if not r.parts[0].startswith("."))


def _out_state(out_dir: Path, before: list[str], f: Fault) -> str:
    """The outputs folder after a fault: as before, or (a job that failed) only an unfinished
    retrain staging folder that its error line names (OUT made read-only: it could not be removed)."""
    from kgnorm.jobs.retrain_out import BLOCK, STAGING
    from kgnorm.methods.model_dir import read_model_meta

    now = tree(out_dir)
    if now == before or f.code == 0:
        return "as before" if now == before else "written"
    new = [Path(x) for x in now if x not in before]
    stages = {Path(*p.parts[:p.parts.index(STAGING) + 1]) for p in new if STAGING in p.parts}
    others = [p for p in new if STAGING not in p.parts and not (out_dir / p).is_dir()]  # OUT itself is made
    unfinished = not others and not any(
        (out_dir / s / "linker").exists() and BLOCK in read_model_meta(out_dir / s / "linker") for s in stages)
    named = all(str(out_dir / s) in f.stderr for s in stages)
    return "staging left, named" if unfinished and named else "CHANGED"
