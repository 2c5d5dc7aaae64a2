"""The methods by name: which function loads a trained model directory, which trains one, and
the recipe that trains one from the store (what `kgnorm train METHOD` and `Workbench.train` run).

Entries are import paths, resolved on use, so that naming a method never imports torch or
another method. A new method is a folder beside the others and one line here (or a
:func:`register` call from its own package).
"""
from __future__ import annotations

import importlib
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any, Callable

from kgnorm.errors import KgnormError
from kgnorm.methods.model_dir import read_model_meta

@dataclass(frozen=True)
class Method:
    """A method's folder, by convention: ``kgnorm/methods/<name>/recipe.py`` holds ``Options`` (its
    options, each field with its default and help: the `kgnorm train <name>` command is generated
    from them) and ``train(options, store=None, quiet=False)``; ``loader`` (``module:function``)
    reads a model directory it wrote. ``package`` overrides ``kgnorm.methods.<name>``."""

    name: str
    loader: str
    package: str = ""

    @property
    def module(self) -> str:
        return self.package or f"kgnorm.methods.{self.name}"

    def load(self) -> Callable[..., Any]:
        return _resolve(self.loader)

    def options(self) -> type:
        """The recipe's options dataclass."""
        return _resolve(f"{self.module}.recipe:Options")

    def make_options(self, out: str | Path, **options: Any) -> Any:
        """``Options(out=out, **options)``; a keyword it lacks, or a required one left out, is one
        clear error."""
        cls = self.options()
        known = [f.name for f in fields(cls) if f.name != "out"]
        unknown = [k for k in options if k not in known]
        missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
                   and f.name != "out" and f.name not in options]
        if unknown or missing:
            why = (f"unexpected keyword argument {unknown[0]!r}" if unknown
                   else f"missing a required argument: {missing[0]!r}")
            raise KgnormError(f"train {self.name}: {why} (its options: {', '.join(known)})")
        return cls(out=Path(out), **options)

    def run_recipe(self, out: str | Path, *, store: str | None = None, quiet: bool = False,
                   **options: Any) -> Path:
        """Train from the store into ``out`` (options: the fields of the recipe's ``Options``,
        e.g. ``ontology``)."""
        return _resolve(f"{self.module}.recipe:train")(self.make_options(out, **options), store=store, quiet=quiet)


METHODS: dict[str, Method] = {}


def register(entry: Method) -> Method:
    """Add (or replace) a method: its `kgnorm train` command, `Workbench.train` and `load_encoder`
    find it from then on."""
    METHODS[entry.name] = entry
    return entry


for _entry in (Method("biosyn", "kgnorm.methods.biosyn.model:load_biosyn"),
               Method("dan", "kgnorm.methods.dan.model:load_dan"),
               Method("biocom", "kgnorm.methods.biocom.linker:load_biocom"),
               Method("bne", "kgnorm.methods.bne.model:load_bne"),
               Method("dilbert", "kgnorm.methods.dilbert.model:load_dilbert"),
               Method("ner", "kgnorm.methods.ner.model:load_ner")):
    register(_entry)


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
