"""`train bne` as a library call: the ontology's names (and, for the samplers, its IS_A graph)
from the store, word vectors (a file, or made from the ontology's text), then `train_bne`
under the time budget."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, replace
from pathlib import Path

from kgnorm.methods.options import input_format, keep_checkpoints, max_minutes, max_steps_per_epoch, option, out_option, resume, seed, threads
from kgnorm.errors import KgnormError
from kgnorm.methods.recipes import (PIPELINE, check_file, finish, names_and_mentions, ontology_word_vectors,
                                    note_budget, read_snapshot, set_threads)
from kgnorm.progress import note

WORD_SOURCES = ("fasttext", "encoder")


@dataclass(kw_only=True)
class Options:
    """Train BNE (Phan et al. 2019): char+word BiLSTM name encoder on the ontology's synonyms."""

    ontology: str = option(MISSING, help='Ontology name in the store.')
    out: Path = out_option()
    word_vectors: Path | None = option(None, help="fastText .bin / word2vec .vec file; default: made from the ontology's names and definitions (--word-source).")
    word_source: str = option('fasttext', help="Without --word-vectors: fasttext (trained on the ontology's text) or encoder (each word of that text encoded alone by --encoder: static transformer vectors, far better synonym retrieval on MEDIC, see benchmarks/LOG.md).")
    encoder: Path | None = option(None, help='Local Hugging Face encoder directory for --word-source encoder (default: the offline MiniLM).')
    dev: Path | None = option(None, help="Dev mentions for early stopping (Acc@1); default: a seeded held-out slice of the ontology's synonyms.")
    input_format: str | None = input_format()
    epochs: int = option(20, help='Maximum epochs (early stopping on dev Acc@1).')
    patience: int = option(3, help='Evaluations without a better dev Acc@1.')
    batch_size: int = option(64, help='Names per batch (in-batch negatives).')
    lr: float = option(0.001)
    hidden: int = option(200, help='Character and word BiLSTM width.')
    dim: int = option(200, help='Name embedding dimension.')
    max_steps: int | None = max_steps_per_epoch()
    siblings_k: int = option(0, help='Sibling-concept names per name and epoch as hard negatives of the synonym objective (IS_A graph; 0: off).')
    parents_k: int = option(0, help='Parent-concept names per name and epoch as positives of the conceptual objective (IS_A graph; 0: off).')
    seed: int = seed()
    resume: bool = resume()
    max_minutes: float | None = max_minutes(55.0)
    threads: int | None = threads()
    keep_checkpoints: bool = keep_checkpoints()


def train(opts: Options, store: str | None = None, quiet: bool = False) -> Path:
    """Train BNE (Phan et al. 2019) into ``out``; 55 minutes is the budget of the benchmarks/LOG.md runs."""
    from kgnorm.methods.bne.train import BneConfig, train_bne

    opts = replace(opts, out=Path(opts.out))
    check_file(opts.word_vectors, "word-vectors file")
    check_file(opts.dev, "dev mentions file")
    check_file(opts.encoder, "encoder directory")
    if opts.word_source not in WORD_SOURCES:
        raise KgnormError(f"unknown --word-source {opts.word_source!r}; valid: {', '.join(WORD_SOURCES)}")
    if opts.word_vectors is not None and (opts.word_source != "fasttext" or opts.encoder is not None):
        raise KgnormError("--word-vectors is a finished file: it goes without --word-source and --encoder")
    if opts.encoder is not None and opts.word_source != "encoder":
        raise KgnormError("--encoder goes with --word-source encoder")
    if opts.epochs < 1 or opts.batch_size < 2 or min(opts.siblings_k, opts.parents_k) < 0:
        raise KgnormError("--epochs must be >= 1, --batch-size >= 2, --siblings-k and --parents-k >= 0")
    set_threads(opts.threads)
    hierarchy, snap, definitions = read_snapshot(
        store, opts.ontology, bool(opts.siblings_k or opts.parents_k), definitions=opts.word_vectors is None,
        refusal=f"--siblings-k / --parents-k need IS_A edges and ontology {opts.ontology!r} has none; leave them at 0")
    dictionary, _, _, dev_pairs = names_and_mentions(snap, None, opts.dev, opts.input_format, require_dev=True)
    wv = ontology_word_vectors(opts.word_vectors, opts.out, opts.resume,
                               lambda: [n for c in snap.concepts for n in c.all_names()] + definitions,
                               opts.seed, quiet, f"{opts.ontology}'s names and definitions", opts.word_source, opts.encoder)
    note(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts; "
         f"word vectors: {wv.kind}, {wv.dim} dimensions", quiet)
    cfg = BneConfig(char_hidden=opts.hidden, word_hidden=opts.hidden, out_dim=opts.dim, learning_rate=opts.lr,
                    batch_size=opts.batch_size, max_epochs=opts.epochs, patience=opts.patience, seed=opts.seed,
                    max_steps_per_epoch=opts.max_steps, siblings_k=opts.siblings_k, parents_k=opts.parents_k,
                    max_seconds=None if opts.max_minutes is None else opts.max_minutes * 60)
    onto = {"name": opts.ontology, "version": snap.version}
    result = train_bne(dictionary, wv, opts.out, dev=dev_pairs, config=cfg, resume=opts.resume, progress=not quiet,
                       ontology=onto, hierarchy=hierarchy)
    note_budget(result.stop_reason, opts.max_minutes, result.epochs_completed, quiet)
    finish(opts.out, opts.keep_checkpoints, quiet, ontology=opts.ontology, ontology_version=snap.version, text_pipeline=PIPELINE)
    msg = f"BNE: {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s on {result.info['n_train_names']:,} names"
    if result.best_value is not None:
        msg += (f"; best dev Acc@1 {result.best_value:.4f} at epoch {result.best_epoch:g} "
                f"({result.info['n_dev']} {'held-out synonyms' if result.info['dev_source'] == 'held_out' else 'dev queries'})")
    note(msg + f" → {opts.out}", quiet)
    return opts.out
