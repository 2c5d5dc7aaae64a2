"""The methods by name: which function loads a trained model directory and which trains one.

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
    """Where a method's loader and trainer live (``module:function``)."""

    name: str
    loader: str
    trainer: str

    def load(self) -> Callable[..., Any]:
        return _resolve(self.loader)

    def train(self) -> Callable[..., Any]:
        return _resolve(self.trainer)


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("biosyn", "kgnorm.methods.biosyn.model:load_biosyn", "kgnorm.methods.biosyn.train:train_biosyn"),
    Method("bne", "kgnorm.methods.bne.model:load_bne", "kgnorm.methods.bne.train:train_bne"),
    Method("dan", "kgnorm.methods.dan.model:load_dan", "kgnorm.methods.dan.train:train_dan"),
    Method("dilbert", "kgnorm.methods.dilbert.model:load_dilbert", "kgnorm.methods.dilbert.train:train_dilbert"),
    Method("biocom", "kgnorm.methods.biocom.linker:load_biocom", "kgnorm.methods.biocom.train:train_biocom"),
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
    return METHODS[name].load()(model_dir)
