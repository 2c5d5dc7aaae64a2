"""`train dilbert` as a library call: dictionary and mention pairs, the IS_A graph for the
hierarchy strategies, then `train_dilbert` under the time budget."""
from __future__ import annotations

from dataclasses import MISSING, dataclass, replace
from pathlib import Path

from kgnorm.methods.options import (dev_mentions, input_format, keep_checkpoints, max_minutes, max_steps_per_epoch, option,
                                    out_option, refit, refit_minutes, resume, seed, threads)
from kgnorm.errors import KgnormError
from kgnorm.methods.recipes import (PIPELINE, check_file, finish, names_and_mentions, note_budget,
                                    read_snapshot, set_threads)
from kgnorm.methods.refit import Phase, run_phases
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


@dataclass(kw_only=True)
class Options:
    """Train DILBERT (Miftahutdinov et al. 2021): triplet loss over mention/name distances."""

    ontology: str = option(MISSING, help='Ontology name in the store (the dictionary).')
    out: Path = out_option()
    train: Path = option(MISSING, help='Training mentions (.concept, PubTator or TSV with gold).')
    dev: Path | None = dev_mentions()
    input_format: str | None = input_format()
    encoder: Path | None = option(None, help='Any local Hugging Face encoder directory (default: the offline MiniLM).')
    strategy: str = option('random', help="Negative sampling: random, random+parents, resampling or resampling+siblings (parents and siblings come from the ontology's IS_A graph).")
    parents_k: int = option(1, help='Parent names added as positives (random+parents).')
    siblings_k: int = option(1, help='Sibling names added as negatives (resampling+siblings).')
    negatives: int = option(5, help='Negatives per mention.')
    max_positives: int = option(10, help='Gold names per mention (at most; the paper: 30).')
    pairing: str = option('cycle', help='product: every positive with every negative (the paper); cycle: one triplet per positive (default: measured better on CPU budgets, benchmarks/LOG.md).')
    batching: str = option('shuffled', help="shuffled: all triplets shuffled (the paper); mention: a mention's triplets stay in consecutive batches, several times fewer texts to encode per step.")
    mining: str = option('semi-hard', help='all: every triplet counts (the paper); semi-hard: only triplets whose negative is farther than the positive (FaceNet), so hard negatives cannot shrink the space (default).')
    synonym_anchors: int = option(0, help='Also train on N dictionary names as queries, one each of N seeded concepts with another name (SapBERT-like self-alignment; 0: mentions only).')
    merge_train: bool = option(True, '--merge-train-mentions/--no-merge-train-mentions', help='Add the training mentions to the dictionary as extra names (as BioSyn does).')
    eval_initial: bool = option(True, '--eval-initial/--no-eval-initial', help='With --dev, the starting encoder competes as epoch 0: if no epoch beats it on dev Acc@1, it is the model written.')
    distance: str = option('euclidean', help='euclidean (the paper) or cosine.')
    margin: float = option(1.0, help='Triplet margin (the paper: 1, in distance units).')
    epochs: int = option(1)
    batch_size: int = option(48, help='Triplets per batch.')
    lr: float = option(1e-05)
    max_length: int = option(25)
    max_steps: int | None = max_steps_per_epoch()
    seed: int = seed()
    resume: bool = resume()
    max_minutes: float | None = max_minutes(55.0)
    threads: int | None = threads()
    refit: bool | None = refit()
    refit_minutes: float | None = refit_minutes(30.0)
    keep_checkpoints: bool = keep_checkpoints()


def train(opts: Options, store: str | None = None, quiet: bool = False) -> Path:
    """Train DILBERT (Miftahutdinov et al. 2021) into ``out``. Defaults: the recipe measured best
    here (cycle pairing, 10 positives, semi-hard triplets: BC5CDR dev 0.8940 against 0.8448 with the
    paper's product / 30 / all in the same 45-min budget, benchmarks/LOG.md 2026-11-25). With --train and
    --dev, selection then refit (kgnorm.methods.refit)."""
    opts = replace(opts, out=Path(opts.out))
    _check(opts.strategy, opts.pairing, opts.batching, opts.mining, opts.distance, opts.margin, opts.synonym_anchors,
           (opts.epochs, opts.batch_size, opts.negatives, opts.parents_k, opts.siblings_k, opts.max_positives))
    check_file(opts.train, "training mentions file")
    check_file(opts.dev, "dev mentions file")
    check_file(opts.encoder, "encoder directory")
    set_threads(opts.threads)
    hierarchy, snap, _ = read_snapshot(
        store, opts.ontology, opts.strategy in HIERARCHY_STRATEGIES,
        refusal=f"--strategy {opts.strategy} needs IS_A edges and ontology {opts.ontology!r} has none; "
                "use random or resampling")
    run_phases(opts, lambda phase: _train_phase(opts, hierarchy, snap, phase, quiet), quiet, opts.refit_minutes)
    note(f"model → {opts.out}", quiet)
    return opts.out


def _train_phase(opts: Options, hierarchy, snap, phase: Phase, quiet: bool):
    """One model directory: selection (train, dev selection) or refit (train + dev, no dev)."""
    from kgnorm.methods.dilbert.train import DilbertConfig, train_dilbert

    dictionary, search_dict, train_pairs, dev_pairs = names_and_mentions(snap, opts.train, opts.dev, opts.input_format,
                                                                         opts.merge_train, refit=phase.refit)
    note(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts"
         + (f" + {len(search_dict) - len(dictionary):,} {'training + dev' if phase.refit else 'training'} mentions"
            if opts.merge_train else "")
         + f"; {len(train_pairs):,} training queries"
         + (f" + {opts.synonym_anchors:,} synonym anchors" if opts.synonym_anchors else "") + f"; strategy {opts.strategy}", quiet)
    cfg = DilbertConfig(strategy=opts.strategy, n_negatives=opts.negatives, k_parents=opts.parents_k, k_siblings=opts.siblings_k,
                        max_positives=opts.max_positives, pairing=opts.pairing, batching=opts.batching, margin=opts.margin,
                        mining=opts.mining, distance=opts.distance, learning_rate=opts.lr, batch_size=opts.batch_size,
                        epochs=phase.epochs, max_length=opts.max_length, seed=opts.seed, max_steps_per_epoch=opts.max_steps,
                        eval_initial=opts.eval_initial, synonym_anchors=opts.synonym_anchors,
                        max_seconds=None if phase.max_minutes is None else phase.max_minutes * 60)
    onto = {"name": opts.ontology, "version": snap.version}
    result = train_dilbert(opts.encoder, search_dict, train_pairs, dev_pairs, phase.out, cfg, hierarchy=hierarchy,
                           resume=opts.resume, progress=not quiet, ontology=onto)
    note_budget(result.stop_reason, phase.max_minutes, result.epochs_completed, quiet)
    finish(phase.out, opts.keep_checkpoints, quiet, ontology=opts.ontology, ontology_version=snap.version,
           text_pipeline=PIPELINE)
    msg = (f"DILBERT ({opts.strategy}, {opts.distance}): {result.epochs_completed} epoch(s) in {result.train_seconds:.0f}s "
           f"on {result.info['n_queries']:,} queries")
    if result.info["n_skipped"]:
        msg += f" ({result.info['n_skipped']} skipped: gold not in the dictionary)"
    if result.best_value is not None:
        msg += f"; best dev Acc@1 {result.best_value:.4f} at epoch {result.best_epoch}"
        if result.best_epoch == 0:
            msg += (" (no trained epoch beat the starting encoder on dev: the model written is "
                    "the starting encoder)")
    note(msg + f" → {phase.out}", quiet)
    return result
