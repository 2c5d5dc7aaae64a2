"""`train dan` as a library call: the level split under a root from the store, the DAN's input
vectors (a frozen encoder's, or word vectors), then `train_dan`."""
from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, replace
from pathlib import Path

from kgnorm.methods.options import keep_checkpoints, max_minutes, option, out_option, resume, seed, threads
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


@dataclass(kw_only=True)
class Options:
    """Train a DAN (Fivez et al. 2021) on level K of the hierarchy under --root."""

    ontology: str = option(MISSING, help='Ontology name in the store.')
    root: str = option(MISSING, help='Root concept uid of the subgraph, e.g. HP:0000118.')
    level: int = option(MISSING, help='Hierarchy level K (1 = just below the root … 4).')
    out: Path = out_option()
    word_vectors: Path | None = option(None, help="fastText .bin / word2vec .vec file; default: train fastText on the ontology's names and definitions.")
    input_kind: str | None = option(None, '--input', help="The DAN's input per name. encoder (default with --preset cpu-fast): the mean-pooled vector of a frozen encoder (--encoder), computed once for the split's names and kept with the model (stronger on HPO, see benchmarks/LOG.md); word-vectors (default with --preset paper or --word-vectors): the mean of its word vectors (the paper).")
    encoder: Path | None = option(None, help='Local Hugging Face encoder directory for --input encoder (default: the offline MiniLM).')
    preset: str = option('cpu-fast', help="paper: DAN's settings (hidden 2048, lr 1e-3, loss weights 1/1/1); cpu-fast: hidden 1024, lr 2e-3, context/grounding weights 0.3, 30% class-name positives, 14-min budget (the default: what reached the HPO figures on a 2-core CPU). Options given explicitly override it.")
    hidden: int | None = option(None, help='Width of the hidden layer.')
    epochs: int | None = option(None, help='Maximum epochs (early stopping on validation mAP).')
    patience: int | None = option(None, help='Early-stopping patience in epochs.')
    batch_size: int | None = option(None)
    lr: float | None = option(None)
    max_minutes: float | None = max_minutes(None)
    threads: int | None = threads()
    seed: int = seed()
    resume: bool = resume()
    keep_checkpoints: bool = keep_checkpoints()


def train(opts: Options, store: str | None = None, quiet: bool = False) -> Path:
    """Train a DAN (Fivez et al. 2021) on level ``level`` of the hierarchy under ``root``; options
    left None take the preset's value (``input_kind`` too: encoder with cpu-fast)."""
    from kgnorm.methods.dan.train import train_dan

    opts = replace(opts, out=Path(opts.out))
    check_level(opts.level)
    if opts.input_kind is None:  # the preset's input; a word-vector file implies word vectors
        opts.input_kind = "word-vectors" if opts.preset == "paper" or opts.word_vectors is not None else "encoder"
    if opts.input_kind not in INPUTS:
        raise KgnormError(f"unknown --input {opts.input_kind!r}; valid inputs: {', '.join(INPUTS)}")
    if opts.input_kind == "encoder" and opts.word_vectors is not None:
        raise KgnormError("--word-vectors goes with --input word-vectors, not --input encoder")
    if opts.input_kind == "word-vectors" and opts.encoder is not None:
        raise KgnormError("--encoder goes with --input encoder")
    config = dan_config(opts.preset, seed=opts.seed, hidden=opts.hidden, max_epochs=opts.epochs, patience=opts.patience,
                        batch_size=opts.batch_size, lr=opts.lr, threads=opts.threads,
                        max_seconds=None if opts.max_minutes is None else opts.max_minutes * 60)
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        hierarchy, snap = hierarchy_from_store(st, opts.ontology)
    split = split_under(hierarchy, opts.ontology, opts.root, opts.seed)
    note(split.summary_table(), quiet)
    if opts.input_kind == "encoder":
        wv = _encoder_inputs(opts.encoder, opts.out, opts.resume)
    else:
        definitions: list[str] = []
        if opts.word_vectors is None:
            from kgnorm.graph.views import read_definitions
            from kgnorm.stores import open_store

            with open_store(store, read_only=True) as st:
                definitions = read_definitions(st, opts.ontology)
        wv = ontology_word_vectors(opts.word_vectors, opts.out, opts.resume,
                                   lambda: [n for c in snap.concepts for n in c.all_names()] + definitions,
                                   opts.seed, quiet, f"{opts.ontology}'s names and definitions")
    result = train_dan(split, wv, opts.level, opts.out, config, progress=not quiet, resume=opts.resume)
    finish(opts.out, opts.keep_checkpoints, quiet, ontology=opts.ontology, ontology_version=snap.version, root=opts.root,
           level=opts.level, split_seed=opts.seed, n_levels=N_LEVELS)
    note(f"DAN level {opts.level}: best validation mAP {result.best_value:.3f} at epoch {result.best_epoch:g} "
         f"({result.epochs_completed} epochs, {result.train_seconds:.0f}s) → {opts.out}", quiet)
    if result.info["test_metrics"]:
        from kgnorm.evaluation.hierarchy import format_results
        note(format_results({"dan": result.info["test_metrics"]}), quiet)
    return opts.out
