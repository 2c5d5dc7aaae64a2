"""`train ner` as a library call: read and check the annotated files (every error before anything
is written), the ontology's names when dictionary features are on, then `train_ner` under the
time budget."""
from __future__ import annotations

from pathlib import Path

from kgnorm.errors import KgnormError
from kgnorm.methods.recipes import check_file, finish, note_budget, read_snapshot, set_threads
from kgnorm.progress import note


def train(out: str | Path, *, train: Path, dev: Path | None = None, types: str | None = None,
          input_format: str | None = None, encoder: Path | None = None, ontology: str | None = None,
          store: str | None = None, crf: bool = False, dictionary_features: bool = False,
          epochs: int = 20, batch_size: int = 8, lr: float = 1e-4, max_length: int = 256, stride: int = 64,
          max_steps: int | None = None, seed: int = 0, resume: bool = True, max_minutes: float | None = 25.0,
          threads: int | None = None, keep_checkpoints: bool = False, quiet: bool = False) -> Path:
    """Train a mention detector into ``out``. Defaults: no CRF, no dictionary features -- at equal
    steps on NCBI-disease dev both scored below the plain token classifier (BENCHMARKS.md
    2026-11-26: F1 0.5250 plain, 0.5145 CRF, 0.4754 dictionary features)."""
    from kgnorm.methods.ner.train import NerConfig, train_ner
    from kgnorm.ner.corpus import corpus_types, parse_types, read_annotated

    out = Path(out)
    check_file(train, "training file")
    check_file(dev, "dev file")
    check_file(encoder, "encoder directory")
    if ontology is not None and not dictionary_features:
        note(f"--ontology {ontology} is used only with --dictionary-features; training without it", quiet)
    if dictionary_features and ontology is None:
        raise KgnormError("--dictionary-features needs --ontology (the names to match)")
    if min(epochs, batch_size) < 1 or not 0 <= stride < max_length - 2:
        raise KgnormError("--epochs and --batch-size must be >= 1, and 0 <= --stride < --max-length - 2")
    type_map = parse_types(types)
    train_docs = read_annotated(train, type_map, input_format)
    dev_docs = read_annotated(dev, type_map, input_format, require_types=False) if dev else None
    labels = type_map.labels or corpus_types(train_docs)
    if not labels:
        raise KgnormError(f"{train}: no annotated mention to learn from")
    names = None
    onto = {}
    if dictionary_features:
        _, snap, _ = read_snapshot(store, ontology, False)
        names = sorted({n for c in snap.concepts for n in c.all_names()})
        onto = {"ontology": ontology, "ontology_version": snap.version}
    set_threads(threads)
    n_spans = sum(len(d.spans) for d in train_docs)
    note(f"{len(train_docs):,} training documents, {n_spans:,} mentions of {', '.join(labels)}"
         + (f"; {len(dev_docs):,} dev documents" if dev_docs is not None else "")
         + (f"; dictionary features from {len(names):,} names of {ontology}" if names else "")
         + ("; CRF" if crf else ""), quiet)
    cfg = NerConfig(crf=crf, dictionary_features=dictionary_features, max_length=max_length, stride=stride,
                    batch_size=batch_size, learning_rate=lr, epochs=epochs, seed=seed,
                    max_steps_per_epoch=max_steps,
                    max_seconds=None if max_minutes is None else max_minutes * 60)
    result = train_ner(train_docs, dev_docs, out, labels, encoder, cfg, names, resume=resume,
                       progress=not quiet, meta={"types_map": type_map.mapping, **onto})
    note_budget(result.stop_reason, max_minutes, result.epochs_completed, quiet)
    if result.best_epoch is None:
        raise KgnormError(f"no model was selected (the budget ended before a step ran); nothing usable in {out}")
    finish(out, keep_checkpoints, quiet, train_seconds=round(result.train_seconds, 1))
    msg = f"mention detector: {result.global_step:,} steps ({result.epochs_completed} full epoch(s)) in " \
          f"{result.train_seconds / 60:.1f} min"
    if result.best_dev:
        d = result.best_dev
        msg += (f"; best dev strict-span P/R/F1 {d['precision']:.4f}/{d['recall']:.4f}/{d['f1']:.4f} "
                f"at epoch {result.best_epoch}")
    note(msg + f" → {out}", quiet)
    return out
