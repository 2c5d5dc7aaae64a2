"""Where `kgnorm retrain` writes: OUT/linker and OUT/ner appear whole or not at all, so a retrain
killed at any moment leaves nothing that `annotate` or a person would take for a finished model,
and the same command run again finishes (issue 52's crash torture).

Both models are trained into ``OUT/.retrain-partial/``. The commit point is the staged linker's
kgnorm-model.json gaining a ``retrained_on`` block (a digest of the inputs and the Run to record),
written atomically; after it the Run is written (its uid is the model's, so writing it again
replaces it), OUT/ner and OUT/linker are renamed into place, and the staging folder goes. The
next retrain with the same OUT:

- a staging folder without the block (killed while training) is removed and the models trained again;
- one with it (killed while publishing) is published: the Run written again, the renames finished;
- OUT/linker with the block and the same inputs (the retrain had finished) is not trained again:
  its Run is written again (a no-op when it is there) and the command ends;
- anything else in OUT/linker or OUT/ner is refused: retrain never writes over a model.

A retrain that fails instead (a full disk, a file size limit, OUT or the store made read-only
midway) undoes what it wrote (`rolled_back`): OUT and the store as before, one line saying what to
do. Only once its Run is in the store does a failure leave the models staged, for the run again.

The guards that refuse a retrained model (kgnorm.jobs.retrain, kgnorm.jobs.retrain_judge) put the
given one back in the staging folder through the helpers at the end (copy_detector,
keep_given_detector, keep_given_linker)."""
from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from kgnorm.errors import KgnormError

STAGING = ".retrain-partial"
BLOCK = "retrained_on"
PARTS = ("ner", "linker")  # renamed in this order: OUT/linker, the one annotate's --model needs, last


def staging(out: Path) -> Path:
    return out / STAGING


def inputs_digest(model: Path, ner: Path | None, seed: int, reviews: list[tuple[str, str, Any]],
                  done: set[str], options: dict[str, Any] | None = None) -> str:
    """What a retrain learns from, digested: the same digest again means the same models would be trained."""
    rows = sorted((d, m, r.decision, r.concept_uid, r.start, r.end, r.type) for d, m, r in reviews)
    key = [str(model.resolve()), str(ner.resolve()) if ner is not None else None, seed, rows, sorted(done)]
    if options is not None:
        key.append(options)
    return hashlib.sha256(json.dumps(key, default=str).encode("utf-8")).hexdigest()[:24]


def _block(linker: Path) -> dict[str, Any] | None:
    from kgnorm.methods.model_dir import META_FILE

    try:
        meta = json.loads((linker / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    block = meta.get(BLOCK) if isinstance(meta, dict) else None
    return block if isinstance(block, dict) and isinstance(block.get("run"), dict) else None


def refuse_foreign(out: Path) -> None:
    """Before anything is read: refuse an OUT/linker or OUT/ner that no retrain published."""
    linker_ok = (out / "linker").exists() and _block(out / "linker") is not None
    staged_ok = _block(staging(out) / "linker") is not None
    for sub in PARTS:
        p = out / sub
        if p.exists() and not (linker_ok or (sub == "ner" and staged_ok)):
            raise KgnormError(f"{p} exists: retrain writes new model directories; give another --out")


def settle(out: Path, digest: str, store: str, notes: list[str]) -> Any | None:
    """Settle what an earlier retrain into `out` left (see the module docstring): the RunRecord of a
    finished retrain of the same inputs (published now if it was not yet), or None: train."""
    stage = staging(out)
    if stage.exists():
        block = _block(stage / "linker")
        if block is None:
            shutil.rmtree(stage)
            notes.append(f"removed {stage}: an unfinished retrain left it (stopped before its models were complete)")
        else:
            publish(out, _run_of(block), store)
            notes.append(f"published the models of a retrain stopped as it published them (run {block['run']['uid']})")
    block = _block(out / "linker") if (out / "linker").exists() else None
    if block is None:
        return None
    if block.get("inputs") != digest:
        raise KgnormError(f"{out / 'linker'} exists: a retrain on other reviews or models wrote it; give another --out")
    return _run_of(block)


def commit(out: Path, run: Any, digest: str) -> None:
    """The commit point: the staged linker's meta records the inputs and its Run (atomically)."""
    from kgnorm.methods.model_dir import update_meta

    update_meta(staging(out) / "linker", **{BLOCK: {"inputs": digest, "run": dataclasses.asdict(run)}})


class Unpublished(KgnormError):
    """The Run is in the store but its models could not be moved into OUT: the run again does it."""


def publish(out: Path, run: Any, store: str) -> None:
    """Write the Run, then rename the staged models into OUT (OUT/linker last); each step done again is a no-op."""
    from kgnorm.jobs.run import write_whole_run
    from kgnorm.stores.base import RunWrite

    write_whole_run(store, RunWrite(run))
    stage = staging(out)
    try:
        for sub in PARTS:
            if (stage / sub).exists() and not (out / sub).exists():
                (stage / sub).rename(out / sub)
        if stage.exists():
            shutil.rmtree(stage)
    except OSError as exc:
        raise Unpublished(f"retrain {run.uid} is recorded but its models could not be moved from {stage} into {out} "
                          f"({exc.strerror}): {ADVICE.get(exc.errno, 'make it writable')} and run the same command "
                          "again: it moves them (nothing trained again)") from None


# what to do about a write that failed, by its errno
ADVICE = {errno.EFBIG: "raise the file size limit (ulimit -f)", errno.ENOSPC: "free some space on its filesystem",
          errno.EDQUOT: "free some of this user's disk quota", errno.EROFS: "mount it writable",
          errno.EACCES: "give this user write permission on it (chmod u+w)",
          errno.EPERM: "give this user write permission on it (chmod u+w)"}


def write_errno(exc: BaseException, out: Path) -> int | None:
    """Why writing under `out` failed, when it did for want of room or permission: the errno of the
    OSError in the exception's chain; else (torch and safetensors wrap a short write in their own
    errors) that of writing a 1 MiB scratch file there now. None: the failure was something else."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in ADVICE:
            return seen.errno
        seen = seen.__cause__ or seen.__context__
    probe = out / f".write-probe-{os.getpid()}"
    try:
        with open(probe, "wb") as fh:
            fh.write(b"\0" * 2**20)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as err:
        return err.errno if err.errno in ADVICE else None
    finally:
        try:
            probe.unlink()
        except OSError:
            pass
    return None


@contextmanager
def rolled_back(out: Path) -> Iterator[None]:
    """Train and publish inside this: a failure (not a kill, not Ctrl-C) before the Run is in the
    store removes the staging folder, and OUT when this retrain made it, and says in one line what
    to do: OUT and the store as they were."""
    made = not out.exists()
    try:
        yield
    except (Unpublished, KeyboardInterrupt):
        raise
    except Exception as exc:
        stage = staging(out)
        if isinstance(exc, KgnormError):  # the store's own line (no room, read-only), OUT's state added
            raise KgnormError(f"{exc}; {_remove(out, made)}") from None
        why = write_errno(exc, stage if stage.is_dir() else out if out.is_dir() else out.parent)
        left = _remove(out, made)
        if why is None:
            raise
        raise KgnormError(f"cannot write the retrained models into {out}: {os.strerror(why)}; {ADVICE[why]} and run "
                          f"the same command again (the store is unchanged; {left})") from None


def _remove(out: Path, made: bool) -> str:
    """Remove the staging folder (and OUT when empty and made by this retrain): the words for what is left."""
    stage = staging(out)
    try:
        if stage.exists():
            shutil.rmtree(stage)
        if made and out.exists():
            out.rmdir()
    except OSError:
        return f"{stage} is left unfinished: the next retrain into {out} removes it"
    return f"{out} as before"


def _run_of(block: dict[str, Any]) -> Any:
    from kgnorm.stores.base import RunRecord

    fields = {f.name for f in dataclasses.fields(RunRecord)}
    return RunRecord(**{k: v for k, v in block["run"].items() if k in fields})


# ---- OUT holding a given model again (a retrained one no evidence supports is not shipped)

def copy_detector(ner: Path, out: Path, confidence: bool = False) -> None:
    """The detector as it was, without the mention confidences fitted for other linkers (with
    `confidence`: with them, for when OUT/linker is the given linker too)."""
    from kgnorm.methods.mention_confidence import KEY
    from kgnorm.methods.model_dir import read_model_meta, write_model_meta

    shutil.copytree(ner, out, ignore=shutil.ignore_patterns("checkpoints"))
    if confidence:
        return
    meta = read_model_meta(out)
    meta.pop(KEY, None)
    write_model_meta(out, meta)


def keep_given_detector(ner: Path, out: Path, report: Any, why: str) -> None:
    """OUT/ner becomes the given detector again: a retrained one no held-back evidence supports
    is not shipped (a few done documents can teach it their spans and cost it elsewhere)."""
    shutil.rmtree(out / "ner")
    copy_detector(ner, out / "ner")
    report.ner = {**report.ner, "kept_given": why}
    report.notes.append(f"the retrained detector was not kept ({why}): OUT/ner is the given detector")


def keep_given_linker(model: Path, stage: Path, report: Any, why: str) -> None:
    """OUT/linker becomes a copy of the given linker (its meta, hence its identity for the
    detector's stored confidences, unchanged)."""
    shutil.rmtree(stage / "linker")
    shutil.copytree(model, stage / "linker", ignore=shutil.ignore_patterns("checkpoints"))
    report.linker = {**report.linker, "kept_given": why}
