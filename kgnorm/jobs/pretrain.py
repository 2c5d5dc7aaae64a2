"""`kgnorm pretrain` as a library call: an encoder self-aligned on the names of ontologies in the
store (SapBERT's recipe), written as a plain Hugging Face directory every ``encoder=`` takes."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # torch loads on use
    from kgnorm.training.result import TrainResult


def pretrain(ontologies: str | Sequence[str], out: str | Path, *, store: str | None = None,
             **options: Any) -> TrainResult:
    """Options: the recipe's (``encoder``, ``max_minutes``, ``threads``, ``resume``, ``progress``,
    ``on_log``) and the pretraining config's fields (``epochs``, ``lr``, ``hierarchy`` …)."""
    from kgnorm.methods.pretrain.recipe import run

    names = [ontologies] if isinstance(ontologies, str) else list(ontologies)
    return run(names, Path(out), store=store, **options)
