"""What `kgnorm pretrain` and ``Workbench.pretrain`` run (through ``kgnorm.jobs.pretrain``): check the options, read the ontologies'
names out of the store (read-only, then let go of it: training takes minutes to hours), train.
``Options`` declares the command's options once (its defaults are :class:`PretrainConfig`'s);
this module imports torch only when it trains."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.methods.options import option, out_option, resume, seed, threads


@dataclass(kw_only=True)
class Options:
    """Pretrain a name encoder on ontology synonyms (SapBERT-style Multi-Similarity self-alignment)."""

    ontology: list[str] = option(MISSING, help="Ontology in the store whose names are learnt (repeat the "
                                               "option for several).")
    out: Path = out_option("Encoder directory to write (plain Hugging Face).")
    encoder: Path | None = option(None, help="Any local Hugging Face encoder directory to start from (default: "
                                             "the offline MiniLM).")
    max_minutes: float | None = option(None, help="Time budget of the training steps; the run stops inside an "
                                                  "epoch and keeps a checkpoint (--resume with a larger budget "
                                                  "continues).")
    epochs: int = option(5, help="Passes over every name (each name about once).")
    concepts_per_batch: int = option(64)
    names_per_concept: int = option(2)
    lr: float = option(2e-5)
    pooling: str = option("mean", help="mean or cls (use the same when linking).")
    max_length: int = option(25)
    hierarchy: bool = option(False, "--hierarchy/--no-hierarchy",
                             help="Add the hierarchy term: a parent's name as a weaker positive.")
    hierarchy_margin: float = option(0.4, help="Cosine up to which a name is pulled towards its parent's names.")
    checkpoint_steps: int = option(200, help="Checkpoint every N steps.")
    seed: int = seed()
    resume: bool = resume()
    threads: int | None = threads()


# the options that are PretrainConfig fields (the others say where and how to run)
CONFIG_OPTIONS = ("epochs", "concepts_per_batch", "names_per_concept", "lr", "pooling", "max_length", "hierarchy",
                  "hierarchy_margin", "checkpoint_steps", "seed")


def run(ontologies: Sequence[str], out: Path, *, store: str | None = None, encoder: Path | None = None,
        max_minutes: float | None = None, threads: int | None = None, resume: bool = True,
        progress: bool = False, on_log: Callable[[dict], None] | None = None,
        **options: Any) -> Any:
    """``options``: :class:`PretrainConfig`'s fields (epochs, lr, hierarchy, seed …); the loop's
    ``TrainResult``."""
    from kgnorm.methods.recipes import set_threads
    from kgnorm.stores import open_store

    from . import read_pretrain_data
    from .train import PretrainConfig, pretrain_encoder

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
