"""`train dan` as a library call: the level split under a root from the store, the DAN's input
vectors (a frozen encoder's, or word vectors), then `train_dan`."""
from __future__ import annotations

import json
from pathlib import Path

from kgnorm.errors import KgnormError
from kgnorm.graph.levels import N_LEVELS, check_level, split_under
from kgnorm.graph.views import hierarchy_from_store
from kgnorm.methods.recipes import finish, ontology_word_vectors
from kgnorm.progress import note

PRESETS = ("paper", "cpu-fast")
INPUTS = ("word-vectors", "encoder")


def _encoder_inputs(encoder: Path | None, out: Path, resume: bool):
    """Frozen-encoder inputs; a resumed run reuses the vectors kept in --out."""
    from kgnorm.encoders.dense import DenseEncoder
    from kgnorm.encoders.encoder_inputs import FORMAT, EncoderInputs

    meta = out / "wordvectors" / "meta.json"
    if resume and encoder is None and meta.exists() and json.loads(meta.read_text()).get("format") == FORMAT:
        return EncoderInputs.load(meta.parent)
    return EncoderInputs(DenseEncoder(encoder, pooling="mean"))


def dan_config(preset: str, **options):
    """The preset's DanConfig with every option that was given (not None) on top."""
    from kgnorm.methods.dan.train import DanConfig

    if preset not in PRESETS:
        raise KgnormError(f"unknown --preset {preset!r}; valid presets: {', '.join(PRESETS)}")
    given = {k: v for k, v in options.items() if v is not None}
    return DanConfig.cpu_fast(**given) if preset == "cpu-fast" else DanConfig(**given)


def train(out: str | Path, *, ontology: str, root: str, level: int, store: str | None = None,
          word_vectors: Path | None = None, input_kind: str | None = None, encoder: Path | None = None,
          preset: str = "cpu-fast", hidden: int | None = None, epochs: int | None = None,
          patience: int | None = None, batch_size: int | None = None, lr: float | None = None,
          max_minutes: float | None = None, threads: int | None = None, seed: int = 0, resume: bool = True,
          keep_checkpoints: bool = False, quiet: bool = False) -> Path:
    """Train a DAN (Fivez et al. 2021) on level ``level`` of the hierarchy under ``root``; options
    left None take the preset's value (``input_kind`` too: encoder with cpu-fast)."""
    from kgnorm.methods.dan.train import train_dan

    out = Path(out)
    check_level(level)
    if input_kind is None:  # the preset's input; a word-vector file implies word vectors
        input_kind = "word-vectors" if preset == "paper" or word_vectors is not None else "encoder"
    if input_kind not in INPUTS:
        raise KgnormError(f"unknown --input {input_kind!r}; valid inputs: {', '.join(INPUTS)}")
    if input_kind == "encoder" and word_vectors is not None:
        raise KgnormError("--word-vectors goes with --input word-vectors, not --input encoder")
    if input_kind == "word-vectors" and encoder is not None:
        raise KgnormError("--encoder goes with --input encoder")
    config = dan_config(preset, seed=seed, hidden=hidden, max_epochs=epochs, patience=patience,
                        batch_size=batch_size, lr=lr, threads=threads,
                        max_seconds=None if max_minutes is None else max_minutes * 60)
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        hierarchy, snap = hierarchy_from_store(st, ontology)
    split = split_under(hierarchy, ontology, root, seed)
    note(split.summary_table(), quiet)
    if input_kind == "encoder":
        wv = _encoder_inputs(encoder, out, resume)
    else:
        definitions: list[str] = []
        if word_vectors is None:
            from kgnorm.graph.views import read_definitions
            from kgnorm.stores import open_store

            with open_store(store, read_only=True) as st:
                definitions = read_definitions(st, ontology)
        wv = ontology_word_vectors(word_vectors, out, resume,
                                   lambda: [n for c in snap.concepts for n in c.all_names()] + definitions,
                                   seed, quiet, f"{ontology}'s names and definitions")
    result = train_dan(split, wv, level, out, config, progress=not quiet, resume=resume)
    finish(out, keep_checkpoints, quiet, ontology=ontology, ontology_version=snap.version, root=root,
           level=level, split_seed=seed, n_levels=N_LEVELS)
    note(f"DAN level {level}: best validation mAP {result.best_val_map:.3f} at epoch {result.best_epoch} "
         f"({result.epochs_run} epochs, {result.train_seconds:.0f}s) → {out}", quiet)
    if result.test_metrics:
        from kgnorm.evaluation.hierarchy import format_results
        note(format_results({"dan": result.test_metrics}), quiet)
    return out
