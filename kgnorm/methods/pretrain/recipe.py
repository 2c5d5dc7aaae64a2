"""What `kgnorm pretrain` and ``Workbench.pretrain`` run: check the options, read the ontologies'
names out of the store (read-only, then let go of it: training takes minutes to hours), train."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError

from .train import PretrainConfig, TrainResult, pretrain_encoder


def run(ontologies: Sequence[str], out: Path, *, store: str | None = None, encoder: Path | None = None,
        max_minutes: float | None = None, threads: int | None = None, resume: bool = True,
        progress: bool = False, on_log: Callable[[dict], None] | None = None,
        **options: Any) -> TrainResult:
    """``options``: :class:`PretrainConfig`'s fields (epochs, lr, hierarchy, seed …)."""
    from kgnorm.methods.recipes import set_threads
    from kgnorm.stores import open_store

    from . import read_pretrain_data

    if not ontologies:
        raise KgnormError("name at least one ontology to pretrain on")
    unknown = sorted(set(options) - (set(PretrainConfig.__dataclass_fields__) - {"max_seconds"}))
    if unknown:
        raise KgnormError(f"unknown pretraining option(s): {', '.join(unknown)}")
    set_threads(threads)
    if max_minutes is not None and not max_minutes > 0:
        raise KgnormError(f"--max-minutes must be > 0, got {max_minutes}")
    if encoder is not None and not Path(encoder).is_dir():
        raise KgnormError(f"encoder directory {encoder} does not exist or is not a directory")
    cfg = PretrainConfig(**options, max_seconds=None if max_minutes is None else max_minutes * 60)
    cfg.check()
    with open_store(store, read_only=True) as st:
        data = read_pretrain_data(st, list(ontologies), hierarchy=cfg.hierarchy, min_concepts=cfg.concepts_per_batch)
    return pretrain_encoder(data, Path(out), encoder, cfg, resume=resume, progress=progress, on_log=on_log)
