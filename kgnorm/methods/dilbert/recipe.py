"""`train dilbert` as a library call: dictionary and mention pairs, the IS_A graph for the
hierarchy strategies, then `train_dilbert` under the time budget."""
from __future__ import annotations

from pathlib import Path

from kgnorm.errors import KgnormError
from kgnorm.methods.recipes import (PIPELINE, check_file, finish, names_and_mentions, note_budget,
                                    read_snapshot, set_threads)
from kgnorm.progress import note

HIERARCHY_STRATEGIES = ("random+parents", "resampling+siblings")


def _check(strategy: str, pairing: str, batching: str, mining: str, distance: str, margin: float,
           synonym_anchors: int, counts: tuple[int, ...]) -> None:
    from kgnorm.methods.dilbert.train import BATCHINGS, MININGS, PAIRINGS, STRATEGIES

    if strategy not in STRATEGIES:
        raise KgnormError(f"unknown --strategy {strategy!r}; valid strategies: {', '.join(STRATEGIES)}")
    for flag, value, valid in (("pairing", pairing, PAIRINGS), ("batching", batching, BATCHINGS),
                               ("mining", mining, MININGS), ("distance", distance, ("euclidean", "cosine"))):
        if value not in valid:
            raise KgnormError(f"unknown --{flag} {value!r}; valid: {', '.join(valid)}")
    if not margin > 0:
        raise KgnormError(f"--margin must be > 0, got {margin}")
    if synonym_anchors < 0:
        raise KgnormError(f"--synonym-anchors must be >= 0, got {synonym_anchors}")
    if min(counts) < 1:
        raise KgnormError("--epochs, --batch-size, --negatives, --max-positives, --parents-k and --siblings-k "
                          "must be >= 1")


def train(out: str | Path, *, ontology: str, train: Path, store: str | None = None, dev: Path | None = None,
          input_format: str | None = None, encoder: Path | None = None, strategy: str = "random",
          parents_k: int = 1, siblings_k: int = 1, negatives: int = 5, max_positives: int = 10,
          pairing: str = "cycle", batching: str = "shuffled", mining: str = "semi-hard", synonym_anchors: int = 0,
          merge_train: bool = True, eval_initial: bool = True, distance: str = "euclidean", margin: float = 1.0,
          epochs: int = 1, batch_size: int = 48, lr: float = 1e-5, max_length: int = 25,
          max_steps: int | None = None, seed: int = 0, resume: bool = True, max_minutes: float | None = 55.0,
          threads: int | None = None, keep_checkpoints: bool = False, quiet: bool = False) -> Path:
    """Train DILBERT (Miftahutdinov et al. 2021) into ``out``. Defaults: the recipe measured best
    here (cycle pairing, 10 positives, semi-hard triplets: BC5CDR dev 0.8940 against 0.8448 with the
    paper's product / 30 / all in the same 45-min budget, BENCHMARKS.md 2026-11-25)."""
    from kgnorm.methods.dilbert.train import DilbertConfig, train_dilbert

    out = Path(out)
    _check(strategy, pairing, batching, mining, distance, margin, synonym_anchors,
           (epochs, batch_size, negatives, parents_k, siblings_k, max_positives))
    check_file(train, "training mentions file")
    check_file(dev, "dev mentions file")
    check_file(encoder, "encoder directory")
    set_threads(threads)
    hierarchy, snap, _ = read_snapshot(
        store, ontology, strategy in HIERARCHY_STRATEGIES,
        refusal=f"--strategy {strategy} needs IS_A edges and ontology {ontology!r} has none; "
                "use random or resampling")
    dictionary, search_dict, train_pairs, dev_pairs = names_and_mentions(snap, train, dev, input_format,
                                                                         merge_train)
    note(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts"
         + (f" + {len(search_dict) - len(dictionary):,} training mentions" if merge_train else "")
         + f"; {len(train_pairs):,} training queries"
         + (f" + {synonym_anchors:,} synonym anchors" if synonym_anchors else "") + f"; strategy {strategy}", quiet)
    cfg = DilbertConfig(strategy=strategy, n_negatives=negatives, k_parents=parents_k, k_siblings=siblings_k,
                        max_positives=max_positives, pairing=pairing, batching=batching, margin=margin,
                        mining=mining, distance=distance, learning_rate=lr, batch_size=batch_size, epochs=epochs,
                        max_length=max_length, seed=seed, max_steps_per_epoch=max_steps,
                        eval_initial=eval_initial, synonym_anchors=synonym_anchors,
                        max_seconds=None if max_minutes is None else max_minutes * 60)
    onto = {"name": ontology, "version": snap.version}
    result = train_dilbert(encoder, search_dict, train_pairs, dev_pairs, out, cfg, hierarchy=hierarchy,
                           resume=resume, progress=not quiet, ontology=onto)
    note_budget(result.stop_reason, max_minutes, result.epochs_completed, quiet)
    finish(out, keep_checkpoints, quiet, ontology=ontology, ontology_version=snap.version, text_pipeline=PIPELINE)
    msg = (f"DILBERT ({strategy}, {distance}): {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s "
           f"on {result.n_queries:,} queries")
    if result.n_skipped:
        msg += f" ({result.n_skipped} skipped: gold not in the dictionary)"
    if result.best_dev_acc1 is not None:
        msg += f"; best dev Acc@1 {result.best_dev_acc1:.4f} at epoch {result.best_epoch}"
        if result.best_epoch == 0:
            msg += (" (no trained epoch beat the starting encoder on dev: the model written is "
                    "the starting encoder)")
    note(msg + f" → {out}", quiet)
    return out
