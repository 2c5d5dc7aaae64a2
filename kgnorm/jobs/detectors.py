"""The mention detectors by kind: what `annotate --ner SPEC` (and `Workbench.annotate`,
`kgnorm calibrate`) resolve SPEC with (:func:`resolve`, through :func:`build_detector`).

A kind is a :class:`DetectorKind` entry in :data:`DETECTORS`. SPEC is resolved in this order:

1. ``NAME:ARG`` where NAME is a registered kind that takes an argument (``dictionary:medic``);
2. an existing directory: the kind named by its kgnorm-model.json ``method`` (``ner``: `kgnorm train
   ner`), built with ARG = the directory;
3. ``NAME`` alone, a registered kind that takes no argument;
and anything else is one error line.

``build`` (``"module:function"``, resolved on use, so naming a kind imports nothing heavy) is
``build(arg, ctx) -> (detector, label)``: ``ctx`` a :class:`DetectorContext` (the store to read,
a trained network's precision and threads); ``detector`` a
:class:`~kgnorm.ner.spans.MentionDetector`; ``label`` what the Run records as its ``ner``
(the part before an ``@`` names the run: `annotate` again with the same label replaces it). A new
kind is one :func:`register` call (here, or from its own package).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kgnorm.errors import KgnormError
from kgnorm.ner.spans import MentionDetector

__all__ = ["DetectorKind", "DetectorContext", "DETECTORS", "register", "resolve", "kind_of", "build_detector",
           "detector_for_engine", "dictionary_tagger_for", "TypedTaggers"]


@dataclass(frozen=True)
class DetectorContext:
    """What a kind's ``build`` may use: the store (a URI, ``None``: ``$KGNORM_STORE`` or the default;
    or the job's open store, kgnorm.stores.session: read it with ``reading(ctx.store)``), and for a
    trained network the precision path and threads of `annotate --ner-precision/--threads`."""

    store: Any = None
    precision: str | None = None
    threads: int | None = None


@dataclass(frozen=True)
class DetectorKind:
    """One kind of detector. ``directory``: a trained detector, found as a model directory whose
    kgnorm-model.json ``method`` is ``name`` (its ``build`` gets the directory); otherwise it is
    named in the spec, with an argument after ``name:`` when ``arg`` names one (e.g. ``ONTOLOGY``),
    or alone when ``arg`` is empty."""

    name: str
    build: str
    arg: str = ""
    directory: bool = False
    help: str = ""

    def builder(self) -> Callable[[str, DetectorContext], tuple[MentionDetector, str]]:
        module, _, attr = self.build.partition(":")
        return getattr(importlib.import_module(module), attr)

    def spec(self) -> str:
        """How `--ner` names it: ``DIR``, ``name:ARG`` or ``name``."""
        return "DIR" if self.directory else f"{self.name}:{self.arg}" if self.arg else self.name


DETECTORS: dict[str, DetectorKind] = {}


def register(entry: DetectorKind) -> DetectorKind:
    """Add (or replace) a kind: `annotate --ner` and `Workbench.annotate` resolve it from then on."""
    DETECTORS[entry.name] = entry
    return entry


def kind_of(spec: str) -> tuple[DetectorKind, str]:
    """(the kind, its argument) a ``--ner`` spec names (the order: the module docstring)."""
    name, sep, arg = spec.partition(":")
    entry = DETECTORS.get(name)
    if sep and entry is not None and entry.arg and not entry.directory:
        return entry, arg
    path = Path(spec)
    if path.is_dir():
        from kgnorm.methods.model_dir import read_model_meta

        method = read_model_meta(path)["method"]
        entry = DETECTORS.get(method)
        if entry is None or not entry.directory:
            raise KgnormError(f"{path} holds a {method!r} model, not a mention detector (train one "
                              "with `kgnorm train ner`)")
        return entry, spec
    if not sep and entry is not None and not entry.arg and not entry.directory:
        return entry, ""
    raise KgnormError(f"--ner {spec}: not a model directory (or use dictionary:ONTOLOGY)")


def resolve(spec: str | Path, ctx: DetectorContext) -> tuple[MentionDetector, str]:
    """The detector a ``--ner`` spec names, and its label for the Run."""
    entry, arg = kind_of(str(spec))
    try:
        build = entry.builder()
    except ImportError:
        if entry.directory:
            raise KgnormError("this build has no trained mention detector: use --ner dictionary:ONTOLOGY") from None
        raise
    return build(arg, ctx)


def build_detector(ner: str | Path | MentionDetector, store: Any, precision: str | None = None,
                   threads: int | None = None) -> tuple[MentionDetector, str]:
    """The detector a ``--ner`` spec names (:func:`resolve`), or a detector object as it is; with
    a label for the Run. `store`: a URI or the job's open store."""
    if not isinstance(ner, (str, Path)):
        return ner, type(ner).__name__
    return resolve(ner, DetectorContext(store, precision, threads))


def detector_for_engine(ner: str | Path | MentionDetector, store: Any, engine: str, precision: str | None,
                        threads: int | None) -> tuple[Any, str]:
    """:func:`build_detector`, except that with Ray a trained detector's directory is loaded by each
    worker, not by the driver (the driver passes its resolved path on)."""
    if engine == "ray" and isinstance(ner, (str, Path)) and Path(ner).is_dir():
        path = str(Path(ner).resolve())
        return path, path
    return build_detector(ner, store, precision, threads)


def dictionary_tagger_for(detector: MentionDetector | str, store: Any, ontology: str | dict[str, str] | None,
                          notes: list[str]) -> tuple[Any, Any]:
    """(span refinements, dictionary tagger) of a trained detector (an object, or its directory
    when the Ray workers load it): the tagger over the linker's ontology, read from the store, is
    what the ``dictionary`` refinement (kgnorm.ner.refine) adds matches from; None when no
    refinement needs it or the ontology is not in the store (then that refinement is off, noted).
    `ontology` may map each mention type to its own (a router's routes, ``*`` for the others): then
    each of the detector's types is matched over its ontology, as one tagger (:class:`TypedTaggers`)."""
    if isinstance(detector, str):
        from kgnorm.methods.model_dir import read_model_meta
        from kgnorm.ner.refine import refinements_from_meta

        ner_meta = read_model_meta(detector)
        refinements, types = refinements_from_meta(ner_meta), tuple(ner_meta.get("types") or ("Disease",))
    else:
        refinements = getattr(detector, "refinements", None)
        types = tuple(getattr(detector, "types", ()) or ("Disease",))
    if refinements is None or not refinements.dictionary:
        return refinements, None
    from kgnorm.graph.views import read_ontology
    from kgnorm.ner.dictionary import DictionaryDetector
    from kgnorm.stores.session import reading

    by_type = _type_ontologies(types, ontology)
    try:
        if not by_type:
            raise KgnormError("the linking model names no ontology")
        with reading(store) as st:
            snaps = {o: read_ontology(st, o, with_edges=False) for o in dict.fromkeys(by_type.values())}
    except KgnormError as exc:
        notes.append(f"detector: the dictionary refinement is off ({exc})")
        return refinements, None
    taggers = [DictionaryDetector.from_snapshot(snaps[o], type=t) for t, o in by_type.items()]
    return refinements, taggers[0] if len(taggers) == 1 else TypedTaggers(taggers)


def _type_ontologies(types: tuple[str, ...], ontology: str | dict[str, str] | None) -> dict[str, str]:
    """Detector type -> the ontology its dictionary matches come from (the first type only, for one
    ontology: as before routing existed)."""
    if not isinstance(ontology, dict):
        return {types[0]: ontology} if ontology else {}
    routes = {t.strip().casefold(): o for t, o in ontology.items()}
    found = {t: routes.get(t.casefold(), routes.get("*", "")) for t in types}
    return {t: o for t, o in found.items() if o}


class TypedTaggers:
    """Several dictionary taggers (one per mention type, each over its ontology) as one: their
    matches merged leftmost-longest, so the spans do not overlap."""

    def __init__(self, taggers: list[Any]) -> None:
        self.taggers = taggers
        self.types = tuple(t for tagger in taggers for t in tagger.types)

    def detect(self, texts: list[str]) -> list[list[Any]]:
        out = []
        for found in zip(*(tagger.detect(texts) for tagger in self.taggers)):
            chosen: list[Any] = []
            for span in sorted((s for spans in found for s in spans), key=lambda s: (s.start, s.start - s.end)):
                if not chosen or span.start >= chosen[-1].end:
                    chosen.append(span)
            out.append(chosen)
        return out


# ------------------------------------------------------------------ the built-in kinds
def dictionary(arg: str, ctx: DetectorContext) -> tuple[MentionDetector, str]:
    """``dictionary:ONT[,root=UID][,type=TYPE][,coordinations=on|off]``: every name of ontology ONT in the
    store (of the concepts under UID only, with ``root``), matched in the text (kgnorm.ner.dictionary); no
    training. ``coordinations=off``: no span per conjunct ("palmar and plantar pits": "palmar pits"), for
    a corpus that annotates a coordination as one mention of all its concepts (NCBI-disease).
    The mentions' type and the root default from the ontology's id space (:data:`ID_SPACES`: HPO's
    ``HP`` ids give ``Phenotype`` mentions under HP:0000118, phenotypic abnormality), else ``Disease``."""
    from kgnorm.graph.views import read_ontology
    from kgnorm.ner.dictionary import DictionaryDetector
    from kgnorm.stores.session import reading

    onto, options = _dictionary_spec(arg)
    with reading(ctx.store) as st:
        snap = read_ontology(st, onto, with_edges=True)
    type_, root = id_space_defaults(c.uid for c in snap.concepts)
    type_, root = options.get("type", type_), options.get("root", root)
    root = None if root in ("", "none") else root
    coordinations = options.get("coordinations", "on")
    if coordinations not in ("on", "off"):
        raise KgnormError(f"--ner dictionary:{arg}: coordinations={coordinations!r} is not on or off")
    detector = DictionaryDetector.from_snapshot(snap, type=type_, root=root, coordinations=coordinations == "on")
    # the label names the run: a MEDIC run keeps its old label (no root, Disease)
    extra = "".join(f",{k}={v}" for k, v in (("root", root), ("type", type_ if type_ != "Disease" else None),
                                            ("coordinations", None if coordinations == "on" else "off")) if v)
    return detector, f"dictionary:{onto}{extra}@{snap.version}"


# The entity type of the mentions of an ontology whose concept ids are mostly in an id space, and the
# root its tagger keeps by default: what a user of that ontology expects (`--ner dictionary:hpo` finds
# phenotypes, not HPO's modes of inheritance, onsets or frequencies). `dictionary:ONT,type=...,root=...`
# overrides either; an id space not listed gives Disease mentions over the whole ontology.
ID_SPACES: dict[str, tuple[str, str | None]] = {"HP": ("Phenotype", "HP:0000118")}


def id_space_defaults(uids: Any) -> tuple[str, str | None]:
    """(mention type, root) for an ontology's uids (:data:`ID_SPACES`, by their most common prefix)."""
    from collections import Counter

    counts = Counter(u.split(":", 1)[0] for u in uids if ":" in u)
    if counts:
        space = counts.most_common(1)[0][0]
        if space in ID_SPACES:
            return ID_SPACES[space]
    return "Disease", None


def _dictionary_spec(arg: str) -> tuple[str, dict[str, str]]:
    """``ONT[,root=UID][,type=TYPE][,coordinations=on|off]`` → (ONT, options)."""
    onto, *rest = [part.strip() for part in arg.split(",")]
    if not onto:
        raise KgnormError("--ner dictionary:ONTOLOGY needs an ontology name (e.g. dictionary:medic)")
    options = {}
    for part in rest:
        key, sep, value = part.partition("=")
        if not sep or key not in ("root", "type", "coordinations"):
            raise KgnormError(f"--ner dictionary:{arg}: {part!r} is not root=UID, type=TYPE or coordinations=on|off")
        options[key] = value.strip()
    return onto, options


def trained_ner(arg: str, ctx: DetectorContext) -> tuple[Any, str]:
    """A `kgnorm train ner` directory: its network on the path ``ctx.precision`` names
    (kgnorm.methods.ner.runtime)."""
    from kgnorm.methods.ner.model import load_ner

    path = Path(arg)
    return load_ner(path, precision=ctx.precision, threads=ctx.threads), str(path.resolve())


for _entry in (
    DetectorKind("dictionary", "kgnorm.jobs.detectors:dictionary", arg="ONTOLOGY",
                 help="An ontology's names in the store, longest match on word boundaries, plurals folded, "
                      "other word orders, learnt word variants and modifiers; each span says which concept(s) its "
                      "name names; no training. dictionary:ONTOLOGY,root=UID,type=TYPE keeps the concepts under UID and "
                      "names the mentions' type (defaults: HPO's ids give Phenotype under HP:0000118, "
                      "else Disease, whole ontology); coordinations=off: no span per conjunct of a coordination."),
    DetectorKind("ner", "kgnorm.jobs.detectors:trained_ner", directory=True,
                 help="A token classifier trained by `kgnorm train ner`."),
):
    register(_entry)
