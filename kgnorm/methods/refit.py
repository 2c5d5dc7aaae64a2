"""Refit on train + dev (the BioSyn protocol), for every recipe that selects its epoch on dev.

Selection first: the recipe trains on the training mentions into ``OUT/selection`` and keeps the
dev-selected epoch ``E`` (its budget: ``--max-minutes``). Then the refit: the same recipe, from the
same starting encoder with the same seed, trains on train + dev mentions (the dev mentions join
the dictionary as the training mentions do) for ``E`` epochs into ``OUT`` with no dev selection --
the last finished epoch is the model (its budget: ``--refit-minutes``). Why: selection leaves the
dev mentions unused, 10-50% of a user's labelled data.

A recipe supplies one function, ``phase(Phase) -> TrainResult``, that trains and finishes one model
directory; :func:`run_phases` runs it once (no refit) or twice. Resume: a finished selection is
marked in ``OUT/selection``'s metadata and a finished refit in ``OUT``'s (with a digest of the
options and of the mention files), so an interrupted run continues where it stopped and never
retrains a finished phase; the loop's own checkpoints resume inside a phase. What remains: ``OUT``
(the refit model, its metadata recording the selection); ``OUT/selection`` is deleted once the
refit is written, unless ``--keep-checkpoints`` (then it is the dev-selected model, a complete
model directory ``link``/``eval link`` take: the non-refit figures come from it).
"""
from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kgnorm.digests import update_with_file
from kgnorm.errors import KgnormError
from kgnorm.progress import note

__all__ = ["Phase", "SELECTION_DIR", "file_sha256", "refit_wanted", "run_phases", "gold_in_training",
           "mark_held_out"]

SELECTION_DIR = "selection"
# options that may change between an interrupted run and its resumption (budgets, threads …)
VOLATILE = frozenset({"out", "resume", "threads", "keep_checkpoints", "max_minutes", "refit", "refit_minutes",
                      "rerank", "rerank_minutes"})


@dataclass(frozen=True)
class Phase:
    """One training run of a recipe."""

    out: Path
    refit: bool                      # the dev mentions are training mentions; no dev selection
    epochs: float                    # refit: the dev-selected count (fractional where a step budget
                                     # stopped the selected epoch inside: `train ner`)
    max_minutes: float | None        # this phase's budget


def file_sha256(path: str | Path) -> str:
    return update_with_file(hashlib.sha256(), path).hexdigest()


def _file_record(path: Path) -> dict[str, str]:
    return {"path": str(Path(path).resolve()), "sha256": file_sha256(path)}


def refit_wanted(opts: Any) -> bool:
    """``--refit`` as given, else on exactly when both --train and --dev are."""
    given = getattr(opts, "refit", None)
    both = getattr(opts, "train", None) is not None and getattr(opts, "dev", None) is not None
    if given and not both:
        raise KgnormError("--refit needs both --train and --dev (it refits on the two after selecting on dev)")
    return both if given is None else bool(given)


def _digest(opts: Any) -> str:
    """What a finished phase must have been trained with to be reused."""
    keep = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(opts).items() if k not in VOLATILE}
    keep["files"] = {k: file_sha256(getattr(opts, k)) for k in ("train", "dev", "reviewed") if getattr(opts, k, None)}
    return hashlib.sha1(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()


def _meta(directory: Path) -> dict[str, Any]:
    from kgnorm.methods.model_dir import META_FILE

    path = directory / META_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except ValueError:
        return {}


def _selected_epochs(best_epoch: float | None) -> float:
    """The epochs to refit for: the selected epoch (0: the starting model won; no epoch ran: 0);
    whole for an epoch budget, fractional where a step budget stopped the selected epoch inside."""
    if best_epoch is None:
        return 0
    e = round(float(best_epoch), 4)
    return int(e) if e == int(e) else e


def _trained(res: Any) -> float:
    """How far the refit got: its last recorded epoch (each is the model of its time)."""
    return max((float(r["epoch"]) for r in getattr(res, "history", None) or []), default=0.0)


def run_phases(opts: Any, phase: Callable[[Phase], Any], quiet: bool, refit_minutes: float | None,
               metric: str = "acc@1") -> dict[str, Any]:
    """Run ``phase`` once (no refit: into --out, as before) or twice (selection into
    ``OUT/selection``, refit into ``OUT``); the ``refit`` block written into OUT's metadata.
    ``metric``: the dev metric the selection maximised."""
    from kgnorm.methods.model_dir import update_meta

    out = Path(opts.out)
    if not refit_wanted(opts):
        phase(Phase(out, False, opts.epochs, opts.max_minutes))
        block: dict[str, Any] = {"refit": False}
        if getattr(opts, "dev", None) is not None:
            block.update(dev_file=_file_record(opts.dev), dev_held_out=True)
        update_meta(out, refit=block)
        return block
    digest = _digest(opts)
    done = _meta(out).get("refit") or {}
    if opts.resume and done.get("refit") and done.get("complete") and done.get("options_digest") == digest:
        note(f"{out} holds a finished refit of these options (resume): nothing to retrain", quiet)
        return done
    sel_dir = out / SELECTION_DIR
    selection = _meta(sel_dir).get("selection") or {}
    if not (opts.resume and selection.get("options_digest") == digest):
        note(f"selection: training on {opts.train} with dev selection on {opts.dev} → {sel_dir}", quiet)
        res = phase(Phase(sel_dir, False, opts.epochs, opts.max_minutes))
        selection = {"options_digest": digest, "best_epoch": res.best_epoch,
                     "epochs": _selected_epochs(res.best_epoch), "metric": metric, "dev_held_out": res.best_value,
                     "epochs_run": res.epochs_completed, "stop_reason": res.stop_reason,
                     "budget_minutes": opts.max_minutes, "history": res.history}
        update_meta(sel_dir, selection=selection)
        from kgnorm.training.checkpoints import drop_checkpoints

        drop_checkpoints(out)  # a refit checkpoint in OUT predates this selection: its E may differ
    else:
        note(f"selection finished earlier ({sel_dir}): {selection['epochs']} epoch(s), held-out dev {metric} "
             f"{selection['dev_held_out']}", quiet)
    epochs = selection["epochs"]
    note(f"refit: {epochs} epoch(s) on {opts.train} + {opts.dev} from the starting encoder (budget "
         f"{refit_minutes if refit_minutes is not None else 'none'} min) → {out}", quiet)
    res = phase(Phase(out, True, epochs, refit_minutes))
    trained = _trained(res) if epochs else 0
    trained = int(trained) if trained == int(trained) else trained
    block = {"refit": True, "options_digest": digest, "epochs_selected": epochs, "epochs_trained": trained,
             "complete": getattr(res, "stop_reason", "epochs") != "max_seconds", "selected_dev_metric": metric,
             "selected_dev_held_out": selection["dev_held_out"],
             **({"selected_dev_acc1_held_out": selection["dev_held_out"]} if metric == "acc@1" else {}),
             "selection": {k: v for k, v in selection.items() if k != "options_digest"},
             "budget_minutes": {"selection": opts.max_minutes, "refit": refit_minutes},
             "train_file": _file_record(opts.train), "dev_file": _file_record(opts.dev), "dev_held_out": False,
             "note": "trained on the dev mentions too: a dev figure of this model is not a held-out figure; "
                     "selected_dev_held_out is the dev-selected model's, measured before the refit"}
    if not block["complete"]:
        block["note_budget"] = (f"the refit budget ({refit_minutes:g} min) ended after {trained} of {epochs} "
                                "epoch(s); the model is the last finished epoch")
        # a warning changes how the model should be read: shown even when quiet
        note(f"warning: {block['note_budget']} (rerun with a larger --refit-minutes: the selection is kept, "
             "the refit continues from its checkpoint with --keep-checkpoints, else starts over)")
    update_meta(out, refit=block)
    if not opts.keep_checkpoints and sel_dir.is_dir():
        _drop_selection(sel_dir, keep_marker=not block["complete"])
        note(f"deleted the dev-selected model {sel_dir} (--keep-checkpoints keeps it)", quiet)
    note(f"refit done: {trained} epoch(s) on train + dev; held-out dev {metric} of the dev-selected model "
         f"{selection['dev_held_out']} (the refit model's own dev figure is not held out)", quiet)
    return block


def _drop_selection(sel_dir: Path, keep_marker: bool) -> None:
    """Delete the dev-selected model; ``keep_marker``: keep its metadata (E and the held-out figure),
    so that a rerun after a short refit does not select again."""
    from kgnorm.methods.model_dir import META_FILE

    if not keep_marker:
        shutil.rmtree(sel_dir)
        return
    for path in sel_dir.iterdir():
        if path.name != META_FILE:
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def gold_in_training(meta: dict[str, Any], gold: str | Path) -> str | None:
    """The line `eval` prints when ``gold`` is a file the (refit) model was trained on, else None (an
    ensemble: when one of its members was)."""
    for member in meta.get("member_meta") or ():
        line = gold_in_training(member, gold)
        if line:
            return line
    block = meta.get("refit") or {}
    if not block.get("refit") or gold is None or not Path(gold).is_file():
        return None
    sha = file_sha256(gold)
    for role in ("dev_file", "train_file"):
        rec = block.get(role) or {}
        if rec.get("sha256") == sha:
            which = "dev" if role == "dev_file" else "training"
            return (f"not held out: the model was refit on the mentions of {gold} (its {which} file, "
                    f"{rec.get('path')}); the dev-selected model's held-out dev {block.get('selected_dev_metric')} "
                    f"was {block.get('selected_dev_held_out')}")
    return None


def mark_held_out(report: dict[str, Any], meta: dict[str, Any], gold: str | Path) -> None:
    """An eval report scored with a model: ``gold_held_out`` (False when the model was refit on the
    gold file), and the line saying so among its notes."""
    line = gold_in_training(meta, gold)
    report["gold_held_out"] = line is None
    if line:
        report.setdefault("notes", []).append(line)
