"""A reranker trained inside its linker's model directory (`train biosyn --rerank`): the rerank recipe
(kgnorm.methods.rerank.recipe) writes ``DIR/reranker``, and the linker's metadata gains a
``reranker`` block, so `link`, `annotate` and `eval link --model DIR` rank through it with no other
flag (kgnorm.jobs.models.open_linker). The block's path is relative: the directory moves as one."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.progress import note

__all__ = ["RERANKER_DIR", "train_inside"]

RERANKER_DIR = "reranker"


def train_inside(model_dir: Path, train: Path, dev: Path | None, *, refit: bool, input_format: str | None,
                 encoder: Path | None, max_minutes: float | None, seed: int, resume: bool, threads: int | None,
                 keep_checkpoints: bool, store: str | None, quiet: bool) -> dict[str, Any]:
    """Train the reranker over ``model_dir``'s linker. A refit linker's dictionary holds the dev
    mentions, so dev cannot select: the reranker then trains on train + dev and keeps its last
    epoch; otherwise it selects its epoch on ``dev``. The ``reranker`` block written."""
    from kgnorm.methods.model_dir import read_model_meta, update_meta
    from kgnorm.methods.refit import file_sha256
    from kgnorm.methods.rerank.recipe import train_reranker as train_rerank

    model_dir = Path(model_dir)
    files = [Path(train)] + ([Path(dev)] if refit and dev is not None else [])
    selection_dev = None if refit else dev
    trained_on = [{"path": str(p.resolve()), "sha256": file_sha256(p)} for p in files]
    done = read_model_meta(model_dir).get("reranker") or {}
    if resume and done.get("trained_on") == trained_on and (model_dir / done.get("path", RERANKER_DIR)).is_dir():
        note(f"{model_dir / RERANKER_DIR} holds a finished reranker over these mentions (resume)", quiet)
        return done
    out = model_dir / RERANKER_DIR
    note(f"reranker: trained on the linker's candidates for {' + '.join(map(str, files))}"
         + (f", selected on {dev}" if selection_dev else ", no dev selection (the linker was refit on dev)"), quiet)
    train_rerank(out, linker=model_dir, train=files if len(files) > 1 else files[0], dev=selection_dev,
                 input_format=input_format, encoder=encoder, max_minutes=max_minutes, seed=seed, resume=resume,
                 threads=threads, keep_checkpoints=keep_checkpoints, store=store, quiet=quiet)
    rmeta = read_model_meta(out)
    block = {"path": RERANKER_DIR, "top_k": rmeta["top_k"], "max_length": rmeta.get("max_length", 64),
             "trained_on": trained_on, "dev_selection": selection_dev is not None,
             "dev_acc1": (rmeta.get("metrics") or {}).get("dev"), "linker_dev_acc1": rmeta.get("linker_dev_acc1"),
             "epoch": (rmeta.get("metrics") or {}).get("epoch"), "budget_minutes": max_minutes}
    update_meta(model_dir, reranker=block)
    return block
