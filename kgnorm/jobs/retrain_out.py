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
- anything else in OUT/linker or OUT/ner is refused: retrain never writes over a model."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

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


def publish(out: Path, run: Any, store: str) -> None:
    """Write the Run, then rename the staged models into OUT (OUT/linker last); each step done again is a no-op."""
    from kgnorm.jobs.run import write_whole_run
    from kgnorm.stores.base import RunWrite

    write_whole_run(store, RunWrite(run))
    stage = staging(out)
    for sub in PARTS:
        if (stage / sub).exists() and not (out / sub).exists():
            (stage / sub).rename(out / sub)
    if stage.exists():
        shutil.rmtree(stage)


def _run_of(block: dict[str, Any]) -> Any:
    from kgnorm.stores.base import RunRecord

    fields = {f.name for f in dataclasses.fields(RunRecord)}
    return RunRecord(**{k: v for k, v in block["run"].items() if k in fields})
