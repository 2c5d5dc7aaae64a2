"""Guards around two LadybugDB (0.22) failures the crash torture found (benchmarks/torture.py):

- A write whose checkpoint cannot finish (a full disk, a file size limit) is reported failed,
  although LadybugDB already committed it ("post-commit checkpoint failed"); recovering that store
  then lost a re-ingested ontology altogether, or crashed the process (SIGSEGV). So a writer first
  makes sure there is room (`require_room`), and fails in one line, store untouched, when not.
- A store left in that state crashes whoever opens it. When a checkpoint's leftovers are beside
  the store, its recovery is first tried in a child process (`probe_recovery`): a crash there
  becomes one line saying what to do, not a dead `kgnorm` with a core dump.
- A store whose folder was made read-only failed with a bare PermissionError: `not_writable` is
  the one line for it."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from kgnorm.errors import StoreError

try:
    import resource  # POSIX only: elsewhere there is no file size limit to read
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

MIN_ROOM = 64 * 2**20   # bytes a write may need beyond the store's own size, at the least
LEFTOVERS = (".wal.checkpoint", ".shadow")  # what a checkpoint cut short leaves beside the store
_PROBE = "import sys, ladybug as lb; lb.Database(sys.argv[1]).close()"


class NoRoom(StoreError):
    """Too little free space, or too low a file size limit, to write the store safely."""


def needed_room(size: int) -> int:
    """What a write to a store of `size` bytes may need: a checkpoint writes the changed pages to a
    shadow file, then into the store (which grows): a quarter of the store, at least MIN_ROOM."""
    return max(MIN_ROOM, size // 4)


def require_room(path: Path) -> None:
    """Refuse to write a store when its filesystem has less free room, or the process a lower file
    size limit, than a write may need (`needed_room`)."""
    size = path.stat().st_size if path.exists() else 0
    need = needed_room(size)
    free = shutil.disk_usage(path.parent).free
    if free < need:
        raise NoRoom(f"not enough free space to write the store {path}: {free / 2**20:.0f} MiB free on its "
                         f"filesystem, a write may need {need / 2**20:.0f} MiB; free some space and run it again "
                         "(the store is unchanged)")
    if resource is None:
        return
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and limit < size + need:
        raise NoRoom(f"the file size limit ({limit / 2**20:.1f} MiB, ulimit -f) is too low to write the store "
                         f"{path} ({size / 2**20:.1f} MiB, a write may need {need / 2**20:.0f} MiB more): raise it and "
                         "run it again (the store is unchanged)")


def not_writable(path: Path, detail: str) -> StoreError:
    """The one line for a store this user may not write (its folder or files made read-only)."""
    return StoreError(f"cannot write the store {path}: permission denied ({detail}); give this user write permission "
                      "on its folder and files (chmod u+w) or run as their owner (the store is unchanged)")


def probe_recovery(path: Path, timeout: float = 120.0) -> str | None:
    """When a checkpoint's leftovers are beside the store, finish its recovery in a child first
    (as the next writer would); a child killed by a signal means LadybugDB crashes recovering it.
    A recovery that lost an ontology is undone (`_undo_lossy_recovery`): the line saying so."""
    if not any(Path(f"{path}{suffix}").exists() for suffix in LEFTOVERS):
        return None
    saved = _save_main_file(path)
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        _drop(saved)
        return None  # a slow recovery is the open's to wait for
    if done.returncode == 0 and saved is not None:
        return _undo_lossy_recovery(path, saved)
    _drop(saved)
    if done.returncode < 0:
        raise StoreError(f"store {path} cannot be recovered: LadybugDB crashes finishing the checkpoint a write left "
                         f"(a full disk or a file size limit?). The file {path.name} still holds the store as of its "
                         f"last checkpoint: move {path.name}.wal, {path.name}.wal.checkpoint and {path.name}.shadow "
                         "aside (keep them) to open it as it was then")


def _save_main_file(path: Path) -> Path | None:
    """A copy of the main file before recovery, when a writer was killed in the checkpoint after
    its commit (the log renamed `.wal.checkpoint`) and that writer is gone. LadybugDB 0.22 recovers
    such a store without what the last transaction COPYed: a re-ingest killed there came back
    without its ontology (found by the crash torture, benchmarks/LOG.md). The main file alone
    still reads as the store of the checkpoint before (the checkpoint's pages are in `.shadow` or
    in pages no header points to yet)."""
    if not Path(f"{path}.wal.checkpoint").exists() or not _holder_gone(path):
        return None
    saved = Path(f"{path}.before-recovery")
    try:
        shutil.copy2(path, saved)
    except OSError:
        return None
    return saved


def _holder_gone(path: Path) -> bool:
    """The process named in the store's .holder file (its last writer) no longer exists."""
    import json
    import os

    try:
        pid = int(json.loads(Path(f"{path}.holder").read_text(encoding="utf-8"))["pid"])
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return False


def _ontologies(path: Path) -> dict[str, tuple[int, int]] | None:
    """name -> (recorded concept count, concepts stored) of a store; None when it cannot be read."""
    import ladybug as lb

    try:
        db = lb.Database(str(path), read_only=True)
        conn = lb.Connection(db)
        try:
            rec = {n: int(c or 0) for n, c in conn.execute("MATCH (o:Ontology) RETURN o.name, o.concept_count").get_all()}
            have = dict(conn.execute("MATCH (c:Concept) RETURN c.ontology, count(c)").get_all())
        finally:
            conn.close()
            db.close()
    except RuntimeError:
        return None
    return {n: (c, int(have.get(n, 0))) for n, c in rec.items()}


def _undo_lossy_recovery(path: Path, saved: Path) -> str | None:
    """Keep the recovered store unless it lost an ontology the store held before the killed write
    (its record, or concepts short of the recorded count) and the saved main file holds every
    ontology whole; then put the saved main file back: the
    store as before that write, as a kill before its commit leaves it (its command, run again, does it)."""
    before, after = _ontologies(saved), _ontologies(path)
    whole = before is not None and all(rec == have for rec, have in before.values())
    lost = sorted(n for n in (before or {}) if after is not None and (
        n not in after or after[n][0] != after[n][1])) if whole else []
    if not lost:
        _drop(saved)
        return None
    for suffix in (".wal", *LEFTOVERS):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    saved.replace(path)
    return (f"the store's last write (by a process killed during LadybugDB's checkpoint) came back without ontology "
            f"{', '.join(lost)} when recovered: the store is as it was before that write; run that command again")


def _drop(saved: Path | None) -> None:
    if saved is not None:
        saved.unlink(missing_ok=True)
