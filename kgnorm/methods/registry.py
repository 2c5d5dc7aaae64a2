"""The methods by name: which function loads a trained model directory, which trains one, the
recipe that trains one from the store (what `kgnorm train METHOD` and `Workbench.train` run), and
the *kind* that says how a directory becomes the linker `link`, `annotate` and `eval link` rank with
(:func:`open_linker`; :func:`model_meta` is its meta without any weights loaded).

Entries are import paths, resolved on use, so that naming a method never imports torch or
another method. A new method is a folder beside the others and one line here (or a
:func:`register` call from its own package); no CLI file, job or branch on its name.

What a method provides (``kgnorm/methods/<name>/``, or ``package``):

* ``recipe.py``: ``Options``, a ``kw_only`` dataclass whose fields (``kgnorm.methods.options.option``)
  carry each flag, default and help -- `kgnorm train <name>` is generated from it, ``out`` is
  ``--out`` -- and ``train(opts, store=None, quiet=False) -> Path``, which writes the model
  directory with a ``kgnorm-model.json`` whose ``method`` is ``<name>`` (and ``ontology``,
  ``ontology_version``, ``text_pipeline`` when it links: `link` checks and reads them).
* ``loader`` (``module:function``): ``load(model_dir)`` → the model; an encoder has
  ``encode(names) -> np.ndarray`` (`embed`, `hypernyms`, `eval hierarchy`).
* ``kind``, one of :data:`KINDS`, with what it asks of the loaded model:

  - ``index`` (the default; BioSyn, BNE, DILBERT): ``model.dictionary`` (a
    :class:`~kgnorm.linking.dictionary.NameDictionary`) and ``model.link(queries, top_k=, batch_size=)``
    → per query its :class:`~kgnorm.linking.candidates.Candidate` rows, best first; optional
    ``prefetch(queries)``. Linked through :class:`~kgnorm.linking.linker.DictionaryLinker` (one concept
    per rank, :func:`~kgnorm.linking.concepts.link_concepts`), reranked when the meta has a
    ``reranker`` block (`train biosyn --rerank`). ``linker`` (``module:function``) may load a lighter
    model for linking only. A model without ``link`` is refused ("has no name index").
  - ``context`` (BioCoM): ``model.link([(text, sentence), ...], top_k=)`` → per item ``(uid, score)``
    pairs; linked through :class:`~kgnorm.linking.linker.ContextLinker`.
  - ``wrapper`` (rerank, ensemble, router): a directory over other model directories (or, for a
    router built from the command line, its meta alone: :func:`source_meta`). ``opener``
    (``module:function``, ``(model_dir, meta) -> (linker, meta)``) returns a
    :class:`~kgnorm.linking.candidates.PartLinker` -- ``method`` and ``link_parts(queries, mentions,
    whole, top_k) -> list[list[Hit]]``, one list per query part -- and ``meta_reader``
    (``(model_dir, meta) -> meta``, no weights) the meta a job needs; both open the wrapped
    directories through :func:`open_linker` / :func:`model_meta`.
  - ``encoder`` (DAN): encodes names, does not link; ``detector`` (NER): `annotate --ner` only.
"""
from __future__ import annotations

import importlib
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Mapping

from kgnorm.errors import KgnormError
from kgnorm.methods.model_dir import read_model_meta

# the kinds of model directory (the module docstring says what each asks of a method)
INDEX, CONTEXT, WRAPPER, ENCODER, DETECTOR = "index", "context", "wrapper", "encoder", "detector"
KINDS = (INDEX, CONTEXT, WRAPPER, ENCODER, DETECTOR)
RERANKED = "rerank"  # the method a Run records for an index linker with its own ``reranker`` block


@dataclass(frozen=True)
class Method:
    """A method's folder, by convention: ``kgnorm/methods/<name>/recipe.py`` holds ``Options`` (its
    options, each field with its default and help: the `kgnorm train <name>` command is generated
    from them) and ``train(options, store=None, quiet=False)``; ``loader`` (``module:function``)
    reads a model directory it wrote. ``package`` overrides ``kgnorm.methods.<name>``. ``kind``
    (one of :data:`KINDS`) says how :func:`open_linker` links with it; a ``wrapper`` names its
    ``opener`` and ``meta_reader``."""

    name: str
    loader: str
    package: str = ""
    linker: str = ""  # ``module:function`` loading the model for linking only (default: `loader`)
    kind: str = INDEX
    opener: str = ""  # wrapper: ``module:function``, (model_dir, meta) -> (PartLinker, meta)
    meta_reader: str = ""  # wrapper: ``module:function``, (model_dir, meta) -> meta, no weights loaded

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise KgnormError(f"method {self.name!r}: unknown kind {self.kind!r} (kinds: {', '.join(KINDS)})")
        if self.kind == WRAPPER and not self.opener:
            raise KgnormError(f"method {self.name!r}: a wrapper names its opener (module:function)")

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
               Method("dan", "kgnorm.methods.dan.model:load_dan", kind=ENCODER),
               Method("biocom", "kgnorm.methods.biocom.linker:load_biocom", kind=CONTEXT),
               Method("bne", "kgnorm.methods.bne.model:load_bne"),
               Method("dilbert", "kgnorm.methods.dilbert.model:load_dilbert",
                      linker="kgnorm.methods.dilbert.linker:load_dilbert_linker"),
               Method("ner", "kgnorm.methods.ner.model:load_ner", kind=DETECTOR),
               Method("ensemble", "kgnorm.methods.ensemble.linker:load_ensemble", kind=WRAPPER,
                      opener="kgnorm.methods.ensemble.linker:open_ensemble_dir",
                      meta_reader="kgnorm.methods.ensemble.linker:ensemble_meta"),
               Method("router", "kgnorm.methods.router.linker:load_router", kind=WRAPPER,
                      opener="kgnorm.methods.router.linker:open_router_dir",
                      meta_reader="kgnorm.methods.router.linker:read_router_meta"),
               Method("rerank", "kgnorm.methods.rerank.wrapper:load_rerank", kind=WRAPPER,
                      opener="kgnorm.methods.rerank.wrapper:open_rerank",
                      meta_reader="kgnorm.methods.rerank.wrapper:rerank_meta")):
    register(_entry)


def _resolve(target: str) -> Callable[..., Any]:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise KgnormError(f"unknown model method {name!r} (known: {', '.join(METHODS)})") from None


def entry_for(meta: dict[str, Any], model_dir: str | Path) -> Method:
    """The registered method of a model directory's ``meta``; an unknown one is one line."""
    entry = METHODS.get(meta["method"])
    if entry is None:
        raise KgnormError(f"{model_dir}: unknown model method {meta['method']!r}")
    return entry


def load_encoder(model_dir: str | Path) -> Any:
    """The trained model behind `model_dir`; every one has `.encode(names) -> np.ndarray`."""
    entry = entry_for(read_model_meta(model_dir), model_dir)
    if entry.kind == DETECTOR:
        raise KgnormError(f"{model_dir} is a mention detector (`annotate --ner`), not a linking model")
    return entry.load()(model_dir)


def source_meta(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """A model directory's meta, or a wrapper's meta given in memory (a router built from
    `annotate --model TYPE=DIR ...`: kgnorm.methods.router), which has no directory."""
    if isinstance(source, Mapping):
        entry = METHODS.get(str(source.get("method")))
        if entry is None or entry.kind != WRAPPER:
            raise KgnormError(f"a model given without a directory must be a wrapper (got {source.get('method')!r})")
        return dict(source)
    return read_model_meta(source)


def model_meta(model_dir: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """The meta :func:`open_linker` returns, without loading any weights (what a Ray driver needs:
    the text pipeline, the ontology, the method): a wrapper's ``meta_reader``, else the directory's.
    `model_dir` may be a wrapper's meta (:func:`source_meta`)."""
    meta = source_meta(model_dir)
    entry = METHODS.get(meta["method"])
    if entry is not None and entry.kind == WRAPPER and entry.meta_reader:
        return _resolve(entry.meta_reader)(model_dir, meta)
    return meta


def run_method(meta: dict[str, Any]) -> str:
    """The method a Run records (what :func:`open_linker`'s linker calls itself): an index linker with
    its own ``reranker`` block is ``rerank``."""
    entry = METHODS.get(meta["method"])
    if entry is not None and entry.kind == WRAPPER:
        return meta["method"]
    return RERANKED if meta.get("reranker") else meta["method"]


def open_linker(model_dir: str | Path | Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The linker (a :class:`kgnorm.linking.candidates.PartLinker`) of a model directory and the meta
    the job needs, by the method's kind: an ``index`` model behind
    :class:`~kgnorm.linking.linker.DictionaryLinker`, wrapped by its cross-encoder when the directory
    holds one (a ``reranker`` block: `train biosyn --rerank`); a ``context`` model behind
    :class:`~kgnorm.linking.linker.ContextLinker`; a ``wrapper`` (a reranker directory naming its
    linker, an ensemble of members, a router of one linker per mention type, each opened this way)
    by its ``opener``; `model_dir` may be a wrapper's meta (:func:`source_meta`)."""
    from kgnorm.linking.linker import ContextLinker, DictionaryLinker

    meta = source_meta(model_dir)
    entry = entry_for(meta, model_dir)
    if entry.kind == WRAPPER:
        return _resolve(entry.opener)(model_dir, meta)
    if entry.kind == ENCODER:
        raise KgnormError(f"{model_dir}: a {meta['method']} model has no name index to link with")
    model = _resolve(entry.linker)(model_dir) if entry.linker else load_encoder(model_dir)
    if entry.kind == CONTEXT:
        return ContextLinker(model, meta["method"], meta.get("ontology") or ""), meta
    if not hasattr(model, "link"):
        raise KgnormError(f"{model_dir}: a {meta['method']} model has no name index to link with")
    linker: Any = DictionaryLinker(model, meta["method"], meta.get("ontology") or "")
    block = meta.get("reranker")
    if block:
        from kgnorm.methods.rerank.wrapper import reranked

        linker = reranked(linker, Path(model_dir) / block["path"], block["top_k"], block.get("max_length", 64))
    return linker, meta
