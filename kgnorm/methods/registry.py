"""The methods by name: which function loads a trained model directory, which trains one, and
the recipe that trains one from the store (what `kgnorm train METHOD` and `Workbench.train` run);
and :func:`open_linker`, a model directory as the linker `link`, `annotate` and `eval link` rank with.

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
    linker: str = ""  # ``module:function`` loading the model for linking only (default: `loader`)

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


for _entry in (Method("biosyn", "kgnorm.methods.biosyn.model:load_biosyn",
                      linker="kgnorm.methods.biosyn.retrieval:load_biosyn_linker"),
               Method("dan", "kgnorm.methods.dan.model:load_dan"),
               Method("biocom", "kgnorm.methods.biocom.linker:load_biocom"),
               Method("bne", "kgnorm.methods.bne.model:load_bne"),
               Method("dilbert", "kgnorm.methods.dilbert.model:load_dilbert",
                      linker="kgnorm.methods.dilbert.linker:load_dilbert_linker"),
               Method("ner", "kgnorm.methods.ner.model:load_ner"),
               Method("ensemble", "kgnorm.methods.ensemble.linker:load_ensemble")):
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


def _reranked(inner: Any, scorer_dir: Path, top_k: int, max_length: int) -> Any:
    from kgnorm.methods.rerank.linker import RerankLinker
    from kgnorm.methods.rerank.model import CrossScorer

    return RerankLinker(inner, CrossScorer.load(scorer_dir, max_length), top_k)


def model_meta(model_dir: str | Path) -> dict[str, Any]:
    """The meta :func:`open_linker` returns, without loading any weights (what a Ray driver needs:
    the text pipeline, the ontology, the method)."""
    meta = read_model_meta(model_dir)
    if meta["method"] == "rerank":
        inner_meta = {k: v for k, v in model_meta(meta["linker"]).items() if k != "reranker"}
        return {**inner_meta, **meta}
    if meta["method"] == "ensemble":
        return {**meta, "member_meta": [model_meta(m) for m in meta["members"]]}
    return meta


def open_linker(model_dir: str | Path) -> tuple[Any, dict[str, Any]]:
    """The linker (a :class:`kgnorm.linking.candidates.PartLinker`) of a model directory and the meta
    the job needs: the method's model behind its adapter (kgnorm.linking.linker), wrapped by its
    cross-encoder when the directory is a reranker (``method: rerank``, naming its linker) or holds one
    (a ``reranker`` block: `train biosyn --rerank`); an ensemble (``method: ensemble``) opens each of
    its members this way and fuses them (its meta then carries the members' metas, ``member_meta``)."""
    from kgnorm.linking.linker import ContextLinker, DictionaryLinker

    meta = read_model_meta(model_dir)
    if meta["method"] == "rerank":  # a cross-encoder over the linker its directory names
        inner, inner_meta = open_linker(meta["linker"])
        if "reranker" in inner_meta:  # a directory that holds its own reranker: rerank its linker only
            inner = inner.inner
        return _reranked(inner, Path(model_dir), meta["top_k"], meta.get("max_length", 64)), model_meta(model_dir)
    if meta["method"] == "ensemble":
        from kgnorm.methods.ensemble.linker import open_ensemble

        linker, metas = open_ensemble(meta)
        return linker, {**meta, "member_meta": metas}
    entry = METHODS.get(meta["method"])
    model = _resolve(entry.linker)(model_dir) if entry is not None and entry.linker else load_encoder(model_dir)
    if meta["method"] == "biocom":
        return ContextLinker(model), meta
    if not hasattr(model, "link"):
        raise KgnormError(f"{model_dir}: a {meta['method']} model has no name index to link with")
    linker: Any = DictionaryLinker(model, meta["method"])
    block = meta.get("reranker")
    if block:
        linker = _reranked(linker, Path(model_dir) / block["path"], block["top_k"], block.get("max_length", 64))
    return linker, meta
