"""`kgnorm train METHOD` as a library call: the method's recipe (kgnorm.methods.registry) trains a
model directory from an ontology in the store."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def train(method: str, out: str | Path, *, store: str | None = None, **options: Any) -> Path:
    """Options: the recipe's keywords, named as the `kgnorm train METHOD` options are."""
    from kgnorm.methods.registry import method as lookup

    return lookup(method).run_recipe(Path(out), store=store, **options)
