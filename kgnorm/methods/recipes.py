"""What every training recipe shares: input checks, the store read, word vectors, the time
budget and the finish (model metadata, checkpoints). A method's ``recipe.py`` holds only what
is its own; the CLI's ``train`` commands and ``Workbench.train`` both run the recipes."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError, KgnormError
from kgnorm.progress import note

# what `link` reads back from a model directory
PIPELINE = {"lowercase": True, "normalize": True, "abbreviations": True, "composites": True}


def check_file(path: Path | None, what: str) -> None:
    """Fail before anything is written when an input file is missing."""
    if path is not None and not Path(path).exists():
        raise InputError(f"{what} not found", path=path)


def set_threads(threads: int | None) -> None:
    """Apply --threads to torch (None: torch's own default)."""
    if threads is None:
        return
    if threads < 1:
        raise KgnormError(f"--threads must be >= 1, got {threads}")
    import torch

    torch.set_num_threads(int(threads))


def mention_pairs(pipeline, path: Path, fmt: str | None) -> list[tuple[str, set[str]]]:
    """(normalized query, gold uids) per composite part of a mention file."""
    from kgnorm.linking.linker import training_pairs
    from kgnorm.mentions.readers import read_mentions_with_abbreviations

    return training_pairs(pipeline, read_mentions_with_abbreviations(Path(path), fmt))


def read_snapshot(store: str | None, ontology: str, hierarchy: bool, refusal: str = "", *,
                  definitions: bool = False):
    """(hierarchy or None, the ontology's names, its definitions) from the store, read once; with
    ``hierarchy`` an ontology without IS_A edges is refused with ``refusal``."""
    from kgnorm.graph.views import hierarchy_from_store, read_definitions, read_ontology
    from kgnorm.stores import open_store

    view, defs = None, []
    with open_store(store, read_only=True) as st:
        if hierarchy:
            view, snap = hierarchy_from_store(st, ontology)
        else:
            snap = read_ontology(st, ontology, with_edges=False)
        if definitions:
            defs = read_definitions(st, ontology)
    if view is not None and view.graph.number_of_edges() == 0:
        raise KgnormError(refusal or f"ontology {ontology!r} has no IS_A edges")
    return view, snap, defs


def ontology_word_vectors(word_vectors: Path | None, out: Path, resume: bool, texts: Callable[[], list[str]],
                          seed: int, quiet: bool, label: str, source: str = "fasttext",
                          encoder: Path | None = None):
    """A user file, or vectors made from the ontology's text -- fastText trained on it, or
    static vectors of its words from a transformer encoder (``source="encoder"``) -- cached
    in --out so that a resumed run sees the very same vectors (fastText training is not
    bit-reproducible with 2 workers)."""
    from kgnorm.encoders.wordvectors import WordVectors, train_word_vectors

    if word_vectors is not None:
        return WordVectors.from_file(word_vectors)
    cached = Path(out) / "wordvectors"
    if resume and (cached / "meta.json").exists():
        wv = WordVectors.load(cached)
        had = "encoder" if wv.source.startswith("encoder:") else "fasttext"
        if had != source:  # replacing them would break the model already in --out
            raise KgnormError(f"{out} holds a run on {had} word vectors, not {source}: resume it with "
                              f"--word-source {had}, or start over with --no-resume or another --out")
        return wv
    if source == "encoder":
        from kgnorm.encoders.dense import DenseEncoder

        note(f"encoding the words of {label} with {encoder or 'the offline MiniLM'} …", quiet)
        wv = WordVectors.from_encoder(DenseEncoder(encoder, pooling="mean"), texts(), progress=not quiet)
    else:
        note(f"training fastText word vectors on {label} …", quiet)
        wv = train_word_vectors(texts(), seed=seed)
    wv.save(cached)
    return wv


def note_budget(stop_reason: str, max_minutes: float | None, epochs: int, quiet: bool) -> None:
    """Say when the time budget (``max_seconds`` of the training loop) ended a run, and how to
    go on: the checkpoint keeps the budget clock, so only a larger budget continues it."""
    if stop_reason == "max_seconds" and max_minutes is not None:
        note(f"time budget of {max_minutes:g} min spent after {epochs} epoch(s); "
             f"--resume with a larger --max-minutes continues", quiet)


def drop_checkpoints(out: Path, keep: bool, quiet: bool) -> None:
    """After a trainer wrote its model: delete the resume state unless --keep-checkpoints."""
    if keep:
        return
    from kgnorm.training.checkpoints import drop_checkpoints as drop

    freed = drop(Path(out))
    if freed:
        note(f"deleted the training checkpoints ({freed / 2**20:,.1f} MiB; --keep-checkpoints keeps them "
             f"for a later --resume)", quiet)


def finish(out: Path, keep_checkpoints: bool, quiet: bool, **meta: Any) -> Path:
    """The end of every recipe: what `link` and `hypernyms` read back goes into the model's
    metadata, then the checkpoints go (unless kept)."""
    from kgnorm.methods.model_dir import update_meta

    update_meta(out, **meta)
    drop_checkpoints(out, keep_checkpoints, quiet)
    return Path(out)


def names_and_mentions(snap, train: Path | None, dev: Path | None, fmt: str | None, merge_train: bool = False,
                       require_dev: bool = False, refit: bool = False, reviewed: Path | None = None):
    """(dictionary, the dictionary searched while training, train pairs, dev pairs or None): the
    ontology's names under the text pipeline `link` uses, with the training mentions merged in
    when asked; a mention file without one gold concept is refused. ``refit`` (kgnorm.methods.refit):
    the dev mentions are training mentions too, and there is no dev. ``reviewed``: a second file of
    training mentions, the links people reviewed (`kgnorm export reviewed`; its layout sniffed)."""
    from kgnorm.linking.dictionary import ontology_dictionary
    from kgnorm.text.pipeline import TextPipeline

    pipeline = TextPipeline()
    dictionary = ontology_dictionary(snap, pipeline.normalize_name)
    train_pairs = mention_pairs(pipeline, train, fmt) if train else []
    if train is not None and not train_pairs:
        raise InputError("no training mention has a gold concept", path=train)
    if reviewed is not None:
        extra = mention_pairs(pipeline, reviewed, None)
        if not extra:
            raise InputError("no reviewed mention has a concept", path=reviewed)
        train_pairs = train_pairs + extra
    dev_pairs = mention_pairs(pipeline, dev, fmt) if dev else None
    if require_dev and dev is not None and not dev_pairs:
        raise InputError("no dev mention has a gold concept", path=dev)
    if refit:
        train_pairs, dev_pairs = train_pairs + (dev_pairs or []), None
    search = dictionary.with_mentions(train_pairs) if merge_train and train_pairs else dictionary
    return dictionary, search, train_pairs, dev_pairs
