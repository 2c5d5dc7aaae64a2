"""The methods by name: which function loads a trained model directory, which trains one, and
the recipe that trains one from the store (what `kgnorm train METHOD` and `Workbench.train` run).

Entries are import paths, resolved on use, so that naming a method never imports torch or
another method. A sixth method adds one line here and a folder beside the others.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from kgnorm.errors import KgnormError
from kgnorm.methods.model_dir import read_model_meta

if TYPE_CHECKING:  # numpy only names a type here; importing it is left to the encoders
    import numpy as np


class NameEncoder(Protocol):
    def encode(self, names: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class Method:
    """Where a method's loader, trainer and recipe live (``module:function``)."""

    name: str
    loader: str
    trainer: str
    recipe: str

    def load(self) -> Callable[..., Any]:
        return _resolve(self.loader)

    def train(self) -> Callable[..., Any]:
        return _resolve(self.trainer)

    def run_recipe(self, out: str | Path, **options: Any) -> Path:
        """Train from the store into ``out`` (options: the recipe's keywords, e.g. ``ontology``);
        a keyword the recipe lacks, or a required one left out, is one clear error."""
        import inspect

        recipe = _resolve(self.recipe)
        try:
            inspect.signature(recipe).bind(out, **options)
        except TypeError as exc:
            known = [p for p in inspect.signature(recipe).parameters if p != "out"]
            raise KgnormError(f"train {self.name}: {exc} (its options: {', '.join(known)})") from None
        return recipe(out, **options)


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("biosyn", "kgnorm.methods.biosyn.model:load_biosyn", "kgnorm.methods.biosyn.train:train_biosyn",
           "kgnorm.methods.biosyn.recipe:train"),
    Method("bne", "kgnorm.methods.bne.model:load_bne", "kgnorm.methods.bne.train:train_bne",
           "kgnorm.methods.bne.recipe:train"),
    Method("dan", "kgnorm.methods.dan.model:load_dan", "kgnorm.methods.dan.train:train_dan",
           "kgnorm.methods.dan.recipe:train"),
    Method("dilbert", "kgnorm.methods.dilbert.model:load_dilbert", "kgnorm.methods.dilbert.train:train_dilbert",
           "kgnorm.methods.dilbert.recipe:train"),
    Method("biocom", "kgnorm.methods.biocom.linker:load_biocom", "kgnorm.methods.biocom.train:train_biocom",
           "kgnorm.methods.biocom.recipe:train"),
    Method("ner", "kgnorm.methods.ner.model:load_ner", "kgnorm.methods.ner.train:train_ner",
           "kgnorm.methods.ner.recipe:train"),
)}


def _resolve(target: str) -> Callable[..., Any]:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise KgnormError(f"unknown model method {name!r} (known: {', '.join(METHODS)})") from None


def load_encoder(model_dir: str | Path) -> Any:
    """The trained model behind `model_dir`; every one has `.encode(names) -> np.ndarray`."""
    name = read_model_meta(model_dir)["method"]
    if name not in METHODS:
        raise KgnormError(f"{model_dir}: unknown model method {name!r}")
    if name == "ner":
        raise KgnormError(f"{model_dir} is a mention detector (`annotate --ner`), not a linking model")
    return METHODS[name].load()(model_dir)
