"""`train bne` as a library call: the ontology's names (and, for the samplers, its IS_A graph)
from the store, word vectors (a file, or made from the ontology's text), then `train_bne`
under the time budget."""
from __future__ import annotations

from pathlib import Path

from kgnorm.errors import KgnormError
from kgnorm.methods.recipes import (PIPELINE, check_file, finish, names_and_mentions, ontology_word_vectors,
                                    note_budget, read_snapshot, set_threads)
from kgnorm.progress import note

WORD_SOURCES = ("fasttext", "encoder")


def train(out: str | Path, *, ontology: str, store: str | None = None, word_vectors: Path | None = None,
          word_source: str = "fasttext", encoder: Path | None = None, dev: Path | None = None,
          input_format: str | None = None, epochs: int = 20, patience: int = 3, batch_size: int = 64,
          lr: float = 1e-3, hidden: int = 200, dim: int = 200, max_steps: int | None = None,
          siblings_k: int = 0, parents_k: int = 0, seed: int = 0, resume: bool = True,
          max_minutes: float | None = 55.0, threads: int | None = None, keep_checkpoints: bool = False,
          quiet: bool = False) -> Path:
    """Train BNE (Phan et al. 2019) into ``out``; 55 minutes is the budget of the BENCHMARKS.md runs."""
    from kgnorm.methods.bne.train import BneConfig, train_bne

    out = Path(out)
    check_file(word_vectors, "word-vectors file")
    check_file(dev, "dev mentions file")
    check_file(encoder, "encoder directory")
    if word_source not in WORD_SOURCES:
        raise KgnormError(f"unknown --word-source {word_source!r}; valid: {', '.join(WORD_SOURCES)}")
    if word_vectors is not None and (word_source != "fasttext" or encoder is not None):
        raise KgnormError("--word-vectors is a finished file: it goes without --word-source and --encoder")
    if encoder is not None and word_source != "encoder":
        raise KgnormError("--encoder goes with --word-source encoder")
    if epochs < 1 or batch_size < 2 or min(siblings_k, parents_k) < 0:
        raise KgnormError("--epochs must be >= 1, --batch-size >= 2, --siblings-k and --parents-k >= 0")
    set_threads(threads)
    hierarchy, snap, definitions = read_snapshot(
        store, ontology, bool(siblings_k or parents_k), definitions=word_vectors is None,
        refusal=f"--siblings-k / --parents-k need IS_A edges and ontology {ontology!r} has none; leave them at 0")
    dictionary, _, _, dev_pairs = names_and_mentions(snap, None, dev, input_format, require_dev=True)
    wv = ontology_word_vectors(word_vectors, out, resume,
                               lambda: [n for c in snap.concepts for n in c.all_names()] + definitions,
                               seed, quiet, f"{ontology}'s names and definitions", word_source, encoder)
    note(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts; "
         f"word vectors: {wv.kind}, {wv.dim} dimensions", quiet)
    cfg = BneConfig(char_hidden=hidden, word_hidden=hidden, out_dim=dim, learning_rate=lr,
                    batch_size=batch_size, max_epochs=epochs, patience=patience, seed=seed,
                    max_steps_per_epoch=max_steps, siblings_k=siblings_k, parents_k=parents_k,
                    max_seconds=None if max_minutes is None else max_minutes * 60)
    onto = {"name": ontology, "version": snap.version}
    result = train_bne(dictionary, wv, out, dev=dev_pairs, config=cfg, resume=resume, progress=not quiet,
                       ontology=onto, hierarchy=hierarchy)
    note_budget(result.stop_reason, max_minutes, result.epochs_completed, quiet)
    finish(out, keep_checkpoints, quiet, ontology=ontology, ontology_version=snap.version, text_pipeline=PIPELINE)
    msg = f"BNE: {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s on {result.n_train_names:,} names"
    if result.best_dev_acc1 is not None:
        msg += (f"; best dev Acc@1 {result.best_dev_acc1:.4f} at epoch {result.best_epoch:g} "
                f"({result.n_dev} {'held-out synonyms' if result.dev_source == 'held_out' else 'dev queries'})")
    note(msg + f" → {out}", quiet)
    return out
