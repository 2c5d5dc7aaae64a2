"""Crash and I/O-fault torture (issue 52): every job that writes a store (ingest, re-ingest,
`link --write`, `annotate`, `place`, reviews posted to `kgnorm serve`, `retrain`) SIGKILLed at `--kills`
moments, one drawn at random (seeded) in each n-th of the job's duration as measured now, on a small
embedded (LadybugDB) store built from the toy ontology of the tests. The duration is measured in the
session, not taken from an earlier one: the median of the last three whole runs (an uninterrupted run
timed first, then every cycle whose job ended before its kill, every run again on a store its kill left
untouched, the pace of a review session posting the rest, and a run timed afresh after 8 cycles that
measured none), so the moments follow the machine's load (tests/torture_jobs.py's Pacer). A moment that
came after the job had ended is no kill: it is counted apart and drawn again in the same n-th (up to
`--tries` times). After each kill: the store
opens, `kgnorm check` passes right after the kill (what a dead process left, which the next writer
clears, is a note) and again once a writer reopened it, `kgnorm query` right after the kill shows the
store as it was before the job or as an uninterrupted run leaves it (no half run), every review the API
acknowledged is in the store, and the job run again ends with what an uninterrupted run gives (compared
by content: concepts, mentions, links, placements, current reviews); a killed `retrain` must leave no
half-written OUT/linker or OUT/ner (either absent or whole and loading) and its run again must leave
both, with the Run they name. Then the I/O faults: each job under a file size limit (RLIMIT_FSIZE) a
little over the store's size, with the store's folder made read-only halfway through its run (as root:
under setpriv without the capabilities that let root write through a chmod), and (where this runs as
root and may mount a tmpfs) with the store on a filesystem with 1 MiB left: one `kgnorm: error:` line,
exit non-zero, the store as before and sound. `retrain` also under a limit below its model's largest
file (reached as it writes its models) and with OUT made read-only, its folders made read-only once its
training began (its staging folder appeared), and OUT must be as before too (or, OUT read-only, hold
only the unfinished staging folder its error line names). Reviews are killed, not run under faults.

`--kills 0` runs the faults only.

    python benchmarks/torture.py --kills 50 [--min-kills 50] [--job link …] [--seed N] [--at-checkpoint S]
                                 [--after-write S] [--bolt] [--no-faults] [--no-record]

The cases run in-process from tests/torture_jobs.py and tests/torture_faults.py (the CI test,
tests/test_torture.py, runs a few kills per job from the same code). `--bolt` tortures an ArcadeDB
server over Bolt (tests/bolt_server.py) in place of LadybugDB, rebuilt from the base stores' commands
for every cycle; no I/O faults there.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
from _report import ROOT, append, record  # noqa: E402
import torture_faults as tf  # noqa: E402
import torture_jobs as tj  # noqa: E402

JOBS = ["ingest", "reingest", "link", "annotate", "place", "reviews", "retrain"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=50, help="kill moments per job (default 50)")
    ap.add_argument("--job", action="append", choices=JOBS, help="only this job (repeatable); default all")
    ap.add_argument("--seed", type=int, default=52)
    ap.add_argument("--no-faults", action="store_true", help="kills only")
    ap.add_argument("--at-checkpoint", type=float, default=0.0, metavar="S",
                    help="kill moments spread over S seconds from when LadybugDB began a checkpoint (its log "
                         "renamed .wal.checkpoint), not over the whole run")
    ap.add_argument("--after-write", type=float, default=0.0, metavar="S",
                    help="kill moments spread over S seconds from when the job first changed the store")
    ap.add_argument("--min-kills", type=int, default=0, metavar="N",
                    help="more moments (in the first 90%% of the run) until N of them came before the job ended")
    ap.add_argument("--tries", type=int, default=3, metavar="N",
                    help="moments drawn in one n-th of the run while the job ended before them (default 3)")
    ap.add_argument("--bolt", action="store_true",
                    help="a Bolt store in place of LadybugDB: an ArcadeDB server on 127.0.0.1 (tests/bolt_server.py; "
                         "the arcadedb-embedded test extra), rebuilt for every cycle; no I/O faults")
    ap.add_argument("--no-record", action="store_true", help="print only; no LOG.md section, no results row")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _stop_early)
    chosen = args.job or JOBS
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="kgnorm-torture-") as tmp, _bolt(args.bolt, Path(tmp)) as server:
        root = Path(tmp)
        w = tj.build_world(root / "world", tj.write_tiny_bert(root / "bert"))
        if server is not None:
            tj.BOLT = tj.Bolt(server.uri, tj.bolt_recipes(w))
        tallies = []
        for name in (chosen if args.kills else []):
            if STOPPED.is_set():
                break
            t0 = time.perf_counter()
            t = tj.torture(w, name, args.kills, args.seed, root / "work", log=lambda s: print("  " + s, flush=True),
                           stop=lambda: STOPPED.is_set(),
                           checkpoint_window=args.at_checkpoint, min_kills=args.min_kills,
                           write_window=args.after_write, tries=args.tries)
            tallies.append((t, time.perf_counter() - t0))
            print(f"{name}: {t.kills} kills ({t.touched} after it changed the store), {t.ended_first} moments after "
                  f"the job's end, {len(t.failures)} failure(s), "
                  f"check failing before a writer reopened: {t.check_failed_before_reopen}, "
                  f"half run seen by query: {t.half_run_seen}", flush=True)
        faults = [] if args.no_faults or args.bolt or STOPPED.is_set() else run_faults(w, chosen, root)
    body = _table(tallies, faults, args.kills, args.min_kills)
    failures = sum(len(t.failures) for t, _ in tallies) + sum(1 for f in faults if f.failed)
    if args.no_record:
        print(body)
    else:
        window = f" in the {args.at_checkpoint:g} s after a checkpoint began" if args.at_checkpoint else ""
        window += f" in the {args.after_write:g} s after its first write" if args.after_write else ""
        window += BOLT_NAME if args.bolt else ""
        window += " (stopped early)" if STOPPED.is_set() else ""
        title = f"Crash torture: {', '.join(chosen)} x {args.kills} SIGKILL moments{window}" if args.kills else ""
        faults_title = "" if args.no_faults or args.bolt else \
            f"I/O faults: {', '.join(n for n in chosen if n != 'reviews')}"
        append(" and ".join(t for t in (title, faults_title) if t), body)
        for t, _ in tallies:
            where = (" at checkpoint" if args.at_checkpoint else "") + (", Bolt" if args.bolt else "")  # rows < 200 chars
            record("reliability", f"SIGKILL torture, {t.job}{where}",
                   f"{len(t.failures)} failed of {t.kills} kills ({t.touched} after it wrote, {t.ended_first} too late"
                   + (", stopped)" if t.stopped else ")"), _for_job(t.job))  # stopped early (SIGTERM)
        if faults:
            jobs = sorted({f.job for f in faults})
            what = "I/O faults (file size limit, read-only folder, full disk): failed" if len(jobs) > 1 else \
                f"I/O faults, {jobs[0]}: failed"
            record("reliability", what, f"{sum(1 for f in faults if f.failed)} of {len(faults)} cases over "
                   f"{len(jobs)} job(s): {', '.join(sorted({f.how for f in faults}))}")
    return 1 if failures else 0


BOLT_NAME = " on ArcadeDB over Bolt"


def _for_job(job: str) -> str:
    """This command line with only `job`'s --job (the cycles of one job do not depend on the others;
    the row stays under 200 characters)."""
    argv, keep = sys.argv[1:], []
    for i, a in enumerate(argv):
        if a == "--job" or (i and argv[i - 1] == "--job") or a.startswith("--job="):
            continue
        keep.append(a)
    return "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], ROOT), *keep, "--job", job])


@contextlib.contextmanager
def _bolt(wanted: bool, root: Path) -> Iterator[Any]:
    """tests/bolt_server.py's ArcadeDB server for --bolt (its database named for every kgnorm the
    torture starts), stopped at the end; None without --bolt."""
    if not wanted:
        yield None
        return
    from bolt_server import ArcadeDBProcess

    (root / "arcadedb").mkdir()
    server = ArcadeDBProcess(root / "arcadedb")
    os.environ["KGNORM_NEO4J_DATABASE"] = server.database
    try:
        yield server
    finally:
        tj.BOLT = None
        server.stop()


STOPPED = threading.Event()  # set by SIGTERM: the cycles end early, what ran is recorded as such


def _stop_early(signum: int, frame: Any) -> None:
    STOPPED.set()
    print("SIGTERM: stopping after the cycle under way; what ran is recorded", flush=True)


def run_faults(w: tj.World, chosen: list[str], root: Path) -> list[tf.Fault]:
    """Each job under a file size limit, its store folder made read-only midway through its run,
    and its store on a small filesystem with 1 MiB left. retrain also under a limit below its
    model's largest file (reached as it writes the models) and with OUT made read-only; its
    read-only folders once it began training (its staging folder appeared), the others' halfway
    through an uninterrupted run timed now."""
    out: list[tf.Fault] = []
    for name in (n for n in chosen if n != "reviews"):
        job = w.jobs[name]
        base = w.bases.get(job.base) if job.base else None
        size = sum(p.stat().st_size for p in base.iterdir()) if base else 0
        cases = [("fsize", dict(fsize=max(size, 64 * 1024) + 64 * 1024))]
        if name == "retrain":
            largest = max(p.stat().st_size for p in w.model.rglob("*") if p.is_file())
            cases.append(("fsize-model", dict(fsize=largest // 2)))
        if tf.read_only_binds() is not None:
            when = dict(when=tj.retrain_staged) if name == "retrain" else dict(moment=_midway(w, name))
            cases.append(("read-only", when))
            cases += [("read-only-out", when)] if name == "retrain" else []
        small = _small_fs(root / "small" / name, size + 2**20)
        if small is not None:
            cases.append(("full-disk", dict(small_fs=small)))
        try:
            for how, kw in cases:
                f = tf.fault_cycle(w, job, how, root / "faults" / name, **kw)
                out.append(f)
                print(("  FAIL " if f.failed else "  ") + f.line(), flush=True)
                if f.failed:
                    print("    stderr: " + f.stderr[-1500:].replace("\n", "\n    "), flush=True)
        finally:
            if small is not None:
                subprocess.run(["umount", str(small)], check=False)
    return out


def _midway(w: tj.World, name: str) -> float:
    """Half of an uninterrupted run's seconds."""
    job = w.jobs[name]
    folder = tj.copy_store(w.bases.get(job.base) if job.base else None, w.root.parent / "timing")
    return tj.timed_run(job, folder) / 2


def _small_fs(where: Path, size: int) -> Path | None:
    """A tmpfs of `size` bytes (mounting needs root; None where it cannot be mounted)."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return where if done.returncode == 0 else None


def _table(tallies: list, faults: list, kills: int, min_kills: int = 0) -> str:
    rows = ["| job | run s, first (min-max drawn over) | moments | kills | moments after the job's end "
            "| kills after it changed the store | check failed right after the kill "
            "| half run seen by query right after | failed cycles | wall s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for t, wall in tallies:
        spread = f" ({min(t.spans):.1f}-{max(t.spans):.1f})" if t.spans else ""
        rows.append(f"| {t.job} | {t.seconds:.1f}{spread} | {len(t.cycles)} | {t.kills} | {t.ended_first} | "
                    f"{t.touched} | {t.check_failed_before_reopen} | {t.half_run_seen} | {len(t.failures)} | {wall:.0f} |")
    more = (f"; then more moments, each drawn in the first 90 % of the run, until {min_kills} kills had landed"
            if min_kills else "")
    early = " Stopped early (SIGTERM): the moments column says how many ran." if STOPPED.is_set() else ""
    lines = [f"{kills} n-ths of the run per job, a moment drawn in each over the duration measured in the session "
             f"(drawn again there when it came after the job's end){more}; only kills that landed while the job "
             f"ran are counted.{early}", "", *rows] if tallies else []
    fails = [f"- FAIL {c.why()}" for t, _ in tallies for c in t.failures]
    lines += ["", *fails] if fails else []
    if faults:
        lines += ["I/O faults:", ""] + [f"- {'FAIL ' if f.failed else ''}{f.line()}" for f in faults]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
